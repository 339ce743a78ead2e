//! Curator transitions on the fake host and a manual clock: what moves, what must not, dry
//! runs, reports and restore.

use super::*;
use crate::config::Config;
use crate::fake::FakeHost;
use crate::host::WriteMode;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const DAY: u64 = MS_PER_DAY;
const START: u64 = 1_767_225_600_000;

fn skill(host: &FakeHost, root: &Root, name: &str, meta_lines: &str) {
    let text =
        format!("---\nname: {name}\ndescription: Skill {name}. Use when testing.\nmetadata:\n{meta_lines}---\nbody\n");
    host.write(root, &format!("{name}/SKILL.md"), text.as_bytes(), WriteMode::Truncate).unwrap();
}

fn owned(created: &str) -> String {
    format!("  authored-by: self-evolve\n  created-at: \"{created}\"\n  version: \"1\"\n")
}

fn status(host: &FakeHost, name: &str) -> Option<String> {
    let bytes = host.file(&Root::UserSkills, &format!("{name}/SKILL.md"))?;
    Some(SkillFile::parse_bytes(&bytes).unwrap().status())
}

fn setup() -> (FakeHost, Ledger, ListCache, CuratorConfig) {
    let host = FakeHost::new(START);
    host.map_root(Root::ProjectSkills("s1".into()));
    let created = time::iso(START);
    skill(&host, &Root::UserSkills, "used-once", &owned(&created));
    skill(&host, &Root::UserSkills, "never-used", &owned(&created));
    skill(&host, &Root::UserSkills, "pinned-one", &format!("{}  pinned: \"true\"\n", owned(&created)));
    skill(&host, &Root::UserSkills, "hand-written", "  author: someone\n");
    skill(&host, &Root::ProjectSkills("s1".into()), "project-owned", &owned(&created));
    let mut ledger = Ledger::default();
    ledger.record_use("used-once", START);
    ledger.record_use("pinned-one", START);
    ledger.record_use("hand-written", START);
    // The ledger is shared state: a pass reads what every process recorded, on disk.
    ledger.save(&host).unwrap();
    (host, ledger, ListCache::default(), Config::default().curator)
}

#[test]
fn active_to_stale_to_archived_and_what_never_moves() {
    let (host, mut ledger, mut cache, config) = setup();
    host.advance(29 * DAY);
    assert!(pass(&host, &config, &mut ledger, &mut cache, false, 20, None).changes.is_empty());

    host.advance(DAY);
    let report = pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    let moved: Vec<(&str, &str)> = report.changes.iter().map(|c| (c.name.as_str(), c.to.as_str())).collect();
    assert_eq!(moved, [("never-used", "stale"), ("used-once", "stale")], "{report:?}");
    assert_eq!(status(&host, "used-once").as_deref(), Some("stale"));
    assert_eq!(status(&host, "pinned-one").as_deref(), Some("active"), "pinned never moves");
    assert_eq!(status(&host, "hand-written").as_deref(), Some("active"), "not ours, never moves");
    assert!(host.file(&Root::ProjectSkills("s1".into()), "project-owned/SKILL.md").is_some());
    assert_eq!(ledger.curator_last_run_ms, Some(host.now_ms()));
    assert_eq!(last_report(&host).unwrap().changes.len(), 2);

    host.advance(60 * DAY);
    let report = pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    assert_eq!(report.changes.iter().filter(|c| c.to == "archived").count(), 2, "{report:?}");
    assert!(host.file(&Root::UserSkills, "used-once/SKILL.md").is_none(), "moved out of the library");
    let archive = host.list_dir(&Root::State, "archive").unwrap();
    assert_eq!(archive.len(), 2);
    let project = host.file(&Root::ProjectSkills("s1".into()), "project-owned/SKILL.md");
    assert!(project.is_some(), "project scope is never curated");
}

