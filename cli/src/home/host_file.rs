//! The operator's host config, `<home>/host.json`: the HTTP endpoints the plugin may name (with
//! the environment variables holding their keys), the reviewer provider and the hook's budget.
//! It lives beside the roots, never in one: the plugin cannot read or loosen it.

use crate::home::openai;
use anyhow::{Context, Result, anyhow, bail};
use self_evolve_host::caps::http::{Endpoint, HttpConfig};
use self_evolve_host::text::visible;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// How a background reviewer runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reviewer {
    /// No live reviewer: reviews that come due are refused by the provider (and logged).
    None,
    /// An agent CLI run detached with the prompt on stdin (`claude -p …`, `codex exec …`).
    Command(CommandReviewer),
    /// An OpenAI-compatible tool-calling loop run by the host.
    OpenAi(openai::Config),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReviewer {
    /// The command and its arguments; `{session}`, `{activation}`, `{cwd}` and `{transcript}`
    /// are replaced in each argument.
    pub argv: Vec<String>,
    /// Extra environment for the reviewer (on top of the host's and the `SELF_EVOLVE_*` ones);
    /// `None` (JSON `null`) removes a variable the host has.
    pub env: BTreeMap<String, Option<String>>,
    /// Append the parent conversation (from the transcript) to the prompt on stdin.
    pub seed_transcript: bool,
    /// The host's cap on a reviewer's run (the plugin's `review.timeoutMinutes` also applies).
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookConfig {
    /// A hook process answers within this long, whatever the plugin is doing (then exits 0).
    pub budget: Duration,
    /// Print `{"systemMessage": …}` (shown to the user, not the model) when a review starts.
    pub system_message: bool,
}

impl Default for HookConfig {
    fn default() -> Self {
        HookConfig { budget: Duration::from_secs(10), system_message: false }
    }
}

#[derive(Debug, Clone)]
pub struct HostFile {
    pub http: HttpConfig,
    pub reviewer: Reviewer,
    pub hook: HookConfig,
    /// The user skills root is a team's git working tree (`crate::team`).
    pub git: Option<crate::home::git_config::GitConfig>,
    /// `eval.agent`: the agent command `self-evolve eval` runs when neither `--agent` nor the
    /// suite names one.
    pub eval_agent: Option<String>,
    /// `serve.tokens`: who may use `self-evolve serve`, each person's bearer token kept as its
    /// SHA-256 (`crate::mcp::tokens`).
    pub serve_tokens: Vec<ServeToken>,
}

/// A person's token for `self-evolve serve`: only its hash is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeToken {
    pub person: String,
    pub sha256: [u8; 32],
}

impl Default for HostFile {
    fn default() -> Self {
        HostFile {
            http: HttpConfig::default(),
            reviewer: Reviewer::None,
            hook: HookConfig::default(),
            git: None,
            eval_agent: None,
            serve_tokens: Vec::new(),
        }
    }
}

const TOP_KEYS: &[&str] = &["endpoints", "reviewer", "hook", "git", "eval", "serve"];

impl HostFile {
    /// `<home>/host.json`, or the defaults when there is none.
    pub fn load(home: &Path) -> Result<HostFile> {
        let path = home.join("host.json");
        let Some(bytes) = super::files::read_config(&path, 1 << 20)? else { return Ok(HostFile::default()) };
        let value: Value = serde_json::from_slice(&bytes).with_context(|| format!("{} is not JSON", path.display()))?;
        HostFile::from_json(&value).with_context(|| format!("in {}", path.display()))
    }

    pub fn from_json(value: &Value) -> Result<HostFile> {
        let obj = object(value, "the host config")?;
        unknown(obj, TOP_KEYS, "")?;
        let mut file = HostFile::default();
        if let Some(endpoints) = obj.get("endpoints") {
            for (name, spec) in object(endpoints, "`endpoints`")? {
                file.http.endpoints.insert(name.clone(), endpoint(name, spec)?);
            }
        }
        if let Some(reviewer) = obj.get("reviewer") {
            file.reviewer = self::reviewer(reviewer)?;
        }
        if let Some(git) = obj.get("git") {
            file.git = Some(crate::home::git_config::GitConfig::from_json(git)?);
        }
        if let Some(eval) = obj.get("eval") {
            let eval = object(eval, "`eval`")?;
            unknown(eval, &["agent"], "eval.")?;
            file.eval_agent = string(eval, "agent", "eval.")?.filter(|a| !a.trim().is_empty());
        }
        if let Some(serve) = obj.get("serve") {
            file.serve_tokens = serve_tokens(serve)?;
        }
        if let Some(hook) = obj.get("hook") {
            let hook = object(hook, "`hook`")?;
            unknown(hook, &["budgetMs", "systemMessage"], "hook.")?;
            if let Some(ms) = hook.get("budgetMs") {
                let ms = ms.as_u64().filter(|ms| (100..=600_000).contains(ms)).ok_or_else(|| {
                    anyhow!("`hook.budgetMs` must be a whole number of milliseconds from 100 to 600000")
                })?;
                file.hook.budget = Duration::from_millis(ms);
            }
            if let Some(on) = hook.get("systemMessage") {
                file.hook.system_message =
                    on.as_bool().ok_or_else(|| anyhow!("`hook.systemMessage` must be true or false"))?;
            }
        }
        Ok(file)
    }
}

