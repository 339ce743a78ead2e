//! `self-evolve serve`: the MCP server over Streamable HTTP, one endpoint (`/mcp`, POST and GET,
//! SSE where the revision uses it), for remote clients and a team sharing one library. rmcp's
//! Streamable HTTP service speaks the protocol (2025-11-25 sessions with `Mcp-Session-Id`,
//! 2026-07-28 stateless requests, Host and Origin checks) on hyper's HTTP/1.1 server; the handler
//! is the one stdio serves (`mcp::start`), so every request meets the same plugin and guards.
//!
//! Owns what comes before rmcp: the path, the person (a bearer token from host.json, checked on
//! every request so a revoked one stops at once), the bounds (a body read whole up to a limit,
//! connections at once, a deadline for a request's head), and the same message checks as the
//! stdio wire (`message::check`), so bad JSON is -32700 and a removed method -32601 here too.

use super::message::{Check, Handshake, check, read};
use super::server::Person;
use super::{Options, Started};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The one endpoint.
pub const PATH: &str = "/mcp";

/// A request body, at most (as stdio's line: past the plugin's 24 MiB argument bound).
pub const MAX_BODY: usize = super::MAX_REQUEST_LINE;

/// Connections served at once; past that a new one waits to be accepted.
pub const MAX_CONNECTIONS: usize = 256;

/// A request's head must arrive within this (a client trickling bytes holds no connection long).
const HEAD_DEADLINE: Duration = Duration::from_secs(10);

/// A request's body must arrive within this.
const BODY_DEADLINE: Duration = Duration::from_secs(60);

pub struct HttpOptions {
    pub bind: SocketAddr,
    /// Names besides loopback's that clients reach this server by (a host name, an address), for
    /// the Host and Origin checks.
    pub allow_hosts: Vec<String>,
}

type Body = BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<super::server::Server, LocalSessionManager>;

/// Serves until interrupted (Ctrl-C or SIGTERM); the sessions held are handed back first.
pub fn serve(options: Options, http: HttpOptions) -> Result<()> {
    let home = options.home.clone();
    let tokens = crate::home::host_file::HostFile::load(&home)?.serve_tokens;
    if !http.bind.ip().is_loopback() && tokens.is_empty() {
        bail!(
            "{} is not a loopback address: serving beyond this machine needs a token per person. Make one with \
             `self-evolve serve token add NAME`, then give it to that person's client as `Authorization: Bearer TOKEN`",
            http.bind
        );
    }
    let started = start_checked(&options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(http.bind).await.with_context(|| format!("binding {}", http.bind))?;
        let bound = listener.local_addr()?;
        started.spawn_ticker();
        let mcp = service(&started, bound, &http.allow_hosts);
        let gate = Arc::new(Gate { home, open: bound.ip().is_loopback() && tokens.is_empty() });
        // The address is the first line on stdout (`--bind 127.0.0.1:0` picks a free port).
        println!("http://{bound}{PATH}");
        eprintln!(
            "self-evolve: serving MCP at http://{bound}{PATH} ({})",
            if tokens.is_empty() {
                "loopback, no token asked".to_string()
            } else {
                format!("{} people with a token", tokens.len())
            }
        );
        let places = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let shutdown = shutdown_signal();
        tokio::pin!(shutdown);
        loop {
            let place = tokio::select! {
                _ = &mut shutdown => break,
                place = places.clone().acquire_owned() => place?,
            };
            let (tcp, _) = tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    // Out of descriptors, a reset before accept: the next one may do.
                    Err(_) => continue,
                },
            };
            let (mcp, gate) = (mcp.clone(), gate.clone());
            tokio::spawn(async move {
                let _place = place;
                let handler = hyper::service::service_fn(move |request| {
                    let (mcp, gate) = (mcp.clone(), gate.clone());
                    async move { Ok::<_, Infallible>(gate.handle(request, &mcp).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEAD_DEADLINE)
                    .max_buf_size(64 << 10)
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), handler)
                    .await;
            });
        }
        started.hand_back().await;
        Ok(())
    })
}

fn start_checked(options: &Options) -> Result<Started> {
    if options.as_reviewer || crate::identity::activation().is_some() {
        bail!("`serve` is for people's clients; a live reviewer is served by `self-evolve mcp --as-reviewer`");
    }
    super::start(options)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}

