//! Governance has no side doors (DESIGN, "Roots and hostile files"), on the fake host through the
//! whole plugin and its `/skills` command: every change an agent asks for through `skill_manage`
//! follows the approval rule, archive included (staged, then approved or rejected by the
//! operator), and the fields the operator or the host owns are kept from disk on every write.

use super::*;
use crate::api::{CallContext, Origin};
use crate::digest::sha256_hex;
use crate::fake::{FakeHost, Node};
use crate::host::Root;
use crate::host::WriteMode;
use crate::library::staging::pending;
use crate::plugin::Plugin;
use serde_json::{Value, json};
use std::collections::BTreeMap;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const START: u64 = 1_767_225_600_000;

/// `deploy`'s SKILL.md as this plugin wrote it on laptop-a (a teammate's machine when this one
/// is laptop-b), with a reference file beside it.
const DEPLOY: &str = "---\nname: deploy\ndescription: Ships the app to staging. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n  created-at: \"2025-06-01T00:00:00.000Z\"\n  library: laptop-a\n  version: \"3\"\n---\n1. build\n2. push\n";

fn ctx(session: &str) -> CallContext {
    CallContext { session: session.into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: "/work/p".into() }
}

fn call(plugin: &mut Plugin<FakeHost>, args: &Value) -> Result<Value, Value> {
    plugin.host().advance(1);
    match plugin.call_tool(&ctx("s1"), "skill_manage", &args.to_string()) {
        Ok(out) => Ok(serde_json::from_str(&out).unwrap()),
        Err(err) => Err(serde_json::from_str(&err).unwrap()),
    }
}

/// A `/skills` line (with `--json`) as the operator of session s1.
fn skills(plugin: &mut Plugin<FakeHost>, line: &str) -> Result<Value, String> {
    plugin.host().advance(1);
    plugin.run_command(&ctx("s1"), &format!("{line} --json")).map(|out| serde_json::from_str(&out).unwrap())
}

/// The user skills folder, file by file.
fn user_skills(host: &FakeHost) -> BTreeMap<String, Node> {
    host.snapshot().remove(&Root::UserSkills).unwrap_or_default()
}

fn text(host: &FakeHost, path: &str) -> String {
    String::from_utf8(host.file(&Root::UserSkills, path).unwrap_or_default()).unwrap()
}

/// The approval rule in force, and how it was set.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Setting {
    /// Writes land.
    Off,
    /// `writeApproval: true` in the config.
    Config,
    /// `/skills approval on`, the operator's runtime switch.
    Switch,
    /// `"stage": true` in the call's arguments.
    StageArg,
    /// `team.othersSkills: stage`, and `deploy` is a teammate's skill.
    Teammate,
}

const SETTINGS: [Setting; 5] = [Setting::Off, Setting::Config, Setting::Switch, Setting::StageArg, Setting::Teammate];

/// A plugin under `setting` whose agent (main, session s1) has viewed `deploy`.
fn setup(setting: Setting) -> Plugin<FakeHost> {
    let host = FakeHost::new(START);
    host.write(&Root::UserSkills, "deploy/SKILL.md", DEPLOY.as_bytes(), WriteMode::CreateNew).unwrap();
    host.write(&Root::UserSkills, "deploy/references/r0.md", b"notes\n", WriteMode::CreateNew).unwrap();
    host.advance(crate::library::storage::list_cache::RACY_MS);
    let config = match setting {
        Setting::Config => r#"{"writeApproval":true}"#,
        Setting::Teammate => r#"{"team":{"library":"laptop-b","othersSkills":"stage"}}"#,
        Setting::Off | Setting::Switch | Setting::StageArg => "{}",
    };
    let mut plugin = Plugin::new(host);
    plugin.init(config, &["tools".into()]).unwrap();
    if setting == Setting::Switch {
        skills(&mut plugin, "approval on").unwrap();
    }
    call(&mut plugin, &json!({"action": "view", "name": "deploy"})).unwrap();
    plugin
}

/// Every action that changes the library, with its arguments.
fn mutations() -> Vec<(&'static str, Value)> {
    let edited = DEPLOY.replace("2. push\n", "2. push\n3. tag the release\n");
    vec![
        (
            "create",
            json!({"action": "create", "name": "rotate-certs", "description": "Rotates TLS certificates. Use when a certificate expires.", "body": "Run certbot renew.\n"}),
        ),
        (
            "patch",
            json!({"action": "patch", "name": "deploy", "old_string": "2. push", "new_string": "2. push the tag"}),
        ),
        ("edit", json!({"action": "edit", "name": "deploy", "content": edited})),
        (
            "write_file",
            json!({"action": "write_file", "name": "deploy", "file_path": "references/new.md", "content": "more\n"}),
        ),
        ("remove_file", json!({"action": "remove_file", "name": "deploy", "file_path": "references/r0.md"})),
        ("archive", json!({"action": "archive", "name": "deploy", "reason": "replaced by release"})),
    ]
}

/// Whether `action` has taken effect on `host`.
fn landed(host: &FakeHost, action: &str) -> bool {
    match action {
        "create" => host.file(&Root::UserSkills, "rotate-certs/SKILL.md").is_some(),
        "patch" => text(host, "deploy/SKILL.md").contains("2. push the tag"),
        "edit" => text(host, "deploy/SKILL.md").contains("3. tag the release"),
        "write_file" => host.file(&Root::UserSkills, "deploy/references/new.md").as_deref() == Some(&b"more\n"[..]),
        "remove_file" => {
            host.file(&Root::UserSkills, "deploy/references/r0.md").is_none()
                && host.file(&Root::UserSkills, "deploy/SKILL.md").is_some()
        }
        "archive" => {
            let archived = host.list_dir(&Root::State, "archive").unwrap_or_default();
            user_skills(host).keys().all(|p| !p.starts_with("deploy"))
                && archived.iter().any(|(n, _)| {
                    n.starts_with("deploy-")
                        && host.file(&Root::State, &format!("archive/{n}/SKILL.md")).as_deref()
                            == Some(DEPLOY.as_bytes())
                        && host.file(&Root::State, &format!("archive/{n}/references/r0.md")).is_some()
                })
        }
        other => panic!("no such action {other}"),
    }
}

