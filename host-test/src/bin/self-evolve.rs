//! The `self-evolve` CLI: operator commands over the real component.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use self_evolve_host::{HostConfig, Plugin};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "self-evolve", version, about = "Operate the self-evolve skill-library plugin")]
struct Cli {
    /// The component to load.
    #[arg(long, global = true, default_value = "dist/self-evolve.wasm", env = "SELF_EVOLVE_WASM")]
    wasm: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the component's capability manifest (imports), exports and size.
    Inspect {
        /// Also initialise it with the default config and print the activation report.
        #[arg(long)]
        init: bool,
    },
    /// Check skill folders with the plugin's parser, validator, scanner and dedupe.
    /// Exits 1 on errors (format violations, credentials); warnings and advice leave it 0.
    Check {
        /// One skill (a folder holding SKILL.md) or a folder of skills.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// One JSON object per finding: path, line, rule, severity, message.
        #[arg(long)]
        json: bool,
    },
    /// The /skills command: list, show, pending, diff, approve, reject, review, … (Not built yet.)
    Skills {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Summarise a gates.jsonl log and compare thresholds. (Not built yet.)
    GateStats {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Drive a recorded session (JSONL) through the plugin with a manual clock. (Not built yet.)
    Replay {
        file: PathBuf,
        #[arg(long)]
        home: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print configuration.
    Config {
        /// Print the full configuration with every default, as the plugin resolves it.
        #[arg(long)]
        defaults: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("self-evolve: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn not_built(what: &str) -> Result<ExitCode> {
    eprintln!("self-evolve: `{what}` is not built yet in this version; see the README's status section.");
    Ok(ExitCode::from(2))
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Inspect { init } => inspect(&cli.wasm, init),
        Command::Config { defaults } => {
            if !defaults {
                bail!("say what to print: `self-evolve config --defaults`");
            }
            let mut plugin = Plugin::load(&cli.wasm, HostConfig::default())?;
            let report = plugin.init("{}", &[])?.map_err(|e| anyhow::anyhow!("{}: {}", e.key, e.message))?;
            let value: serde_json::Value =
                serde_json::from_str(&report.config_json).context("the plugin's config report")?;
            println!("{}", serde_json::to_string_pretty(&value)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { dirs, json } => {
            let mut plugin = Plugin::load(&cli.wasm, HostConfig::default())?;
            let failed = self_evolve_host::cli::check::run(&mut plugin, &dirs, json)?;
            Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Command::Skills { .. } => not_built("skills"),
        Command::GateStats { .. } => not_built("gate-stats"),
        Command::Replay { .. } => not_built("replay"),
    }
}

fn inspect(wasm: &PathBuf, init: bool) -> Result<ExitCode> {
    let bytes = std::fs::read(wasm).with_context(|| format!("reading {} (run ./build.sh first)", wasm.display()))?;
    let engine = self_evolve_host::engine::engine()?;
    let (component, cache) = self_evolve_host::engine::load_component(
        engine,
        &bytes,
        self_evolve_host::engine::default_cache_dir().as_deref(),
    )?;
    let ty = component.component_type();
    println!("component  {}", wasm.display());
    println!("size       {} bytes ({:.1} KiB)", bytes.len(), bytes.len() as f64 / 1024.0);
    println!("cache      {cache:?}");
    println!("imports (the capabilities it asks for):");
    for (name, _) in ty.imports(engine) {
        println!("  {name}");
    }
    println!("exports:");
    for (name, _) in ty.exports(engine) {
        println!("  {name}");
    }
    if init {
        let mut plugin = Plugin::from_bytes(&bytes, HostConfig::default())?;
        let services: Vec<String> =
            ["tools", "commands", "system-prompt", "agents", "subagents"].iter().map(|s| s.to_string()).collect();
        match plugin.init("{}", &services)? {
            Ok(report) => {
                println!("init (default config, every service offered): version {}", report.version);
                for part in &report.parts {
                    let missing = if part.missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (waits for {})", part.missing.join(", "))
                    };
                    println!("  {:<13} {:<8} {}{missing}", part.name, state_name(part.state), part.detail);
                }
                for warning in &report.warnings {
                    println!("  warning: {warning}");
                }
                for tool in plugin.tools_list()? {
                    println!("tool       {}: {}", tool.name, tool.description);
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
