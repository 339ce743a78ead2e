//! Team libraries over git with real `git` and no network: a bare repository on disk as the
//! remote, two homes cloned from it standing in for two machines. Every landed change is one
//! commit with the plugin's trailers; `sync` moves them both ways; a credential committed by hand
//! stops the push, named by commit, file, line and rule but never shown; an unreachable remote is
//! reported and local work goes on; a same-skill edit on both sides stops before pushing and keeps
//! the local commit.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn wasm() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cli(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .arg("--wasm")
        .arg(wasm())
        .current_dir(home);
    cmd
}

/// A bare remote with one commit on `main`, and `n` homes cloned from it.
struct Team {
    _dir: tempfile::TempDir,
    remote: PathBuf,
    homes: Vec<PathBuf>,
}

fn team(n: usize) -> Team {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
    let seed = dir.path().join("seed");
    git(dir.path(), &["clone", "-q", remote.to_str().unwrap(), seed.to_str().unwrap()]);
    std::fs::write(seed.join("README.md"), "Our team's skills.\n").unwrap();
    git(&seed, &["-c", "user.name=seed", "-c", "user.email=seed@example.com", "add", "README.md"]);
    git(&seed, &["-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "-q", "-m", "start"]);
    git(&seed, &["push", "-q", "origin", "HEAD:main"]);
    let mut homes = Vec::new();
    for i in 0..n {
        let home = dir.path().join(format!("home-{i}"));
        std::fs::create_dir_all(&home).unwrap();
        let skills = home.join("skills");
        git(&home, &["clone", "-q", remote.to_str().unwrap(), skills.to_str().unwrap()]);
        git(&skills, &["config", "user.name", &format!("teammate {i}")]);
        git(&skills, &["config", "user.email", &format!("t{i}@example.com")]);
        let host = json!({"git": {"remote": "origin", "branch": "main", "library": format!("laptop-{i}")}});
        std::fs::write(home.join("host.json"), host.to_string()).unwrap();
        homes.push(home);
    }
    Team { _dir: dir, remote, homes }
}

fn tool(home: &Path, args: Value) -> Value {
    let out = cli(home)
        .args(["tool", "skill_manage"])
        .arg(args.to_string())
        .arg("--home")
        .arg(home)
        .args(["--session", "s1"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn sync(home: &Path) -> (Value, Option<i32>, String) {
    let out = cli(home).args(["sync", "--json", "--home"]).arg(home).output().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (report, out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn create(home: &Path, name: &str, body: &str) {
    let answer = tool(
        home,
        json!({"action": "create", "name": name, "description": format!("How the team does {name}. Use when {name} comes up."), "body": body}),
    );
    assert_eq!(answer["status"], "written", "{answer}");
}

#[test]
fn landed_changes_are_commits_with_trailers_and_sync_moves_them_both_ways() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    create(a, "release-notes", "Write the notes from merged PR titles.\n");
    let skills = a.join("skills");
    let message = git(&skills, &["log", "-1", "--format=%B"]);
    assert!(message.starts_with("release-notes: create (v1)"), "{message}");
    for trailer in ["Skill: release-notes", "Actor: agent", "Agent: main", "Session: s1", "Library: laptop-0"] {
        assert!(message.contains(trailer), "{trailer} in {message}");
    }
    assert_eq!(git(&skills, &["status", "--porcelain"]), "", "nothing left uncommitted");
    let stamped = std::fs::read_to_string(skills.join("release-notes/SKILL.md")).unwrap();
    assert!(stamped.contains("  library: laptop-0\n"), "the library that wrote it: {stamped}");

    let (report, code, stderr) = sync(a);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["pushed"], 1, "{report}");
    let (report, code, _) = sync(b);
    assert_eq!((code, report["pulled"].as_u64()), (Some(0), Some(1)), "{report}");
    assert!(b.join("skills/release-notes/SKILL.md").is_file());
    assert_eq!(git(&t.remote, &["log", "-1", "--format=%s", "main"]).trim(), "release-notes: create (v1)");
    // An archive records no version: its commit says what happened, not the last version's words.
    tool(b, json!({"action": "view", "name": "release-notes"}));
    let archived = tool(b, json!({"action": "archive", "name": "release-notes"}));
    assert!(archived["status"].is_string(), "{archived}");
    let subject = git(&b.join("skills"), &["log", "-1", "--format=%s"]);
    assert_eq!(subject.trim(), "release-notes: archived or removed");
}

#[test]
fn a_credential_committed_by_hand_stops_the_push_and_is_never_shown() {
    let t = team(1);
    let a = &t.homes[0];
    let skills = a.join("skills");
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    std::fs::create_dir_all(skills.join("deploy")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        format!("---\nname: deploy\ndescription: Deploys. Use when deploying.\n---\nexport GITHUB_TOKEN={key}\n"),
    )
    .unwrap();
    git(&skills, &["add", "deploy"]);
    git(&skills, &["commit", "-q", "-m", "deploy by hand"]);
    let before = git(&t.remote, &["rev-parse", "main"]);
    let (_, code, stderr) = sync(a);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("deploy/SKILL.md:5") && stderr.contains("github-pat"), "{stderr}");
    assert!(!stderr.contains(&key), "the value is never printed: {stderr}");
    assert_eq!(git(&t.remote, &["rev-parse", "main"]), before, "nothing reached the remote");
}

#[test]
fn an_unreachable_remote_is_reported_and_local_work_goes_on() {
    let t = team(1);
    let a = &t.homes[0];
    std::fs::rename(&t.remote, t.remote.with_extension("gone")).unwrap();
    create(a, "triage", "Label, then assign.\n");
    let (report, code, stderr) = sync(a);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(report["offline"].is_string(), "{report}");
    assert!(git(&a.join("skills"), &["log", "-1", "--format=%s"]).starts_with("triage: create"));
    std::fs::rename(t.remote.with_extension("gone"), &t.remote).unwrap();
    let (report, _, _) = sync(a);
    assert_eq!(report["pushed"], 1, "{report}");
}

#[test]
fn a_same_skill_edit_on_both_sides_lands_the_remote_and_stages_the_local_one() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    standup_and_retro_in_both(&t);
    for (home, text) in [(a, "Post blockers first, then wins."), (b, "Post blockers first; keep it short.")] {
        tool(home, json!({"action": "view", "name": "standup"}));
        let answer = tool(
            home,
            json!({"action": "patch", "name": "standup", "old_string": "Post blockers first.", "new_string": text}),
        );
        assert_eq!(answer["status"], "written", "{answer}");
    }
    // B also changed another skill: that change is not held up by the conflict.
    tool(b, json!({"action": "view", "name": "retro"}));
    tool(
        b,
        json!({"action": "patch", "name": "retro", "old_string": "went well.", "new_string": "went well, then what to change."}),
    );
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let conflict = &report["conflicts"][0];
    assert_eq!(conflict["file"], "standup/SKILL.md", "{report}");
    let id = conflict["staged"].as_str().unwrap_or_else(|| panic!("the local edit is staged: {report}"));
    // On disk: the remote version, never conflict markers; the local one waits for approval.
    let on_disk = std::fs::read_to_string(b.join("skills/standup/SKILL.md")).unwrap();
    assert!(on_disk.contains("then wins") && !on_disk.contains("<<<<<<<"), "{on_disk}");
    let diff = cli(b).args(["skills", "--home"]).arg(b).args(["diff", id]).output().unwrap();
    let diff = String::from_utf8_lossy(&diff.stdout);
    assert!(
        diff.contains("+Post blockers first; keep it short.") && diff.contains("-Post blockers first, then wins."),
        "{diff}"
    );
    // B's other change went out; the remote has no trace of the conflict.
    assert_eq!(report["pushed"], 1, "{report}");
    let remote_retro = git(&t.remote, &["show", "main:retro/SKILL.md"]);
    assert!(remote_retro.contains("then what to change"), "{remote_retro}");
    assert!(git(&t.remote, &["show", "main:standup/SKILL.md"]).contains("then wins"));
    assert_eq!(git(&b.join("skills"), &["status", "--porcelain"]), "", "no replay left half done");
    // Approving the staged write makes it the next change, which the next sync sends.
    let approved = cli(b).args(["skills", "--home"]).arg(b).args(["approve", id]).output().unwrap();
    assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(sync(b).0["pushed"], 1);
    assert!(git(&t.remote, &["show", "main:standup/SKILL.md"]).contains("keep it short"));
}

/// A teammate's skill is not hand-written: this machine's agent patches it, or only stages
/// changes to it, as this machine's operator config says; its own skills land either way.
#[test]
fn a_teammates_skill_is_patched_or_staged_as_this_machines_config_says() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    create(a, "oncall", "Page the secondary after 15 minutes.\n");
    sync(a);
    sync(b);
    create(b, "handover", "Write what is still open.\n");
    let patch = |home: &Path, name: &str, old: &str, new: &str| {
        tool(home, json!({"action": "view", "name": name}));
        tool(home, json!({"action": "patch", "name": name, "old_string": old, "new_string": new}))
    };
    // Default: teammates' skills are patched like this machine's own.
    let landed = patch(b, "oncall", "15 minutes.", "15 minutes, then the lead.");
    assert_eq!(landed["status"], "written", "{landed}");
    // `stage`: a change to laptop-0's skill waits for this machine's operator; its own lands.
    std::fs::write(b.join("config.json"), json!({"team": {"othersSkills": "stage"}}).to_string()).unwrap();
    let staged = patch(b, "oncall", "then the lead.", "then the lead, then the manager.");
    assert_eq!(staged["status"], "staged", "{staged}");
    assert!(!std::fs::read_to_string(b.join("skills/oncall/SKILL.md")).unwrap().contains("the manager"));
    let own = patch(b, "handover", "still open.", "still open, and who owns it.");
    assert_eq!(own["status"], "written", "{own}");
    // An edit cannot move a skill to another library.
    tool(b, json!({"action": "view", "name": "oncall"}));
    let text = std::fs::read_to_string(b.join("skills/oncall/SKILL.md"))
        .unwrap()
        .replace("library: laptop-0", "library: laptop-1");
    let relabel = tool(b, json!({"action": "edit", "name": "oncall", "content": text}));
    assert_eq!(relabel["status"], "staged", "still laptop-0's, so staged: {relabel}");
}

/// Two machines wrote the same lesson: after the sync that brings one to the other, the pair is
/// reported (neither is changed).
#[test]
fn near_duplicates_that_arrive_are_reported_after_the_sync() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    let description = "Write release notes from merged pull request titles. Use when preparing a release.";
    let answer = tool(
        a,
        json!({"action": "create", "name": "release-notes", "description": description, "body": "Group by label.\n"}),
    );
    assert_eq!(answer["status"], "written", "{answer}");
    sync(a);
    let twin = "Write the release notes from the merged pull request titles. Use when preparing releases.";
    let answer = tool(
        b,
        json!({"action": "create", "name": "release-notes-writing", "description": twin, "body": "Group by label.\n"}),
    );
    assert_eq!(answer["status"], "written", "{answer}");
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let duplicates = report["duplicates"].as_array().unwrap();
    assert!(duplicates.iter().any(|d| d.as_str().unwrap().contains("release-notes")), "{report}");
    assert!(
        b.join("skills/release-notes/SKILL.md").is_file() && b.join("skills/release-notes-writing/SKILL.md").is_file()
    );
}

/// With `git.syncMinutes`, the MCP server syncs on its own (the minute shortened for the test).
#[test]
fn the_mcp_server_syncs_a_team_library_on_its_own() {
    let t = team(1);
    let a = &t.homes[0];
    let host = json!({"git": {"remote": "origin", "branch": "main", "library": "laptop-0", "syncMinutes": 1}});
    std::fs::write(a.join("host.json"), host.to_string()).unwrap();
    create(a, "onboarding", "Pair on the first ticket.\n");
    let mut server = cli(a)
        .args(["mcp", "--home"])
        .arg(a)
        .env("SELF_EVOLVE_TICK_MS", "200")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let pushed = loop {
        let head = git(&t.remote, &["log", "-1", "--format=%s", "main"]);
        if head.starts_with("onboarding: create") {
            break true;
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let _ = server.kill();
    let _ = server.wait();
    assert!(pushed, "the server pushed the landed change by itself");
}

// ---- a hostile read: what a teammate's repository or a second process can do ----

fn patch(home: &Path, name: &str, old: &str, new: &str) -> Value {
    tool(home, json!({"action": "view", "name": name}));
    tool(home, json!({"action": "patch", "name": name, "old_string": old, "new_string": new}))
}

/// A's `standup` and `retro` in both homes.
fn standup_and_retro_in_both(t: &Team) {
    create(&t.homes[0], "standup", "Post blockers first.\n");
    create(&t.homes[0], "retro", "Start with what went well.\n");
    sync(&t.homes[0]);
    sync(&t.homes[1]);
}

/// A's `standup` in both homes, then an edit of it on each side, A's pushed first: B's next
/// sync meets the conflict.
fn standup_edited_on_both_sides(t: &Team, from_b: &str) {
    let (a, b) = (&t.homes[0], &t.homes[1]);
    create(a, "standup", "Post blockers first.\n");
    sync(a);
    sync(b);
    assert_eq!(patch(a, "standup", "blockers first.", "blockers first, from A.")["status"], "written");
    assert_eq!(patch(b, "standup", "blockers first.", &format!("blockers first, {from_b}."))["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
}

/// Two skills A and B both changed, one sync each: every file both sides changed is a conflict,
/// not only the ones git stopped at first.
#[test]
fn every_file_both_sides_changed_is_staged_not_only_the_first() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    standup_and_retro_in_both(&t);
    for (home, tag) in [(a, "from A"), (b, "from B")] {
        assert_eq!(patch(home, "standup", "blockers first.", &format!("blockers first, {tag}."))["status"], "written");
        assert_eq!(patch(home, "retro", "went well.", &format!("went well, {tag}."))["status"], "written");
    }
    assert_eq!(sync(a).0["pushed"], 2);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let mut files: Vec<&str> =
        report["conflicts"].as_array().unwrap().iter().map(|c| c["file"].as_str().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["retro/SKILL.md", "standup/SKILL.md"], "{report}");
    for c in report["conflicts"].as_array().unwrap() {
        let id = c["staged"].as_str().unwrap_or_else(|| panic!("staged: {report}"));
        let diff = cli(b).args(["skills", "--home"]).arg(b).args(["diff", id]).output().unwrap();
        assert!(String::from_utf8_lossy(&diff.stdout).contains("from B"), "B's edit waits as {id}");
    }
    assert!(std::fs::read_to_string(b.join("skills/retro/SKILL.md")).unwrap().contains("from A"));
}

/// A change git cannot settle (archived here, patched there) is undone, named, and blocks
/// nothing later: no rebase is left half done, and later local commits stay.
#[test]
fn a_replay_git_cannot_settle_is_undone_and_later_work_is_kept() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    create(a, "standup", "Post blockers first.\n");
    sync(a);
    sync(b);
    assert_eq!(patch(b, "standup", "blockers first.", "blockers first, then wins.")["status"], "written");
    assert_eq!(sync(b).0["pushed"], 1);
    tool(a, json!({"action": "view", "name": "standup"}));
    assert!(tool(a, json!({"action": "archive", "name": "standup"}))["status"].is_string());
    let (_, code, stderr) = sync(a);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("undone") && stderr.contains("nothing was lost"), "{stderr}");
    let skills = a.join("skills");
    assert!(!skills.join(".git/rebase-merge").exists() && !skills.join(".git/rebase-apply").exists());
    create(a, "triage", "Label, then assign.\n");
    sync(a);
    let log = git(&skills, &["log", "--format=%s"]);
    assert!(log.contains("triage: create") && log.contains("standup: archived"), "{log}");
    assert!(skills.join("triage/SKILL.md").is_file());
}

/// The plugin cannot start after the replay (a broken config.json): the local version was kept
/// before anything changed, and the report says where.
#[test]
fn local_versions_are_kept_before_the_replay_whatever_happens_after() {
    let t = team(2);
    let b = &t.homes[1];
    standup_edited_on_both_sides(&t, "PRECIOUS");
    std::fs::write(b.join("config.json"), json!({"team": {"othersSkills": "bogus"}}).to_string()).unwrap();
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let kept = report["conflicts"][0]["kept"].as_str().unwrap_or_else(|| panic!("kept: {report}"));
    assert!(std::fs::read_to_string(kept).unwrap().contains("PRECIOUS"), "{report}");
}

/// A name git would quote (`café.md`) is one conflict like any other, staged against the remote.
#[test]
fn a_name_git_would_quote_is_staged_like_any_other() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    create(a, "notes", "Keep notes.\n");
    let write = |home: &Path, text: &str| {
        tool(home, json!({"action": "view", "name": "notes"}));
        tool(home, json!({"action": "write_file", "name": "notes", "file_path": "references/café.md", "content": text}))
    };
    assert_eq!(write(a, "first\n")["status"], "written");
    sync(a);
    sync(b);
    write(a, "from A\n");
    write(b, "from B\n");
    sync(a);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"][0]["file"], "notes/references/café.md", "{report}");
    assert!(report["conflicts"][0]["staged"].is_string(), "{report}");
}

/// A remote emptied and made again: everything goes out, so everything is scanned, including
/// a credential that came from the old remote.
#[test]
fn a_remote_made_again_empty_gets_the_whole_history_scanned() {
    let t = team(1);
    let a = &t.homes[0];
    let skills = a.join("skills");
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    std::fs::write(skills.join("notes.md"), format!("token {key}\n")).unwrap();
    git(&skills, &["add", "notes.md"]);
    git(&skills, &["commit", "-q", "-m", "notes"]);
    git(&skills, &["push", "-q", "origin", "HEAD:main"]);
    std::fs::remove_dir_all(&t.remote).unwrap();
    git(t.remote.parent().unwrap(), &["init", "-q", "--bare", "-b", "main", t.remote.to_str().unwrap()]);
    create(a, "triage", "Label, then assign.\n");
    let (_, code, stderr) = sync(a);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("notes.md") && !stderr.contains(&key), "{stderr}");
    assert!(git(&t.remote, &["branch", "--list"]).trim().is_empty(), "nothing pushed");
}

