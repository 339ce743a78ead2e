//! Races of `skill_manage` with other processes, on the fake host through the whole plugin: a
//! change lands on the skill it was based on or not at all, an archive that outlives an
//! unrenewed lock renews it, and a withdrawn archive leaves the shared `archive/` folder be.

use super::*;
use crate::api::{CallContext, Origin};
use crate::fake::{FakeHost, Node};
use crate::host::{Root, WriteMode};
use crate::library::staging::archive::archive_location;
use crate::library::storage::store::{Layout, Location, Scope, skill_lock};
use crate::plugin::Plugin;
use crate::state_file;
use crate::state_file::{STALE_LOCK_MS, try_lock};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const START: u64 = 1_767_225_600_000;

fn ours(name: &str) -> Vec<u8> {
    format!(
        "---\nname: {name}\ndescription: Ships the app to staging. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n  version: \"1\"\n---\n1. build\n2. push\n"
    )
    .into_bytes()
}

/// The package `deploy` (SKILL.md and `references/`), viewed by the agent of session s1.
fn setup(references: usize) -> Plugin<FakeHost> {
    let host = FakeHost::new(START);
    host.write(&Root::UserSkills, "deploy/SKILL.md", &ours("deploy"), WriteMode::CreateNew).unwrap();
    for n in 0..references {
        let path = format!("deploy/references/r{n}.md");
        host.write(&Root::UserSkills, &path, b"notes\n", WriteMode::CreateNew).unwrap();
    }
    host.advance(crate::library::storage::list_cache::RACY_MS);
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into()]).unwrap();
    call(&mut plugin, r#"{"action":"view","name":"deploy"}"#).unwrap();
    plugin
}

fn call(plugin: &mut Plugin<FakeHost>, args: &str) -> Result<Value, Value> {
    let ctx =
        CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() };
    plugin.host().advance(1);
    match plugin.call_tool(&ctx, "skill_manage", args) {
        Ok(out) => Ok(serde_json::from_str(&out).unwrap()),
        Err(err) => Err(serde_json::from_str(&err).unwrap()),
    }
}

type Disk = BTreeMap<Root, BTreeMap<String, Node>>;

fn deploy() -> Location {
    Location { scope: Scope::User, layout: Layout::Package, root: Root::UserSkills, name: "deploy".into() }
}

/// Another process archives `deploy` just before this call takes the skill's lock to write (after
/// its guards read the skill); the disk as that process left it is kept in `after`.
fn archive_meanwhile(host: &FakeHost) -> Rc<RefCell<Option<Disk>>> {
    let after = Rc::new(RefCell::new(None));
    let seen = after.clone();
    host.interleave(crate::state_file::LOCK_DIR, move |host| {
        state_file::with_lock(host, &skill_lock("deploy"), |lock| {
            archive_location(host, "s2", &deploy(), "archived by another process", lock)
        })
        .unwrap();
        *seen.borrow_mut() = Some(host.snapshot());
    });
    after
}

fn archived(host: &FakeHost) -> Vec<String> {
    host.list_dir(&Root::State, "archive").unwrap().into_iter().map(|(n, _)| n).collect()
}

#[test]
fn a_file_written_to_a_skill_archived_meanwhile_is_refused_and_the_folder_not_recreated() {
    let mut plugin = setup(0);
    let after = archive_meanwhile(plugin.host());
    let refused = call(
        &mut plugin,
        r#"{"action":"write_file","name":"deploy","file_path":"references/new.md","content":"more notes\n"}"#,
    )
    .unwrap_err();
    assert_eq!(refused["code"], "conflict", "{refused}");
    assert_eq!(refused["details"]["missing"], "deploy/SKILL.md", "{refused}");
    let host = plugin.host();
    assert_eq!(host.snapshot(), after.borrow().clone().expect("the archive ran between the read and the write"));
    assert!(host.stat(&Root::UserSkills, "deploy").is_err(), "no orphan folder `deploy/`");
    assert_eq!(archived(host).len(), 1);
}

