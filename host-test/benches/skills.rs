//! Skill-library benchmarks (own harness; `cargo bench -p self-evolve-host --bench skills`):
//! with 10,000 skills across both scopes, `create` and `list` through the component, the
//! credential scan's throughput inside the component, and the same code run natively: on the
//! host's real fs capability (the fair comparison) and on the in-memory fake host.

mod common;

use self_evolve_host::{FsConfig, HostConfig, Plugin, ProjectRoots, user_context};
use self_evolve_plugin::fake::FakeHost;
use self_evolve_plugin::host::{Root, WriteMode};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const WORDS: &[&str] = &[
    "deploy",
    "docker",
    "compose",
    "staging",
    "python",
    "rust",
    "format",
    "lint",
    "test",
    "release",
    "notes",
    "pdf",
    "tables",
    "extract",
    "slack",
    "message",
    "gif",
    "database",
    "migration",
    "backup",
    "restore",
    "kubernetes",
    "helm",
    "chart",
    "terraform",
    "plan",
    "apply",
    "review",
    "commit",
    "branch",
    "merge",
    "rebase",
    "profile",
    "benchmark",
    "cache",
    "index",
    "search",
    "query",
    "report",
    "invoice",
    "email",
    "calendar",
    "schedule",
    "image",
    "resize",
    "video",
    "audio",
    "transcribe",
    "translate",
    "summarize",
    "csv",
    "json",
    "yaml",
    "xml",
    "api",
    "client",
    "server",
];

/// A deterministic, varied description for skill `i`.
fn description(i: usize) -> String {
    let w = |k: usize| WORDS[(i * 7 + k * 13 + i / 7) % WORDS.len()];
    format!("{} {} {} for {} {} number {i}. Use when {} {} work comes up.", w(0), w(1), w(2), w(3), w(4), w(5), w(6))
}

/// A word of letters unique to `i` (dedupe ignores digits).
fn tag(mut i: usize) -> String {
    let mut out = String::new();
    loop {
        out.push((b'a' + (i % 26) as u8) as char);
        i /= 26;
        if i == 0 {
            return format!("q{out}x");
        }
    }
}

