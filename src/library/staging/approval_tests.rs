//! Tests for staged writes on the fake host, and the diff checked by real `git apply` and `patch`.

use super::*;
use crate::digest::unified_diff;
use crate::fake::{FakeHost, Node};
use crate::host::WriteMode;
use crate::library::staging::pending::*;
use crate::time;
use std::cell::RefCell;
use std::rc::Rc;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn change<'a>(path: &'a str, old: Option<&'a [u8]>, new: Option<&'a [u8]>) -> Change<'a> {
    Change {
        operation: "edit",
        skill: "pdf",
        scope: Scope::User,
        session: "s1",
        agent: "main",
        path,
        old,
        new,
        reason: "why",
        held: &[],
        supersedes: &[],
        cwd: "",
    }
}

/// A SKILL.md this plugin wrote, with `body`: approval re-checks ownership.
fn ours(body: &str) -> Vec<u8> {
    format!("---\nname: pdf\ndescription: Tables from PDFs. Use when a PDF is given.\nmetadata:\n  authored-by: self-evolve\n---\n{body}\n")
        .into_bytes()
}

#[test]
fn stage_then_approve_writes_the_new_bytes_and_clears_the_stage() {
    let host = FakeHost::new(1_000);
    let (old, new) = (ours("old"), ours("new"));
    host.write(&Root::UserSkills, "pdf/SKILL.md", &old, WriteMode::CreateNew).unwrap();
    let m = stage(&host, &change("pdf/SKILL.md", Some(&old), Some(&new))).unwrap();
    assert_eq!(list(&host), vec![m.clone()]);
    assert_eq!(host.file(&Root::UserSkills, "pdf/SKILL.md").unwrap(), old, "staging does not touch the target");
    assert!(diff(&host, &m.id).unwrap().contains("-old\n+new\n"));
    approve(&host, &m.id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap();
    assert_eq!(host.file(&Root::UserSkills, "pdf/SKILL.md").unwrap(), new);
    assert!(list(&host).is_empty());
    assert!(host.list_dir(&Root::State, DIR).unwrap().is_empty());
}

#[test]
fn approve_refuses_on_drift_and_keeps_the_staged_write() {
    let host = FakeHost::new(1_000);
    host.write(&Root::UserSkills, "pdf/SKILL.md", b"old\n", WriteMode::CreateNew).unwrap();
    let m = stage(&host, &change("pdf/SKILL.md", Some(b"old\n"), Some(b"new\n"))).unwrap();
    host.write(&Root::UserSkills, "pdf/SKILL.md", b"edited by hand\n", WriteMode::Truncate).unwrap();
    let before = host.snapshot();
    let err = approve(&host, &m.id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap_err();
    assert_eq!(err.code, "drift");
    assert_eq!(host.snapshot(), before, "nothing changed");
    assert_eq!(list(&host).len(), 1);
    // A create whose target appeared meanwhile is drift too.
    let c = stage(&host, &change("new/SKILL.md", None, Some(b"x\n"))).unwrap();
    host.write(&Root::UserSkills, "new/SKILL.md", b"someone else\n", WriteMode::CreateNew).unwrap();
    assert_eq!(approve(&host, &c.id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap_err().code, "drift");
}

#[test]
fn reject_discards_and_unknown_or_hostile_ids_are_not_found() {
    let host = FakeHost::new(1_000);
    let m = stage(&host, &change("a/SKILL.md", None, Some(b"x\n"))).unwrap();
    reject(&host, &m.id).unwrap();
    assert!(list(&host).is_empty());
    for id in ["nope", "../usage.json", "a/b", ""] {
        assert_eq!(
            approve(&host, id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap_err().code,
            "not-found",
            "{id}"
        );
    }
}

#[test]
fn prune_removes_only_old_staged_writes() {
    let host = FakeHost::new(1_000);
    let old = stage(&host, &change("a/SKILL.md", None, Some(b"1\n"))).unwrap();
    host.advance(10 * time::MS_PER_DAY);
    let fresh = stage(&host, &change("b/SKILL.md", None, Some(b"2\n"))).unwrap();
    host.advance(5 * time::MS_PER_DAY);
    assert_eq!(prune(&host, 14), vec![old.id]);
    assert_eq!(list(&host), vec![fresh]);
}

#[test]
fn a_failed_stage_leaves_nothing() {
    let host = FakeHost::new(1_000);
    host.fail_write_at.set(Some(2));
    let before = host.snapshot();
    assert!(stage(&host, &change("a/SKILL.md", None, Some(b"1\n"))).is_err());
    // Nothing of its own; `pending/` itself stays: it is shared with other processes' stages.
    let mut expected = before;
    expected.entry(Root::State).or_default().insert(DIR.into(), Node::Dir);
    assert_eq!(host.snapshot(), expected);
}

/// Another process's stage fails (on its first write, or on its second) and tidies up while this
/// stage's first write has just made `pending/` and not yet written into it. Before, the failed
/// stage removed the then empty `pending/` under that write, which failed with `NotFound`, and
/// this stage with it. `pending/` is shared, so a failed stage leaves it.
#[test]
fn a_failed_stage_leaves_the_pending_folder_to_another_processs_first_write() {
    let ours: &[u8] = b"ours\n";
    for failing in [1, 2] {
        let host = FakeHost::new(1_000);
        let before = host.snapshot();
        let failed = Rc::new(RefCell::new(None));
        let seen = failed.clone();
        host.interleave_inside_write(DIR, move |host| {
            host.fail_write_at.set(Some(host.writes_so_far() + failing));
            let theirs = Change { skill: "other", ..change("other/SKILL.md", None, Some(b"theirs\n")) };
            *seen.borrow_mut() = stage(host, &theirs).err();
        });
        let staged = stage(&host, &change("pdf/SKILL.md", None, Some(ours)));

        let refused = failed.borrow_mut().take();
        assert!(refused.is_some_and(|e| e.code == "io"), "{failing}: the other stage ran and failed");
        let m = staged.unwrap_or_else(|err| panic!("{failing}: the stage failed: {err:?}"));
        let mut expected = before;
        let state = expected.entry(Root::State).or_default();
        let dir = format!("{DIR}/{}", m.id);
        let file = |data: Vec<u8>| Node::File { data, modified_ms: 1_000 };
        state.insert(DIR.into(), Node::Dir);
        state.insert(dir.clone(), Node::Dir);
        state.insert(format!("{dir}/change.diff"), file(unified_diff("pdf/SKILL.md", None, Some(ours)).into_bytes()));
        state.insert(format!("{dir}/new"), file(ours.to_vec()));
        state.insert(format!("{dir}/manifest.json"), file(serde_json::to_vec_pretty(&m).unwrap()));
        assert_eq!(host.snapshot(), expected, "{failing}: only this stage's entry, whole");
        assert_eq!(list(&host), vec![m], "{failing}");
    }
}

/// A target path, its bytes before, and after (None: absent).
#[cfg(not(target_arch = "wasm32"))]
type Case<'a> = (&'a str, Option<&'a [u8]>, Option<&'a [u8]>);

/// The diff applies with the real tools, for edits, creations and removals (native only: it runs
/// `git` and `patch` in a temporary folder).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn diffs_apply_with_git_apply_and_patch() {
    let have =
        |tool: &str| std::process::Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !have("git") {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let cases: [Case; 4] = [
        ("pdf/SKILL.md", Some(b"a\nb\nc\n"), Some(b"a\nB\nc\nd\n")),
        ("pdf/SKILL.md", Some(b"no newline"), Some(b"no newline, still\n")),
        ("fresh/SKILL.md", None, Some(b"---\nname: fresh\n---\nbody\n")),
        ("pdf/references/old.md", Some(b"gone\n"), None),
    ];
    for (path, old, new) in cases {
        let diff = unified_diff(path, old, new);
        for tool in ["git", "patch"] {
            if tool == "patch" && !have("patch") {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            if let Some(old) = old {
                let file = dir.path().join(path);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, old).unwrap();
            }
            std::fs::write(dir.path().join("change.diff"), &diff).unwrap();
            let args: &[&str] = if tool == "git" { &["apply", "change.diff"] } else { &["-p1", "-i", "change.diff"] };
            let out = std::process::Command::new(tool).args(args).current_dir(dir.path()).output().unwrap();
            assert!(out.status.success(), "{tool} on {path}: {}\n{diff}", String::from_utf8_lossy(&out.stderr));
            match new {
                Some(new) => assert_eq!(std::fs::read(dir.path().join(path)).unwrap(), new, "{tool} {path}"),
                None => assert!(!dir.path().join(path).exists(), "{tool} {path}"),
            }
        }
    }
}

/// A staged entry whose manifest never got written (a process killed between its files and its
/// manifest) is removed by the next prune once it is past the grace; a fresh one, and every
/// entry with a manifest, are left alone.
#[test]
fn an_entry_left_without_its_manifest_is_removed_after_a_grace() {
    let host = FakeHost::new(1_000_000);
    let kept = stage(&host, &change("pdf/SKILL.md", None, Some(b"kept\n"))).unwrap();
    for file in ["change.diff", "new"] {
        host.create_dir_all(&Root::State, "pending/orphan-1").unwrap();
        host.write(&Root::State, &format!("pending/orphan-1/{file}"), b"token = held", WriteMode::CreateNew).unwrap();
    }
    prune(&host, 30);
    assert!(host.file(&Root::State, "pending/orphan-1/new").is_some(), "young: maybe still being written");
    host.advance(ORPHAN_GRACE_MS + 1);
    prune(&host, 30);
    assert!(host.file(&Root::State, "pending/orphan-1/new").is_none(), "removed past the grace");
    assert!(host.list_dir(&Root::State, "pending").unwrap().iter().all(|(id, _)| *id == kept.id));
    assert!(load(&host, &kept.id).is_ok(), "an entry with its manifest stays");
}
