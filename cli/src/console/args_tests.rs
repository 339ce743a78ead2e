//! Which words the console passes on: the read allowlist, the action words, decoding and paging.

use super::*;

#[test]
fn reads_are_the_listed_subcommands_only() {
    for ok in [
        "list",
        "list --scope user",
        "list --scope project --status stale",
        "list --json",
        "show deploy",
        "pending",
        "diff 1796314260191-9dfc8b",
        "diff deploy@2",
        "diff deploy@1 deploy@3",
        "log deploy",
        "curator",
        "curator run --dry-run",
        "reviews",
        "reviews r-1",
        "loops",
        "review status",
    ] {
        assert!(read_words(ok).is_ok(), "{ok}: {:?}", read_words(ok));
    }
    for refused in [
        "",
        "approve latest",
        "approve 1796314260191-9dfc8b --accept-finding generic-secret",
        "reject latest",
        "revert deploy",
        "pin deploy",
        "archive deploy",
        "approval off",
        "review on",
        "review now",
        "curator run",
        "curator --dry-run run",
        "list --scope team",
        "list --scope",
        "list --status",
        "list --status --scope",
        "show",
        "show a b",
        "show --json-ish",
        "diff deploy@1 latest",
        "diff a b c",
        "help",
        "list --home /etc",
    ] {
        assert!(read_words(refused).is_err(), "{refused} was let through");
    }
    assert_eq!(read_words("list --json").unwrap(), ["list"], "the console adds --json itself");
}

#[test]
fn action_words_are_a_verb_then_plain_words_and_accept_finding() {
    let ok = |args: serde_json::Value| act_words(serde_json::json!({"args": args}).to_string().as_bytes());
    assert_eq!(
        ok(serde_json::json!(["approve", "1-a", "--accept-finding", "generic-secret"])).unwrap(),
        ["approve", "1-a", "--accept-finding", "generic-secret"]
    );
    for verb in ACTIONS {
        assert!(ok(serde_json::json!([verb, "deploy"])).is_ok(), "{verb}");
    }
    for (args, needle) in [
        (serde_json::json!([]), "first word"),
        (serde_json::json!(["list"]), "first word"),
        (serde_json::json!(["approval", "off"]), "first word"),
        (serde_json::json!(["review", "now"]), "first word"),
        (serde_json::json!(["curator", "run"]), "first word"),
        (serde_json::json!(["approve", "latest", "--json"]), "only option"),
        (serde_json::json!(["approve", "x", "--home", "/etc"]), "only option"),
        (serde_json::json!(["approve", "a b"]), "space"),
        (serde_json::json!(["approve", "a\nb"]), "space"),
        (serde_json::json!(["approve", "a\u{2028}b"]), "space"),
        (serde_json::json!(["approve", "\u{1b}[31m"]), "control"),
        (serde_json::json!(["approve", ""]), "empty"),
        (serde_json::json!(["approve", "x".repeat(MAX_WORD_BYTES + 1)]), "bytes"),
        (serde_json::json!(vec!["approve"; MAX_WORDS + 1]), "words"),
    ] {
        let err = ok(args.clone()).unwrap_err();
        assert!(err.contains(needle), "{args}: {err}");
    }
    for body in [&b"not json"[..], br#"{"args": "approve"}"#, br#"{"args": [], "extra": 1}"#, br#"["approve"]"#] {
        let err = act_words(body).unwrap_err();
        assert!(err.contains(r#"{"args": ["approve", "ID", …]}"#), "{err}");
    }
}

#[test]
fn query_values_are_decoded() {
    assert_eq!(decode("diff+deploy%402").unwrap(), "diff deploy@2");
    assert_eq!(decode("a%20b%e2%80%8b").unwrap(), "a b\u{200b}");
    assert!(decode("%zz").is_err() && decode("%4").is_err() && decode("%ff").is_err());
    assert_eq!(param("args=list&page=2", "page").unwrap().as_deref(), Some("2"));
    assert_eq!(param("args=list", "page").unwrap(), None);
}

#[test]
fn paging_defaults_and_bounds() {
    assert_eq!(paging("").unwrap(), (0, PER_DEFAULT));
    assert_eq!(paging("page=3&per=200").unwrap(), (3, 200));
    for bad in ["per=0", "per=201", "page=-1", "page=x", "per=1e3"] {
        assert!(paging(bad).is_err(), "{bad}");
    }
}
