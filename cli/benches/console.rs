//! Operator console benchmarks (own harness; `cargo bench -p self-evolve --bench console`): the
//! real `self-evolve ui --no-open --port 0` process over a home of 10,000 user skills and 1,000
//! pending staged writes (issue 38: "time to first paint and to the inbox with 10,000 skills and
//! 1,000 pending entries; an approval round trip"; every view paged and fast at that size).
//!
//! The home: the skills are written as SKILL.md files (as `--bench mcp` does), write approval is
//! turned on with the CLI, and the 1,000 creates are staged in this process through the host
//! library as `self-evolve tool skill_manage … --session s1` would (one plugin, not 1,000
//! processes). Then, over raw HTTP with the session cookie the launch token is exchanged for:
//! - spawn to the printed URL, and the token exchange;
//! - the first `pending` and `list` page (100 rows) in a fresh console (cold: the plugin reads
//!   every entry, the answer is parsed and cached), the same with no persisted listing index
//!   (first ever), then warm (cached for the home's stamp), the last `list` page, `show NAME`;
//! - `/api/stamp` 0.5 s after the last request (what the page's 2 s poll costs; the stamp, a stat
//!   walk of the home, is measured on the console's own thread while a page asks), and a cached
//!   `list` page read then (a click after a pause);
//! - an approval round trip: POST `approve ID` until its answer, then the `pending` page that no
//!   longer holds it (the cache was dropped: the plugin reads again), and the `list` page after;
//! - in headless Chromium (chromedriver, tests/webdriver), per run a fresh console and a fresh
//!   browser opening its launch URL (the link lets one browser in), then `/` again in that
//!   browser (warm): first-contentful-paint and the time until 100 `[data-test=pending-row]`
//!   rows are in the page, both from navigation start (a DevTools script added before the
//!   page's own marks the moment with a MutationObserver; it only reads), and the page's own
//!   `pending` read from its resource timing;
//! - where a cold read's time goes, in this process through the console's own path
//!   (`Operator::run` with `--json`, the host's escape pass, the parse before paging), and
//!   `approve` alone; and each staged create's time while the 1,000 were staged.
//!
//! Needs `dist/self-evolve.wasm` (`./build.sh`), and chromium + chromedriver on PATH (or
//! SELF_EVOLVE_CHROMIUM / SELF_EVOLVE_CHROMEDRIVER). cargo builds the release binary it runs
//! (`CARGO_BIN_EXE_self-evolve`). About 1–2 minutes on a 2-core VM.

#[path = "../tests/webdriver/mod.rs"]
mod webdriver;

use anyhow::{Context, Result, bail, ensure};
use self_evolve_host::plugin::{CallContext, Origin};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SKILLS: usize = 10_000;
const PENDING: usize = 1_000;
/// Fresh consoles for each cold figure.
const STARTS: usize = 5;
/// Fresh consoles with the persisted listing index removed (the first `list` ever).
const FIRST_EVER: usize = 2;
/// Samples of each warm figure.
const WARM: usize = 20;
/// `/api/stamp` samples, each 0.5 s after the last request.
const STAMPS: usize = 5;
const APPROVALS: usize = 10;
/// Fresh browsers opening the launch URL.
const BROWSER_RUNS: usize = 5;
/// Rows of a page (the page's own `PER`).
const PER: usize = 100;

const SYLLABLES: [&str; 10] = ["ka", "lo", "mi", "nu", "pe", "ro", "si", "ta", "vo", "ze"];

/// Letters unique to `n < 100,000` (the dedupe ignores digits).
fn word(mut n: usize) -> String {
    let mut out = String::new();
    for _ in 0..5 {
        out.push_str(SYLLABLES[n % 10]);
        n /= 10;
    }
    out
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn wasm() -> PathBuf {
    repo().join("dist/self-evolve.wasm")
}

/// The compiled component's cache, kept between runs (a start loads it instead of compiling).
fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-bench-cache")
}

