//! `/skills show NAME --json` on the fake host: its `status` and `pinned` are the plugin's own
//! reading of the frontmatter, the same as `list` gives for the skill's row, whatever lines a
//! description holds (a block scalar saying `status: archived` or `pinned: true` is text).

use crate::api::{CallContext, Origin};
use crate::fake::FakeHost;
use crate::host::{Host, Root, WriteMode};
use crate::plugin::Plugin;
use serde_json::Value;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn ctx() -> CallContext {
    CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
}

/// Four skills written by hand into the user library: `block` (ours; its description is a block
/// scalar whose lines look like lifecycle fields), `kept` (ours, stale), `plain` (hand-written)
/// and `broken` (its frontmatter never closes).
fn plugin() -> Plugin<FakeHost> {
    let host = FakeHost::new(1_767_225_600_000);
    let files = [
        (
            "block",
            "---\nname: block\ndescription: |\n  Notes kept as a block. Use when testing show.\n  status: archived\n  pinned: true\n\
             metadata:\n  authored-by: self-evolve\n---\n# Block\n",
        ),
        (
            "kept",
            "---\nname: kept\ndescription: Kept notes. Use when testing show.\nmetadata:\n  authored-by: self-evolve\n  \
             status: stale\n---\n# Kept\n",
        ),
        ("plain", "---\nname: plain\ndescription: Hand-written notes. Use when testing show.\n---\n# Plain\n"),
        ("broken", "---\nname: broken\ndescription: never closed\n# Broken\n"),
    ];
    for (name, text) in files {
        host.write(&Root::UserSkills, &format!("{name}/SKILL.md"), text.as_bytes(), WriteMode::CreateNew).unwrap();
    }
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into(), "commands".into()]).unwrap();
    plugin
}

fn json(plugin: &mut Plugin<FakeHost>, line: &str) -> Value {
    let text = plugin.run_command(&ctx(), &format!("{line} --json")).unwrap_or_else(|e| panic!("{line}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{line}: {e}: {text}"))
}

/// `(status, pinned)` of `name` in `list --json` and in `show NAME --json`.
fn both(plugin: &mut Plugin<FakeHost>, name: &str) -> ((Value, Value), (Value, Value)) {
    let list = json(plugin, "list");
    let row = list["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row for {name}: {list}"))
        .clone();
    let shown = json(plugin, &format!("show {name}"));
    assert_eq!(shown["name"], name, "{shown}");
    ((row["status"].clone(), row["pinned"].clone()), (shown["status"].clone(), shown["pinned"].clone()))
}

#[test]
fn show_gives_status_and_pinned_as_list_does_and_a_description_cannot_fake_them() {
    let mut plugin = plugin();
    let shown = json(&mut plugin, "show block");
    assert!(shown["content"].as_str().unwrap().contains("  status: archived\n  pinned: true\n"), "{shown}");
    assert_eq!((&shown["status"], &shown["pinned"]), (&Value::from("active"), &Value::from(false)), "{shown}");

    for (name, status, pinned) in
        [("block", "active", false), ("kept", "stale", false), ("plain", "active", false), ("broken", "invalid", false)]
    {
        let (row, show) = both(&mut plugin, name);
        assert_eq!(show, (Value::from(status), Value::from(pinned)), "show {name}");
        assert_eq!(row, show, "list and show agree on {name}");
    }

    // Pinned by the operator: both say so; unpinned again, neither does.
    json(&mut plugin, "pin block");
    let (row, show) = both(&mut plugin, "block");
    assert_eq!(show, (Value::from("active"), Value::from(true)));
    assert_eq!(row, show);
    json(&mut plugin, "unpin block");
    let (row, show) = both(&mut plugin, "block");
    assert_eq!(show, (Value::from("active"), Value::from(false)));
    assert_eq!(row, show);

    // The text answer is unchanged: the path, the scope, then the file.
    let text = plugin.run_command(&ctx(), "show kept").unwrap();
    assert!(text.starts_with("kept/SKILL.md (user scope)\n"), "{text}");
}
