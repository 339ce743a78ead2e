//! Hostile review: the Rust http capability sends through a proxy named in the host's
//! environment (ureq's `Config::default()` reads ALL_PROXY / HTTPS_PROXY / HTTP_PROXY), while the
//! Node host (node:http, `agent: false`) and the Python host (http.client) always connect to the
//! endpoint itself. With an `http://` endpoint the proxy receives the credential header. Its own
//! test binary: it sets process-wide environment variables.

use self_evolve_host::caps::http::{Endpoint, HttpCap, HttpConfig, Request};
use self_evolve_host::testing::{Reply, ScriptedServer};
use std::collections::BTreeMap;

#[test]
fn parity_http_ignores_proxy_variables_as_node_and_python_do() {
    let endpoint = ScriptedServer::start(vec![Reply::ok("{}")]).unwrap();
    let proxy = ScriptedServer::start(vec![Reply::ok("{}")]).unwrap();
    // SAFETY: the only test in this binary.
    unsafe {
        std::env::set_var("SE_TEST_PROXY_KEY", "sk-proxy-parity-secret");
        std::env::set_var("HTTP_PROXY", proxy.url());
        std::env::remove_var("NO_PROXY");
        std::env::remove_var("no_proxy");
    }
    let http = HttpCap::new(HttpConfig {
        endpoints: BTreeMap::from([(
            "gate".to_string(),
            Endpoint::new(endpoint.url()).with_credential_env("SE_TEST_PROXY_KEY"),
        )]),
    });
    let request = Request {
        endpoint: "gate".into(),
        path: "/v1/decide".into(),
        headers: vec![],
        body: b"{}".to_vec(),
        timeout_ms: 2_000,
    };
    let _ = http.post(&request);
    assert_eq!(proxy.requests().len(), 0, "the proxy from the environment saw the request (and its credential)");
    assert_eq!(endpoint.requests().len(), 1, "the endpoint itself got the request");
}

/// An endpoint cap of 0 ms: Node (`maxTimeoutMs || 30000`) and Python (`max_timeout_ms or 30000`)
/// take the default cap; Rust's `timeout_ms.clamp(1, 0)` panics inside the import.
#[test]
fn parity_an_endpoint_cap_of_zero_is_the_default_not_a_panic() {
    let endpoint = ScriptedServer::start(vec![Reply::ok("{}")]).unwrap();
    let mut gate = Endpoint::new(endpoint.url());
    gate.max_timeout_ms = 0;
    let http = HttpCap::new(HttpConfig { endpoints: BTreeMap::from([("gate".to_string(), gate)]) });
    let request =
        Request { endpoint: "gate".into(), path: "/x".into(), headers: vec![], body: vec![], timeout_ms: 2_000 };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| http.post(&request).map(|r| r.status)));
    assert!(outcome.is_ok(), "the http import panicked");
}
