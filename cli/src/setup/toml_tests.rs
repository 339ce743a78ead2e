use super::*;

fn server() -> V {
    V::map(vec![("command", V::str("/bin/self-evolve")), ("args", V::strs(&["mcp"]))])
}

const CONFIG: &str = r#"# Codex config
model = "gpt-5" # the model

notify = ["/usr/local/bin/self-evolve", "hook", "--codex"]

[mcp_servers.github]
command = "gh-mcp"
args = []

[profiles.work]
model = "o3"
"#;

#[test]
fn a_server_is_added_as_a_table_and_removed_to_the_same_bytes() {
    let mut doc = TomlDoc::parse(CONFIG).unwrap();
    assert!(doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap());
    let text = doc.text();
    assert!(text.contains("[mcp_servers.self-evolve]\ncommand = \"/bin/self-evolve\"\nargs = [\"mcp\"]\n"), "{text}");
    assert!(text.starts_with("# Codex config\nmodel = \"gpt-5\" # the model\n"), "{text}");
    assert_eq!(doc.value()["profiles"]["work"]["model"], "o3");
    let mut again = TomlDoc::parse(&text).unwrap();
    assert!(!again.set_entry("mcp_servers", "self-evolve", &server()).unwrap());
    assert_eq!(again.text(), text);
    assert!(again.remove_entry("mcp_servers", "self-evolve").unwrap());
    assert_eq!(again.text(), CONFIG);
}

#[test]
fn an_empty_file_gets_the_table_and_loses_it_again() {
    let mut doc = TomlDoc::parse("").unwrap();
    doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap();
    assert_eq!(doc.text(), "[mcp_servers.self-evolve]\ncommand = \"/bin/self-evolve\"\nargs = [\"mcp\"]\n");
    doc.remove_entry("mcp_servers", "self-evolve").unwrap();
    assert_eq!(doc.text(), "");
}

#[test]
fn keys_a_person_added_stay_and_ours_change_in_place() {
    let text =
        "[mcp_servers.self-evolve]\ncommand = \"/old\"\nargs = [\"mcp\"]\nstartup_timeout_sec = 20 # slow disk\n";
    let mut doc = TomlDoc::parse(text).unwrap();
    assert!(doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap());
    assert_eq!(
        doc.text(),
        "[mcp_servers.self-evolve]\ncommand = \"/bin/self-evolve\"\nargs = [\"mcp\"]\nstartup_timeout_sec = 20 # slow disk\n"
    );
}

#[test]
fn inline_and_dotted_tables_get_an_inline_entry() {
    for text in ["mcp_servers = { a = { command = \"a\" } }\n", "mcp_servers.a.command = \"a\"\n"] {
        let mut doc = TomlDoc::parse(text).unwrap();
        doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap();
        let out = TomlDoc::parse(&doc.text()).unwrap().value();
        assert_eq!(out["mcp_servers"]["self-evolve"], server().to_json(), "{}", doc.text());
        assert_eq!(out["mcp_servers"]["a"]["command"], "a");
    }
}

#[test]
fn our_notify_goes_and_anothers_stays() {
    let mut doc = TomlDoc::parse(CONFIG).unwrap();
    assert!(doc.remove_our_program("notify"));
    assert!(!doc.text().contains("notify"));
    let mut doc = TomlDoc::parse("notify = [\"notify-send\", \"done\"]\n").unwrap();
    assert!(!doc.remove_our_program("notify"));
    assert!(doc.text().contains("notify-send"));
}

#[test]
fn what_it_cannot_read_is_refused() {
    for (text, says) in [("a = ", "not valid TOML"), ("a = 1\na = 2\n", "not valid TOML")] {
        let err = TomlDoc::parse(text).err().unwrap_or_else(|| panic!("{text}"));
        assert!(err.to_string().contains(says), "{err}");
    }
    let mut doc = TomlDoc::parse("mcp_servers = 3\n").unwrap();
    assert!(doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap_err().to_string().contains("not a table"));
    let mut doc = TomlDoc::parse("[mcp_servers]\nself-evolve = \"x\"\n").unwrap();
    assert!(doc.set_entry("mcp_servers", "self-evolve", &server()).unwrap_err().to_string().contains("not a table"));
}
