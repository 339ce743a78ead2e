//! The `openai` reviewer's settings in `host.json` (`reviewer.provider: "openai"`): where the
//! OpenAI-compatible endpoint is, which model, and the run's limits. The loop that uses them is
//! `live/openai.rs`.

use anyhow::{Result, anyhow, bail};
use self_evolve_host::text::visible;
use serde_json::{Map, Value};
use std::time::Duration;

const KEYS: &[&str] = &["baseUrl", "model", "apiKeyEnv", "maxTurns", "maxTokens", "timeoutMs", "requestTimeoutMs"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// e.g. `https://api.openai.com/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    /// Environment variable holding the API key (read by the host, never logged or shown).
    pub api_key_env: Option<String>,
    /// Model round trips.
    pub max_turns: u32,
    /// Prompt plus completion tokens, summed over the run.
    pub max_tokens: u64,
    /// The whole run.
    pub timeout: Duration,
    /// One HTTP attempt (never more than the time left).
    pub request_timeout: Duration,
}

impl Config {
    /// A config with the defaults: 12 turns, 60 000 tokens, 5 min per run, 60 s per request.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Config {
        Config {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            max_turns: 12,
            max_tokens: 60_000,
            timeout: Duration::from_secs(300),
            request_timeout: Duration::from_secs(60),
        }
    }

    /// Reads `{"baseUrl", "model", "apiKeyEnv"?, "maxTurns"?, "maxTokens"?, "timeoutMs"?,
    /// "requestTimeoutMs"?}`; unknown keys are refused by name.
    pub fn from_json(v: &Value) -> Result<Config> {
        let obj = v.as_object().ok_or_else(|| anyhow!("the openai provider config must be a JSON object"))?;
        if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            bail!("unknown key `{}` in the openai provider config (known: {})", visible(key), KEYS.join(", "));
        }
        let base_url = string(obj, "baseUrl")?.ok_or_else(|| anyhow!("`baseUrl` is required"))?;
        if !(base_url.starts_with("https://") || base_url.starts_with("http://"))
            || base_url.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            bail!("`baseUrl` must be an http(s) URL such as https://api.openai.com/v1, got `{}`", visible(&base_url));
        }
        let model = string(obj, "model")?.ok_or_else(|| anyhow!("`model` is required"))?;
        let api_key_env = string(obj, "apiKeyEnv")?;
        if let Some(var) = &api_key_env
            && (var.starts_with(|c: char| c.is_ascii_digit())
                || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            bail!("`apiKeyEnv` must name an environment variable (letters, digits, _), got `{}`", visible(var));
        }
        let mut config = Config::new(base_url, model);
        config.api_key_env = api_key_env;
        if let Some(n) = positive(obj, "maxTurns")? {
            config.max_turns = u32::try_from(n).map_err(|_| anyhow!("`maxTurns` is too large: {n}"))?;
        }
        config.max_tokens = positive(obj, "maxTokens")?.unwrap_or(config.max_tokens);
        config.timeout = positive(obj, "timeoutMs")?.map_or(config.timeout, Duration::from_millis);
        config.request_timeout =
            positive(obj, "requestTimeoutMs")?.map_or(config.request_timeout, Duration::from_millis);
        Ok(config)
    }
}

/// A non-empty string, or `None` when absent or null.
fn string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(other) => bail!("`{key}` must be a non-empty string, got {}", clip_chars(&other.to_string(), 80)),
    }
}

/// A positive integer, or `None` when absent or null.
fn positive(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => bail!("`{key}` must be a positive integer, got {}", clip_chars(&v.to_string(), 80)),
        },
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub fn clip_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
