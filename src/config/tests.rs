use super::parse::check;
use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn defaults_follow_the_seeds() {
    let c = Config::parse("").unwrap();
    assert_eq!(c.review.turn_interval, 10);
    assert_eq!(c.review.tool_call_threshold, 15);
    assert_eq!(c.review.cooldown_minutes, 20);
    assert_eq!(c.review.max_per_session, 8);
    assert_eq!(c.review.timeout_minutes, 5);
    assert_eq!(c.review.gate, GateKind::Counters);
    assert_eq!(c.review.jev.cooldown_minutes, 5);
    assert_eq!(c.review.jev.timeout_ms, 2_000);
    assert_eq!(c.review.jev.confident_no, 0.75);
    assert_eq!(
        c.review.openai,
        OpenAiConfig {
            endpoint: "llm".into(),
            model: "gpt-4o-mini".into(),
            path: "/chat/completions".into(),
            cooldown_minutes: 5,
            timeout_ms: 2_000,
            confident_no: 0.75,
            max_tokens: 100,
        }
    );
    assert_eq!(c.curator.stale_days, 30);
    assert_eq!(c.curator.archive_days, 90);
    assert_eq!(c.curator.delay_seconds, 30);
    assert_eq!(Config::parse("null").unwrap(), c);
    assert_eq!(Config::parse("{}").unwrap(), c);
}

