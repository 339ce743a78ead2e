//! The http capability: POST to endpoints the host named, nothing else. The host owns the
//! URL and the credential (read from its own environment); the plugin sees status and body.

use std::collections::BTreeMap;
use std::time::Duration;

/// The cap on a request's deadline when the endpoint names none (or 0).
pub const DEFAULT_MAX_TIMEOUT_MS: u32 = 30_000;

#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Base URL, e.g. `https://gate.example/v1`; the request's path is appended.
    pub url: String,
    /// Environment variable holding the credential; `None` for endpoints that need none.
    pub credential_env: Option<String>,
    /// Header that carries the credential, and what goes before it.
    pub auth_header: String,
    pub auth_prefix: String,
    /// The host's cap on any request's deadline.
    pub max_timeout_ms: u32,
    /// Largest response body passed to the plugin.
    pub max_response_bytes: u64,
}

impl Endpoint {
    pub fn new(url: impl Into<String>) -> Endpoint {
        Endpoint {
            url: url.into(),
            credential_env: None,
            auth_header: "authorization".into(),
            auth_prefix: "Bearer ".into(),
            max_timeout_ms: DEFAULT_MAX_TIMEOUT_MS,
            max_response_bytes: 1 << 20,
        }
    }

    pub fn with_credential_env(mut self, var: impl Into<String>) -> Endpoint {
        self.credential_env = Some(var.into());
        self
    }

    fn credential(&self) -> Option<String> {
        let var = self.credential_env.as_ref()?;
        std::env::var(var).ok().filter(|v| !v.trim().is_empty())
    }
}

/// A client for one request: this deadline for all of it, statuses as answers (not errors),
/// never a redirect (a host may not be sent where its operator did not name), and never a proxy:
/// ureq's default reads ALL_PROXY / HTTPS_PROXY / HTTP_PROXY from the environment, which would
/// hand the request (and, for an `http://` endpoint, its credential) to another host. The Node
/// (node:http, `agent: false`) and Python (http.client) hosts always connect to the endpoint itself.
pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .build()
        .into()
}

#[derive(Debug, Clone, Default)]
pub struct HttpConfig {
    pub endpoints: BTreeMap<String, Endpoint>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub endpoint: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpErr {
    Timeout,
    Denied(String),
    NoCredential,
    Network(String),
}

/// Headers the plugin may never set: credentials, routing and framing are the host's.
const FORBIDDEN_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "x-api-key",
    "api-key",
];

pub struct HttpCap {
    config: HttpConfig,
}

impl HttpCap {
    pub fn new(config: HttpConfig) -> HttpCap {
        HttpCap { config }
    }

    pub fn has_endpoint(&self, name: &str) -> bool {
        self.config.endpoints.contains_key(name)
    }

    /// True when the endpoint needs no credential or its variable is set. Never the value.
    pub fn has_credential(&self, name: &str) -> bool {
        self.config.endpoints.get(name).is_some_and(|e| e.credential_env.is_none() || e.credential().is_some())
    }

    pub fn post(&self, req: &Request) -> Result<Response, HttpErr> {
        let endpoint = self
            .config
            .endpoints
            .get(&req.endpoint)
            .ok_or_else(|| HttpErr::Denied(format!("no endpoint named `{}`", req.endpoint)))?;
        check_path(&req.path)?;
        for (name, value) in &req.headers {
            let lower = name.to_ascii_lowercase();
            if FORBIDDEN_HEADERS.contains(&lower.as_str()) || lower == endpoint.auth_header.to_ascii_lowercase() {
                return Err(HttpErr::Denied(format!("header `{name}` is reserved for the host")));
            }
            if !valid_header(name, value) {
                return Err(HttpErr::Denied(format!("header `{name}` is malformed")));
            }
        }
        let credential = match &endpoint.credential_env {
            Some(_) => Some(endpoint.credential().ok_or(HttpErr::NoCredential)?),
            None => None,
        };
        // A cap of 0 is "no cap given": the default, as Node (`maxTimeoutMs || 30000`) and Python
        // (`max_timeout_ms or 30000`) read it; `clamp(1, 0)` would panic inside the import.
        let cap = if endpoint.max_timeout_ms == 0 { DEFAULT_MAX_TIMEOUT_MS } else { endpoint.max_timeout_ms };
        let timeout = Duration::from_millis(u64::from(req.timeout_ms.clamp(1, cap)));
        let agent = agent(timeout);
        let url = format!("{}{}", endpoint.url.trim_end_matches('/'), req.path);
        let mut builder = agent.post(&url);
        for (name, value) in &req.headers {
            builder = builder.header(name, value);
        }
        if let Some(secret) = credential {
            builder = builder.header(&endpoint.auth_header, format!("{}{secret}", endpoint.auth_prefix));
        }
        let mut response = builder.send(&req.body[..]).map_err(map_error)?;
        let status = response.status().as_u16();
        let body =
            response.body_mut().with_config().limit(endpoint.max_response_bytes).read_to_vec().map_err(map_error)?;
        Ok(Response { status, body })
    }
}

fn check_path(path: &str) -> Result<(), HttpErr> {
    let ok = path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains("..")
        // `%2e%2e` is `..` to many servers and URL parsers (Node's resolves it before sending).
        && !path.to_ascii_lowercase().contains("%2e")
        && !path.contains('#')
        && !path.contains('@')
        // Printable ASCII only: no space or control, and nothing non-ASCII (`/café`, a BOM), which
        // each HTTP client would otherwise send differently (raw UTF-8, percent-encoded, or fail).
        && path.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if ok {
        Ok(())
    } else {
        Err(HttpErr::Denied(format!("path `{path}` must be a plain absolute path such as /v1/decide")))
    }
}

fn valid_header(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
        && !value.chars().any(|c| c == '\r' || c == '\n' || c == '\0')
}

fn map_error(err: ureq::Error) -> HttpErr {
    match err {
        ureq::Error::Timeout(_) => HttpErr::Timeout,
        ureq::Error::Io(io)
            if io.kind() == std::io::ErrorKind::TimedOut || io.kind() == std::io::ErrorKind::WouldBlock =>
        {
            HttpErr::Timeout
        }
        other => HttpErr::Network(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_under_the_endpoint() {
        for bad in [
            "",
            "v1",
            "//evil.example/x",
            "/../admin",
            "/%2e%2e/admin",
            "/x/%2E%2e/y",
            "/a#frag",
            "/x@y",
            "/a b",
            "/a\\b",
            "/café",
            "/a\u{feff}b",
            "/a\u{a0}b",
        ] {
            assert!(matches!(check_path(bad), Err(HttpErr::Denied(_))), "{bad:?}");
        }
        for good in ["/", "/v1/decide", "/v1/decide?x=1"] {
            assert_eq!(check_path(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn header_names_and_values_are_checked() {
        assert!(valid_header("content-type", "application/json"));
        assert!(!valid_header("bad header", "x"));
        assert!(!valid_header("x-a", "line\r\nInjected: 1"));
    }
}
