use super::*;
use crate::setup::value::is_our_hook_command;

fn ours(v: &Value) -> bool {
    v["command"].as_str().is_some_and(is_our_hook_command)
}

fn handler(bin: &str) -> V {
    V::map(vec![("command", V::str(format!("{bin} hook --harness hermes"))), ("timeout", V::Int(30))])
}

const CONFIG: &str = "model: x\n\nhooks:\n  pre_tool_call:\n    - matcher: \"terminal\"\n      command: \"~/.hermes/agent-hooks/block.sh\"\n      timeout: 5\n  post_tool_call:\n    - command: \"~/fmt.sh\"\n\n  # Outbound webhooks are a reserved sub-section of hooks:, not an event.\n  outbound:\n    - name: ci-notify\n      url: https://ci.example.com/hermes-events\n\nhooks_auto_accept: false\n";

#[test]
fn items_are_added_beside_a_persons_replaced_in_place_and_cut_to_the_same_bytes() {
    let mut doc = YamlDoc::parse(CONFIG).unwrap();
    for event in ["post_tool_call", "pre_llm_call", "on_session_finalize"] {
        assert!(doc.set_list_item("hooks", event, &handler("/bin/self-evolve"), &ours).unwrap());
    }
    let value = doc.value();
    assert_eq!(value["hooks"]["post_tool_call"][0]["command"], "~/fmt.sh");
    assert_eq!(value["hooks"]["post_tool_call"][1], handler("/bin/self-evolve").to_json());
    assert_eq!(value["hooks"]["pre_llm_call"][0], handler("/bin/self-evolve").to_json());
    assert_eq!(value["hooks"]["outbound"][0]["name"], "ci-notify");
    let text = doc.text();
    assert!(text.contains("# Outbound webhooks"), "{text}");
    let mut again = YamlDoc::parse(&text).unwrap();
    assert!(!again.set_list_item("hooks", "post_tool_call", &handler("/bin/self-evolve"), &ours).unwrap());
    // A moved binary: replaced where it stands.
    assert!(again.set_list_item("hooks", "post_tool_call", &handler("/opt/self-evolve"), &ours).unwrap());
    assert_eq!(again.value()["hooks"]["post_tool_call"][1]["command"], "/opt/self-evolve hook --harness hermes");
    assert_eq!(again.value()["hooks"]["post_tool_call"].as_array().unwrap().len(), 2);
    assert!(again.remove_list_items("hooks", &ours).unwrap());
    assert_eq!(again.text(), CONFIG);
}

#[test]
fn a_file_without_hooks_gets_the_block_and_loses_it_again() {
    for original in ["", "model: x\n", "hooks: {}\n", "hooks:\n  pre_llm_call: []\n"] {
        let mut doc = YamlDoc::parse(original).unwrap();
        doc.set_list_item("hooks", "pre_llm_call", &handler("/bin/self-evolve"), &ours).unwrap();
        doc.set_list_item("hooks", "post_tool_call", &handler("/bin/self-evolve"), &ours).unwrap();
        assert_eq!(doc.value()["hooks"]["post_tool_call"][0], handler("/bin/self-evolve").to_json(), "{}", doc.text());
        let mut doc = YamlDoc::parse(&doc.text()).unwrap();
        doc.remove_list_items("hooks", &ours).unwrap();
        if original.starts_with("hooks") {
            assert!(
                doc.value().get("hooks").is_none_or(|h| h.get("pre_llm_call").is_none()),
                "{original:?} -> {}",
                doc.text()
            );
        } else {
            assert_eq!(doc.text(), original);
        }
    }
}

#[test]
fn a_flow_list_is_refused_with_nothing_changed() {
    let original = "hooks:\n  post_tool_call: [{command: a}]\n";
    let mut doc = YamlDoc::parse(original).unwrap();
    let err =
        doc.set_list_item("hooks", "post_tool_call", &handler("/bin/self-evolve"), &ours).unwrap_err().to_string();
    assert!(err.contains("cannot edit safely"), "{err}");
    assert_eq!(doc.text(), original);
}
