//! Evidence on the fake host through the whole plugin: loads, what followed them, corrections
//! judged from the next message only, and the curator's flag.

use super::*;
use crate::api::{CallContext, Origin, ToolEvent};
use crate::fake::FakeHost;
use crate::host::{Host, Root, WriteMode};
use crate::library::curation::ledger::Ledger;
use crate::plugin::Plugin;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn corrections_are_read_from_the_opening_words_and_a_few_phrases() {
    for text in [
        "No, use the staging cluster",
        "nope",
        "Actually, run it against main",
        "that's wrong, the port is 5433",
        "That’s not what I asked for",
        "I said the other branch",
        "undo that please",
        "It still doesn't work",
    ] {
        assert!(is_correction(text), "{text}");
    }
    for text in ["Now deploy it", "Great, thanks!", "Nothing else", "knowledge base next", "Can you add notes?"] {
        assert!(!is_correction(text), "{text}");
    }
}

fn ctx() -> CallContext {
    CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: "/work".into() }
}

fn load(plugin: &mut Plugin<FakeHost>, name: &str) {
    let event = ToolEvent {
        tool: "skill".into(),
        args_json: format!(r#"{{"name":"{name}"}}"#),
        ok: true,
        output: String::new(),
    };
    plugin.tool_result(&ctx(), &event);
}

#[test]
fn what_followed_each_load_is_counted_and_a_skill_often_corrected_is_flagged() {
    let host = FakeHost::new(1_767_225_600_000);
    for name in ["deploy", "notes"] {
        let text = format!(
            "---\nname: {name}\ndescription: The {name} steps. Use when asked.\nmetadata:\n  authored-by: self-evolve\n---\nSteps.\n"
        );
        host.write(&Root::UserSkills, &format!("{name}/SKILL.md"), text.as_bytes(), WriteMode::CreateNew).unwrap();
    }
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into()]).unwrap();
    let turn = |plugin: &mut Plugin<FakeHost>, loads: &[&str], status: TurnStatus, next: &str| {
        plugin.user_message(&ctx(), "go", true);
        for name in loads {
            load(plugin, name);
        }
        plugin.turn_end(&ctx(), status);
        plugin.user_message(&ctx(), next, true);
    };
    turn(&mut plugin, &["deploy"], TurnStatus::Completed, "no, the other cluster");
    // Loaded twice in one turn: one turn, one load, one outcome.
    turn(&mut plugin, &["deploy", "notes", "deploy"], TurnStatus::Completed, "thanks");
    turn(&mut plugin, &["deploy"], TurnStatus::Failed, "no, try again");
    turn(&mut plugin, &["deploy"], TurnStatus::Completed, "that's wrong");
    turn(&mut plugin, &["notes"], TurnStatus::Completed, "great");
    // Only the first message after a turn is judged: a later "no" is about something else.
    plugin.user_message(&ctx(), "no, leave the logs as they are", true);
    // A subagent's load is not the agent's.
    let child = CallContext { origin: Origin::Subagent, depth: 1, agent: "act-1".into(), ..ctx() };
    let event =
        ToolEvent { tool: "skill".into(), args_json: r#"{"name":"notes"}"#.into(), ok: true, output: String::new() };
    plugin.tool_result(&child, &event);

    let ledger = Ledger::load(plugin.host());
    let deploy = ledger.skills["deploy"].evidence;
    assert_eq!((deploy.loads, deploy.completed, deploy.failed, deploy.corrected), (4, 3, 1, 2), "{deploy:?}");
    let notes = ledger.skills["notes"].evidence;
    assert_eq!((notes.loads, notes.completed, notes.corrected), (2, 2, 0), "{notes:?}");

    let out = plugin.run_command(&ctx(), "curator run --json").unwrap();
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["flagged"].as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(
        (report["flagged"][0]["name"].as_str(), report["flagged"][0]["corrected"].as_u64()),
        (Some("deploy"), Some(2))
    );
    let list = plugin.run_command(&ctx(), "list").unwrap();
    assert!(list.contains("4 load(s): 3 completed, 1 failed, 2 corrected"), "{list}");
    let show: serde_json::Value =
        serde_json::from_str(&plugin.run_command(&ctx(), "show notes --json").unwrap()).unwrap();
    assert_eq!(show["evidence"]["loads"], 2);
}