/// Every action under every approval setting: reads answer and change nothing; under approval a
/// change leaves the skills folder byte for byte as it was and makes exactly one pending entry,
/// which `/skills approve` then lands. (Before, `archive` landed at once under every setting:
/// the skill left the library with nothing pending.)
#[test]
fn every_action_follows_the_approval_rule_under_every_setting() {
    for setting in SETTINGS {
        for read in [json!({"action": "view", "name": "deploy"}), json!({"action": "list"})] {
            let mut plugin = setup(setting);
            let before = user_skills(plugin.host());
            let out = call(&mut plugin, &read).unwrap_or_else(|e| panic!("{setting:?} {read}: {e}"));
            assert!(out.get("content").is_some() || out.get("skills").is_some(), "{setting:?}: {out}");
            assert_eq!(user_skills(plugin.host()), before, "{setting:?} {read}");
            assert!(pending::list(plugin.host()).is_empty(), "{setting:?} {read}");
        }
        for (action, mut args) in mutations() {
            let mut plugin = setup(setting);
            if setting == Setting::StageArg {
                args["stage"] = json!(true);
            }
            let before = user_skills(plugin.host());
            let out = call(&mut plugin, &args).unwrap_or_else(|e| panic!("{setting:?} {action}: {e}"));
            let host = plugin.host();
            // A new skill is this machine's own: `othersSkills` does not stage it.
            let staged = match setting {
                Setting::Off => false,
                Setting::Teammate => action != "create",
                Setting::Config | Setting::Switch | Setting::StageArg => true,
            };
            if !staged {
                assert_ne!(out["status"], "staged", "{setting:?} {action}: {out}");
                assert!(landed(host, action), "{setting:?} {action}: {out}");
                assert!(pending::list(host).is_empty(), "{setting:?} {action}");
                continue;
            }
            assert_eq!(out["status"], "staged", "{setting:?} {action}: {out}");
            assert_eq!(user_skills(host), before, "{setting:?} {action}: the skills folder is untouched");
            assert!(!landed(host, action), "{setting:?} {action}");
            let pending = pending::list(host);
            assert_eq!(pending.len(), 1, "{setting:?} {action}: {pending:?}");
            assert_eq!(pending[0].id, out["id"].as_str().unwrap(), "{setting:?} {action}");
            assert_eq!(pending[0].operation, action, "{setting:?} {action}");
            let listed = skills(&mut plugin, "pending").unwrap();
            assert_eq!(listed["pending"][0]["operation"], action, "{setting:?} {action}: {listed}");
            let id = pending[0].id.clone();
            let approved =
                skills(&mut plugin, &format!("approve {id}")).unwrap_or_else(|e| panic!("{setting:?} {action}: {e}"));
            assert_eq!(approved["approved"], id.as_str(), "{setting:?} {action}");
            let host = plugin.host();
            assert!(landed(host, action), "{setting:?} {action}: approved but not landed: {approved}");
            assert!(pending::list(host).is_empty(), "{setting:?} {action}");
        }
    }
}

/// A staged archive as the operator reads it: `/skills pending` names it, `/skills diff` says
/// what happens and removes every file of the skill; rejecting it leaves the skill.
#[test]
fn a_staged_archive_is_shown_as_such_and_a_rejected_one_leaves_the_skill() {
    let mut plugin = setup(Setting::Config);
    let before = plugin.host().snapshot();
    let staged =
        call(&mut plugin, &json!({"action": "archive", "name": "deploy", "reason": "replaced by release"})).unwrap();
    assert_eq!(staged["status"], "staged", "{staged}");
    assert_eq!(staged["files"], json!(["SKILL.md", "references/r0.md"]), "{staged}");
    let id = staged["id"].as_str().unwrap().to_string();
    // Its base is the whole skill's digest, never the SKILL.md's hash: a process from before
    // staged archives reads it as a removal of SKILL.md, and refuses it as drift.
    let manifest = pending::load(plugin.host(), &id).unwrap();
    assert_eq!((manifest.path.as_str(), manifest.new_sha256.as_deref()), ("deploy/SKILL.md", None));
    assert_ne!(manifest.base_sha256, Some(sha256_hex(DEPLOY.as_bytes())));
    let text = plugin.run_command(&ctx("s1"), "pending").unwrap();
    assert!(text.contains(&id) && text.contains("archive") && text.contains("replaced by release"), "{text}");
    let diff = skills(&mut plugin, &format!("diff {id}")).unwrap()["diff"].as_str().unwrap().to_string();
    assert!(diff.starts_with("# archive `deploy` (user scope)"), "{diff}");
    assert!(diff.contains("replaced by release"), "{diff}");
    assert!(diff.contains("deleted file mode 100644\n--- a/deploy/SKILL.md\n+++ /dev/null"), "{diff}");
    assert!(diff.contains("-2. push\n"), "{diff}");
    assert!(diff.contains("--- a/deploy/references/r0.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-notes\n"), "{diff}");
    let rejected = skills(&mut plugin, &format!("reject {id}")).unwrap();
    assert_eq!(rejected["rejected"], id.as_str());
    let mut after = plugin.host().snapshot();
    // What a view and a reject leave in the state root is theirs; the skills are as they were.
    assert_eq!(after.remove(&Root::UserSkills), before.get(&Root::UserSkills).cloned());
    assert!(pending::list(plugin.host()).is_empty());
    assert!(plugin.host().list_dir(&Root::State, "archive").is_err(), "nothing was archived");
}

