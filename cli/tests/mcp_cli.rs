//! `self-evolve mcp` and the component it runs, from outside: the binary runs from any folder
//! (the component embedded at build time), refuses a bad operator config before serving, and
//! the catalog's arguments are bounded by the host. The protocol itself is tested with the
//! official MCP SDK client in hosts/node/test/mcp-server.test.js.

use self_evolve_host::caps::fs::FsConfig;
use self_evolve_host::{HostConfig, Plugin, user_context};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

fn cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR")).env_remove("SELF_EVOLVE_WASM");
    cmd
}

#[test]
fn the_binary_runs_from_any_folder_with_the_component_it_embeds() {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = cli().arg("inspect").current_dir(elsewhere.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if self_evolve::component::EMBEDDED.is_empty() {
        // Built before the component: its own checkout's, by absolute path, never one in the
        // folder it runs in (a cloned repository could supply its own policy).
        std::fs::create_dir_all(elsewhere.path().join("dist")).unwrap();
        std::fs::write(elsewhere.path().join("dist/self-evolve.wasm"), b"planted").unwrap();
        let out = cli().arg("inspect").current_dir(elsewhere.path()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains(&wasm().display().to_string()), "{stdout}");
    } else {
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains("component  embedded in this binary"), "{stdout}");
        assert_eq!(
            self_evolve::component::EMBEDDED,
            std::fs::read(wasm()).unwrap().as_slice(),
            "the embedded component is the one ./build.sh made"
        );
    }
    let explicit = cli().arg("--wasm").arg(wasm()).arg("inspect").current_dir(elsewhere.path()).output().unwrap();
    assert!(String::from_utf8_lossy(&explicit.stdout).contains(&format!("component  {}", wasm().display())));
}

#[test]
fn a_bad_operator_config_stops_the_server_before_it_serves() {
    let home = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("{not json", "is not JSON"),
        ("[1, 2]", "must hold a JSON object"),
        (r#"{"duplicateThreshold": "high"}"#, "duplicateThreshold"),
    ] {
        std::fs::write(home.path().join("config.json"), text).unwrap();
        let out = cli()
            .arg("--wasm")
            .arg(wasm())
            .args(["mcp", "--home"])
            .arg(home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}: {stderr}");
        assert!(stderr.contains(says), "{text}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing on the protocol channel: {:?}", String::from_utf8_lossy(&out.stdout));
    }
    assert!(!home.path().join("skills").exists(), "nothing was created");
}

#[test]
fn catalog_names_and_paths_past_their_bounds_never_enter_the_instance() {
    let home = tempfile::tempdir().unwrap();
    let config = HostConfig {
        fs: FsConfig {
            user_skills: Some(home.path().join("skills")),
            state: Some(home.path().join("state")),
            ..FsConfig::default()
        },
        ..HostConfig::default()
    };
    let mut plugin = Plugin::load(wasm(), config).unwrap();
    plugin.init("{}", &["tools".into()]).unwrap().unwrap();
    let ctx = user_context("s1");
    let name = "x".repeat(40 << 20);
    let refused = plugin.catalog_get(&ctx, &name).unwrap().unwrap_err();
    assert!(refused.contains(r#""field":"name""#), "{refused}");
    let path = "a/".repeat(20 << 20);
    let refused = plugin.catalog_read(&ctx, "some-skill", &path).unwrap().unwrap_err();
    assert!(refused.contains(r#""field":"path""#), "{refused}");
    assert_eq!(plugin.replacements(), 0, "no trap");
    let page = plugin.catalog_skills(&ctx, 0, 10).unwrap().unwrap();
    assert!(page.skills.is_empty());
}