/// A credential in a commit message or in a file name stops the push as one in a file does.
#[test]
fn a_credential_in_a_commit_message_or_a_file_name_stops_the_push() {
    for in_name in [false, true] {
        let t = team(1);
        let a = &t.homes[0];
        let skills = a.join("skills");
        let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
        let (file, message) = if in_name {
            (format!("{key}.md"), "notes".to_string())
        } else {
            ("notes.md".into(), format!("export TOKEN={key}"))
        };
        std::fs::write(skills.join(&file), "nothing secret here\n").unwrap();
        git(&skills, &["add", "--", &file]);
        git(&skills, &["commit", "-q", "-m", &message]);
        let before = git(&t.remote, &["rev-parse", "main"]);
        let (_, code, stderr) = sync(a);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains(if in_name { "(file name)" } else { "(commit message)" }), "{stderr}");
        assert!(!stderr.contains(&key), "{stderr}");
        assert_eq!(git(&t.remote, &["rev-parse", "main"]), before);
    }
}

/// A teammate commits `* merge=union`: a same-skill edit still lands the remote version and
/// stages the local one; nothing splices both into one SKILL.md.
#[test]
fn a_committed_gitattributes_cannot_choose_how_skills_merge() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    std::fs::write(a.join("skills/.gitattributes"), "* merge=union\n").unwrap();
    git(&a.join("skills"), &["add", ".gitattributes"]);
    git(&a.join("skills"), &["commit", "-q", "-m", "attributes"]);
    standup_edited_on_both_sides(&t, "from B");
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(report["conflicts"][0]["staged"].is_string(), "{report}");
    let on_disk = std::fs::read_to_string(b.join("skills/standup/SKILL.md")).unwrap();
    assert!(on_disk.contains("from A") && !on_disk.contains("from B"), "{on_disk}");
    assert_eq!(on_disk.matches("---\n").count(), 2, "one frontmatter: {on_disk}");
}

