//! Many writers, one home (Hardening II): several plugin instances, each on its own thread with
//! its own wasmtime store (as separate processes would be), create and patch skills in one
//! library at once. A checker then replays every reported success against the final disk: no
//! write reported `written` may be missing, each contested name has exactly one creator, the
//! ledger holds every skill, and no temp file or lock is left behind.

mod common;

use common::all_services;
use self_evolve_host::{FsConfig, HostConfig, Plugin, user_context};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

/// One writer: its own instance over the shared home, on the system clock (locks age by it).
struct Writer(Plugin);

impl Writer {
    fn new(home: &Path) -> Writer {
        let config = HostConfig {
            cache_dir: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")),
            fs: FsConfig {
                user_skills: Some(home.join("skills")),
                state: Some(home.join("self-evolve")),
                ..FsConfig::default()
            },
            ..HostConfig::default()
        };
        let mut plugin = Plugin::load(common::wasm_path(), config).unwrap();
        plugin.init(r#"{"duplicateThreshold": 1.0}"#, &all_services()).unwrap().unwrap();
        Writer(plugin)
    }

    fn skill(&mut self, session: &str, args: Value) -> Result<Value, Value> {
        match self.0.tools_call(&user_context(session), "skill_manage", &args.to_string()).unwrap() {
            Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
            Err(text) => Err(serde_json::from_str(&text).unwrap()),
        }
    }
}

const WORKERS: usize = 4;
const OWN: usize = 6;
const SHARED: usize = 4;
const PATCHES: usize = 6;

/// What one worker saw succeed.
#[derive(Default)]
struct Seen {
    created: Vec<String>,
    notes: Vec<(String, String)>,
    conflicts: usize,
}

/// A word of its own per skill, so no two descriptions look alike to the duplicate check.
fn word(n: usize) -> String {
    const SYLLABLES: [&str; 16] =
        ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "we", "xo", "ya", "zu", "be", "co", "di"];
    let (a, b, c) = (n % 16, (n / 16) % 16, (n / 256) % 16);
    format!("{}{}{}", SYLLABLES[a], SYLLABLES[b], SYLLABLES[c])
}

fn create_args(name: &str) -> Value {
    let n = name.bytes().fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
    json!({
        "action": "create",
        "name": name,
        "description": format!("Procedure {} {} {} for stress. Use when {}.", word(n), word(n / 7), word(n / 49), word(n / 343)),
        "body": "# Steps\n\n1. Do it.\n\n## Notes\n",
    })
}

fn worker(h: &mut Writer, w: usize) -> Seen {
    let mut seen = Seen::default();
    let session = format!("s{w}");
    for i in 0..OWN {
        let name = format!("w{w}-own-{i}");
        for _ in 0..20 {
            match h.skill(&session, create_args(&name)) {
                Ok(v) if v["status"] == "written" => {
                    seen.created.push(name.clone());
                    break;
                }
                Err(e) if e["code"] == "conflict" => seen.conflicts += 1,
                other => panic!("{name}: {other:?}"),
            }
        }
    }
    for k in 0..SHARED {
        let name = format!("shared-{k}");
        for _ in 0..20 {
            match h.skill(&session, create_args(&name)) {
                Ok(v) if v["status"] == "written" => {
                    seen.created.push(name.clone());
                    break;
                }
                Err(e) if e["code"] == "exists" => break,
                Err(e) if e["code"] == "conflict" => seen.conflicts += 1,
                other => panic!("{name}: {other:?}"),
            }
        }
    }
    for j in 0..PATCHES {
        let name = format!("shared-{}", j % SHARED);
        let note = format!("- note from worker {w}, patch {j}");
        for _ in 0..50 {
            if h.skill(&session, json!({"action": "view", "name": name})).is_err() {
                continue; // not created yet by anyone: look again
            }
            let patch = json!({"action": "patch", "name": name, "old_string": "## Notes\n", "new_string": format!("## Notes\n{note}\n")});
            match h.skill(&session, patch) {
                Ok(v) if v["status"] == "written" => {
                    seen.notes.push((name.clone(), note.clone()));
                    break;
                }
                Err(e) if e["code"] == "conflict" || e["code"] == "not-read" => seen.conflicts += 1,
                other => panic!("{name}: {other:?}"),
            }
        }
    }
    seen
}

fn files_under(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files_under(&path, out);
        } else {
            out.push(path.display().to_string());
        }
    }
}