/// The release binary, run from `cwd` (outside any git checkout: no project scope is found).
fn cli(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.current_dir(cwd)
        .env("SELF_EVOLVE_CACHE_DIR", cache_dir())
        .env("SELF_EVOLVE_WASM", wasm())
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_AGENT")
        .env_remove("SELF_EVOLVE_CWD")
        .stdin(Stdio::null());
    cmd
}

// ---------------------------------------------------------------------------------------------
// The home
// ---------------------------------------------------------------------------------------------

struct Home {
    /// The working folder of every process, holding the home.
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl Home {
    fn skill_name(i: usize) -> String {
        format!("user-{}", word(i))
    }

    /// 10,000 user skills written directly; approval on; 1,000 creates staged from session s1
    /// (each create's time kept: staging grows with what is pending).
    fn make(table: &mut Table) -> Result<Home> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("home");
        let skills = path.join("skills");
        let t = Instant::now();
        for i in 0..SKILLS {
            let name = Home::skill_name(i);
            std::fs::create_dir_all(skills.join(&name))?;
            let text = format!(
                "---\nname: {name}\ndescription: {} {} {} chores. Use when {} breaks.\n---\nSteps.\n",
                word(i + 20_000),
                word(i + 40_000),
                word(i + 60_000),
                word(i + 80_000)
            );
            std::fs::write(skills.join(&name).join("SKILL.md"), text)?;
        }
        println!("  {SKILLS} SKILL.md files written in {:.1?}", t.elapsed());
        let home = Home { dir, path };
        let out = cli(home.dir.path()).args(["skills", "approval", "on", "--home"]).arg(&home.path).output()?;
        ensure!(out.status.success(), "skills approval on: {}", String::from_utf8_lossy(&out.stderr));

        let t = Instant::now();
        let source = self_evolve::component::Source::File(wasm());
        let mut live = self_evolve::live::open(&home.path, &source)?;
        let ctx = CallContext {
            session: "s1".into(),
            agent: "main".into(),
            origin: Origin::User,
            depth: 0,
            cwd: home.dir.path().display().to_string(),
        };
        let mut staged = Vec::with_capacity(PENDING);
        for i in 0..PENDING {
            let args = json!({"action": "create", "name": format!("staged-{}", word(10_000 + i)),
                "description": format!("{} {} {} errands. Use when {} is stuck.", word(30_000 + i), word(50_000 + i), word(70_000 + i), word(90_000 + i)),
                "body": "# Staged\n\nSteps.\n", "reason": "the bench stages it"});
            let one = Instant::now();
            let answer = live
                .plugin
                .tools_call(&ctx, "skill_manage", &args.to_string())?
                .map_err(|e| anyhow::anyhow!("create {i} refused: {e}"))?;
            staged.push(one.elapsed());
            let answer: Value = serde_json::from_str(&answer)?;
            ensure!(answer["id"].is_string(), "create {i} was not staged: {answer}");
        }
        println!("  {PENDING} creates staged in-process in {:.1?}", t.elapsed());
        table.add("staged create (in-process), the first 100", staged[..100].to_vec());
        table.add("staged create (in-process), the last 100 (900+ pending)", staged[PENDING - 100..].to_vec());
        Ok(home)
    }
}

// ---------------------------------------------------------------------------------------------
// The console and HTTP
// ---------------------------------------------------------------------------------------------

/// `self-evolve ui --no-open --port 0 --home H`, running; killed when dropped.
struct Console {
    child: Child,
    url: String,
    port: u16,
    /// From spawn to the URL line on stdout.
    started: Duration,
}

impl Console {
    fn start(home: &Home) -> Result<Console> {
        let t = Instant::now();
        let mut child = cli(home.dir.path())
            .args(["ui", "--no-open", "--port", "0", "--home"])
            .arg(&home.path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("run the release self-evolve")?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let line = loop {
            match lines.next() {
                Some(line) => {
                    let line = line?;
                    if line.starts_with("self-evolve console: ") {
                        break line;
                    }
                }
                None => bail!("`self-evolve ui` ended without printing its URL ({:?})", child.wait()),
            }
        };
        let started = t.elapsed();
        // Keep draining stdout so the console never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        let url = line.trim_start_matches("self-evolve console: ").trim().to_string();
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.split_once('/'))
            .and_then(|(port, _)| port.parse().ok())
            .with_context(|| format!("not a loopback URL: {line}"))?;
        Ok(Console { child, url, port, started })
    }

