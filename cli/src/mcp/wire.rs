//! The stdio wire between the client and rmcp: every line the client sends passes here first,
//! and every line rmcp answers passes here on its way out.
//!
//! Why it exists: rmcp answers a message it cannot read without its id, or not at all (not
//! UTF-8, not JSON, nested past serde_json's depth, past the line bound, a shape it refuses), so
//! the client that sent it waits forever; it keeps one cancellation token per request id, so a
//! second request reusing an id in flight (or an id just cancelled) is cancelled by the first
//! one's answer, which it gets instead of its own; it ends the session on any notification or
//! response before `initialize`; and it reads on while answers wait to be written, so a client
//! that never reads its output grows the server without bound.
//!
//! So here every message is read as rmcp reads it (its own types), and only what rmcp reads
//! whole is passed on, re-serialized as read: a request it would refuse is answered here with
//! its id (-32700, -32600, -32602; `"id": null` when the id itself is unreadable or invalid), a
//! batch request by request. Ids are compared as rmcp compares them (its `RequestId`: `7`, `7.0`
//! and `7e0` are one id), and one in flight is refused when reused. A request is in flight until
//! its answer is written, cancelled or not: the client's `notifications/cancelled` is not passed
//! on (rmcp would forget the request and drop its answer, and the wire could not know when it is
//! over) but cancels the request's handler (`Watched`), whose answer, which always comes, is not
//! written. Before the handshake only `initialize` and `ping` are passed on. At most
//! `MAX_UNANSWERED` requests are in flight: past that the client is not read from.
//!
//! Owns: the line reading (bounded), the handshake state, the requests in flight, and stdout.

use rmcp::model::{
    CancelledNotificationMethod, ClientJsonRpcMessage, ClientNotification, ClientRequest, ConstString, JsonRpcMessage,
    JsonRpcNotification, ProtocolVersion, RequestId, ServerConfig, ServerResult,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Requests passed on whose answers are not written yet: each may hold an answer of megabytes
/// (a served file) in memory until the client reads it. The plugin runs one call at a time, so
/// more in flight would not be answered sooner.
pub const MAX_UNANSWERED: usize = 16;

/// What of an over-long line is kept to find its id in: this much of its start, and as much of
/// its end (where the MCP TypeScript SDK writes the id, after the params).
const PREFIX: usize = 64 << 10;

/// The methods rmcp reads into a type of their own. One whose params do not fit that type
/// reaches rmcp as a custom request, answered "method not found"; an `initialize` so read is not
/// the handshake, and rmcp took the good one after it for a second request out of turn.
const TYPED: &[&str] = {
    use rmcp::model::*;
    &[
        PingRequestMethod::VALUE,
        InitializeResultMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        SubscriptionsListenRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        GetTaskMethod::VALUE,
        UpdateTaskMethod::VALUE,
        CancelTaskMethod::VALUE,
        ListSkillsRequestMethod::VALUE,
        GetSkillRequestMethod::VALUE,
        ReadResourceDirectoryRequestMethod::VALUE,
    ]
};

/// The server's side of the wire: what rmcp reads from and writes to.
pub type Transport = rmcp::transport::async_rw::AsyncRwTransport<
    rmcp::RoleServer,
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
>;

/// Whether a well-formed `initialize` was passed on: before it, rmcp ends the session on any
/// notification or response, and the wire answers requests other than `ping` itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Handshake {
    Before,
    Done,
}

/// A request passed on to rmcp whose answer is not written yet.
struct Pending {
    /// Its place among the unanswered, given back when this is dropped.
    _place: OwnedSemaphorePermit,
    /// The client cancelled it: its answer is not written.
    cancelled: bool,
    /// `initialize` may not be cancelled (MCP's lifecycle).
    cancellable: bool,
    /// The token its handler watches (rmcp's for the request), once the handler runs.
    token: Option<CancellationToken>,
}

struct Shared {
    handshake: Handshake,
    in_flight: HashMap<RequestId, Pending>,
}

type State = Arc<Mutex<Shared>>;

