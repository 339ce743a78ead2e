//! Defines the console's routes for requests `http.rs` let through: the embedded page, the
//! session's CSRF token, the home's stamp, reads (`/skills WORDS --json`, paged, cached per
//! stamp), actions (`/skills WORDS` through the CLI's own path, `operator.rs`), the gate's
//! summary and charts, and the evaluations' reports and charts (`evals.rs`). Everything is JSON
//! except the page and the charts; no text from a skill or the home is put into HTML here (the
//! page renders with textContent).

use super::args::{self, PAGED};
use super::charts::{self, Chart, Series};
use super::stamp::Stamper;
use crate::operator::{Answer, Operator};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// The page's files, embedded: its path, its text, its type. The scripts are classic scripts that
/// `index.html` loads in this order (one global scope, no build step).
const ASSETS: [(&str, &str, &str); 7] = [
    ("/index.html", include_str!("assets/index.html"), "text/html; charset=utf-8"),
    ("/app.css", include_str!("assets/app.css"), "text/css; charset=utf-8"),
    ("/js/base.js", include_str!("assets/js/base.js"), JS),
    ("/js/page.js", include_str!("assets/js/page.js"), JS),
    ("/js/inbox.js", include_str!("assets/js/inbox.js"), JS),
    ("/js/skills.js", include_str!("assets/js/skills.js"), JS),
    ("/js/views.js", include_str!("assets/js/views.js"), JS),
];
const JS: &str = "text/javascript; charset=utf-8";

/// Read answers kept for one stamp, at most (a page asks for a handful per view).
const CACHED: usize = 256;

/// An answer to send: status, type, body, and the headers of a token exchange.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn json(status: u16, value: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json; charset=utf-8",
            body: value.to_string().into_bytes(),
            headers: Vec::new(),
        }
    }

    fn error(status: u16, text: &str) -> Reply {
        Reply::json(status, &json!({"error": text}))
    }

    /// A refusal decided before any route: short plain text.
    pub fn text(status: u16, text: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{text}\n").into_bytes(),
            headers: Vec::new(),
        }
    }

    /// The token exchange's answer: the cookie, and the page without the token in its URL.
    pub fn exchange(cookie: String) -> Reply {
        let mut reply = Reply::text(303, "see /");
        reply.headers = vec![("Location", "/".to_string()), ("Set-Cookie", cookie)];
        reply
    }

    /// The launch link opened again by a browser that holds a session: the page, no new cookie.
    pub fn see_page() -> Reply {
        let mut reply = Reply::text(303, "see /");
        reply.headers = vec![("Location", "/".to_string())];
        reply
    }

    fn asset(body: &'static str, content_type: &'static str) -> Reply {
        Reply { status: 200, content_type, body: body.as_bytes().to_vec(), headers: Vec::new() }
    }
}

/// A read's answer as the plugin gave it: its JSON, or the refusal as the CLI prints it.
enum Read {
    Json(Value),
    Refused(String),
}

#[derive(Default)]
struct Cache {
    stamp: String,
    reads: HashMap<Vec<String>, Arc<Read>>,
}

/// gates.jsonl read once per stamp: the `gate-stats --json` summary and the charts' counts.
struct Gate {
    summary: Value,
    error: Option<String>,
    series: Series,
}

pub struct Console {
    /// The plugin, and the home's stamp it last started or acted on: when another process has
    /// changed the home since, it starts afresh before answering (`Operator::reload`).
    operator: Mutex<(Operator, String)>,
    stamp: Stamper,
    home: PathBuf,
    project: Option<PathBuf>,
    cache: Mutex<Cache>,
    gate: Mutex<Option<(String, Arc<Gate>)>>,
}

/// A lock, also after a thread panicked holding it (the data are answers, rebuilt on demand).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The host's own failure (the component trapped, `config.json` broke), shown as the CLI shows it.
fn failed(err: &anyhow::Error) -> Reply {
    Reply::error(500, &format!("self-evolve: {}", self_evolve_host::text::shown_error(&format!("{err:#}"))))
}

