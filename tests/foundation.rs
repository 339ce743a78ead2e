//! The real component through the wasmtime host: init and its report, config errors,
//! tools.list, structured tool errors, the command's usage, guidance, and credentials.

mod common;

use common::{all_services, host, host_with};
use self_evolve_host::engine::CacheOutcome;
use self_evolve_host::plugin::PartState;
use self_evolve_host::{Endpoint, HttpConfig, Plugin, user_context};
use std::collections::BTreeMap;

#[test]
fn init_with_defaults_reports_every_part_and_the_effective_config() {
    let mut h = host();
    let report = h.plugin.init("{}", &all_services()).unwrap().unwrap();
    assert_eq!(report.version, "0.1.0");
    let names: Vec<&str> = report.parts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["skill-manage", "guidance", "command", "review", "gate", "curator", "review-loop"]);
    assert!(report.parts.iter().all(|p| p.state == PartState::Active), "{:?}", report.parts);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let config: serde_json::Value = serde_json::from_str(&report.config_json).unwrap();
    assert_eq!(config["review"]["turnInterval"], 10);
    assert_eq!(config["review"]["toolCallThreshold"], 15);
    assert_eq!(config["review"]["jev"]["confidentNo"], 0.75);
    assert_eq!(config["curator"]["archiveDays"], 90);
}

#[test]
fn parts_wait_for_the_services_the_host_does_not_offer() {
    let mut h = host();
    let report = h.plugin.init("", &["tools".to_string(), "telepathy".to_string()]).unwrap().unwrap();
    let part = |name: &str| report.parts.iter().find(|p| p.name == name).unwrap().clone();
    assert_eq!(part("skill-manage").state, PartState::Active);
    assert_eq!(part("review").state, PartState::Pending);
    assert_eq!(part("review").missing, ["agents", "subagents"]);
    assert_eq!(part("review-loop").missing, ["subagents"]);
    assert_eq!(part("command").missing, ["commands"]);
    assert_eq!(part("guidance").missing, ["system-prompt"]);
    assert!(report.warnings.iter().any(|w| w.contains("unknown host service `telepathy`")), "{:?}", report.warnings);
    assert_eq!(h.plugin.guidance().unwrap(), None, "no system prompt offered, no section");
}