/// rmcp's service over the handler: answers as JSON where it can (SSE for a stream: a 2026
/// `subscriptions/listen`, a 2025 session's GET), Host and Origin held to the names this server
/// is reached by (DNS rebinding), bodies bounded.
fn service(started: &Started, bound: SocketAddr, allow_hosts: &[String]) -> Mcp {
    let port = bound.port();
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].iter().map(|h| h.to_string()).collect();
    hosts.extend(allow_hosts.iter().cloned());
    if !bound.ip().is_unspecified() && !bound.ip().is_loopback() {
        hosts.push(bound.ip().to_string());
    }
    let origins: Vec<String> = hosts
        .iter()
        .flat_map(|h| {
            let h = if h.contains(':') { format!("[{h}]") } else { h.clone() };
            [format!("http://{h}:{port}"), format!("https://{h}:{port}")]
        })
        .collect();
    let hosts: Vec<String> =
        hosts.iter().map(|h| if h.contains(':') { format!("[{h}]:{port}") } else { format!("{h}:{port}") }).collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_BODY);
    let server = started.server.clone();
    StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config)
}

/// What every request passes before rmcp.
struct Gate {
    home: PathBuf,
    /// Bound to loopback and started with no token in host.json: requests are served as person
    /// `local` while there is still none. A server started with tokens never opens, not even
    /// when the last one is revoked.
    open: bool,
}

impl Gate {
    async fn handle(&self, request: Request<hyper::body::Incoming>, mcp: &Mcp) -> Response<Body> {
        if request.uri().path() != PATH {
            return plain(StatusCode::NOT_FOUND, &format!("not found: the MCP endpoint is {PATH}"));
        }
        let person = match self.person(&request) {
            Ok(person) => person,
            Err(refusal) => return *refusal,
        };
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(Person(person));
        if parts.method != Method::POST {
            return mcp.handle(Request::from_parts(parts, Full::new(Bytes::new()))).await;
        }
        if parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            > Some(MAX_BODY as u64)
        {
            return too_large();
        }
        let bytes = match tokio::time::timeout(BODY_DEADLINE, Limited::new(body, MAX_BODY).collect()).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(err)) if err.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return too_large(),
            Ok(Err(_)) => return plain(StatusCode::BAD_REQUEST, "the request's body could not be read"),
            Err(_) => return plain(StatusCode::REQUEST_TIMEOUT, "the request's body did not arrive in time"),
        };
        // The same checks as a stdio line, then rmcp reads the message as they read it.
        let message = match read(&bytes) {
            Ok(Some(message)) => message,
            Ok(None) => {
                return rpc_error(
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "the body holds no message"}}),
                );
            }
            Err(answer) => return rpc_error(answer),
        };
        match check(&message, Handshake::Done) {
            Check::Answer(answer) => return rpc_error(answer),
            Check::Drop => return empty(StatusCode::ACCEPTED),
            Check::Pass | Check::Cancel(_) | Check::Request { .. } => {}
        }
        let Ok(text) = serde_json::to_vec(&message) else { return plain(StatusCode::BAD_REQUEST, "unreadable") };
        drop(message);
        // What rmcp's service reads is the message as checked (a key given twice counts once).
        parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(text.len()));
        mcp.handle(Request::from_parts(parts, Full::new(Bytes::from(text)))).await
    }

    /// The person the request is for: its bearer token's, looked up in host.json as it is now.
    fn person(&self, request: &Request<hyper::body::Incoming>) -> Result<String, Box<Response<Body>>> {
        let tokens = match crate::home::host_file::HostFile::load(&self.home) {
            Ok(file) => file.serve_tokens,
            Err(err) => {
                eprintln!("self-evolve: serve: {}", self_evolve_host::text::shown_error(&format!("{err:#}")));
                return Err(Box::new(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server's host.json does not read; tell its operator",
                )));
            }
        };
        if tokens.is_empty() && self.open {
            return Ok("local".to_string());
        }
        let given =
            request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(super::tokens::bearer);
        match given.and_then(|token| super::tokens::person(&tokens, token)) {
            Some(person) => Ok(person.to_string()),
            None => {
                let why = match given {
                    None => {
                        "this server needs `Authorization: Bearer TOKEN` (its operator makes one with `self-evolve serve token add NAME`)"
                    }
                    Some(_) => "the token is not one this server knows (revoked, or mistyped)",
                };
                let mut answer = plain(StatusCode::UNAUTHORIZED, why);
                answer
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"self-evolve\""));
                Err(Box::new(answer))
            }
        }
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut answer = Response::new(full(Bytes::new()));
    *answer.status_mut() = status;
    answer
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut answer = Response::new(full(format!("{text}\n")));
    *answer.status_mut() = status;
    answer.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    answer
}

fn too_large() -> Response<Body> {
    plain(StatusCode::PAYLOAD_TOO_LARGE, &format!("a request's body may hold {} MiB", MAX_BODY >> 20))
}

/// A JSON-RPC error the gate answers itself, with the status rmcp gives the same code
/// (-32601 → 404, the rest 400), as JSON: a client on either revision reads the error.
fn rpc_error(answer: Value) -> Response<Body> {
    let first = if answer.is_array() { &answer[0] } else { &answer };
    let status = match first["error"]["code"].as_i64() {
        Some(-32601) => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    };
    let mut response = Response::new(full(answer.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