/// Approving a staged archive archives through the same moves as an immediate one: the archive
/// folder holds every file and its note with the agent's reason; the listing forgets the skill.
#[test]
fn an_approved_archive_moves_the_skill_as_an_immediate_archive_does() {
    let mut plugin = setup(Setting::Config);
    let staged =
        call(&mut plugin, &json!({"action": "archive", "name": "deploy", "reason": "replaced by release"})).unwrap();
    let id = staged["id"].as_str().unwrap().to_string();
    let approved = skills(&mut plugin, &format!("approve {id}")).unwrap();
    let folder = approved["archive"].as_str().unwrap().to_string();
    assert!(folder.starts_with("archive/deploy-"), "{approved}");
    let host = plugin.host();
    let note: Value =
        serde_json::from_slice(&host.file(&Root::State, &format!("{folder}/archived.json")).unwrap()).unwrap();
    assert_eq!((note["name"].as_str(), note["reason"].as_str()), (Some("deploy"), Some("replaced by release")));
    assert_eq!(note["session"], "s1");
    assert!(host.list_dir(&Root::State, crate::state_file::LOCK_DIR).unwrap_or_default().is_empty(), "lock released");
    let listed = call(&mut plugin, &json!({"action": "list"})).unwrap();
    assert_eq!(listed["total"], 0, "{listed}");
    // The operator brings it back as from any archive.
    let restored = skills(&mut plugin, "restore deploy").unwrap();
    assert_eq!(restored["restored"], "deploy", "{restored}");
    assert!(text(plugin.host(), "deploy/SKILL.md").contains("1. build"));
}

/// A staged archive is approved only on the skill the operator read: any file of it changed
/// since (SKILL.md or a supporting file), it is refused as drift and kept for inspection.
#[test]
fn a_staged_archive_of_a_skill_changed_since_is_refused_as_drift() {
    for changed in ["deploy/SKILL.md", "deploy/references/r0.md", "deploy/references/added.md"] {
        let mut plugin = setup(Setting::Config);
        let staged = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
        let id = staged["id"].as_str().unwrap().to_string();
        let host = plugin.host();
        let now = host.file(&Root::UserSkills, changed).unwrap_or_default();
        let edited = [now.as_slice(), b"edited by hand\n"].concat();
        host.write(&Root::UserSkills, changed, &edited, WriteMode::Truncate).unwrap();
        let before = host.snapshot();
        let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
        assert!(refused.contains("(drift)") && refused.contains("changed since"), "{changed}: {refused}");
        let host = plugin.host();
        assert_eq!(host.snapshot(), before, "{changed}: nothing moved");
        assert_eq!(pending::list(host).len(), 1, "{changed}: kept for inspection");
    }
}

/// The operator archived (or pinned) the skill themselves after the agent's archive was staged:
/// approving it is refused, saying why; rejecting it then clears it.
#[test]
fn a_staged_archive_of_a_skill_the_operator_archived_or_pinned_is_refused() {
    let mut plugin = setup(Setting::Config);
    let staged = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
    let id = staged["id"].as_str().unwrap().to_string();
    skills(&mut plugin, "archive deploy").unwrap();
    let before = plugin.host().snapshot();
    let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
    assert!(refused.contains("no longer exists") && refused.contains("(not-found)"), "{refused}");
    assert_eq!(plugin.host().snapshot(), before);
    skills(&mut plugin, &format!("reject {id}")).unwrap();
    assert!(pending::list(plugin.host()).is_empty());

    let mut plugin = setup(Setting::Config);
    let staged = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
    let id = staged["id"].as_str().unwrap().to_string();
    skills(&mut plugin, "pin deploy").unwrap();
    let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
    assert!(refused.contains("pinned") && refused.contains("(pinned)"), "{refused}");
    assert!(text(plugin.host(), "deploy/SKILL.md").contains("1. build"), "still there");
}

