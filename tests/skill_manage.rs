//! The skill_manage tool through the real component: the happy path, staged approval, and a
//! table of bad inputs each refused with its code and a byte-for-byte unchanged filesystem.

mod common;

use common::{TestHost, all_services, host, snapshot};
use serde_json::{Value, json};

fn ready(config: &str) -> TestHost {
    let mut h = host();
    h.plugin.init(config, &all_services()).unwrap().unwrap();
    h
}

fn create(h: &mut TestHost, name: &str, description: &str, body: &str) -> Value {
    h.skill("s1", json!({"action": "create", "name": name, "description": description, "body": body})).unwrap()
}

#[test]
fn create_view_patch_edit_files_and_archive() {
    let mut h = ready("{}");
    let out = create(
        &mut h,
        "pdf-tables",
        "Extract tables from PDF files with pdfplumber. Use when a PDF is given.",
        "# PDF tables\n\nUse pdfplumber.\n",
    );
    assert_eq!(out["status"], "written");
    let text = std::fs::read_to_string(h.user_skills().join("pdf-tables/SKILL.md")).unwrap();
    assert!(text.starts_with("---\nname: pdf-tables\ndescription: Extract tables"), "{text}");
    assert!(text.contains("authored-by: self-evolve") && text.contains("version: \"1\""), "{text}");

    // The creator has read it (a successful write marks the read); another agent has not.
    let err = h
        .skill_as(
            "s1",
            "other",
            json!({"action": "patch", "name": "pdf-tables", "old_string": "pdfplumber.\n", "new_string": "x"}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "not-read");
    let out = h
        .skill("s1", json!({"action": "patch", "name": "pdf-tables", "old_string": "Use pdfplumber.", "new_string": "Use pdfplumber; camelot for lattice tables."}))
        .unwrap();
    assert_eq!(out["status"], "written");
    let text = std::fs::read_to_string(h.user_skills().join("pdf-tables/SKILL.md")).unwrap();
    assert!(text.contains("camelot") && text.contains("version: \"2\""), "{text}");

    let view = h.skill("s1", json!({"action": "view", "name": "pdf-tables"})).unwrap();
    assert_eq!(view["owned"], true);
    assert_eq!(view["scope"], "user");

    h.skill("s1", json!({"action": "write_file", "name": "pdf-tables", "file_path": "references/camelot.md", "content": "# Camelot\n"}))
        .unwrap();
    let view = h.skill("s1", json!({"action": "view", "name": "pdf-tables"})).unwrap();
    assert_eq!(view["files"], json!(["references/camelot.md"]));
    let file =
        h.skill("s1", json!({"action": "view", "name": "pdf-tables", "file_path": "references/camelot.md"})).unwrap();
    assert_eq!(file["content"], "# Camelot\n");
    h.skill("s1", json!({"action": "remove_file", "name": "pdf-tables", "file_path": "references/camelot.md"}))
        .unwrap();
    assert!(!h.user_skills().join("pdf-tables/references").exists(), "empty folders go too");

    let edited = text.replace("camelot for lattice tables", "camelot for lattice PDFs");
    h.skill("s1", json!({"action": "edit", "name": "pdf-tables", "content": edited})).unwrap();
    let text = std::fs::read_to_string(h.user_skills().join("pdf-tables/SKILL.md")).unwrap();
    assert!(text.contains("lattice PDFs") && text.contains("version: \"3\""), "{text}");

    let list = h.skill("s1", json!({"action": "list"})).unwrap();
    assert_eq!(list["skills"][0]["name"], "pdf-tables");
    assert_eq!(list["skills"][0]["owned"], true);

    let out = h.skill("s1", json!({"action": "archive", "name": "pdf-tables"})).unwrap();
    assert_eq!(out["status"], "archived");
    assert!(!h.user_skills().join("pdf-tables").exists());
    let archived = h.state_dir().join(out["archive"].as_str().unwrap());
    assert!(archived.join("SKILL.md").is_file() && archived.join("archived.json").is_file());

    let usage = common::usage(&h.state_dir());
    assert!(usage["skills"]["pdf-tables"]["uses"].as_u64().unwrap() >= 4, "{usage}");
}

#[test]
fn a_skill_load_seen_in_tool_results_registers_the_read() {
    let mut h = ready("{}");
    create(&mut h, "git-commits", "How to write commit messages here. Use when committing.", "Imperative subject.\n");
    let patch = json!({"action": "patch", "name": "git-commits", "old_string": "Imperative", "new_string": "Short, imperative"});
    assert_eq!(h.skill_as("s1", "helper", patch.clone()).unwrap_err()["code"], "not-read");
    let mut ctx = self_evolve_host::user_context("s1");
    ctx.agent = "helper".into();
    let event = self_evolve_host::plugin::ToolEvent {
        tool: "skill".into(),
        args_json: r#"{"name":"git-commits"}"#.into(),
        ok: true,
        output: "…skill text…".into(),
    };
    h.plugin.tool_result(&ctx, &event).unwrap();
    assert_eq!(h.skill_as("s1", "helper", patch).unwrap()["status"], "written");
}

#[test]
fn with_approval_on_writes_are_staged_with_a_diff_until_approved() {
    let mut h = ready(r#"{"writeApproval": true}"#);
    let out = create(
        &mut h,
        "docker-deploy",
        "Deploy the web app to staging with docker compose. Use when deploying.",
        "Run compose.\n",
    );
    assert_eq!(out["status"], "staged");
    assert!(!h.user_skills().join("docker-deploy").exists(), "nothing written before approval");
    let id = out["id"].as_str().unwrap();
    let pending = h.state_dir().join("pending").join(id);
    assert!(pending.join("manifest.json").is_file() && pending.join("change.diff").is_file());
    assert!(out["diff"].as_str().unwrap().contains("+++ b/docker-deploy/SKILL.md"));
}

/// `stage: true` asks for approval even when writes land directly (never the reverse).
#[test]
fn a_change_asked_to_be_staged_is_staged_with_approval_off() {
    let mut h = ready("{}");
    create(
        &mut h,
        "docker-deploy",
        "Deploy the web app to staging with docker compose. Use when deploying.",
        "Run compose.\n",
    );
    let file = h.user_skills().join("docker-deploy/SKILL.md");
    let before = std::fs::read(&file).unwrap();
    let out = h
        .skill(
            "s1",
            json!({"action": "patch", "name": "docker-deploy", "old_string": "Run compose.", "new_string": "Run compose, then smoke-test.", "stage": true}),
        )
        .unwrap();
    assert_eq!(out["status"], "staged", "{out}");
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing written before approval");
    assert!(out["diff"].as_str().unwrap().contains("+Run compose, then smoke-test."));
    let direct = h
        .skill("s1", json!({"action": "patch", "name": "docker-deploy", "old_string": "Run compose.", "new_string": "Run it.", "stage": false}))
        .unwrap();
    assert_eq!(direct["status"], "written", "without it the change lands: {direct}");
}

/// Governance has no side doors, through the real component: an archive asked to be staged
/// (or made with approval on) waits for the operator with the skills folder untouched, and lands
/// on approval; an agent's edit cannot pin its skill or relabel its library.
#[test]
fn an_archive_is_staged_like_any_change_and_owned_fields_stay_the_operators() {
    let mut h = ready("{}");
    create(&mut h, "docker-deploy", "Deploy the web app with docker compose. Use when deploying.", "Run compose.\n");
    let file = h.user_skills().join("docker-deploy/SKILL.md");
    let text = std::fs::read_to_string(&file).unwrap();
    let sneaky = text.replace("  authored-by:", "  pinned: \"true\"\n  library: someone-else\n  authored-by:");
    h.skill("s1", json!({"action": "edit", "name": "docker-deploy", "content": sneaky})).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("pinned") && !text.contains("library:"), "{text}");
    assert!(text.contains("version: \"2\""), "{text}");

    let skills = snapshot(&h.user_skills());
    let out = h.skill("s1", json!({"action": "archive", "name": "docker-deploy", "stage": true})).unwrap();
    assert_eq!(out["status"], "staged", "{out}");
    assert_eq!(snapshot(&h.user_skills()), skills, "nothing moved before approval");
    let id = out["id"].as_str().unwrap();
    let ctx = self_evolve_host::user_context("s1");
    let diff = h.plugin.command(&ctx, &format!("diff {id}")).unwrap().unwrap();
    assert!(diff.starts_with("# archive `docker-deploy` (user scope)") && diff.contains("+++ /dev/null"), "{diff}");
    let approved = h.plugin.command(&ctx, &format!("approve {id} --json")).unwrap().unwrap();
    let approved: Value = serde_json::from_str(&approved).unwrap();
    assert!(!h.user_skills().join("docker-deploy").exists(), "{approved}");
    let archived = h.state_dir().join(approved["archive"].as_str().unwrap());
    assert!(archived.join("SKILL.md").is_file() && archived.join("archived.json").is_file());
}

/// Sets up a library with one owned skill (read by `main`) and one hand-written skill.
fn library() -> TestHost {
    let mut h = ready("{}");
    create(
        &mut h,
        "owned-skill",
        "Format release notes for the changelog. Use when releasing.",
        "Step one.\nStep one.\n",
    );
    h.hand_written("hand-made", "A skill someone wrote by hand. Use when testing.");
    h.skill("s1", json!({"action": "view", "name": "hand-made"})).unwrap();
    h
}

#[test]
fn every_refusal_has_its_code_and_changes_nothing() {
    let big_body = "x".repeat(2 * 1024 * 1024);
    let bomb = "---\nname: bomb\ndescription: &a [x, x]\nmetadata: *a\n---\n";
    let secret = format!("token = {}{}", "ghp_", "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vW0xYz1234");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("traversal name", json!({"action": "create", "name": "../x", "description": "d"}), "invalid-name"),
        ("absolute name", json!({"action": "create", "name": "/abs", "description": "d"}), "invalid-name"),
        ("uppercase", json!({"action": "create", "name": "Upper", "description": "d"}), "invalid-name"),
        ("65 characters", json!({"action": "create", "name": "a".repeat(65), "description": "d"}), "invalid-name"),
        ("empty description", json!({"action": "create", "name": "fresh", "description": ""}), "invalid-frontmatter"),
        (
            "2 MiB body",
            json!({"action": "create", "name": "fresh", "description": "Big. Use when big.", "body": big_body}),
            "too-large",
        ),
        (
            "secret in body",
            json!({"action": "create", "name": "fresh", "description": "Use when x.", "body": secret}),
            "secret-found",
        ),
        ("existing name", json!({"action": "create", "name": "owned-skill", "description": "Another"}), "exists"),
        (
            "unclosed frontmatter",
            json!({"action": "edit", "name": "owned-skill", "content": "---\nname: owned-skill\n"}),
            "invalid-frontmatter",
        ),
        ("alias bomb", json!({"action": "edit", "name": "owned-skill", "content": bomb}), "invalid-frontmatter"),
        (
            "rename by edit",
            json!({"action": "edit", "name": "owned-skill", "content": "---\nname: other\ndescription: d\n---\n"}),
            "invalid-frontmatter",
        ),
        (
            "patch missing",
            json!({"action": "patch", "name": "owned-skill", "old_string": "nowhere", "new_string": "x"}),
            "no-match",
        ),
        (
            "patch ambiguous",
            json!({"action": "patch", "name": "owned-skill", "old_string": "Step one.", "new_string": "x"}),
            "ambiguous",
        ),
        (
            "hand-written",
            json!({"action": "patch", "name": "hand-made", "old_string": "# hand-made", "new_string": "x"}),
            "not-owned",
        ),
        (
            "unknown skill",
            json!({"action": "patch", "name": "ghost", "old_string": "a", "new_string": "b"}),
            "not-found",
        ),
        (
            "traversal file",
            json!({"action": "write_file", "name": "owned-skill", "file_path": "../../escape.md", "content": "x"}),
            "invalid-path",
        ),
        (
            "file outside folders",
            json!({"action": "write_file", "name": "owned-skill", "file_path": "notes.md", "content": "x"}),
            "invalid-path",
        ),
        (
            "secret in file",
            json!({"action": "write_file", "name": "owned-skill", "file_path": "scripts/run.sh", "content": secret}),
            "secret-found",
        ),
        ("unknown field", json!({"action": "create", "name": "x", "description": "d", "bogus": 1}), "invalid-args"),
        ("unknown action", json!({"action": "delete", "name": "owned-skill"}), "invalid-args"),
    ];
    let mut h = library();
    for (what, args, code) in cases {
        let before = snapshot(h.home.path());
        let err = h.skill("s1", args).expect_err(what);
        assert_eq!(err["code"], code, "{what}: {err}");
        assert!(!err["message"].as_str().unwrap().is_empty() && !err["hint"].as_str().unwrap().is_empty(), "{what}");
        assert_eq!(snapshot(h.home.path()), before, "{what}: the filesystem changed");
    }
}

