//! The console's checks with no server and no plugin: one table of requests and the verdict each
//! gets, then the session bookkeeping and the constant-time compare.

use super::*;

const TOKEN: &str = "aa11";
const PORT: u16 = 8765;
const SID: &str = "5e55";
const CSRF: &str = "c5f0";

fn keys() -> Keys {
    let mut keys = Keys::new(TOKEN.into(), PORT);
    keys.start(SID.into(), CSRF.into());
    keys
}

/// A GET of `url` by a browser holding the session.
fn get(url: &str) -> Request {
    Request {
        method: Method::Get,
        url: url.into(),
        host: Some(format!("127.0.0.1:{PORT}")),
        origin: None,
        fetch_site: Some("same-origin".into()),
        cookie: Some(format!("other=1; {COOKIE}{PORT}={SID}")),
        csrf: None,
        body_length: None,
    }
}

/// The page's own POST of an action.
fn post() -> Request {
    Request {
        method: Method::Post,
        url: "/api/act".into(),
        origin: Some(format!("http://127.0.0.1:{PORT}")),
        csrf: Some(CSRF.into()),
        body_length: Some(40),
        ..get("/api/act")
    }
}

#[test]
fn each_request_gets_its_verdict() {
    let read = Ok(Pass::Read { csrf: CSRF.into() });
    let rows: Vec<(&str, Request, Result<Pass, u16>)> = vec![
        ("the page", get("/"), Ok(Pass::Read { csrf: CSRF.into() })),
        ("the spent launch link", Request { cookie: None, ..get(&format!("/?token={TOKEN}")) }, Err(401)),
        ("the spent launch link in the browser it let in", get(&format!("/?token={TOKEN}")), Ok(Pass::In)),
        ("another console's cookie", Request { cookie: Some(format!("{COOKIE}8766={SID}")), ..get("/") }, Err(401)),
        ("the cookie of old", Request { cookie: Some(format!("se_session={SID}")), ..get("/") }, Err(401)),
        ("a read by the page", get("/api/read?args=list"), read.clone()),
        ("a read opened by the person", Request { fetch_site: Some("none".into()), ..get("/api/stamp") }, read.clone()),
        ("a read from an older browser", Request { fetch_site: None, ..get("/api/stamp") }, read.clone()),
        (
            "a read by another port's page",
            Request { fetch_site: Some("same-site".into()), ..get("/api/stamp") },
            Err(403),
        ),
        ("a read by another site", Request { fetch_site: Some("cross-site".into()), ..get("/api/read") }, Err(403)),
        (
            "the page opened from another port's link",
            Request { fetch_site: Some("same-site".into()), ..get("/") },
            read.clone(),
        ),
        ("the link with another token", Request { cookie: None, ..get("/?token=aa12") }, Err(401)),
        ("the link with a short token", Request { cookie: None, ..get("/?token=aa1") }, Err(401)),
        ("the token on another path", Request { cookie: None, ..get(&format!("/api/stamp?token={TOKEN}")) }, Err(401)),
        ("no cookie", Request { cookie: None, ..get("/api/stamp") }, Err(401)),
        ("a stale cookie", Request { cookie: Some(format!("{COOKIE}{PORT}=5e56")), ..get("/") }, Err(401)),
        ("localhost", Request { host: Some(format!("LocalHost:{PORT}")), ..get("/") }, read.clone()),
        ("[::1]", Request { host: Some(format!("[::1]:{PORT}")), ..get("/") }, read.clone()),
        ("a rebound name", Request { host: Some(format!("evil.example:{PORT}")), ..get("/") }, Err(421)),
        (
            "a rebound name with the token",
            Request { host: Some("evil.example".into()), ..get("/?token=aa11") },
            Err(421),
        ),
        ("another port", Request { host: Some("127.0.0.1:8766".into()), ..get("/") }, Err(421)),
        ("no port", Request { host: Some("127.0.0.1".into()), ..get("/") }, Err(421)),
        ("no Host", Request { host: None, ..get("/") }, Err(421)),
        (
            "a name ending in a loopback one",
            Request { host: Some(format!("a.localhost:{PORT}")), ..get("/") },
            Err(421),
        ),
        ("a long URL", get(&format!("/api/read?args={}", "x".repeat(MAX_URL))), Err(414)),
        ("another method", Request { method: Method::Other, ..get("/api/act") }, Err(405)),
        ("the page's action", post(), Ok(Pass::Write)),
        (
            "an action from localhost",
            Request {
                host: Some(format!("localhost:{PORT}")),
                origin: Some(format!("http://localhost:{PORT}")),
                ..post()
            },
            Ok(Pass::Write),
        ),
        ("an action without Sec-Fetch-Site", Request { fetch_site: None, ..post() }, Ok(Pass::Write)),
        ("an action without CSRF", Request { csrf: None, ..post() }, Err(403)),
        ("an action with a wrong CSRF", Request { csrf: Some("c5f1".into()), ..post() }, Err(403)),
        ("an action with the session id as CSRF", Request { csrf: Some(SID.into()), ..post() }, Err(403)),
        ("an action without Origin", Request { origin: None, ..post() }, Err(403)),
        ("an action from another origin", Request { origin: Some("http://evil.example".into()), ..post() }, Err(403)),
        ("an action from https", Request { origin: Some(format!("https://127.0.0.1:{PORT}")), ..post() }, Err(403)),
        ("an action from another port", Request { origin: Some("http://127.0.0.1:1".into()), ..post() }, Err(403)),
        ("an action across sites", Request { fetch_site: Some("cross-site".into()), ..post() }, Err(403)),
        ("an action from a sibling", Request { fetch_site: Some("same-site".into()), ..post() }, Err(403)),
        ("an action without a session", Request { cookie: None, ..post() }, Err(401)),
        ("an action at 64 KiB", Request { body_length: Some(MAX_BODY), ..post() }, Ok(Pass::Write)),
        ("an action over 64 KiB", Request { body_length: Some(MAX_BODY + 1), ..post() }, Err(413)),
    ];
    let keys = keys();
    for (what, req, expected) in rows {
        let got = keys.admit(&req).map_err(|refusal| refusal.status);
        assert_eq!(got, expected, "{what}");
    }
}

