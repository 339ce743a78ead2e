//! `self-evolve check` end to end: the real binary, the real component, real folders.

use std::path::{Path, PathBuf};
use std::process::Command;

fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

fn check(args: &[&Path], json: bool) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.arg("--wasm").arg(wasm()).arg("check");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.args(args).env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR")).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap())
}

fn write_skill(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
}

#[test]
fn the_published_corpus_passes_with_json_findings() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-skills");
    if !corpus.is_dir() {
        eprintln!("SKIPPED: {} is absent", corpus.display());
        return;
    }
    let (code, out) = check(&[&corpus], true);
    assert_eq!(code, 0, "{out}");
    for line in out.lines() {
        let f: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(f["path"].is_string() && f["line"].is_u64() && f["rule"].is_string() && f["message"].is_string());
        assert_ne!(f["severity"], "error", "{line}");
    }
}

#[test]
fn errors_exit_non_zero_and_warnings_do_not() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "deploy",
        "---\nname: deploy\ndescription: Deploy to staging. Use when deploying.\n---\nrm -rf /\n",
    );
    let (code, out) = check(&[dir.path()], false);
    assert_eq!(code, 0, "a destructive idiom is a warning: {out}");
    assert!(out.contains("warning [rm-rf-root]"), "{out}");

    write_skill(dir.path(), "mismatch", "---\nname: other-name\ndescription: Use when testing.\n---\nbody\n");
    let (code, out) = check(&[dir.path()], false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error [name-folder]"), "{out}");

    let single = tempfile::tempdir().unwrap();
    let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
    write_skill(single.path(), "leaky", "---\nname: leaky\ndescription: Use when leaking.\n---\nbody\n");
    std::fs::create_dir_all(single.path().join("leaky/scripts")).unwrap();
    std::fs::write(single.path().join("leaky/scripts/env.sh"), format!("AWS={key}\n")).unwrap();
    let (code, out) = check(&[&single.path().join("leaky")], true);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("\"rule\":\"aws-access-key-id\""), "{out}");
    assert!(!out.contains(&key), "the secret is never printed");
}

fn check_stderr(args: &[&Path]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .arg("--wasm")
        .arg(wasm())
        .arg("check")
        .args(args)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Links are findings, never followed: neither a linked SKILL.md nor a linked skill folder is read.
#[test]
fn symlinks_are_reported_and_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let planted = "---\nname: stolen\ndescription: PLANTED-CONTENT from outside. Use when never.\n---\nbody\n";
    std::fs::write(outside.path().join("SKILL.md"), planted).unwrap();
    std::fs::create_dir_all(dir.path().join("linked-file")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("SKILL.md"), dir.path().join("linked-file/SKILL.md")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked-folder")).unwrap();
    let (code, out) = check(&[dir.path()], true);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("PLANTED") && !out.contains("stolen"), "nothing behind a link was read: {out}");
    let rules: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for name in ["linked-file/SKILL.md", "linked-folder"] {
        assert!(
            rules.iter().any(|f| f["rule"] == "symlink" && f["path"].as_str().unwrap().ends_with(name)),
            "{name}: {out}"
        );
    }
    // The same for one skill folder given directly.
    let (code, out) = check(&[&dir.path().join("linked-file")], true);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("\"rule\":\"symlink\"") && !out.contains("PLANTED"), "{out}");
}

/// A FIFO never hangs `check`; a device, a hard link and a too-long name are findings with paths.
#[test]
fn special_files_and_os_errors_are_findings_with_their_paths() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(dir.path(), "good", "---\nname: good\ndescription: Use when testing the checker.\n---\nbody\n");
    std::fs::create_dir_all(dir.path().join("trap")).unwrap();
    let fifo = dir.path().join("trap/SKILL.md");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::create_dir_all(dir.path().join("good/references")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("shared.md"), "shared\n").unwrap();
    std::fs::hard_link(outside.path().join("shared.md"), dir.path().join("good/references/shared.md")).unwrap();
    let started = std::time::Instant::now();
    let (code, out) = check(&[dir.path()], true);
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "no read waited on the FIFO");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("\"rule\":\"not-a-file\"") && out.contains("trap/SKILL.md"), "{out}");
    assert!(out.contains("\"rule\":\"hard-link\"") && out.contains("references/shared.md"), "{out}");
    // An argument the OS refuses is a finding naming its path, as is one that is no folder.
    let long = dir.path().join("x".repeat(300));
    let file = dir.path().join("good/SKILL.md");
    let (code, out, err) = check_stderr(&[&long, &file]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains(&"x".repeat(300)) && out.contains("[path-too-long] a name of 300 bytes"), "the path: {out}");
    assert!(out.contains("good/SKILL.md:0: error [not-a-folder]"), "{out}");
}