/// A refusal that quotes what the caller sent never carries a credential on (it reaches the
/// model, and hosts log refusals): unknown actions and scopes, fields the JSON parser names.
#[test]
fn a_credential_in_a_quoted_argument_is_redacted_from_the_refusal() {
    let key = format!("{}{}", "ghp_", "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vW0xYz1234");
    let mut h = library();
    for args in [
        json!({"action": key, "name": "owned-skill"}),
        json!({"action": "create", "name": "fresh", "description": "Fresh. Use when fresh.", "scope": key}),
        json!({"action": "list", "offset": key}),
    ] {
        let before = snapshot(h.home.path());
        let err = h.skill("s1", args.clone()).expect_err("refused");
        assert_eq!(err["code"], "invalid-args", "{err}");
        assert!(!err.to_string().contains(&key), "the key is quoted back: {err}");
        assert!(err["message"].as_str().unwrap().contains("[redacted"), "{err}");
        assert_eq!(snapshot(h.home.path()), before);
    }
}

/// `replace_all` of a one-byte string by a long one is sized before it is built: `too-large`,
/// never a trap on the instance's memory.
#[test]
fn a_replace_all_that_would_outgrow_the_skill_is_refused_before_it_is_built() {
    let mut h = library();
    create(&mut h, "many-as", "Many letters. Use when testing growth.", &"a".repeat(50_000));
    let before = snapshot(h.home.path());
    let err = h
        .skill(
            "s1",
            json!({"action": "patch", "name": "many-as", "old_string": "a", "new_string": "b".repeat(20_000), "replace_all": true}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "too-large", "{err}");
    assert_eq!(snapshot(h.home.path()), before);
    let ok = h.skill("s1", json!({"action": "view", "name": "many-as"})).unwrap();
    assert_eq!(ok["name"], "many-as", "the instance lives on");
}

#[test]
fn a_write_before_a_read_is_refused() {
    let mut h = library();
    let before = snapshot(h.home.path());
    let err = h
        .skill_as(
            "s1",
            "newcomer",
            json!({"action": "patch", "name": "owned-skill", "old_string": "releasing", "new_string": "shipping"}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "not-read");
    assert_eq!(snapshot(h.home.path()), before);
}

#[test]
fn non_utf8_and_symlinked_skill_folders_are_refused() {
    let mut h = library();
    // Non-UTF-8 bytes in a skill we own: an encoding error naming the line, not a question of
    // ownership (Hardening II); it stays unchangeable until the bytes are fixed.
    let path = h.user_skills().join("owned-skill/SKILL.md");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"\xff\xfe\n");
    std::fs::write(&path, &bytes).unwrap();
    let before = snapshot(h.home.path());
    let err = h
        .skill("s1", json!({"action": "patch", "name": "owned-skill", "old_string": "Step", "new_string": "x"}))
        .unwrap_err();
    assert_eq!(err["code"], "invalid-encoding");
    assert_eq!(snapshot(h.home.path()), before);

    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("linked"), h.user_skills().join("linked")).unwrap();
    let before = snapshot(h.home.path());
    let outside_before = snapshot(outside.path());
    let err = h
        .skill("s1", json!({"action": "create", "name": "linked", "description": "Symlinked. Use when linking."}))
        .unwrap_err();
    assert_eq!(err["code"], "symlink", "{err}");
    assert_eq!(snapshot(h.home.path()), before);
    assert_eq!(snapshot(outside.path()), outside_before);
}

