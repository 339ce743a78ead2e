//! A minimal W3C WebDriver client for the browser tests: chromedriver started on a free
//! 127.0.0.1 port and killed at the end, headless Chromium sessions, and the few commands the
//! tests need, as plain JSON over HTTP (ureq, serde_json). Scripts run through it only read the
//! page's state; every action a test takes goes through the page as a person's would (clicks,
//! keys).
//!
//! Chromium and chromedriver come from the system (`chromium` and `chromium-driver` on Debian;
//! `./build.sh test` installs them when missing). `SELF_EVOLVE_CHROMIUM` and
//! `SELF_EVOLVE_CHROMEDRIVER` name others. When either is missing the test fails saying so: a
//! browser test is never skipped.

#![allow(dead_code, reason = "each test binary uses part of the client")]

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use serde_json::{Value, json};
use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The key W3C WebDriver names an element reference by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Keys as WebDriver spells them (the Unicode private-use code points of the spec's key table).
pub mod key {
    pub const TAB: &str = "\u{E004}";
    pub const ENTER: &str = "\u{E007}";
    pub const SHIFT: &str = "\u{E008}";
    pub const ESCAPE: &str = "\u{E00C}";
    pub const SPACE: &str = "\u{E00D}";
}

/// A WebDriver error answer (`{"value": {"error", "message"}}`) or a transport failure.
#[derive(Debug)]
pub struct WdError {
    pub status: u16,
    /// The spec's error code: `no such element`, `stale element reference`, … (`transport`
    /// when no answer came).
    pub error: String,
    pub message: String,
    pub command: String,
}

impl fmt::Display for WdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = self.message.lines().next().unwrap_or("");
        write!(f, "webdriver {}: {} ({}): {message}", self.command, self.error, self.status)
    }
}

impl std::error::Error for WdError {}

impl WdError {
    /// Errors a wait retries: the element is not there yet, or was replaced by a re-render.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.error.as_str(),
            "no such element" | "stale element reference" | "element not interactable" | "element click intercepted"
        )
    }
}

/// Whether `err` is a WebDriver error a wait should retry.
pub fn transient(err: &anyhow::Error) -> bool {
    err.downcast_ref::<WdError>().is_some_and(WdError::is_transient)
}

/// A program on PATH (or the path in `env`, when set), else None.
fn find_program(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// A free TCP port on 127.0.0.1 (bound, read and released; chromedriver binds it next).
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// chromedriver, running; killed when dropped (after its sessions, which borrow it, are gone).
pub struct Driver {
    child: Child,
    base: String,
    chromium: PathBuf,
    agent: ureq::Agent,
}

impl Driver {
    /// Starts chromedriver on a free loopback port, its log in `log`; fails (never skips) when
    /// chromium or chromedriver is missing.
    pub fn start(log: &Path) -> Result<Driver> {
        let chromium = find_program("SELF_EVOLVE_CHROMIUM", &["chromium", "chromium-browser"]);
        let chromedriver = find_program("SELF_EVOLVE_CHROMEDRIVER", &["chromedriver"]);
        let (Some(chromium), Some(chromedriver)) = (chromium.clone(), chromedriver.clone()) else {
            let missing: Vec<&str> = [("chromium", chromium.is_none()), ("chromedriver", chromedriver.is_none())]
                .into_iter()
                .filter_map(|(name, gone)| gone.then_some(name))
                .collect();
            bail!(
                "the browser tests need headless Chromium and chromedriver, and {} is not on PATH: \
                 `./build.sh test` installs them (Debian's chromium and chromium-driver), or set \
                 SELF_EVOLVE_CHROMIUM / SELF_EVOLVE_CHROMEDRIVER",
                missing.join(" and ")
            );
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let mut last = None;
        // The port is free when read; another process may take it before chromedriver does.
        for _ in 0..3 {
            let port = free_port()?;
            let mut child = Command::new(&chromedriver)
                .arg(format!("--port={port}"))
                .arg("--allowed-ips=127.0.0.1")
                .arg(format!("--log-path={}", log.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("starting {}", chromedriver.display()))?;
            let base = format!("http://127.0.0.1:{port}");
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last = Some(anyhow!("chromedriver exited at start ({status}); its log: {}", log.display()));
                    break;
                }
                let ready = agent
                    .get(format!("{base}/status"))
                    .call()
                    .ok()
                    .and_then(|mut r| r.body_mut().read_to_string().ok())
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                    .is_some_and(|v| v["value"]["ready"] == true);
                if ready {
                    return Ok(Driver { child, base, chromium, agent });
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = Some(anyhow!("chromedriver did not answer /status in 20 s; its log: {}", log.display()));
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Err(last.unwrap())
    }

    /// One request; the answer's `value`, or the WebDriver error it holds.
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let command = format!("{method} {path}");
        let transport = |e: ureq::Error| WdError {
            status: 0,
            error: "transport".into(),
            message: e.to_string(),
            command: command.clone(),
        };
        let mut response = match (method, body) {
            ("GET", _) => self.agent.get(&url).call().map_err(transport)?,
            ("DELETE", _) => self.agent.delete(&url).call().map_err(transport)?,
            (_, body) => self
                .agent
                .post(&url)
                .header("Content-Type", "application/json; charset=utf-8")
                .send(body.unwrap_or_else(|| json!({})).to_string())
                .map_err(transport)?,
        };
        let status = response.status().as_u16();
        // Screenshots are a few MiB of base64.
        let text = response.body_mut().with_config().limit(256 << 20).read_to_string().map_err(transport)?;
        let answer: Value = serde_json::from_str(&text).with_context(|| {
            format!("{command}: not JSON ({status}): {}", text.chars().take(200).collect::<String>())
        })?;
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        if status >= 400 || value.get("error").is_some_and(Value::is_string) {
            return Err(WdError {
                status,
                error: value["error"].as_str().unwrap_or("unknown error").to_string(),
                message: value["message"].as_str().unwrap_or("").to_string(),
                command,
            }
            .into());
        }
        Ok(value)
    }

    /// A new headless Chromium session with a `width`×`height` window.
    pub fn session(&self, width: u32, height: u32) -> Result<Session<'_>> {
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--no-first-run".into(),
            "--no-default-browser-check".into(),
            "--disable-extensions".into(),
            "--force-device-scale-factor=1".into(),
            "--lang=en-US".into(),
            format!("--window-size={width},{height}"),
        ];
        let capabilities = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "pageLoadStrategy": "normal",
                    "goog:chromeOptions": {"binary": self.chromium, "args": args},
                }
            }
        });
        let value = self.request("POST", "/session", Some(capabilities))?;
        let id = value["sessionId"].as_str().context("new session: no sessionId")?.to_string();
        let session = Session { driver: self, id, open: true };
        session.set_window(width, height)?;
        Ok(session)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser session; deleted (Chromium closed) when dropped or on `quit`.