    /// The launch URL's path and query.
    fn launch(&self) -> &str {
        &self.url[self.url.find("/?").unwrap_or(0)..]
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    fn json(&self) -> Result<Value> {
        serde_json::from_str(&self.body).with_context(|| format!("{}: not JSON: {:.200}", self.status, self.body))
    }
}

/// One request on its own connection (`Connection: close`, read to the end), and its time.
fn raw(port: u16, method: &str, target: &str, headers: &[String], body: &str) -> Result<(Answer, Duration)> {
    let t = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut request = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes())?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes)?;
    let elapsed = t.elapsed();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((Answer { status, head: head.to_string(), body: body.to_string() }, elapsed))
}

/// A signed-in caller: the cookie the launch token was exchanged for, and the session's CSRF token.
struct Client {
    port: u16,
    cookie: String,
    csrf: String,
}

impl Client {
    /// Exchanges the launch token (303 with the cookie) and reads `/api/session`; the exchange's time.
    fn sign_in(console: &Console) -> Result<(Client, Duration)> {
        let (answer, took) = raw(console.port, "GET", console.launch(), &[], "")?;
        ensure!(answer.status == 303, "token exchange: {} {}", answer.status, answer.body);
        let cookie = answer.header("Set-Cookie").context("no Set-Cookie")?;
        let cookie = cookie.split(';').next().unwrap_or_default().to_string();
        let mut client = Client { port: console.port, cookie, csrf: String::new() };
        let (session, _) = client.get("/api/session")?;
        client.csrf = session["csrf"].as_str().context("no csrf")?.to_string();
        Ok((client, took))
    }

    fn get(&self, target: &str) -> Result<(Value, Duration)> {
        let headers = [format!("Cookie: {}", self.cookie), "Sec-Fetch-Site: same-origin".to_string()];
        let (answer, took) = raw(self.port, "GET", target, &headers, "")?;
        ensure!(answer.status == 200, "GET {target}: {} {:.300}", answer.status, answer.body);
        Ok((answer.json()?, took))
    }

    /// `/api/read?args=WORDS&page=P&per=100`.
    fn read(&self, words: &str, page: usize) -> Result<(Value, Duration)> {
        self.get(&format!("/api/read?args={}&page={page}&per={PER}", words.replace(' ', "+")))
    }

    fn act(&self, args: &[&str]) -> Result<(Value, Duration)> {
        let headers = [
            format!("Cookie: {}", self.cookie),
            "Content-Type: application/json".to_string(),
            format!("X-CSRF-Token: {}", self.csrf),
            format!("Origin: http://127.0.0.1:{}", self.port),
            "Sec-Fetch-Site: same-origin".to_string(),
        ];
        let body = json!({"args": args}).to_string();
        let (answer, took) = raw(self.port, "POST", "/api/act", &headers, &body)?;
        ensure!(answer.status == 200, "POST {args:?}: {} {:.300}", answer.status, answer.body);
        Ok((answer.json()?, took))
    }
}

/// A page of `key` rows: its rows and the total.
fn rows(page: &Value, key: &str) -> Result<(Vec<Value>, u64)> {
    let rows = page[key].as_array().with_context(|| format!("no `{key}` rows: {page:.300}"))?.clone();
    Ok((rows, page["total"].as_u64().context("no total")?))
}

// ---------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Table {
    rows: Vec<(String, Vec<Duration>)>,
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

impl Table {
    fn add(&mut self, what: &str, mut samples: Vec<Duration>) {
        samples.sort();
        println!("  {what:<58} median {:>9}  (n={})", ms(samples[samples.len() / 2]), samples.len());
        self.rows.push((what.to_string(), samples));
    }