#[test]
fn duplicates_are_refused_with_the_closest_skills() {
    let mut h = ready("{}");
    create(
        &mut h,
        "docker-deploy",
        "Deploy the web app to the staging server with docker compose, then check the health endpoint.",
        "x\n",
    );
    create(
        &mut h,
        "python-style",
        "Python code style for this team: formatting, imports and naming. Use when writing Python.",
        "x\n",
    );
    let before = snapshot(h.home.path());
    let err = h
        .skill("s1", json!({"action": "create", "name": "deploy-with-docker", "description": "Deploying the web application to staging using docker compose and checking the health endpoint."}))
        .unwrap_err();
    assert_eq!(err["code"], "duplicate");
    assert_eq!(err["details"]["closest"][0]["name"], "docker-deploy");
    assert_eq!(snapshot(h.home.path()), before);
    // Sharing common words is fine.
    create(
        &mut h,
        "rust-style",
        "Rust code style for this team: rustfmt and clippy lints. Use when writing Rust.",
        "x\n",
    );
}

#[test]
fn approve_after_drift_is_refused_and_keeps_the_staged_write() {
    let mut h = ready(r#"{"writeApproval": false}"#);
    create(&mut h, "owned-skill", "Format release notes for the changelog. Use when releasing.", "Step one.\n");
    std::fs::write(h.state_dir().join("approval.json"), r#"{"enabled": true}"#).unwrap();
    let out = h
        .skill(
            "s1",
            json!({"action": "patch", "name": "owned-skill", "old_string": "Step one.", "new_string": "Step two."}),
        )
        .unwrap();
    assert_eq!(out["status"], "staged", "approval.json overrides the config at run time");
    // Drift: the file changes after staging. (Approval through /skills arrives with the command issue.)
    let target = h.user_skills().join("owned-skill/SKILL.md");
    let mut text = std::fs::read_to_string(&target).unwrap();
    text.push_str("edited by hand\n");
    std::fs::write(&target, &text).unwrap();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(h.state_dir().join("pending").join(out["id"].as_str().unwrap()).join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_ne!(manifest["baseSha256"], Value::Null);
}

#[test]
fn a_skill_added_by_hand_after_the_last_listing_is_still_caught_as_a_duplicate() {
    let mut h = ready("{}");
    create(
        &mut h,
        "python-style",
        "Python code style for this team: formatting, imports and naming. Use when writing Python.",
        "x\n",
    );
    // Millisecond mtimes: make sure the hand-made folder lands in a later millisecond.
    std::thread::sleep(std::time::Duration::from_millis(10));
    h.hand_written(
        "docker-deploy",
        "Deploy the web app to the staging server with docker compose, then check the health endpoint.",
    );
    let err = h
        .skill("s1", json!({"action": "create", "name": "deploy-with-docker", "description": "Deploying the web application to staging using docker compose and checking the health endpoint."}))
        .unwrap_err();
    assert_eq!(err["code"], "duplicate");
    assert_eq!(err["details"]["closest"][0]["name"], "docker-deploy");
}

/// Megabytes in any field are refused as `too-large` naming the field, before anything parses
/// them: no trap on the memory limit, nothing written, and the next call works.
#[test]
fn huge_fields_are_refused_before_parsing_and_the_next_call_works() {
    let mut h = ready("{}");
    let before = snapshot(h.home.path());
    let big = |n: usize| "x".repeat(n);
    let cases = [
        ("name", json!({"action": "create", "name": big(6 << 20), "description": "d", "body": "b"})),
        ("description", json!({"action": "create", "name": "ok-name", "description": big(6 << 20), "body": "b"})),
        ("action", json!({"action": big(8 << 20)})),
        ("body", json!({"action": "create", "name": "ok-name", "description": "d", "body": big(16 << 20)})),
        ("arguments", json!({"action": "create", "name": "ok-name", "description": "d", "content": big(25 << 20)})),
        (
            "reason",
            json!({"action": "create", "name": "ok-name", "description": "d", "body": "b", "reason": big(1 << 20)}),
        ),
    ];
    for (field, args) in cases {
        let err = h.skill("s1", args).expect_err(field);
        assert_eq!(err["code"], "too-large", "{field}: {err}");
        assert_eq!(err["details"]["field"], field, "{err}");
        assert!(err["message"].as_str().unwrap().len() < 200, "the value is never quoted");
    }
    let line = format!("show {}", big(40 << 20));
    let err = h.plugin.command(&self_evolve_host::user_context("s1"), &line).unwrap().unwrap_err();
    assert!(err.starts_with("too-large: the /skills line is"), "{}", &err[..err.len().min(200)]);
    assert_eq!(snapshot(h.home.path()), before, "nothing written");
    let listed = h.skill("s1", json!({"action": "list"})).unwrap();
    assert!(listed["skills"].is_array(), "the instance still answers: {listed}");
}

/// Event texts are observations, never refused: 40 MB messages and tool results are clipped by
/// the host before they enter the instance, nothing traps, and the next call works.
#[test]
fn huge_event_texts_are_clipped_and_the_next_call_works() {
    let mut h = ready("{}");
    let ctx = self_evolve_host::user_context("s1");
    let huge = "é".repeat(20 << 20); // 40 MiB of UTF-8
    h.plugin.user_message(&ctx, &huge, true).unwrap();
    h.plugin.assistant_message(&ctx, &huge).unwrap();
    let event = self_evolve_host::plugin::ToolEvent {
        tool: "bash".into(),
        args_json: huge.clone(),
        ok: true,
        output: huge.clone(),
    };
    h.plugin.tool_result(&ctx, &event).unwrap();
    let listed = h.skill("s1", json!({"action": "list"})).unwrap();
    assert!(listed["skills"].is_array(), "the instance still answers: {listed}");
    let clipped = self_evolve_host::plugin::clip_event_text(&huge);
    assert!(clipped.len() <= self_evolve_host::plugin::MAX_EVENT_TEXT_BYTES && huge.starts_with(clipped));
}

/// Messages say what happened: a bad byte in a skill of ours is an encoding error naming its
/// line (not `not-owned`); a missing name and a name that never matched its folder are not
/// "renames".
#[test]
fn encoding_and_name_refusals_say_what_happened() {
    let mut h = ready("{}");
    create(
        &mut h,
        "pdf-tables",
        "Extract tables from PDF files with pdfplumber. Use when a PDF is given.",
        "# PDF\n\nUse pdfplumber.\n",
    );
    let path = h.user_skills().join("pdf-tables/SKILL.md");
    let good = std::fs::read(&path).unwrap();
    let mut bad = good.clone();
    let at = bad.windows(15).position(|w| w == b"Use pdfplumber.").unwrap() + 2; // in the body
    bad[at] = 0xff;
    let line = bad[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    std::fs::write(&path, &bad).unwrap();
    let before = snapshot(h.home.path());
    let err = h
        .skill("s1", json!({"action": "patch", "name": "pdf-tables", "old_string": "Use", "new_string": "Try"}))
        .unwrap_err();
    assert_eq!(err["code"], "invalid-encoding", "{err}");
    assert_eq!(err["details"]["line"], line, "{err}");
    assert!(err["message"].as_str().unwrap().contains(&format!("line {line}")), "{err}");
    assert_eq!(snapshot(h.home.path()), before);

    std::fs::write(&path, &good).unwrap();
    h.skill("s1", json!({"action": "view", "name": "pdf-tables"})).unwrap();
    let text = String::from_utf8(good).unwrap();
    let nameless = text.replacen("name: pdf-tables\n", "", 1);
    let err = h.skill("s1", json!({"action": "edit", "name": "pdf-tables", "content": nameless})).unwrap_err();
    assert!(!err["message"].as_str().unwrap().contains("renames"), "{err}");
    assert!(err["message"].as_str().unwrap().contains("no `name`"), "{err}");
    let renamed = text.replacen("name: pdf-tables\n", "name: pdf-extract\n", 1);
    let err = h.skill("s1", json!({"action": "edit", "name": "pdf-tables", "content": renamed.clone()})).unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("renames `pdf-tables` to `pdf-extract`"), "{err}");

    // A skill whose name never matched its folder: editing it is not a rename.
    std::fs::write(&path, &renamed).unwrap();
    h.skill("s1", json!({"action": "view", "name": "pdf-tables"})).unwrap();
    let err = h
        .skill("s1", json!({"action": "edit", "name": "pdf-tables", "content": renamed.replace("Use pdfplumber", "Use camelot")}))
        .unwrap_err();
    let message = err["message"].as_str().unwrap();
    assert!(!message.contains("renames") && message.contains("its folder is `pdf-tables`"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), renamed, "nothing written");
}

/// A credential in a field other than the content (a reason kept in a staged write's manifest and
/// printed by `/skills pending`, a path that becomes a file name) is refused naming the field.
#[test]
fn credentials_in_reason_and_path_are_refused_naming_the_field() {
    let mut h = ready(r#"{"writeApproval": true}"#);
    let key = format!("{}{}", "ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234");
    let before = snapshot(h.home.path());
    let err = h
        .skill(
            "s1",
            json!({"action": "create", "name": "pdf-tables", "description": "Extract tables from PDF files. Use when a PDF is given.", "body": "# PDF\n", "reason": format!("token {key} works")}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "secret-found", "{err}");
    assert_eq!(err["details"]["field"], "reason", "{err}");
    let err = h
        .skill(
            "s1",
            json!({"action": "write_file", "name": "pdf-tables", "file_path": format!("references/{key}.md"), "content": "x"}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "secret-found", "{err}");
    assert_eq!(err["details"]["field"], "file_path", "{err}");
    assert!(!err.to_string().contains(&key), "the key is never echoed: {err}");
    assert_eq!(snapshot(h.home.path()), before, "nothing staged, nothing written");
}

/// Approval runs the direct write's guards again: a staged create whose name now exists (here a
/// hand-written flat skill) and a staged file for a skill the user has since taken over are
/// refused with the direct write's codes, and nothing is written.
#[test]
fn approve_rechecks_existence_and_ownership() {
    let mut h = ready(r#"{"writeApproval": true}"#);
    let cmd = |h: &mut TestHost, args: &str| h.plugin.command(&self_evolve_host::user_context("s1"), args).unwrap();
    let staged = h
        .skill("s1", json!({"action": "create", "name": "pdf-tables", "description": "Extract tables from PDF files. Use when a PDF is given.", "body": "# PDF\n"}))
        .unwrap();
    assert_eq!(staged["status"], "staged");
    std::fs::create_dir_all(h.user_skills()).unwrap();
    std::fs::write(
        h.user_skills().join("pdf-tables.md"),
        "---\nname: pdf-tables\ndescription: Hand-written. Use when testing.\n---\nbody\n",
    )
    .unwrap();
    let before = snapshot(h.home.path());
    let err = cmd(&mut h, "approve latest").unwrap_err();
    assert!(err.contains("(exists)"), "{err}");
    assert_eq!(snapshot(h.home.path()), before, "nothing written, the staged write kept");
    cmd(&mut h, "reject latest").unwrap();
    std::fs::remove_file(h.user_skills().join("pdf-tables.md")).unwrap();

    // Files put in a folder of that name since staging (a script among them): approving would
    // adopt them under the plugin's ownership, so it is refused as the direct create would be.
    h.skill("s1", json!({"action": "create", "name": "pdf-tables", "description": "Extract tables from PDF files. Use when a PDF is given.", "body": "# PDF\n"}))
        .unwrap();
    std::fs::create_dir_all(h.user_skills().join("pdf-tables/scripts")).unwrap();
    std::fs::write(h.user_skills().join("pdf-tables/scripts/run.sh"), "rm -rf ~\n").unwrap();
    let before = snapshot(h.home.path());
    let err = cmd(&mut h, "approve latest").unwrap_err();
    assert!(err.contains("(exists)") && err.contains("without a SKILL.md"), "{err}");
    assert_eq!(snapshot(h.home.path()), before, "nothing adopted, the staged write kept");
    cmd(&mut h, "reject latest").unwrap();
    std::fs::remove_dir_all(h.user_skills().join("pdf-tables")).unwrap();

    // Ours when staged, taken over before approval: the staged file is refused.
    h.plugin.command(&self_evolve_host::user_context("s1"), "approval off").unwrap().unwrap();
    h.skill("s1", json!({"action": "create", "name": "pdf-tables", "description": "Extract tables from PDF files. Use when a PDF is given.", "body": "# PDF\n"}))
        .unwrap();
    h.plugin.command(&self_evolve_host::user_context("s1"), "approval on").unwrap().unwrap();
    let staged = h
        .skill("s1", json!({"action": "write_file", "name": "pdf-tables", "file_path": "references/more.md", "content": "# More\n"}))
        .unwrap();
    assert_eq!(staged["status"], "staged", "{staged}");
    h.hand_written("pdf-tables", "Taken over by the user. Use when testing.");
    let before = snapshot(h.home.path());
    let err = cmd(&mut h, "approve latest").unwrap_err();
    assert!(err.contains("(not-owned)"), "{err}");
    assert_eq!(snapshot(h.home.path()), before);
    assert!(!h.user_skills().join("pdf-tables/references/more.md").exists());
}

/// Debris of an interrupted archive (a folder holding `references/` but no SKILL.md) is never
/// adopted by a later `create` of that name; a dead write's hidden temp file is not listed as a
/// file of the skill.
#[test]
fn leftovers_are_never_adopted_or_shown() {
    let mut h = ready("{}");
    std::fs::create_dir_all(h.user_skills().join("pdf-tables/references")).unwrap();
    std::fs::write(h.user_skills().join("pdf-tables/references/old.md"), "left behind\n").unwrap();
    let before = snapshot(h.home.path());
    let err = h
        .skill("s1", json!({"action": "create", "name": "pdf-tables", "description": "Extract tables from PDF files. Use when a PDF is given.", "body": "# PDF\n"}))
        .unwrap_err();
    assert_eq!(err["code"], "exists", "{err}");
    assert_eq!(err["details"]["files"], json!(["references/old.md"]), "{err}");
    assert_eq!(snapshot(h.home.path()), before);

    create(&mut h, "csv-tables", "Read CSV tables with the csv module. Use when a CSV is given.", "# CSV\n");
    std::fs::write(h.user_skills().join("csv-tables/.SKILL.md.1767225600000-1.self-evolve-tmp"), "half").unwrap();
    let view = h.skill("s1", json!({"action": "view", "name": "csv-tables"})).unwrap();
    assert_eq!(view["files"], json!([]), "{view}");
}