/// A staged archive and other staged changes to the same skill: an archive names the writes
/// staged for the skill's files before it (they wait behind it, still pending); a change asked
/// for after it is refused while it waits, naming it.
#[test]
fn a_staged_archive_names_earlier_staged_writes_and_blocks_later_ones() {
    let mut plugin = setup(Setting::Config);
    let patched = call(
        &mut plugin,
        &json!({"action": "patch", "name": "deploy", "old_string": "1. build", "new_string": "1. build it"}),
    )
    .unwrap();
    let file = call(
        &mut plugin,
        &json!({"action": "write_file", "name": "deploy", "file_path": "references/new.md", "content": "x\n"}),
    )
    .unwrap();
    let archive = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
    assert_eq!(archive["status"], "staged", "{archive}");
    let mut replaced: Vec<&str> =
        archive["supersedes"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    replaced.sort_unstable();
    let mut expected = vec![patched["id"].as_str().unwrap(), file["id"].as_str().unwrap()];
    expected.sort_unstable();
    assert_eq!(replaced, expected, "{archive}");
    let pending = pending::list(plugin.host());
    assert_eq!(pending.len(), 3, "{pending:?}");
    assert_eq!(pending[2].operation, "archive");
    let id = pending[2].id.clone();
    let before = plugin.host().snapshot();
    for args in [
        json!({"action": "patch", "name": "deploy", "old_string": "2. push", "new_string": "2. push it"}),
        json!({"action": "edit", "name": "deploy", "content": DEPLOY.replace("2. push", "2. ship")}),
        json!({"action": "write_file", "name": "deploy", "file_path": "references/other.md", "content": "y\n"}),
        json!({"action": "remove_file", "name": "deploy", "file_path": "references/r0.md"}),
        json!({"action": "archive", "name": "deploy"}),
    ] {
        let refused = call(&mut plugin, &args).unwrap_err();
        assert_eq!(refused["code"], "archive-staged", "{args}: {refused}");
        assert_eq!(refused["details"]["id"], id.as_str(), "{args}: {refused}");
        assert!(refused["hint"].as_str().unwrap().contains(&format!("/skills reject {id}")), "{refused}");
        let mut after = plugin.host().snapshot();
        assert_eq!(after.remove(&Root::UserSkills), before.get(&Root::UserSkills).cloned(), "{args}");
        assert_eq!(pending::list(plugin.host()).len(), 3, "{args}");
    }
    // The earlier ids are refused while the archive waits, naming it.
    let old = patched["id"].as_str().unwrap();
    let refused = skills(&mut plugin, &format!("approve {old}")).unwrap_err();
    assert!(refused.contains(&id) && refused.contains("(archive-staged)"), "{refused}");
    // Rejected, the skill stays as on disk, and the agent can change it again.
    skills(&mut plugin, &format!("reject {id}")).unwrap();
    assert_eq!(text(plugin.host(), "deploy/SKILL.md"), DEPLOY);
    let again = call(
        &mut plugin,
        &json!({"action": "patch", "name": "deploy", "old_string": "2. push", "new_string": "2. push it"}),
    )
    .unwrap();
    assert_eq!(again["status"], "staged", "{again}");
}

/// What an archive staged after them must keep: an operator's staged `/skills revert` of
/// SKILL.md, a write held on a credential finding, an agent's staged write to a resource file.
/// Returns the plugin, their ids (oldest first), and the archive's id.
fn entries_then_an_archive() -> (Plugin<FakeHost>, Vec<String>, String) {
    let mut plugin = setup(Setting::Config);
    let patched = call(
        &mut plugin,
        &json!({"action": "patch", "name": "deploy", "old_string": "2. push", "new_string": "2. push it"}),
    )
    .unwrap();
    skills(&mut plugin, &format!("approve {}", patched["id"].as_str().unwrap())).unwrap();
    let reverted = skills(&mut plugin, "revert deploy").unwrap();
    let token = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let held = call(
        &mut plugin,
        &json!({"action": "write_file", "name": "deploy", "file_path": "references/key.md", "content": format!("token = {token}\n")}),
    )
    .unwrap_err();
    assert_eq!(held["code"], "secret-found", "{held}");
    let file = call(
        &mut plugin,
        &json!({"action": "write_file", "name": "deploy", "file_path": "references/r0.md", "content": "notes, more\n"}),
    )
    .unwrap();
    let pending = pending::list(plugin.host());
    assert_eq!(pending.len(), 3, "{pending:?} {reverted}");
    assert!(!pending[1].held.is_empty(), "{pending:?}");
    assert_eq!(pending[2].id, file["id"].as_str().unwrap());
    let ids: Vec<String> = pending.iter().map(|m| m.id.clone()).collect();
    let archive = call(&mut plugin, &json!({"action": "archive", "name": "deploy", "stage": true})).unwrap();
    assert_eq!(archive["status"], "staged", "{archive}");
    (plugin, ids, archive["id"].as_str().unwrap().to_string())
}

/// The state root's files of the staged entries `ids`.
fn entry_files(host: &FakeHost, ids: &[String]) -> BTreeMap<String, Node> {
    let state = host.snapshot().remove(&Root::State).unwrap_or_default();
    state.into_iter().filter(|(path, _)| ids.iter().any(|id| path.starts_with(&format!("pending/{id}/")))).collect()
}

/// Staging an archive discards nothing (a hostile `stage: true` archive removed every pending
/// entry of the skill before the operator saw it): the entries before it stay on disk byte for
/// byte, listed and readable, and approving one is refused while the archive waits.
#[test]
fn staging_an_archive_keeps_the_entries_staged_before_it() {
    let (mut plugin, ids, archive) = entries_then_an_archive();
    let files = entry_files(plugin.host(), &ids);
    assert_eq!(files.keys().filter(|p| p.ends_with("/manifest.json")).count(), 3, "{files:?}");
    let listed: Vec<String> = pending::list(plugin.host()).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, [ids.clone(), vec![archive.clone()]].concat());
    let manifest = pending::load(plugin.host(), &archive).unwrap();
    assert_eq!(manifest.supersedes, ids);
    for id in &ids {
        let diff = skills(&mut plugin, &format!("diff {id}")).unwrap();
        assert!(!diff["diff"].as_str().unwrap().is_empty(), "{diff}");
        let before = plugin.host().snapshot();
        let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
        assert!(refused.contains(&archive) && refused.contains("(archive-staged)"), "{refused}");
        assert_eq!(plugin.host().snapshot().remove(&Root::UserSkills), before.get(&Root::UserSkills).cloned());
    }
    // `/skills pending` says which archive each waits behind, in text and in `--json`.
    let table = plugin.run_command(&ctx("s1"), "pending").unwrap();
    for id in &ids {
        let row = table.lines().find(|l| l.contains(id.as_str())).unwrap_or_default();
        assert!(row.contains(&format!("(waits behind archive {archive})")), "{table}");
    }
    let listed = skills(&mut plugin, "pending").unwrap();
    let waits: Vec<&str> =
        listed["pending"].as_array().unwrap().iter().filter_map(|e| e["waitsBehind"].as_str()).collect();
    assert_eq!(waits, [archive.as_str(); 3], "{listed}");
    // A prune keeps them: they are not a merge's leftovers.
    pending::prune(plugin.host(), 30);
    assert_eq!(entry_files(plugin.host(), &ids), files);
}