#[test]
fn the_launch_link_lets_one_browser_in() {
    let mut keys = Keys::new(TOKEN.into(), PORT);
    let link = |cookie: Option<String>| Request { cookie, ..get(&format!("/?token={TOKEN}")) };
    assert_eq!(keys.admit(&link(None)), Ok(Pass::Exchange), "the first time");
    assert_eq!(keys.admit(&link(None)), Ok(Pass::Exchange), "admitting is not spending: only a started session is");
    let cookie = keys.start(SID.into(), CSRF.into());
    let cookie = cookie.split(';').next().unwrap().to_string();
    let again = keys.admit(&link(None)).unwrap_err();
    assert_eq!(again.status, 401);
    assert!(again.text.contains("used already") && again.text.contains("start it again"), "{again:?}");
    assert_eq!(keys.admit(&link(Some(cookie))), Ok(Pass::In), "the browser it let in is sent to the page");
}

#[test]
fn a_refusal_says_what_to_do() {
    let keys = keys();
    let refusal = keys.admit(&Request { cookie: None, ..get("/") }).unwrap_err();
    assert!(refusal.text.contains("open the link `self-evolve ui` printed"), "{refusal:?}");
}

#[test]
fn sessions_carry_their_own_csrf_and_the_oldest_goes_first() {
    let mut keys = Keys::new(TOKEN.into(), PORT);
    let cookie = keys.start("0000".into(), "c000".into());
    assert_eq!(cookie, format!("{COOKIE}{PORT}=0000; HttpOnly; SameSite=Strict; Path=/"));
    keys.start("0001".into(), "c001".into());
    let with = |sid: &str, csrf: &str| Request {
        cookie: Some(format!("{COOKIE}{PORT}={sid}")),
        csrf: Some(csrf.into()),
        ..post()
    };
    assert_eq!(keys.admit(&with("0001", "c001")), Ok(Pass::Write));
    assert_eq!(keys.admit(&with("0001", "c000")).map_err(|r| r.status), Err(403), "another session's CSRF");
    for n in 2..=MAX_SESSIONS {
        keys.start(format!("{n:04}"), format!("c{n:03}"));
    }
    assert_eq!(keys.admit(&with("0000", "c000")).map_err(|r| r.status), Err(401), "the oldest is gone");
    assert_eq!(keys.admit(&with("0001", "c001")), Ok(Pass::Write));
}

#[test]
fn same_compares_whole_values() {
    assert!(same(b"abcd", b"abcd"));
    assert!(!same(b"abcd", b"abce"));
    assert!(!same(b"abcd", b"abc"));
    assert!(!same(b"", b"a"));
    assert!(same(b"", b""));
}

#[test]
fn loopback_hosts() {
    for (host, ok) in [
        ("127.0.0.1:8765", true),
        ("localhost:8765", true),
        ("[::1]:8765", true),
        ("LOCALHOST:8765", true),
        ("[::1]", false),
        ("127.0.0.2:8765", false),
        ("0.0.0.0:8765", false),
        ("127.0.0.1:08765", false),
        ("127.0.0.1:8765:8765", false),
        (":8765", false),
        ("", false),
    ] {
        assert_eq!(loopback_host(host, PORT), ok, "{host}");
    }
    assert!(loopback_host("127.0.0.1", 80) && loopback_host("[::1]", 80), "a browser leaves out port 80");
}