#[test]
fn review_disabled_by_config_is_reported_as_disabled() {
    let mut h = host();
    let report = h.plugin.init(r#"{"review":{"enabled":false}}"#, &all_services()).unwrap().unwrap();
    let review = report.parts.iter().find(|p| p.name == "review").unwrap();
    assert_eq!(review.state, PartState::Disabled);
    assert!(review.detail.contains("/skills review on"));
}

#[test]
fn out_of_range_and_unknown_keys_fail_naming_the_key() {
    let mut h = host();
    let err = h.plugin.init(r#"{"review":{"turnInterval":0}}"#, &[]).unwrap().unwrap_err();
    assert_eq!(err.key, "review.turnInterval");
    assert!(err.message.contains("between 1 and 10000, found 0"), "{}", err.message);

    let err = h.plugin.init(r#"{"reveiw":{}}"#, &[]).unwrap().unwrap_err();
    assert_eq!(err.key, "reveiw");
    assert!(err.message.contains("unknown key `reveiw`"), "{}", err.message);
    assert!(err.message.contains("Did you mean `review`?"), "{}", err.message);
    assert!(err.message.contains("writeApproval"), "known keys listed: {}", err.message);

    let err = h.plugin.init("not json", &[]).unwrap().unwrap_err();
    assert_eq!(err.key, "");
    assert!(err.message.contains("not valid JSON"));
}

#[test]
fn tools_list_publishes_skill_manage_with_a_json_schema() {
    let mut h = host();
    let tools = h.plugin.tools_list().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "skill_manage");
    let schema: serde_json::Value = serde_json::from_str(&tools[0].parameters_schema).unwrap();
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["action"]["enum"].as_array().unwrap().iter().any(|a| a == "patch"));
}

#[test]
fn tool_errors_are_structured_json() {
    let mut h = host();
    let ctx = user_context("s1");
    let before_init = h.plugin.tools_call(&ctx, "skill_manage", "{}").unwrap().unwrap_err();
    let err: serde_json::Value = serde_json::from_str(&before_init).unwrap();
    assert_eq!(err["code"], "not-initialized");
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    let unknown = h.plugin.tools_call(&ctx, "rm_rf", "{}").unwrap().unwrap_err();
    let err: serde_json::Value = serde_json::from_str(&unknown).unwrap();
    assert_eq!(err["code"], "unknown-tool");
    assert!(err["message"].as_str().unwrap().contains("rm_rf"));
    assert!(err["hint"].as_str().unwrap().contains("skill_manage"));
    assert!(err["details"].is_object());
}

#[test]
fn the_command_answers_help_and_a_usage_message_for_unknown_subcommands() {
    let mut h = host();
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    let ctx = user_context("s1");
    assert!(h.plugin.command(&ctx, "help").unwrap().unwrap().contains("usage: /skills"));
    let err = h.plugin.command(&ctx, "frobnicate now").unwrap().unwrap_err();
    assert!(err.contains("unknown subcommand `frobnicate`") && err.contains("usage: /skills"), "{err}");
}

#[test]
fn guidance_is_offered_when_the_host_has_a_system_prompt() {
    let mut h = host();
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    let text = h.plugin.guidance().unwrap().unwrap();
    assert!(text.contains("skill_manage") && text.contains("Read before you write"));
}

#[test]
fn the_jev_gate_sees_whether_a_credential_exists_never_its_value() {
    const SECRET: &str = "sk-e2e-never-in-the-guest-42";
    // SAFETY: a variable name unique to this test; no other thread reads it.
    unsafe { std::env::set_var("SE_E2E_GATE_KEY", SECRET) };
    let endpoints = |var: &str| HttpConfig {
        endpoints: BTreeMap::from([("gate".to_string(), Endpoint::new("http://127.0.0.1:9").with_credential_env(var))]),
    };
    let jev = r#"{"review":{"gate":"jev"}}"#;

    let mut with_key = host_with(|c| c.http = endpoints("SE_E2E_GATE_KEY"));
    let report = with_key.plugin.init(jev, &all_services()).unwrap().unwrap();
    let gate = report.parts.iter().find(|p| p.name == "gate").unwrap();
    assert_eq!(gate.state, PartState::Active, "{gate:?}");
    assert!(!format!("{report:?}").contains(SECRET));
    assert!(!with_key.log_text().contains(SECRET));

    let mut without = host_with(|c| c.http = endpoints("SE_E2E_GATE_KEY_UNSET"));
    let report = without.plugin.init(jev, &all_services()).unwrap().unwrap();
    let gate = report.parts.iter().find(|p| p.name == "gate").unwrap();
    assert_eq!(gate.state, PartState::Pending);
    assert!(report.warnings.iter().any(|w| w.contains("no credential") && w.contains("stays on counters")));
    assert!(without.logged("stays on counters"), "the warning is logged once at init");
}

#[test]
fn compiled_code_is_cached_on_disk_and_in_the_process() {
    let cache = tempfile::tempdir().unwrap();
    let wasm = std::fs::read(common::wasm_path()).unwrap();
    let engine = self_evolve_host::engine::engine().unwrap();
    let load = || self_evolve_host::engine::load_from_disk_or_compile(engine, &wasm, Some(cache.path())).unwrap().1;
    assert_eq!(load(), CacheOutcome::Miss);
    assert_eq!(load(), CacheOutcome::Hit);
    let config = || self_evolve_host::HostConfig { cache_dir: Some(cache.path().to_path_buf()), ..Default::default() };
    Plugin::load(common::wasm_path(), config()).unwrap();
    let mut again = Plugin::load(common::wasm_path(), config()).unwrap();
    assert_eq!(again.load_info.cache, CacheOutcome::Memory);
    assert_eq!(again.tools_list().unwrap().len(), 1);
}

/// Issue 39 item 4: the component stays within 2 MiB. A size, not a timing, so a test: a feature
/// that pulls a crate's unused half into the component (once 100 KB of Aho-Corasick builders
/// behind a branch the component never takes) fails here, not in a later measurement.
/// `./build.sh` applies `wasm-opt -Os`, which the test run always has (it needs Node).
#[test]
fn the_component_is_at_most_two_mebibytes() {
    let size = std::fs::metadata(common::wasm_path()).unwrap().len();
    assert!(size <= 2 << 20, "dist/self-evolve.wasm is {size} bytes, past 2 MiB (2,097,152): see docs/benchmarks.md");
}