    fn print(&self) {
        println!("\n| what | median | p90 | min | max | n |\n|---|---|---|---|---|---|");
        for (what, s) in &self.rows {
            let p90 = if s.len() >= 10 { ms(s[(s.len() * 9).div_ceil(10) - 1]) } else { "".into() };
            println!(
                "| {what} | {} | {p90} | {} | {} | {} |",
                ms(s[s.len() / 2]),
                ms(s[0]),
                ms(s[s.len() - 1]),
                s.len()
            );
        }
    }
}

fn repeat(n: usize, mut f: impl FnMut(usize) -> Result<Duration>) -> Result<Vec<Duration>> {
    (0..n).map(&mut f).collect()
}

/// Cold figures: each in a fresh console, its first request.
fn cold(home: &Home, table: &mut Table) -> Result<()> {
    let (mut spawn, mut exchange, mut pending, mut list) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STARTS {
        for (words, key, out) in [("pending", "pending", &mut pending), ("list", "skills", &mut list)] {
            let console = Console::start(home)?;
            spawn.push(console.started);
            let (client, took) = Client::sign_in(&console)?;
            exchange.push(took);
            let (page, took) = client.read(words, 0)?;
            let (got, _) = rows(&page, key)?;
            ensure!(got.len() == PER, "{words}: {} rows on the first page", got.len());
            out.push(took);
        }
    }
    table.add("spawn to the URL printed", spawn);
    table.add("token exchange (303 + cookie)", exchange);
    table.add("`pending` page 0, cold (first read of a fresh console)", pending);
    table.add("`list` page 0, cold (persisted listing index)", list);
    let first = repeat(FIRST_EVER, |_| {
        let index = home.path.join("self-evolve/index");
        if index.exists() {
            std::fs::remove_dir_all(&index)?;
        }
        let console = Console::start(home)?;
        let (client, _) = Client::sign_in(&console)?;
        let (page, took) = client.read("list", 0)?;
        ensure!(rows(&page, "skills")?.0.len() == PER);
        Ok(took)
    })?;
    table.add("`list` page 0, first ever (no persisted index)", first);
    Ok(())
}

/// Warm figures, the stamp's cost and approvals, in one console.
fn warm(home: &Home, table: &mut Table) -> Result<()> {
    let console = Console::start(home)?;
    let (client, _) = Client::sign_in(&console)?;
    client.read("pending", 0)?;
    client.read("list", 0)?;
    table.add("`pending` page 0, warm (cached for the stamp)", repeat(WARM, |_| Ok(client.read("pending", 0)?.1))?);
    table.add("`list` page 0, warm", repeat(WARM, |_| Ok(client.read("list", 0)?.1))?);
    let last = SKILLS / PER;
    table.add(
        "`list` last page, warm",
        repeat(WARM, |_| {
            let (page, took) = client.read("list", last)?;
            ensure!(rows(&page, "skills")?.0.len() == SKILLS % PER, "the last list page");
            Ok(took)
        })?,
    );
    table.add(
        "`show NAME`, first time (plugin warm)",
        repeat(WARM, |i| Ok(client.read(&format!("show {}", Home::skill_name(i * 487 % SKILLS)), 0)?.1))?,
    );
    table.add(
        "`show NAME`, again (cached)",
        repeat(WARM, |i| Ok(client.read(&format!("show {}", Home::skill_name(i * 487 % SKILLS)), 0)?.1))?,
    );
    table.add(
        "`list` page 1 0.5 s after the last request (a click)",
        repeat(STAMPS, |_| {
            std::thread::sleep(Duration::from_millis(600));
            Ok(client.read("list", 1)?.1)
        })?,
    );
    table.add(
        "`/api/stamp` 0.5 s after the last request (the page's poll)",
        repeat(STAMPS, |_| {
            std::thread::sleep(Duration::from_millis(600));
            Ok(client.get("/api/stamp")?.1)
        })?,
    );

    let (mut post, mut reread, mut round, mut relist) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..APPROVALS {
        let (page, _) = client.read("pending", 0)?;
        let (pending, total) = rows(&page, "pending")?;
        let id = pending[0]["id"].as_str().context("a pending id")?.to_string();
        let t = Instant::now();
        let (answer, took) = client.act(&["approve", &id])?;
        ensure!(answer["ok"] == true, "approve {id}: {answer}");
        post.push(took);
        let (page, took) = client.read("pending", 0)?;
        round.push(t.elapsed());
        reread.push(took);
        let (after, left) = rows(&page, "pending")?;
        ensure!(left == total - 1 && after.iter().all(|p| p["id"] != id.as_str()), "approved {id} still pending");
        relist.push(client.read("list", 0)?.1);
    }
    table.add("approve: POST until its answer", post);
    table.add("approve: the next `pending` page (cache dropped)", reread);
    table.add("approval round trip (POST, then `pending` without it)", round);
    table.add("`list` page 0 right after an approval", relist);
    Ok(())
}

