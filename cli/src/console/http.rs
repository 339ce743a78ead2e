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
/// The session cookie's name, followed by the console's port: a browser sends cookies by host,
/// not port, so two consoles (two homes) each keep their own.
pub const COOKIE: &str = "se_session_";
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
const LINK_USED: Refusal = Refusal {
    status: 401,
    text: "this link was used already: it lets one browser in. Go back to the browser it opened, or stop \
           `self-evolve ui` and start it again for a new link",
};
const CROSS_SITE_READ: Refusal =
    Refusal { status: 403, text: "refused: the console's data are read only by its own page (Sec-Fetch-Site)" };
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
    /// `GET /?token=…` with the launch token, used for the first time: start a session and send
    /// the browser to `/`.
    Exchange,
    /// `GET /?token=…` from a browser that already holds a session: send it to `/`.
    In,
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
    /// The token lets one browser in: it is spent by its first exchange (the link also reaches
    /// the browser's command line and history, which others on the machine may read).
    spent: bool,
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

/// Every value of this console's cookie (`COOKIE` and the port) in a `Cookie` header (a browser
/// may send more than one).
fn cookies(header: &str, port: u16) -> impl Iterator<Item = &str> {
    let name = format!("{COOKIE}{port}");
    header.split(';').filter_map(|pair| pair.trim().split_once('=')).filter(move |(k, _)| *k == name).map(|(_, v)| v)
}

impl Keys {
    pub fn new(token: String, port: u16) -> Keys {
        Keys { token, spent: false, port, sessions: Vec::new() }
    }

    /// Starts a session (its id and CSRF token fresh random values) and returns the
    /// `Set-Cookie` value that carries it: HttpOnly (no script reads it), SameSite=Strict (no
    /// other site's page sends it), no Secure (plain http on loopback).
    pub fn start(&mut self, id: String, csrf: String) -> String {
        if self.sessions.len() >= MAX_SESSIONS {
            self.sessions.remove(0);
        }
        let cookie = format!("{COOKIE}{}={id}; HttpOnly; SameSite=Strict; Path=/", self.port);
        self.sessions.push(Session { id, csrf });
        self.spent = true;
        cookie
    }

    /// The session the request's cookie names, compared against every session in constant time.
    fn session(&self, req: &Request) -> Option<&Session> {
        let header = req.cookie.as_deref()?;
        let mut found = None;
        for value in cookies(header, self.port) {
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
            return match (same(token.as_bytes(), self.token.as_bytes()), self.session(req).is_some(), self.spent) {
                (false, _, _) => Err(NO_SESSION),
                (true, true, _) => Ok(Pass::In),
                (true, false, false) => Ok(Pass::Exchange),
                (true, false, true) => Err(LINK_USED),
            };
        }
        let session = self.session(req).ok_or(NO_SESSION)?;
        match req.method {
            // The data are fetched by the console's own page (`same-origin`), or opened by the
            // person (`none`, or no header from an older browser); another page's `<img>` or
            // `<script>` on another loopback port would send the cookie (a site is not a port)
            // and is refused.
            Method::Get
                if req.path().starts_with("/api/")
                    && !req.fetch_site.as_deref().is_none_or(|site| matches!(site, "same-origin" | "none")) =>
            {
                Err(CROSS_SITE_READ)
            }
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