fn lock(state: &State) -> std::sync::MutexGuard<'_, Shared> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

type Out<W> = Arc<tokio::sync::Mutex<W>>;

/// The wire, wired: the transport for rmcp, the task that writes rmcp's answers out (await it
/// after the session ends, so that the last answers are written), and what lets the client's
/// cancellations reach the handlers (serve the service `watched`).
pub struct Wired {
    pub transport: Transport,
    pub written: tokio::task::JoinHandle<()>,
    state: State,
}

impl Wired {
    /// `service`, its handlers cancelled by the client's `notifications/cancelled`.
    pub fn watched<S>(&self, service: S) -> Watched<S> {
        Watched { inner: service, state: self.state.clone() }
    }
}

/// Wires `input` and `output` (the process's stdin and stdout) to a transport for rmcp, with
/// lines bounded at `max_line` bytes.
pub fn wire<R, W>(input: R, output: W, max_line: usize) -> Wired
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_side, our_side) = tokio::io::duplex(1 << 16);
    let (rmcp_read, rmcp_write) = tokio::io::split(rmcp_side);
    let (from_rmcp, to_rmcp) = tokio::io::split(our_side);
    let state: State = Arc::new(Mutex::new(Shared { handshake: Handshake::Before, in_flight: HashMap::new() }));
    let out: Out<W> = Arc::new(tokio::sync::Mutex::new(output));
    let unanswered = Arc::new(Semaphore::new(MAX_UNANSWERED));
    tokio::spawn(read_client(input, to_rmcp, max_line, state.clone(), out.clone(), unanswered));
    let written = tokio::spawn(write_answers(from_rmcp, state.clone(), out));
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(rmcp_read, rmcp_write)
        .with_max_line_length(max_line.saturating_add(1));
    Wired { transport, written, state }
}

/// A service whose request handlers are cancelled when the client cancels their request: each
/// handler's token (rmcp's `context.ct`) is handed to the wire, since rmcp never sees the
/// cancellation.
pub struct Watched<S> {
    inner: S,
    state: State,
}

