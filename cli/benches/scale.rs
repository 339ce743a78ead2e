//! Scale benchmarks (own harness; `cargo bench -p self-evolve --bench scale`): generated
//! libraries of 1,000, 10,000 and 100,000 skills across both scopes, through the component.
//! For each size: `list` (the tool's default page of 100, by name, with the total) the first
//! time in a fresh process (no persisted index, then with one), `list` warm, `create` (median), and the `self-evolve check` CLI over the library (wall
//! time and peak RSS). Then how each grows: the exponent k in t ∝ n^k between sizes.
//!
//! `SCALE_SIZES=1000,10000` picks the sizes; `SCALE_GB=1` also checks a 1 GB library
//! (32,768 skills × 32 KB) for its peak memory.

use self_evolve_host::{FsConfig, HostConfig, Limits, Plugin, ProjectRoots, user_context};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WASM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm");

/// A small deterministic generator (xorshift), so every run builds the same library.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Zipf-like: low ranks far more often, as words are in real descriptions.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sta", "tor", "vel", "den", "pra", "gon", "shi", "tru", "bel", "cor", "fin", "gra",
    "hel", "jun", "kre", "lum", "mar", "nor", "pol", "qui", "ral", "sel", "tan", "ver", "wol",
];

/// A vocabulary of 4,000 made-up topic words (letters only: dedupe ignores digits).
fn vocabulary() -> Vec<String> {
    let mut words = Vec::new();
    for a in SYLLABLES {
        for b in SYLLABLES {
            for c in ["", "x", "nd", "p", "mb"] {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words.truncate(4_000);
    words
}

/// Letters unique to `i`.
fn tag(mut i: usize) -> String {
    let mut out = String::from("q");
    loop {
        out.push((b'a' + (i % 26) as u8) as char);
        i /= 26;
        if i == 0 {
            return out;
        }
    }
}

struct Library {
    user: PathBuf,
    project: PathBuf,
    state: PathBuf,
}

/// `n` skills, half per scope; every 500th has a reworded twin (the check must find it).
fn generate(dir: &Path, n: usize, body_bytes: usize) -> anyhow::Result<Library> {
    let library = Library { user: dir.join("user"), project: dir.join("project"), state: dir.join("state") };
    let words = vocabulary();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let filler = "Run the steps in order and check each result before the next one.\n";
    let body = filler.repeat(body_bytes / filler.len() + 1);
    for i in 0..n {
        let root = if i % 2 == 0 { &library.user } else { &library.project };
        let picked: Vec<&str> = (0..10).map(|_| words[rng.zipf(words.len())].as_str()).collect();
        let name = format!("{}-{}-{}", picked[0], picked[1], tag(i));
        let description = format!(
            "{} the {} {} with {} and {} before {} {}. Use when {} or {} comes up.",
            picked[0], picked[1], picked[2], picked[3], picked[4], picked[5], picked[6], picked[7], picked[8]
        );
        write_skill(root, &name, &description, &body[..body_bytes.min(body.len())])?;
        if i % 500 == 250 {
            let twin = format!("{}-{}-{}", picked[1], picked[0], tag(i + n));
            let reworded = format!(
                "{}ing the {} {} using {} and {} ahead of {} {}",
                picked[0], picked[2], picked[1], picked[4], picked[3], picked[6], picked[5]
            );
            write_skill(root, &twin, &reworded, "Steps.\n")?;
        }
    }
    Ok(library)
}

fn write_skill(root: &Path, name: &str, description: &str, body: &str) -> anyhow::Result<()> {
    let folder = root.join(name);
    std::fs::create_dir_all(&folder)?;
    let text = format!(
        "---\nname: {name}\ndescription: {description}\nmetadata:\n  authored-by: self-evolve\n  version: \"1\"\n---\n# {name}\n\n{body}"
    );
    std::fs::write(folder.join("SKILL.md"), text)?;
    Ok(())
}

fn config(library: &Library, memory: usize) -> HostConfig {
    HostConfig {
        fs: FsConfig {
            user_skills: Some(library.user.clone()),
            state: Some(library.state.clone()),
            projects: ProjectRoots {
                sessions: BTreeMap::from([("s1".to_string(), library.project.clone())]),
                discover: false,
                ..Default::default()
            },
            ..FsConfig::default()
        },
        limits: Limits { call_deadline: Duration::from_secs(60), memory_bytes: memory },
        ..Default::default()
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Figures for one size.
#[derive(Default, Clone, Copy)]
struct Figures {
    list_cold: Duration,
    list_fresh: Duration,
    list_warm: Duration,
    create: Duration,
    check: Duration,
    check_rss_kb: u64,
}

/// The session's context: its working directory is the project (it keys the project's
/// persisted listing, as a harness's would).
fn context(library: &Library) -> self_evolve_host::plugin::CallContext {
    let mut ctx = user_context("s1");
    ctx.cwd = library.project.display().to_string();
    ctx
}

fn list(plugin: &mut Plugin, library: &Library) -> anyhow::Result<(Duration, usize)> {
    let t = Instant::now();
    let out = plugin
        .tools_call(&context(library), "skill_manage", r#"{"action":"list"}"#)?
        .map_err(|e| anyhow::anyhow!("list refused: {e}"))?;
    let elapsed = t.elapsed();
    let count = serde_json::from_str::<serde_json::Value>(&out)?["total"].as_u64().unwrap_or(0) as usize;
    Ok((elapsed, count))
}

/// Runs `self-evolve check` on the library's roots; wall time and the child's peak RSS.
fn check(library: &Library) -> anyhow::Result<(Duration, u64, String)> {
    let t = Instant::now();
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kb=%M", env!("CARGO_BIN_EXE_self-evolve"), "--wasm", WASM, "check"])
        .arg(&library.user)
        .arg(&library.project)
        .output()?;
    let elapsed = t.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let rss = stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb="))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no peak RSS from /usr/bin/time: {stderr}"))?;
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    let duplicates = stdout.lines().filter(|l| l.contains("[near-duplicate]")).count();
    Ok((elapsed, rss, format!("{summary}; {duplicates} near-duplicate(s)")))
}

fn measure(wasm: &[u8], n: usize) -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir()?;
    let t = Instant::now();
    let library = generate(dir.path(), n, 200)?;
    if std::env::var("SCALE_KEEP").is_ok_and(|v| v == "1") {
        println!("  (kept: {})", dir.keep().display());
        return Ok(Figures::default());
    }
    println!("\n{n} skills (+{} twins), generated in {:.1?}", n / 500, t.elapsed());
    let memory = 256 << 20;
    let mut figures = Figures::default();

    // A fresh process with no persisted index: every SKILL.md is read and parsed.
    let mut plugin = Plugin::from_bytes(wasm, config(&library, memory))?;
    plugin.init("{}", &["tools".into()])?.map_err(|e| anyhow::anyhow!(e.message))?;
    let (cold, count) = list(&mut plugin, &library)?;
    figures.list_cold = cold;
    println!("  {:<46} {:>10.1?}  ({count} skills)", "list, first ever (parses every SKILL.md)", cold);
    // Folders changed within the last second are rescanned by every listing (listing::RACY_MS).
    std::thread::sleep(Duration::from_millis(1100));
    figures.list_warm =
        median((0..10).map(|_| list(&mut plugin, &library).map(|(d, _)| d)).collect::<anyhow::Result<_>>()?);
    println!("  {:<46} {:>10.1?}", "list, warm (median of 10)", figures.list_warm);
    drop(plugin);

    // Another fresh process: the persisted index spares the parsing.
    let mut plugin = Plugin::from_bytes(wasm, config(&library, memory))?;
    plugin.init("{}", &["tools".into()])?.map_err(|e| anyhow::anyhow!(e.message))?;
    let (fresh, _) = list(&mut plugin, &library)?;
    figures.list_fresh = fresh;
    println!("  {:<46} {:>10.1?}", "list, first in a fresh process", fresh);

    let ctx = context(&library);
    let samples = (0..50)
        .map(|i| {
            let args = json!({"action": "create", "name": format!("bench-new-{}", tag(i)),
                "description": format!("{} {} {} {}. Use when benchmarking.", tag(4 * i + 7), tag(4 * i + 8), tag(4 * i + 9), tag(4 * i + 10)),
                "body": "Steps.\n"});
            let t = Instant::now();
            let out = plugin.tools_call(&ctx, "skill_manage", &args.to_string())?;
            let elapsed = t.elapsed();
            out.map_err(|e| anyhow::anyhow!("create refused: {e}"))?;
            Ok(elapsed)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    figures.create = median(samples);
    println!("  {:<46} {:>10.1?}", "create (median of 50)", figures.create);
    drop(plugin);

    let (wall, rss, summary) = check(&library)?;
    figures.check = wall;
    figures.check_rss_kb = rss;
    println!("  {:<46} {:>10.1?}  peak RSS {} MiB; {summary}", "self-evolve check (CLI, wall)", wall, rss / 1024);
    Ok(figures)
}

fn exponent(a: Duration, b: Duration, ratio: f64) -> f64 {
    (b.as_secs_f64() / a.as_secs_f64()).ln() / ratio.ln()
}

fn main() -> anyhow::Result<()> {
    let wasm = std::fs::read(WASM).map_err(|e| anyhow::anyhow!("{e} (run ./build.sh first)"))?;
    let sizes: Vec<usize> = std::env::var("SCALE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let mut all = Vec::new();
    for &n in &sizes {
        all.push((n, measure(&wasm, n)?));
    }
    println!("\ngrowth (t ∝ n^k):");
    for pair in all.windows(2) {
        let ((n0, a), (n1, b)) = (pair[0], pair[1]);
        let r = n1 as f64 / n0 as f64;
        println!(
            "  {n0} → {n1}: list first k={:.2}, list fresh k={:.2}, list warm k={:.2}, create k={:.2}, check k={:.2}",
            exponent(a.list_cold, b.list_cold, r),
            exponent(a.list_fresh, b.list_fresh, r),
            exponent(a.list_warm, b.list_warm, r),
            exponent(a.create, b.create, r),
            exponent(a.check, b.check, r),
        );
    }
    if std::env::var("SCALE_GB").is_ok_and(|v| v == "1") {
        let dir = tempfile::tempdir()?;
        let t = Instant::now();
        let library = generate(dir.path(), 32_768, 32 << 10)?;
        println!("\n1 GB library (32,768 skills x 32 KB), generated in {:.1?}", t.elapsed());
        let (wall, rss, summary) = check(&library)?;
        println!("  {:<46} {:>10.1?}  peak RSS {} MiB; {summary}", "self-evolve check (CLI, wall)", wall, rss / 1024);
    }
    Ok(())
}
