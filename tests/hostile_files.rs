//! A library holding hostile files, through the real component (Hardening I): a FIFO, a huge
//! hand-written file and a hard-linked reference are each a typed error for that skill, while
//! `list`, `view` and `create` keep working for the rest; nothing on disk changes.

mod common;

use common::{TestHost, all_services, host, snapshot};
use serde_json::json;
use std::time::{Duration, Instant};

fn ready() -> TestHost {
    let mut h = host();
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    h
}

fn create_pdf_tables(h: &mut TestHost) -> serde_json::Value {
    let args = json!({"action": "create", "name": "pdf-tables", "description": "Extract tables from PDF files with pdfplumber.", "body": "# PDF\n"});
    h.skill("s1", args).unwrap()
}

fn mkfifo(path: &std::path::Path) {
    let ok = std::process::Command::new("mkfifo").arg(path).status().is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn a_fifo_and_a_huge_file_are_reported_and_the_rest_of_the_library_works() {
    let mut h = ready();
    h.hand_written("deploy-staging", "Deploy the web app to staging with the release script.");
    std::fs::create_dir_all(h.user_skills().join("trap")).unwrap();
    mkfifo(&h.user_skills().join("trap/SKILL.md"));
    std::fs::create_dir_all(h.user_skills().join("huge")).unwrap();
    // 70 MB, sparse: past the host's read bound (16 MiB) and the instance's memory (64 MiB).
    std::fs::File::create(h.user_skills().join("huge/SKILL.md")).unwrap().set_len(70 << 20).unwrap();
    let before = snapshot(&h.user_skills());

    let started = Instant::now();
    let listed = h.skill("s1", json!({"action": "list"})).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "list never waits on a FIFO");
    let skills = listed["skills"].as_array().unwrap();
    let status = |name: &str| {
        skills.iter().find(|s| s["name"] == name).map(|s| s["status"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(status("trap").as_deref(), Some("unreadable"), "{listed}");
    assert_eq!(status("huge").as_deref(), Some("too-large"), "{listed}");
    assert!(status("deploy-staging").is_some(), "{listed}");

    let err = h.skill("s1", json!({"action": "view", "name": "huge"})).unwrap_err();
    assert_eq!(err["code"], "too-large", "{err}");
    let err = h.skill("s1", json!({"action": "view", "name": "trap"})).unwrap_err();
    assert_eq!(err["code"], "wrong-kind", "{err}");
    let viewed = h.skill("s1", json!({"action": "view", "name": "deploy-staging"})).unwrap();
    assert!(viewed["content"].as_str().unwrap_or_default().contains("release script"), "{viewed}");

    let created = create_pdf_tables(&mut h);
    assert_eq!(created["status"], "written", "{created}");
    let mut after = snapshot(&h.user_skills());
    after.retain(|k, _| !k.starts_with("pdf-tables"));
    assert_eq!(after, before, "the hostile files were not touched");
}

#[test]
fn a_hard_linked_reference_is_refused_and_its_twin_outside_is_untouched() {
    let mut h = ready();
    let created = create_pdf_tables(&mut h);
    assert_eq!(created["status"], "written", "{created}");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.md"), b"outside").unwrap();
    std::fs::create_dir_all(h.user_skills().join("pdf-tables/references")).unwrap();
    std::fs::hard_link(outside.path().join("notes.md"), h.user_skills().join("pdf-tables/references/notes.md"))
        .unwrap();
    h.skill("s1", json!({"action": "view", "name": "pdf-tables"})).unwrap();
    let result = h.skill(
        "s1",
        json!({"action": "write_file", "name": "pdf-tables", "file_path": "references/notes.md", "content": "changed"}),
    );
    // Either way the file outside keeps its bytes: a refusal (the host read or opened the linked
    // file) says why in the log; a success replaced the link by rename and never opened it.
    assert_eq!(std::fs::read(outside.path().join("notes.md")).unwrap(), b"outside", "{result:?}");
    if let Err(err) = result {
        assert!(h.logged("hard links"), "the host says why ({err}): {}", h.log_text());
    }
    let listed = h.skill("s1", json!({"action": "view", "name": "pdf-tables", "file_path": "references/notes.md"}));
    assert!(
        !matches!(&listed, Ok(v) if v["content"] == "outside"),
        "a hard-linked file in a skills root is never read: {listed:?}"
    );
}
