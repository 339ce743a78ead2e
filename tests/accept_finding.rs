//! The operator's override of a false credential finding, through the real component: with
//! write approval on, a `secret-found` write is held; it lands only with `--accept-finding RULE`
//! for each finding's rule; the acceptance is recorded in the ledger and in the skill's
//! `metadata.accepted-findings`, which later writes and `check` honour, and which the agent
//! cannot write itself. Without approval, or without the acceptance, nothing changes.

mod common;

use common::{TestHost, all_services, host, snapshot, usage};
use self_evolve_host::plugin::{FileInput, SkillInput};
use self_evolve_host::user_context;
use serde_json::{Value, json};

/// A value the scanner takes for a credential: a fixture the operator knows is not one.
fn fixture() -> String {
    format!("API_KEY = \"{}{}\"", "q8Zr7kq2", "Lp9xW3vT")
}

fn ready() -> TestHost {
    let mut h = host();
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    h
}

fn command(h: &mut TestHost, args: &str) -> Result<String, String> {
    h.plugin.command(&user_context("s1"), args).unwrap()
}

fn create_with(h: &mut TestHost, body: &str) -> Result<Value, Value> {
    h.skill(
        "s1",
        json!({"action": "create", "name": "api-fixtures", "description": "Fixtures for the API client tests. Use when writing API tests.", "body": body}),
    )
}

#[test]
fn without_approval_a_finding_is_refused_and_nothing_is_held() {
    let mut h = ready();
    let before = snapshot(h.home.path());
    let err = create_with(&mut h, &format!("Use this fixture:\n{}\n", fixture())).unwrap_err();
    assert_eq!(err["code"], "secret-found");
    assert!(err["details"]["held"].is_null(), "{err}");
    assert_eq!(snapshot(h.home.path()), before, "nothing written, nothing staged");
}

#[test]
fn a_held_write_lands_only_when_each_rule_is_accepted() {
    let mut h = ready();
    command(&mut h, "approval on").unwrap();
    let err = create_with(&mut h, &format!("Use this fixture:\n{}\n", fixture())).unwrap_err();
    assert_eq!(err["code"], "secret-found");
    let id = err["details"]["held"].as_str().expect("the write is held").to_string();
    assert!(err["hint"].as_str().unwrap().contains(&id));
    assert!(!h.user_skills().join("api-fixtures").exists(), "a held write lands nothing");
    let pending = command(&mut h, "pending").unwrap();
    assert!(pending.contains("held: generic-secret (line"), "{pending}");

    // Plain approval, a wrong rule, an extra rule: refused, and nothing changes.
    let before = snapshot(h.home.path());
    for args in [
        format!("approve {id}"),
        format!("approve {id} --accept-finding aws-access-key-id"),
        format!("approve {id} --accept-finding generic-secret --accept-finding jwt"),
        format!("approve {id} --accept-finding"),
    ] {
        let refusal = command(&mut h, &args).unwrap_err();
        assert!(refusal.contains("nothing was written") || refusal.contains("usage"), "{args}: {refusal}");
        assert_eq!(snapshot(h.home.path()), before, "{args} changed something");
    }
    assert!(command(&mut h, &format!("approve {id}")).unwrap_err().contains("--accept-finding generic-secret"));

    let approved = command(&mut h, &format!("approve {id} --accept-finding generic-secret --json")).unwrap();
    let approved: Value = serde_json::from_str(&approved).unwrap();
    let fingerprint = approved["accepted"][0].as_str().unwrap().to_string();
    assert!(fingerprint.starts_with("generic-secret@"), "{approved}");
    let text = std::fs::read_to_string(h.user_skills().join("api-fixtures/SKILL.md")).unwrap();
    assert!(text.contains(&fixture()), "the held content landed");
    assert!(text.contains(&format!("accepted-findings: {fingerprint}")), "{text}");
    let accepted = &usage(&h.state_dir())["skills"]["api-fixtures"]["accepted"][0];
    assert_eq!(accepted["finding"], fingerprint.as_str());
    assert!(accepted["by"].as_str().unwrap().starts_with("operator"), "{accepted}");
    assert!(accepted["atMs"].as_u64().is_some());

    // The acknowledged value no longer holds later writes; a new finding still does.
    command(&mut h, "approval off").unwrap();
    h.skill("s1", json!({"action": "view", "name": "api-fixtures"})).unwrap();
    let patched = h
        .skill("s1", json!({"action": "patch", "name": "api-fixtures", "old_string": "Use this fixture:", "new_string": "The fixture:"}))
        .unwrap();
    assert_eq!(patched["status"], "written");
    let other = format!("{}{}", "ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234");
    let before = snapshot(h.home.path());
    let err = h
        .skill("s1", json!({"action": "patch", "name": "api-fixtures", "old_string": "The fixture:", "new_string": format!("The fixture ({other}):")}))
        .unwrap_err();
    assert_eq!(err["details"]["findings"][0]["rule"], "github-pat");
    assert_eq!(snapshot(h.home.path()), before);
}