/// Rejecting the archive removes it alone: the entries before it are pending as they were,
/// approvable, and land their content.
#[test]
fn a_rejected_archive_leaves_the_entries_before_it_pending_and_approvable() {
    let (mut plugin, ids, archive) = entries_then_an_archive();
    let files = entry_files(plugin.host(), &ids);
    skills(&mut plugin, &format!("reject {archive}")).unwrap();
    assert_eq!(entry_files(plugin.host(), &ids), files, "byte for byte");
    let listed: Vec<String> = pending::list(plugin.host()).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, ids);
    let rule = pending::load(plugin.host(), &ids[1]).unwrap().held[0].rule.clone();
    skills(&mut plugin, &format!("approve {}", ids[0])).unwrap();
    assert!(!text(plugin.host(), "deploy/SKILL.md").contains("2. push it"), "the revert landed");
    assert!(text(plugin.host(), "deploy/SKILL.md").contains("2. push\n"));
    skills(&mut plugin, &format!("approve {} --accept-finding {rule}", ids[1])).unwrap();
    assert!(text(plugin.host(), "deploy/references/key.md").starts_with("token = ghp_"));
    skills(&mut plugin, &format!("approve {}", ids[2])).unwrap();
    assert_eq!(text(plugin.host(), "deploy/references/r0.md"), "notes, more\n");
    assert!(pending::list(plugin.host()).is_empty());
}

/// Approving the archive archives the skill and discards the entries before it.
#[test]
fn an_approved_archive_discards_the_entries_before_it() {
    let (mut plugin, ids, archive) = entries_then_an_archive();
    // Gone at approval, not before.
    let files = entry_files(plugin.host(), &ids);
    assert_eq!(files.keys().filter(|p| p.ends_with("/manifest.json")).count(), 3, "{files:?}");
    let approved = skills(&mut plugin, &format!("approve {archive}")).unwrap();
    assert!(approved["archive"].as_str().unwrap().starts_with("archive/deploy-"), "{approved}");
    assert!(user_skills(plugin.host()).keys().all(|p| !p.starts_with("deploy/")), "archived");
    assert!(pending::list(plugin.host()).is_empty());
    assert!(entry_files(plugin.host(), &ids).is_empty());
    for id in &ids {
        let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
        assert!(refused.contains("(not-found)"), "{refused}");
    }
}

/// With approval switched off while an archive waits, a direct write lands, and the archive no
/// longer matches what the operator read: drift at approval.
#[test]
fn a_direct_write_after_a_staged_archive_makes_it_drift() {
    let mut plugin = setup(Setting::Switch);
    let staged = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
    let id = staged["id"].as_str().unwrap().to_string();
    skills(&mut plugin, "approval off").unwrap();
    let written = call(
        &mut plugin,
        &json!({"action": "patch", "name": "deploy", "old_string": "2. push", "new_string": "2. push it"}),
    )
    .unwrap();
    assert_eq!(written["status"], "written", "{written}");
    let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
    assert!(refused.contains("(drift)"), "{refused}");
    assert!(text(plugin.host(), "deploy/SKILL.md").contains("2. push it"));
}

/// Archive is a change like any other for `othersSkills: stage`: only a teammate's skill is
/// staged; this machine's own skill is archived at once.
#[test]
fn others_skills_stage_applies_to_archive_of_a_teammates_skill_only() {
    let mut plugin = setup(Setting::Teammate);
    let own = DEPLOY.replace("deploy", "handover").replace("laptop-a", "laptop-b");
    plugin.host().write(&Root::UserSkills, "handover/SKILL.md", own.as_bytes(), WriteMode::CreateNew).unwrap();
    plugin.host().advance(crate::library::storage::list_cache::RACY_MS);
    call(&mut plugin, &json!({"action": "view", "name": "handover"})).unwrap();
    let theirs = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
    assert_eq!(theirs["status"], "staged", "{theirs}");
    let mine = call(&mut plugin, &json!({"action": "archive", "name": "handover"})).unwrap();
    assert_eq!(mine["status"], "archived", "{mine}");
}

