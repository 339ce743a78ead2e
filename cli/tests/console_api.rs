//! The operator console (`self-evolve ui`) spoken to over raw HTTP, every header chosen by the
//! test (issue 38 items 3 and 4): who is let in, and that each action and read goes through the
//! CLI's own path, refusing in the CLI's words and changing nothing.

mod console_support;

use console_support::*;
use serde_json::{Value, json};

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
    let name = format!("se_session_{}=", console.port);
    assert!(cookie.starts_with(&name) && cookie.len() > name.len() + 32, "{cookie}");
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
            "a read by another loopback port's page",
            get("/api/read?args=pending", &host, &[&cookie_header, "Sec-Fetch-Site: same-site"]),
            &[403],
        ),
        ("the launch link a second time", get(&token_path, &host, &[]), &[401]),
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

/// A browser's session with the console, as the page holds it: the cookie the launch link gave
/// and the CSRF token `/api/session` handed the page.
struct Client<'c> {
    console: &'c Console,
    cookie: String,
    csrf: String,
}

impl<'c> Client<'c> {
    fn open(console: &'c Console) -> Client<'c> {
        let host = format!("Host: {}", console.host());
        let opened = raw(console.port, &[format!("GET /?token={} HTTP/1.1", console.token), host.clone()], "");
        assert_eq!(opened.status, 303, "{}", opened.head);
        let cookie = opened.header("Set-Cookie").unwrap().split(';').next().unwrap().trim().to_string();
        let session = raw(console.port, &["GET /api/session HTTP/1.1".into(), host, format!("Cookie: {cookie}")], "");
        let csrf = serde_json::from_str::<Value>(&session.body).unwrap()["csrf"].as_str().unwrap().to_string();
        Client { console, cookie, csrf }
    }

    /// `POST /api/act {"args": words}` as the page sends it; the status and the JSON answer.
    fn act(&self, words: &[&str]) -> (u16, Value) {
        let host = self.console.host();
        let head = [
            "POST /api/act HTTP/1.1".to_string(),
            format!("Host: {host}"),
            format!("Origin: http://{host}"),
            "Sec-Fetch-Site: same-origin".into(),
            "Content-Type: application/json".into(),
            format!("Cookie: {}", self.cookie),
            format!("X-CSRF-Token: {}", self.csrf),
        ];
        let answer = raw(self.console.port, &head, &json!({"args": words}).to_string());
        (answer.status, serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("{}", answer.body)))
    }

    /// `GET /api/read?args=WORDS` as the page asks it; the status and the JSON answer.
    fn read(&self, words: &[&str]) -> (u16, Value) {
        let query: String = words.join(" ").bytes().map(|b| format!("%{b:02X}")).collect();
        let head = [
            format!("GET /api/read?args={query} HTTP/1.1"),
            format!("Host: {}", self.console.host()),
            format!("Cookie: {}", self.cookie),
        ];
        let answer = raw(self.console.port, &head, "");
        (answer.status, serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("{}", answer.body)))
    }
}

/// What `self-evolve skills WORDS` prints on stderr for a refusal (exit 2), trimmed.
fn cli_refusal(home: &Home, words: &[&str]) -> String {
    let mut args = vec!["skills"];
    args.extend_from_slice(words);
    let out = home.run(&args);
    assert_eq!(out.status.code(), Some(2), "the CLI refuses `{}`: {}", words.join(" "), text(&out));
    String::from_utf8(out.stderr).unwrap().trim().to_string()
}