#[test]
fn never_used_skills_get_a_grace_period() {
    let (host, mut ledger, mut cache, _) = setup();
    let config = CuratorConfig { stale_days: 5, archive_days: 10, grace_days: 14, ..Config::default().curator };
    host.advance(13 * DAY);
    let report = pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    assert!(report.changes.iter().all(|c| c.name != "never-used"), "{report:?}");
    host.advance(DAY);
    let report = pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    assert!(report.changes.iter().any(|c| c.name == "never-used" && c.to == "stale"), "{report:?}");
}

#[test]
fn a_stale_skill_used_again_becomes_active() {
    let (host, mut ledger, mut cache, config) = setup();
    host.advance(31 * DAY);
    pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    assert_eq!(status(&host, "used-once").as_deref(), Some("stale"));
    let now = host.now_ms();
    ledger.record(&host, &[Record::Used("used-once", now)]).unwrap();
    let report = pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    assert!(report.changes.iter().any(|c| c.name == "used-once" && c.to == "active"));
}

#[test]
fn a_dry_run_changes_nothing() {
    let (host, mut ledger, mut cache, config) = setup();
    host.advance(200 * DAY);
    let before = host.snapshot();
    let report = pass(&host, &config, &mut ledger, &mut cache, true, 20, None);
    assert!(report.dry_run && !report.changes.is_empty());
    // The listing's persisted index (a cache of what is on disk) may be written; nothing else.
    let mut after = host.snapshot();
    if let Some(state) = after.get_mut(&Root::State) {
        state.retain(|path, _| !path.starts_with("index"));
    }
    assert_eq!(after, before);
    assert_eq!(ledger.curator_last_run_ms, None);
}

/// `restore` as the `/skills restore` command runs it: under the skill's lock.
fn restore_locked(host: &FakeHost, name: &str, cache: &mut ListCache) -> Result<String, String> {
    let mut lock = crate::state_file::lock(host, &skill_lock(name)).map_err(|e| e.message)?;
    let result = restore(host, name, cache, &mut lock);
    lock.release(host);
    result
}

/// The two passes that archive `used-once` (with a references file, so it is a package of two).
fn archived_package() -> (FakeHost, ListCache) {
    let (host, mut ledger, mut cache, config) = setup();
    host.write(&Root::UserSkills, "used-once/references/notes.md", b"notes\n", WriteMode::CreateNew).unwrap();
    host.advance(31 * DAY);
    pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    host.advance(60 * DAY);
    pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    assert!(host.file(&Root::UserSkills, "used-once/SKILL.md").is_none());
    (host, cache)
}

#[test]
fn restore_brings_back_the_newest_archived_copy_as_active() {
    let (host, mut cache) = archived_package();
    restore_locked(&host, "used-once", &mut cache).unwrap();
    assert_eq!(status(&host, "used-once").as_deref(), Some("active"));
    assert_eq!(host.file(&Root::UserSkills, "used-once/references/notes.md").as_deref(), Some(&b"notes\n"[..]));
    assert_eq!(host.list_dir(&Root::State, "archive").unwrap().len(), 1, "the restored copy leaves the archive");
    let hidden: Vec<String> = host
        .list_dir(&Root::UserSkills, "")
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "no hidden entry left: {hidden:?}");
    assert!(restore_locked(&host, "used-once", &mut cache).unwrap_err().contains("exists"));
    assert!(restore_locked(&host, "ghost", &mut cache).unwrap_err().contains("no archived copy"));
}