impl<S: Service<RoleServer>> Service<RoleServer> for Watched<S> {
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + MaybeSendFuture + '_ {
        if let Some(pending) = lock(&self.state).in_flight.get_mut(&context.id) {
            if pending.cancelled {
                context.ct.cancel();
            }
            pending.token = Some(context.ct.clone());
        }
        self.inner.handle_request(request, context)
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.handle_notification(notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

/// A line of the client's, or what is left of one past the bound: its first and last `PREFIX`
/// bytes (the two overlap on a line shorter than twice that).
enum Line {
    Whole(Vec<u8>),
    TooLong { head: Vec<u8>, tail: Vec<u8> },
}

/// The next line, without its newline; at most `max` bytes are kept (past that, the first and
/// last `PREFIX` bytes, and the rest of the line is skipped). `None` at the end of the input.
async fn next_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>, max: usize) -> Option<Line> {
    let mut line = Vec::new();
    let mut tail = Vec::new();
    let mut too_long = false;
    let done = |line: Vec<u8>, mut tail: Vec<u8>, too_long: bool| {
        if !too_long {
            return Line::Whole(line);
        }
        tail.drain(..tail.len().saturating_sub(PREFIX));
        Line::TooLong { head: line, tail }
    };
    loop {
        let chunk = input.fill_buf().await.ok()?;
        if chunk.is_empty() {
            return (!line.is_empty() || too_long).then(|| done(line, tail, too_long));
        }
        let (take, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_long && line.len() + take > max {
            too_long = true;
            tail.extend_from_slice(&line[line.len().saturating_sub(PREFIX)..]);
            line.truncate(PREFIX);
        }
        let room = if too_long { PREFIX.saturating_sub(line.len()) } else { take };
        line.extend_from_slice(&chunk[..take.min(room)]);
        if too_long {
            // The last `PREFIX` bytes, in at most twice that: memory stays bounded.
            tail.extend_from_slice(&chunk[take.saturating_sub(PREFIX)..take]);
            if tail.len() > 2 * PREFIX {
                tail.drain(..tail.len() - PREFIX);
            }
        }
        input.consume(take + usize::from(ends));
        if ends {
            return Some(done(line, tail, too_long));
        }
    }
}

/// What the wire does with one message of the client's.
#[derive(Debug, PartialEq)]
enum Check {
    /// Answers it with this line (an error, or a batch's array of errors).
    Answer(Value),
    /// Nothing: a notification or response rmcp cannot take (or must not, before the handshake).
    Drop,
    /// Passes it on: a notification or response.
    Pass,
    /// Passes on a request, which rmcp answers with `id`.
    Request { id: RequestId, echo: Value, opens: bool, cancellable: bool },
    /// The client cancels request `id`.
    Cancel(RequestId),
}

/// A JSON-RPC error line for request `id` (null when it could not be read).
fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The id of an answer to a message whose `id` member is `id`: as sent when it is a string or
/// a number, else null (JSON-RPC 2.0).
fn echo(id: Option<&Value>) -> Value {
    id.filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Value::Null)
}

const BATCH: &str =
    "batches are not served (MCP 2025-06-18 removed JSON-RPC batching): send each message on a line of its own";

/// A batch refused: an error for each request in it (and each element that is no message), in
/// one array as JSON-RPC answers a batch; notifications and responses in it are not answered.
fn refuse_batch(items: &[Value]) -> Check {
    if items.is_empty() {
        return Check::Answer(error(Value::Null, -32600, "an empty batch holds no request"));
    }
    let answers: Vec<Value> = items
        .iter()
        .filter_map(|item| {
            let Some(fields) = item.as_object() else { return Some(error(Value::Null, -32600, BATCH)) };
            let method = fields.contains_key("method");
            let response = fields.contains_key("result") || fields.contains_key("error");
            let notification = method && !fields.contains_key("id");
            (!notification && (method || !response)).then(|| error(echo(fields.get("id")), -32600, BATCH))
        })
        .collect();
    if answers.is_empty() { Check::Drop } else { Check::Answer(Value::Array(answers)) }
}

/// What `message` is to rmcp, and so what the wire does with it.
fn check(message: &Value, handshake: Handshake) -> Check {
    let fields = match message {
        Value::Object(fields) => fields,
        Value::Array(items) => return refuse_batch(items),
        _ => return Check::Answer(error(Value::Null, -32600, "a JSON-RPC message is an object")),
    };
    let has = |key: &str| fields.contains_key(key);
    let id = fields.get("id");
    let parsed = || ClientJsonRpcMessage::deserialize(message);
    if !has("method") {
        if has("result") || has("error") {
            // A response: never answered; passed on when rmcp can read it (and it ends no session).
            let pass = handshake == Handshake::Done && parsed().is_ok();
            return if pass { Check::Pass } else { Check::Drop };
        }
        return Check::Answer(error(echo(id), -32600, "a request has a `method`"));
    }
    let envelope = if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        Some("`jsonrpc` must be \"2.0\"")
    } else if !fields["method"].is_string() {
        Some("`method` must be a string")
    } else if has("result") || has("error") {
        Some("a request holds no `result` or `error`")
    } else if fields.get("params").is_some_and(|p| !(p.is_object() || p.is_array() || p.is_null())) {
        Some("`params` must be an object")
    } else {
        None
    };
    let Some(id) = id else {
        // A notification: never answered, unless it is no JSON-RPC message at all.
        if let Some(why) = envelope {
            return Check::Answer(error(Value::Null, -32600, why));
        }
        return match parsed() {
            Ok(_) if handshake == Handshake::Before => Check::Drop,
            Ok(JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ClientNotification::CancelledNotification(cancelled),
                ..
            })) => cancelled.params.request_id.map_or(Check::Drop, Check::Cancel),
            // rmcp is never told of a cancellation, not even one it reads as a custom notification.
            _ if fields["method"] == CancelledNotificationMethod::VALUE => Check::Drop,
            Ok(_) => Check::Pass,
            Err(_) => Check::Drop,
        };
    };
    if !(id.is_string() || id.is_number()) {
        return Check::Answer(error(Value::Null, -32600, "a request's id is a string or a number"));
    }
    let Ok(key) = RequestId::deserialize(id) else {
        let why = "the id is a string, or an integer of at most 2^63 - 1 (2^53 when written as a float)";
        return Check::Answer(error(id.clone(), -32600, why));
    };
    if let Some(why) = envelope {
        return Check::Answer(error(id.clone(), -32600, why));
    }
    if fields.get("params").is_some_and(Value::is_array) {
        return Check::Answer(error(id.clone(), -32602, "`params` must be an object: MCP has no positional params"));
    }
    let request = match parsed() {
        Ok(JsonRpcMessage::Request(request)) => request.request,
        _ => return Check::Answer(error(id.clone(), -32602, "the params are not what the method takes")),
    };
    if let ClientRequest::CustomRequest(custom) = &request
        && TYPED.contains(&custom.method.as_str())
    {
        let why = format!("the params are not what `{}` takes", custom.method);
        return Check::Answer(error(id.clone(), -32602, &why));
    }
    let opens = matches!(request, ClientRequest::InitializeRequest(_));
    if handshake == Handshake::Before && !opens && !matches!(request, ClientRequest::PingRequest(_)) {
        let why = "the server is not initialized: send `initialize`, then `notifications/initialized`";
        return Check::Answer(error(id.clone(), -32002, why));
    }
    Check::Request { id: key, echo: id.clone(), opens, cancellable: !opens }
}

