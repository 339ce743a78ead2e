use super::*;
use crate::setup::value::is_our_hook_command;

fn ours(v: &Value) -> bool {
    v["command"].as_str().is_some_and(is_our_hook_command)
}

fn server() -> V {
    V::map(vec![("command", V::str("/bin/self-evolve")), ("args", V::strs(&["mcp"]))])
}

fn hook(event: &str, matcher: Option<&str>) -> Hook {
    Hook {
        event: event.into(),
        matcher: matcher.map(str::to_string),
        handler: V::map(vec![("type", V::str("command")), ("command", V::str("/bin/self-evolve hook"))]),
    }
}

const SETTINGS: &str = r#"{
  // my settings
  "model": "opus",
  "mcpServers": {
    "github": { "command": "gh-mcp", "args": [] }
  },
  "hooks": {
    "Stop": [
      { "hooks": [ { "type": "command", "command": "notify-send done" } ] }
    ]
  },
  "zeta": 1
}
"#;

#[test]
fn an_entry_is_added_beside_the_others_and_the_rest_of_the_file_stays() {
    let doc = JsonDoc::parse(SETTINGS, true).unwrap();
    assert!(doc.set_entry(&["mcpServers"], "self-evolve", &server()).unwrap());
    let text = doc.text();
    assert!(
        text.starts_with("{\n  // my settings\n  \"model\": \"opus\",\n  \"mcpServers\": {\n    \"github\""),
        "{text}"
    );
    assert!(text.contains("\"zeta\": 1"), "{text}");
    assert_eq!(doc.value()["mcpServers"]["self-evolve"], server().to_json());
    assert_eq!(doc.value()["mcpServers"]["github"]["command"], "gh-mcp");
    // Written in the documented order.
    assert!(text.contains("\"command\": \"/bin/self-evolve\",\n      \"args\": [\"mcp\"]"), "{text}");
    // Again: nothing changes.
    let again = JsonDoc::parse(&text, true).unwrap();
    assert!(!again.set_entry(&["mcpServers"], "self-evolve", &server()).unwrap());
    assert_eq!(again.text(), text);
    // Removed: the file as it was, byte for byte.
    assert!(again.remove_entry(&["mcpServers"], "self-evolve").unwrap());
    assert_eq!(again.text(), SETTINGS);
}

#[test]
fn a_key_a_person_added_to_our_entry_is_kept_and_a_changed_one_is_set_in_place() {
    let text =
        r#"{"mcpServers": {"self-evolve": {"command": "/old/self-evolve", "args": ["mcp"], "timeout": 5}, "b": {}}}"#;
    let doc = JsonDoc::parse(text, false).unwrap();
    assert!(doc.set_entry(&["mcpServers"], "self-evolve", &server()).unwrap());
    let value = doc.value();
    assert_eq!(value["mcpServers"]["self-evolve"]["command"], "/bin/self-evolve");
    assert_eq!(value["mcpServers"]["self-evolve"]["timeout"], 5);
    let out = doc.text();
    assert!(out.find("self-evolve").unwrap() < out.find("\"b\"").unwrap(), "position kept: {out}");
}

#[test]
fn containers_setup_created_go_with_the_entry() {
    for original in ["{}", "{}\n", "{\n  \"a\": 1\n}\n", ""] {
        let doc = JsonDoc::parse(original, false).unwrap();
        doc.set_entry(&["mcpServers"], "self-evolve", &server()).unwrap();
        doc.set_hooks(&["hooks"], HookShape::Grouped, &[hook("Stop", None)], &ours).unwrap();
        let doc = JsonDoc::parse(&doc.text(), false).unwrap();
        doc.remove_entry(&["mcpServers"], "self-evolve").unwrap();
        doc.remove_hooks(&["hooks"], HookShape::Grouped, &ours).unwrap();
        let expected = if original.is_empty() { "{}\n" } else { original };
        assert_eq!(doc.text(), expected, "from {original:?}");
    }
}

#[test]
fn grouped_hooks_are_added_once_replaced_in_place_and_removed_exactly() {
    let doc = JsonDoc::parse(SETTINGS, true).unwrap();
    let wanted = [hook("UserPromptSubmit", None), hook("PostToolUse", Some("Skill|Read")), hook("Stop", None)];
    assert!(doc.set_hooks(&["hooks"], HookShape::Grouped, &wanted, &ours).unwrap());
    let value = doc.value();
    assert_eq!(value["hooks"]["Stop"].as_array().unwrap().len(), 2, "{value}");
    assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["command"], "notify-send done");
    assert_eq!(value["hooks"]["PostToolUse"][0]["matcher"], "Skill|Read");
    let text = doc.text();
    assert!(text.contains("// my settings"));
    let again = JsonDoc::parse(&text, true).unwrap();
    assert!(!again.set_hooks(&["hooks"], HookShape::Grouped, &wanted, &ours).unwrap());
    assert_eq!(again.text(), text);
    // A newer binary path replaces ours where it stands; an event no longer wanted loses ours.
    let moved = Hook {
        handler: V::map(vec![("type", V::str("command")), ("command", V::str("/opt/self-evolve hook"))]),
        ..hook("Stop", None)
    };
    assert!(again.set_hooks(&["hooks"], HookShape::Grouped, &[moved], &ours).unwrap());
    let value = again.value();
    assert_eq!(value["hooks"]["Stop"][1]["hooks"][0]["command"], "/opt/self-evolve hook");
    assert!(value["hooks"].get("PostToolUse").is_none() && value["hooks"].get("UserPromptSubmit").is_none(), "{value}");
    assert!(again.remove_hooks(&["hooks"], HookShape::Grouped, &ours).unwrap());
    assert_eq!(again.text(), SETTINGS);
}

