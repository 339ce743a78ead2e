//! The fs capability on its own: every refused path form, symlinks out of a root, project
//! roots per session, write modes and injected faults. No guest involved.

use self_evolve_host::caps::fs::{FsCap, FsConfig, FsErr, FsFaults, Kind, Mode, ProjectRoots, RootRef};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    user: PathBuf,
    outside: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().to_path_buf();
    let user = base.join("user-skills");
    let outside = base.join("outside");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), b"do not read").unwrap();
    World { _tmp: tmp, base, user, outside }
}

fn cap(w: &World) -> FsCap {
    let config = FsConfig {
        user_skills: Some(w.user.clone()),
        state: Some(w.base.join("state")),
        projects: ProjectRoots { discover: false, ..Default::default() },
        ..FsConfig::default()
    };
    FsCap::new(config, FsFaults::default())
}

/// Every path under `dir`, for "nothing was created" checks.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(base).unwrap().display().to_string());
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(&path, base, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn malformed_paths_are_refused_for_every_operation() {
    let w = world();
    let mut fs = cap(&w);
    let before = tree(&w.base);
    let bad =
        ["/etc/passwd", "../outside/secret.txt", "a/../../outside", "", "a//b", "./a", "a/.", "a\\b", "a\0b", "a\nb"];
    let root = RootRef::UserSkills;
    for path in bad {
        assert_eq!(fs.read(&root, path), Err(FsErr::InvalidPath), "read {path:?}");
        assert_eq!(fs.write(&root, path, b"x", Mode::Truncate), Err(FsErr::InvalidPath), "write {path:?}");
        assert_eq!(fs.rename(&root, "ok.md", path), Err(FsErr::InvalidPath), "rename to {path:?}");
        assert_eq!(fs.remove_file(&root, path), Err(FsErr::InvalidPath), "remove {path:?}");
        assert_eq!(fs.create_dir_all(&root, path), Err(FsErr::InvalidPath), "mkdir {path:?}");
        if !path.is_empty() {
            assert_eq!(fs.stat(&root, path), Err(FsErr::InvalidPath), "stat {path:?}");
        }
    }
    // `stat("")` is the root itself (its mtime tells the plugin whether entries changed).
    assert_eq!(fs.stat(&root, "").unwrap().kind, Kind::Dir);
    assert_eq!(tree(&w.base), before, "nothing created anywhere");
}

#[test]
fn symlinks_are_refused_anywhere_on_the_path() {
    let w = world();
    std::os::unix::fs::symlink(&w.outside, w.user.join("escape")).unwrap();
    std::os::unix::fs::symlink(w.outside.join("secret.txt"), w.user.join("link.md")).unwrap();
    std::fs::create_dir_all(w.user.join("inside")).unwrap();
    std::os::unix::fs::symlink(w.user.join("inside"), w.user.join("inner-link")).unwrap();
    let mut fs = cap(&w);
    let root = RootRef::UserSkills;
    let outside_before = tree(&w.outside);

    assert_eq!(fs.read(&root, "escape/secret.txt"), Err(FsErr::Symlink));
    assert_eq!(fs.read(&root, "link.md"), Err(FsErr::Symlink));
    assert_eq!(fs.write(&root, "escape/new.txt", b"x", Mode::CreateNew), Err(FsErr::Symlink));
    assert_eq!(fs.write(&root, "link.md", b"x", Mode::Truncate), Err(FsErr::Symlink));
    assert_eq!(
        fs.write(&root, "inner-link/x.md", b"x", Mode::Truncate),
        Err(FsErr::Symlink),
        "even one that stays inside"
    );
    assert_eq!(fs.create_dir_all(&root, "escape/deep/er"), Err(FsErr::Symlink));
    assert_eq!(fs.list_dir(&root, "escape"), Err(FsErr::Symlink));
    assert_eq!(fs.remove_file(&root, "escape/secret.txt"), Err(FsErr::Symlink));
    fs.write(&root, "real.md", b"x", Mode::CreateNew).unwrap();
    assert_eq!(fs.rename(&root, "real.md", "escape/moved.md"), Err(FsErr::Symlink));
    assert_eq!(fs.rename(&root, "link.md", "moved.md"), Err(FsErr::Symlink));
    // Nor is a link replaced by a rename onto it (the free-name rename finds it taken first).
    assert_eq!(fs.rename(&root, "real.md", "link.md"), Err(FsErr::Symlink));
    assert!(w.user.join("real.md").is_file() && w.user.join("link.md").is_symlink());
    // A plain file is replaced, as rename does.
    fs.write(&root, "other.md", b"y", Mode::CreateNew).unwrap();
    fs.rename(&root, "other.md", "real.md").unwrap();
    assert_eq!(std::fs::read(w.user.join("real.md")).unwrap(), b"y");

    // stat reports a final symlink as one, without following it.
    assert_eq!(fs.stat(&root, "link.md").unwrap().kind, Kind::Symlink);
    assert_eq!(fs.stat(&root, "escape/secret.txt"), Err(FsErr::Symlink));
    let listed = fs.list_dir(&root, "").unwrap();
    assert!(listed.contains(&("escape".to_string(), Kind::Symlink)), "{listed:?}");

    assert_eq!(tree(&w.outside), outside_before, "nothing created or removed outside the root");
    assert_eq!(std::fs::read(w.outside.join("secret.txt")).unwrap(), b"do not read");
}

#[test]
fn write_modes_rename_and_listing_behave_like_a_filesystem() {
    let w = world();
    let mut fs = cap(&w);
    let root = RootRef::State;
    assert_eq!(fs.list_dir(&root, "").unwrap(), vec![], "a root not created yet lists empty");
    fs.write(&root, "a/b/c.txt", b"one", Mode::CreateNew).unwrap();
    assert_eq!(fs.write(&root, "a/b/c.txt", b"two", Mode::CreateNew), Err(FsErr::AlreadyExists));
    fs.write(&root, "a/b/c.txt", b"+", Mode::Append).unwrap();
    assert_eq!(fs.read(&root, "a/b/c.txt").unwrap(), b"one+");
    fs.write(&root, "a/b/c.txt", b"new", Mode::Truncate).unwrap();
    assert_eq!(fs.read(&root, "a/b/c.txt").unwrap(), b"new");
    fs.rename(&root, "a/b/c.txt", "d/e.txt").unwrap();
    assert_eq!(fs.read(&root, "a/b/c.txt"), Err(FsErr::NotFound));
    assert_eq!(fs.stat(&root, "d/e.txt").unwrap().size, 3);
    assert_eq!(fs.list_dir(&root, "").unwrap(), vec![("a".to_string(), Kind::Dir), ("d".to_string(), Kind::Dir)]);
    assert_eq!(fs.read(&root, "a"), Err(FsErr::WrongKind));
    fs.remove_file(&root, "d/e.txt").unwrap();
    fs.remove_dir(&root, "d").unwrap();
    assert!(matches!(fs.remove_dir(&root, "a"), Err(FsErr::Io(_))), "a folder that is not empty stays");
}

#[test]
fn unmapped_roots_are_not_permitted() {
    let w = world();
    let mut fs = FsCap::new(
        FsConfig { projects: ProjectRoots { discover: false, ..Default::default() }, ..Default::default() },
        FsFaults::default(),
    );
    assert!(!fs.has_root(&RootRef::UserSkills));
    assert_eq!(fs.read(&RootRef::UserSkills, "x.md"), Err(FsErr::NotPermitted));
    assert_eq!(fs.write(&RootRef::ProjectSkills("s1".into()), "x.md", b"x", Mode::Truncate), Err(FsErr::NotPermitted));
    assert!(tree(&w.base).iter().all(|p| !p.ends_with("x.md")));
}

#[test]
fn project_roots_are_per_session() {
    let w = world();
    let alpha = w.base.join("alpha");
    let beta = w.base.join("beta");
    std::fs::create_dir_all(alpha.join(".git")).unwrap();
    std::fs::create_dir_all(beta.join(".git")).unwrap();
    std::fs::create_dir_all(beta.join("src/deep")).unwrap();
    let explicit = w.base.join("explicit-skills");
    let config = FsConfig {
        user_skills: Some(w.user.clone()),
        state: None,
        projects: ProjectRoots {
            sessions: BTreeMap::from([("pinned".to_string(), explicit.clone())]),
            ..Default::default()
        },
        ..FsConfig::default()
    };
    let mut fs = FsCap::new(config, FsFaults::default());
    fs.note_session("s-alpha", alpha.to_str().unwrap());
    fs.note_session("s-beta", beta.join("src/deep").to_str().unwrap());
    assert_eq!(fs.root_path(&RootRef::ProjectSkills("s-alpha".into())), Some(alpha.join(".dsh/skills")));
    assert_eq!(fs.root_path(&RootRef::ProjectSkills("s-beta".into())), Some(beta.join(".dsh/skills")));
    assert_eq!(fs.root_path(&RootRef::ProjectSkills("pinned".into())), Some(explicit));
    assert!(!fs.has_root(&RootRef::ProjectSkills("unknown".into())), "a session with no known cwd has no project");
    fs.note_session("s-nowhere", w.outside.to_str().unwrap());
    assert!(!fs.has_root(&RootRef::ProjectSkills("s-nowhere".into())), "no marker above the cwd, no project");

    fs.write(&RootRef::ProjectSkills("s-alpha".into()), "a/SKILL.md", b"alpha", Mode::CreateNew).unwrap();
    fs.write(&RootRef::ProjectSkills("s-beta".into()), "a/SKILL.md", b"beta", Mode::CreateNew).unwrap();
    assert_eq!(std::fs::read(alpha.join(".dsh/skills/a/SKILL.md")).unwrap(), b"alpha");
    assert_eq!(std::fs::read(beta.join(".dsh/skills/a/SKILL.md")).unwrap(), b"beta");
}

#[test]
fn injected_faults_fail_the_nth_write_and_rename() {
    let w = world();
    let faults = FsFaults { fail_write_at: Some(2), fail_rename_at: Some(1), error: Some(FsErr::NoSpace) };
    let mut fs = FsCap::new(FsConfig { user_skills: Some(w.user.clone()), ..Default::default() }, faults);
    let root = RootRef::UserSkills;
    fs.write(&root, "one.md", b"1", Mode::CreateNew).unwrap();
    assert_eq!(fs.write(&root, "two.md", b"2", Mode::CreateNew), Err(FsErr::NoSpace));
    assert!(!w.user.join("two.md").exists(), "a failed write leaves nothing");
    fs.write(&root, "three.md", b"3", Mode::CreateNew).unwrap();
    assert_eq!(fs.rename(&root, "one.md", "moved.md"), Err(FsErr::NoSpace));
    assert!(w.user.join("one.md").exists());
    fs.rename(&root, "one.md", "moved.md").unwrap();
}

#[test]
fn non_utf8_names_are_skipped_not_mangled() {
    use std::os::unix::ffi::OsStrExt;
    let w = world();
    std::fs::write(w.user.join(std::ffi::OsStr::from_bytes(b"bad-\xff.md")), b"x").unwrap();
    std::fs::write(w.user.join("good.md"), b"x").unwrap();
    let mut fs = cap(&w);
    assert_eq!(fs.list_dir(&RootRef::UserSkills, "").unwrap(), vec![("good.md".to_string(), Kind::File)]);
    assert_eq!(fs.skipped_non_utf8, 1);
}

#[test]
fn stat_many_agrees_with_stat_for_every_kind_of_path() {
    let w = world();
    std::fs::create_dir_all(w.user.join("pkg")).unwrap();
    std::fs::write(w.user.join("pkg/SKILL.md"), b"hello").unwrap();
    std::os::unix::fs::symlink(&w.outside, w.user.join("escape")).unwrap();
    std::os::unix::fs::symlink(w.outside.join("secret.txt"), w.user.join("link.md")).unwrap();
    let mut fs = cap(&w);
    let paths: Vec<String> =
        ["pkg/SKILL.md", "pkg", "missing/SKILL.md", "escape/secret.txt", "link.md", "../x", "pkg/SKILL.md/deeper"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let many = fs.stat_many(&RootRef::UserSkills, &paths);
    for (path, batch) in paths.iter().zip(many) {
        let single = fs.stat(&RootRef::UserSkills, path);
        match (&batch, &single) {
            (Ok(a), Ok(b)) => assert_eq!((a.kind, a.size), (b.kind, b.size), "{path}"),
            _ => assert_eq!(batch, single, "{path}"),
        }
    }
    assert_eq!(fs.stat_many(&RootRef::UserSkills, &["escape/secret.txt".into()])[0], Err(FsErr::Symlink));
}
