//! `self-evolve inspect`: the capability manifest an operator audits (imports), the exports,
//! the size and cache state, and with `--init` the activation report under the default config.

use anyhow::{Result, bail};
use self_evolve_host::{HostConfig, Plugin};
use std::path::Path;
use std::process::ExitCode;

pub(super) fn run(wasm: &crate::component::Source, init: bool, home: &Path, chosen: Option<&Path>) -> Result<ExitCode> {
    let bytes = wasm.bytes()?;
    let engine = self_evolve_host::engine::engine()?;
    let (component, cache) = self_evolve_host::engine::load_component(
        engine,
        &bytes,
        self_evolve_host::engine::default_cache_dir().as_deref(),
    )?;
    let ty = component.component_type();
    crate::say!("component  {}", self_evolve_host::text::visible(&wasm.describe()));
    crate::say!("size       {} bytes ({:.1} KiB)", bytes.len(), bytes.len() as f64 / 1024.0);
    crate::say!("cache      {cache:?}");
    // Everything below comes from the component (any file --wasm names) or the plugin: shown
    // through `visible`, never obeyed.
    use self_evolve_host::text::{visible, visible_lines};
    crate::say!("imports (the capabilities it asks for):");
    for (name, _) in ty.imports(engine) {
        crate::say!("  {}", visible(name));
    }
    crate::say!("exports:");
    for (name, _) in ty.exports(engine) {
        crate::say!("  {}", visible(name));
    }
    // Roots are resolved once, at start-up: the host confines every path to these real folders.
    let mut fs = self_evolve_host::caps::fs::FsCap::new(crate::home::fs_config(home, chosen), Default::default());
    let project = fs.root_path(&self_evolve_host::caps::fs::RootRef::ProjectSkills("inspect".into()));
    crate::say!("roots (real paths, resolved at start-up; links in them are not followed later):");
    for (name, path) in fs.describe_roots() {
        let shown = path.map_or_else(
            || "(not mapped)".to_string(),
            |p| self_evolve_host::text::visible(&p.display().to_string()).into_owned(),
        );
        crate::say!("  {name:<13} {shown}");
    }
    let shown = project.map_or_else(
        || "(none here)".to_string(),
        |p| self_evolve_host::text::visible(&p.display().to_string()).into_owned(),
    );
    let from = if chosen.is_some() { "--project" } else { "from the current directory" };
    crate::say!("  {:<13} {shown} ({from}; checked to stay inside its project)", "project-skills");
    for warning in &fs.warnings {
        crate::say!("  warning: {}", visible(warning));
    }
    if init {
        let mut plugin = Plugin::from_bytes(&bytes, HostConfig::default())?;
        let services: Vec<String> =
            ["tools", "commands", "system-prompt", "agents", "subagents"].iter().map(|s| s.to_string()).collect();
        match plugin.init("{}", &services)? {
            Ok(report) => {
                crate::say!("init (default config, every service offered): version {}", visible(&report.version));
                for part in &report.parts {
                    let missing = if part.missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (waits for {})", part.missing.join(", "))
                    };
                    crate::say!(
                        "  {:<13} {:<8} {}",
                        visible(&part.name),
                        state_name(part.state),
                        visible(&format!("{}{missing}", part.detail))
                    );
                }
                for warning in &report.warnings {
                    crate::say!("  warning: {}", visible(warning));
                }
                for tool in plugin.tools_list()? {
                    crate::say!("tool       {}: {}", visible(&tool.name), visible_lines(&tool.description));
                }
            }
            Err(err) => bail!("init failed: {}: {}", err.key, err.message),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn state_name(state: self_evolve_host::plugin::PartState) -> &'static str {
    use self_evolve_host::plugin::PartState;
    match state {
        PartState::Active => "active",
        PartState::Pending => "pending",
        PartState::Disabled => "disabled",
    }
}