/// Every action the console offers, refused: the console's answer is the CLI's text, byte for
/// byte, and neither the console nor the CLI changed anything (item 3: one policy path).
#[test]
fn each_action_is_refused_in_the_cli_s_words_and_changes_nothing() {
    let home = prepare_home();
    let console = Console::start(&home, "policy");
    let client = Client::open(&console);
    assert_eq!(client.read(&["pending"]).0, 200, "the console reads");
    let held = home.held.clone();
    let refused: Vec<Vec<&str>> = vec![
        vec!["approve", "1700000000000-000000"],
        vec!["approve", &held],
        vec!["approve", &held, "--accept-finding", "aws-access-token"],
        vec!["reject", "1700000000000-000000"],
        vec!["revert", "no-such-skill", "1"],
        vec!["revert", "release-checklist", "99"],
        vec!["pin", "no-such-skill"],
        vec!["unpin", "no-such-skill"],
        vec!["archive", "no-such-skill"],
        vec!["restore", "release-checklist"],
    ];
    let verbs: std::collections::BTreeSet<&str> = refused.iter().map(|w| w[0]).collect();
    assert_eq!(verbs.len(), 7, "every action the console offers: {verbs:?}");
    let before = home.tree();
    for words in &refused {
        let cli = cli_refusal(&home, words);
        let (status, answer) = client.act(words);
        assert_eq!(status, 409, "`{}`: {answer}", words.join(" "));
        assert_eq!(answer["ok"], false, "{answer}");
        assert_eq!(
            answer["error"].as_str(),
            Some(cli.as_str()),
            "`{}`: the console's refusal is the CLI's",
            words.join(" ")
        );
        assert!(home.tree() == before, "`{}` changed the home", words.join(" "));
    }
    for words in [vec!["show", "no-such-skill"], vec!["log", "no-such-skill"], vec!["diff", "1700000000000-000000"]] {
        let cli = cli_refusal(&home, &words);
        let (status, answer) = client.read(&words);
        assert_eq!(status, 409, "`{}`: {answer}", words.join(" "));
        assert_eq!(
            answer["error"].as_str(),
            Some(cli.as_str()),
            "`{}`: the console's refusal is the CLI's",
            words.join(" ")
        );
    }
    assert!(home.tree() == before, "the refused reads changed the home");

    // What the page cannot send is refused before the plugin sees it, and changes nothing.
    for words in [vec!["approval", "off"], vec!["curator", "run"], vec!["approve", &held, "--yes"], vec![]] {
        let (status, answer) = client.act(&words);
        assert_eq!(status, 400, "`{}`: {answer}", words.join(" "));
    }
    let (status, answer) = client.read(&["curator", "run"]);
    assert_eq!(status, 400, "a read that would change something is not a read: {answer}");
    assert!(home.tree() == before, "the words the console does not pass changed the home");
}

