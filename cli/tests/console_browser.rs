//! The operator console (`self-evolve ui`) in a real browser (issue 38 item 5): headless Chromium
//! driven through chromedriver (W3C WebDriver, tests/webdriver) against the real `self-evolve ui
//! --no-open --port 0` process, on a home made by the real CLI (a replayed session for the gate's
//! and reviews' records, a skill with two versions, write approval on, three staged writes, one of
//! them held for a credential finding).
//!
//! What a person does goes through the page (clicks, and keys for the keyboard-only approval);
//! scripts only read the page's state. What lands is read on disk and through the CLI. The
//! screenshots (inbox, a diff, the gate's charts at 1280 and 390 px, light and dark) are left in
//! target/console-screenshots/; `SELF_EVOLVE_BLESS=1` also copies the inbox at 1280 px, light, to
//! docs/img/console-inbox.png (the README's picture).
//!
//! Chromium and chromedriver must be installed (`./build.sh test` installs Debian's `chromium`
//! and `chromium-driver`); without them these tests fail, saying so. Nothing is skipped.

mod webdriver;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use webdriver::{Driver, Element, Session, key};

/// How long the page may take to show a change (its poll is every 2 s).
const WAIT: Duration = Duration::from_secs(15);

/// The two widths the console must work at, with a window height for each.
const SIZES: [(u32, u32); 2] = [(1280, 900), (390, 844)];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the screenshots and logs go (test artefacts, kept after the run).
fn artefacts() -> PathBuf {
    let dir = repo().join("target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// The CLI and the home
// ---------------------------------------------------------------------------------------------

/// The real binary, as the other CLI tests run it: this checkout's component, a shared compile
/// cache, nothing from the caller's environment that names a home or a session.
fn cli(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.current_dir(cwd)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_WASM", repo().join("dist/self-evolve.wasm"))
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_AGENT")
        .env_remove("SELF_EVOLVE_CWD")
        .stdin(Stdio::null());
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A value the scanner takes for a credential (the operator knows it is a fixture).
fn fixture() -> String {
    format!("API_KEY = \"{}{}\"", "q8Zr7kq2", "Lp9xW3vT")
}

/// What the hostile skill's body holds: markup, a terminal colour escape, a bidi override, a
/// zero-width space, a tab and trailing spaces.
fn hostile_body() -> String {
    "# Hostile\n\n<script>window.pwned=1</script>\n<img src=x onerror=\"window.pwned=2\">\n\u{1b}[31mred\u{1b}[0m and \u{202e}evil\u{200b}\ttabbed  \n".to_string()
}

struct Home {
    /// Holds the home and serves as every command's working folder (outside any git checkout,
    /// so no project scope is found).
    dir: tempfile::TempDir,
    path: PathBuf,
    /// The staged writes: two plain creates and one held for a `generic-secret` finding.
    alpha: String,
    beta: String,
    held: String,
}

impl Home {
    fn run(&self, args: &[&str]) -> Output {
        cli(self.dir.path()).args(args).arg("--home").arg(&self.path).output().unwrap()
    }

    /// `self-evolve ARGS --home H`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "self-evolve {args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// One `skill_manage` call from session s1, through every guard; its JSON answer (a refusal
    /// included).
    fn tool(&self, call: Value) -> Value {
        let out = self.run(&["tool", "skill_manage", &call.to_string(), "--session", "s1"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        serde_json::from_str(stdout.trim())
            .or_else(|_| serde_json::from_str(stderr.trim()))
            .unwrap_or_else(|_| panic!("tool {call}: no JSON answer: {}", text(&out)))
    }

    /// Stages a create (approval is on) and returns its pending id.
    fn stage(&self, name: &str, description: &str, body: &str, reason: &str) -> String {
        let answer = self.tool(
            json!({"action": "create", "name": name, "description": description, "body": body, "reason": reason}),
        );
        let id = answer["id"].as_str().or(answer["details"]["held"].as_str());
        id.unwrap_or_else(|| panic!("{name} was not staged: {answer}")).to_string()
    }

    fn pending(&self) -> Vec<String> {
        let out: Value = serde_json::from_str(&self.ok(&["skills", "pending", "--json"])).unwrap();
        out["pending"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
    }

    fn skill_file(&self, name: &str) -> PathBuf {
        self.path.join("skills").join(name).join("SKILL.md")
    }

    /// Every file and folder of the home with its bytes, but the persisted listing
    /// (`self-evolve/index/`), which any read refreshes.
    fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                if rel == "self-evolve/index" {
                    continue;
                }
                let ty = entry.file_type().unwrap();
                if ty.is_dir() {
                    out.insert(rel + "/", Vec::new());
                    walk(&path, base, out);
                } else if ty.is_file() {
                    out.insert(rel, std::fs::read(&path).unwrap());
                } else {
                    out.insert(rel, b"<other>".to_vec());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.path, &self.path, &mut out);
        out
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A home as a person's looks after some use, made by the real CLI: the example library and its
/// recorded session replayed (gates.jsonl, reviews, history), `release-checklist` created and
/// patched (two versions), then write approval on and three writes staged from session s1.
fn prepare_home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("home");
    copy_dir(&repo().join("examples/library"), &path.join("skills"));
    let mut home = Home { dir, path, alpha: String::new(), beta: String::new(), held: String::new() };
    let examples = repo().join("examples");
    home.ok(&[
        "replay",
        examples.join("session.jsonl").to_str().unwrap(),
        "--gate-replies",
        examples.join("gate-replies.json").to_str().unwrap(),
    ]);
    assert!(home.path.join("self-evolve/gates.jsonl").is_file(), "the replay leaves the gate's records");

    let created = home.tool(json!({"action": "create", "name": "release-checklist",
        "description": "Steps to cut a release of this repository. Use when tagging a version.",
        "body": "# Release checklist\n\n1. Run the full test suite.\n2. Update CHANGELOG.md.\n3. Tag the commit.\n",
        "reason": "the user listed the release steps twice"}));
    assert_eq!(created["status"], "written", "{created}");
    home.tool(json!({"action": "view", "name": "release-checklist"}));
    let patched = home.tool(json!({"action": "patch", "name": "release-checklist",
        "old_string": "2. Update CHANGELOG.md.",
        "new_string": "2. Move the Unreleased entries of CHANGELOG.md under the new version.",
        "reason": "the user keeps a changelog"}));
    assert_eq!(patched["status"], "written", "{patched}");

    home.ok(&["skills", "approval", "on"]);
    home.alpha = home.stage(
        "alpha-notes",
        "Notes on the alpha service. Use when touching alpha.",
        "# Alpha\n\nRestart alpha with `make alpha-restart`.\n",
        "alpha restarts came up twice",
    );
    home.beta = home.stage(
        "beta-notes",
        "Notes on the beta queue. Use when the beta queue stalls.",
        "# Beta\n\nDrain the beta queue before deploying.\n",
        "the beta queue stalled",
    );
    home.held = home.stage(
        "api-fixtures",
        "Fixtures for the API client tests. Use when writing API tests.",
        &format!("Use this fixture:\n{}\n", fixture()),
        "the API tests need a fixture",
    );
    let pending = home.pending();
    assert_eq!(pending, [home.alpha.clone(), home.beta.clone(), home.held.clone()], "three staged writes");
    home
}

// ---------------------------------------------------------------------------------------------
// The console process
// ---------------------------------------------------------------------------------------------

/// `self-evolve ui --no-open --port 0 --home H`, running; killed when dropped.
struct Console {
    child: Child,
    /// The launch URL it printed (`http://127.0.0.1:PORT/?token=TOKEN`).
    url: String,
    port: u16,
    token: String,
    stderr: PathBuf,
}

impl Console {
    fn start(home: &Home, name: &str) -> Console {
        let stderr = artefacts().join(format!("{name}-ui.stderr"));
        let mut child = cli(home.dir.path())
            .args(["ui", "--no-open", "--port", "0", "--home"])
            .arg(&home.path)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with("self-evolve console: ") => break line,
                Ok(_) => continue,
                Err(_) => {
                    let _ = child.kill();
                    let status = child.wait().unwrap();
                    panic!(
                        "`self-evolve ui` printed no `self-evolve console: URL` line in 60 s ({status}); stderr:\n{}",
                        std::fs::read_to_string(&stderr).unwrap_or_default()
                    );
                }
            }
        };
        let url = line.trim_start_matches("self-evolve console: ").trim().to_string();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("not a loopback URL: {line}"));
        let (port, query) = rest.split_once('/').unwrap();
        let token = query.strip_prefix("?token=").unwrap_or_else(|| panic!("no token in {line}")).to_string();
        assert!(token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()), "a 256-bit hex token: {token}");
        let port = port.parse().unwrap();
        Console { child, url, port, token, stderr }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer read off a raw socket.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_string())
        })
    }
}

