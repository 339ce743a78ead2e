//! Defines the console's wire side: a small HTTP/1.1 server over std's `TcpListener`, one request
//! per connection (`Connection: close`), each connection on its own thread, at most
//! `MAX_CONNECTIONS` at once. Every read is bounded in bytes and time before anything is
//! believed: the head at `MAX_HEAD`, the body at `http::MAX_BODY` whatever `Content-Length` says,
//! each socket read and write at `IO_TIMEOUT`. Each request becomes the small `http::Request`
//! the checks read, its verdict is obeyed (refused, exchanged for a session, routed to
//! `api.rs`), and every response leaves with the security headers. Also where the console's
//! random values come from (the OS).
//!
//! Written here rather than taken from a crate: the console needs GET and a small POST on
//! loopback, and a general server's defaults (unbounded heads, draining a declared body of any
//! size after the answer, no timeouts, an accept loop that stops at its first error) are each
//! a way for another local process to stop the console.

use super::api::{Console, Reply};
use super::http::{self, Keys, Method, Pass};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The longest request head (request line and headers) read.
pub const MAX_HEAD: usize = 16 << 10;
/// Connections served at once; one more is closed unanswered until one ends.
pub const MAX_CONNECTIONS: usize = 32;
/// The longest a socket read or write may wait: a client that stops sending gives up its slot.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// 32 random bytes from the operating system, as hex: the launch token, a session id, a CSRF token.
pub fn random_hex() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("the operating system gave no random bytes: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A request's head as read off the wire.
#[derive(Debug, Default)]
pub struct Head {
    pub method: String,
    pub target: String,
    /// Names lower-cased, in the order sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// One header's value; `None` when it is missing or sent twice (two `Host`s or two `Origin`s
    /// are a proxy's or an attacker's, never a browser's).
    pub fn one(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let first = values.next()?;
        values.next().is_none().then_some(first)
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// Parses a request head (without its closing blank line): `METHOD TARGET HTTP/1.x`, then
/// `Name: value` lines. Refuses what a browser never sends: obsolete line folding, a name with
/// a space, bytes that are not text.
pub fn parse_head(bytes: &[u8]) -> Result<Head, &'static str> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the request head is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the request line is not `METHOD TARGET HTTP/1.1`");
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || method.is_empty() || !target.starts_with('/') {
        return Err("the request line is not `METHOD /TARGET HTTP/1.1`");
    }
    let mut head = Head { method: method.to_string(), target: target.to_string(), headers: Vec::new() };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { return Err("a header line holds no `:`") };
        let name_ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic());
        if !name_ok || line.starts_with([' ', '\t']) || value.chars().any(|c| c.is_control() && c != '\t') {
            return Err("a header line is malformed");
        }
        head.headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok(head)
}

/// What the checks read of a request.
fn request_of(head: &Head) -> Result<http::Request, Reply> {
    let lengths = head.all("content-length");
    let body_length = match lengths.first() {
        None => None,
        Some(first) if lengths.iter().all(|l| l == first) => {
            // A length past usize (a lie, or a body this console never reads) counts as too large.
            Some(first.parse::<u64>().map_err(|_| Reply::text(400, "Content-Length is not a number"))?)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        }
        Some(_) => return Err(Reply::text(400, "Content-Length is sent twice with two values")),
    };
    if !head.all("transfer-encoding").is_empty() {
        return Err(Reply::text(501, "a chunked body is not taken; send Content-Length"));
    }
    let cookies = head.all("cookie");
    Ok(http::Request {
        method: match head.method.as_str() {
            "GET" => Method::Get,
            "POST" => Method::Post,
            _ => Method::Other,
        },
        url: head.target.clone(),
        host: head.one("host").map(str::to_string),
        origin: head.one("origin").map(str::to_string),
        fetch_site: head.one("sec-fetch-site").map(str::to_string),
        cookie: (!cookies.is_empty()).then(|| cookies.join("; ")),
        csrf: head.one("x-csrf-token").map(str::to_string),
        body_length,
    })
}

/// Reads up to the end of the head; returns the head's bytes and whatever of the body came with
/// them.
fn read_head(stream: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), Reply> {
    let mut buffer = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n")
            && end <= MAX_HEAD
        {
            let rest = buffer.split_off(end + 4);
            buffer.truncate(end);
            return Ok((buffer, rest));
        }
        if buffer.len() > MAX_HEAD {
            return Err(Reply::text(431, "the request head is larger than 16 KiB"));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(Reply::text(400, "the connection closed inside the request head")),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(Reply::text(408, "the request head did not arrive in time")),
        }
    }
}

