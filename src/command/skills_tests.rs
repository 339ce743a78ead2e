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

/// An evaluation line as `self-evolve eval --skill NAME` appends it.
fn evaluated(plugin: &Plugin<FakeHost>, skill: &str, verdict: &str, version: &str) {
    let line = serde_json::json!({"skill": skill, "verdict": verdict, "difference": -0.5, "interval": [-0.8, -0.2],
        "pValue": 0.0156, "pairs": 14, "suiteSha256": "cd".repeat(32), "agent": "claude -p {prompt}",
        "version": version, "at": 1});
    let host = plugin.host();
    let before = host.read(&Root::State, "eval/evidence.jsonl").unwrap_or_default();
    let text = [before, format!("{line}\n").into_bytes()].concat();
    host.write(&Root::State, "eval/evidence.jsonl", &text, WriteMode::Truncate).unwrap();
}

#[test]
fn show_says_what_an_evaluation_found_and_the_curator_flags_a_negative_one_without_archiving() {
    let mut plugin = plugin();
    let text = plugin.host().read(&Root::UserSkills, "plain/SKILL.md").unwrap();
    evaluated(&plugin, "plain", "b-better", &crate::digest::sha256_hex(&text));
    evaluated(&plugin, "kept", "inconclusive", "an-older-text");
    let shown = json(&mut plugin, "show plain");
    assert_eq!(shown["evaluation"]["verdict"], "b-better", "{shown}");
    let text = plugin.run_command(&ctx(), "show plain").unwrap();
    assert!(
        text.contains(
            "evaluated: the agent did better without it: -50% [-80%, -20%], p 0.016, 14 pairs (of this version;"
        ),
        "{text}"
    );
    let text = plugin.run_command(&ctx(), "show kept").unwrap();
    assert!(text.contains("evaluated: inconclusive") && text.contains("of an earlier version"), "{text}");

    let report = json(&mut plugin, "curator run --dry-run");
    let flagged: Vec<&str> = report["flagged"].as_array().unwrap().iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(flagged, ["plain"], "{report}");
    assert!(
        report["flagged"][0]["reason"].as_str().unwrap().contains("a paired evaluation found the agent did better")
    );
    let changes = report["changes"].as_array().unwrap();
    assert!(!changes.iter().any(|c| c["name"] == "plain"), "an evaluation alone never archives: {report}");
}
