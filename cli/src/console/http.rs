//! Defines who the console lets in and what it lets through, as pure functions over a small
//! `Request` (no socket, no plugin): the loopback `Host` (DNS rebinding), the launch token
//! exchanged for a session cookie, the CSRF token, `Origin` and `Sec-Fetch-Site` of a POST, and
//! the bounds on URLs and bodies. `serve.rs` builds the request from the wire and obeys the
//! verdict; `api.rs` answers only what passed. Every refusal is decided before anything runs.

/// Sent with every response, refusals included: no inline script or style, nothing framed, no
/// MIME sniffing, no referrer (the launch URL holds the token), nothing cached.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                       base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
pub const HEADERS: [(&str, &str); 5] = [
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("X-Frame-Options", "DENY"),
];

/// The longest request body read (an action is a few words).
pub const MAX_BODY: usize = 64 << 10;
/// The longest request line's URL.
pub const MAX_URL: usize = 8 << 10;
/// The session cookie's name.
pub const COOKIE: &str = "se_session";
/// Sessions kept at once (one per browser the link was opened in); the oldest goes first.
const MAX_SESSIONS: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Other,
}

/// What the checks read of a request, taken from its line and headers.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The request target as sent: path and query.
    pub url: String,
    pub host: Option<String>,
    pub origin: Option<String>,
    pub fetch_site: Option<String>,
    /// Every `Cookie` header, joined with `; `.
    pub cookie: Option<String>,
    pub csrf: Option<String>,
    /// `Content-Length`, when sent.
    pub body_length: Option<usize>,
}

impl Request {
    pub fn path(&self) -> &str {
        self.url.split_once('?').map_or(self.url.as_str(), |(path, _)| path)
    }

    pub fn query(&self) -> &str {
        self.url.split_once('?').map_or("", |(_, query)| query)
    }
}

/// A request turned away: its status and a short text for whoever sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub text: &'static str,
}

const NOT_LOOPBACK: Refusal = Refusal {
    status: 421,
    text: "this console answers only to 127.0.0.1, localhost and [::1] on its own port; open the link `self-evolve ui` printed",
};
const URL_TOO_LONG: Refusal = Refusal { status: 414, text: "the URL is longer than 8 KiB" };
const NO_SESSION: Refusal = Refusal {
    status: 401,
    text: "open the link `self-evolve ui` printed (it carries the token that lets this browser in)",
};
const BAD_CSRF: Refusal =
    Refusal { status: 403, text: "refused: the request carries no valid X-CSRF-Token; reload the page and try again" };
const CROSS_ORIGIN: Refusal =
    Refusal { status: 403, text: "refused: a change must come from the console's own page (Origin, Sec-Fetch-Site)" };
const TOO_LARGE: Refusal = Refusal { status: 413, text: "the request body is larger than 64 KiB" };
const METHOD: Refusal = Refusal { status: 405, text: "the console answers GET, and POST for /api/act" };

/// What a request that passed may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pass {
    /// `GET /?token=…` with the launch token: start a session and send the browser to `/`.
    Exchange,
    /// A session's GET; `csrf` is that session's token, which `/api/session` hands the page.
    Read { csrf: String },
    /// A session's POST that carried its CSRF token from the console's own origin.
    Write,
}

struct Session {
    id: String,
    csrf: String,
}

/// The secrets of one console: the launch token, its port, and the sessions started with it.
pub struct Keys {
    token: String,
    port: u16,
    sessions: Vec<Session>,
}

/// Equal bytes, in time that depends only on the lengths (tokens and ids have one fixed length).
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The names a browser on this machine uses for the console: `127.0.0.1`, `localhost`, `[::1]`,
/// each with the port (a browser leaves out only port 80). Anything else is a name that
/// resolves here by someone else's DNS (rebinding), or a proxy's.
pub fn loopback_host(host: &str, port: u16) -> bool {
    let (name, given) = match host.rsplit_once(':') {
        Some((name, given)) if !name.is_empty() && !given.contains(']') => (name, Some(given)),
        _ => (host, None),
    };
    let port_ok = match given {
        Some(given) => given == port.to_string(),
        None => port == 80,
    };
    port_ok && ["127.0.0.1", "localhost", "[::1]"].iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The value of query parameter `name`, still percent-encoded (tokens are hex: nothing to decode).
fn param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|pair| pair.split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v))
}

/// Every value of cookie `COOKIE` in a `Cookie` header (a browser may send more than one).
fn cookies(header: &str) -> impl Iterator<Item = &str> {
    header.split(';').filter_map(|pair| pair.trim().split_once('=')).filter(|(k, _)| *k == COOKIE).map(|(_, v)| v)
}

impl Keys {
    pub fn new(token: String, port: u16) -> Keys {
        Keys { token, port, sessions: Vec::new() }
    }

    /// Starts a session (its id and CSRF token fresh random values) and returns the
    /// `Set-Cookie` value that carries it: HttpOnly (no script reads it), SameSite=Strict (no
    /// other site's page sends it), no Secure (plain http on loopback).
    pub fn start(&mut self, id: String, csrf: String) -> String {
        if self.sessions.len() >= MAX_SESSIONS {
            self.sessions.remove(0);
        }
        let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/");
        self.sessions.push(Session { id, csrf });
        cookie
    }

    /// The session the request's cookie names, compared against every session in constant time.
    fn session(&self, req: &Request) -> Option<&Session> {
        let header = req.cookie.as_deref()?;
        let mut found = None;
        for value in cookies(header) {
            for session in &self.sessions {
                if same(value.as_bytes(), session.id.as_bytes()) {
                    found = Some(session);
                }
            }
        }
        found
    }

    /// Decides a request, in this order: the `Host` (first: a rebound name learns nothing), the
    /// URL's length, the token exchange, the session cookie, the method, and for a POST its CSRF
    /// token, origin and body size.
    pub fn admit(&self, req: &Request) -> Result<Pass, Refusal> {
        let host = req.host.as_deref().unwrap_or("");
        if !loopback_host(host, self.port) {
            return Err(NOT_LOOPBACK);
        }
        if req.url.len() > MAX_URL {
            return Err(URL_TOO_LONG);
        }
        if req.method == Method::Get
            && req.path() == "/"
            && let Some(token) = param(req.query(), "token")
        {
            return if same(token.as_bytes(), self.token.as_bytes()) { Ok(Pass::Exchange) } else { Err(NO_SESSION) };
        }
        let session = self.session(req).ok_or(NO_SESSION)?;
        match req.method {
            Method::Get => Ok(Pass::Read { csrf: session.csrf.clone() }),
            Method::Other => Err(METHOD),
            Method::Post => {
                let csrf = req.csrf.as_deref().unwrap_or("");
                if !same(csrf.as_bytes(), session.csrf.as_bytes()) {
                    return Err(BAD_CSRF);
                }
                let origin_ok = req
                    .origin
                    .as_deref()
                    .is_some_and(|o| o.strip_prefix("http://").is_some_and(|rest| rest.eq_ignore_ascii_case(host)));
                let site_ok = req.fetch_site.as_deref().is_none_or(|site| site == "same-origin");
                if !origin_ok || !site_ok {
                    return Err(CROSS_ORIGIN);
                }
                if req.body_length.is_some_and(|n| n > MAX_BODY) {
                    return Err(TOO_LARGE);
                }
                Ok(Pass::Write)
            }
        }
    }
}

/// The body-size refusal, for a body that turns out longer than it said (or said nothing).
pub fn too_large() -> Refusal {
    TOO_LARGE
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