/// `GIT_DIR` and `GIT_WORK_TREE` inherited from a git hook, and a file named like a pathspec:
/// the commit still lands in this library, with exactly its own files.
#[test]
fn the_environment_and_odd_names_cannot_move_a_commit() {
    let t = team(1);
    let a = &t.homes[0];
    let skills = a.join("skills");
    let other = t.remote.parent().unwrap().join("other");
    git(t.remote.parent().unwrap(), &["init", "-q", other.to_str().unwrap()]);
    std::fs::write(skills.join(":(exclude)README.md"), "a name, not a pattern\n").unwrap();
    let out = cli(a)
        .args(["tool", "skill_manage"])
        .arg(json!({"action": "create", "name": "zeta", "description": "How the team does zeta. Use when zeta comes up.", "body": "Z.\n"}).to_string())
        .arg("--home")
        .arg(a)
        .args(["--session", "s1"])
        .env("GIT_DIR", other.join(".git"))
        .env("GIT_WORK_TREE", &other)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&skills, &["status", "--porcelain"]), "", "everything committed here");
    let zeta = git(&skills, &["log", "-1", "--format=%s", "--name-only", "--", "zeta"]);
    assert!(zeta.starts_with("zeta: create") && !zeta.contains("README"), "{zeta}");
    assert!(Command::new("git").arg("-C").arg(&other).args(["log", "-1"]).output().unwrap().stdout.is_empty());
}