/// Reads exactly `length` body bytes (already bounded by the checks), `already` among them.
fn read_body(stream: &mut TcpStream, mut already: Vec<u8>, length: usize) -> Result<Vec<u8>, Reply> {
    if length > http::MAX_BODY || already.len() > length {
        let refusal = http::too_large();
        return Err(Reply::text(refusal.status, refusal.text));
    }
    let missing = length - already.len();
    let read = stream.take(missing as u64).read_to_end(&mut already);
    match read {
        Ok(_) if already.len() == length => Ok(already),
        Ok(_) => Err(Reply::text(400, "the request body is shorter than its Content-Length")),
        Err(_) => Err(Reply::text(408, "the request body did not arrive in time")),
    }
}

/// One connection: its request decided and answered.
fn answer(stream: &mut TcpStream, keys: &Mutex<Keys>, console: &Console) -> Reply {
    let (head, rest) = match read_head(stream) {
        Ok(read) => read,
        Err(reply) => return reply,
    };
    let head = match parse_head(&head) {
        Ok(head) => head,
        Err(why) => return Reply::text(400, why),
    };
    let request = match request_of(&head) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let verdict = keys.lock().unwrap_or_else(PoisonError::into_inner).admit(&request);
    match verdict {
        Err(refusal) => Reply::text(refusal.status, refusal.text),
        Ok(Pass::Exchange) => match (random_hex(), random_hex()) {
            (Ok(id), Ok(csrf)) => Reply::exchange(keys.lock().unwrap_or_else(PoisonError::into_inner).start(id, csrf)),
            (Err(err), _) | (_, Err(err)) => Reply::text(500, &format!("{err:#}")),
        },
        Ok(Pass::In) => Reply::see_page(),
        Ok(Pass::Read { csrf }) => console.get(request.path(), request.query(), &csrf),
        Ok(Pass::Write) => match read_body(stream, rest, request.body_length.unwrap_or(0)) {
            Ok(body) => console.post(request.path(), &body),
            Err(reply) => reply,
        },
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        414 => "URI Too Long",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        _ => "Internal Server Error",
    }
}

/// The response's bytes: status line, length, `Connection: close`, the security headers, the
/// reply's own headers, the body.
pub fn response_bytes(reply: &Reply) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.content_type,
        reply.body.len()
    );
    for (name, value) in
        http::HEADERS.iter().map(|(k, v)| (*k, *v)).chain(reply.headers.iter().map(|(k, v)| (*k, v.as_str())))
    {
        // Every value here is ASCII without line breaks: fixed texts, hex and "/".
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&reply.body);
    bytes
}

fn handle(mut stream: TcpStream, keys: &Mutex<Keys>, console: &Console) {
    let timed = stream.set_read_timeout(Some(IO_TIMEOUT)).and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)));
    if timed.is_err() {
        return;
    }
    // Another user of this machine is refused before a byte of the request is read.
    let theirs = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(peer), Ok(local)) => super::peer::same_user(peer, local) == Some(false),
        _ => true,
    };
    let reply = if theirs {
        Reply::text(403, "this console answers only the user who started it")
    } else {
        answer(&mut stream, keys, console)
    };
    // A browser that went away takes its answer with it; nothing to do.
    let _ = stream.write_all(&response_bytes(&reply));
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // Whatever the client still sends (a body never read) is dropped with the socket.
}

/// Serves `listener` for the life of the process: each connection on a thread of `scope`, at
/// most `MAX_CONNECTIONS` across the console's listeners (`active` counts them).
pub fn serve<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    listener: &'env TcpListener,
    keys: &'env Mutex<Keys>,
    console: &'env Console,
    active: &'env AtomicUsize,
) {
    let mut said = None::<std::time::Instant>;
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    active.fetch_sub(1, Ordering::SeqCst);
                    drop(stream);
                    continue;
                }
                let started =
                    std::thread::Builder::new().name("console-request".into()).spawn_scoped(scope, move || {
                        // Counted down also when the request's thread panics.
                        struct Slot<'a>(&'a AtomicUsize);
                        impl Drop for Slot<'_> {
                            fn drop(&mut self) {
                                self.0.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                        let _slot = Slot(active);
                        handle(stream, keys, console);
                    });
                if started.is_err() {
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            }
            // A failed accept (out of file descriptors, a connection reset before it was taken):
            // said once a minute at most, then the next one is taken after a pause.
            Err(err) => {
                if said.is_none_or(|at| at.elapsed() > Duration::from_secs(60)) {
                    eprintln!("self-evolve console: accepting a connection: {err}");
                    said = Some(std::time::Instant::now());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