/// The page of a paged answer: the first of `PAGED` it holds, cut to rows `page * per ..`, with
/// `total`, `page` and `per` beside it. Other answers are sent as they are.
pub fn paged(value: &Value, page: usize, per: usize) -> Value {
    let Some(object) = value.as_object() else { return value.clone() };
    let Some((key, rows)) = PAGED.iter().find_map(|k| object.get(*k).and_then(Value::as_array).map(|a| (*k, a))) else {
        return value.clone();
    };
    let mut out = serde_json::Map::new();
    for (k, v) in object.iter().filter(|(k, _)| *k != key) {
        out.insert(k.clone(), v.clone());
    }
    let start = page.saturating_mul(per).min(rows.len());
    let end = start.saturating_add(per).min(rows.len());
    out.insert(key.to_string(), Value::Array(rows[start..end].to_vec()));
    out.insert("total".into(), rows.len().into());
    out.insert("page".into(), page.into());
    out.insert("per".into(), per.into());
    Value::Object(out)
}

impl Console {
    pub fn new(operator: Operator, stamp: Stamper, home: PathBuf, project: Option<PathBuf>) -> Console {
        Console {
            // Empty until the first read: the plugin was just started over the home as it is
            // then, so that read takes the stamp as seen and restarts nothing.
            operator: Mutex::new((operator, String::new())),
            stamp,
            home,
            project,
            cache: Mutex::default(),
            gate: Mutex::new(None),
        }
    }

    /// The home's stamp, measured in the background while a page is open (`mod.rs`).
    pub fn stamp(&self) -> &Stamper {
        &self.stamp
    }

    /// A session's GET (`csrf`: its token, for `/api/session`).
    pub fn get(&self, path: &str, query: &str, csrf: &str) -> Reply {
        match path {
            "/" => Reply::asset(ASSETS[0].1, ASSETS[0].2),
            asset if let Some((_, body, kind)) = ASSETS.iter().find(|(path, _, _)| *path == asset) => {
                Reply::asset(body, kind)
            }
            "/api/session" => Reply::json(
                200,
                &json!({
                    "csrf": csrf,
                    "home": self.home.to_string_lossy(),
                    "project": self.project.as_ref().map(|p| p.to_string_lossy()),
                    "version": env!("CARGO_PKG_VERSION"),
                }),
            ),
            "/api/stamp" => Reply::json(200, &json!({"stamp": self.stamp.current()})),
            "/api/read" => self.read(query),
            "/api/gate" => {
                let gate = self.gate();
                let mut value = json!({"summary": gate.summary, "charts": charts::PATHS});
                if let Some(error) = &gate.error {
                    value["error"] = error.as_str().into();
                }
                Reply::json(200, &value)
            }
            "/api/evals" => Reply::json(200, &super::evals::list(&self.home)),
            "/api/act" => Reply::error(405, "an action is a POST of {\"args\": [...]}"),
            other => {
                let svg = match Chart::at(other) {
                    Some(chart) => Some(self.gate().series.svg(chart)),
                    None => super::evals::chart_at(&self.home, other),
                };
                match svg {
                    Some(svg) => Reply {
                        status: 200,
                        content_type: "image/svg+xml",
                        body: svg.into_bytes(),
                        headers: Vec::new(),
                    },
                    None => Reply::error(404, "no such page; the console serves /, /api/session, /api/read, /api/act"),
                }
            }
        }
    }

    /// A session's POST that passed the CSRF and origin checks.
    pub fn post(&self, path: &str, body: &[u8]) -> Reply {
        if path != "/api/act" {
            return Reply::error(405, "only /api/act takes a POST");
        }
        let words = match args::act_words(body) {
            Ok(words) => words,
            Err(text) => return Reply::error(400, &text),
        };
        let mut guard = self.operator();
        let (operator, seen) = &mut *guard;
        let answer = operator.run(&words);
        // The home changed (or may have): the next stamp is measured, the cached reads go. The
        // plugin made the change itself, so it need not start afresh for it.
        self.stamp.forget();
        *seen = self.stamp.current();
        drop(guard);
        *lock(&self.cache) = Cache::default();
        match answer {
            Ok(Answer { ok: true, text }) => Reply::json(200, &json!({"ok": true, "text": text})),
            Ok(Answer { ok: false, text }) => Reply::json(409, &json!({"ok": false, "error": text})),
            Err(err) => failed(&err),
        }
    }