/// The JSON of a whole line (`None` for a blank one), or the error that answers it.
fn read(line: &[u8]) -> Result<Option<Value>, Value> {
    let bytes = line.strip_suffix(b"\r").unwrap_or(line);
    // A byte order mark is read past, as rmcp does (RFC 8259 lets a parser ignore it).
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match std::str::from_utf8(bytes).map(serde_json::from_str) {
        Ok(Ok(value)) => Ok(Some(value)),
        Ok(Err(_)) => {
            let why = "the request is not JSON (or nests deeper than 128 levels)";
            Err(error(echo(id_in(bytes).as_ref()), -32700, why))
        }
        Err(_) => Err(error(echo(id_in(bytes).as_ref()), -32700, "the request is not UTF-8")),
    }
}

/// Reads the client's lines and passes on what rmcp can take; answers the rest itself.
async fn read_client<R, W>(
    input: R,
    mut to_rmcp: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    max_line: usize,
    state: State,
    out: Out<W>,
    unanswered: Arc<Semaphore>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(1 << 16, input);
    while let Some(line) = next_line(&mut input, max_line).await {
        let message = match line {
            Line::TooLong { head, tail } => {
                let message = format!("the request is over the {} MiB a request line may hold", max_line >> 20);
                Err(error(echo(id_of_too_long(&head, &tail).as_ref()), -32600, &message))
            }
            // The line is dropped once read: a message of 64 MiB is held twice at most.
            Line::Whole(bytes) => read(&bytes),
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) => continue,
            Err(answer) => {
                write_line(&out, &answer).await;
                continue;
            }
        };
        let handshake = lock(&state).handshake;
        match check(&message, handshake) {
            Check::Answer(answer) => {
                write_line(&out, &answer).await;
                continue;
            }
            Check::Drop => continue,
            Check::Pass => {}
            Check::Cancel(id) => {
                // Not passed on: the request stays in flight until its answer comes (soon: its
                // handler is cancelled), and that answer is not written.
                if let Some(pending) = lock(&state).in_flight.get_mut(&id).filter(|p| p.cancellable) {
                    pending.cancelled = true;
                    if let Some(token) = &pending.token {
                        token.cancel();
                    }
                }
                continue;
            }
            Check::Request { id, echo, opens, cancellable } => {
                if lock(&state).in_flight.contains_key(&id) {
                    let why = "a request with this id is still in flight: give each request an id of its own";
                    write_line(&out, &error(echo, -32600, why)).await;
                    continue;
                }
                // Backpressure: a client that does not read its answers is not read from either.
                let Ok(place) = unanswered.clone().acquire_owned().await else { return };
                let mut shared = lock(&state);
                shared.in_flight.insert(id, Pending { _place: place, cancelled: false, cancellable, token: None });
                if opens {
                    shared.handshake = Handshake::Done;
                }
            }
        }
        // rmcp reads the message as the wire read it (a key given twice, for one, counts once).
        let Ok(mut text) = serde_json::to_vec(&message) else { continue };
        drop(message);
        text.push(b'\n');
        if to_rmcp.write_all(&text).await.is_err() {
            return;
        }
    }
    // The end of the client's input ends rmcp's.
    let _ = to_rmcp.shutdown().await;
}

