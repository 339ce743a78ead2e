//! Staging that does not flood, on the fake host through the whole plugin: changes to a file
//! with a staged write pending join it, staged creates that repeat one are refused at staging,
//! a merge that lost a race stages nothing, and a replaced entry is never approved.

use super::*;
use crate::api::{CallContext, Origin};
use crate::fake::FakeHost;
use crate::host::{Root, WriteMode};
use crate::library::staging::{approval, pending};
use crate::plugin::Plugin;
use serde_json::Value;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const START: u64 = 1_767_225_600_000;

fn ours(name: &str, body: &str) -> Vec<u8> {
    format!(
        "---\nname: {name}\ndescription: Ships the app to staging. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n  version: \"1\"\n---\n{body}"
    )
    .into_bytes()
}

fn setup() -> Plugin<FakeHost> {
    let host = FakeHost::new(START);
    host.map_root(Root::ProjectSkills("s1".into()));
    let body = "1. build\n2. test\n3. push\n";
    host.write(&Root::UserSkills, "deploy/SKILL.md", &ours("deploy", body), WriteMode::CreateNew).unwrap();
    host.advance(crate::library::storage::list_cache::RACY_MS);
    let mut plugin = Plugin::new(host);
    plugin.init(r#"{"writeApproval":true}"#, &["tools".into()]).unwrap();
    plugin
}

fn call(plugin: &mut Plugin<FakeHost>, args: &str) -> Result<Value, Value> {
    let ctx = CallContext {
        session: "s1".into(),
        agent: "main".into(),
        origin: Origin::User,
        depth: 0,
        cwd: "/work/project".into(),
    };
    plugin.host().advance(1);
    match plugin.call_tool(&ctx, "skill_manage", args) {
        Ok(out) => Ok(serde_json::from_str(&out).unwrap()),
        Err(err) => Err(serde_json::from_str(&err).unwrap()),
    }
}

fn patch(plugin: &mut Plugin<FakeHost>, old: &str, new: &str) -> Result<Value, Value> {
    call(plugin, &format!(r#"{{"action":"patch","name":"deploy","old_string":"{old}","new_string":"{new}"}}"#))
}

/// An edit of `deploy/SKILL.md` from `old` to `new`, staged by session s1.
fn edit_of<'a>(old: &'a [u8], new: &'a [u8]) -> Change<'a> {
    Change {
        operation: "edit",
        skill: "deploy",
        scope: Scope::User,
        session: "s1",
        agent: "main",
        path: "deploy/SKILL.md",
        old: Some(old),
        new: Some(new),
        reason: "",
        held: &[],
        supersedes: &[],
        cwd: "",
    }
}

fn staged_text(host: &FakeHost, manifest: &Manifest) -> String {
    String::from_utf8(staged_bytes(host, manifest).unwrap().unwrap()).unwrap()
}

#[test]
fn changes_to_one_file_make_one_entry_whose_diff_is_against_the_file() {
    let mut plugin = setup();
    call(&mut plugin, r#"{"action":"view","name":"deploy"}"#).unwrap();
    let first = patch(&mut plugin, "1. build", "1. build with --release").unwrap();
    let second = patch(&mut plugin, "2. test", "2. test all targets").unwrap();
    let third = patch(&mut plugin, "3. push", "3. push the tag").unwrap();
    assert_eq!(third["status"], "staged");
    assert_eq!(third["supersedes"], serde_json::json!([first["id"], second["id"]]));
    let host = plugin.host();
    let pending = pending::list(host);
    assert_eq!(pending.len(), 1, "one entry for the file: {pending:?}");
    assert_eq!(pending[0].id, third["id"].as_str().unwrap());
    assert_eq!(pending[0].base_sha256, Some(sha256_hex(&host.file(&Root::UserSkills, "deploy/SKILL.md").unwrap())));
    let text = staged_text(host, &pending[0]);
    for change in ["1. build with --release", "2. test all targets", "3. push the tag"] {
        assert!(text.contains(change), "{change} is in the staged file:\n{text}");
        assert!(third["diff"].as_str().unwrap().contains(&format!("+{change}")), "{}", third["diff"]);
    }
    // The replaced entries are gone from the state root; only the merged one lands.
    let entries = host.list_dir(&Root::State, DIR).unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    approval::approve(host, &pending[0].id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap();
    let landed = String::from_utf8(host.file(&Root::UserSkills, "deploy/SKILL.md").unwrap()).unwrap();
    assert!(landed.contains("1. build with --release") && landed.contains("3. push the tag"), "{landed}");
    assert!(pending::list(host).is_empty());
}

#[test]
fn a_change_to_a_skill_whose_create_is_staged_joins_the_create() {
    let mut plugin = setup();
    let created = call(
        &mut plugin,
        r#"{"action":"create","name":"rotate-certs","description":"Rotates TLS certificates. Use when a certificate expires.","body":"Run certbot renew.\n"}"#,
    )
    .unwrap();
    assert_eq!(created["status"], "staged");
    let patched = call(
        &mut plugin,
        r#"{"action":"patch","name":"rotate-certs","old_string":"Run certbot renew.","new_string":"Run certbot renew, then reload nginx."}"#,
    )
    .unwrap();
    let host = plugin.host();
    let pending = pending::list(host);
    assert_eq!(pending.len(), 1);
    assert_eq!((pending[0].operation.as_str(), pending[0].base_sha256.as_deref()), ("create", None));
    assert_eq!(patched["supersedes"], serde_json::json!([created["id"]]));
    assert!(staged_text(host, &pending[0]).contains("then reload nginx"));
    approval::approve(host, &pending[0].id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap();
    let landed = String::from_utf8(host.file(&Root::UserSkills, "rotate-certs/SKILL.md").unwrap()).unwrap();
    assert!(landed.contains("Run certbot renew, then reload nginx."), "{landed}");
}

#[test]
fn a_create_that_repeats_a_staged_create_is_refused_at_staging_and_stages_nothing() {
    let mut plugin = setup();
    let created = call(
        &mut plugin,
        r#"{"action":"create","name":"rotate-tls-certificates","description":"Rotate the TLS certificates of the web servers before they expire.","body":"Run certbot renew.\n"}"#,
    )
    .unwrap();
    let before = plugin.host().snapshot();
    let same = call(
        &mut plugin,
        r#"{"action":"create","name":"rotate-tls-certificates","description":"Something else entirely.","body":"x\n"}"#,
    )
    .unwrap_err();
    assert_eq!((same["code"].as_str(), same["details"]["staged"].clone()), (Some("exists"), created["id"].clone()));
    let twin = call(
        &mut plugin,
        r#"{"action":"create","name":"renew-tls-certs","description":"Renew the web servers' TLS certificates before they expire.","body":"Run certbot renew.\n"}"#,
    )
    .unwrap_err();
    assert_eq!(twin["code"], "duplicate", "{twin}");
    assert_eq!(twin["details"]["closest"][0]["name"], "rotate-tls-certificates");
    assert_eq!(twin["details"]["closest"][0]["staged"], created["id"]);
    assert_eq!(plugin.host().snapshot(), before, "a refused create leaves every root as it was");
    // Unrelated creates still stage.
    call(
        &mut plugin,
        r#"{"action":"create","name":"csv-imports","description":"Import CSV exports into the warehouse. Use when a CSV arrives.","body":"Load it.\n"}"#,
    )
    .unwrap();
    assert_eq!(pending::list(plugin.host()).len(), 2);
}

#[test]
fn a_replaced_entry_is_refused_with_the_entry_that_carries_it() {
    let mut plugin = setup();
    call(&mut plugin, r#"{"action":"view","name":"deploy"}"#).unwrap();
    let first = patch(&mut plugin, "1. build", "1. build it").unwrap();
    let second = patch(&mut plugin, "2. test", "2. test it").unwrap();
    let host = plugin.host();
    let before = host.snapshot();
    for refused in [
        approval::approve(host, first["id"].as_str().unwrap(), &[], &crate::library::history::TEST_OPERATOR, 20)
            .unwrap_err(),
        approval::reject(host, first["id"].as_str().unwrap()).unwrap_err(),
        approval::diff(host, first["id"].as_str().unwrap()).unwrap_err(),
    ] {
        assert_eq!(refused.code, "superseded");
        assert_eq!(refused.details["supersededBy"], second["id"]);
    }
    assert_eq!(host.snapshot(), before);
}

#[test]
fn a_merge_built_on_an_entry_that_changed_meanwhile_is_a_conflict_and_stages_nothing() {
    let host = FakeHost::new(START);
    let old = ours("deploy", "a\n");
    host.write(&Root::UserSkills, "deploy/SKILL.md", &old, WriteMode::CreateNew).unwrap();
    let change = |new: &'static [u8]| edit_of(&old, new);
    let first = stage_merged(&host, &change(b"one"), &Root::UserSkills, None).unwrap();
    host.advance(1);
    let before = host.snapshot();
    // Built on the file alone, but another process staged a change to it meanwhile.
    let lost = stage_merged(&host, &change(b"two"), &Root::UserSkills, None).unwrap_err();
    assert_eq!(lost.code, "conflict");
    assert_eq!(host.snapshot(), before);
    let merged = stage_merged(&host, &change(b"two"), &Root::UserSkills, Some(&first.id)).unwrap();
    assert_eq!(merged.supersedes, std::slice::from_ref(&first.id));
    let stale = stage_merged(&host, &change(b"three"), &Root::UserSkills, Some(&first.id)).unwrap_err();
    assert_eq!(stale.code, "conflict");
}

#[test]
fn an_entry_left_behind_by_a_crash_mid_merge_is_hidden_refused_and_pruned() {
    let host = FakeHost::new(START);
    let old = ours("deploy", "a\n");
    host.write(&Root::UserSkills, "deploy/SKILL.md", &old, WriteMode::CreateNew).unwrap();
    let base = edit_of(&old, b"one");
    let first = pending::stage(&host, &base).unwrap();
    host.advance(1);
    // The merged entry is in place; the crash came before the replaced one was removed.
    let supersedes = [first.id.clone()];
    let merged = pending::stage(&host, &Change { new: Some(b"two"), supersedes: &supersedes, ..base }).unwrap();
    assert_eq!(pending::list(&host).iter().map(|m| m.id.clone()).collect::<Vec<_>>(), std::slice::from_ref(&merged.id));
    assert_eq!(
        approval::approve(&host, &first.id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap_err().code,
        "superseded"
    );
    assert_eq!(pending::prune(&host, 30), std::slice::from_ref(&first.id));
    assert!(pending::load(&host, &first.id).is_err());
    assert_eq!(pending::list(&host).len(), 1);
}

#[test]
fn a_change_cannot_join_a_staged_write_whose_file_changed_since() {
    let mut plugin = setup();
    call(&mut plugin, r#"{"action":"view","name":"deploy"}"#).unwrap();
    let staged = patch(&mut plugin, "1. build", "1. build it").unwrap();
    // Someone edits the file by hand (still the plugin's skill).
    plugin
        .host()
        .write(
            &Root::UserSkills,
            "deploy/SKILL.md",
            &ours("deploy", "1. build\n2. test twice\n3. push\n"),
            WriteMode::Truncate,
        )
        .unwrap();
    let before = plugin.host().snapshot();
    let refused = patch(&mut plugin, "3. push", "3. push the tag").unwrap_err();
    assert_eq!((refused["code"].as_str(), refused["details"]["id"].clone()), (Some("drift"), staged["id"].clone()));
    assert_eq!(plugin.host().snapshot(), before, "nothing staged over the newer file");
}

#[test]
fn approving_or_rejecting_a_merged_entry_removes_what_a_crash_left_of_the_entries_it_replaced() {
    let host = FakeHost::new(START);
    let old = ours("deploy", "a\n");
    host.write(&Root::UserSkills, "deploy/SKILL.md", &old, WriteMode::CreateNew).unwrap();
    let base = edit_of(&old, b"one");
    for approve in [true, false] {
        let first = pending::stage(&host, &base).unwrap();
        host.advance(1);
        let supersedes = [first.id.clone()];
        let merged = pending::stage(&host, &Change { new: Some(b"two"), supersedes: &supersedes, ..base }).unwrap();
        if approve {
            approval::approve(&host, &merged.id, &[], &crate::library::history::TEST_OPERATOR, 20).unwrap();
            host.write(&Root::UserSkills, "deploy/SKILL.md", &old, WriteMode::Truncate).unwrap();
        } else {
            approval::reject(&host, &merged.id).unwrap();
        }
        assert!(pending::load(&host, &first.id).is_err(), "the replaced entry does not come back");
        assert!(pending::list(&host).is_empty());
        host.advance(1);
    }
}