#[test]
fn a_change_to_a_file_the_skill_had_when_it_was_archived_meanwhile_is_refused() {
    // Both were refused before the SKILL.md check: the file they were based on is gone, so the
    // compare-and-swap of the file itself fails.
    for args in [
        r#"{"action":"patch","name":"deploy","old_string":"2. push","new_string":"2. push the tag"}"#,
        r#"{"action":"edit","name":"deploy","content":"---\nname: deploy\ndescription: Ships the app. Use when deploying.\n---\nbody\n"}"#,
        r#"{"action":"remove_file","name":"deploy","file_path":"references/r0.md"}"#,
        r#"{"action":"write_file","name":"deploy","file_path":"references/r0.md","content":"new notes\n"}"#,
    ] {
        let mut plugin = setup(1);
        let after = archive_meanwhile(plugin.host());
        let refused = call(&mut plugin, args).unwrap_err();
        assert_eq!(refused["code"], "conflict", "{args}: {refused}");
        let host = plugin.host();
        assert_eq!(host.snapshot(), after.borrow().clone().expect("archived meanwhile"), "{args}");
        assert!(host.stat(&Root::UserSkills, "deploy").is_err(), "{args}");
    }
}

/// Makes each copy into `archive/` take `ms` on the clock, `copies` times; `probe` runs as
/// another process at the last one.
fn slow_copies(host: &FakeHost, copies: u32, ms: u64, probe: Rc<dyn Fn(&FakeHost)>) {
    host.interleave("archive/", move |host| {
        host.advance(ms);
        if copies > 1 {
            slow_copies(host, copies - 1, ms, probe);
        } else {
            probe(host);
        }
    });
}