/// A console started inside a live reviewer calls as that reviewer, as `self-evolve skills` does
/// there: the plugin refuses it every change (operator-only), in the same words.
#[test]
fn a_console_inside_a_reviewer_is_refused_every_change_as_the_cli_is() {
    let home = prepare_home();
    let activation = "act-1";
    let console = Console::start_with(&home, "reviewer", &[("SELF_EVOLVE_ACTIVATION", activation)]);
    let client = Client::open(&console);
    let before = home.tree();
    let alpha = home.alpha.clone();
    for words in [vec!["approve", alpha.as_str()], vec!["reject", alpha.as_str()], vec!["pin", "release-checklist"]] {
        let mut args = vec!["skills"];
        args.extend_from_slice(&words);
        let out = cli(home.dir.path())
            .env("SELF_EVOLVE_ACTIVATION", activation)
            .args(&args)
            .arg("--home")
            .arg(&home.path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let cli = String::from_utf8(out.stderr).unwrap().trim().to_string();
        assert!(cli.contains("operator-only") || cli.contains("operator"), "{cli}");
        let (status, answer) = client.act(&words);
        assert_eq!((status, answer["error"].as_str()), (409, Some(cli.as_str())), "`{}`", words.join(" "));
    }
    assert!(home.tree() == before, "a reviewer's console changed the home");
}

/// Bytes as written, over their own connection; the status of the answer (0 when none came).
fn send(port: u16, bytes: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Requests meant to stop or stall the console (a body length past any memory, a body that never
/// comes, an endless head, idle connections) are answered or dropped, change nothing, and the
/// console goes on answering the person's page; the launch link lets one browser in.
#[test]
fn the_console_outlives_requests_meant_to_stop_it() {
    let home = prepare_home();
    let console = Console::start(&home, "wire");
    let client = Client::open(&console);
    let host = console.host();
    let before = home.tree();
    let authorised = |length: &str| {
        format!(
            "POST /api/act HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nCookie: {}\r\nX-CSRF-Token: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n",
            client.cookie, client.csrf
        )
    };
    // Idle connections hold no one else up (each request has its own thread and a time limit).
    let idle: Vec<std::net::TcpStream> =
        (0..8).map(|_| std::net::TcpStream::connect(("127.0.0.1", console.port)).unwrap()).collect();
    let approve = json!({"args": ["approve", home.alpha]}).to_string();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("a body length past any memory", authorised("18446744073709551615").into_bytes(), 413),
        ("a body length past usize", authorised("99999999999999999999999").into_bytes(), 400),
        ("a large body that never comes", authorised("1000000").into_bytes(), 413),
        ("a body shorter than it said", format!("{}{}", authorised("500"), &approve[..20]).into_bytes(), 400),
        (
            "a chunked body",
            format!("POST /api/act HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                .into_bytes(),
            501,
        ),
        (
            "a head past 16 KiB",
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nX-Pad: {}\r\n\r\n", "a".repeat(20_000)).into_bytes(),
            431,
        ),
        (
            "a GET that says it has a body",
            format!(
                "GET /api/stamp HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nContent-Length: 1000000\r\n\r\n",
                client.cookie
            )
            .into_bytes(),
            200,
        ),
        ("not HTTP", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(), 400),
        ("a head that never ends", b"GET / HTTP/1.1\r\nHost: x".to_vec(), 400),
    ];
    for (what, bytes, status) in &cases {
        assert_eq!(send(console.port, bytes), *status, "{what}");
        assert_eq!(client.read(&["pending"]).0, 200, "the console still answers after {what}");
    }
    drop(idle);
    assert!(home.tree() == before, "the requests changed the home");
    let (status, answer) = client.act(&["approve", &home.alpha]);
    assert_eq!((status, answer["ok"].as_bool()), (200, Some(true)), "{answer}");

    // The link again: refused to anyone without the session, the page for the browser it let in.
    let link = format!("GET /?token={} HTTP/1.1", console.token);
    let stranger = raw(console.port, &[link.clone(), format!("Host: {host}")], "");
    assert_eq!(stranger.status, 401, "{}", stranger.body);
    assert!(stranger.body.contains("used already"), "{}", stranger.body);
    let again = raw(console.port, &[link, format!("Host: {host}"), format!("Cookie: {}", client.cookie)], "");
    assert_eq!((again.status, again.header("Location").as_deref()), (303, Some("/")), "{}", again.head);
    assert!(again.header("Set-Cookie").is_none(), "no second session: {}", again.head);
}

/// What another process changes in the home is what the console's plugin answers next, as a
/// fresh `self-evolve skills` process would: here background reviews switched off in a terminal
/// (state the plugin keeps in memory between calls).
#[test]
fn a_change_made_in_a_terminal_is_what_the_console_answers_next() {
    let home = prepare_home();
    let console = Console::start(&home, "reload");
    let client = Client::open(&console);
    let enabled = || {
        let (status, answer) = client.read(&["review", "status"]);
        assert_eq!(status, 200, "{answer}");
        answer["enabled"].as_bool()
    };
    assert_eq!(enabled(), Some(true));
    home.ok(&["skills", "review", "off"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while enabled() != Some(false) {
        assert!(std::time::Instant::now() < deadline, "the console still says reviews are on");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let cli: Value = serde_json::from_str(&home.ok(&["skills", "review", "status", "--json"])).unwrap();
    assert_eq!(cli["enabled"], false);
}

/// Another user of the machine holding the unspent launch link is refused before the console
/// reads the request (Linux: the client socket's owner in /proc/net/tcp). Switching users needs
/// root, which `./build.sh test` has on CI; elsewhere this test says so and checks the link
/// still works for this user.
#[test]
fn another_user_of_the_machine_is_refused_even_with_the_link() {
    let home = prepare_home();
    let console = Console::start(&home, "other-user");
    let root = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n");
    if cfg!(target_os = "linux") && root {
        let script = format!(
            // Everything imported before the user changes (this Python's files may be root's).
            "import os, socket, encodings.idna, encodings.utf_8\n\
             os.setgroups([]); os.setgid(65534); os.setuid(65534)\n\
             s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(('127.0.0.1', {port}))\n\
             s.sendall(b'GET /?token={token} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n')\n\
             data = b''\nwhile True:\n    chunk = s.recv(4096)\n    if not chunk: break\n    data += chunk\n\
             print(data.decode('utf-8', 'replace'))\n",
            port = console.port,
            token = console.token
        );
        let out = std::process::Command::new("python3").arg("-c").arg(&script).output().unwrap();
        let answer = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{answer}{}", String::from_utf8_lossy(&out.stderr));
        assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
        assert!(answer.contains("only the user who started it") && !answer.contains("Set-Cookie"), "{answer}");
    } else {
        eprintln!("not root on Linux: another user cannot be tried here; the link is checked for this user only");
    }
    // The link was not spent by the refused user: this user's browser gets in with it.
    let client = Client::open(&console);
    assert_eq!(client.read(&["pending"]).0, 200);
}