// ---- a merge git can make is no conflict; a conflict is only what git could not merge ----

/// `self-evolve skills ARGS` in `home`: stdout (exit status checked).
fn skills(home: &Path, args: &[&str]) -> String {
    let out = cli(home).args(["skills", "--home"]).arg(home).args(args).output().unwrap();
    assert!(out.status.success(), "skills {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The staged writes waiting in a home's state root.
fn pending_ids(home: &Path) -> Vec<String> {
    let dir = home.join("self-evolve/pending");
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()))
        .into_iter()
        .flatten()
        .collect();
    ids.sort();
    ids
}

/// The bookkeeping every landed or staged write re-stamps: never content.
fn is_bookkeeping(line: &str) -> bool {
    let line = line.trim_start_matches(['-', '+']).trim_start();
    line.starts_with("updated-at:") || line.starts_with("version:")
}

/// A staged conflict's diff takes away exactly `removed` (bookkeeping aside), and adds `added`:
/// never a line the local side did not remove (a teammate's edit).
fn assert_diff_changes(diff: &str, removed: &[&str], added: &[&str]) {
    let lines = |sign: char, header: &str| -> Vec<String> {
        diff.lines()
            .filter(|l| l.starts_with(sign) && !l.starts_with(header) && !is_bookkeeping(l))
            .map(|l| l[1..].to_string())
            .collect()
    };
    assert_eq!(lines('-', "---"), removed, "the only lines taken away:\n{diff}");
    assert_eq!(lines('+', "+++"), added, "the only lines added:\n{diff}");
}