#[test]
fn an_archive_that_takes_longer_than_the_stale_age_keeps_its_lock() {
    let mut plugin = setup(5);
    // Six copies of 3 s each: 18 s under the skill's lock.
    let broken = Rc::new(Cell::new(false));
    let seen = broken.clone();
    let probe = Rc::new(move |host: &FakeHost| seen.set(try_lock(host, &skill_lock("deploy")).is_some()));
    slow_copies(plugin.host(), 6, STALE_LOCK_MS * 3 / 10, probe);
    let out = call(&mut plugin, r#"{"action":"archive","name":"deploy"}"#).unwrap();
    assert_eq!(out["status"], "archived");
    let host = plugin.host();
    assert!(!broken.get(), "another process broke the lock of an archive at work");
    assert!(!host.logged("breaking the stale lock"));
    assert!(host.stat(&Root::UserSkills, "deploy").is_err());
    assert!(host.list_dir(&Root::State, crate::state_file::LOCK_DIR).is_err(), "the lock is released");
}

#[test]
fn an_archive_whose_lock_was_broken_leaves_the_skill_where_it_is() {
    let plugin = setup(2);
    let host = plugin.host();
    let before = host.snapshot();
    // One copy outlasts the stale age; another process breaks the lock and takes it.
    let taken = Rc::new(RefCell::new(None));
    let holder = taken.clone();
    let probe = Rc::new(move |host: &FakeHost| *holder.borrow_mut() = try_lock(host, &skill_lock("deploy")));
    slow_copies(host, 1, STALE_LOCK_MS + 1, probe);
    let mut lock = state_file::lock(host, &skill_lock("deploy")).unwrap();
    let refused = archive_location(host, "s1", &deploy(), "archived", &mut lock).unwrap_err();
    assert_eq!(refused.code, "conflict");
    assert!(taken.borrow().is_some(), "the other process took the lock");
    assert!(host.logged("could not renew the lock"));
    lock.release(host);
    taken.take().unwrap().release(host);
    // `archive/` itself stays: it is shared with other processes' archives (see below).
    let mut expected = before;
    expected.entry(Root::State).or_default().insert("archive".into(), Node::Dir);
    assert_eq!(host.snapshot(), expected, "the skill is whole, the archive copy withdrawn");
}

/// An archive whose copy runs past cleanup's one-minute grace (its lock renewed per file) meets
/// another process's init: before, that cleanup swept `archive/.partial-…` (the files copied so
/// far, SKILL.md first), the rest recreated the folder, it was published, and the live skill
/// was removed: the skill was lost. Debris whose skill's lock is held is now left alone.
#[test]
fn an_archive_longer_than_the_grace_keeps_its_files_from_another_processs_cleanup() {
    let mut plugin = setup(24);
    let probe: Rc<dyn Fn(&FakeHost)> = Rc::new(|host: &FakeHost| {
        crate::library::storage::cleanup::cleanup(host, &[Root::UserSkills, Root::State], false);
    });
    // 3 s per copy: before the 22nd, 66 s have passed.
    slow_copies(plugin.host(), 22, 3_000, probe);
    let out = call(&mut plugin, r#"{"action":"archive","name":"deploy"}"#).unwrap();
    let host = plugin.host();
    let folder = out["archive"].as_str().unwrap().to_string();
    let files = Store::new(host, "").package_files(&Root::State, &folder).unwrap_or_default();
    let live = host.stat(&Root::UserSkills, "deploy/SKILL.md").is_ok();
    assert!(
        live || files.iter().any(|f| f == "SKILL.md"),
        "answered {out}; the skill left its root and its archive holds only {files:?}"
    );
}

/// Another process's archive of `other` fails (its copy, or the move of its skill) and withdraws
/// while this archive's first copy has just made `archive/` and not yet written into it. Before,
/// the withdrawal removed the then empty `archive/` under that copy, which failed with
/// `NotFound`, and the archive with it. `archive/` is shared, so a withdrawal leaves it.
#[test]
fn a_withdrawn_archive_leaves_the_archive_folder_to_another_processs_first_copy() {
    let other = Location { name: "other".into(), ..deploy() };
    for fault in ["copy", "move"] {
        let plugin = setup(1);
        let host = plugin.host();
        host.write(&Root::UserSkills, "other/SKILL.md", &ours("other"), WriteMode::CreateNew).unwrap();
        let before = host.snapshot();
        let withdrawn = Rc::new(RefCell::new(None));
        let seen = withdrawn.clone();
        let theirs = other.clone();
        host.interleave_inside_write("archive", move |host| {
            let mut lock = state_file::lock(host, &skill_lock("other")).unwrap();
            match fault {
                "copy" => host.fail_write_at.set(Some(host.writes_so_far() + 1)),
                // The first rename publishes the copy; the second moves the skill away.
                _ => host.fail_rename_at.set(Some(host.renames_so_far() + 2)),
            }
            *seen.borrow_mut() = archive_location(host, "s2", &theirs, "archived by another process", &mut lock).err();
            lock.release(host);
        });
        let mut lock = state_file::lock(host, &skill_lock("deploy")).unwrap();
        let archived = archive_location(host, "s1", &deploy(), "archived", &mut lock);
        lock.release(host);

        let refused = withdrawn.borrow_mut().take();
        assert!(refused.is_some_and(|e| e.code == "io"), "{fault}: the other archive ran and failed");
        let folder = archived.unwrap_or_else(|err| panic!("{fault}: the archive failed: {err:?}"));
        assert_eq!(folder, format!("archive/deploy-{}", host.now_ms()), "{fault}");
        let note_path = format!("{folder}/archived.json");
        let note = host.file(&Root::State, &note_path).unwrap_or_default();
        let fields: Value = serde_json::from_slice(&note).unwrap_or_default();
        assert_eq!((fields["name"].as_str(), fields["session"].as_str()), (Some("deploy"), Some("s1")), "{fault}");
        assert_eq!(host.snapshot(), moved_to_archive(before, &folder, note, host.now_ms()), "{fault}");
    }
}

/// `disk` after `deploy` moved into the archive `folder` at `now`, with `note` as its
/// `archived.json`: every other entry as it was.
fn moved_to_archive(mut disk: Disk, folder: &str, note: Vec<u8>, now: u64) -> Disk {
    let user = disk.entry(Root::UserSkills).or_default();
    let skill: Vec<(String, Node)> = user.extract_if(.., |p, _| p == "deploy" || p.starts_with("deploy/")).collect();
    let state = disk.entry(Root::State).or_default();
    state.insert("archive".into(), Node::Dir);
    state.insert(folder.into(), Node::Dir);
    for (path, node) in skill {
        let Some(inside) = path.strip_prefix("deploy/") else { continue };
        let copy = match node {
            Node::File { data, .. } => Node::File { data, modified_ms: now },
            other => other,
        };
        state.insert(format!("{folder}/{inside}"), copy);
    }
    state.insert(format!("{folder}/archived.json"), Node::File { data: note, modified_ms: now });
    disk
}