/// Marks, from navigation start, when 100 inbox rows are in the page (and the frame after).
const OBSERVER: &str = "(() => {
  const mark = () => {
    if (window.__seInbox || document.querySelectorAll('[data-test=pending-row]').length < 100) return;
    window.__seInbox = performance.now();
    requestAnimationFrame(() => { window.__seInboxFrame = performance.now(); });
    observer.disconnect();
  };
  const observer = new MutationObserver(mark);
  observer.observe(document, {childList: true, subtree: true});
})();";

const READ_MARKS: &str = "const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const read = performance.getEntriesByType('resource').find(e => e.name.includes('/api/read?args=pending'));
  return {inbox: window.__seInbox || null, frame: window.__seInboxFrame || null,
          fcp: paint ? paint.startTime : null,
          readStart: read ? read.startTime : null, readEnd: read ? read.responseEnd : null};";

/// One page load in `s`, read once 100 inbox rows are in the page: first-contentful-paint, the
/// rows, the frame after them, and the page's `pending` read (start, response end); all from
/// navigation start.
fn page_load(s: &webdriver::Session, url: &str) -> Result<[Duration; 5]> {
    s.goto(url)?;
    let marks = s.wait("100 inbox rows", Duration::from_secs(60), || {
        let marks = s.script(READ_MARKS, vec![])?;
        Ok((!marks["frame"].is_null() && !marks["fcp"].is_null()).then_some(marks))
    })?;
    let at = |key: &str| Duration::from_secs_f64(marks[key].as_f64().unwrap_or(0.0) / 1e3);
    Ok([at("fcp"), at("inbox"), at("frame"), at("readStart"), at("readEnd")])
}

/// First paint and the inbox in headless Chromium: per run a fresh console (the launch link lets
/// one browser in) and a fresh browser opening it (the console's first `pending` read), then the
/// same browser opening `/` again (the read cached for the stamp).
fn browser(home: &Home, table: &mut Table) -> Result<()> {
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-bench-chromedriver.log");
    let driver = webdriver::Driver::start(&log)?;
    let mut figures: [[Vec<Duration>; 4]; 2] = Default::default();
    for run in 0..BROWSER_RUNS {
        let console = Console::start(home)?;
        let s = driver.session(1280, 900)?;
        s.cdp("Page.addScriptToEvaluateOnNewDocument", json!({"source": OBSERVER}))?;
        let again = format!("http://127.0.0.1:{}/", console.port);
        for (i, (url, what)) in
            [(console.url.as_str(), "launch link"), (again.as_str(), "reopened")].into_iter().enumerate()
        {
            let [fcp, inbox, frame, read_start, read_end] = page_load(&s, url)?;
            println!(
                "  browser run {}, {what}: first paint {}, 100 rows {} (next frame {}), pending read {} → {}",
                run + 1,
                ms(fcp),
                ms(inbox),
                ms(frame),
                ms(read_start),
                ms(read_end)
            );
            for (v, d) in figures[i].iter_mut().zip([fcp, inbox, frame, read_end.saturating_sub(read_start)]) {
                v.push(d);
            }
        }
        s.quit()?;
    }
    for (figures, how) in figures.into_iter().zip(["fresh console, launch link", "page reopened, warm"]) {
        let [fcp, inbox, frame, read] = figures;
        table.add(&format!("browser ({how}): first contentful paint"), fcp);
        table.add(&format!("browser ({how}): 100 inbox rows in the page"), inbox);
        table.add(&format!("browser ({how}): the frame after them"), frame);
        table.add(&format!("browser ({how}): its `pending` read"), read);
    }
    Ok(())
}