pub const PERSON_RULE: &str =
    "a person's name is 1 to 64 of a-z, 0-9, `.`, `_` and `-`, starting with a letter or digit";

pub fn valid_person(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}

pub fn parse_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// `serve`: `{"tokens": {"PERSON": {"sha256": "<64 hex>", "createdMs": …}}}`.
fn serve_tokens(value: &Value) -> Result<Vec<ServeToken>> {
    let serve = object(value, "`serve`")?;
    unknown(serve, &["tokens"], "serve.")?;
    let Some(tokens) = serve.get("tokens") else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    for (person, entry) in object(tokens, "`serve.tokens`")? {
        let prefix = format!("serve.tokens.{}.", visible(person));
        if !valid_person(person) {
            bail!("`serve.tokens.{}`: {}", visible(person), PERSON_RULE);
        }
        let entry = object(entry, &format!("`serve.tokens.{}`", visible(person)))?;
        unknown(entry, &["sha256", "createdMs"], &prefix)?;
        let hex = string(entry, "sha256", &prefix)?.ok_or_else(|| anyhow!("`{prefix}sha256` is required"))?;
        let sha256 =
            parse_hex(&hex).ok_or_else(|| anyhow!("`{prefix}sha256` must be 64 lowercase hex digits (a SHA-256)"))?;
        found.push(ServeToken { person: person.clone(), sha256 });
    }
    Ok(found)
}

fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| anyhow!("{what} must be a JSON object"))
}

fn unknown(obj: &Map<String, Value>, known: &[&str], prefix: &str) -> Result<()> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => bail!("unknown key `{prefix}{}` (known: {})", visible(key), known.join(", ")),
        None => Ok(()),
    }
}

fn string(obj: &Map<String, Value>, key: &str, prefix: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => bail!("`{prefix}{key}` must be a string"),
    }
}

fn endpoint(name: &str, spec: &Value) -> Result<Endpoint> {
    let prefix = format!("endpoints.{}.", visible(name));
    let obj = object(spec, &format!("`endpoints.{}`", visible(name)))?;
    unknown(obj, &["url", "apiKeyEnv", "authHeader", "authPrefix", "timeoutMs"], &prefix)?;
    let url = string(obj, "url", &prefix)?.ok_or_else(|| anyhow!("`{prefix}url` is required"))?;
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.chars().any(char::is_whitespace) {
        bail!("`{prefix}url` must be an http(s) URL");
    }
    let mut endpoint = Endpoint::new(url);
    endpoint.credential_env = string(obj, "apiKeyEnv", &prefix)?.filter(|v| !v.is_empty());
    if let Some(header) = string(obj, "authHeader", &prefix)? {
        endpoint.auth_header = header.to_ascii_lowercase();
    }
    if let Some(prefix_text) = string(obj, "authPrefix", &prefix)? {
        endpoint.auth_prefix = prefix_text;
    }
    if let Some(ms) = obj.get("timeoutMs") {
        endpoint.max_timeout_ms = ms
            .as_u64()
            .and_then(|ms| u32::try_from(ms).ok())
            .filter(|ms| *ms > 0)
            .ok_or_else(|| anyhow!("`{prefix}timeoutMs` must be a positive whole number"))?;
    }
    Ok(endpoint)
}