/// Nests folders of 200-byte names under `dir` until the path passes PATH_MAX (4096 bytes),
/// by handle (a path-based mkdir stops at the limit); the deepest holds a file.
fn nest_past_path_max(dir: &Path) -> usize {
    use rustix::fs::{Mode, OFlags, mkdirat, openat};
    let name = "d".repeat(200);
    let mut folder = openat(rustix::fs::CWD, dir, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    let mut len = dir.as_os_str().len();
    while len <= 4300 {
        mkdirat(&folder, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        folder = openat(&folder, name.as_str(), OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
        len += name.len() + 1;
    }
    let file = openat(&folder, "notes.md", OFlags::CREATE | OFlags::WRONLY, Mode::from_raw_mode(0o644)).unwrap();
    rustix::io::write(&file, b"deep notes\n").unwrap();
    len
}

/// One path past PATH_MAX (a deeply nested folder in a skill), a folder that is missing and a
/// name that is not UTF-8 are findings naming their paths; every other skill is still checked
/// and its findings reported, with the usual exit status.
#[test]
fn unreadable_entries_are_findings_and_the_rest_is_still_checked() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    write_skill(&root, "aa-deep", "---\nname: aa-deep\ndescription: Use when nesting folders.\n---\nbody\n");
    std::fs::create_dir_all(root.join("aa-deep/references")).unwrap();
    assert!(nest_past_path_max(&root.join("aa-deep/references")) > 4096);
    let odd = root.join("aa-deep/references").join(std::ffi::OsStr::from_bytes(b"odd-\xff.md"));
    std::fs::write(&odd, "odd\n").unwrap();
    write_skill(&root, "mismatch", "---\nname: other-name\ndescription: Use when testing.\n---\nbody\n");
    write_skill(&root, "zz-risky", "---\nname: zz-risky\ndescription: Use when cleaning up.\n---\nrm -rf /\n");
    let missing = dir.path().join("missing");

    let (code, out, err) = check_stderr(&[&root, &missing]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("3 skill(s) checked"), "{out}\n{err}");
    assert!(out.contains("error [name-folder]") && out.contains("warning [rm-rf-root]"), "{out}");

    let (code, out) = check(&[&root, &missing], true);
    assert_eq!(code, 1, "{out}");
    let findings: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let rule = |rule: &str| findings.iter().find(|f| f["rule"] == rule).unwrap_or_else(|| panic!("{rule}: {out}"));
    let deep = rule("path-too-long");
    let path = deep["path"].as_str().unwrap();
    assert!(path.starts_with(root.join("aa-deep/references/ddd").to_str().unwrap()) && path.len() > 4096, "{deep}");
    assert_eq!(deep["severity"], "error");
    assert!(deep["message"].as_str().unwrap().contains("past what the OS opens by path (PATH_MAX)"), "{deep}");
    assert!(rule("not-utf8-name")["path"].as_str().unwrap().ends_with("references/odd-\u{fffd}.md"), "{out}");
    assert!(rule("unreadable")["path"].as_str().unwrap().ends_with("/missing"), "{out}");
    rule("name-folder");
    rule("rm-rf-root");
}

/// `sync` reports near-duplicates through `check::duplicates`: a path past PATH_MAX in one skill
/// no longer makes it fail (sync then reported none at all); it is named, and the pair is found.
#[test]
fn duplicates_are_found_past_an_unreadable_entry_which_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    write_skill(
        &root,
        "aa-tls-cert-rotation",
        "---\nname: aa-tls-cert-rotation\ndescription: Rotate expiring TLS certificates on the load balancer.\n---\nbody\n",
    );
    write_skill(
        &root,
        "zz-renew-load-balancer-certs",
        "---\nname: zz-renew-load-balancer-certs\ndescription: Renewing the load balancer's TLS certs before they expire.\n---\nbody\n",
    );
    write_skill(&root, "mm-deep", "---\nname: mm-deep\ndescription: Use when nesting folders.\n---\nbody\n");
    nest_past_path_max(&root.join("mm-deep"));
    let bytes = std::fs::read(wasm()).unwrap();
    let mut plugin =
        self_evolve_host::Plugin::from_bytes(&bytes, self_evolve_host::HostConfig::default()).expect("the component");
    let found =
        self_evolve::check::duplicates(&mut plugin, std::slice::from_ref(&root)).expect("no error for one path");
    let twins = found.iter().filter(|f| f.rule == "near-duplicate").count();
    assert_eq!(twins, 1, "{found:?}");
    let deep = found.iter().find(|f| f.rule == "path-too-long").expect("the deep path is named");
    assert!(deep.path.starts_with(root.join("mm-deep/ddd").to_str().unwrap()), "{deep:?}");
    assert!(deep.message.starts_with("not compared for near-duplicates (path-too-long): "), "{deep:?}");
}

/// A file over the size limit is a finding and is still scanned, in chunks, with its own line numbers.
#[test]
fn oversized_files_are_reported_and_still_scanned_for_credentials() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(dir.path(), "big", "---\nname: big\ndescription: Use when testing large references.\n---\nbody\n");
    std::fs::create_dir_all(dir.path().join("big/references")).unwrap();
    let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
    // ~6 MiB of lines (past the 4 MiB limit), the key on line 100000, near a chunk boundary.
    let mut text = String::new();
    for i in 1..=120_000u32 {
        if i == 100_000 {
            text.push_str(&format!("export AWS_ACCESS_KEY_ID={key}\n"));
        } else {
            text.push_str(&format!("line {i:>6} of a long reference file with ordinary words\n"));
        }
    }
    assert!(text.len() > 4 << 20);
    std::fs::write(dir.path().join("big/references/huge.md"), &text).unwrap();
    let (code, out) = check(&[dir.path()], true);
    assert_eq!(code, 1, "{out}");
    let findings: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(findings.iter().any(|f| f["rule"] == "too-large" && f["severity"] == "warning"), "{out}");
    let hit = findings.iter().find(|f| f["rule"] == "aws-access-key-id").expect("the key is found");
    assert_eq!(hit["line"], 100_000, "{hit}");
    assert!(hit["path"].as_str().unwrap().ends_with("big/references/huge.md"), "{hit}");
    assert!(!out.contains(&key), "the secret is never printed");
}