    fn read(&self, query: &str) -> Reply {
        let words = match args::param(query, "args")
            .and_then(|a| args::read_words(&a.ok_or_else(|| "say which read: /api/read?args=list".to_string())?))
        {
            Ok(words) => words,
            Err(text) => return Reply::error(400, &text),
        };
        let (page, per) = match args::paging(query) {
            Ok(paging) => paging,
            Err(text) => return Reply::error(400, &text),
        };
        // Measured before the plugin reads: an answer is never older than the stamp it is kept under.
        let stamp = self.stamp.current();
        let cached = {
            let cache = lock(&self.cache);
            if cache.stamp == stamp { cache.reads.get(&words).cloned() } else { None }
        };
        let read = match cached {
            Some(read) => read,
            None => match self.ask(&words) {
                Ok(read) => {
                    let read = Arc::new(read);
                    let mut cache = lock(&self.cache);
                    if cache.stamp != stamp || cache.reads.len() >= CACHED {
                        *cache = Cache { stamp, reads: HashMap::new() };
                    }
                    cache.reads.insert(words, read.clone());
                    read
                }
                Err(err) => return failed(&err),
            },
        };
        match read.as_ref() {
            Read::Json(value) => Reply::json(200, &paged(value, page, per)),
            Read::Refused(text) => Reply::error(409, text),
        }
    }

    /// Runs a read with `--json`. A refusal is asked again without it, so its text is exactly
    /// what `self-evolve skills WORDS` prints (a text answer is shown for a terminal).
    fn ask(&self, words: &[String]) -> anyhow::Result<Read> {
        let mut guard = self.operator();
        let (operator, _) = &mut *guard;
        let mut with_json = words.to_vec();
        with_json.push("--json".into());
        let answer = operator.run(&with_json)?;
        if answer.ok {
            let value = serde_json::from_str(&answer.text)
                .map_err(|e| anyhow::anyhow!("the plugin's answer to `{}` is not JSON: {e}", words.join(" ")))?;
            return Ok(Read::Json(value));
        }
        let text = operator.run(words)?;
        Ok(Read::Refused(if text.ok { answer.text } else { text.text }))
    }

    /// The plugin, started afresh first when the home changed since it last looked.
    fn operator(&self) -> MutexGuard<'_, (Operator, String)> {
        let mut guard = lock(&self.operator);
        let now = self.stamp.current();
        if guard.1.is_empty() {
            guard.1 = now;
        } else if guard.1 != now {
            let (operator, seen) = &mut *guard;
            // A failed restart leaves the old instance, which answers as before.
            match operator.reload() {
                Ok(()) => *seen = now,
                Err(err) => {
                    eprintln!("self-evolve console: {}", self_evolve_host::text::shown_error(&format!("{err:#}")))
                }
            }
        }
        guard
    }

    fn gate(&self) -> Arc<Gate> {
        let stamp = self.stamp.current();
        if let Some((at, gate)) = lock(&self.gate).as_ref()
            && *at == stamp
        {
            return gate.clone();
        }
        let path = crate::home::state(&self.home).join("gates.jsonl");
        let open = || std::fs::File::open(&path).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
        let gate = match open() {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Gate { summary: Value::Null, error: None, series: Series::default() }
            }
            Err(err) => Gate {
                summary: Value::Null,
                error: Some(format!("{}: {err}", path.display())),
                series: Series::default(),
            },
            Ok(reader) => {
                let (summary, error) = match crate::gate_stats::summarize(reader) {
                    Ok(stats) => (stats.to_json(), None),
                    Err(err) => (Value::Null, Some(format!("{}: {err}", path.display()))),
                };
                let series = open().map(charts::read).unwrap_or_default();
                Gate { summary, error, series }
            }
        };
        let gate = Arc::new(gate);
        *lock(&self.gate) = Some((stamp, gate.clone()));
        gate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paged_answer_is_cut_along_its_first_list() {
        let value = json!({"skills": (0..250).collect::<Vec<_>>(), "warnings": ["w"]});
        let page = paged(&value, 1, 100);
        assert_eq!(page["skills"].as_array().unwrap().first(), Some(&json!(100)));
        assert_eq!(page["skills"].as_array().unwrap().len(), 100);
        assert_eq!(
            (page["total"].as_u64(), page["page"].as_u64(), page["per"].as_u64()),
            (Some(250), Some(1), Some(100))
        );
        assert_eq!(page["warnings"], json!(["w"]));
        assert_eq!(paged(&value, 2, 100)["skills"].as_array().unwrap().len(), 50);
        assert_eq!(paged(&value, 9, 100)["skills"], json!([]), "past the end: no rows, the total still");
        assert_eq!(paged(&value, usize::MAX, 200)["skills"], json!([]));
        let plain = json!({"name": "deploy", "text": "x"});
        assert_eq!(paged(&plain, 0, 100), plain, "nothing to page");
        assert_eq!(paged(&json!({"versions": [1, 2, 3]}), 0, 2)["versions"], json!([1, 2]));
    }
}