#[test]
fn a_restore_that_fails_midway_leaves_the_skill_archived_and_nothing_visible() {
    // Each write of the restore fails in turn (the first file, the second), then its publishing
    // rename: before, the files landed one by one where the skill lives, so a failure (or a
    // crash) after the first left a SKILL.md without its references, or references without it.
    for fault in ["write 1", "write 2", "rename"] {
        let (host, mut cache) = archived_package();
        let before = host.snapshot();
        let (writes, renames) = (host.writes_so_far(), host.renames_so_far());
        match fault {
            "write 1" => host.fail_write_at.set(Some(writes + 2)), // the lock is the first write
            "write 2" => host.fail_write_at.set(Some(writes + 3)),
            _ => host.fail_rename_at.set(Some(renames + 1)),
        }
        let err = restore_locked(&host, "used-once", &mut cache).unwrap_err();
        assert!(err.contains("stays archived"), "{fault}: {err}");
        assert_eq!(host.snapshot(), before, "{fault}: nothing changed, no hidden entry left");
        host.fail_write_at.set(None);
        host.fail_rename_at.set(None);
        restore_locked(&host, "used-once", &mut cache).unwrap();
        assert_eq!(status(&host, "used-once").as_deref(), Some("active"), "{fault}: the next restore works");
    }
}

#[test]
fn a_half_built_restore_left_by_a_dead_process_is_hidden_and_cleaned_up() {
    let (host, _) = archived_package();
    let t0 = host.now_ms();
    let staging = crate::library::storage::debris::restoring_name("used-once", t0);
    host.write(&Root::UserSkills, &format!("{staging}/SKILL.md"), b"---\nname: used-once\n---\n", WriteMode::CreateNew)
        .unwrap();
    let store = Store::new(&host, "");
    assert!(store.locate("used-once").unwrap().is_none(), "not a skill");
    host.advance(61_000);
    let removed = crate::library::storage::cleanup::cleanup(&host, &[Root::UserSkills], false);
    assert_eq!(removed, [staging]);
}

#[test]
fn the_schedule_waits_for_the_delay_then_the_interval() {
    let config = Config::default().curator;
    let mut schedule = Schedule::default();
    schedule.start(START, &config);
    assert!(!schedule.due(START + 29_999));
    assert!(schedule.due(START + 30_000));
    schedule.done(START + 30_000, &config);
    assert!(!schedule.due(START + 30_000 + 23 * 3_600_000));
    assert!(schedule.due(START + 30_000 + 24 * 3_600_000));
}

#[test]
fn the_schedule_is_shared_by_every_process_of_the_home() {
    let host = FakeHost::new(START);
    let config = Config::default().curator;
    let process = || {
        let mut s = Schedule::default();
        s.start(host.now_ms(), &config);
        s
    };
    // The first process to look makes its first pass (30 s after its start) everyone's; short
    // processes see it come due.
    assert!(!process().due_shared(&host, START, &config));
    host.advance(29_999);
    assert!(!process().due_shared(&host, host.now_ms(), &config));
    host.advance(1);
    let mut one = process();
    assert!(one.due_shared(&host, host.now_ms(), &config));
    one.done_shared(&host, host.now_ms(), &config);
    assert!(!process().due_shared(&host, host.now_ms(), &config), "a pass in one process counts for all");
    host.advance(24 * 3_600_000);
    assert!(process().due_shared(&host, host.now_ms(), &config));
    // Switched off (or no user root): never due.
    assert!(!Schedule::default().due_shared(&host, host.now_ms(), &config));
}

#[test]
fn a_status_change_is_kept_as_the_curators_version() {
    let (host, mut ledger, mut cache, config) = setup();
    host.advance(30 * DAY);
    pass(&host, &config, &mut ledger, &mut cache, false, 20, None);
    let kept = crate::library::history::versions(&host, Scope::User, "", "never-used");
    let what: Vec<(&str, &str)> = kept.iter().map(|v| (v.actor.as_str(), v.operation.as_str())).collect();
    assert_eq!(what, [("curator", "status")]);
    assert!(crate::library::history::versions(&host, Scope::User, "", "pinned-one").is_empty());
}