/// Skills go to the component in bounded batches: 64 MB of skills checks without a memory trap.
#[test]
fn a_large_library_is_checked_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let body = "ordinary words for a long skill body\n".repeat(3_000); // ~110 KB each
    for i in 0..600 {
        let name = format!("skill-{i:04}");
        write_skill(
            dir.path(),
            &name,
            &format!("---\nname: {name}\ndescription: Use when testing batch number {i} of the checker.\n---\n{body}"),
        );
    }
    let (code, out, err) = check_stderr(&[dir.path()]);
    assert!(out.contains("600 skill(s) checked"), "{out}\n{err}");
    assert!(code == 0 || code == 1, "{err}");
    assert!(!err.contains("memory"), "{err}");
}

#[test]
fn near_duplicates_are_found_across_batches_once_each() {
    let dir = tempfile::tempdir().unwrap();
    // 300 distinct skills: more than one batch (256 skills), so the twins land in different ones.
    let topics = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
    for i in 0..300 {
        let name = format!("{}-{}-{}", topics[i % 10], topics[(i / 10) % 10], "x".repeat(1 + i / 100));
        let words: Vec<String> =
            (0..6).map(|k| format!("w{}{}", i, "abcdefgh".chars().nth(k).unwrap_or('z'))).collect();
        write_skill(
            dir.path(),
            &name,
            &format!("---\nname: {name}\ndescription: Words {} for this one.\n---\nbody\n", words.join(" ")),
        );
    }
    write_skill(
        dir.path(),
        "aa-tls-cert-rotation",
        "---\nname: aa-tls-cert-rotation\ndescription: Rotate expiring TLS certificates on the load balancer.\n---\nbody\n",
    );
    write_skill(
        dir.path(),
        "zz-renew-load-balancer-certs",
        "---\nname: zz-renew-load-balancer-certs\ndescription: Renewing the load balancer's TLS certs before they expire.\n---\nbody\n",
    );
    let (_, out, err) = check_stderr(&[dir.path()]);
    assert!(out.contains("302 skill(s) checked"), "{out}\n{err}");
    let duplicates: Vec<&str> = out.lines().filter(|l| l.contains("[near-duplicate]")).collect();
    assert_eq!(duplicates.len(), 1, "{out}");
    assert!(duplicates[0].contains("zz-renew-load-balancer-certs/SKILL.md:1: warning"), "{out}");
    assert!(duplicates[0].contains("similar to `aa-tls-cert-rotation`"), "{out}");
}