/// Writes rmcp's lines to stdout. An answer gives its request's place and id back once written,
/// or once it came for a request the client cancelled (that answer is not written).
async fn write_answers<W: AsyncWrite + Unpin>(
    from_rmcp: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    state: State,
    out: Out<W>,
) {
    #[derive(serde::Deserialize)]
    struct Answer {
        id: Option<RequestId>,
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
        let answers = match serde_json::from_slice::<Answer>(&line) {
            Ok(Answer { id: Some(id), method: None }) => Some(id),
            _ => None,
        };
        let cancelled = answers.as_ref().is_some_and(|id| lock(&state).in_flight.get(id).is_some_and(|p| p.cancelled));
        if !cancelled {
            let mut out = out.lock().await;
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
        if let Some(id) = answers {
            lock(&state).in_flight.remove(&id);
        }
    }
}

/// One line of the wire's own to the client.
async fn write_line<W: AsyncWrite + Unpin>(out: &Out<W>, line: &Value) {
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
                    // A key is followed by its colon; an `"id"` that is a value is not.
                    if let Some(at) = after_colon(bytes, end) {
                        return scalar_at(bytes, at);
                    }
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

/// The id of a line past the bound, of which `head` is the start and `tail` the end: the
/// top-level `"id"` found from the start (`id_in`), else from the end (`id_at_end`: the MCP
/// TypeScript SDK writes the id after the params). Null when the two disagree (a key given
/// twice), or when the id is in neither (in the middle of the line: the rest is not kept).
fn id_of_too_long(head: &[u8], tail: &[u8]) -> Option<Value> {
    match (id_in(head), id_at_end(tail)) {
        (Some(first), Some(last)) if first != last => None,
        (first, last) => first.or(last),
    }
}

/// Where the value after `"key"` (ending at `end`) starts: past blanks, a colon and blanks.
fn after_colon(bytes: &[u8], end: usize) -> Option<usize> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let colon = end + bytes.get(end..)?.iter().take_while(|b| blank(b)).count();
    (bytes.get(colon) == Some(&b':')).then(|| colon + 1 + bytes[colon + 1..].iter().take_while(|b| blank(b)).count())
}

/// The top-level `"id"` of the end of a line (its start cut off) that closes an object: a walk
/// back from the closing `}` that skips strings and counts brackets, taking only a key at depth
/// one. None when the walk cannot tell (the line does not end with `}`, a string's escapes run
/// into the cut) or reaches the cut or the object's start without finding one.
fn id_at_end(bytes: &[u8]) -> Option<Value> {
    let last = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if bytes[last] != b'}' {
        return None;
    }
    let mut depth = 1usize;
    let mut i = last;
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b'}' | b']' => depth += 1,
            b'{' | b'[' => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
            b'"' => {
                // Outside a string, a quote closes one (an escaped one here is no JSON).
                if escaped(bytes, i)? {
                    return None;
                }
                let open = string_start(bytes, i)?;
                if depth == 1
                    && &bytes[open..=i] == b"\"id\""
                    && let Some(at) = after_colon(bytes, i + 1)
                {
                    return scalar_at(bytes, at);
                }
                i = open;
            }
            _ => {}
        }
    }
    None
}

/// Whether the quote at `at` is escaped (an odd run of backslashes before it); None when the
/// run reaches the start of `bytes`, so its length is unknown.
fn escaped(bytes: &[u8], at: usize) -> Option<bool> {
    let run = bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count();
    (run < at).then_some(run % 2 == 1)
}