#[test]
fn a_group_shared_with_a_persons_handler_keeps_theirs_and_its_matcher() {
    let text = r#"{"hooks": {"Stop": [{"matcher": "x", "hooks": [
        {"type": "command", "command": "self-evolve hook"},
        {"type": "command", "command": "say done"}]}]}}"#;
    let doc = JsonDoc::parse(text, false).unwrap();
    doc.set_hooks(&["hooks"], HookShape::Grouped, &[hook("Stop", None)], &ours).unwrap();
    let value = doc.value();
    assert_eq!(value["hooks"]["Stop"].as_array().unwrap().len(), 1, "{value}");
    assert_eq!(value["hooks"]["Stop"][0]["matcher"], "x");
    assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["command"], "/bin/self-evolve hook");
    assert_eq!(value["hooks"]["Stop"][0]["hooks"][1]["command"], "say done");
    doc.remove_hooks(&["hooks"], HookShape::Grouped, &ours).unwrap();
    let value = doc.value();
    assert_eq!(value["hooks"]["Stop"][0]["hooks"].as_array().unwrap().len(), 1);
    assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
}

#[test]
fn duplicates_of_ours_collapse_to_one() {
    let text = r#"{"hooks": {"stop": [{"command": "self-evolve hook"}, {"command": "x"}, {"command": "/a/self-evolve hook"}]}}"#;
    let doc = JsonDoc::parse(text, false).unwrap();
    let flat = Hook {
        event: "stop".into(),
        matcher: None,
        handler: V::map(vec![("command", V::str("/bin/self-evolve hook"))]),
    };
    doc.set_hooks(&["hooks"], HookShape::Flat, &[flat], &ours).unwrap();
    assert_eq!(
        doc.value()["hooks"]["stop"],
        serde_json::json!([{"command": "/bin/self-evolve hook"}, {"command": "x"}])
    );
}

#[test]
fn files_it_cannot_read_safely_are_refused() {
    for (text, comments, says) in [
        ("{\"a\": 1,}", false, "not valid JSON"),
        ("{// c\n}", false, "not valid JSON"),
        ("{\"a\": 1", true, "not valid JSON"),
        ("{\"a\": [1,],}", true, "not valid JSONC"),
        ("[1, 2]", false, "JSON object at the top"),
        ("\"text\"", true, "JSON object at the top"),
        ("{\"mcpServers\": {}, \"mcpServers\": {}}", false, "`mcpServers` is written twice"),
        ("{\"hooks\": {\"Stop\": [{\"hooks\": [], \"hooks\": []}]}}", true, "`hooks.Stop[].hooks` is written twice"),
    ] {
        let err = JsonDoc::parse(text, comments).err().unwrap_or_else(|| panic!("{text} parsed"));
        assert!(err.to_string().contains(says), "{text}: {err}");
    }
    let doc = JsonDoc::parse(r#"{"mcpServers": []}"#, false).unwrap();
    let err = doc.set_entry(&["mcpServers"], "self-evolve", &server()).unwrap_err();
    assert!(err.to_string().contains("`mcpServers` is not an object"), "{err}");
    let doc = JsonDoc::parse(r#"{"hooks": {"Stop": {}}}"#, false).unwrap();
    let err = doc.set_hooks(&["hooks"], HookShape::Grouped, &[hook("Stop", None)], &ours).unwrap_err();
    assert!(err.to_string().contains("`hooks.Stop` is not a list"), "{err}");
}

#[test]
fn jsonc_comments_and_trailing_commas_survive() {
    let text = "{\n  // comment\n  \"a\": [1, 2], /* block */\n  \"b\": 1\n}\n";
    let doc = JsonDoc::parse(text, true).unwrap();
    doc.set_entry(&["mcpServers"], "self-evolve", &server()).unwrap();
    let out = doc.text();
    assert!(out.contains("// comment") && out.contains("/* block */") && out.contains("[1, 2]"), "{out}");
    let doc = JsonDoc::parse(&out, true).unwrap();
    doc.remove_entry(&["mcpServers"], "self-evolve").unwrap();
    assert_eq!(doc.text(), text);
}
