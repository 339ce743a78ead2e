//! The stdio wire between the client and rmcp: every line the client sends passes here first,
//! and every line rmcp answers passes here on its way out.
//!
//! Why it exists: rmcp drops, without any answer, a line it cannot read (not UTF-8, not JSON,
//! nested past serde_json's depth, past the line bound), so the client that sent it waits
//! forever; it keeps one cancellation token per request id, so a second request reusing an id in
//! flight is cancelled by the first one's answer and never answered; it ends the session on any
//! message before `initialize`, and its error holds the whole message (a credential, megabytes of
//! text) for whoever prints it; and it reads on while answers wait to be written, so a client that
//! never reads its output grows the server without bound. Here a line rmcp would drop is answered
//! with a JSON-RPC error when its id can be read, a reused id in flight is refused, messages
//! before the handshake are answered or dropped (never passed on), and at most
//! `MAX_UNANSWERED` requests are passed on whose answers are not yet written to stdout: past that
//! the client is not read from until they are.
//!
//! Owns: the line reading (bounded), the handshake state, the ids in flight, and stdout.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests passed on whose answers are not written yet: each may hold an answer of megabytes
/// (a served file) in memory until the client reads it. The plugin runs one call at a time, so
/// more in flight would not be answered sooner.
pub const MAX_UNANSWERED: usize = 16;

/// What of an over-long line is kept to find its id in.
const PREFIX: usize = 64 << 10;

/// The server's side of the wire: what rmcp reads from and writes to.
pub type Transport = rmcp::transport::async_rw::AsyncRwTransport<
    rmcp::RoleServer,
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
>;

/// Where the handshake stands: rmcp takes `initialize`, then `notifications/initialized`, and
/// ends the session on anything else first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Before,
    Initializing,
    Done,
}

struct Shared {
    handshake: Handshake,
    /// Per request id in flight (its JSON text), its place among the unanswered.
    in_flight: HashMap<String, OwnedSemaphorePermit>,
}

type Out<W> = Arc<tokio::sync::Mutex<W>>;

/// Wires `input` and `output` (the process's stdin and stdout) to a transport for rmcp, with
/// lines bounded at `max_line` bytes. Returns the transport and the task that writes rmcp's
/// answers out (await it after the session ends, so that the last answers are written).
pub fn wire<R, W>(input: R, output: W, max_line: usize) -> (Transport, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_side, our_side) = tokio::io::duplex(1 << 16);
    let (rmcp_read, rmcp_write) = tokio::io::split(rmcp_side);
    let (from_rmcp, to_rmcp) = tokio::io::split(our_side);
    let shared = Arc::new(Mutex::new(Shared { handshake: Handshake::Before, in_flight: HashMap::new() }));
    let out: Out<W> = Arc::new(tokio::sync::Mutex::new(output));
    let unanswered = Arc::new(Semaphore::new(MAX_UNANSWERED));
    tokio::spawn(read_client(input, to_rmcp, max_line, shared.clone(), out.clone(), unanswered));
    let pump = tokio::spawn(write_answers(from_rmcp, shared, out));
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(rmcp_read, rmcp_write)
        .with_max_line_length(max_line.saturating_add(1));
    (transport, pump)
}

/// A line of the client's, or what is left of one past the bound.
enum Line {
    Whole(Vec<u8>),
    TooLong(Vec<u8>),
}

/// The next line, without its newline; at most `max` bytes are kept (past that, the first
/// `PREFIX` bytes, and the rest of the line is skipped). `None` at the end of the input.
async fn next_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>, max: usize) -> Option<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = input.fill_buf().await.ok()?;
        if chunk.is_empty() {
            return match (line.is_empty() && !too_long, too_long) {
                (true, _) => None,
                (false, true) => Some(Line::TooLong(line)),
                (false, false) => Some(Line::Whole(line)),
            };
        }
        let (take, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_long && line.len() + take > max {
            too_long = true;
            line.truncate(PREFIX);
        }
        let room = if too_long { PREFIX.saturating_sub(line.len()) } else { take };
        line.extend_from_slice(&chunk[..take.min(room)]);
        input.consume(take + usize::from(ends));
        if ends {
            return Some(if too_long { Line::TooLong(line) } else { Line::Whole(line) });
        }
    }
}

