//! The packed artefact is the product: `cargo package` of `self-evolve` (with the two crates it
//! needs, as a registry would hold them) carries the component, and `cargo install` of the
//! unpacked `.crate` — in an empty folder, no checkout beside it — gives a binary whose `inspect`
//! says "embedded", the same bytes ./build.sh made. The install builds in this workspace's build
//! dir (CARGO_BUILD_BUILD_DIR), so it compiles the three crates, not wasmtime again.

use self_evolve_plugin::digest::sha256_hex as sha256;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (key, _) in std::env::vars() {
        // What the outer `cargo test` set for this test binary is not the inner cargo's.
        if (key.starts_with("CARGO_") && key != "CARGO_HOME") || key.starts_with("SELF_EVOLVE_") || key == "RUSTFLAGS" {
            cmd.env_remove(key);
        }
    }
    cmd
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the command runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// The workspace's target dir, where the outer build put everything the install reuses.
fn target_dir() -> PathBuf {
    // tests run from target/<profile>/deps/<binary>
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).expect("target/<profile>/deps").to_path_buf()
}

/// The workspace's `[profile.dev.package.NAME] opt-level = N` overrides as `--config` flags: an
/// install outside the workspace would not see them, and would build those crates again.
fn workspace_profile() -> Vec<String> {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let mut flags = Vec::new();
    let mut package = None;
    for line in manifest.lines() {
        if let Some(name) = line.strip_prefix("[profile.dev.package.").and_then(|l| l.strip_suffix(']')) {
            package = Some(name.to_string());
        } else if line.starts_with('[') {
            package = None;
        } else if let (Some(name), Some(level)) = (&package, line.strip_prefix("opt-level = ")) {
            flags.push("--config".to_string());
            flags.push(format!("profile.dev.package.{name}.opt-level={level}"));
        }
    }
    assert!(!flags.is_empty(), "the workspace's dev profile overrides were not found");
    flags
}

#[test]
fn the_packaged_crate_installs_a_binary_with_the_component_embedded() {
    let dist = std::fs::read(repo().join("dist/self-evolve.wasm")).expect("dist/self-evolve.wasm: run ./build.sh");
    let carried = std::fs::read(repo().join("cli/self-evolve.wasm")).unwrap_or_default();
    assert_eq!(sha256(&carried), sha256(&dist), "cli/self-evolve.wasm is not dist's: run ./build.sh (it copies it)");

    let place = tempfile::tempdir().unwrap();
    let packed = place.path().join("packed");
    run(cargo()
        .current_dir(repo())
        .args([
            "package",
            "-p",
            "self-evolve",
            "-p",
            "self-evolve-host",
            "-p",
            "self-evolve-scan",
            "--no-verify",
            "--allow-dirty",
            "--offline",
            "--target-dir",
        ])
        .arg(&packed));

    // Unpacked where no checkout is: an empty folder of its own.
    let unpacked = place.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    for name in ["self-evolve", "self-evolve-host", "self-evolve-scan"] {
        let krate = packed.join(format!("package/{name}-0.1.0.crate"));
        run(Command::new("tar").arg("xzf").arg(&krate).arg("-C").arg(&unpacked));
    }
    let in_package =
        std::fs::read(unpacked.join("self-evolve-0.1.0/self-evolve.wasm")).expect("the .crate carries the component");
    assert_eq!(sha256(&in_package), sha256(&dist));
    assert!(!unpacked.join("dist").exists() && !unpacked.join("self-evolve-0.1.0/../dist").exists());

    // As from a registry that holds the three crates: the other two by path, everything else
    // from the lock file the package carries.
    let root = place.path().join("root");
    let patch =
        |name: &str| format!("patch.crates-io.{name}.path=\"{}\"", unpacked.join(format!("{name}-0.1.0")).display());
    run(cargo()
        .current_dir(&unpacked)
        // Intermediate artefacts in the workspace's build dir (wasmtime and the rest are reused),
        // the installed binary's own build in a folder of its own: target/debug/self-evolve,
        // which other tests run, is never replaced by this one.
        .env("CARGO_BUILD_BUILD_DIR", target_dir())
        .env("CARGO_TARGET_DIR", place.path().join("install-target"))
        .args(["install", "--debug", "--offline", "--locked", "--path", "self-evolve-0.1.0", "--root"])
        .arg(&root)
        .args(["--config", &patch("self-evolve-host"), "--config", &patch("self-evolve-scan")])
        .args(workspace_profile()));

    let empty = place.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(root.join("bin/self-evolve"))
        .current_dir(&empty)
        .env_remove("SELF_EVOLVE_WASM")
        .env_remove("SELF_EVOLVE_HOME")
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .args(["inspect", "--home"])
        .arg(empty.join("home"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("component  embedded in this binary ({} bytes)", dist.len())), "{stdout}");
    assert!(stdout.contains("self-evolve:plugin/fs@"), "{stdout}");
}
