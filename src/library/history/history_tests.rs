//! Version history on the fake host: what a landed write records, bounds, and reading back.

use super::*;
use crate::fake::FakeHost;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn landing<'a>(before: Option<&'a [u8]>, after: Option<&'a [u8]>) -> Landing<'a> {
    Landing {
        skill: "deploy",
        scope: Scope::User,
        path: "deploy/SKILL.md",
        operation: "patch",
        reason: "why",
        before,
        after,
    }
}

#[test]
fn each_write_keeps_the_bytes_it_replaced_and_only_the_newest_are_kept() {
    let host = FakeHost::new(1_767_225_600_000);
    record(&host, &TEST_OPERATOR, &landing(None, Some(b"v1")), 3).unwrap();
    for (before, after) in [(b"v1", b"v2"), (b"v2", b"v3"), (b"v3", b"v4")] {
        host.advance(1000);
        record(&host, &TEST_OPERATOR, &landing(Some(before), Some(after)), 3).unwrap();
    }
    let kept = versions(&host, Scope::User, "", "deploy");
    assert_eq!(kept.iter().map(|v| v.version).collect::<Vec<_>>(), [2, 3, 4], "the newest three");
    assert_eq!(before(&host, "", &kept[0]).unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(before(&host, "", &kept[2]).unwrap().as_deref(), Some(&b"v3"[..]));
    assert_eq!((kept[2].actor.as_str(), kept[2].before_size, kept[2].after_size), ("operator", Some(2), Some(2)));
    assert!(host.file(&Root::State, "history/user/deploy/1.json").is_none(), "pruned with its bytes");
    assert!(host.file(&Root::State, "history/user/deploy/1.before").is_none());
}

#[test]
fn nothing_is_kept_for_a_write_that_changes_nothing_a_project_without_a_folder_or_keep_zero() {
    let host = FakeHost::new(1_767_225_600_000);
    let before = host.snapshot();
    record(&host, &TEST_OPERATOR, &landing(Some(b"same"), Some(b"same")), 20).unwrap();
    record(&host, &TEST_OPERATOR, &landing(Some(b"a"), Some(b"b")), 0).unwrap();
    let project = Landing { scope: Scope::Project, ..landing(Some(b"a"), Some(b"b")) };
    record(&host, &TEST_OPERATOR, &project, 20).unwrap();
    assert_eq!(host.snapshot(), before);
    // With a folder, a project's history is its own, shared by sessions in that folder.
    let author = Author { cwd: "/work/project", ..TEST_OPERATOR };
    record(&host, &author, &project, 20).unwrap();
    assert_eq!(versions(&host, Scope::Project, "/work/project", "deploy").len(), 1);
    assert!(versions(&host, Scope::Project, "/elsewhere", "deploy").is_empty());
    assert!(versions(&host, Scope::User, "", "deploy").is_empty());
}

#[test]
fn kept_bytes_that_were_changed_are_refused() {
    let host = FakeHost::new(1_767_225_600_000);
    record(&host, &TEST_OPERATOR, &landing(Some(b"old"), Some(b"new")), 20).unwrap();
    host.write(&Root::State, "history/user/deploy/1.before", b"forged", WriteMode::Truncate).unwrap();
    let kept = versions(&host, Scope::User, "", "deploy");
    assert_eq!(before(&host, "", &kept[0]).unwrap_err().code, "drift");
}

#[test]
fn replaced_bytes_holding_a_credential_are_kept_redacted() {
    let host = FakeHost::new(1_767_225_600_000);
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let pasted = format!("deploy with {key}\n");
    record(&host, &TEST_OPERATOR, &landing(Some(pasted.as_bytes()), Some(b"deploy with $GITHUB_TOKEN\n")), 20).unwrap();
    let kept = versions(&host, Scope::User, "", "deploy");
    assert!(kept[0].redacted);
    let bytes = before(&host, "", &kept[0]).unwrap().unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(!text.contains(&key) && text.contains("[redacted: github-pat]"), "{text}");
    assert!(host.file(&Root::State, "history/user/deploy/1.before").is_none(), "not where older code restores from");
}

#[test]
fn a_record_whose_write_failed_is_taken_back() {
    let host = FakeHost::new(1_767_225_600_000);
    let failed: Result<(), ToolError> = around(&host, &TEST_OPERATOR, &landing(Some(b"a"), Some(b"b")), 20, || {
        assert_eq!(versions(&host, Scope::User, "", "deploy").len(), 1, "recorded before the write");
        Err(ToolError::new("io", "injected", "retry"))
    });
    assert_eq!(failed.unwrap_err().message, "injected");
    assert!(versions(&host, Scope::User, "", "deploy").is_empty());
    assert!(host.file(&Root::State, "history/user/deploy/1.before").is_none());
}

mod revert_refusals {
    use crate::api::{CallContext, Origin};
    use crate::fake::FakeHost;
    use crate::host::{Host, Root, WriteMode};
    use crate::plugin::Plugin;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn ctx() -> CallContext {
        CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
    }

    fn setup(body: &str) -> Plugin<FakeHost> {
        let host = FakeHost::new(1_767_225_600_000);
        let text = format!(
            "---\nname: deploy\ndescription: Ships it. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n---\n{body}"
        );
        host.write(&Root::UserSkills, "deploy/SKILL.md", text.as_bytes(), WriteMode::CreateNew).unwrap();
        let mut plugin = Plugin::new(host);
        plugin.init("{}", &["tools".into()]).unwrap();
        plugin.call_tool(&ctx(), "skill_manage", r#"{"action":"view","name":"deploy"}"#).unwrap();
        plugin
    }

    #[test]
    fn a_version_kept_redacted_is_not_restored_and_nothing_changes() {
        let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
        // Pasted into the file by hand; the agent's patch takes it out.
        let mut plugin = setup(&format!("push with {key}\n"));
        let patch =
            serde_json::json!({"action": "patch", "name": "deploy", "old_string": key, "new_string": "$GITHUB_TOKEN"});
        plugin.call_tool(&ctx(), "skill_manage", &patch.to_string()).unwrap();
        let before = plugin.host().snapshot();
        let refused = plugin.run_command(&ctx(), "revert deploy").unwrap_err();
        assert!(refused.contains("kept redacted"), "{refused}");
        assert_eq!(plugin.host().snapshot(), before);
    }

    #[test]
    fn a_version_that_was_not_utf8_is_not_restored_and_nothing_changes() {
        let mut plugin = setup("steps\n");
        plugin
            .host()
            .write(&Root::UserSkills, "deploy/references/notes.md", b"caf\xe9\n", WriteMode::CreateNew)
            .unwrap();
        let write = r#"{"action":"write_file","name":"deploy","file_path":"references/notes.md","content":"cafe\n"}"#;
        plugin.call_tool(&ctx(), "skill_manage", write).unwrap();
        let before = plugin.host().snapshot();
        let refused = plugin.run_command(&ctx(), "revert deploy").unwrap_err();
        assert!(refused.contains("not UTF-8"), "{refused}");
        assert_eq!(plugin.host().snapshot(), before);
    }
}