fn skill_text(name: &str, i: usize) -> String {
    format!(
        "---\nname: {name}\ndescription: {}\nmetadata:\n  authored-by: self-evolve\n  version: \"1\"\n---\n# {name}\n\nSteps for {name}.\n",
        description(i)
    )
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn report(name: &str, samples: Vec<Duration>) -> Duration {
    let n = samples.len();
    let m = median(samples);
    println!("{name:<52} median {m:>12?}  (n={n})");
    m
}

fn main() -> anyhow::Result<()> {
    let wasm = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm"))
        .map_err(|e| anyhow::anyhow!("{e} (run ./build.sh first)"))?;
    let home = tempfile::tempdir()?;
    let (user, project) = (home.path().join("user"), home.path().join("project"));
    for i in 0..10_000 {
        let (root, name) =
            if i % 2 == 0 { (&user, format!("user-skill-{i}")) } else { (&project, format!("project-skill-{i}")) };
        std::fs::create_dir_all(root.join(&name))?;
        std::fs::write(root.join(&name).join("SKILL.md"), skill_text(&name, i))?;
    }
    let config = HostConfig {
        fs: FsConfig {
            user_skills: Some(user.clone()),
            state: Some(home.path().join("state")),
            projects: ProjectRoots {
                sessions: BTreeMap::from([("s1".to_string(), project.clone())]),
                discover: false,
                ..Default::default()
            },
            ..FsConfig::default()
        },
        limits: self_evolve_host::Limits { call_deadline: Duration::from_secs(30), ..Default::default() },
        ..Default::default()
    };
    let mut plugin = Plugin::from_bytes(&wasm, config)?;
    plugin.init("{}", &["tools".into()])?.map_err(|e| anyhow::anyhow!(e.message))?;
    let ctx = user_context("s1");
    let call = |plugin: &mut Plugin, args: serde_json::Value| {
        plugin.tools_call(&ctx, "skill_manage", &args.to_string()).unwrap()
    };

    println!("10,000 skills (5,000 user + 5,000 project), through the component:");
    let start = Instant::now();
    let first = call(&mut plugin, json!({"action": "list"})).map_err(|e| anyhow::anyhow!(e))?;
    let count = serde_json::from_str::<serde_json::Value>(&first)?["skills"].as_array().map_or(0, Vec::len);
    println!("{:<52} {:>19?}  ({count} skills)", "list, first (parses every SKILL.md)", start.elapsed());
    // Folders changed within the last second are rescanned by every listing (their mtimes are
    // not trusted yet, see listing::RACY_MS); the library was just written, so wait that out.
    std::thread::sleep(Duration::from_millis(1100));
    let list_component = report(
        "list, warm",
        (0..20)
            .map(|_| {
                let t = Instant::now();
                call(&mut plugin, json!({"action": "list"})).unwrap();
                t.elapsed()
            })
            .collect(),
    );
    let create_component = report("create (dedupe + lint + direct write)", (0..50).map(|i| {
        let args = json!({"action": "create", "name": format!("bench-new-{}", tag(i)), "description": format!("{} {} {} {}. Use when testing.", tag(4 * i), tag(4 * i + 1), tag(4 * i + 2), tag(4 * i + 3)), "body": "Steps.\n"});
        let t = Instant::now();
        let out = call(&mut plugin, args);
        let elapsed = t.elapsed();
        assert!(out.is_ok(), "{out:?}");
        elapsed
    }).collect());
    std::fs::write(home.path().join("state/approval.json"), r#"{"enabled":true}"#)?;
    report("create (dedupe + lint + staged write)", (0..50).map(|i| {
        let args = json!({"action": "create", "name": format!("bench-staged-{}", tag(i)), "description": format!("{} {} {} {}. Use when staging.", tag(9000 + 4 * i), tag(9001 + 4 * i), tag(9002 + 4 * i), tag(9003 + 4 * i)), "body": "Steps.\n"});
        let t = Instant::now();
        let out = call(&mut plugin, args);
        let elapsed = t.elapsed();
        assert!(out.is_ok(), "{out:?}");
        elapsed
    }).collect());

    // The credential scan over prose with no secrets, inside the component (checker export).
    let prose = "Deploy the service with docker compose, then check the health endpoint. The token budget \
                 for a review is set in the config; keys are read from the environment, never written here.\n";
    let text = prose.repeat((8 << 20) / prose.len());
    let input = self_evolve_host::plugin::SkillInput {
        folder: "bench".into(),
        skill_md: self_evolve_host::plugin::FileInput {
            path: "bench/SKILL.md".into(),
            bytes: skill_text("bench", 1).into_bytes(),
        },
        resources: vec![self_evolve_host::plugin::FileInput {
            path: "bench/references/big.md".into(),
            bytes: text.clone().into_bytes(),
        }],
    };
    let scan_component = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let findings = plugin.check(std::slice::from_ref(&input)).unwrap();
                assert!(findings.iter().all(|f| f.rule != "generic-secret"), "{findings:?}");
                t.elapsed()
            })
            .collect(),
    );
    let mb = text.len() as f64 / 1e6;
    println!(
        "{:<52} {:>9.1} MB/s  ({mb:.1} MB, secrets + destructive idioms)",
        "scan throughput",
        mb / scan_component.as_secs_f64()
    );

    // The same policy code natively, on the in-memory fake host.
    let fake = FakeHost::new(1_767_225_600_000);
    fake.map_root(Root::ProjectSkills("s1".into()));
    for i in 0..10_000 {
        let (root, name) = if i % 2 == 0 {
            (Root::UserSkills, format!("user-skill-{i}"))
        } else {
            (Root::ProjectSkills("s1".into()), format!("project-skill-{i}"))
        };
        self_evolve_plugin::host::Host::write(
            &fake,
            &root,
            &format!("{name}/SKILL.md"),
            skill_text(&name, i).as_bytes(),
            WriteMode::CreateNew,
        )
        .unwrap();
    }
    // Past the racy window (listing::RACY_MS), as the real-fs runs wait it out.
    fake.advance(1_100);
    let mut native = self_evolve_plugin::Plugin::new(fake);
    native.init("{}", &["tools".into()]).map_err(|e| anyhow::anyhow!(e.message))?;
    let nctx = self_evolve_plugin::api::CallContext {
        session: "s1".into(),
        agent: "main".into(),
        origin: self_evolve_plugin::api::Origin::User,
        depth: 0,
        cwd: String::new(),
    };
    native.call_tool(&nctx, "skill_manage", r#"{"action":"list"}"#).unwrap();
    println!("\nthe same code natively (fake in-memory host):");
    let list_native = report(
        "list, warm",
        (0..20)
            .map(|_| {
                let t = Instant::now();
                native.call_tool(&nctx, "skill_manage", r#"{"action":"list"}"#).unwrap();
                t.elapsed()
            })
            .collect(),
    );
    let create_native = report("create (direct write)", (0..50).map(|i| {
        let args = json!({"action": "create", "name": format!("bench-new-{}", tag(i)), "description": format!("{} {} {} {}. Use when testing.", tag(4 * i), tag(4 * i + 1), tag(4 * i + 2), tag(4 * i + 3)), "body": "Steps.\n"});
        let t = Instant::now();
        native.call_tool(&nctx, "skill_manage", &args.to_string()).unwrap();
        t.elapsed()
    }).collect());
    let native_input = self_evolve_plugin::library::guards::check::SkillInput {
        folder: "bench".into(),
        skill_md: self_evolve_plugin::library::guards::check::FileInput {
            path: "bench/SKILL.md".into(),
            bytes: skill_text("bench", 1).into_bytes(),
        },
        resources: vec![self_evolve_plugin::library::guards::check::FileInput {
            path: "bench/references/big.md".into(),
            bytes: text.into_bytes(),
        }],
    };
    let scan_native = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                self_evolve_plugin::library::guards::check::check(std::slice::from_ref(&native_input), 0.7);
                t.elapsed()
            })
            .collect(),
    );
    println!("{:<52} {:>9.1} MB/s", "scan throughput", mb / scan_native.as_secs_f64());
    // The same policy code natively on the same folders through the same fs capability: what
    // the component adds over native code, with the filesystem's cost on both sides.
    let real = common::NativeFsHost::new(FsConfig {
        user_skills: Some(user.clone()),
        state: Some(home.path().join("state-native")),
        projects: ProjectRoots {
            sessions: BTreeMap::from([("s1".to_string(), project.clone())]),
            discover: false,
            ..Default::default()
        },
        ..FsConfig::default()
    });
    let mut native_real = self_evolve_plugin::Plugin::new(real);
    native_real.init("{}", &["tools".into()]).map_err(|e| anyhow::anyhow!(e.message))?;
    native_real.call_tool(&nctx, "skill_manage", r#"{"action":"list"}"#).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    println!("\nthe same code natively on the real fs (the host's fs capability, no component):");
    let list_real = report(
        "list, warm",
        (0..20)
            .map(|_| {
                let t = Instant::now();
                native_real.call_tool(&nctx, "skill_manage", r#"{"action":"list"}"#).unwrap();
                t.elapsed()
            })
            .collect(),
    );
    let create_real = report("create (dedupe + lint + direct write)", (0..50).map(|i| {
        let args = json!({"action": "create", "name": format!("bench-real-{}", tag(i)), "description": format!("{} {} {} {}. Use when comparing.", tag(5000 + 4 * i), tag(5001 + 4 * i), tag(5002 + 4 * i), tag(5003 + 4 * i)), "body": "Steps.\n"});
        let t = Instant::now();
        let out = native_real.call_tool(&nctx, "skill_manage", &args.to_string());
        let elapsed = t.elapsed();
        assert!(out.is_ok(), "{out:?}");
        elapsed
    }).collect());

    // What the component's warm page pays the real filesystem: the fs capability's stats of the
    // page (100 SKILL.md files) and of both roots, natively, without the component.
    let mut fs = self_evolve_host::caps::fs::FsCap::new(
        FsConfig { user_skills: Some(user.clone()), ..FsConfig::default() },
        Default::default(),
    );
    let page: Vec<String> = (0..100).map(|i| format!("user-skill-{}/SKILL.md", 2 * i)).collect();
    let stats = median(
        (0..20)
            .map(|_| {
                let t = Instant::now();
                let results = fs.stat_many(&self_evolve_host::caps::fs::RootRef::UserSkills, &page);
                fs.stat(&self_evolve_host::caps::fs::RootRef::UserSkills, "").ok();
                fs.stat(&self_evolve_host::caps::fs::RootRef::UserSkills, "").ok();
                assert!(results.iter().all(|r| r.is_ok()));
                t.elapsed()
            })
            .collect(),
    );
    println!("{:<52} median {stats:>12?}", "host fs alone: stat of a 100-skill page and the roots");
    println!(
        "warm list without the filesystem's share: component {:?} vs native {:?} ({:.2}x)",
        list_component.saturating_sub(stats),
        list_native,
        list_component.saturating_sub(stats).as_secs_f64() / list_native.as_secs_f64()
    );
    println!(
        "\ncomponent / native, both on the real fs: list {:.2}x, create {:.2}x",
        list_component.as_secs_f64() / list_real.as_secs_f64(),
        create_component.as_secs_f64() / create_real.as_secs_f64(),
    );
    println!(
        "component / native: list {:.2}x, create {:.2}x (real fs vs memory), scan {:.2}x",
        list_component.as_secs_f64() / list_native.as_secs_f64(),
        create_component.as_secs_f64() / create_native.as_secs_f64(),
        scan_component.as_secs_f64() / scan_native.as_secs_f64()
    );
    Ok(())
}
