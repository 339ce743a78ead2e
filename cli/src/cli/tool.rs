//! `self-evolve tool NAME ARGS`: one tool call in a session, through the real component and every
//! guard. A reviewer run by the `command` provider uses it for its writes: its session, identity
//! and home arrive in `SELF_EVOLVE_*` variables, and a call as a reviewer (`SELF_EVOLVE_ACTIVATION`
//! equal to the agent) is made as a subagent, one level down.

use crate::component::Source;
use anyhow::Result;
use self_evolve_host::plugin::{CallContext, Origin};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub struct Call {
    pub name: String,
    pub args: String,
    pub session: String,
    pub agent: Option<String>,
    pub cwd: PathBuf,
}

pub fn run(home: &Path, wasm: &Source, call: Call) -> Result<ExitCode> {
    // Inside a live reviewer the identity is the reviewer's: its writes are audited under its
    // review and made as a subagent, whatever `--agent` says.
    let activation = crate::identity::activation();
    if let (Some(activation), Some(agent)) = (&activation, &call.agent)
        && agent != activation
    {
        anyhow::bail!(crate::identity::not_the_reviewer(activation, agent));
    }
    let agent = activation.clone().or(call.agent).unwrap_or_else(|| "main".to_string());
    let reviewer = activation.is_some();
    let ctx = CallContext {
        session: call.session,
        agent,
        origin: if reviewer { Origin::Subagent } else { Origin::User },
        depth: u32::from(reviewer),
        cwd: call.cwd.to_string_lossy().into_owned(),
    };
    let mut live = crate::live::open(home, wasm)?;
    let answer = live.plugin.tools_call(&ctx, &call.name, &call.args)?;
    let line = self_evolve_host::lines::tool(
        &ctx.session,
        &ctx.agent,
        &call.name,
        answer.is_ok(),
        answer.as_ref().unwrap_or_else(|e| e),
    );
    live.record("tool", &[line]);
    // The answer quotes what the call named and what the files hold: the same JSON value to the
    // reviewer that parses it, nothing a terminal would obey (a text answer through `visible`).
    let (ok, text) = match answer {
        Ok(text) => (true, text),
        Err(text) => (false, text),
    };
    if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        crate::say!("{}", self_evolve_host::text::visible_json(&text));
    } else {
        crate::say!("{}", self_evolve_host::text::visible_lines(&text));
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