/// `standup` with five body lines, made by A, in both homes.
const FIVE: &str =
    "Post blockers first.\nThen what shipped.\nKeep it to one minute each.\nPark long talks.\nEnd on time.\n";

fn five_lines_in_both(t: &Team) {
    create(&t.homes[0], "standup", FIVE);
    assert_eq!(sync(&t.homes[0]).0["pushed"], 1);
    sync(&t.homes[1]);
}

fn skill_text(home: &Path, name: &str) -> String {
    std::fs::read_to_string(home.join("skills").join(name).join("SKILL.md")).unwrap()
}

/// A and B edit different lines of one skill: git merges both (only `updated-at` clashes), the
/// merged file goes out, and nothing is staged: no "conflict" whose approval would drop A's line.
#[test]
fn edits_on_different_lines_merge_and_stage_nothing() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    assert_eq!(patch(a, "standup", "Post blockers first.", "Post blockers first, from A.")["status"], "written");
    assert_eq!(patch(b, "standup", "Park long talks.", "Park long talks, from B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"], json!([]), "git merged both edits: {report}");
    assert_eq!(report["pushed"], 1, "{report}");
    assert_eq!(pending_ids(b), Vec::<String>::new(), "nothing staged");
    sync(a);
    for home in [a, b] {
        let text = skill_text(home, "standup");
        assert!(text.contains("first, from A.") && text.contains("talks, from B."), "both edits: {text}");
    }
    assert_eq!(skill_text(a, "standup"), skill_text(b, "standup"));
    let remote = git(&t.remote, &["show", "main:standup/SKILL.md"]);
    assert_eq!(remote, skill_text(a, "standup"));
    assert_eq!(pending_ids(a), Vec::<String>::new());
    // Nothing is left to send or to bring, and no copy of B's version is left behind.
    assert_eq!(sync(b).0["pushed"], 0);
    assert_eq!(git(&b.join("skills"), &["status", "--porcelain"]), "");
    let kept = std::fs::read_dir(b.join("run/conflicts")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0, "nothing kept: everything was merged");
}

