//! The reader itself: what counts as an import, so the workspace test cannot pass by seeing none.

use layers::Graph;
use std::path::{Path, PathBuf};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn circles(files: &[(&str, &str)]) -> Vec<Vec<PathBuf>> {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    Graph::read(dir.path()).unwrap().circles()
}

#[test]
fn two_files_that_name_each_other_are_a_circle() {
    let found = circles(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a.rs", "use crate::b::Thing;\n"),
        ("b.rs", "pub fn f() { crate::a::g() }\n"),
    ]);
    assert_eq!(found, vec![vec![PathBuf::from("a.rs"), PathBuf::from("b.rs")]]);
}

#[test]
fn a_folder_face_and_its_child_that_use_each_other_are_a_circle() {
    let found = circles(&[
        ("lib.rs", "pub mod live;\n"),
        ("live/mod.rs", "pub mod provider;\npub struct Live;\nfn f() { provider::start() }\n"),
        ("live/provider.rs", "use super::Live;\npub fn start() {}\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn braces_self_and_super_are_followed() {
    let found = circles(&[
        ("lib.rs", "pub mod x;\n"),
        ("x/mod.rs", "pub mod a;\npub mod b;\n"),
        ("x/a.rs", "use crate::{x::b::{self, Other as O}, unrelated};\n"),
        ("x/b.rs", "use super::super::x::a;\n"),
    ]);
    assert_eq!(found, vec![vec![PathBuf::from("x/a.rs"), PathBuf::from("x/b.rs")]]);
}

#[test]
fn test_code_comments_and_strings_are_not_imports() {
    let found = circles(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a.rs", "use crate::b::Thing;\n"),
        (
            "b.rs",
            "// crate::a::g() in a comment\nconst S: &str = \"crate::a::g\";\n#[cfg(all(test, unix))]\nmod tests {\n    use crate::a::g;\n}\n",
        ),
        ("b_tests.rs", "use crate::a::g;\n"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

/// Each body names `crate::a::g` once after something that once hid it from the reader; `a.rs`
/// imports `b.rs`, so each is a circle the reader must see.
#[test]
fn literals_never_hide_the_code_after_them() {
    let bodies = [
        "pub fn f() { let _ = format!(\"http://{}\", crate::a::g()); }\n",
        "pub fn f(c: char) { if c == '\"' { crate::a::g() } }\n",
        "pub fn f() { let _ = r#\"a\"b\"#; crate::a::g() }\n",
        "pub fn f() { let _ = (\"one\\\n  two\", crate::a::g()); }\n",
        "pub fn f<'a>(x: &'a str) -> &'a str { crate::a::g(); x }\n",
        "/* a /* nested */ comment */ pub fn f() { crate::a::g() }\n",
    ];
    for body in bodies {
        let found = circles(&[("lib.rs", "pub mod a;\npub mod b;\n"), ("a.rs", "use crate::b::f;\n"), ("b.rs", body)]);
        assert_eq!(found.len(), 1, "not seen in: {body}");
    }
}

#[test]
fn any_visibility_of_a_child_module_and_an_alias_of_a_folder_are_followed() {
    let found = circles(&[
        ("lib.rs", "pub mod x;\npub mod y;\n"),
        // `a` is declared `pub(super)`: its use from the face is seen, and so the loop.
        ("x/mod.rs", "pub(super) mod a;\npub(in crate) mod b;\npub fn h() {}\nfn f() { a::g(); }\n"),
        ("x/a.rs", "pub fn g() { super::h() }\n"),
        // `y` reaches `b` only through its alias `x`.
        ("x/b.rs", "pub fn g() { crate::y::h() }\n"),
        ("y.rs", "fn reuse() {}\nuse crate::x;\npub fn h() { x::b::g() }\n"),
    ]);
    assert_eq!(
        found,
        vec![
            vec![PathBuf::from("x/a.rs"), PathBuf::from("x/mod.rs")],
            vec![PathBuf::from("x/b.rs"), PathBuf::from("y.rs")]
        ]
    );
}

#[test]
fn code_compiled_with_a_feature_is_read_even_when_tests_compile_it_too() {
    let found = circles(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a.rs", "use crate::b::Thing;\n"),
        ("b.rs", "#[cfg(any(test, feature = \"fake\"))]\nmod fake {\n    use crate::a::g;\n}\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
}