#[test]
fn overrides_apply_and_round_trip_through_the_effective_json() {
    let c = Config::parse(r#"{"writeApproval":true,"review":{"gate":"jev","jev":{"confidentNo":1}}}"#).unwrap();
    assert!(c.write_approval);
    assert_eq!(c.review.gate, GateKind::Jev);
    assert_eq!(c.review.jev.confident_no, 1.0);
    let again = Config::parse(&c.to_json().to_string()).unwrap();
    assert_eq!(again, c);

    let c = Config::parse(
        r#"{"review":{"gate":"openai","openai":{"endpoint":"local","model":"qwen2.5:7b-instruct","path":"/v1/chat/completions?api-version=1","cooldownMinutes":0,"timeoutMs":9000,"confidentNo":0.9,"maxTokens":64}}}"#,
    )
    .unwrap();
    assert_eq!(c.review.gate, GateKind::OpenAi);
    let o = &c.review.openai;
    assert_eq!((o.endpoint.as_str(), o.model.as_str()), ("local", "qwen2.5:7b-instruct"));
    assert_eq!(o.path, "/v1/chat/completions?api-version=1");
    assert_eq!((o.cooldown_minutes, o.timeout_ms, o.confident_no, o.max_tokens), (0, 9_000, 0.9, 64));
    let json = c.to_json();
    assert_eq!(json["review"]["gate"], "openai");
    assert_eq!(json["review"]["openai"]["maxTokens"], 64);
    assert_eq!(Config::parse(&json.to_string()).unwrap(), c);
}

#[test]
fn the_openai_block_is_checked_key_by_key() {
    let cases = [
        (r#"{"review":{"openai":{"modle":"x"}}}"#, "review.openai.modle", "Did you mean `model`?"),
        (r#"{"review":{"openai":{"model":""}}}"#, "review.openai.model", "must name the model"),
        (r#"{"review":{"openai":{"model":"  "}}}"#, "review.openai.model", "must name the model"),
        (r#"{"review":{"openai":{"model":7}}}"#, "review.openai.model", "expected text"),
        (r#"{"review":{"openai":{"endpoint":"https://api.openai.com"}}}"#, "review.openai.endpoint", "expected a name"),
        (r#"{"review":{"openai":{"path":"chat/completions"}}}"#, "review.openai.path", "plain absolute path"),
        (r#"{"review":{"openai":{"path":"/../admin"}}}"#, "review.openai.path", "plain absolute path"),
        (r#"{"review":{"openai":{"path":"//evil.example/x"}}}"#, "review.openai.path", "plain absolute path"),
        (r#"{"review":{"openai":{"path":"/x@evil"}}}"#, "review.openai.path", "plain absolute path"),
        (r#"{"review":{"openai":{"path":"/a b"}}}"#, "review.openai.path", "plain absolute path"),
        (r#"{"review":{"openai":{"maxTokens":0}}}"#, "review.openai.maxTokens", "between 16 and 4096"),
        (r#"{"review":{"openai":{"maxTokens":5000}}}"#, "review.openai.maxTokens", "between 16 and 4096"),
        (r#"{"review":{"openai":{"timeoutMs":50}}}"#, "review.openai.timeoutMs", "between 100 and 60000"),
        (r#"{"review":{"openai":{"cooldownMinutes":-1}}}"#, "review.openai.cooldownMinutes", "between 0 and 1440"),
        (r#"{"review":{"openai":{"confidentNo":1.01}}}"#, "review.openai.confidentNo", "between 0 and 1"),
        (r#"{"review":{"openai":"gpt-4o"}}"#, "review.openai", "expected an object"),
    ];
    for (text, key, needle) in cases {
        let err = Config::parse(text).unwrap_err();
        assert_eq!(err.key, key, "{text}");
        assert!(err.message.contains(needle), "{text}: {}", err.message);
    }
    let long = format!(r#"{{"review":{{"openai":{{"path":"/{}"}}}}}}"#, "a".repeat(200));
    assert_eq!(Config::parse(&long).unwrap_err().key, "review.openai.path");
}

#[test]
fn unknown_key_names_it_and_the_known_keys() {
    let err = Config::parse(r#"{"review":{"turnIntervall":3}}"#).unwrap_err();
    assert_eq!(err.key, "review.turnIntervall");
    assert!(err.message.contains("`turnIntervall`"), "{}", err.message);
    assert!(err.message.contains("Did you mean `turnInterval`?"), "{}", err.message);
    assert!(err.message.contains("cooldownMinutes, enabled, gate, jev"), "{}", err.message);

    let err = Config::parse(r#"{"bogus":1}"#).unwrap_err();
    assert_eq!(err.key, "bogus");
    assert!(err.message.contains("writeApproval"), "{}", err.message);
}

#[test]
fn out_of_range_names_the_bound() {
    let err = Config::parse(r#"{"review":{"turnInterval":0}}"#).unwrap_err();
    assert_eq!(err.key, "review.turnInterval");
    assert!(err.message.contains("between 1 and 10000"), "{}", err.message);
    let err = Config::parse(r#"{"review":{"jev":{"confidentNo":1.5}}}"#).unwrap_err();
    assert_eq!(err.key, "review.jev.confidentNo");
    assert!(err.message.contains("between 0 and 1"), "{}", err.message);
}

#[test]
fn wrong_types_and_shapes_are_named() {
    let cases = [
        (r#"{"writeApproval":"yes"}"#, "writeApproval", "expected true or false"),
        (r#"{"review":{"turnInterval":2.5}}"#, "review.turnInterval", "expected an integer"),
        (r#"{"review":{"gate":"magic"}}"#, "review.gate", "one of counters, jev, openai"),
        (r#"{"review":true}"#, "review", "expected an object"),
        (r#"{"review":{"jev":{"endpoint":"../x"}}}"#, "review.jev.endpoint", "expected a name"),
        (r#"[1]"#, "", "expected a JSON object"),
        (r#"{"#, "", "not valid JSON"),
        (r#"{"curator":{"staleDays":100}}"#, "curator.archiveDays", "greater than curator.staleDays"),
    ];
    for (text, key, needle) in cases {
        let err = Config::parse(text).unwrap_err();
        assert_eq!(err.key, key, "{text}");
        assert!(err.message.contains(needle), "{text}: {}", err.message);
    }
}

#[test]
fn every_key_has_a_value_in_the_effective_json() {
    let json = Config::default().to_json();
    for spec in KEYS {
        let mut node = &json;
        for part in spec.path.split('.') {
            node = &node[part];
        }
        assert!(!node.is_null(), "{} missing", spec.path);
        assert_eq!(check(spec, node).as_ref(), Ok(node), "{}", spec.path);
    }
}