/// A project skill's archive is staged and approved against the session's project root.
#[test]
fn a_project_skills_archive_is_staged_and_approved_in_its_project() {
    let host = FakeHost::new(START);
    host.map_root(Root::ProjectSkills("s1".into()));
    let project = DEPLOY.replace("deploy", "lint-rules");
    host.write(&Root::ProjectSkills("s1".into()), "lint-rules/SKILL.md", project.as_bytes(), WriteMode::CreateNew)
        .unwrap();
    host.advance(crate::library::storage::list_cache::RACY_MS);
    let mut plugin = Plugin::new(host);
    plugin.init(r#"{"writeApproval":true}"#, &["tools".into()]).unwrap();
    call(&mut plugin, &json!({"action": "view", "name": "lint-rules"})).unwrap();
    let staged = call(&mut plugin, &json!({"action": "archive", "name": "lint-rules"})).unwrap();
    assert_eq!((staged["status"].as_str(), staged["scope"].as_str()), (Some("staged"), Some("project")));
    let id = staged["id"].as_str().unwrap().to_string();
    assert!(plugin.host().file(&Root::ProjectSkills("s1".into()), "lint-rules/SKILL.md").is_some());
    skills(&mut plugin, &format!("approve {id}")).unwrap();
    assert!(plugin.host().file(&Root::ProjectSkills("s1".into()), "lint-rules/SKILL.md").is_none());
}

/// A reviewer (a subagent) calls the same tool through the same path: its archive is staged too.
#[test]
fn a_reviewers_archive_is_staged_like_the_agents() {
    let mut plugin = setup(Setting::Config);
    let reviewer = CallContext {
        session: "s1".into(),
        agent: "rev-1".into(),
        origin: Origin::Subagent,
        depth: 1,
        cwd: "/work/p".into(),
    };
    let view = json!({"action": "view", "name": "deploy"}).to_string();
    plugin.call_tool(&reviewer, "skill_manage", &view).unwrap();
    let before = user_skills(plugin.host());
    let out = plugin.call_tool(&reviewer, "skill_manage", &json!({"action": "archive", "name": "deploy"}).to_string());
    let out: Value = serde_json::from_str(&out.unwrap()).unwrap();
    assert_eq!(out["status"], "staged", "{out}");
    assert_eq!(user_skills(plugin.host()), before);
}

/// The curator passes over a skill whose archive waits like over any other; what it changes
/// makes the staged archive drift (status) or leaves nothing to archive, and approval says so.
#[test]
fn the_curator_and_a_staged_archive() {
    let mut plugin = setup(Setting::Config);
    let staged = call(&mut plugin, &json!({"action": "archive", "name": "deploy"})).unwrap();
    let id = staged["id"].as_str().unwrap().to_string();
    // Never used, created long ago: the curator marks it stale.
    plugin.host().advance(400 * crate::time::MS_PER_DAY);
    let report = skills(&mut plugin, "curator run").unwrap();
    assert_eq!(report["changes"][0]["to"], "stale", "{report}");
    assert_eq!(pending::list(plugin.host()).len(), 1, "the curator leaves staged entries alone");
    let refused = skills(&mut plugin, &format!("approve {id}")).unwrap_err();
    assert!(refused.contains("(drift)"), "{refused}");
}

// ---- fields the operator or the host owns ----

/// `deploy` with every owned field set, as the operator and the host left it.
const OWNED_ALL: &str = "---\nname: deploy\ndescription: Ships the app to staging. Use when deploying.\nmetadata:\n  accepted-findings: generic-secret@0123456789ab\n  authored-by: self-evolve\n  created-at: \"2025-06-01T00:00:00.000Z\"\n  library: laptop-a\n  pinned: \"true\"\n  status: stale\n  updated-at: \"2025-07-01T00:00:00.000Z\"\n  version: \"7\"\n---\n1. build\n2. push\n";

/// `deploy` with none of them but the ownership stamp.
const OWNED_NONE: &str = "---\nname: deploy\ndescription: Ships the app to staging. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n---\n1. build\n2. push\n";

/// Each owned field: its line in `OWNED_ALL`, and what an agent would like it to say.
const OWNED: [(&str, &str, &str); 8] = [
    (
        "accepted-findings",
        "  accepted-findings: generic-secret@0123456789ab\n",
        "  accepted-findings: aws-access-key@ffffffffffff\n",
    ),
    ("authored-by", "  authored-by: self-evolve\n", "  authored-by: someone-else\n"),
    ("created-at", "  created-at: \"2025-06-01T00:00:00.000Z\"\n", "  created-at: \"2020-01-01T00:00:00.000Z\"\n"),
    ("library", "  library: laptop-a\n", "  library: laptop-z\n"),
    ("pinned", "  pinned: \"true\"\n", "  pinned: \"false\"\n"),
    ("status", "  status: stale\n", "  status: active\n"),
    ("updated-at", "  updated-at: \"2025-07-01T00:00:00.000Z\"\n", "  updated-at: \"2030-01-01T00:00:00.000Z\"\n"),
    ("version", "  version: \"7\"\n", "  version: \"1000\"\n"),
];

/// What every owned field of the file written over `disk` at `now` must say: the disk's value,
/// the ownership stamp, and the host's stamp moving on from the disk's (never the agent's).
fn expected_owned(disk: &SkillFile, now: u64) -> BTreeMap<&'static str, Option<String>> {
    let mut out = BTreeMap::new();
    for (key, _, _) in OWNED {
        let value = match key {
            "authored-by" => Some("self-evolve".to_string()),
            "updated-at" => Some(crate::time::iso(now)),
            "created-at" => Some(disk.meta(key).unwrap_or_else(|| crate::time::iso(now))),
            "version" => Some((disk.meta(key).map_or(0, |v| v.parse::<u64>().unwrap()) + 1).to_string()),
            _ => disk.meta(key),
        };
        out.insert(key, value);
    }
    out
}

fn owned_of(skill: &SkillFile) -> BTreeMap<&'static str, Option<String>> {
    OWNED.iter().map(|(key, _, _)| (*key, skill.meta(key))).collect()
}