/// B edited twice (its version is ahead of A's) and on other lines than A: version and
/// updated-at clash, which is bookkeeping, not a conflict.
#[test]
fn a_version_and_timestamp_clash_alone_is_no_conflict() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    assert_eq!(patch(a, "standup", "End on time.", "End on time, from A.")["status"], "written");
    assert_eq!(patch(b, "standup", "Post blockers first.", "Post blockers first, from B.")["status"], "written");
    assert_eq!(patch(b, "standup", "Then what shipped.", "Then what shipped, from B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"], json!([]), "{report}");
    assert_eq!(pending_ids(b), Vec::<String>::new());
    let text = skill_text(b, "standup");
    assert!(text.contains("time, from A.") && text.contains("first, from B.") && text.contains("shipped, from B."));
    // The same edit made on both sides: only bookkeeping differs, so nothing is staged.
    assert_eq!(patch(a, "standup", "Park long talks.", "Park long talks outside.")["status"], "written");
    sync(a);
    assert_eq!(patch(b, "standup", "Park long talks.", "Park long talks outside.")["status"], "written");
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"], json!([]), "{report}");
    assert_eq!(pending_ids(b), Vec::<String>::new());
}

/// A and B edit the same line (A also another): the merged file lands with A's line, and the
/// staged conflict changes that one line to B's; approving it keeps everything else A did.
#[test]
fn an_edit_of_the_same_line_stages_only_that_line_and_approval_keeps_the_rest() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    assert_eq!(patch(a, "standup", "Keep it to one minute each.", "Keep it to two minutes each.")["status"], "written");
    assert_eq!(patch(a, "standup", "End on time.", "End on time, from A.")["status"], "written");
    assert_eq!(patch(b, "standup", "Keep it to one minute each.", "Keep it to 90 seconds each.")["status"], "written");
    assert_eq!(patch(b, "standup", "Post blockers first.", "Post blockers first, from B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 2);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let conflicts = report["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{report}");
    assert_eq!(conflicts[0]["file"], "standup/SKILL.md");
    let id = conflicts[0]["staged"].as_str().unwrap_or_else(|| panic!("staged: {report}")).to_string();
    assert_eq!(pending_ids(b), std::slice::from_ref(&id));
    // On disk and on the remote: A's line, and every edit git could merge.
    let merged = skill_text(b, "standup");
    assert!(
        merged.contains("two minutes each.") && merged.contains("time, from A.") && merged.contains("first, from B.")
    );
    assert_eq!(git(&t.remote, &["show", "main:standup/SKILL.md"]), merged);
    let diff = skills(b, &["diff", &id]);
    assert_diff_changes(&diff, &["Keep it to two minutes each."], &["Keep it to 90 seconds each."]);
    // Approving applies B's version of that line, and only that.
    skills(b, &["approve", &id]);
    let approved = skill_text(b, "standup");
    assert!(approved.contains("90 seconds each.") && !approved.contains("two minutes"), "{approved}");
    assert!(approved.contains("time, from A.") && approved.contains("first, from B."), "{approved}");
    assert!(approved.contains("Then what shipped.\n") && approved.contains("Park long talks.\n"), "{approved}");
    assert_eq!(sync(b).0["pushed"], 1);
    sync(a);
    assert_eq!(skill_text(a, "standup"), approved);
}

/// Rejecting the staged conflict keeps the merged file as it is, everywhere.
#[test]
fn rejecting_a_same_line_conflict_keeps_the_merged_file() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    assert_eq!(patch(a, "standup", "Park long talks.", "Park long talks, says A.")["status"], "written");
    assert_eq!(patch(a, "standup", "Post blockers first.", "Post blockers first, from A.")["status"], "written");
    assert_eq!(patch(b, "standup", "Park long talks.", "Park long talks, says B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 2);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let id = report["conflicts"][0]["staged"].as_str().unwrap_or_else(|| panic!("staged: {report}")).to_string();
    assert_eq!(report["conflicts"].as_array().unwrap().len(), 1, "{report}");
    let diff = skills(b, &["diff", &id]);
    assert_diff_changes(&diff, &["Park long talks, says A."], &["Park long talks, says B."]);
    let merged = skill_text(b, "standup");
    skills(b, &["reject", &id]);
    assert_eq!(skill_text(b, "standup"), merged);
    assert_eq!(pending_ids(b), Vec::<String>::new());
    assert_eq!(sync(b).0["pushed"], 0);
    sync(a);
    assert_eq!(skill_text(a, "standup"), merged);
    assert!(merged.contains("says A.") && merged.contains("first, from A."), "{merged}");
}

/// Frontmatter edits: a description changed on one side and the body on the other merge; the
/// description changed on both sides stages that line only.
#[test]
fn frontmatter_edits_merge_like_body_lines() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    let old = "How the team does standup.";
    assert_eq!(patch(a, "standup", old, "How the team runs its daily standup.")["status"], "written");
    assert_eq!(patch(b, "standup", "End on time.", "End on time, from B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"], json!([]), "{report}");
    assert_eq!(pending_ids(b), Vec::<String>::new());
    let text = skill_text(b, "standup");
    assert!(text.contains("runs its daily standup.") && text.contains("time, from B."), "{text}");
    sync(a);
    // Both change the description (and B a body line too): one conflict, the description's line.
    let now = "How the team runs its daily standup.";
    assert_eq!(patch(a, "standup", now, "How the team runs standup, by A.")["status"], "written");
    assert_eq!(patch(b, "standup", now, "How the team runs standup, by B.")["status"], "written");
    assert_eq!(patch(b, "standup", "Post blockers first.", "Post blockers first, from B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"].as_array().unwrap().len(), 1, "{report}");
    let id = report["conflicts"][0]["staged"].as_str().unwrap_or_else(|| panic!("staged: {report}")).to_string();
    let diff = skills(b, &["diff", &id]);
    let description = |by: &str| format!("description: How the team runs standup, by {by}. Use when standup comes up.");
    assert_diff_changes(&diff, &[&description("A")], &[&description("B")]);
    let merged = skill_text(b, "standup");
    assert!(merged.contains("by A.") && merged.contains("first, from B."), "{merged}");
}

/// A file beside SKILL.md merges the same way: other lines merge, the same line is staged alone.
#[test]
fn a_file_beside_skill_md_merges_line_by_line_too() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    create(a, "notes", "Keep notes.\n");
    let write = |home: &Path, text: &str| {
        tool(home, json!({"action": "view", "name": "notes"}));
        let answer = tool(
            home,
            json!({"action": "write_file", "name": "notes", "file_path": "references/steps.md", "content": text}),
        );
        assert_eq!(answer["status"], "written", "{answer}");
    };
    write(a, "one\ntwo\nthree\nfour\nfive\n");
    sync(a);
    sync(b);
    write(a, "one by A\ntwo\nthree\nfour\nfive\n");
    write(b, "one\ntwo\nthree\nfour\nfive by B\n");
    sync(a);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"], json!([]), "{report}");
    let steps = |home: &Path| std::fs::read_to_string(home.join("skills/notes/references/steps.md")).unwrap();
    assert_eq!(steps(b), "one by A\ntwo\nthree\nfour\nfive by B\n");
    sync(a);
    assert_eq!(steps(a), steps(b));
    write(a, "one by A\ntwo\nthree by A\nfour\nfive by B\n");
    write(b, "one by A\ntwo\nthree by B\nfour\nfive by B\n");
    sync(a);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["conflicts"].as_array().unwrap().len(), 1, "{report}");
    let id = report["conflicts"][0]["staged"].as_str().unwrap_or_else(|| panic!("staged: {report}")).to_string();
    assert_diff_changes(&skills(b, &["diff", &id]), &["three by A"], &["three by B"]);
    skills(b, &["approve", &id]);
    assert_eq!(steps(b), "one by A\ntwo\nthree by B\nfour\nfive by B\n");
}

