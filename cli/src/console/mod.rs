//! `self-evolve ui`: the operator console, a front door. A local web page over one home — the
//! pending writes and their diffs, the skills and their history, reviews, the gate's charts, the
//! curator — whose every read and action goes through the CLI's own `/skills` path
//! (`operator.rs`), so it adds no rule of its own. This file binds loopback only (127.0.0.1, and
//! [::1] when the host has it), makes the launch token, prints the link and opens a browser;
//! `peer.rs` refuses other users of the machine, `http.rs` decides who gets in, `serve.rs` speaks HTTP (bounded, one request per connection), `api.rs` answers,
//! `args.rs` keeps requests to the page's words, `stamp.rs` tells when the home changed and
//! `charts.rs` draws the gate. The page itself (`assets/`) is embedded in the binary.

mod api;
mod args;
mod charts;
mod evals;
mod http;
mod peer;
mod serve;
mod stamp;

use crate::{component, home};
use anyhow::{Context, Result};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener};
use std::path::PathBuf;
use std::sync::Mutex;

pub struct Options {
    /// Absolute: the page shows it.
    pub home: PathBuf,
    pub project: Option<PathBuf>,
    /// 0: any free port.
    pub port: u16,
    /// Start a browser on the link.
    pub open: bool,
    pub wasm: component::Source,
}

/// Opens `url` in the person's browser; says so on stderr when it cannot (the link is printed
/// either way).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let started = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let say = move |why: String| {
        eprintln!("self-evolve: could not open a browser ({opener}: {why}); open the link above yourself");
    };
    match started {
        Ok(mut child) => {
            // Waited for on its own thread: a browser that stays in the foreground holds nothing.
            std::thread::spawn(move || match child.wait() {
                Ok(status) if !status.success() => say(status.to_string()),
                Err(err) => say(err.to_string()),
                Ok(_) => {}
            });
        }
        Err(err) => say(err.to_string()),
    }
}

/// Serves the console until the process is stopped (Ctrl-C).
pub fn run(options: Options) -> Result<()> {
    let operator = crate::operator::Operator::open(&options.home, options.project.as_deref(), &options.wasm)?;
    let project = home::operator_project(options.project.as_deref());
    let v4 = TcpListener::bind((Ipv4Addr::LOCALHOST, options.port)).with_context(|| {
        format!("listening on 127.0.0.1:{}; choose another --port, or leave it out for any free port", options.port)
    })?;
    let port = v4.local_addr().context("the console's own address")?.port();
    // A host without IPv6 loopback is served on 127.0.0.1 alone.
    let v6 = TcpListener::bind((Ipv6Addr::LOCALHOST, port)).ok();
    let token = serve::random_hex()?;

    let mut roots = vec![home::user_skills(&options.home)];
    roots.extend(project.as_ref().map(|p| p.join(".dsh/skills")));
    let watched = stamp::Watched {
        state: home::state(&options.home),
        roots,
        files: vec![options.home.join("config.json"), options.home.join("host.json")],
    };
    let console = api::Console::new(operator, stamp::Stamper::new(watched), options.home.clone(), project);
    let keys = Mutex::new(http::Keys::new(token.clone(), port));
    let listeners: Vec<TcpListener> = std::iter::once(v4).chain(v6).collect();
    // Connections being answered, across both addresses: a slow read (a first listing of a large
    // library) holds the plugin, not the stamp polls and the page's files.
    let active = std::sync::atomic::AtomicUsize::new(0);

    let url = format!("http://127.0.0.1:{port}/?token={token}");
    crate::say!("self-evolve console: {url}");
    if options.open {
        open_browser(&url);
    }
    std::thread::scope(|scope| {
        scope.spawn(|| console.stamp().refresh_while_watched());
        for listener in &listeners {
            let (keys, console, active) = (&keys, &console, &active);
            scope.spawn(move || serve::serve(scope, listener, keys, console, active));
        }
    });
    Ok(())
}
