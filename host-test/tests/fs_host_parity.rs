//! Hostile review: cases where the Rust fs capability answers differently from the Node
//! (hosts/node/src/fs.js) and Python (hosts/python/src/self_evolve/fs.py) hosts. Each test
//! asserts what the other two hosts answer.

use self_evolve_host::caps::fs::{FsCap, FsConfig, FsErr, FsFaults, Kind, Mode, ProjectRoots, RootRef};
use std::time::{Duration, UNIX_EPOCH};

mod fs_support;
use fs_support::{cap, world};

/// Node (fs.js `openFile`) and Python (fs.py `_open_file`) turn O_EXCL's EEXIST on a symlink into
/// `symlink`, "as the other modes do"; Rust answers `already-exists`.
#[test]
fn parity_create_new_over_a_final_symlink_is_symlink() {
    let w = world();
    std::os::unix::fs::symlink(w.outside.join("secret.txt"), w.user.join("link.md")).unwrap();
    std::os::unix::fs::symlink(w.outside.join("nothing-here"), w.user.join("dangling.md")).unwrap();
    let mut fs = cap(&w);
    assert_eq!(fs.write(&RootRef::UserSkills, "link.md", b"x", Mode::Truncate), Err(FsErr::Symlink));
    assert_eq!(fs.write(&RootRef::UserSkills, "link.md", b"x", Mode::CreateNew), Err(FsErr::Symlink));
    assert_eq!(fs.write(&RootRef::UserSkills, "dangling.md", b"x", Mode::CreateNew), Err(FsErr::Symlink));
}

/// `stat("")` is the root folder in every host, and Node's/Python's `statMany([""])` answers the
/// same; Rust's Linux `fast_stat` validates "" first and answers `invalid-path`.
#[test]
fn parity_stat_many_of_the_root_is_the_root() {
    let w = world();
    let mut fs = cap(&w);
    let single = fs.stat(&RootRef::UserSkills, "").unwrap();
    assert_eq!(single.kind, Kind::Dir);
    let many = fs.stat_many(&RootRef::UserSkills, &[String::new()]);
    assert_eq!(many, vec![Ok(single)]);
}

/// A time before 1970 is 0 in Node (`mtimeMs < 0n`) and Python (`max(0, ns // 1e6)`). Rust clamps
/// the seconds to 0 and then adds the nanoseconds: 1969-12-31T23:59:58.5Z comes out as 500 ms.
#[test]
fn parity_a_fractional_time_before_1970_is_zero() {
    let w = world();
    let file = w.user.join("old.md");
    std::fs::write(&file, b"x").unwrap();
    let before_epoch = UNIX_EPOCH - Duration::from_millis(1500);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(before_epoch).unwrap();
    let mut fs = cap(&w);
    assert_eq!(fs.stat(&RootRef::UserSkills, "old.md").unwrap().modified_ms, 0);
    assert_eq!(fs.stat_many(&RootRef::UserSkills, &["old.md".into()])[0].as_ref().unwrap().modified_ms, 0);
}

/// Node and Python check `nlink == 0` on the cached root handle and open the root again at its
/// real path; Rust keeps the handle of the deleted folder forever, so every later call fails
/// (the operator removed the state folder while the server ran).
#[test]
fn parity_a_root_deleted_while_running_is_opened_again() {
    let w = world();
    let mut fs = cap(&w);
    fs.write(&RootRef::State, "a.json", b"1", Mode::CreateNew).unwrap();
    std::fs::remove_dir_all(&w.state).unwrap();
    assert_eq!(fs.write(&RootRef::State, "b.json", b"2", Mode::CreateNew), Ok(()));
    assert_eq!(std::fs::read(w.state.join("b.json")).unwrap(), b"2");
}