fn reviewer(value: &Value) -> Result<Reviewer> {
    let obj = object(value, "`reviewer`")?;
    let provider = string(obj, "provider", "reviewer.")?.ok_or_else(|| anyhow!("`reviewer.provider` is required"))?;
    let rest: Map<String, Value> =
        obj.iter().filter(|(k, _)| *k != "provider").map(|(k, v)| (k.clone(), v.clone())).collect();
    match provider.as_str() {
        "none" => {
            unknown(&rest, &[], "reviewer.")?;
            Ok(Reviewer::None)
        }
        "command" => {
            unknown(&rest, &["argv", "env", "seed", "timeoutMs"], "reviewer.")?;
            let argv: Vec<String> = rest
                .get("argv")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
                .filter(|a| !a.is_empty() && !a[0].is_empty())
                .ok_or_else(|| anyhow!("`reviewer.argv` must be a non-empty list of strings (the command first)"))?;
            let mut env = BTreeMap::new();
            if let Some(vars) = rest.get("env") {
                for (k, v) in object(vars, "`reviewer.env`")? {
                    let v = match v {
                        Value::Null => None,
                        Value::String(v) => Some(v.clone()),
                        _ => bail!("`reviewer.env.{}` must be a string, or null to unset it", visible(k)),
                    };
                    if k.is_empty()
                        || k.contains('=')
                        || k.contains('\0')
                        || v.as_ref().is_some_and(|v| v.contains('\0'))
                    {
                        bail!("`reviewer.env.{}` is not a usable environment variable", visible(k));
                    }
                    env.insert(k.clone(), v);
                }
            }
            let seed_transcript = match string(&rest, "seed", "reviewer.")?.as_deref() {
                None | Some("transcript") => true,
                Some("none") => false,
                Some(other) => bail!("`reviewer.seed` must be \"transcript\" or \"none\", not `{}`", visible(other)),
            };
            let timeout =
                match rest.get("timeoutMs") {
                    None => None,
                    Some(ms) => Some(Duration::from_millis(ms.as_u64().filter(|ms| *ms > 0).ok_or_else(|| {
                        anyhow!("`reviewer.timeoutMs` must be a positive whole number of milliseconds")
                    })?)),
                };
            Ok(Reviewer::Command(CommandReviewer { argv, env, seed_transcript, timeout }))
        }
        "openai" => Ok(Reviewer::OpenAi(openai::Config::from_json(&Value::Object(rest))?)),
        other => bail!("`reviewer.provider` must be \"command\", \"openai\" or \"none\", not `{}`", visible(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_endpoints_reviewers_and_the_hook() {
        let file = HostFile::from_json(&json!({
            "endpoints": {"llm": {"url": "https://api.example/v1", "apiKeyEnv": "EXAMPLE_KEY"}},
            "reviewer": {"provider": "command", "argv": ["claude", "-p", "--resume", "{session}"], "seed": "none",
                         "env": {"NO_COLOR": "1", "OPENAI_API_KEY": null}},
            "hook": {"budgetMs": 5000, "systemMessage": true}
        }))
        .unwrap();
        let llm = &file.http.endpoints["llm"];
        assert_eq!((llm.url.as_str(), llm.credential_env.as_deref()), ("https://api.example/v1", Some("EXAMPLE_KEY")));
        match file.reviewer {
            Reviewer::Command(c) => {
                assert_eq!(c.argv, ["claude", "-p", "--resume", "{session}"]);
                assert_eq!(c.env["NO_COLOR"].as_deref(), Some("1"));
                assert_eq!(c.env["OPENAI_API_KEY"], None, "null unsets a variable");
                assert!(!c.seed_transcript);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(file.hook, HookConfig { budget: Duration::from_secs(5), system_message: true });
        let openai = HostFile::from_json(
            &json!({"reviewer": {"provider": "openai", "baseUrl": "http://127.0.0.1:1/v1", "model": "m"}}),
        );
        assert!(matches!(openai.unwrap().reviewer, Reviewer::OpenAi(_)));
        assert!(matches!(HostFile::from_json(&json!({})).unwrap().reviewer, Reviewer::None));
    }

    #[test]
    fn refuses_what_it_cannot_use_by_name() {
        for (doc, needle) in [
            (json!({"reviewers": {}}), "unknown key `reviewers`"),
            (json!({"endpoints": {"llm": {"url": "ftp://x"}}}), "endpoints.llm.url"),
            (json!({"endpoints": {"llm": {"url": "https://x", "key": "sk-1"}}}), "unknown key `endpoints.llm.key`"),
            (json!({"reviewer": {"provider": "command"}}), "reviewer.argv"),
            (json!({"reviewer": {"provider": "command", "argv": []}}), "reviewer.argv"),
            (json!({"reviewer": {"provider": "command", "argv": ["x"], "env": {"A=B": "c"}}}), "reviewer.env"),
            (json!({"reviewer": {"provider": "command", "argv": ["x"], "seed": "all"}}), "reviewer.seed"),
            (json!({"reviewer": {"provider": "fork"}}), "reviewer.provider"),
            (json!({"reviewer": {"provider": "openai", "model": "m"}}), "baseUrl"),
            (json!({"hook": {"budgetMs": 5}}), "hook.budgetMs"),
            (json!([]), "must be a JSON object"),
        ] {
            let err = format!("{:#}", HostFile::from_json(&doc).unwrap_err());
            assert!(err.contains(needle), "{doc}: {err}");
        }
    }
}
