//! Embedding self-evolve in a Rust harness: load the component, grant its capabilities,
//! initialise it, publish its tool and forward one turn of events. Compiled and run by the
//! tests (host-test/tests/embed.rs); run it yourself with
//! `cargo run -p self-evolve-host --example embed` after ./build.sh.

use self_evolve_host::plugin::{ToolEvent, TurnStatus};
use self_evolve_host::{Endpoint, FsConfig, HostConfig, HttpConfig, Plugin, user_context};
use std::collections::BTreeMap;
use std::path::Path;

/// Runs one short session against the skills under `home`.
pub fn run(wasm: &Path, home: &Path) -> anyhow::Result<Vec<String>> {
    let config = HostConfig {
        fs: FsConfig {
            user_skills: Some(home.join("skills")),
            state: Some(home.join("self-evolve")),
            ..Default::default() // project roots: discovered per session from its cwd
        },
        http: HttpConfig {
            // The plugin names the endpoint; the host owns its URL and credential.
            endpoints: BTreeMap::from([(
                "gate".to_string(),
                Endpoint::new("https://gate.example/v1").with_credential_env("GATE_API_KEY"),
            )]),
        },
        ..Default::default()
    };
    let mut plugin = Plugin::load(wasm, config)?;
    let services = ["tools", "commands", "system-prompt", "agents", "subagents", "session-owner"].map(String::from);
    let report = plugin.init("{}", &services)?.map_err(|e| anyhow::anyhow!("config `{}`: {}", e.key, e.message))?;
    let mut lines: Vec<String> = report.parts.iter().map(|p| format!("{} {:?}", p.name, p.state)).collect();

    // Publish the tool and the system-prompt section to the model.
    for tool in plugin.tools_list()? {
        lines.push(format!("tool {}", tool.name));
    }
    if let Some(section) = plugin.guidance()? {
        lines.push(format!("guidance: {} characters", section.len()));
    }

    // Forward one turn: the user's message, a tool result, the model's call, the turn's end.
    let ctx = user_context("session-1");
    plugin.user_message(&ctx, "Always run the linter before committing.", true)?;
    let lint =
        ToolEvent { tool: "bash".into(), args_json: r#"{"cmd":"make lint"}"#.into(), ok: true, output: "ok".into() };
    plugin.tool_result(&ctx, &lint)?;
    let args = r#"{"action":"create","name":"lint-before-commit","description":"Run the linter before every commit. Use when committing.","body":"Run `make lint` first.\n"}"#;
    match plugin.tools_call(&ctx, "skill_manage", args)? {
        Ok(result) => lines.push(format!("skill_manage: {result}")),
        Err(error) => lines.push(format!("skill_manage refused: {error}")),
    }
    for decision in plugin.turn_end(&ctx, TurnStatus::Completed)? {
        lines.push(format!("decision: {decision}"));
    }
    // The sessions held in memory (`session-owner`) go back to the home before the instance goes.
    plugin.hand_back()?;
    Ok(lines)
}

#[allow(dead_code)]
fn main() -> anyhow::Result<()> {
    let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".dsh")).unwrap_or_else(|| ".dsh".into());
    for line in run(Path::new("dist/self-evolve.wasm"), &home)? {
        println!("{line}");
    }
    Ok(())
}