/// Each owned field × patch and edit × the agent's text leaving it out, changing it or adding
/// it, with approval off and on: the file written (or staged) carries the disk's value. Before,
/// an agent could pin its own skill, stamp it as a teammate's, mark it `status: archived` or
/// make it look old to the curator (`created-at`), and bump `version` at will.
#[test]
fn owned_fields_are_kept_from_disk_on_every_agent_write() {
    for approval_on in [false, true] {
        for (key, line, hostile) in OWNED {
            for case in ["absent", "changed", "added"] {
                for action in ["patch", "edit"] {
                    let disk = if case == "added" { OWNED_NONE } else { OWNED_ALL };
                    if case == "added" && key == "authored-by" {
                        continue; // Without it the skill is not this plugin's: read-only.
                    }
                    let (old, new) = match case {
                        "absent" => (line.to_string(), String::new()),
                        "changed" => (line.to_string(), hostile.to_string()),
                        _ => (
                            "  authored-by: self-evolve\n".to_string(),
                            format!("  authored-by: self-evolve\n{hostile}"),
                        ),
                    };
                    let host = FakeHost::new(START);
                    host.write(&Root::UserSkills, "deploy/SKILL.md", disk.as_bytes(), WriteMode::CreateNew).unwrap();
                    host.advance(crate::library::storage::list_cache::RACY_MS);
                    let mut plugin = Plugin::new(host);
                    plugin.init(&json!({"writeApproval": approval_on}).to_string(), &["tools".into()]).unwrap();
                    call(&mut plugin, &json!({"action": "view", "name": "deploy"})).unwrap();
                    let args = match action {
                        "patch" => json!({"action": "patch", "name": "deploy", "old_string": old, "new_string": new}),
                        _ => json!({"action": "edit", "name": "deploy", "content": disk.replace(&old, &new)}),
                    };
                    let what = format!("{key} {case} by {action}, approval {approval_on}");
                    let out = call(&mut plugin, &args).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let host = plugin.host();
                    let now = host.now_ms();
                    let written = if approval_on {
                        assert_eq!(out["status"], "staged", "{what}: {out}");
                        assert_eq!(text(host, "deploy/SKILL.md"), disk, "{what}: nothing landed");
                        let pending = pending::list(host);
                        crate::library::staging::coalesce::staged_bytes(host, &pending[0]).unwrap().unwrap()
                    } else {
                        assert_eq!(out["status"], "written", "{what}: {out}");
                        host.file(&Root::UserSkills, "deploy/SKILL.md").unwrap()
                    };
                    let written = SkillFile::parse_bytes(&written).unwrap();
                    let disk = SkillFile::parse(disk).unwrap();
                    assert_eq!(owned_of(&written), expected_owned(&disk, now), "{what}:\n{}", written.to_text());
                    if approval_on {
                        // Approved, the same bytes land.
                        let id = out["id"].as_str().unwrap().to_string();
                        skills(&mut plugin, &format!("approve {id}")).unwrap();
                        let landed = SkillFile::parse(&text(plugin.host(), "deploy/SKILL.md")).unwrap();
                        assert_eq!(owned_of(&landed), expected_owned(&disk, now), "{what}: approved");
                    }
                }
            }
        }
    }
}