/// Where a cold read's time goes, in this process through the console's own path
/// (`Operator::run` with `--json`, then the parse `api.rs` does before paging): a fresh plugin's
/// first `list` and `pending`, the same again warm, the answers' sizes; then `approve` alone.
fn breakdown(home: &Home, table: &mut Table) -> Result<()> {
    // As the console runs: from the home's folder, so no project is found above it.
    let back = std::env::current_dir()?;
    std::env::set_current_dir(home.dir.path())?;
    let source = self_evolve::component::Source::File(wasm());
    let t = Instant::now();
    let mut operator = self_evolve::operator::Operator::open(&home.path, None, &source)?;
    table.add("in-process: Operator::open (cached component)", vec![t.elapsed()]);
    for (words, key) in [("list", "skills"), ("pending", "pending")] {
        let (mut run, mut parse, mut escape) = (Vec::new(), Vec::new(), Vec::new());
        let mut bytes = 0;
        for _ in 0..4 {
            let line = [words.to_string(), "--json".to_string()];
            let t = Instant::now();
            let answer = operator.run(&line)?;
            run.push(t.elapsed());
            ensure!(answer.ok, "{words}: {}", answer.text);
            bytes = answer.text.len();
            let t = Instant::now();
            let _ = self_evolve_host::text::visible_json(&answer.text);
            escape.push(t.elapsed());
            let t = Instant::now();
            let value: Value = serde_json::from_str(&answer.text)?;
            parse.push(t.elapsed());
            ensure!(value[key].as_array().is_some_and(|a| a.len() >= 100));
        }
        let kib = bytes / 1024;
        table.add(&format!("in-process: `{words} --json`, fresh plugin's first call ({kib} KiB)"), vec![run[0]]);
        table.add(&format!("in-process: `{words} --json`, warm"), run[1..].to_vec());
        table.add(&format!("in-process: `{words}`: the host's visible_json pass"), escape);
        table.add(&format!("in-process: `{words}`: serde_json parse of the answer"), parse);
    }
    let pending: Value = serde_json::from_str(&operator.run(&["pending".into(), "--json".into()])?.text)?;
    let ids: Vec<String> = pending["pending"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["id"].as_str().map(str::to_string))
        .collect();
    table.add(
        "in-process: `approve ID` alone",
        repeat(3, |i| {
            let t = Instant::now();
            let answer = operator.run(&["approve".to_string(), ids[i].clone()])?;
            ensure!(answer.ok, "approve: {}", answer.text);
            Ok(t.elapsed())
        })?,
    );
    std::env::set_current_dir(back)?;
    Ok(())
}

fn main() -> Result<()> {
    ensure!(wasm().is_file(), "{} is missing: run ./build.sh first", wasm().display());
    // SAFETY: no other thread runs yet. The in-process plugin then shares the CLI's compile cache.
    unsafe { std::env::set_var("SELF_EVOLVE_CACHE_DIR", cache_dir()) };
    let t = Instant::now();
    println!("self-evolve ui, {SKILLS} user skills and {PENDING} pending writes:");
    let mut table = Table::default();
    let home = Home::make(&mut table)?;
    cold(&home, &mut table)?;
    warm(&home, &mut table)?;
    browser(&home, &mut table)?;
    breakdown(&home, &mut table)?;
    table.print();
    println!("\n(whole run {:.0?})", t.elapsed());
    Ok(())
}
