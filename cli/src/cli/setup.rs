//! `self-evolve setup`: runs `crate::setup` and tells the person what it did — each changed
//! file's diff, then one line per file (created, updated, removed, unchanged, with its backup),
//! then what the harness still needs from them (trusting hooks, restarting).

use crate::setup::harness::Harness;
use crate::setup::{Options, report_json, run as setup};
use anyhow::Result;
use self_evolve_host::text::visible;
use std::process::ExitCode;

pub fn run(options: &Options, json: bool) -> Result<ExitCode> {
    let outcomes = setup(options)?;
    if json {
        crate::say!("{}", self_evolve_host::text::visible_json(&report_json(options, &outcomes).to_string()));
        return Ok(ExitCode::SUCCESS);
    }
    for outcome in &outcomes {
        if !outcome.diff.is_empty() {
            crate::say!("{}", outcome.diff.trim_end());
        }
    }
    let verb = if options.dry_run { "would be " } else { "" };
    for outcome in &outcomes {
        let backup = outcome
            .backup
            .as_ref()
            .map(|b| format!(" (the old file is at {})", visible(&b.display().to_string())))
            .unwrap_or_default();
        let action = if outcome.action == "unchanged" { "unchanged" } else { outcome.action };
        crate::say!("{}: {verb}{action}{backup}", visible(&outcome.path.display().to_string()));
    }
    if options.dry_run {
        crate::say!("dry run: nothing was written");
        return Ok(ExitCode::SUCCESS);
    }
    if options.remove {
        crate::say!(
            "self-evolve is out of {}; the home at {} is kept (your skills are in it)",
            options.harness.name(),
            visible(&options.home.display().to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let next = match options.harness {
        Harness::Claude => {
            "restart Claude Code (or run /hooks and /mcp) to load it; hooks run once you trust the folder"
        }
        Harness::Codex => "restart Codex, then approve the new hooks with /hooks (Codex runs a hook only once trusted)",
        Harness::Gemini => "restart Gemini CLI (/mcp and /hooks list what it loaded)",
        Harness::Cursor => "restart Cursor; the hooks and the server appear under Settings → Hooks and MCP",
        Harness::Hermes => {
            "restart Hermes; it asks you to approve each new hook the first time it runs in a terminal (or start it \
             once with --accept-hooks)"
        }
    };
    crate::say!(
        "self-evolve is set up for {}; home {}\nnext: {next}",
        options.harness.name(),
        visible(&options.home.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}
