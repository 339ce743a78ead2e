//! The fake host's rename answers as rename(2) does on the real hosts (Rust `host-test` caps,
//! Node, Python: each maps errno alike), so tests see what the plugin meets there.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const R: Root = Root::UserSkills;

fn host_with(files: &[&str], dirs: &[&str]) -> FakeHost {
    let host = FakeHost::new(1);
    for file in files {
        host.write(&R, file, file.as_bytes(), WriteMode::CreateNew).unwrap();
    }
    for dir in dirs {
        host.create_dir_all(&R, dir).unwrap();
    }
    host
}

#[test]
fn a_folder_onto_a_folder_that_holds_anything_fails_and_merges_nothing() {
    let host = host_with(&["a/SKILL.md", "b/notes.txt"], &[]);
    let before = host.snapshot();
    assert_eq!(host.rename(&R, "a", "b"), Err(FsError::Io("folder not empty".into())));
    assert_eq!(host.snapshot(), before);
    // A folder holding only a folder holds something too.
    let host = host_with(&["a/SKILL.md"], &["b/empty"]);
    assert_eq!(host.rename(&R, "a", "b"), Err(FsError::Io("folder not empty".into())));
}

#[test]
fn a_folder_onto_an_empty_folder_replaces_it() {
    let host = host_with(&["a/SKILL.md", "a/x/y.md"], &["b"]);
    host.rename(&R, "a", "b").unwrap();
    assert_eq!(host.file(&R, "b/SKILL.md").as_deref(), Some(&b"a/SKILL.md"[..]));
    assert_eq!(host.file(&R, "b/x/y.md").as_deref(), Some(&b"a/x/y.md"[..]));
    assert_eq!(host.list_dir(&R, "a"), Err(FsError::NotFound));
}

#[test]
fn a_file_and_a_folder_never_replace_each_other() {
    let host = host_with(&["f.md", "d/SKILL.md"], &["empty"]);
    let before = host.snapshot();
    assert_eq!(host.rename(&R, "f.md", "empty"), Err(FsError::WrongKind), "EISDIR");
    assert_eq!(host.rename(&R, "f.md", "d"), Err(FsError::WrongKind), "EISDIR");
    assert_eq!(host.rename(&R, "d", "f.md"), Err(FsError::WrongKind), "ENOTDIR");
    assert_eq!(host.rename(&R, "empty", "f.md"), Err(FsError::WrongKind), "ENOTDIR");
    assert_eq!(host.snapshot(), before);
}

#[test]
fn a_file_replaces_a_file_and_an_entry_onto_itself_is_left_alone() {
    let host = host_with(&["f.md", "g.md", "d/SKILL.md"], &[]);
    host.rename(&R, "f.md", "g.md").unwrap();
    assert_eq!(host.file(&R, "g.md").as_deref(), Some(&b"f.md"[..]));
    assert_eq!(host.file(&R, "f.md"), None);
    let before = host.snapshot();
    host.rename(&R, "d", "d").unwrap();
    host.rename(&R, "g.md", "g.md").unwrap();
    assert_eq!(host.snapshot(), before);
    assert!(host.rename(&R, "d", "d/inner").is_err(), "EINVAL: a folder into itself");
    assert_eq!(host.snapshot(), before);
    assert_eq!(host.rename(&R, "missing", "d"), Err(FsError::NotFound));
}