/// A teammate rewrote two lines as one; this machine edited one of them. That edit cannot be
/// put in the teammate's place line by line: the staged write adds it after their line and
/// takes nothing out, and this machine's whole version stays kept.
#[test]
fn an_edit_inside_a_teammates_rewrite_is_added_and_the_whole_version_kept() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    let two = "Then what shipped.\nKeep it to one minute each.";
    assert_eq!(patch(a, "standup", two, "Then what shipped, in a minute.")["status"], "written");
    assert_eq!(patch(b, "standup", "Keep it to one minute each.", "Keep it to 90 seconds each.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let conflict = &report["conflicts"][0];
    let id = conflict["staged"].as_str().unwrap_or_else(|| panic!("staged: {report}")).to_string();
    assert_diff_changes(&skills(b, &["diff", &id]), &[], &["Keep it to 90 seconds each."]);
    let kept = conflict["kept"].as_str().unwrap_or_else(|| panic!("kept: {report}"));
    assert!(std::fs::read_to_string(kept).unwrap().contains("Then what shipped.\nKeep it to 90 seconds each.\n"));
    assert!(skill_text(b, "standup").contains("Then what shipped, in a minute.\nPark long talks.\n"));
}

/// `standup`'s whole SKILL.md rewritten through the agent's `edit` (the plugin re-stamps it).
fn edit_text(home: &Path, name: &str, edit: impl Fn(&str) -> String) {
    let text = skill_text(home, name);
    let new = edit(&text);
    assert_ne!(new, text, "the edit changes something");
    tool(home, json!({"action": "view", "name": name}));
    let answer = tool(home, json!({"action": "edit", "name": name, "content": new}));
    assert_eq!(answer["status"], "written", "{answer}");
}

/// A line inserted after the frontmatter's last metadata entry (right after `version:` or
/// `library:`, lines both sides re-stamp on every write).
fn after_metadata(text: &str, line: &str) -> String {
    let close = text[4..].find("\n---\n").map(|i| i + 4).expect("frontmatter");
    format!("{}\n{line}{}", &text[..close], &text[close..])
}

/// A teammate adds a frontmatter line next to the bookkeeping both sides re-stamp (one unequal
/// hunk in git's diff) while this machine edits the body: git merges both, and nothing staged
/// or kept takes the teammate's line out.
#[test]
fn a_teammates_line_beside_the_bookkeeping_is_never_taken_out() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    edit_text(a, "standup", |text| after_metadata(text, "allowed-tools: Bash"));
    assert!(skill_text(a, "standup").contains("allowed-tools: Bash\n"), "{}", skill_text(a, "standup"));
    assert_eq!(patch(b, "standup", "End on time.", "End on time, from B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let text = skill_text(b, "standup");
    assert!(text.contains("allowed-tools: Bash\n") && text.contains("time, from B."), "{text}");
    for conflict in report["conflicts"].as_array().unwrap() {
        if let Some(id) = conflict["staged"].as_str() {
            let diff = skills(b, &["diff", id]);
            assert!(!diff.contains("-allowed-tools"), "a staged conflict takes out A's line:\n{diff}");
        }
    }
    assert_eq!(report["conflicts"], json!([]), "git merged both: {report}");
    assert_eq!(pending_ids(b), Vec::<String>::new());
    // A adds a metadata entry right after `version:` while B edits another frontmatter line.
    sync(a);
    edit_text(a, "standup", |text| text.replacen("\nallowed-tools:", "\n  wiki: team/standup\nallowed-tools:", 1));
    let ours = skill_text(a, "standup");
    assert!(
        ours.contains("\"\n  wiki: team/standup\nallowed-tools") && ours.contains("  version: \"3\"\n  wiki"),
        "{ours}"
    );
    let old = "How the team does standup.";
    assert_eq!(patch(b, "standup", old, "How the team runs standup, by B.")["status"], "written");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let text = skill_text(b, "standup");
    assert!(
        text.contains("  wiki: team/standup\n") && text.contains("by B.") && text.contains("allowed-tools"),
        "{text}"
    );
    assert_eq!(report["conflicts"], json!([]), "git merged both: {report}");
    assert_eq!(pending_ids(b), Vec::<String>::new());
}

/// This machine pins a skill a teammate edits: the merged file lacks the pin (git took the
/// remote's lines beside it), which a staged write cannot set. Sync says so, naming the command
/// to run again, and keeps this machine's version.
#[test]
fn a_local_pin_the_merge_lacks_is_reported_and_kept() {
    let t = team(2);
    let (a, b) = (&t.homes[0], &t.homes[1]);
    five_lines_in_both(&t);
    assert_eq!(patch(a, "standup", "End on time.", "End on time, from A.")["status"], "written");
    skills(b, &["pin", "standup"]);
    assert!(skill_text(b, "standup").contains("pinned: \"true\""), "{}", skill_text(b, "standup"));
    assert_eq!(git(&b.join("skills"), &["status", "--porcelain"]), "", "the pin is committed");
    assert_eq!(sync(a).0["pushed"], 1);
    let (report, code, stderr) = sync(b);
    assert_eq!(code, Some(0), "{stderr}");
    let text = skill_text(b, "standup");
    assert!(text.contains("time, from A."), "{text}");
    if text.contains("pinned: \"true\"") {
        return; // git merged the pin: nothing to say.
    }
    let conflicts = report["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{report}");
    let why = conflicts[0]["why"].as_str().unwrap_or_else(|| panic!("why: {report}"));
    assert!(why.contains("pinned") && why.contains("self-evolve skills pin standup"), "{why}");
    let kept = conflicts[0]["kept"].as_str().unwrap_or_else(|| panic!("kept: {report}"));
    assert!(std::fs::read_to_string(kept).unwrap().contains("pinned: \"true\""), "the kept copy has the pin");
}
