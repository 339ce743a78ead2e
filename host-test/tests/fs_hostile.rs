//! The fs capability against a hostile repository and a racing process (Hardening I): a
//! project root that is a link, folders swapped for links mid-call, hard links, FIFOs and
//! devices, huge files. No guest involved; each refusal also leaves the outside untouched.

use self_evolve_host::caps::fs::{FsCap, FsConfig, FsErr, FsFaults, Kind, Mode, ProjectRoots, RootRef};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod fs_support;
use fs_support::{cap, world};

/// Every entry under `dir` with its bytes, for "nothing changed" checks.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let key = path.strip_prefix(base).unwrap().display().to_string();
            let ty = entry.file_type().unwrap();
            if ty.is_dir() {
                out.insert(key + "/", Vec::new());
                walk(&path, base, out);
            } else if ty.is_file() {
                out.insert(key, std::fs::read(&path).unwrap());
            } else {
                out.insert(key + "@", Vec::new());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo").arg(path).status().is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn a_project_skills_folder_that_links_out_of_its_project_is_not_mapped() {
    let w = world();
    let repo = w.base.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join(".dsh")).unwrap();
    std::os::unix::fs::symlink(&w.outside, repo.join(".dsh/skills")).unwrap();
    let other = w.base.join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::os::unix::fs::symlink(&w.outside, other.join(".dsh")).unwrap();
    let config = FsConfig {
        projects: ProjectRoots {
            sessions: BTreeMap::from([("explicit".to_string(), repo.join(".dsh/skills"))]),
            ..Default::default()
        },
        ..FsConfig::default()
    };
    let mut fs = FsCap::new(config, FsFaults::default());
    fs.note_session("discovered", repo.join("src").to_str().unwrap());
    fs.note_session("linked-dsh", other.to_str().unwrap());
    let before = snapshot(&w.outside);
    for session in ["explicit", "discovered", "linked-dsh"] {
        let root = RootRef::ProjectSkills(session.into());
        assert!(!fs.has_root(&root), "{session}: a link out of the project is not mapped");
        assert_eq!(fs.read(&root, "secret.txt"), Err(FsErr::NotPermitted), "{session}");
        assert_eq!(fs.write(&root, "planted.md", b"x", Mode::CreateNew), Err(FsErr::NotPermitted), "{session}");
        assert_eq!(fs.list_dir(&root, ""), Err(FsErr::NotPermitted), "{session}");
    }
    assert_eq!(snapshot(&w.outside), before);
    assert_eq!(fs.warnings.len(), 3, "one warning per session, naming the link: {:?}", fs.warnings);
    assert!(
        fs.warnings[0].contains(".dsh/skills") && fs.warnings[0].contains("outside the project"),
        "{:?}",
        fs.warnings
    );

    // A link that stays inside its project is the project's own business: mapped, at its real path.
    let fine = w.base.join("fine");
    std::fs::create_dir_all(fine.join(".git")).unwrap();
    std::fs::create_dir_all(fine.join("shared-skills")).unwrap();
    std::fs::create_dir_all(fine.join(".dsh")).unwrap();
    std::os::unix::fs::symlink(fine.join("shared-skills"), fine.join(".dsh/skills")).unwrap();
    fs.note_session("fine", fine.to_str().unwrap());
    assert_eq!(fs.root_path(&RootRef::ProjectSkills("fine".into())), Some(fine.join("shared-skills")));
}

#[test]
fn user_and_state_roots_are_resolved_to_their_real_paths_once() {
    let w = world();
    let link = w.base.join("skills-link");
    std::os::unix::fs::symlink(&w.user, &link).unwrap();
    let mut fs = FsCap::new(FsConfig { user_skills: Some(link.clone()), ..FsConfig::default() }, FsFaults::default());
    assert_eq!(fs.root_path(&RootRef::UserSkills), Some(w.user.clone()));
    assert_eq!(fs.describe_roots()[0], ("user-skills", Some(w.user.clone())));
    // Re-pointing the operator's link later does not move the root.
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&w.outside, &link).unwrap();
    fs.write(&RootRef::UserSkills, "a.md", b"x", Mode::CreateNew).unwrap();
    assert!(w.user.join("a.md").is_file());
    assert!(!w.outside.join("a.md").exists());
}

