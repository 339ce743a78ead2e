//! `/skills diff NAME@A NAME@B` on the fake host: the file before one version against the file
//! before another, either order; two skills, two files, a missing version and a usage slip are
//! refused, and nothing is written by any of it.

use crate::api::{CallContext, Origin};
use crate::fake::FakeHost;
use crate::host::{Host, Root, WriteMode};
use crate::plugin::Plugin;
use serde_json::{Value, json};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn ctx() -> CallContext {
    CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
}

/// `deploy` as it was made by hand, then three landed writes: version 1 patches `one` to `two`,
/// version 2 patches `two` to `three`, version 3 adds `references/notes.md`.
fn plugin() -> Plugin<FakeHost> {
    let host = FakeHost::new(1_767_225_600_000);
    let text = "---\nname: deploy\ndescription: Ships it. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n---\nstep one\n";
    host.write(&Root::UserSkills, "deploy/SKILL.md", text.as_bytes(), WriteMode::CreateNew).unwrap();
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into(), "commands".into()]).unwrap();
    let calls = [
        json!({"action": "view", "name": "deploy"}),
        json!({"action": "patch", "name": "deploy", "old_string": "step one", "new_string": "step two"}),
        json!({"action": "patch", "name": "deploy", "old_string": "step two", "new_string": "step three"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "references/notes.md", "content": "notes\n"}),
    ];
    for call in calls {
        plugin.host().advance(1000);
        plugin.call_tool(&ctx(), "skill_manage", &call.to_string()).unwrap();
    }
    plugin
}

fn diff(plugin: &mut Plugin<FakeHost>, line: &str) -> Result<Value, String> {
    plugin.run_command(&ctx(), &format!("{line} --json")).map(|text| serde_json::from_str(&text).unwrap())
}

#[test]
fn two_versions_diff_the_file_before_each_in_either_order() {
    let mut plugin = plugin();
    let answer = diff(&mut plugin, "diff deploy@1 deploy@2").unwrap();
    assert_eq!((answer["from"].as_u64(), answer["to"].as_u64()), (Some(1), Some(2)), "{answer}");
    assert_eq!(answer["path"], "deploy/SKILL.md");
    let text = answer["diff"].as_str().unwrap();
    assert!(text.contains("-step one\n+step two\n"), "what version 1 changed: {text}");
    assert!(!text.contains("three"), "before version 2 the file did not say three: {text}");

    let back = diff(&mut plugin, "diff deploy@2 deploy@1").unwrap();
    assert!(back["diff"].as_str().unwrap().contains("-step two\n+step one\n"), "{back}");

    let same = diff(&mut plugin, "diff deploy@2 deploy@2").unwrap();
    assert!(!same["diff"].as_str().unwrap().contains("\n+"), "no change between a version and itself: {same}");

    // The text answer is the same diff, for a person.
    let shown = plugin.run_command(&ctx(), "diff deploy@1 deploy@2").unwrap();
    assert!(shown.starts_with("diff --git a/deploy/SKILL.md b/deploy/SKILL.md\n"), "{shown}");
}

#[test]
fn two_skills_two_files_a_missing_version_and_a_slip_are_refused_and_nothing_changes() {
    let mut plugin = plugin();
    let before = plugin.host().snapshot();
    for (line, needle) in [
        ("diff deploy@1 other@2", "two versions of one skill"),
        ("diff deploy@1 deploy@3", "changed two files (deploy/SKILL.md and deploy/references/notes.md)"),
        ("diff deploy@1 deploy@9", "`deploy` has no kept version 9"),
        ("diff deploy@1 deploy@x", "`x` is not a version number"),
        ("diff nothing@1 nothing@2", "no skill named `nothing`"),
        ("diff deploy@1 latest", "expected `/skills diff ID`, `diff NAME@VERSION` or `diff NAME@A NAME@B`"),
        ("diff a@1 a@2 a@3", "expected `/skills diff ID`"),
        ("diff", "expected `/skills diff ID`"),
    ] {
        let refused = diff(&mut plugin, line).expect_err(line);
        assert!(refused.contains(needle), "{line}: {refused}");
        assert_eq!(plugin.host().snapshot(), before, "{line} changed the filesystem");
    }
}

#[test]
fn a_credential_in_a_kept_version_is_never_shown() {
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let host = FakeHost::new(1_767_225_600_000);
    let text = format!(
        "---\nname: deploy\ndescription: Ships it. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n---\npush with {key}\n"
    );
    host.write(&Root::UserSkills, "deploy/SKILL.md", text.as_bytes(), WriteMode::CreateNew).unwrap();
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into(), "commands".into()]).unwrap();
    plugin.call_tool(&ctx(), "skill_manage", r#"{"action":"view","name":"deploy"}"#).unwrap();
    for (old, new) in [(key.as_str(), "$GITHUB_TOKEN"), ("push with", "push it with")] {
        let patch = json!({"action": "patch", "name": "deploy", "old_string": old, "new_string": new});
        plugin.call_tool(&ctx(), "skill_manage", &patch.to_string()).unwrap();
    }
    let answer = diff(&mut plugin, "diff deploy@1 deploy@2").unwrap();
    let text = answer["diff"].as_str().unwrap();
    assert!(!text.contains(&key) && text.contains("[redacted"), "{text}");
}

#[test]
fn show_at_a_version_gives_the_skill_md_before_it_and_refuses_another_file() {
    let mut plugin = plugin();
    let before = plugin.host().snapshot();
    let at2 = diff(&mut plugin, "show deploy@2").unwrap();
    assert_eq!((at2["version"].as_u64(), at2["path"].as_str()), (Some(2), Some("deploy/SKILL.md")), "{at2}");
    assert!(at2["content"].as_str().unwrap().ends_with("---\nstep two\n"), "{at2}");
    let at1 = plugin.run_command(&ctx(), "show deploy@1").unwrap();
    assert!(at1.ends_with("---\nstep one\n"), "the text answer is the file: {at1}");
    let refused = diff(&mut plugin, "show deploy@3").unwrap_err();
    assert!(refused.contains("changed deploy/references/notes.md, not its SKILL.md"), "{refused}");
    assert!(diff(&mut plugin, "show deploy@9").unwrap_err().contains("no kept version 9"));
    assert!(diff(&mut plugin, "show deploy@x").unwrap_err().contains("not a version number"));
    assert_eq!(plugin.host().snapshot(), before, "a read writes nothing");
}
