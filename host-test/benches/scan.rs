//! The credential scan against adversarial shapes (Hardening II): 1 MB each of the inputs that
//! made earlier scanners quadratic, next to ordinary text. Each must stay within 3x of the
//! ordinary throughput, natively and through the component (where the 2 s call deadline applies).
//! Run with `cargo bench -p self-evolve-host --bench scan`.

use self_evolve_host::plugin::{FileInput, SkillInput};
use self_evolve_host::{HostConfig, Plugin};
use std::time::{Duration, Instant};

fn shapes() -> Vec<(&'static str, String)> {
    let mb = 1_000_000;
    let fill = |unit: &str| unit.repeat(mb / unit.len());
    vec![
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
    ]
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let wasm = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    let mut plugin = Plugin::load(&wasm, HostConfig::default())?;
    println!("{:<34} {:>12} {:>8} {:>14} {:>8}", "1 MB of", "native MB/s", "ratio", "component MB/s", "ratio");
    let mut base = (0.0, 0.0);
    for (i, (name, text)) in shapes().into_iter().enumerate() {
        let mb = text.len() as f64 / 1e6;
        let native = median(
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(self_evolve::library::lint::scan_secrets(&text));
                    t.elapsed()
                })
                .collect(),
        );
        let input = SkillInput {
            folder: "bench".into(),
            skill_md: FileInput { path: "bench/SKILL.md".into(), bytes: Vec::new() },
            resources: vec![FileInput { path: "bench/references/big.md".into(), bytes: text.into_bytes() }],
        };
        let component = median(
            (0..3)
                .map(|_| {
                    let t = Instant::now();
                    plugin.check(std::slice::from_ref(&input)).map(drop).unwrap_or_else(|e| eprintln!("{name}: {e}"));
                    t.elapsed()
                })
                .collect(),
        );
        let (n, c) = (mb / native.as_secs_f64(), mb / component.as_secs_f64());
        if i == 0 {
            base = (n, c);
        }
        println!("{name:<34} {n:>12.1} {:>7.2}x {c:>14.1} {:>7.2}x", base.0 / n, base.1 / c);
    }
    println!("\nratio: how many times slower than ordinary text (the target is at most 3x)");
    Ok(())
}