/// Reads the client's lines and passes on what rmcp can take; answers the rest itself.
async fn read_client<R, W>(
    input: R,
    mut to_rmcp: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    max_line: usize,
    shared: Arc<Mutex<Shared>>,
    out: Out<W>,
    unanswered: Arc<Semaphore>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(1 << 16, input);
    while let Some(line) = next_line(&mut input, max_line).await {
        let bytes = match line {
            Line::TooLong(prefix) => {
                let message = format!("the request is over the {} MiB a request line may hold", max_line >> 20);
                answer_error(&out, id_in(&prefix), -32600, &message).await;
                continue;
            }
            Line::Whole(bytes) => bytes,
        };
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match std::str::from_utf8(bytes).map(serde_json::from_str) {
            Ok(Ok(value)) => value,
            Ok(Err(_)) => {
                let why = "the request is not JSON (or nests deeper than 128 levels)";
                answer_error(&out, id_in(bytes), -32700, why).await;
                continue;
            }
            Err(_) => {
                answer_error(&out, id_in(bytes), -32700, "the request is not UTF-8").await;
                continue;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null());
        let handshake = shared.lock().map(|s| s.handshake).unwrap_or(Handshake::Done);
        let next = match (handshake, method, id) {
            (Handshake::Before, Some("initialize"), Some(_)) => Handshake::Initializing,
            (Handshake::Initializing, Some("notifications/initialized"), None) => Handshake::Done,
            (Handshake::Done, _, _) => Handshake::Done,
            // rmcp ends the session on anything else before the handshake is done.
            (_, Some(_), Some(id)) => {
                let why = "the server is not initialized: send `initialize`, then `notifications/initialized`";
                answer_error(&out, Some(id.clone()), -32002, why).await;
                continue;
            }
            _ => continue,
        };
        if let (Some(_), Some(id)) = (method, id) {
            let key = id.to_string();
            if shared.lock().is_ok_and(|s| s.in_flight.contains_key(&key)) {
                let why = "a request with this id is still in flight: give each request an id of its own";
                answer_error(&out, Some(id.clone()), -32600, why).await;
                continue;
            }
            // Backpressure: a client that does not read its answers is not read from either.
            let Ok(permit) = unanswered.clone().acquire_owned().await else { return };
            if let Ok(mut s) = shared.lock() {
                s.in_flight.insert(key, permit);
            }
        }
        if method == Some("notifications/cancelled")
            && let Some(request) = message.pointer("/params/requestId")
            && let Ok(mut s) = shared.lock()
        {
            // A cancelled request may never be answered: its place is given back now.
            s.in_flight.remove(&request.to_string());
        }
        if let Ok(mut s) = shared.lock() {
            s.handshake = next;
        }
        if to_rmcp.write_all(bytes).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
            return;
        }
    }
    // The end of the client's input ends rmcp's.
    let _ = to_rmcp.shutdown().await;
}

/// Writes rmcp's lines to stdout; an answer written gives its request's place back.
async fn write_answers<W: AsyncWrite + Unpin>(
    from_rmcp: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    shared: Arc<Mutex<Shared>>,
    out: Out<W>,
) {
    #[derive(serde::Deserialize)]
    struct Answer {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let mut lines = BufReader::with_capacity(1 << 16, from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        {
            let mut out = out.lock().await;
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
        if let Ok(Answer { id: Some(id), method: None }) = serde_json::from_slice::<Answer>(&line)
            && let Ok(mut s) = shared.lock()
        {
            s.in_flight.remove(&id.to_string());
        }
    }
}

/// One JSON-RPC error line to the client, for request `id` (null when it could not be read).
async fn answer_error<W: AsyncWrite + Unpin>(out: &Out<W>, id: Option<Value>, code: i64, message: &str) {
    let line = json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": {"code": code, "message": message}});
    let mut out = out.lock().await;
    let _ = out.write_all(format!("{line}\n").as_bytes()).await;
    let _ = out.flush().await;
}

/// The top-level `"id"` of a line that does not parse (broken, cut short or too deep): a number
/// or a string at depth one, read by a walk that skips strings and counts brackets.
fn id_in(bytes: &[u8]) -> Option<Value> {
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1 && &bytes[i..end] == b"\"id\"" {
                    let mut j = end;
                    while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\r' | b'\n' | b':') {
                        j += 1;
                    }
                    return scalar_at(bytes, j);
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the string opening at `at` ends (past its closing quote).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A JSON number or string starting at `at` (an id is one or the other).
fn scalar_at(bytes: &[u8], at: usize) -> Option<Value> {
    let end = match bytes.get(at)? {
        b'"' => string_end(bytes, at)?,
        b'-' | b'0'..=b'9' => at + bytes[at..].iter().take_while(|c| matches!(c, b'-' | b'0'..=b'9')).count(),
        _ => return None,
    };
    let value: Value = serde_json::from_slice(bytes.get(at..end)?).ok()?;
    (value.is_number() || value.is_string()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_level_id_of_a_broken_line() {
        assert_eq!(id_in(br#"{"jsonrpc":"2.0","id":2,"method":"x","params":{"#), Some(json!(2)));
        assert_eq!(id_in(br#"{"params":{"id":5,"s":"\"id\":7"},"id":"a\"b"}"#), Some(json!("a\"b")));
        assert_eq!(id_in(br#"{"method":"x","params":{"id":5}}"#), None, "an id inside params is not the request's");
        assert_eq!(id_in(b"{\"id\": -3, \xff}"), Some(json!(-3)));
        assert_eq!(id_in(br#"{"id":null}"#), None);
        assert_eq!(id_in(b"not json at all"), None);
    }
}
