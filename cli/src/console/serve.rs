//! Defines the console's wire side over `tiny_http`: each request becomes the small
//! `http::Request` the checks read, its verdict is obeyed (refused, exchanged for a session,
//! routed to `api.rs`), a POST's body is read only up to its bound, and every response leaves
//! with the security headers. Also where the console's random values come from (the OS).

use super::api::{Console, Reply};
use super::http::{self, Keys, Method, Pass};
use std::io::Read;
use std::sync::{Mutex, PoisonError};

/// 32 random bytes from the operating system, as hex: the launch token, a session id, a CSRF token.
pub fn random_hex() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("the operating system gave no random bytes: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One header's value; `None` when it is missing or sent twice (two `Host`s or two `Origin`s
/// are a proxy's or an attacker's, never a browser's).
fn one(req: &tiny_http::Request, name: &'static str) -> Option<String> {
    let mut values = req.headers().iter().filter(|h| h.field.equiv(name)).map(|h| h.value.as_str().to_string());
    let first = values.next()?;
    values.next().is_none().then_some(first)
}

fn request_of(req: &tiny_http::Request) -> http::Request {
    let cookies: Vec<&str> =
        req.headers().iter().filter(|h| h.field.equiv("Cookie")).map(|h| h.value.as_str()).collect();
    http::Request {
        method: match req.method() {
            tiny_http::Method::Get => Method::Get,
            tiny_http::Method::Post => Method::Post,
            _ => Method::Other,
        },
        url: req.url().to_string(),
        host: one(req, "Host"),
        origin: one(req, "Origin"),
        fetch_site: one(req, "Sec-Fetch-Site"),
        cookie: (!cookies.is_empty()).then(|| cookies.join("; ")),
        csrf: one(req, "X-CSRF-Token"),
        body_length: req.body_length(),
    }
}

/// The body, up to `MAX_BODY`; longer (whatever `Content-Length` said) is refused.
fn body(req: &mut tiny_http::Request) -> Result<Vec<u8>, Reply> {
    let mut body = Vec::new();
    let read = req.as_reader().take(http::MAX_BODY as u64 + 1).read_to_end(&mut body);
    match read {
        Ok(_) if body.len() <= http::MAX_BODY => Ok(body),
        Ok(_) => {
            let refusal = http::too_large();
            Err(Reply::text(refusal.status, refusal.text))
        }
        Err(err) => Err(Reply::text(400, &format!("the request body could not be read: {err}"))),
    }
}

fn decide(req: &mut tiny_http::Request, keys: &Mutex<Keys>, console: &Console) -> Reply {
    let request = request_of(req);
    let verdict = keys.lock().unwrap_or_else(PoisonError::into_inner).admit(&request);
    match verdict {
        Err(refusal) => Reply::text(refusal.status, refusal.text),
        Ok(Pass::Exchange) => match (random_hex(), random_hex()) {
            (Ok(id), Ok(csrf)) => Reply::exchange(keys.lock().unwrap_or_else(PoisonError::into_inner).start(id, csrf)),
            (Err(err), _) | (_, Err(err)) => Reply::text(500, &format!("{err:#}")),
        },
        Ok(Pass::Read { csrf }) => console.get(request.path(), request.query(), &csrf),
        Ok(Pass::Write) => match body(req) {
            Ok(body) => console.post(request.path(), &body),
            Err(reply) => reply,
        },
    }
}

fn respond(req: tiny_http::Request, reply: Reply) {
    let mut response = tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
    let headers = http::HEADERS
        .iter()
        .map(|(k, v)| (*k, (*v).to_string()))
        .chain([("Content-Type", reply.content_type.to_string())])
        .chain(reply.headers);
    for (name, value) in headers {
        // Every value here is ASCII: fixed texts, hex and "/".
        if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    // A browser that went away takes its answer with it; nothing to do.
    let _ = req.respond(response);
}

/// Serves `server`'s requests for the life of the process; one of several threads on it.
pub fn serve(server: &tiny_http::Server, keys: &Mutex<Keys>, console: &Console) {
    loop {
        match server.recv() {
            Ok(mut req) => {
                let reply = decide(&mut req, keys, console);
                respond(req, reply);
            }
            // A failed accept (out of file descriptors): said once a second at most, then retried.
            Err(err) => {
                eprintln!("self-evolve console: {err}");
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
    }
}