#[test]
fn concurrent_creates_and_patches_lose_nothing() {
    let first = tempfile::tempdir().unwrap();
    let home = first.path().to_path_buf();
    let barrier = Arc::new(Barrier::new(WORKERS));
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (home, barrier) = (home.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut h = Writer::new(&home);
                barrier.wait();
                worker(&mut h, w)
            })
        })
        .collect();
    let seen: Vec<Seen> = handles.into_iter().map(|h| h.join().unwrap()).collect();

    let skills = home.join("skills");
    let mut creators: BTreeMap<String, usize> = BTreeMap::new();
    for s in &seen {
        for name in &s.created {
            *creators.entry(name.clone()).or_default() += 1;
            assert!(skills.join(name).join("SKILL.md").is_file(), "{name} reported written, missing on disk");
        }
        for (name, note) in &s.notes {
            let text = std::fs::read_to_string(skills.join(name).join("SKILL.md")).unwrap();
            assert!(text.contains(note.as_str()), "{name}: patch `{note}` reported written, lost:\n{text}");
        }
    }
    for k in 0..SHARED {
        assert_eq!(creators.get(&format!("shared-{k}")), Some(&1), "exactly one creator of shared-{k}");
    }
    assert_eq!(creators.len(), WORKERS * OWN + SHARED);
    let patches: usize = seen.iter().map(|s| s.notes.len()).sum();
    assert_eq!(patches, WORKERS * PATCHES, "every patch landed in the end");
    let ledger = common::usage(&home.join("self-evolve"));
    for name in creators.keys() {
        assert!(ledger["skills"][name]["createdMs"].is_u64(), "the ledger lost {name}: {ledger}");
    }
    let mut files = Vec::new();
    files_under(&home, &mut files);
    let debris: Vec<&String> =
        files.iter().filter(|f| f.ends_with(".self-evolve-tmp") || f.ends_with(".lock")).collect();
    assert!(debris.is_empty(), "temp files or locks left: {debris:?}");
    let conflicts: usize = seen.iter().map(|s| s.conflicts).sum();
    eprintln!("{} writes, {patches} patches, {conflicts} conflicts answered and retried", creators.len());
}

/// The same name created at once in the user scope by one instance and in the project scope by
/// another: one is written, the other refused (`exists`, or `conflict` while the first holds the
/// name's lock). Both written would have one skill silently shadow the other.
#[test]
fn the_same_name_created_in_both_scopes_at_once_is_written_once() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("repo");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    // A library of some size: the duplicate check between the guards and the write takes a while.
    for n in 0..300 {
        let name = format!("pad-{}", word(n));
        let dir = home.path().join("skills").join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("---\nname: {name}\ndescription: Padding {}. Use when padding.\n---\nPad.\n", word(n));
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }
    let writer = |scope_project: bool| {
        let config = HostConfig {
            cache_dir: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")),
            fs: FsConfig {
                user_skills: Some(home.path().join("skills")),
                state: Some(home.path().join("self-evolve")),
                projects: self_evolve_host::ProjectRoots {
                    discover: false,
                    default_project: Some(project.join(".dsh/skills")),
                    ..Default::default()
                },
                ..FsConfig::default()
            },
            ..HostConfig::default()
        };
        let mut plugin = Plugin::load(common::wasm_path(), config).unwrap();
        plugin.init(r#"{"duplicateThreshold": 1.0}"#, &all_services()).unwrap().unwrap();
        (Writer(plugin), scope_project)
    };
    let rounds = 12;
    let barrier = Arc::new(Barrier::new(2));
    let results: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = [false, true]
            .into_iter()
            .map(|project_scope| {
                let (mut w, project_scope) = writer(project_scope);
                let barrier = barrier.clone();
                s.spawn(move || {
                    (0..rounds)
                        .map(|round| {
                            let name = format!("twin-{}", word(1000 + round));
                            let mut args = create_args(&name);
                            if project_scope {
                                args["scope"] = json!("project");
                            }
                            barrier.wait();
                            match w.skill("s1", args) {
                                Ok(answer) => answer["status"] == "written",
                                Err(refusal) => {
                                    let code = refusal["code"].as_str().unwrap_or("").to_string();
                                    assert!(code == "exists" || code == "conflict", "{refusal}");
                                    false
                                }
                            }
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for round in 0..rounds {
        let name = format!("twin-{}", word(1000 + round));
        let on_disk = [home.path().join("skills").join(&name), project.join(".dsh/skills").join(&name)]
            .iter()
            .filter(|d| d.join("SKILL.md").is_file())
            .count();
        let written = results.iter().filter(|r| r[round]).count();
        assert_eq!((written, on_disk), (1, 1), "round {round}: {name} written by {written}, on disk {on_disk} times");
    }
}