/// A second thread swaps a folder inside the root for a link to the outside, as fast as it can,
/// while this one reads and writes through it: not one read returns the outside's bytes and not
/// one write lands outside.
#[test]
fn swapping_folders_for_links_mid_call_never_escapes() {
    let w = world();
    let dir = w.user.join("skill");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("secret.txt"), b"inside").unwrap();
    let aside = w.user.join("skill-aside");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, dir, aside, outside) = (stop.clone(), dir.clone(), aside.clone(), w.outside.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if std::fs::rename(&dir, &aside).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, &dir);
                    let _ = std::fs::remove_file(&dir);
                    let _ = std::fs::rename(&aside, &dir);
                    swaps += 1;
                }
            }
            swaps
        })
    };
    let mut fs = cap(&w);
    let root = RootRef::UserSkills;
    let outside_before = snapshot(&w.outside);
    let (mut reads, mut escaped) = (0, 0);
    let started = Instant::now();
    // 3,000 rounds, and on a machine so busy that the swapper wins every one of them, on until a
    // read got through between two swaps (or 20 s).
    for i in 0.. {
        if let Ok(bytes) = fs.read(&root, "skill/secret.txt") {
            reads += 1;
            escaped += usize::from(bytes == b"do not read");
        }
        let _ = fs.write(&root, &format!("skill/new-{}.md", i % 3000), b"x", Mode::CreateNew);
        let _ = fs.write(&root, "skill/secret.txt", b"inside", Mode::Truncate);
        if (i >= 3000 && reads > 0) || started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0, "the race ran");
    assert!(reads > 0, "some reads got through between swaps");
    assert_eq!(escaped, 0, "reads of the outside file");
    assert_eq!(snapshot(&w.outside), outside_before, "writes outside the root");
}

#[test]
fn hard_linked_files_are_never_written_and_not_read_in_a_skills_root() {
    let w = world();
    std::fs::create_dir_all(w.user.join("pdf/references")).unwrap();
    std::fs::hard_link(w.outside.join("secret.txt"), w.user.join("pdf/references/notes.md")).unwrap();
    std::fs::hard_link(w.outside.join("secret.txt"), w.state.join("gates.jsonl")).unwrap();
    let mut fs = cap(&w);
    let before = snapshot(&w.outside);
    let user = RootRef::UserSkills;
    assert_eq!(fs.read(&user, "pdf/references/notes.md"), Err(FsErr::HardLinked(3)));
    assert_eq!(fs.write(&user, "pdf/references/notes.md", b"x", Mode::Truncate), Err(FsErr::HardLinked(3)));
    assert_eq!(fs.write(&user, "pdf/references/notes.md", b"x", Mode::Append), Err(FsErr::HardLinked(3)));
    assert_eq!(fs.write(&RootRef::State, "gates.jsonl", b"{}\n", Mode::Append), Err(FsErr::HardLinked(3)));
    assert_eq!(fs.read(&RootRef::State, "gates.jsonl").unwrap(), b"do not read", "the state root may read it");
    assert_eq!(snapshot(&w.outside), before, "not truncated, not appended to");
}

#[test]
fn fifos_and_devices_are_wrong_kind_on_the_open_handle_and_never_block() {
    let w = world();
    std::fs::create_dir_all(w.user.join("trap")).unwrap();
    mkfifo(&w.user.join("trap/SKILL.md"));
    let mut fs = cap(&w);
    let root = RootRef::UserSkills;
    let started = Instant::now();
    assert_eq!(fs.read(&root, "trap/SKILL.md"), Err(FsErr::WrongKind));
    assert_eq!(fs.write(&root, "trap/SKILL.md", b"x", Mode::Truncate), Err(FsErr::WrongKind));
    assert_eq!(fs.write(&root, "trap/SKILL.md", b"x", Mode::Append), Err(FsErr::WrongKind));
    assert!(started.elapsed() < Duration::from_secs(5), "no call waited for a writer");
    assert_eq!(fs.list_dir(&root, "trap").unwrap(), vec![("SKILL.md".to_string(), Kind::File)]);
    // A device: only where this process may make one (root in a container usually may).
    let null = w.user.join("trap/null.md");
    let made = std::process::Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().is_ok_and(|s| s.success());
    if made {
        assert_eq!(fs.read(&root, "trap/null.md"), Err(FsErr::WrongKind));
        assert_eq!(fs.write(&root, "trap/null.md", b"x", Mode::Truncate), Err(FsErr::WrongKind));
    } else {
        eprintln!("SKIPPED the device case: mknod is not permitted here");
    }
}

