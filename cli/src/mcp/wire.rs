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
//! written. Before a lifecycle is chosen (`initialize`, or a 2026-07-28 request whose `_meta`
//! opens one) notifications and responses are dropped, since rmcp would end the session on them;
//! requests go on to rmcp, which answers each. At most `MAX_UNANSWERED` requests are in flight:
//! past that the client is not read from. An id is free again as soon as its answer is on its
//! way; at the end of the input every request read is answered before rmcp's input ends.
//!
//! Owns: the handshake state, the requests in flight, and stdout. A line of the client's is read
//! in `line`; what becomes of each message is decided in `message`.

use super::line::{Line, id_of_too_long, next_line};
use super::message::{Check, Handshake, check, echo, error, read};
use rmcp::model::{ClientNotification, ClientRequest, ProtocolVersion, RequestId, ServerConfig, ServerResult};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Requests passed on whose answers are not written yet: each may hold an answer of megabytes
/// (a served file) in memory until the client reads it. The plugin runs one call at a time, so
/// more in flight would not be answered sooner.
pub const MAX_UNANSWERED: usize = 16;

/// The server's side of the wire: what rmcp reads from and writes to.
pub type Transport = rmcp::transport::async_rw::AsyncRwTransport<
    rmcp::RoleServer,
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
>;

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
    /// It lasts until cancelled (`subscriptions/listen`): at the end of the input it is cancelled.
    lasting: bool,
}

struct Shared {
    handshake: Handshake,
    in_flight: HashMap<RequestId, Pending>,
}

struct WireState {
    shared: Mutex<Shared>,
    /// Told each time the last request in flight is answered: at the end of the client's input,
    /// rmcp is shut down only then, so that every request read gets its answer.
    drained: tokio::sync::Notify,
}

type State = Arc<WireState>;

fn lock(state: &State) -> std::sync::MutexGuard<'_, Shared> {
    state.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    let shared = Mutex::new(Shared { handshake: Handshake::Before, in_flight: HashMap::new() });
    let state: State = Arc::new(WireState { shared, drained: tokio::sync::Notify::new() });
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
            Check::Request { id, echo, opens, cancellable, lasting } => {
                if lock(&state).in_flight.contains_key(&id) {
                    let why = "a request with this id is still in flight: give each request an id of its own";
                    write_line(&out, &error(echo, -32600, why)).await;
                    continue;
                }
                // Backpressure: a client that does not read its answers is not read from either.
                let Ok(place) = unanswered.clone().acquire_owned().await else { return };
                let mut shared = lock(&state);
                shared
                    .in_flight
                    .insert(id, Pending { _place: place, cancelled: false, cancellable, token: None, lasting });
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
    // The end of the client's input ends rmcp's, once every request read is answered (rmcp drops
    // the handlers still running when its input ends: a write landed, its answer never came).
    // A lasting request (`subscriptions/listen`) ends only when cancelled: it is cancelled now.
    loop {
        let drained = state.drained.notified();
        {
            let mut shared = lock(&state);
            if shared.in_flight.is_empty() {
                break;
            }
            for pending in shared.in_flight.values_mut().filter(|p| p.lasting) {
                pending.cancelled = true;
                if let Some(token) = &pending.token {
                    token.cancel();
                }
            }
        }
        drained.await;
    }
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
        // The id is free once its answer is on its way: a client may reuse it as soon as it has
        // read the answer, which can be before this task runs again. Its place among the
        // unanswered is given back only once the answer is written (backpressure).
        let pending = answers.as_ref().and_then(|id| lock(&state).in_flight.remove(id));
        let cancelled = pending.as_ref().is_some_and(|p| p.cancelled);
        if !cancelled {
            let mut out = out.lock().await;
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
        drop(pending);
        if lock(&state).in_flight.is_empty() {
            state.drained.notify_waiters();
        }
    }
}

/// One line of the wire's own to the client.
async fn write_line<W: AsyncWrite + Unpin>(out: &Out<W>, line: &Value) {
    let mut out = out.lock().await;
    let _ = out.write_all(format!("{line}\n").as_bytes()).await;
    let _ = out.flush().await;
}