/// One request as written (head lines, then `body`), over its own connection: the test chooses
/// every header, `Host` included.
fn raw(port: u16, head: &[String], body: &str) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = head.join("\r\n");
    request.push_str(&format!("\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if bytes.is_empty() => panic!("no answer to {head:?}: {e}"),
            Err(_) => break,
        }
        // Stop at the end of a Content-Length body (a server may keep the connection open).
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok());
            if length.is_some_and(|length: usize| bytes.len() >= end + 4 + length) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Answer { status, head: head.to_string(), body: body.to_string() }
}

// ---------------------------------------------------------------------------------------------
// Reading the page
// ---------------------------------------------------------------------------------------------

/// What has focus, and whether a person can see it.
fn focus(s: &Session) -> Result<Value> {
    s.script(
        "const e = document.activeElement;
         if (!e || e === document.body) return {test: null, row: null};
         const st = getComputedStyle(e);
         const row = e.closest('[data-test=pending-row]');
         return {test: e.getAttribute('data-test'), row: row && row.getAttribute('data-id'), tag: e.tagName,
                 text: (e.textContent || '').trim().slice(0, 60), focusVisible: e.matches(':focus-visible'),
                 outline: st.outlineStyle, outlineWidth: parseFloat(st.outlineWidth) || 0, shadow: st.boxShadow};",
        vec![],
    )
}

