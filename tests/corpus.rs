//! Every published SKILL.md in ../shared/corpus/agent-skills parses, validates without
//! errors and round-trips through the serializer (natively; the same code runs in the component).

use self_evolve_plugin::library::storage::frontmatter::same_content;
use self_evolve_plugin::library::storage::skillfile::SkillFile;
use std::path::PathBuf;

fn corpus() -> Option<Vec<(String, PathBuf)>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/agent-skills");
    let entries = std::fs::read_dir(&dir).ok()?;
    let mut skills: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().join("SKILL.md").is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path().join("SKILL.md")))
        .collect();
    skills.sort();
    Some(skills)
}

#[test]
fn every_corpus_skill_parses_validates_and_round_trips() {
    let Some(skills) = corpus() else {
        eprintln!("SKIPPED: ../shared/corpus/agent-skills is absent; the corpus test did not run");
        return;
    };
    assert!(skills.len() >= 10, "expected the published corpus, found {}", skills.len());
    for (folder, path) in skills {
        let bytes = std::fs::read(&path).unwrap();
        let skill = SkillFile::parse_bytes(&bytes).unwrap_or_else(|e| panic!("{folder}: {e:?}"));
        let errors: Vec<_> = skill.validate(Some(&folder)).into_iter().filter(|v| !v.lenient).collect();
        assert!(errors.is_empty(), "{folder}: {errors:?}");
        let text = skill.to_text();
        let again = SkillFile::parse(&text).unwrap_or_else(|e| panic!("{folder} re-read: {e:?}\n{text}"));
        assert!(same_content(&skill.fields, &again.fields), "{folder}: frontmatter changed in the round trip");
        assert_eq!(again.body, skill.body, "{folder}: body changed");
        assert_eq!(again.to_text(), text, "{folder}: serialization is not deterministic");
        let secrets = self_evolve_plugin::library::guards::scan::scan_secrets(&String::from_utf8_lossy(&bytes));
        assert!(secrets.is_empty(), "{folder}: false positives {secrets:?}");
    }
}