#[test]
fn reads_are_bounded_and_a_larger_file_is_too_large() {
    let w = world();
    let config = FsConfig { user_skills: Some(w.user.clone()), max_read_bytes: 1024, ..FsConfig::default() };
    let mut fs = FsCap::new(config, FsFaults::default());
    std::fs::write(w.user.join("small.md"), vec![b'a'; 1024]).unwrap();
    let big = std::fs::File::create(w.user.join("big.md")).unwrap();
    big.set_len(70 << 20).unwrap(); // sparse: 70 MB without writing them
    let root = RootRef::UserSkills;
    assert_eq!(fs.read(&root, "small.md").unwrap().len(), 1024);
    assert_eq!(fs.read(&root, "big.md"), Err(FsErr::TooLarge { path: "big.md".into(), size: 70 << 20, limit: 1024 }));
    assert_eq!(
        FsErr::too_large_message("big.md", 70 << 20, 1024),
        "too-large: big.md is 73400320 bytes; the host reads at most 1024"
    );
}

/// The project root was resolved while `.dsh/skills` did not exist; a `.dsh` link planted
/// afterwards (a checkout of a branch that has one) is refused at the write, never followed out
/// of the project.
#[test]
fn a_dsh_link_planted_after_the_project_root_was_resolved_is_not_followed() {
    let w = world();
    let repo = w.base.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let config = FsConfig { user_skills: Some(w.user.clone()), ..FsConfig::default() };
    let mut fs = FsCap::new(config, FsFaults::default());
    fs.note_session("s1", repo.to_str().unwrap());
    let root = RootRef::ProjectSkills("s1".into());
    assert!(fs.has_root(&root), "resolved while .dsh is missing");
    std::os::unix::fs::symlink(&w.outside, repo.join(".dsh")).unwrap();
    let before = snapshot(&w.outside);
    assert_eq!(fs.write(&root, "escape/SKILL.md", b"x", Mode::CreateNew), Err(FsErr::Symlink));
    assert_eq!(fs.read(&root, "secret.txt"), Err(FsErr::Symlink));
    assert_eq!(snapshot(&w.outside), before, "nothing written outside the project");

    // Without the link, the folder is made inside the project as before.
    let clean = w.base.join("clean");
    std::fs::create_dir_all(clean.join(".git")).unwrap();
    fs.note_session("s2", clean.to_str().unwrap());
    let root = RootRef::ProjectSkills("s2".into());
    fs.write(&root, "note/SKILL.md", b"x", Mode::CreateNew).unwrap();
    assert!(clean.join(".dsh/skills/note/SKILL.md").is_file());
}

/// Under the home, with no repository above the working folder, the home's own `.dsh` is no
/// project: the user library is never also a project root.
#[test]
fn the_homes_own_dsh_is_no_project() {
    let w = world();
    let home = w.base.join("home");
    let user = home.join(".dsh/skills");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(home.join("work/notes")).unwrap();
    let config = FsConfig { user_skills: Some(user.clone()), ..FsConfig::default() };
    let mut fs = FsCap::new(config, FsFaults::default());
    fs.note_session("s1", home.join("work/notes").to_str().unwrap());
    let root = RootRef::ProjectSkills("s1".into());
    assert!(!fs.has_root(&root), "the user library is not a project");
    assert_eq!(fs.write(&root, "a/SKILL.md", b"x", Mode::CreateNew), Err(FsErr::NotPermitted));
    assert!(!user.join("a").exists());
    // A repository under the home is a project as before.
    std::fs::create_dir_all(home.join("work/repo/.git")).unwrap();
    fs.note_session("s2", home.join("work/repo").to_str().unwrap());
    assert!(fs.has_root(&RootRef::ProjectSkills("s2".into())));
}