fn focus_is_visible(f: &Value) -> bool {
    let outline = f["outline"] != "none" && f["outlineWidth"].as_f64().unwrap_or(0.0) > 0.0;
    let shadow = f["shadow"].as_str().is_some_and(|s| s != "none");
    f["focusVisible"] == true && (outline || shadow)
}

/// Presses Tab until `wanted` holds for what has focus (at most 80 presses); that focus.
fn tab_to(s: &Session, what: &str, wanted: impl Fn(&Value) -> bool) -> Result<Value> {
    let mut seen = Vec::new();
    for _ in 0..80 {
        s.press(&[key::TAB])?;
        let f = focus(s)?;
        if wanted(&f) {
            return Ok(f);
        }
        seen.push(format!(
            "{}{}",
            f["tag"].as_str().unwrap_or("body"),
            f["test"].as_str().map(|t| format!("[{t}]")).unwrap_or_default()
        ));
    }
    bail!("Tab never reached {what}; the tab order went: {}", seen.join(" → "))
}

/// The inbox's rows' ids, in order.
fn rows(s: &Session) -> Result<Vec<String>> {
    s.find_all("[data-test=pending-row]")?.iter().map(|r| Ok(r.attr("data-id")?.unwrap_or_default())).collect()
}

fn wait_rows(s: &Session, what: &str, wanted: impl Fn(&[String]) -> bool) -> Result<Vec<String>> {
    s.wait(what, WAIT, || {
        let ids = rows(s)?;
        Ok(wanted(&ids).then_some(ids))
    })
}

fn row<'s, 'd>(s: &'s Session<'d>, id: &str) -> Result<Element<'s, 'd>> {
    s.find(&format!("[data-test=pending-row][data-id=\"{id}\"]"))
}

/// The rendered text of the first `css` element once it holds `needle`.
fn wait_text(s: &Session, css: &str, needle: &str) -> Result<String> {
    s.wait(&format!("{css} to show {needle:?}"), WAIT, || {
        let text = s.find(css)?.text()?;
        Ok(text.contains(needle).then_some(text))
    })
    .with_context(|| format!("{css} holds {:?}", s.find(css).and_then(|e| e.text()).unwrap_or_default()))
}

/// Waits for the status region to show `needle`.
fn wait_status(s: &Session, needle: &str) -> Result<String> {
    wait_text(s, "[data-test=status]", needle)
}

/// The displayed element among those matching `css` (the page may keep hidden copies).
fn visible<'s, 'd>(s: &'s Session<'d>, css: &str) -> Result<Element<'s, 'd>> {
    s.wait(&format!("a displayed {css}"), WAIT, || {
        for e in s.find_all(css)? {
            if e.displayed()? {
                return Ok(Some(e));
            }
        }
        Ok(None)
    })
}

fn select_row(s: &Session, id: &str, shows: &str) -> Result<()> {
    s.wait(&format!("row {id}"), WAIT, || row(s, id).map(Some))?.click()?;
    wait_text(s, "[data-test=diff]", shows).map(drop)
}

fn open_tab(s: &Session, name: &str) -> Result<()> {
    let tab = s.find(&format!("[data-test=tab-{name}]"))?;
    tab.click()?;
    s.wait(&format!("the {name} tab selected"), WAIT, || {
        Ok((tab.attr("aria-selected")?.as_deref() == Some("true")).then_some(()))
    })
}

fn time_origin(s: &Session) -> Result<f64> {
    Ok(s.script("return performance.timeOrigin;", vec![])?.as_f64().unwrap_or(0.0))
}