#[test]
fn a_long_check_reports_progress_on_stderr_and_findings_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3 {
        let name = format!("skill-{i}");
        write_skill(dir.path(), &name, &format!("---\nname: {name}\ndescription: Use when testing {i}.\n---\nbody\n"));
    }
    // A check slower than the threshold (here 0 ms): progress lines on stderr, not a terminal.
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .arg("--wasm")
        .arg(wasm())
        .arg("check")
        .arg(dir.path())
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_PROGRESS_AFTER_MS", "0")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stderr.contains("check: 1/3 skills"), "{stderr}");
    assert!(stderr.contains("check: comparing names and descriptions for near-duplicates"), "{stderr}");
    assert!(!stderr.contains('\r'), "no bar redrawn in place when stderr is not a terminal: {stderr:?}");
    assert!(stdout.contains("3 skill(s) checked") && !stdout.contains("check: "), "{stdout}");
    // Under the threshold (the default second), nothing on stderr.
    let (_, _, quiet) = check_stderr(&[dir.path()]);
    assert!(!quiet.contains("check: "), "{quiet}");
}

/// A package of many bounded files (sparse 4 MiB files: nothing much on disk) stops being read
/// at the package bound, with an error naming it, instead of holding them all in memory.
#[test]
fn a_package_past_its_bound_is_a_finding_and_the_rest_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    write_skill(&root, "bulky", "---\nname: bulky\ndescription: Bulky. Use when testing bounds.\n---\nBody.\n");
    std::fs::create_dir_all(root.join("bulky/references")).unwrap();
    for i in 0..20 {
        let file = std::fs::File::create(root.join(format!("bulky/references/{i:02}.md"))).unwrap();
        file.set_len(4 << 20).unwrap();
    }
    let (code, out) = check(&[&root], true);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("package-too-large") && out.contains("bulky"), "{out}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// `sync` walks the library for the near-duplicates that arrive: a folder nested past PATH_MAX
/// in a local skill (git skips it with a warning) no longer hides them. Before, the walk failed
/// there and the report said nothing.
#[test]
fn sync_reports_the_duplicates_that_arrive_past_a_path_too_long() {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
    let seed = dir.path().join("seed");
    git(dir.path(), &["clone", "-q", remote.to_str().unwrap(), seed.to_str().unwrap()]);
    std::fs::write(seed.join("README.md"), "Our team's skills.\n").unwrap();
    git(&seed, &["add", "README.md"]);
    git(&seed, &["-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "-q", "-m", "start"]);
    git(&seed, &["push", "-q", "origin", "HEAD:main"]);
    let homes: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("home-{i}"))).collect();
    for (i, home) in homes.iter().enumerate() {
        let skills = home.join("skills");
        git(dir.path(), &["clone", "-q", remote.to_str().unwrap(), skills.to_str().unwrap()]);
        git(&skills, &["config", "user.name", &format!("t{i}")]);
        git(&skills, &["config", "user.email", &format!("t{i}@example.com")]);
        let host = serde_json::json!({"git": {"remote": "origin", "branch": "main", "library": format!("laptop-{i}")}});
        std::fs::write(home.join("host.json"), host.to_string()).unwrap();
    }
    let commit = |home: &Path, name: &str, description: &str| {
        let skills = home.join("skills");
        write_skill(&skills, name, &format!("---\nname: {name}\ndescription: {description}\n---\nGroup by label.\n"));
        git(&skills, &["add", "-A"]);
        git(&skills, &["commit", "-q", "-m", name]);
    };
    let (a, b) = (&homes[0], &homes[1]);
    commit(a, "release-notes", "Write release notes from merged pull request titles. Use when preparing a release.");
    git(&a.join("skills"), &["push", "-q", "origin", "HEAD:main"]);
    let twin = "Write the release notes from the merged pull request titles. Use when preparing releases.";
    commit(b, "release-notes-writing", twin);
    std::fs::create_dir_all(b.join("skills/release-notes-writing/references")).unwrap();
    nest_past_path_max(&b.join("skills/release-notes-writing/references"));
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .arg("--wasm")
        .arg(wasm())
        .args(["sync", "--json", "--home"])
        .arg(b)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["pulled"], 1, "{report}");
    let duplicates = report["duplicates"].as_array().unwrap();
    assert!(
        duplicates.iter().any(|d| d.as_str().unwrap().contains("release-notes-writing/SKILL.md")),
        "the pair is still reported: {report}"
    );
}
