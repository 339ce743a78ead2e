//! Restore and archive each publish with one rename, and rename(2) on a real host replaces no
//! folder that holds anything: an entry already holding the name (a folder a person made by
//! hand, a leftover archive folder) makes the move fail, and nothing may be lost or half moved.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn hidden_entries(host: &FakeHost, root: &Root, folder: &str) -> Vec<String> {
    let entries = host.list_dir(root, folder).unwrap_or_default();
    entries.into_iter().map(|(n, _)| n).filter(|n| n.starts_with('.')).collect()
}

/// A person made `used-once/` by hand (notes, no SKILL.md) while the skill was archived: before,
/// the fake host merged the restored files into it, and a real host failed with a bare
/// "i/o error: folder not empty".
#[test]
fn a_restore_onto_a_hand_made_folder_is_refused_and_leaves_it_alone() {
    let (host, mut cache) = archived_package();
    host.write(&Root::UserSkills, "used-once/notes.txt", b"mine\n", WriteMode::CreateNew).unwrap();
    host.write(&Root::UserSkills, "used-once/drafts/idea.md", b"idea\n", WriteMode::CreateNew).unwrap();
    let archived = crate::library::curation::curator::restorable(&host, "used-once").unwrap();
    let before = host.snapshot();

    let err = restore_locked(&host, "used-once", &mut cache).unwrap_err();
    assert!(err.contains("a folder `used-once/` that is not a skill"), "names what is in the way: {err}");
    assert!(err.contains("move or remove it"), "says what to do: {err}");
    assert!(err.contains("/skills restore used-once"), "says how to retry: {err}");
    assert!(err.contains(&format!("stays archived in archive/{archived}")), "{err}");
    assert!(!err.contains("i/o error"), "not a raw filesystem error: {err}");

    assert_eq!(host.snapshot(), before, "nothing changed anywhere");
    assert_eq!(host.file(&Root::UserSkills, "used-once/notes.txt").as_deref(), Some(&b"mine\n"[..]));
    assert_eq!(host.file(&Root::UserSkills, "used-once/drafts/idea.md").as_deref(), Some(&b"idea\n"[..]));
    assert!(host.file(&Root::UserSkills, "used-once/SKILL.md").is_none(), "nothing merged into it");
    assert!(host.file(&Root::State, &format!("archive/{archived}/SKILL.md")).is_some(), "still archived");
    assert!(hidden_entries(&host, &Root::UserSkills, "").is_empty(), "no .used-once.restoring-… debris");
    assert!(hidden_entries(&host, &Root::State, "archive").is_empty(), "the archive copy was not retired");

    // Once the person moved their folder away, the restore works.
    host.remove_file(&Root::UserSkills, "used-once/drafts/idea.md").unwrap();
    host.remove_dir(&Root::UserSkills, "used-once/drafts").unwrap();
    host.remove_file(&Root::UserSkills, "used-once/notes.txt").unwrap();
    host.remove_dir(&Root::UserSkills, "used-once").unwrap();
    assert_eq!(restore_locked(&host, "used-once", &mut cache).as_deref(), Ok(archived.as_str()));
    assert_eq!(status(&host, "used-once").as_deref(), Some("active"));
    assert_eq!(host.file(&Root::UserSkills, "used-once/references/notes.md").as_deref(), Some(&b"notes\n"[..]));
    let left = host.list_dir(&Root::State, "archive").unwrap();
    assert!(!left.iter().any(|(n, _)| n.starts_with("used-once")), "the restored copy left the archive: {left:?}");
}

/// An empty folder holding the name is replaced, as rename(2) replaces it.
#[test]
fn a_restore_onto_an_empty_folder_replaces_it() {
    let (host, mut cache) = archived_package();
    host.create_dir_all(&Root::UserSkills, "used-once").unwrap();
    restore_locked(&host, "used-once", &mut cache).unwrap();
    assert_eq!(status(&host, "used-once").as_deref(), Some("active"));
    assert!(hidden_entries(&host, &Root::UserSkills, "").is_empty());
}

/// Archiving publishes `archive/NAME-<ms>` with one rename; a folder already there (left by a
/// dead process, made by hand) fails it: the skill stays live and whole, the folder untouched.
/// Before, the fake host merged the copy into that folder and took the skill away.
#[test]
fn an_archive_that_meets_a_leftover_archive_folder_leaves_the_skill_where_it_is() {
    let (host, _ledger, _cache, _config) = setup();
    let leftover = format!("archive/used-once-{}", host.now_ms());
    host.write(&Root::State, &format!("{leftover}/SKILL.md"), b"older\n", WriteMode::CreateNew).unwrap();
    let skill_before = host.file(&Root::UserSkills, "used-once/SKILL.md");
    let location = crate::library::storage::store::Location {
        scope: Scope::User,
        layout: Layout::Package,
        root: Root::UserSkills,
        name: "used-once".into(),
    };
    let mut lock = crate::state_file::lock(&host, &skill_lock("used-once")).unwrap();
    let archived = archive_location(&host, "", &location, "test", &mut lock);
    lock.release(&host);
    assert!(archived.is_err(), "{archived:?}");
    assert_eq!(host.file(&Root::UserSkills, "used-once/SKILL.md"), skill_before, "the skill stays");
    assert_eq!(host.file(&Root::State, &format!("{leftover}/SKILL.md")).as_deref(), Some(&b"older\n"[..]));
    assert!(host.file(&Root::State, &format!("{leftover}/archived.json")).is_none(), "nothing merged into it");
    assert!(hidden_entries(&host, &Root::State, "archive").is_empty(), "no .partial copy left");
    assert!(hidden_entries(&host, &Root::UserSkills, "").is_empty());
}
