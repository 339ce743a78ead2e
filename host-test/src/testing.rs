//! Test fakes: a scripted HTTP server on 127.0.0.1 (statuses, delays, resets) that records
//! what it received. Bounded: it answers its script, then stops; dropping it stops it too.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One scripted answer, used for one connection.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with this status and body after `delay`.
    Status { status: u16, body: String, delay: Duration },
    /// Read the request, then close the connection without answering.
    Reset,
}

impl Reply {
    pub fn ok(body: impl Into<String>) -> Reply {
        Reply::Status { status: 200, body: body.into(), delay: Duration::ZERO }
    }
    pub fn status(status: u16) -> Reply {
        Reply::Status { status, body: String::new(), delay: Duration::ZERO }
    }
    pub fn slow(body: impl Into<String>, delay: Duration) -> Reply {
        Reply::Status { status: 200, body: body.into(), delay }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone, Default)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

pub struct ScriptedServer {
    pub addr: SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts serving `script` on an ephemeral 127.0.0.1 port, one reply per connection.
    pub fn start(script: Vec<Reply>) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (rec, stop_flag) = (received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut script = script.into_iter();
            // Bounded: at most 60 s of polling, and never past the end of the script.
            for _ in 0..60_000 {
                if stop_flag.load(Ordering::SeqCst) {
                    return;
                }
                match listener.accept() {
                    Ok((stream, _)) => {
                        let Some(reply) = script.next() else { return };
                        serve(stream, reply, &rec, &stop_flag);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(_) => return,
                }
            }
        });
        Ok(ScriptedServer { addr, received, stop, thread: Some(thread) })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, reply: Reply, received: &Mutex<Vec<Received>>, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request = Received::default();
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    request.method = parts.next().unwrap_or_default().to_string();
    request.path = parts.next().unwrap_or_default().to_string();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            request.headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length: usize = request.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_ok() {
        request.body = body;
    }
    if let Ok(mut all) = received.lock() {
        all.push(request);
    }
    match reply {
        Reply::Reset => drop(stream),
        Reply::Status { status, body, delay } => {
            // Sleep in small steps so a dropped server stops promptly.
            let mut waited = Duration::ZERO;
            while waited < delay && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
                waited += Duration::from_millis(5);
            }
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.flush();
        }
    }
}
