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