/// A restore that runs past cleanup's one-minute grace (its lock renewed all along) meets
/// another process's init: before, that cleanup swept the hidden staging entry, the next write
/// recreated it, the rename published a package without its SKILL.md and the archive copy was
/// removed: the SKILL.md was gone from everywhere.
#[test]
fn a_restore_longer_than_the_grace_keeps_its_files_from_another_processs_cleanup() {
    let (host, mut cache) = archived_package();
    let staging = crate::library::storage::debris::restoring_name("used-once", host.now_ms());
    // SKILL.md is copied first; before references/notes.md, 61 s have passed (a slow copy of a
    // big package, its lock renewed per file) and another process starts (init's cleanup).
    host.interleave(&format!("{staging}/references"), |host| {
        host.advance(61_000);
        crate::library::storage::cleanup::cleanup(host, &[Root::UserSkills, Root::State], false);
    });
    let restored = restore_locked(&host, "used-once", &mut cache);
    let skill_md = host.file(&Root::UserSkills, "used-once/SKILL.md").is_some();
    let archive = host.list_dir(&Root::State, "archive").unwrap_or_default();
    assert!(
        skill_md || restored.is_err(),
        "restore answered {restored:?}, published used-once/ without SKILL.md; archive now {archive:?}"
    );
}

/// A flat skill's archive folder that gained a file besides SKILL.md and archived.json (a
/// `.DS_Store`, an editor's backup) is restored from its SKILL.md alone.
#[test]
fn a_flat_skill_with_a_stray_file_in_its_archive_is_restored() {
    let (host, _ledger, mut cache, _config) = setup();
    let text = format!(
        "---\nname: flatty\ndescription: Skill flatty. Use when testing.\nmetadata:\n{}---\nbody\n",
        owned(&time::iso(START))
    );
    host.write(&Root::UserSkills, "flatty.md", text.as_bytes(), WriteMode::CreateNew).unwrap();
    let location = crate::library::storage::store::Location {
        scope: Scope::User,
        layout: Layout::Flat,
        root: Root::UserSkills,
        name: "flatty".into(),
    };
    let mut lock = crate::state_file::lock(&host, &skill_lock("flatty")).unwrap();
    let folder = archive_location(&host, "", &location, "test", &mut lock).unwrap();
    lock.release(&host);
    host.write(&Root::State, &format!("{folder}/.DS_Store"), b"\0\0\0\x01Bud1", WriteMode::CreateNew).unwrap();
    let restored = restore_locked(&host, "flatty", &mut cache);
    assert!(restored.is_ok(), "{restored:?}");
    assert!(host.file(&Root::UserSkills, "flatty.md").unwrap().starts_with(b"---\nname: flatty"));
}

/// A restore or an archive whose one rename meets an entry already holding the name.
#[path = "curator_restore_tests.rs"]
mod in_the_way;

/// A pass in `tick`, under the `curator-pass` lock, over skills `skill-1` … `skill-6`, each
/// idle long enough to go stale: the lock is renewed as the pass goes, and a pass that loses it
/// anyway stops moving skills.
mod under_the_pass_lock {
    use super::*;
    use crate::plugin::Plugin;
    use crate::state_file::{Lock, STALE_LOCK_MS, try_lock};
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const PASS_LOCK: &str = "locks/curator-pass.lock";
    const SKILLS: usize = 6;

    fn plugin() -> Plugin<FakeHost> {
        let host = FakeHost::new(START);
        for i in 1..=SKILLS {
            skill(&host, &Root::UserSkills, &format!("skill-{i}"), &owned(&time::iso(START)));
        }
        let mut plugin = Plugin::new(host);
        plugin.init("{}", &[]).unwrap();
        plugin.host().advance(31 * DAY);
        plugin
    }

    /// A person's call context in session `s1` (the `/skills` commands).
    fn user_ctx() -> crate::api::CallContext {
        let origin = crate::api::Origin::User;
        crate::api::CallContext { session: "s1".into(), agent: "main".into(), origin, depth: 0, cwd: "/w".into() }
    }

