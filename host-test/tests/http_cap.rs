//! The http capability on its own, against servers started on 127.0.0.1: named endpoints
//! only, the credential attached by the host, reserved headers denied, timeouts and resets typed.

use self_evolve_host::caps::http::{Endpoint, HttpCap, HttpConfig, HttpErr, Request};
use self_evolve_host::testing::{Reply, ScriptedServer};
use std::collections::BTreeMap;
use std::time::Duration;

const SECRET: &str = "sk-test-credential-0123456789";

fn cap(url: &str, env: &str) -> HttpCap {
    let endpoint = Endpoint::new(url).with_credential_env(env);
    HttpCap::new(HttpConfig { endpoints: BTreeMap::from([("gate".to_string(), endpoint)]) })
}

fn request(endpoint: &str) -> Request {
    Request {
        endpoint: endpoint.into(),
        path: "/v1/decide".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: br#"{"q":1}"#.to_vec(),
        timeout_ms: 2_000,
    }
}

#[test]
fn named_endpoint_gets_the_body_and_the_credential_the_plugin_never_sees() {
    let server = ScriptedServer::start(vec![Reply::ok(r#"{"choice":"yes"}"#)]).unwrap();
    // SAFETY: set_var is unsafe in edition 2024 because other threads may read the environment
    // concurrently; this variable name is unique to this test.
    unsafe { std::env::set_var("SE_TEST_GATE_KEY_A", SECRET) };
    let http = cap(&server.url(), "SE_TEST_GATE_KEY_A");
    assert!(http.has_endpoint("gate") && http.has_credential("gate"));
    let response = http.post(&request("gate")).unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, br#"{"choice":"yes"}"#);
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/v1/decide");
    assert_eq!(seen[0].body, br#"{"q":1}"#);
    assert_eq!(seen[0].header("authorization"), Some(format!("Bearer {SECRET}").as_str()));
    let visible = format!("{response:?}");
    assert!(!visible.contains(SECRET), "the response the plugin gets holds no credential");
}

#[test]
fn unknown_endpoints_reserved_headers_and_odd_paths_are_denied_without_traffic() {
    let server = ScriptedServer::start(vec![Reply::ok("{}")]).unwrap();
    unsafe { std::env::set_var("SE_TEST_GATE_KEY_B", SECRET) };
    let http = cap(&server.url(), "SE_TEST_GATE_KEY_B");
    assert!(matches!(http.post(&request("elsewhere")), Err(HttpErr::Denied(_))));
    assert!(!http.has_endpoint("elsewhere") && !http.has_credential("elsewhere"));
    for header in ["Authorization", "cookie", "Host", "x-api-key"] {
        let mut req = request("gate");
        req.headers.push((header.into(), "x".into()));
        assert!(matches!(http.post(&req), Err(HttpErr::Denied(_))), "{header}");
    }
    let mut req = request("gate");
    req.path = "//evil.example/steal".into();
    assert!(matches!(http.post(&req), Err(HttpErr::Denied(_))));
    assert!(server.requests().is_empty(), "no request left the host");
}

#[test]
fn missing_credential_is_typed_and_sends_nothing() {
    let server = ScriptedServer::start(vec![Reply::ok("{}")]).unwrap();
    let http = cap(&server.url(), "SE_TEST_GATE_KEY_NEVER_SET");
    assert!(http.has_endpoint("gate"));
    assert!(!http.has_credential("gate"));
    assert_eq!(http.post(&request("gate")), Err(HttpErr::NoCredential));
    assert!(server.requests().is_empty());
}

#[test]
fn statuses_pass_through_and_slow_or_reset_connections_are_typed() {
    let server = ScriptedServer::start(vec![
        Reply::status(429),
        Reply::status(503),
        Reply::slow("{}", Duration::from_millis(1_500)),
        Reply::Reset,
    ])
    .unwrap();
    let endpoint = Endpoint::new(server.url());
    let http = HttpCap::new(HttpConfig { endpoints: BTreeMap::from([("open".to_string(), endpoint)]) });
    assert!(http.has_credential("open"), "an endpoint that needs no credential has what it needs");
    assert_eq!(http.post(&request("open")).unwrap().status, 429);
    assert_eq!(http.post(&request("open")).unwrap().status, 503);
    let mut slow = request("open");
    slow.timeout_ms = 200;
    assert_eq!(http.post(&slow), Err(HttpErr::Timeout));
    assert!(matches!(http.post(&request("open")), Err(HttpErr::Network(_))));
}

/// A path holding anything but printable ASCII (`/café`, a BOM, a no-break space, a space, a
/// control) is `denied` before any connection, as in the Node and Python hosts: Rust would send
/// raw UTF-8 bytes, Node percent-encoded them, Python failed as `network`.
#[test]
fn non_ascii_space_and_control_paths_are_denied_without_traffic() {
    let server = ScriptedServer::start(vec![Reply::ok("{}")]).unwrap();
    unsafe { std::env::set_var("SE_TEST_GATE_KEY_ASCII", SECRET) };
    let http = cap(&server.url(), "SE_TEST_GATE_KEY_ASCII");
    for path in ["/café", "/a\u{feff}b", "/a\u{a0}b", "/a\u{2028}b", "/a b", "/a\tb", "/a\u{7f}b", "/a\u{85}b", "/✓"]
    {
        let mut req = request("gate");
        req.path = path.into();
        assert!(matches!(http.post(&req), Err(HttpErr::Denied(_))), "{path:?}");
    }
    assert!(server.requests().is_empty(), "no request left the host");
    let mut req = request("gate");
    req.path = "/caf%C3%A9?q=%E2%9C%93".into();
    assert_eq!(http.post(&req).unwrap().status, 200, "percent-encoded non-ASCII is plain ASCII");
    assert_eq!(server.requests()[0].path, "/caf%C3%A9?q=%E2%9C%93");
}