/// WCAG contrast of an element's text against the colour behind it, and that background's
/// relative luminance.
fn contrast(s: &Session, css: &str) -> Result<(f64, f64)> {
    let colours = s.script(
        "const e = document.querySelector(arguments[0]); if (!e) return null;
         const parse = c => (c.match(/[\\d.]+/g) || []).map(Number);
         let bg = null;
         for (let n = e; n; n = n.parentElement) {
           const c = parse(getComputedStyle(n).backgroundColor);
           if (c.length === 3 || (c.length === 4 && c[3] > 0)) { bg = c; break; }
         }
         if (!bg) bg = matchMedia('(prefers-color-scheme: dark)').matches ? [18, 18, 18] : [255, 255, 255];
         return {fg: parse(getComputedStyle(e).color), bg: bg};",
        vec![json!(css)],
    )?;
    ensure!(!colours.is_null(), "no {css} to measure");
    let lum = |c: &Value| {
        let ch = |i: usize| {
            let v = c[i].as_f64().unwrap_or(0.0) / 255.0;
            if v <= 0.03928 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * ch(0) + 0.7152 * ch(1) + 0.0722 * ch(2)
    };
    let (fg, bg) = (lum(&colours["fg"]), lum(&colours["bg"]));
    Ok(((fg.max(bg) + 0.05) / (fg.min(bg) + 0.05), bg))
}

/// At each width and scheme: the page fits the width (wide tables scroll inside themselves),
/// its text is readable (contrast ≥ 4.5) on a light or a dark background as asked, and a
/// screenshot `NAME-WIDTH-SCHEME.png` is saved, scrolled to the top of `show` (as a person
/// scrolls; None: the page's top). Leaves the window at 1280 px, light.
fn screenshots(s: &Session, name: &str, text_css: &str, show: Option<&str>) -> Result<Vec<PathBuf>> {
    let mut saved = Vec::new();
    for (width, height) in SIZES {
        s.set_window(width, height)?;
        for dark in [false, true] {
            s.color_scheme(dark)?;
            let scheme = if dark { "dark" } else { "light" };
            match show {
                Some(css) => s.script(
                    "document.querySelector(arguments[0]).scrollIntoView({block: 'start'});",
                    vec![json!(css)],
                )?,
                None => s.script("window.scrollTo(0, 0);", vec![])?,
            };
            // Let a layout and a paint happen.
            s.script("return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));", vec![])?;
            let fit = s.script("return [document.documentElement.scrollWidth, window.innerWidth];", vec![])?;
            ensure!(
                fit[0].as_f64() <= fit[1].as_f64().map(|w| w + 1.0),
                "{name} at {width} px ({scheme}): the page is {} px wide, wider than the window",
                fit[0]
            );
            for css in ["body", text_css] {
                let (ratio, background) = contrast(s, css)?;
                ensure!(ratio >= 4.5, "{name} at {width} px ({scheme}): {css} text contrast {ratio:.2} < 4.5");
                ensure!(
                    if dark { background < 0.2 } else { background > 0.5 },
                    "{name} at {width} px ({scheme}): {css} sits on a background of luminance {background:.2}"
                );
            }
            let path = artefacts().join(format!("{name}-{width}-{scheme}.png"));
            s.screenshot(&path)?;
            saved.push(path);
        }
    }
    s.set_window(SIZES[0].0, SIZES[0].1)?;
    s.color_scheme(false)?;
    Ok(saved)
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

/// The client itself, on a page of its own: every command the console test relies on.
#[test]
fn the_webdriver_client_drives_headless_chromium() -> Result<()> {
    let driver = Driver::start(&artefacts().join("chromedriver-client.log"))?;
    let s = driver.session(1280, 900)?;
    let page = r#"<!doctype html><html><head><style>
        :root { color-scheme: light dark; }
        button:focus-visible { outline: 3px solid rgb(255, 0, 0); }
        @media (prefers-color-scheme: dark) { body { background: rgb(0, 0, 0); } }
        </style></head><body>
        <input data-test="name" value="">
        <button data-test="first" onclick="document.querySelector('[data-test=out]').textContent = 'first clicked'">First</button>
        <button data-test="second" data-id="x&lt;1" onclick="document.querySelector('[data-test=out]').textContent = 'second: ' + document.querySelector('[data-test=name]').value">Second</button>
        <p data-test="out" role="status"></p>
        </body></html>"#;
    let mut url = String::from("data:text/html;charset=utf-8,");
    for byte in page.bytes() {
        match byte.is_ascii_alphanumeric() {
            true => url.push(byte as char),
            false => url.push_str(&format!("%{byte:02X}")),
        }
    }
    s.goto(&url)?;

    s.find("[data-test=name]")?.send_keys("hello <b>")?;
    // Keyboard only: from the input, Tab twice reaches the second button; Enter presses it.
    s.press(&[key::TAB])?;
    ensure!(s.active()?.attr("data-test")?.as_deref() == Some("first"), "Tab moves focus to the first button");
    let f = tab_to(&s, "the second button", |f| f["test"] == "second")?;
    ensure!(focus_is_visible(&f), "focus is visible after Tab: {f}");
    ensure!(s.active()?.attr("data-id")?.as_deref() == Some("x<1"), "attributes are read as values");
    s.press(&[key::ENTER])?;
    let out = s.find("[data-test=out]")?;
    s.wait("the second button's text", WAIT, || Ok((out.text()? == "second: hello <b>").then_some(())))?;
    s.find("[data-test=first]")?.click()?;
    ensure!(out.text()? == "first clicked");
    ensure!(s.find("[data-test=nothing]").is_err_and(|e| webdriver::transient(&e)), "a missing element is an error");
    ensure!(s.find_all("button")?.len() == 2);

    // Script arguments and element references round-trip.
    let tag = s.script("return arguments[0].tagName + arguments[1];", vec![out.arg(), json!("!")])?;
    ensure!(tag == "P!", "{tag}");

    // Window sizes: the viewport is as wide as asked.
    for (width, height) in SIZES {
        s.set_window(width, height)?;
        let inner = s.script("return window.innerWidth;", vec![])?;
        ensure!(inner == width, "window.innerWidth {inner} at {width}");
    }

    // Colour schemes through DevTools, without a reload.
    for (dark, background) in [(true, "rgb(0, 0, 0)"), (false, "rgba(0, 0, 0, 0)")] {
        s.color_scheme(dark)?;
        let seen = s.script(
            "return [matchMedia('(prefers-color-scheme: dark)').matches, getComputedStyle(document.body).backgroundColor];",
            vec![],
        )?;
        ensure!(seen == json!([dark, background]), "dark {dark}: {seen}");
    }

    let shot = artefacts().join("webdriver-self-test.png");
    s.screenshot(&shot)?;
    ensure!(std::fs::metadata(&shot)?.len() > 1000, "a screenshot was written");
    s.quit()?;
    Ok(())
}

/// A person's session with the console: open it with the token, approve from the keyboard,
/// reject, approve a held write only after naming its rule, see the CLI's changes arrive,
/// revert a skill, and read a hostile skill as text; screenshots on the way.
#[test]
fn an_operator_decides_the_inbox_in_a_real_browser() -> Result<()> {
    let home = prepare_home();
    let console = Console::start(&home, "operator");
    let driver = Driver::start(&artefacts().join("chromedriver-operator.log"))?;
    let result = operator_session(&driver, &home, &console);
    if result.is_err() {
        eprintln!("`self-evolve ui` stderr:\n{}", console.stderr());
    }
    result
}

fn operator_session(driver: &Driver, home: &Home, console: &Console) -> Result<()> {
    let (width, height) = SIZES[0];
    let s = driver.session(width, height)?;

    // Without the token the console is closed: it says how to get in.
    s.goto(&format!("{}/", console.base()))?;
    let closed = s.find("body")?.text()?;
    ensure!(closed.contains("self-evolve ui"), "without the token the page says to open the printed link: {closed:?}");
    ensure!(s.find_all("[data-test=pending-row]")?.is_empty());

    // With it: the token is exchanged for an HttpOnly, SameSite=Strict cookie and left out of
    // the address bar.
    s.goto(&console.url)?;
    let ids = wait_rows(&s, "three pending writes", |ids| ids.len() == 3)?;
    let mut sorted = ids.clone();
    sorted.sort();
    ensure!(
        sorted == [home.alpha.clone(), home.beta.clone(), home.held.clone()],
        "the inbox lists the staged writes: {ids:?}"
    );
    let address = s.url()?;
    ensure!(!address.contains(&console.token), "the token stays out of the address bar: {address}");
    let cookies = s.cookies()?;
    let cookie = cookies
        .iter()
        .find(|c| c["name"] == "se_session")
        .with_context(|| format!("no se_session cookie: {cookies:?}"))?;
    ensure!(cookie["httpOnly"] == true && cookie["sameSite"] == "Strict", "the session cookie: {cookie}");
    let held_row = row(&s, &home.held)?.text()?;
    ensure!(
        held_row.contains("api-fixtures") && held_row.contains("the API tests need a fixture"),
        "a row names the skill and why: {held_row:?}"
    );

    // Keyboard only: Tab to alpha's row, Enter shows its diff; Tab to Approve, Enter lands it.
    let f = tab_to(&s, "alpha's row", |f| f["row"] == home.alpha.as_str())?;
    ensure!(focus_is_visible(&f), "the focused row shows its focus: {f}");
    s.press(&[key::ENTER])?;
    wait_text(&s, "[data-test=diff]", "make alpha-restart")?;
    let f = tab_to(&s, "the Approve button", |f| f["test"] == "approve")?;
    ensure!(focus_is_visible(&f), "the focused Approve button shows its focus: {f}");
    s.press(&[key::ENTER])?;
    wait_status(&s, &format!("approved {}", home.alpha))?;
    let landed = std::fs::read_to_string(home.skill_file("alpha-notes")).context("alpha-notes landed")?;
    ensure!(landed.contains("make alpha-restart"), "{landed}");
    wait_rows(&s, "alpha's row gone", |ids| !ids.contains(&home.alpha))?;

    // Screenshots while two writes wait: the inbox, then the held one's diff, then the gate.
    let mut shots = screenshots(&s, "inbox", "[data-test=pending-row]", None)?;
    select_row(&s, &home.held, "Use this fixture:")?;
    let checkbox = visible(&s, "[data-test=finding-rule]")?;
    ensure!(checkbox.attr("value")?.as_deref() == Some("generic-secret"), "a checkbox per held rule");
    ensure!(!checkbox.selected()?, "no rule is accepted by default");
    shots.extend(screenshots(&s, "diff", "[data-test=diff]", Some("[data-test=diff]"))?);

    // Reject beta.
    select_row(&s, &home.beta, "Drain the beta queue")?;
    visible(&s, "[data-test=reject]")?.click()?;
    wait_status(&s, &format!("rejected {}", home.beta))?;
    wait_rows(&s, "beta's row gone", |ids| !ids.contains(&home.beta))?;
    ensure!(!home.skill_file("beta-notes").exists(), "a rejected write lands nothing");
    ensure!(!home.pending().contains(&home.beta), "a rejected write is no longer staged");

    // The held write: Approve without naming its rule is refused with the CLI's own words, and
    // nothing changes; with its rule's box checked it lands.
    let refusal = home.run(&["skills", "approve", &home.held]);
    ensure!(!refusal.status.success(), "the CLI refuses a held write without its rule: {}", text(&refusal));
    let refusal = String::from_utf8_lossy(&refusal.stderr).trim().to_string();
    ensure!(refusal.contains("--accept-finding generic-secret"), "{refusal}");
    select_row(&s, &home.held, "Use this fixture:")?;
    let before = home.tree();
    visible(&s, "[data-test=approve]")?.click()?;
    wait_status(&s, &refusal)?;
    ensure!(home.tree() == before, "a refused approval changes nothing");
    ensure!(!home.skill_file("api-fixtures").exists());
    let checkbox = visible(&s, "[data-test=finding-rule][value=generic-secret]")?;
    checkbox.click()?;
    ensure!(checkbox.selected()?, "the rule's box is checked");
    visible(&s, "[data-test=approve]")?.click()?;
    wait_status(&s, &format!("approved {}", home.held))?;
    let landed = std::fs::read_to_string(home.skill_file("api-fixtures")).context("api-fixtures landed")?;
    ensure!(landed.contains(&fixture()) && landed.contains("accepted-findings: generic-secret@"), "{landed}");
    wait_rows(&s, "an empty inbox", <[String]>::is_empty)?;

    // Meanwhile, in a terminal: a write is staged, then approved, with the CLI. The page shows
    // both without a reload. The write is hostile: its diff shows markup as text and hidden
    // characters as markers.
    let origin = time_origin(&s)?;
    let hostile = home.stage(
        "hostile-notes",
        "Hostile text. Use when testing the console.",
        &hostile_body(),
        "<b>bold</b> reason",
    );
    wait_rows(&s, "the write staged by the CLI", |ids| ids == [hostile.clone()])?;
    select_row(&s, &hostile, "<script>window.pwned=1</script>")?;
    let diff = s.find("[data-test=diff]")?.text()?;
    for raw in ['\u{1b}', '\u{202e}', '\u{200b}'] {
        ensure!(!diff.contains(raw), "the diff shows U+{:04X} as a marker, not raw: {diff:?}", raw as u32);
    }
    let lower = diff.to_lowercase();
    ensure!(
        lower.contains("202e") && lower.contains("200b") && lower.contains("[31mred") && diff.contains('→'),
        "hidden characters are marked (bidi, zero-width, escape; a tab as →): {diff:?}"
    );
    ensure!(s.script("return typeof window.pwned;", vec![])? == "undefined", "the diff's markup never ran");
    ensure!(s.find("[data-test=diff]")?.find_all("script, img")?.is_empty(), "no element made from the diff");
    ensure!(row(&s, &hostile)?.text()?.contains("<b>bold</b> reason"), "the reason is shown as text");
    home.ok(&["skills", "approve", &hostile]);
    wait_rows(&s, "the write approved by the CLI gone", <[String]>::is_empty)?;
    ensure!(time_origin(&s)? == origin, "the page updated without a reload");

    // The approved hostile skill's page: the body is text.
    open_tab(&s, "skills")?;
    s.wait("hostile-notes's row", WAIT, || s.find("[data-test=skill-row][data-name=hostile-notes]").map(Some))?
        .click()?;
    let body = wait_text(&s, "[data-test=skill-text]", "<script>window.pwned=1</script>")?;
    ensure!(
        body.contains("<img src=x onerror=\"window.pwned=2\">") && body.contains("[31mred"),
        "the body as text: {body:?}"
    );
    ensure!(s.script("return typeof window.pwned;", vec![])? == "undefined", "the skill's markup never ran");
    ensure!(s.find("[data-test=skill-text]")?.find_all("script, img")?.is_empty(), "no element made from the skill");

    // Revert release-checklist to before version 2 from its page. Approval is on, so the revert
    // is staged; approved in the inbox, the file on disk is the first version's text again.
    open_tab(&s, "skills")?;
    s.wait("release-checklist's row", WAIT, || s.find("[data-test=skill-row][data-name=release-checklist]").map(Some))?
        .click()?;
    wait_text(&s, "[data-test=skill-text]", "Move the Unreleased entries")?;
    let picker = visible(&s, "[data-test=revert-version]")?;
    let options: Vec<String> = picker
        .find_all("option")?
        .iter()
        .map(|o| o.attr("value").map(Option::unwrap_or_default))
        .collect::<Result<_>>()?;
    let option =
        picker.find("option[value=\"2\"]").with_context(|| format!("no version 2 to revert; options {options:?}"))?;
    option.click()?;
    ensure!(picker.prop("value")? == "2", "version 2 is picked");
    visible(&s, "[data-test=revert]")?.click()?;
    wait_status(&s, "staged the revert of release-checklist/SKILL.md")?;
    let revert = s.wait("the staged revert", WAIT, || Ok(home.pending().pop()))?;
    open_tab(&s, "inbox")?;
    wait_rows(&s, "the staged revert", |ids| ids == [revert.clone()])?;
    select_row(&s, &revert, "Move the Unreleased entries")?;
    visible(&s, "[data-test=approve]")?.click()?;
    wait_status(&s, &format!("approved {revert}"))?;
    let reverted = std::fs::read_to_string(home.skill_file("release-checklist"))?;
    ensure!(
        reverted.contains("2. Update CHANGELOG.md.") && !reverted.contains("Move the Unreleased"),
        "the file is as before version 2: {reverted}"
    );

    // The gate's charts: four images drawn by the server, loaded.
    open_tab(&s, "gate")?;
    s.wait("four loaded gate charts", WAIT, || {
        let loaded = s.script(
            "const imgs = [...document.querySelectorAll('[data-test=gate-chart]')];
             return imgs.length === 4 && imgs.every(i => i.complete && i.naturalWidth > 0 && i.alt);",
            vec![],
        )?;
        Ok((loaded == true).then_some(()))
    })?;
    shots.extend(screenshots(&s, "gate", "main", None)?);
    s.quit()?;

    for shot in &shots {
        ensure!(std::fs::metadata(shot)?.len() > 2000, "{} is a picture", shot.display());
    }
    bless_readme_picture()?;
    Ok(())
}

/// The README's picture is the inbox at 1280 px, light; rewritten only on request.
fn bless_readme_picture() -> Result<()> {
    let picture = repo().join("docs/img/console-inbox.png");
    if std::env::var("SELF_EVOLVE_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(picture.parent().unwrap())?;
        std::fs::copy(artefacts().join("inbox-1280-light.png"), &picture)?;
    }
    let readme = std::fs::read_to_string(repo().join("README.md"))?;
    ensure!(
        readme.contains("![The operator console's inbox](docs/img/console-inbox.png)"),
        "the README shows the inbox"
    );
    let png =
        std::fs::read(&picture).with_context(|| format!("{}: SELF_EVOLVE_BLESS=1 writes it", picture.display()))?;
    ensure!(png.starts_with(b"\x89PNG"), "{} is a PNG", picture.display());
    Ok(())
}

/// Requests from anywhere but the person's browser are refused and change nothing: without the
/// token or cookie, with a foreign `Host` (DNS rebinding), cross-site, without the CSRF token.
/// The same request with everything right then succeeds, so each refusal was for the header
/// the test left out.
#[test]
fn the_console_refuses_other_callers_and_changes_nothing() {
    let home = prepare_home();
    let console = Console::start(&home, "refusals");
    let host = console.host();
    let origin = format!("http://{host}");
    let get = |path: &str, host: &str, extra: &[&str]| {
        let mut head = vec![format!("GET {path} HTTP/1.1"), format!("Host: {host}")];
        head.extend(extra.iter().map(|h| h.to_string()));
        raw(console.port, &head, "")
    };
    let approve = json!({"args": ["approve", home.alpha]}).to_string();
    let post = |host: &str, extra: &[String]| {
        let mut head = vec![
            "POST /api/act HTTP/1.1".to_string(),
            format!("Host: {host}"),
            "Content-Type: application/json".into(),
        ];
        head.extend(extra.iter().cloned());
        raw(console.port, &head, &approve)
    };

    // Let the server settle (a first read may refresh the listing), then hold the tree.
    let token_path = format!("/?token={}", console.token);
    let opened = get(&token_path, &host, &[]);
    assert_eq!(opened.status, 303, "the launch link opens a session: {}", opened.head);
    let set_cookie = opened.header("Set-Cookie").unwrap_or_default();
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"), "{set_cookie}");
    let cookie = set_cookie.split(';').next().unwrap().trim().to_string();
    assert!(cookie.starts_with("se_session=") && cookie.len() > "se_session=".len() + 32, "{cookie}");
    let cookie_header = format!("Cookie: {cookie}");
    let session = get("/api/session", &host, &[&cookie_header]);
    assert_eq!(session.status, 200, "{}", session.head);
    for (name, value) in [
        ("Content-Security-Policy", "script-src 'self'"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Cache-Control", "no-store"),
        ("Referrer-Policy", "no-referrer"),
    ] {
        assert!(session.header(name).is_some_and(|v| v.contains(value)), "{name}: {}", session.head);
    }
    let csrf: Value = serde_json::from_str(&session.body).unwrap();
    let csrf = csrf["csrf"].as_str().expect("a CSRF token").to_string();
    let pending = get("/api/read?args=pending", &host, &[&cookie_header]);
    assert_eq!(pending.status, 200, "{}", pending.head);
    let before = home.tree();

    let evil = format!("evil.example:{}", console.port);
    let refused: Vec<(&str, Answer, &[u16])> = vec![
        ("the page without the token", get("/", &host, &[]), &[401]),
        ("a wrong token", get("/?token=00", &host, &[]), &[401, 403]),
        ("the session without the cookie", get("/api/session", &host, &[]), &[401]),
        ("the launch link under a foreign Host", get(&token_path, &evil, &[]), &[421, 403]),
        ("a read under a foreign Host", get("/api/read?args=pending", &evil, &[&cookie_header]), &[421, 403]),
        ("GET on /api/act", get("/api/act", &host, &[&cookie_header]), &[405]),
        (
            "an approval without the cookie",
            post(&host, &[format!("X-CSRF-Token: {csrf}"), format!("Origin: {origin}")]),
            &[401, 403],
        ),
        (
            "an approval without the CSRF token",
            post(&host, &[cookie_header.clone(), format!("Origin: {origin}")]),
            &[403],
        ),
        (
            "an approval with a wrong CSRF token",
            post(&host, &[cookie_header.clone(), "X-CSRF-Token: 00".into(), format!("Origin: {origin}")]),
            &[403],
        ),
        (
            "a cross-site approval (Origin http://evil.example)",
            post(
                &host,
                &[cookie_header.clone(), format!("X-CSRF-Token: {csrf}"), "Origin: http://evil.example".into()],
            ),
            &[403],
        ),
        ("an approval without Origin", post(&host, &[cookie_header.clone(), format!("X-CSRF-Token: {csrf}")]), &[403]),
        (
            "an approval marked Sec-Fetch-Site: cross-site",
            post(
                &host,
                &[
                    cookie_header.clone(),
                    format!("X-CSRF-Token: {csrf}"),
                    format!("Origin: {origin}"),
                    "Sec-Fetch-Site: cross-site".into(),
                ],
            ),
            &[403],
        ),
        (
            "an approval under a foreign Host (DNS rebinding)",
            post(&evil, &[cookie_header.clone(), format!("X-CSRF-Token: {csrf}"), format!("Origin: http://{evil}")]),
            &[421, 403],
        ),
    ];
    for (what, answer, statuses) in &refused {
        assert!(statuses.contains(&answer.status), "{what}: {} (wanted {statuses:?})\n{}", answer.status, answer.body);
        assert!(answer.header("Set-Cookie").is_none(), "{what} gets no cookie");
        assert!(!answer.body.contains(&csrf), "{what} learns no CSRF token");
    }
    assert!(home.tree() == before, "the refused requests changed the home");
    assert!(!home.skill_file("alpha-notes").exists());

    // The same approval with everything right lands.
    let done = post(&host, &[cookie_header, format!("X-CSRF-Token: {csrf}"), format!("Origin: {origin}")]);
    assert_eq!(done.status, 200, "{}\n{}", done.head, done.body);
    let done: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(done["ok"], true, "{done}");
    assert!(done["text"].as_str().unwrap().contains(&format!("approved {}", home.alpha)), "{done}");
    assert!(home.skill_file("alpha-notes").is_file());
    drop(console);
}