    /// The skills the pass's decisions say it moved.
    fn moved(decisions: &[String]) -> Vec<String> {
        decisions
            .iter()
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .filter(|d| d["kind"] == "curator")
            .map(|d| d["skill"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Runs `step` just before each skill's move (the write of its file), from the `n`-th on.
    fn before_each_move(host: &FakeHost, n: usize, step: Rc<dyn Fn(&FakeHost)>) {
        if n > SKILLS {
            return;
        }
        host.interleave("skill-", move |host| {
            step(host);
            before_each_move(host, n + 1, step);
        });
    }

    #[test]
    fn a_pass_longer_than_the_stale_age_keeps_its_lock() {
        let mut plugin = plugin();
        // Each move takes 3 s (a slow disk): the pass runs 18 s, well past the 10 s stale age,
        // and another process tries the lock before every move.
        let broken = Rc::new(Cell::new(false));
        let seen = broken.clone();
        before_each_move(
            plugin.host(),
            1,
            Rc::new(move |host: &FakeHost| {
                host.advance(3_000);
                if try_lock(host, "curator-pass").is_some() {
                    seen.set(true);
                }
            }),
        );
        let out = plugin.tick();
        assert!(!broken.get(), "another process broke the running pass's lock: two passes at once");
        assert!(!plugin.host().logged("breaking the stale lock"));
        assert_eq!(moved(&out).len(), SKILLS, "{out:?}");
        assert!(plugin.host().file(&Root::State, PASS_LOCK).is_none(), "released after the pass");
    }

    #[test]
    fn a_pass_that_loses_its_lock_stops_moving_skills() {
        let mut plugin = plugin();
        // Just before the second move, this process stalls past the stale age; another breaks
        // the pass's lock and holds it (to run its own pass).
        let taken: Rc<RefCell<Option<Lock>>> = Rc::default();
        let slot = taken.clone();
        plugin.host().interleave("skill-2/", move |host| {
            host.advance(STALE_LOCK_MS + 1);
            *slot.borrow_mut() = try_lock(host, "curator-pass");
        });
        let out = plugin.tick();
        let host = plugin.host();
        let other = taken.borrow_mut().take().expect("the stalled pass's lock was broken");
        // The move under way when the lock was broken completes; none follows.
        assert_eq!(moved(&out), ["skill-1", "skill-2"], "{out:?}");
        for i in 3..=SKILLS {
            assert_eq!(status(host, &format!("skill-{i}")).as_deref(), Some("active"), "skill-{i} left alone");
        }
        assert!(host.logged("curator: lost the `curator-pass` lock to another process after checking 2 skill(s)"));
        assert!(host.file(&Root::State, PASS_LOCK).is_some(), "the other process's lock stays");
        assert!(try_lock(host, "curator-pass").is_none(), "held by the other process");
        assert!(last_report(host).is_none(), "the report is the other pass's to write");
        other.release(host);
    }

    #[test]
    fn a_manual_run_waits_for_another_process_pass() {
        let (mut plugin, ctx) = (plugin(), user_ctx());
        // Another process is in the middle of its pass.
        let other = try_lock(plugin.host(), "curator-pass").expect("free");
        let before = plugin.host().snapshot();
        let err = plugin.run_command(&ctx, "curator run").expect_err("refused while another pass runs");
        assert!(err.contains("a curator pass is running in another process"), "{err}");
        assert_eq!(plugin.host().snapshot(), before, "a refused run changes nothing");
        // A dry run reads only: it answers while the other pass runs.
        let dry = plugin.run_command(&ctx, "curator run --dry-run --json").expect("a dry run needs no lock");
        assert!(dry.contains("\"dryRun\":true"), "{dry}");
        other.release(plugin.host());
        // Once it is done, the manual run runs under the lock and lets it go.
        plugin.run_command(&ctx, "curator run").expect("runs once the other pass is done");
        assert!(plugin.host().file(&Root::State, PASS_LOCK).is_none(), "released after the manual run");
        assert_eq!(status(plugin.host(), "skill-1").as_deref(), Some("stale"));
    }

    #[test]
    fn a_manual_run_that_cannot_take_the_lock_says_so() {
        let (mut plugin, ctx) = (plugin(), user_ctx());
        // The state root refuses the lock's write (a read-only or full disk): nobody holds it.
        let host = plugin.host();
        host.fail_write_at.set(Some(host.writes_so_far() + 1));
        let before = host.snapshot();
        let err = plugin.run_command(&ctx, "curator run").expect_err("refused");
        assert!(err.contains("could not take `locks/curator-pass.lock`"), "{err}");
        assert!(!err.contains("another process"), "{err}");
        assert_eq!(plugin.host().snapshot(), before, "nothing changed");
    }

    /// The pass stalls past the stale age during its last skill's move; another process's manual
    /// `/skills curator run` breaks the lock and runs its own pass, writing its report. The stalled
    /// pass has lost its lock, yet writes its own (older) report and ledger entry over the
    /// other's: it never looks at its lock again after the last skill's check.
    #[test]
    fn a_pass_that_loses_its_lock_during_its_last_move_leaves_the_report_to_the_other() {
        let mut plugin = plugin();
        let theirs: Rc<RefCell<Option<Report>>> = Rc::default();
        let slot = theirs.clone();
        plugin.host().interleave(&format!("skill-{SKILLS}/"), move |host| {
            host.advance(STALE_LOCK_MS + 1);
            let mut other = try_lock(host, "curator-pass").expect("the stalled pass's lock is broken");
            let config = Config::default().curator;
            let mut ledger = Ledger::default();
            let mut cache = ListCache::default();
            let report = pass(host, &config, &mut ledger, &mut cache, false, 20, Some(&mut other));
            other.release(host);
            *slot.borrow_mut() = Some(report);
        });
        plugin.tick();
        let host = plugin.host();
        let theirs = theirs.borrow_mut().take().expect("the other pass ran");
        assert_eq!(
            last_report(host).map(|r| r.at),
            Some(theirs.at),
            "the stalled pass wrote its report over the other's"
        );
    }

    /// Same, with no skill of its own to check (a hand-written one only): a lock lost during the
    /// pass's listing goes unnoticed, and its report and ledger entry are written all the same.
    #[test]
    fn a_pass_with_no_skill_to_check_writes_no_report_after_losing_its_lock() {
        let host = FakeHost::new(START);
        let mut lock = try_lock(&host, "curator-pass").unwrap();
        host.interleave("index/", move |host| {
            host.advance(STALE_LOCK_MS + 1);
            assert!(try_lock(host, "curator-pass").is_some(), "the pass's lock is broken and held by another process");
        });
        skill(&host, &Root::UserSkills, "hand", "  author: someone\n");
        let config = Config::default().curator;
        let report =
            pass(&host, &config, &mut Ledger::default(), &mut ListCache::default(), false, 20, Some(&mut lock));
        assert!(host.logged("breaking the stale lock"), "the interleaved break ran");
        assert!(last_report(&host).is_none(), "a pass that lost its lock wrote a report: {report:?}");
        assert_eq!(Ledger::load(&host).curator_last_run_ms, None, "and its ledger entry");
    }
}

#[test]
fn a_passs_errors_are_redacted_before_the_report_is_kept_shown_or_logged() {
    let token = format!("ghp_{}", "k3Y9mQ2xV7bN4pL8wR1tZ6cF0hJ5sD3gA2eU");
    let mut report =
        Report { errors: vec![format!("deploy: io error near {token}"), "plain: i/o".into()], ..Report::default() };
    report.redact_errors();
    assert_eq!(report.errors, ["deploy: io error near [redacted: github-pat]", "plain: i/o"]);
}