pub struct Session<'d> {
    driver: &'d Driver,
    id: String,
    open: bool,
}

impl<'d> Session<'d> {
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        self.driver.request(method, &format!("/session/{}{path}", self.id), body)
    }

    fn element(&self, value: &Value) -> Result<Element<'_, 'd>> {
        let id = value[ELEMENT].as_str().with_context(|| format!("not an element reference: {value}"))?;
        Ok(Element { session: self, id: id.to_string() })
    }

    /// Navigates and waits for the load (pageLoadStrategy normal).
    pub fn goto(&self, url: &str) -> Result<()> {
        self.cmd("POST", "/url", Some(json!({"url": url}))).map(drop)
    }

    pub fn url(&self) -> Result<String> {
        Ok(self.cmd("GET", "/url", None)?.as_str().unwrap_or_default().to_string())
    }

    pub fn refresh(&self) -> Result<()> {
        self.cmd("POST", "/refresh", None).map(drop)
    }

    /// The first element matching `css`, or a `no such element` error.
    pub fn find(&self, css: &str) -> Result<Element<'_, 'd>> {
        let value = self.cmd("POST", "/element", Some(json!({"using": "css selector", "value": css})))?;
        self.element(&value)
    }

    pub fn find_all(&self, css: &str) -> Result<Vec<Element<'_, 'd>>> {
        let value = self.cmd("POST", "/elements", Some(json!({"using": "css selector", "value": css})))?;
        value.as_array().context("elements: not a list")?.iter().map(|v| self.element(v)).collect()
    }

    /// The focused element.
    pub fn active(&self) -> Result<Element<'_, 'd>> {
        let value = self.cmd("GET", "/element/active", None)?;
        self.element(&value)
    }

    /// Presses and releases each key in turn on whatever has focus, as a keyboard does (the
    /// Actions API, not an element's value: nothing is focused for the test).
    pub fn press(&self, keys: &[&str]) -> Result<()> {
        let actions: Vec<Value> = keys
            .iter()
            .flat_map(|k| [json!({"type": "keyDown", "value": k}), json!({"type": "keyUp", "value": k})])
            .collect();
        let body = json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]});
        self.cmd("POST", "/actions", Some(body))?;
        self.cmd("DELETE", "/actions", None).map(drop)
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) and returns its value. For
    /// reading the page's state only.
    pub fn script(&self, script: &str, args: Vec<Value>) -> Result<Value> {
        self.cmd("POST", "/execute/sync", Some(json!({"script": script, "args": args})))
    }

    /// The viewport as a PNG file at `path` (folders made).
    pub fn screenshot(&self, path: &Path) -> Result<()> {
        let value = self.cmd("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().context("screenshot: not a string")?)
            .context("screenshot: not base64")?;
        anyhow::ensure!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "screenshot: not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
    }

    pub fn set_window(&self, width: u32, height: u32) -> Result<()> {
        self.cmd("POST", "/window/rect", Some(json!({"width": width, "height": height}))).map(drop)
    }

    /// A DevTools command through chromedriver (`goog/cdp/execute`).
    pub fn cdp(&self, cmd: &str, params: Value) -> Result<Value> {
        self.cmd("POST", "/goog/cdp/execute", Some(json!({"cmd": cmd, "params": params})))
    }

    /// Emulates `prefers-color-scheme: dark` (or light) for this page.
    pub fn color_scheme(&self, dark: bool) -> Result<()> {
        let value = if dark { "dark" } else { "light" };
        self.cdp("Emulation.setEmulatedMedia", json!({"features": [{"name": "prefers-color-scheme", "value": value}]}))
            .map(drop)
    }

    /// The browser's cookies for the current page (HttpOnly ones included).
    pub fn cookies(&self) -> Result<Vec<Value>> {
        Ok(self.cmd("GET", "/cookie", None)?.as_array().cloned().unwrap_or_default())
    }

    /// Polls `probe` every 100 ms until it gives Some, for up to `timeout`. Transient WebDriver
    /// errors (no such element yet, stale after a re-render) count as "not yet"; others end the
    /// wait. The error names `what` and the last thing seen.
    pub fn wait<T>(&self, what: &str, timeout: Duration, mut probe: impl FnMut() -> Result<Option<T>>) -> Result<T> {
        let deadline = Instant::now() + timeout;
        let mut last = String::from("nothing yet");
        loop {
            match probe() {
                Ok(Some(found)) => return Ok(found),
                Ok(None) => {}
                Err(e) if transient(&e) => last = e.to_string(),
                Err(e) => return Err(e.context(format!("while waiting for {what}"))),
            }
            if Instant::now() > deadline {
                bail!("timed out after {timeout:?} waiting for {what} (last: {last})");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Deletes the session (closes Chromium).
    pub fn quit(mut self) -> Result<()> {
        self.open = false;
        self.cmd("DELETE", "", None).map(drop)
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.cmd("DELETE", "", None);
        }
    }
}

/// An element of the page (valid until the page replaces it: then `stale element reference`).
pub struct Element<'s, 'd> {
    session: &'s Session<'d>,
    pub id: String,
}

impl<'s, 'd> Element<'s, 'd> {
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        self.session.cmd(method, &format!("/element/{}{path}", self.id), body)
    }

    /// The reference as a script argument.
    pub fn arg(&self) -> Value {
        json!({ ELEMENT: self.id })
    }

    pub fn find(&self, css: &str) -> Result<Element<'s, 'd>> {
        let value = self.cmd("POST", "/element", Some(json!({"using": "css selector", "value": css})))?;
        self.session.element(&value)
    }

    pub fn find_all(&self, css: &str) -> Result<Vec<Element<'s, 'd>>> {
        let value = self.cmd("POST", "/elements", Some(json!({"using": "css selector", "value": css})))?;
        value.as_array().context("elements: not a list")?.iter().map(|v| self.session.element(v)).collect()
    }

    pub fn click(&self) -> Result<()> {
        self.cmd("POST", "/click", None).map(drop)
    }

    /// Types `text` into the element (focusing it first, as WebDriver does).
    pub fn send_keys(&self, text: &str) -> Result<()> {
        self.cmd("POST", "/value", Some(json!({"text": text}))).map(drop)
    }

    /// The rendered text (what a person sees: CSS-hidden text left out).
    pub fn text(&self) -> Result<String> {
        Ok(self.cmd("GET", "/text", None)?.as_str().unwrap_or_default().to_string())
    }

    pub fn attr(&self, name: &str) -> Result<Option<String>> {
        Ok(self.cmd("GET", &format!("/attribute/{name}"), None)?.as_str().map(str::to_string))
    }

    pub fn prop(&self, name: &str) -> Result<Value> {
        self.cmd("GET", &format!("/property/{name}"), None)
    }

    pub fn displayed(&self) -> Result<bool> {
        Ok(self.cmd("GET", "/displayed", None)?.as_bool().unwrap_or(false))
    }

    pub fn enabled(&self) -> Result<bool> {
        Ok(self.cmd("GET", "/enabled", None)?.as_bool().unwrap_or(false))
    }

    pub fn selected(&self) -> Result<bool> {
        Ok(self.cmd("GET", "/selected", None)?.as_bool().unwrap_or(false))
    }

    pub fn tag(&self) -> Result<String> {
        Ok(self.cmd("GET", "/name", None)?.as_str().unwrap_or_default().to_string())
    }

    /// Whether this is the same element as `other` (references compare by id).
    pub fn same(&self, other: &Element<'_, '_>) -> bool {
        self.id == other.id
    }

    /// The element's own screenshot as a PNG file at `path`.
    pub fn screenshot(&self, path: &Path) -> Result<()> {
        let value = self.cmd("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().context("screenshot: not a string")?)
            .context("screenshot: not base64")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
    }
}
