//! The README's embedding example, compiled by `cargo test`.
//! Run: cargo run -p self-evolve-host --example embed (after ./build.sh).

use self_evolve_host::{Endpoint, FsConfig, HostConfig, HttpConfig, Plugin, user_context};
use std::collections::BTreeMap;

fn main() -> anyhow::Result<()> {
    let home = std::env::var("HOME")?;
    let config = HostConfig {
        fs: FsConfig {
            user_skills: Some(format!("{home}/.dsh/skills").into()),
            state: Some(format!("{home}/.dsh/self-evolve").into()),
            ..Default::default() // project roots: discovered per session from its cwd
        },
        http: HttpConfig {
            endpoints: BTreeMap::from([(
                "gate".to_string(),
                Endpoint::new("https://gate.example/v1").with_credential_env("GATE_API_KEY"),
            )]),
        },
        ..Default::default()
    };
    let mut plugin = Plugin::load("dist/self-evolve.wasm", config)?;
    let services = ["tools", "commands", "system-prompt", "agents", "subagents"].map(String::from);
    let report = plugin.init("{}", &services)?.map_err(|e| anyhow::anyhow!("{}: {}", e.key, e.message))?;
    for part in &report.parts {
        println!("{} {:?}", part.name, part.state);
    }
    // Publish plugin.tools_list()? to the model; forward its calls:
    let ctx = user_context("session-1");
    let answer = plugin.tools_call(&ctx, "skill_manage", r#"{"action":"list"}"#)?;
    println!("{answer:?}");
    Ok(())
}