/// The deleted root is noticed by whichever call comes first after it (the handle is checked
/// when a call through it finds nothing, not before every call): each operation answers as it
/// would on the folder made again.
#[test]
fn every_operation_opens_a_deleted_root_again() {
    let w = world();
    let mut fs = cap(&w);
    let state = RootRef::State;
    let remake = |files: &[&str]| {
        std::fs::remove_dir_all(&w.state).unwrap();
        std::fs::create_dir_all(w.state.join("sub")).unwrap();
        for f in files {
            std::fs::write(w.state.join(f), f.as_bytes()).unwrap();
        }
    };
    fs.write(&state, "first.json", b"1", Mode::CreateNew).unwrap();
    remake(&["sub/a.txt"]);
    assert_eq!(fs.read(&state, "sub/a.txt").unwrap(), b"sub/a.txt");
    remake(&["top.txt"]);
    assert_eq!(fs.read(&state, "top.txt").unwrap(), b"top.txt");
    remake(&["sub/a.txt"]);
    fs.write(&state, "sub/a.txt", b"+", Mode::Append).unwrap();
    assert_eq!(std::fs::read(w.state.join("sub/a.txt")).unwrap(), b"sub/a.txt+");
    remake(&["sub/a.txt"]);
    fs.rename(&state, "sub/a.txt", "sub/b.txt").unwrap();
    assert!(w.state.join("sub/b.txt").is_file());
    remake(&["sub/a.txt"]);
    assert_eq!(fs.stat(&state, "sub/a.txt").unwrap().size, 9);
    remake(&["sub/a.txt"]);
    assert_eq!(fs.list_dir(&state, "sub").unwrap(), vec![("a.txt".to_string(), Kind::File)]);
    remake(&["x.txt"]);
    assert_eq!(fs.list_dir(&state, "").unwrap().len(), 2, "the root lists as made again: sub and x.txt");
    remake(&["sub/a.txt"]);
    fs.remove_file(&state, "sub/a.txt").unwrap();
    assert!(!w.state.join("sub/a.txt").exists());
    remake(&["sub/a.txt"]);
    assert_eq!(fs.stat_many(&state, &["sub/a.txt".into()])[0].as_ref().unwrap().size, 9);
    remake(&[]);
    fs.create_dir_all(&state, "made/deep").unwrap();
    assert!(w.state.join("made/deep").is_dir());
}

/// Node (`Dirs.openReal`) and Python (`open_real`) open a user or state root by walking its real
/// path from `/` with O_NOFOLLOW, so a component swapped for a link after start-up is `symlink`.
/// Rust opens the root by name, following links: here it writes into `outside`.
#[test]
fn parity_a_root_swapped_for_a_link_after_startup_is_refused() {
    let w = world();
    let mut fs = cap(&w);
    std::fs::rename(&w.state, w.base.join("state-moved")).unwrap();
    std::os::unix::fs::symlink(&w.outside, &w.state).unwrap();
    assert_eq!(fs.write(&RootRef::State, "planted.json", b"x", Mode::CreateNew), Err(FsErr::Symlink));
    assert!(!w.outside.join("planted.json").exists(), "written through the link, outside the root");
}

/// Node and Python validate the path before looking at the root; Rust's `stat` opens the root
/// first, so a malformed path on an unmapped root is `not-permitted` instead of `invalid-path`.
#[test]
fn parity_stat_validates_before_the_root() {
    let mut fs = FsCap::new(
        FsConfig { projects: ProjectRoots { discover: false, ..Default::default() }, ..Default::default() },
        FsFaults::default(),
    );
    assert_eq!(fs.stat(&RootRef::UserSkills, "../x"), Err(FsErr::InvalidPath));
    assert_eq!(fs.read(&RootRef::UserSkills, "../x"), Err(FsErr::InvalidPath), "read already does");
}

/// An errno no host maps is `io` with its symbolic name and number only, in every host: Rust gave
/// "Invalid argument (os error 22)", Node "EINVAL: invalid argument, rename
/// '/proc/self/fd/21/a' -> '/proc/self/fd/22/c'" (the host's own paths), Python "[Errno 22]
/// Invalid argument: b'a' -> b'c'". A mapped text ("folder not empty") is unchanged.
#[test]
fn parity_an_unmapped_errno_is_its_name_and_number() {
    let w = world();
    std::fs::create_dir_all(w.state.join("a/b")).unwrap();
    let mut fs = cap(&w);
    assert_eq!(fs.rename(&RootRef::State, "a", "a/c"), Err(FsErr::Io("EINVAL (os error 22)".into())));
    assert_eq!(fs.rename(&RootRef::State, "a", "a/b/c"), Err(FsErr::Io("EINVAL (os error 22)".into())));
    assert!(w.state.join("a/b").is_dir(), "nothing moved");
    assert_eq!(fs.remove_dir(&RootRef::State, "a"), Err(FsErr::Io("folder not empty".into())));
}
