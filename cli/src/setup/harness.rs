//! What `setup` writes for each harness: which files (by scope), and in each the MCP server entry
//! and the hook handlers, all pointing at this binary by absolute path. The formats come from each
//! harness's docs, kept with a link to where they came from in `cli/tests/fixtures/harness/`.

use super::jsonc::{Hook, HookShape};
use super::value::{V, shell_quote};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    Claude,
    Codex,
    Gemini,
    Cursor,
    Hermes,
}

impl Harness {
    pub const ALL: [Harness; 5] = [Harness::Claude, Harness::Codex, Harness::Gemini, Harness::Cursor, Harness::Hermes];

    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Gemini => "gemini",
            Harness::Cursor => "cursor",
            Harness::Hermes => "hermes",
        }
    }

    pub fn parse(name: &str) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.name() == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Strict JSON (the harness reads it with a JSON parser).
    Json,
    /// JSON with comments (Gemini CLI's settings: strip-json-comments, no trailing commas).
    Jsonc,
    Toml,
    Yaml,
}

/// One change to a file.
#[derive(Debug, Clone)]
pub enum Change {
    /// `path.name` = entry (an MCP server).
    Entry { path: Vec<&'static str>, name: &'static str, entry: V },
    /// Our hook handlers under `path`, exactly these.
    Hooks { path: Vec<&'static str>, shape: HookShape, hooks: Vec<Hook> },
    /// A top-level `key = [program …]` of ours goes (Codex's `notify`, which hooks replace).
    DropOurProgram { key: &'static str },
    /// A top-level `key: value` set when missing, left as it is when present (Cursor's
    /// `"version": 1`); never removed, as a person may have written it.
    Default { key: &'static str, value: V },
}

#[derive(Debug, Clone)]
pub struct FilePlan {
    pub path: PathBuf,
    pub format: Format,
    pub changes: Vec<Change>,
}

/// Where the harness's files are, from the environment setup runs in.
#[derive(Debug, Clone)]
pub struct Places {
    /// The user's home folder (`$HOME`).
    pub user_home: PathBuf,
    /// `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `GEMINI_CLI_HOME`, `HERMES_HOME` when set.
    pub codex_home: Option<PathBuf>,
    pub claude_config_dir: Option<PathBuf>,
    pub gemini_cli_home: Option<PathBuf>,
    pub hermes_home: Option<PathBuf>,
}

impl Places {
    pub fn from_env() -> Places {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Places {
            user_home: var("HOME").or_else(|| var("USERPROFILE")).unwrap_or_else(|| PathBuf::from("/")),
            codex_home: var("CODEX_HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            gemini_cli_home: var("GEMINI_CLI_HOME"),
            hermes_home: var("HERMES_HOME"),
        }
    }
}

/// What the entries run: this binary, with `--home` when the home is not the default one.
#[derive(Debug, Clone)]
pub struct Launch {
    pub binary: PathBuf,
    pub home: Option<PathBuf>,
}

impl Launch {
    /// `[--home H] args…` after the binary.
    fn args(&self, args: &[&str]) -> Vec<String> {
        let mut all = Vec::new();
        if let Some(home) = &self.home {
            all.push("--home".to_string());
            all.push(home.display().to_string());
        }
        all.extend(args.iter().map(|a| a.to_string()));
        all
    }

    fn server(&self, with_type: bool) -> V {
        let mut pairs = Vec::new();
        if with_type {
            pairs.push(("type", V::str("stdio")));
        }
        pairs.push(("command", V::str(self.binary.display().to_string())));
        pairs.push(("args", V::strs(&self.args(&["mcp"]))));
        V::map(pairs)
    }

    /// The hook command line, quoted for the shell the harness runs it through.
    pub fn hook_command(&self, harness: Harness) -> String {
        let mut words = vec![self.binary.display().to_string()];
        words.extend(self.args(&["hook"]));
        if harness != Harness::Claude {
            words.push("--harness".into());
            words.push(harness.name().into());
        }
        words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ")
    }
}

/// The `matcher` our `PostToolUse` hooks use in Claude Code and Codex: the tools whose results
/// the plugin reads (a skill's load, a file read, a shell command, an edit); every other tool's
/// result costs a process for nothing.
pub const CLAUDE_TOOLS: &str = "Skill|Read|Bash|Edit|Write|MultiEdit";

pub fn plan(harness: Harness, project: Option<&Path>, places: &Places, launch: &Launch) -> Vec<FilePlan> {
    let home = &places.user_home;
    let handler = |timeout: Option<i64>| {
        let mut pairs = vec![("type", V::str("command")), ("command", V::str(launch.hook_command(harness)))];
        if let Some(timeout) = timeout {
            pairs.push(("timeout", V::Int(timeout)));
        }
        V::map(pairs)
    };
    let hook = |event: &str, matcher: Option<&str>, handler: &V| Hook {
        event: event.to_string(),
        matcher: matcher.map(str::to_string),
        handler: handler.clone(),
    };
    match harness {
        Harness::Claude => {
            // Seconds; the hook answers within host.json's `hook.budgetMs` (10 s) anyway.
            let h = handler(Some(30));
            let hooks = vec![
                hook("UserPromptSubmit", None, &h),
                hook("PostToolUse", Some(CLAUDE_TOOLS), &h),
                hook("PostToolUseFailure", Some(CLAUDE_TOOLS), &h),
                hook("Stop", None, &h),
                hook("SessionEnd", None, &h),
            ];
            let config = places.claude_config_dir.clone().unwrap_or_else(|| home.join(".claude"));
            let (mcp, settings) = match project {
                Some(project) => (project.join(".mcp.json"), project.join(".claude/settings.json")),
                // `claude mcp add --scope user` writes `~/.claude.json` (inside CLAUDE_CONFIG_DIR when set).
                None => (
                    places
                        .claude_config_dir
                        .as_ref()
                        .map_or_else(|| home.join(".claude.json"), |d| d.join(".claude.json")),
                    config.join("settings.json"),
                ),
            };
            vec![
                FilePlan {
                    path: mcp,
                    format: Format::Json,
                    changes: vec![Change::Entry {
                        path: vec!["mcpServers"],
                        name: "self-evolve",
                        entry: launch.server(true),
                    }],
                },
                FilePlan {
                    path: settings,
                    format: Format::Json,
                    changes: vec![Change::Hooks { path: vec!["hooks"], shape: HookShape::Grouped, hooks }],
                },
            ]
        }
        Harness::Codex => {
            let h = handler(Some(30));
            let hooks = vec![hook("UserPromptSubmit", None, &h), hook("PostToolUse", None, &h), hook("Stop", None, &h)];
            let dir = match project {
                Some(project) => project.join(".codex"),
                None => places.codex_home.clone().unwrap_or_else(|| home.join(".codex")),
            };
            vec![
                FilePlan {
                    path: dir.join("config.toml"),
                    format: Format::Toml,
                    changes: vec![
                        Change::Entry { path: vec!["mcp_servers"], name: "self-evolve", entry: launch.server(false) },
                        Change::DropOurProgram { key: "notify" },
                    ],
                },
                FilePlan {
                    path: dir.join("hooks.json"),
                    format: Format::Json,
                    changes: vec![Change::Hooks { path: vec!["hooks"], shape: HookShape::Grouped, hooks }],
                },
            ]
        }
        Harness::Gemini => {
            // Milliseconds here; Gemini CLI names a hook in its `/hooks` list and drops a second
            // copy with the same name and command.
            let h = V::map(vec![
                ("name", V::str("self-evolve")),
                ("type", V::str("command")),
                ("command", V::str(launch.hook_command(harness))),
                ("timeout", V::Int(30_000)),
            ]);
            let hooks = vec![
                hook("BeforeAgent", None, &h),
                hook("AfterTool", None, &h),
                hook("AfterAgent", None, &h),
                hook("SessionEnd", None, &h),
            ];
            let settings = match project {
                Some(project) => project.join(".gemini/settings.json"),
                None => places.gemini_cli_home.as_ref().unwrap_or(home).join(".gemini/settings.json"),
            };
            vec![FilePlan {
                path: settings,
                format: Format::Jsonc,
                changes: vec![
                    Change::Entry { path: vec!["mcpServers"], name: "self-evolve", entry: launch.server(false) },
                    Change::Hooks { path: vec!["hooks"], shape: HookShape::Grouped, hooks },
                ],
            }]
        }
        Harness::Cursor => {
            let h = V::map(vec![("command", V::str(launch.hook_command(harness))), ("timeout", V::Int(30))]);
            let hooks =
                ["beforeSubmitPrompt", "postToolUse", "postToolUseFailure", "afterAgentResponse", "stop", "sessionEnd"]
                    .iter()
                    .map(|e| hook(e, None, &h))
                    .collect();
            let dir = match project {
                Some(project) => project.join(".cursor"),
                None => home.join(".cursor"),
            };
            vec![
                // Cursor's own example carries a `//` comment (its hooks.json may not hold one).
                FilePlan {
                    path: dir.join("mcp.json"),
                    format: Format::Jsonc,
                    changes: vec![Change::Entry {
                        path: vec!["mcpServers"],
                        name: "self-evolve",
                        entry: launch.server(true),
                    }],
                },
                FilePlan {
                    path: dir.join("hooks.json"),
                    format: Format::Json,
                    changes: vec![
                        Change::Default { key: "version", value: V::Int(1) },
                        Change::Hooks { path: vec!["hooks"], shape: HookShape::Flat, hooks },
                    ],
                },
            ]
        }
        Harness::Hermes => {
            // Shell hooks: run without a shell (split like one), seconds; `on_session_end` fires at
            // the end of every turn despite its name, `on_session_finalize` when a session closes.
            let h = V::map(vec![("command", V::str(launch.hook_command(harness))), ("timeout", V::Int(30))]);
            let hooks = ["pre_llm_call", "post_tool_call", "post_llm_call", "on_session_end", "on_session_finalize"]
                .iter()
                .map(|e| hook(e, None, &h))
                .collect();
            let dir = places.hermes_home.clone().unwrap_or_else(|| home.join(".hermes"));
            vec![FilePlan {
                path: dir.join("config.yaml"),
                format: Format::Yaml,
                changes: vec![
                    Change::Entry { path: vec!["mcp_servers"], name: "self-evolve", entry: launch.server(false) },
                    Change::Hooks { path: vec!["hooks"], shape: HookShape::Flat, hooks },
                ],
            }]
        }
    }
}

/// The reviewer `host.json` gets for this harness (`none` when it has no CLI that can run one).
pub fn reviewer(harness: Harness, launch: &Launch, reviewer_mcp: &Path) -> Option<V> {
    let mut mcp_args = launch.args(&["mcp", "--as-reviewer"]);
    match harness {
        Harness::Claude => Some(V::map(vec![
            ("provider", V::str("command")),
            (
                "argv",
                V::strs(&[
                    "claude",
                    "-p",
                    "--resume",
                    "{session}",
                    "--fork-session",
                    "--mcp-config",
                    &reviewer_mcp.display().to_string(),
                    "--strict-mcp-config",
                    "--allowedTools",
                    "mcp__self-evolve__skill_manage",
                ]),
            ),
            ("seed", V::str("none")),
            ("timeoutMs", V::Int(300_000)),
        ])),
        Harness::Codex => {
            // `codex exec` reads the prompt from stdin with `-`; `-c` points its MCP server at
            // the reviewer's identity for this run only.
            let quoted: Vec<String> = mcp_args.drain(..).map(|a| serde_json::Value::String(a).to_string()).collect();
            Some(V::map(vec![
                ("provider", V::str("command")),
                (
                    "argv",
                    V::strs(&[
                        "codex",
                        "exec",
                        "--skip-git-repo-check",
                        "-c",
                        &format!(
                            "mcp_servers.self-evolve.command={}",
                            serde_json::Value::String(launch.binary.display().to_string())
                        ),
                        "-c",
                        &format!("mcp_servers.self-evolve.args=[{}]", quoted.join(",")),
                        "-",
                    ]),
                ),
                ("timeoutMs", V::Int(300_000)),
            ]))
        }
        // No CLI of theirs runs a forked review here: reviews that come due are logged as refused
        // until the operator names one (an `openai` endpoint, or a `command`).
        Harness::Gemini | Harness::Cursor | Harness::Hermes => Some(V::map(vec![("provider", V::str("none"))])),
    }
}

/// The MCP config a Claude reviewer loads (`--mcp-config`): the server as that reviewer.
pub fn reviewer_mcp(launch: &Launch) -> V {
    V::map(vec![(
        "mcpServers",
        V::map(vec![(
            "self-evolve",
            V::map(vec![
                ("command", V::str(launch.binary.display().to_string())),
                ("args", V::strs(&launch.args(&["mcp", "--as-reviewer"]))),
            ]),
        )]),
    )])
}
