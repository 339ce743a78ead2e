use super::*;

fn server() -> V {
    V::map(vec![("command", V::str("/bin/self-evolve")), ("args", V::strs(&["mcp"]))])
}

const CONFIG: &str = "# Hermes config\nmodel:\n  default: \"anthropic/claude-opus-4\"   # main model\n  provider: auto\n\nmcp_servers:\n  # the GitHub server\n  github:\n    command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-github\"]\n    env:\n      GITHUB_PERSONAL_ACCESS_TOKEN: \"ghp_x\"\n\nskills:\n  external_dirs:\n    - ~/team-skills\n";

#[test]
fn an_entry_is_added_under_the_existing_key_and_cut_out_to_the_same_bytes() {
    let mut doc = YamlDoc::parse(CONFIG).unwrap();
    assert!(doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap());
    let text = doc.text();
    assert!(
        text.contains("      GITHUB_PERSONAL_ACCESS_TOKEN: \"ghp_x\"\n  self-evolve:\n    command: \"/bin/self-evolve\"\n    args: [\"mcp\"]\n\nskills:"),
        "{text}"
    );
    assert!(text.contains("# main model") && text.contains("# the GitHub server"));
    let mut again = YamlDoc::parse(&text).unwrap();
    assert!(!again.set_entry("mcp_servers", "self-evolve", &server()).unwrap());
    assert!(again.remove_entry("mcp_servers", "self-evolve").unwrap());
    assert_eq!(again.text(), CONFIG);
}

#[test]
fn a_file_without_the_key_gets_a_block_at_its_end_and_loses_it_again() {
    for original in ["", "model: x\n", "model: x\n\n# end\n", "model: x"] {
        let mut doc = YamlDoc::parse(original).unwrap();
        doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap();
        assert_eq!(doc.value()["mcp_servers"]["self-evolve"], server().to_json(), "{}", doc.text());
        let mut doc = YamlDoc::parse(&doc.text()).unwrap();
        doc.remove_entry("mcp_servers", "self-evolve").unwrap();
        assert_eq!(doc.text(), original);
    }
}

#[test]
fn an_empty_flow_value_becomes_a_block_and_other_flow_values_are_refused_unchanged() {
    for original in ["mcp_servers: {}\n", "mcp_servers: null # none yet\n", "mcp_servers:\n"] {
        let mut doc = YamlDoc::parse(original).unwrap();
        doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap();
        assert_eq!(doc.value()["mcp_servers"]["self-evolve"], server().to_json(), "{}", doc.text());
    }
    let original = "mcp_servers: {github: {command: npx}}\n";
    let mut doc = YamlDoc::parse(original).unwrap();
    let err = doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap_err().to_string();
    assert!(
        err.contains("cannot edit safely") && err.contains("  self-evolve:\n    command: \"/bin/self-evolve\""),
        "{err}"
    );
    assert_eq!(doc.text(), original);
}

#[test]
fn our_keys_change_in_place_and_a_persons_key_stays() {
    let original = "mcp_servers:\n    self-evolve:\n        command: /old/self-evolve\n        timeout: 120   # slow\n        args:\n          - mcp\nother: 1\n";
    let mut doc = YamlDoc::parse(original).unwrap();
    assert!(doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap());
    assert_eq!(
        doc.text(),
        "mcp_servers:\n    self-evolve:\n        command: \"/bin/self-evolve\"\n        timeout: 120   # slow\n        args: [\"mcp\"]\nother: 1\n"
    );
    doc.remove_entry("mcp_servers", "self-evolve").unwrap();
    assert_eq!(doc.text(), "other: 1\n");
}

#[test]
fn a_comment_left_under_the_key_keeps_it() {
    let mut doc = YamlDoc::parse("mcp_servers:\n  # servers go here\n").unwrap();
    doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap();
    let mut doc = YamlDoc::parse(&doc.text()).unwrap();
    doc.remove_entry("mcp_servers", "self-evolve").unwrap();
    assert_eq!(doc.text(), "mcp_servers:\n  # servers go here\n");
}

#[test]
fn what_it_cannot_read_is_refused() {
    for (text, says) in [
        ("a: [1, 2\n", "not valid YAML"),
        ("- a\n- b\n", "mapping at the top"),
        ("a: 1\n---\nb: 2\n", "more than one YAML document"),
    ] {
        let err = YamlDoc::parse(text).err().unwrap_or_else(|| panic!("{text}"));
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn hostile_names_and_values_are_written_as_quoted_scalars() {
    let entry = V::map(vec![("command", V::str("/x/a: b # c\n- d")), ("args", V::strs(&["{", "*a", "&b"]))]);
    let mut doc = YamlDoc::parse("a: 1\n").unwrap();
    doc.set_entry("mcp_servers", "self-evolve", &entry).unwrap();
    assert_eq!(doc.value()["mcp_servers"]["self-evolve"], entry.to_json(), "{}", doc.text());
}