/// Where the string whose closing quote is at `close` opens (its opening quote); None when it
/// opens before the start of `bytes`, or cannot be told.
fn string_start(bytes: &[u8], close: usize) -> Option<usize> {
    let mut j = close;
    while j > 0 {
        j -= 1;
        if bytes[j] == b'"' && !escaped(bytes, j)? {
            return Some(j);
        }
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
        b'-' | b'0'..=b'9' => {
            at + bytes[at..].iter().take_while(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')).count()
        }
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

    #[test]
    fn the_top_level_id_at_the_end_of_a_cut_line() {
        // The MCP TypeScript SDK's order: the id after the params.
        assert_eq!(id_at_end(br#"aaaa"},"jsonrpc":"2.0","id":42}"#), Some(json!(42)));
        assert_eq!(id_at_end(b"aa\"}, \"id\" : \"x\\\"y\" }\r\n"), Some(json!("x\"y")));
        assert_eq!(id_at_end(br#"a"},"id":1.5}"#), Some(json!(1.5)));
        // Not the request's: in a string, in an object within, a value, or past a cut string.
        assert_eq!(id_at_end(br#"a","s":"\"id\":7"}}"#), None);
        assert_eq!(id_at_end(br#"a","more":{"id":7}}"#), None);
        assert_eq!(id_at_end(br#"a","more":{"id":7},"method":"id"}"#), None);
        assert_eq!(id_at_end(br#"id":7,"s":"a"}"#), None, "the key is cut: the walk cannot tell");
        assert_eq!(id_at_end(br#"\"id\":7}"#), None, "escapes running into the cut");
        assert_eq!(id_at_end(br#"{"id":7}"#), Some(json!(7)), "a whole object is read from its end too");
        assert_eq!(id_at_end(br#"{"a":7}"#), None);
        assert_eq!(id_at_end(br#"a"},"id":7]"#), None);
        assert_eq!(id_at_end(br#"a"},"id":null}"#), None);
        // The string holding `"id":7` is walked past; the id is the top-level one before it.
        assert_eq!(id_at_end(br#"a"},"id":3,"s":"\"id\":7\\"}"#), Some(json!(3)));
        // `id_in` no longer stops at an `"id"` that is a value.
        assert_eq!(id_in(br#"{"method":"id","id":4,"params":{"#), Some(json!(4)));
    }

    #[test]
    fn a_line_past_the_bound_keeps_its_start_and_end() {
        let run = |input: Vec<u8>, max: usize| {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(async {
                let mut reader = BufReader::with_capacity(1 << 16, &input[..]);
                let mut lines = Vec::new();
                while let Some(line) = next_line(&mut reader, max).await {
                    lines.push(line);
                }
                lines
            })
        };
        let big = "a".repeat(5 * PREFIX + 7);
        let first = format!(r#"{{"method":"m","params":{{"s":"{big}"}},"jsonrpc":"2.0","id":42}}"#);
        let middle = format!(r#"{{"method":"m","params":{{"s":"{big}"}},"id":5,"p":{{"s":"{big}"}}}}"#);
        let lines = run(format!("{first}\n{middle}\n{{}}").into_bytes(), 2 * PREFIX);
        let [Line::TooLong { head, tail }, Line::TooLong { head: head2, tail: tail2 }, Line::Whole(last)] = &lines[..]
        else {
            panic!("two lines past the bound, then a whole one")
        };
        assert_eq!((head.len(), tail.len()), (PREFIX, PREFIX));
        assert_eq!(&head[..], &first.as_bytes()[..PREFIX]);
        assert_eq!(&tail[..], &first.as_bytes()[first.len() - PREFIX..]);
        assert_eq!(id_of_too_long(head, tail), Some(json!(42)));
        assert_eq!(id_of_too_long(head2, tail2), None, "an id in the middle of the line is not kept");
        assert_eq!(last, b"{}");
        // Ends at the end of the input, no newline.
        let lines = run(first.clone().into_bytes(), 2 * PREFIX);
        assert!(matches!(&lines[..], [Line::TooLong { head, tail }] if id_of_too_long(head, tail) == Some(json!(42))));
        // A key given twice, differently: null.
        assert_eq!(id_of_too_long(br#"{"id":1,"params":{"#, br#""},"id":2}"#), None);
        assert_eq!(id_of_too_long(br#"{"id":1,"params":{"#, br#""},"id":1}"#), Some(json!(1)));
    }

    fn checked(line: &str, handshake: Handshake) -> Check {
        check(&serde_json::from_str(line).unwrap(), handshake)
    }

    fn refused(line: &str) -> (Value, i64) {
        match checked(line, Handshake::Done) {
            Check::Answer(answer) => (answer["id"].clone(), answer["error"]["code"].as_i64().unwrap()),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn what_rmcp_would_refuse_is_answered_here_with_the_id() {
        for (line, code) in [
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, -32600),
            (r#"{"id":3,"method":"ping"}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":7}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":"ping","error":{}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":5}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"capabilities":{}}}"#, -32602),
        ] {
            assert_eq!(refused(line), (json!(3), code), "{line}");
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":false,"method":"ping","params":"x"}"#,
            r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
            r#"{"foo":"boo"}"#,
            r#"7"#,
        ] {
            assert_eq!(refused(line), (Value::Null, -32600), "{line}");
        }
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#), (json!(1.5), -32600));
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#).1, -32600);
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":9007199254740992.0,"method":"ping"}"#).1, -32600);
    }

    #[test]
    fn ids_are_compared_as_rmcp_compares_them() {
        let key =
            |id: &str| match checked(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#), Handshake::Done) {
                Check::Request { id, .. } => id,
                other => panic!("{id}: {other:?}"),
            };
        assert_eq!(key("7"), key("7.0"));
        assert_eq!(key("7"), key("7e0"));
        assert_eq!(key("0"), key("-0"));
        assert_eq!(key("-5"), key("-5.0"));
        assert_ne!(key("9"), key(r#""9""#));
        assert_ne!(key(r#""a""#), key(r#""a ""#));
        assert_eq!(key("9223372036854775807"), RequestId::Number(i64::MAX));
    }

    #[test]
    fn before_the_handshake_only_initialize_and_ping_pass() {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",
            "capabilities":{},"clientInfo":{"name":"c","version":"0"}}}"#;
        assert!(matches!(checked(init, Handshake::Before), Check::Request { opens: true, cancellable: false, .. }));
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        assert!(matches!(checked(ping, Handshake::Before), Check::Request { opens: false, .. }));
        let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        assert!(matches!(checked(list, Handshake::Before), Check::Answer(a) if a["error"]["code"] == -32002));
        assert!(matches!(checked(list, Handshake::Done), Check::Request { opens: false, cancellable: true, .. }));
        for other in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            assert_eq!(checked(other, Handshake::Before), Check::Drop, "{other}");
        }
    }

    #[test]
    fn notifications_and_responses_are_never_answered() {
        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}"#;
        assert_eq!(checked(cancel, Handshake::Done), Check::Cancel(RequestId::String("x".into())));
        for (line, expected) in [
            (r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","method":"notifications/anything","params":{"a":1}}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#, Check::Drop),
            (r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#, Check::Drop),
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","id":[],"result":{}}"#, Check::Drop),
            (r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#, Check::Drop),
        ] {
            assert_eq!(checked(line, Handshake::Done), expected, "{line}");
        }
    }

    #[test]
    fn a_batch_is_refused_request_by_request() {
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},
            {"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":{},"method":"ping"},3]"#;
        let Check::Answer(Value::Array(answers)) = checked(batch, Handshake::Before) else { panic!() };
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [&json!(1), &Value::Null, &Value::Null]);
        assert!(answers.iter().all(|a| a["error"]["code"] == -32600));
        let notes = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        assert_eq!(checked(notes, Handshake::Done), Check::Drop);
        assert!(matches!(checked("[]", Handshake::Done), Check::Answer(a) if a["id"].is_null()));
    }
}