/// A change that joins a staged one carries the disk's fields too.
#[test]
fn a_change_joining_a_staged_write_keeps_the_owned_fields() {
    let host = FakeHost::new(START);
    host.write(&Root::UserSkills, "deploy/SKILL.md", OWNED_ALL.as_bytes(), WriteMode::CreateNew).unwrap();
    host.advance(crate::library::storage::list_cache::RACY_MS);
    let mut plugin = Plugin::new(host);
    plugin.init(r#"{"writeApproval":true}"#, &["tools".into()]).unwrap();
    call(&mut plugin, &json!({"action": "view", "name": "deploy"})).unwrap();
    call(
        &mut plugin,
        &json!({"action": "patch", "name": "deploy", "old_string": "1. build", "new_string": "1. build it"}),
    )
    .unwrap();
    let out = call(
        &mut plugin,
        &json!({"action": "patch", "name": "deploy", "old_string": "  pinned: \"true\"\n  status: stale\n", "new_string": "  status: archived\n"}),
    )
    .unwrap();
    assert_eq!(out["status"], "staged", "{out}");
    let host = plugin.host();
    let pending = pending::list(host);
    assert_eq!(pending.len(), 1);
    let staged = crate::library::staging::coalesce::staged_bytes(host, &pending[0]).unwrap().unwrap();
    let staged = SkillFile::parse_bytes(&staged).unwrap();
    assert!(staged.is_pinned() && staged.status() == "stale", "{}", staged.to_text());
    assert!(staged.body.contains("1. build it"));
}

/// A create takes none of them from the agent (it has no way to pass metadata; text that looks
/// like frontmatter in its body or description stays text), and gets the host's defaults.
#[test]
fn a_create_gets_the_defaults_of_the_owned_fields() {
    for approval_on in [false, true] {
        let host = FakeHost::new(START);
        let mut plugin = Plugin::new(host);
        let config = json!({"writeApproval": approval_on, "team": {"library": "laptop-b"}}).to_string();
        plugin.init(&config, &["tools".into()]).unwrap();
        let sneaky = "---\nmetadata:\n  pinned: \"true\"\n  status: archived\n  library: laptop-z\n---\nbody\n";
        let out = call(
            &mut plugin,
            &json!({"action": "create", "name": "rotate-certs", "description": "Rotates TLS certificates. Use when a certificate expires.", "body": sneaky}),
        )
        .unwrap();
        let host = plugin.host();
        let bytes = if approval_on {
            crate::library::staging::coalesce::staged_bytes(host, &pending::list(host)[0]).unwrap().unwrap()
        } else {
            assert_eq!(out["status"], "written", "{out}");
            host.file(&Root::UserSkills, "rotate-certs/SKILL.md").unwrap()
        };
        let skill = SkillFile::parse_bytes(&bytes).unwrap();
        let now = crate::time::iso(host.now_ms());
        let expected: BTreeMap<&str, Option<String>> = [
            ("accepted-findings", None),
            ("authored-by", Some("self-evolve".to_string())),
            ("created-at", Some(now.clone())),
            ("library", Some("laptop-b".to_string())),
            ("pinned", None),
            ("status", None),
            ("updated-at", Some(now)),
            ("version", Some("1".to_string())),
        ]
        .into_iter()
        .collect();
        assert_eq!(owned_of(&skill), expected, "approval {approval_on}:\n{}", skill.to_text());
        assert!(skill.body.contains("status: archived"), "the body stays the body");
    }
}

/// `write_file` cannot reach SKILL.md (supporting files live under references/, templates/,
/// scripts/ or assets/): refused, nothing written or staged.
#[test]
fn write_file_cannot_reach_the_skill_file() {
    for approval_on in [false, true] {
        let host = FakeHost::new(START);
        host.write(&Root::UserSkills, "deploy/SKILL.md", OWNED_ALL.as_bytes(), WriteMode::CreateNew).unwrap();
        host.advance(crate::library::storage::list_cache::RACY_MS);
        let mut plugin = Plugin::new(host);
        plugin.init(&json!({"writeApproval": approval_on}).to_string(), &["tools".into()]).unwrap();
        call(&mut plugin, &json!({"action": "view", "name": "deploy"})).unwrap();
        let before = user_skills(plugin.host());
        let content = OWNED_ALL.replace("  pinned: \"true\"\n", "");
        for path in ["SKILL.md", "references/../SKILL.md", "./SKILL.md", "/deploy/SKILL.md"] {
            let args = json!({"action": "write_file", "name": "deploy", "file_path": path, "content": content});
            let refused = call(&mut plugin, &args).unwrap_err();
            assert_eq!(refused["code"], "invalid-path", "{path}: {refused}");
            assert_eq!(user_skills(plugin.host()), before, "{path}");
            assert!(pending::list(plugin.host()).is_empty(), "{path}");
        }
    }
}

/// The operator's own commands still set what they own, and an agent's later write keeps it:
/// pin, then an edit dropping the pin keeps it; unpin, then an edit adding one does not pin.
#[test]
fn the_operators_pin_and_unpin_hold_against_agent_writes() {
    let mut plugin = setup(Setting::Off);
    skills(&mut plugin, "pin deploy").unwrap();
    assert!(text(plugin.host(), "deploy/SKILL.md").contains("pinned: \"true\""));
    let unpinned = text(plugin.host(), "deploy/SKILL.md").replace("  pinned: \"true\"\n", "");
    call(&mut plugin, &json!({"action": "edit", "name": "deploy", "content": unpinned})).unwrap();
    assert!(SkillFile::parse(&text(plugin.host(), "deploy/SKILL.md")).unwrap().is_pinned(), "still pinned");
    skills(&mut plugin, "unpin deploy").unwrap();
    let pinned = text(plugin.host(), "deploy/SKILL.md").replace("  library:", "  pinned: \"true\"\n  library:");
    call(&mut plugin, &json!({"action": "edit", "name": "deploy", "content": pinned})).unwrap();
    assert!(!SkillFile::parse(&text(plugin.host(), "deploy/SKILL.md")).unwrap().is_pinned(), "not pinned by the agent");
    // The curator still reaches it (it is not pinned): and skips it once the operator pins it.
    skills(&mut plugin, "pin deploy").unwrap();
    plugin.host().advance(400 * crate::time::MS_PER_DAY);
    let report = skills(&mut plugin, "curator run").unwrap();
    assert_eq!(report["changes"], json!([]), "{report}");
}

/// `/skills revert` of a version that only changed what the operator or curator owns would be
/// a write that keeps those fields: it is refused, naming the command that does it.
#[test]
fn a_revert_of_a_pin_names_unpin() {
    let mut plugin = setup(Setting::Off);
    skills(&mut plugin, "pin deploy").unwrap();
    let before = user_skills(plugin.host());
    let refused = skills(&mut plugin, "revert deploy").unwrap_err();
    assert!(refused.contains("/skills unpin deploy"), "{refused}");
    assert_eq!(user_skills(plugin.host()), before);
}

/// An archive of a skill that exists only as a staged create names the create to reject.
#[test]
fn an_archive_of_a_skill_only_staged_names_its_create() {
    let mut plugin = setup(Setting::Config);
    let created = call(
        &mut plugin,
        &json!({"action": "create", "name": "rotate-certs", "description": "Rotates TLS certificates. Use when a certificate expires."}),
    )
    .unwrap();
    let id = created["id"].as_str().unwrap();
    let before = plugin.host().snapshot();
    let refused = call(&mut plugin, &json!({"action": "archive", "name": "rotate-certs"})).unwrap_err();
    assert_eq!(refused["code"], "not-found", "{refused}");
    assert!(refused["hint"].as_str().unwrap().contains(&format!("/skills reject {id}")), "{refused}");
    assert_eq!(plugin.host().snapshot().remove(&Root::UserSkills), before.get(&Root::UserSkills).cloned());
    assert_eq!(pending::list(plugin.host()).len(), 1);
}

/// The staged archive's diff is a patch the real tools take: its comment lines are skipped and
/// applying it removes every file of the skill (native only: it runs `git` and `patch`).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_staged_archives_diff_applies_with_git_apply_and_patch() {
    let have =
        |tool: &str| std::process::Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !have("git") {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let mut plugin = setup(Setting::Config);
    let reason = "old\ndiff --git a/x b/x\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+forged";
    let staged = call(&mut plugin, &json!({"action": "archive", "name": "deploy", "reason": reason})).unwrap();
    let id = staged["id"].as_str().unwrap();
    let diff = skills(&mut plugin, &format!("diff {id}")).unwrap()["diff"].as_str().unwrap().to_string();
    for tool in ["git", "patch"] {
        if tool == "patch" && !have("patch") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        for (path, node) in user_skills(plugin.host()) {
            if let Node::File { data, .. } = node {
                let file = dir.path().join(&path);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, data).unwrap();
            }
        }
        std::fs::write(dir.path().join("change.diff"), &diff).unwrap();
        let args: &[&str] = if tool == "git" { &["apply", "change.diff"] } else { &["-p1", "-i", "change.diff"] };
        let out = std::process::Command::new(tool).args(args).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success(), "{tool}: {}\n{diff}", String::from_utf8_lossy(&out.stderr));
        for file in ["deploy/SKILL.md", "deploy/references/r0.md", "x"] {
            assert!(!dir.path().join(file).exists(), "{tool}: {file} is there\n{diff}");
        }
    }
}