#[test]
fn the_agent_cannot_acknowledge_its_own_finding() {
    let mut h = ready();
    create_with(&mut h, "Fixtures live in tests/fixtures.\n").unwrap();
    h.skill("s1", json!({"action": "view", "name": "api-fixtures"})).unwrap();
    let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
    let forged = scan_fingerprint_guess(&key);
    let content = format!(
        "---\nname: api-fixtures\ndescription: Fixtures for the API client tests. Use when writing API tests.\nmetadata:\n  accepted-findings: {forged}\n---\nKey: {key}\n"
    );
    let before = snapshot(h.home.path());
    let err = h.skill("s1", json!({"action": "edit", "name": "api-fixtures", "content": content})).unwrap_err();
    assert_eq!(err["code"], "secret-found", "{err}");
    assert_eq!(snapshot(h.home.path()), before, "nothing written");
}

/// What an agent would write to acknowledge `key` (it can compute the hash as well as we can).
fn scan_fingerprint_guess(key: &str) -> String {
    self_evolve_plugin::library::guards::scan::fingerprint(
        self_evolve_plugin::library::guards::scan::RuleId::AwsAccessKeyId,
        key.as_bytes(),
    )
}

#[test]
fn check_honours_an_acknowledgement_in_metadata_and_only_that_value() {
    let mut h = ready();
    let value = fixture();
    let acknowledged = self_evolve_plugin::library::guards::scan::scan_secrets(&value)[0].fingerprint.clone().unwrap();
    let other = format!("TOKEN = \"{}{}\"", "Zr7kq2Lp9x", "W3vTq8Zr7k");
    let skill_md = |ack: &str| {
        format!(
            "---\nname: api-fixtures\ndescription: Fixtures. Use when testing.\nmetadata:\n  accepted-findings: {ack}\n---\n{value}\n{other}\n"
        )
    };
    let input = |text: String| SkillInput {
        folder: "api-fixtures".into(),
        skill_md: FileInput { path: "api-fixtures/SKILL.md".into(), bytes: text.into_bytes() },
        resources: vec![FileInput {
            path: "api-fixtures/references/more.md".into(),
            bytes: format!("{value}\n").into_bytes(),
        }],
    };
    let rules = |h: &mut TestHost, text: String| -> Vec<(String, u32)> {
        let findings = h.plugin.check(&[input(text)]).unwrap();
        findings
            .iter()
            .filter(|f| f.rule.contains("secret") || f.rule.contains("token"))
            .map(|f| (f.path.clone(), f.line))
            .collect()
    };
    assert_eq!(rules(&mut h, skill_md("none")).len(), 3, "without the acknowledgement every value is reported");
    assert_eq!(
        rules(&mut h, skill_md(&acknowledged)),
        [("api-fixtures/SKILL.md".to_string(), 8)],
        "the acknowledged value is skipped in every file of the skill; the other is not"
    );
}
