//! Offline checks of skill folders, for `self-evolve check`: the format rules as errors (the
//! description limit as a warning, as published skills exceed it), credentials as errors,
//! destructive idioms, advice and near-duplicates as warnings.

use crate::library::acknowledge;
use crate::library::dedupe::{Candidate, Index, Terms, Vocabulary};
use crate::library::lint::{self, Severity as LintSeverity};
use crate::library::skillfile::SkillFile;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInput {
    pub path: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillInput {
    pub folder: String,
    pub skill_md: FileInput,
    pub resources: Vec<FileInput>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Advice,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub rule: String,
    pub severity: Severity,
    pub message: String,
}

fn finding(path: &str, line: usize, rule: &str, severity: Severity, message: String) -> Finding {
    Finding {
        path: path.to_string(),
        line: u32::try_from(line).unwrap_or(u32::MAX),
        rule: rule.to_string(),
        severity,
        message,
    }
}

fn from_lint(path: &str, f: &lint::Finding) -> Finding {
    let severity = match f.severity {
        LintSeverity::Secret => Severity::Error,
        LintSeverity::Warning => Severity::Warning,
        LintSeverity::Advice => Severity::Advice,
    };
    finding(path, f.line, f.rule, severity, f.message.clone())
}

/// Checks every skill; near-duplicates are scored across the whole set.
pub fn check(skills: &[SkillInput], duplicate_threshold: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut candidates: Vec<(String, Candidate)> = Vec::new();
    for skill in skills {
        let path = &skill.skill_md.path;
        // Values the operator accepted as not credentials (`metadata.accepted-findings`).
        let mut acknowledged: Vec<String> = Vec::new();
        match SkillFile::parse_bytes(&skill.skill_md.bytes) {
            Err(e) => out.push(finding(path, e.line.unwrap_or(0), "invalid-frontmatter", Severity::Error, e.message)),
            Ok(parsed) => {
                acknowledged = acknowledge::of(&parsed);
                for v in parsed.validate(Some(&skill.folder)) {
                    let severity = if v.lenient { Severity::Warning } else { Severity::Error };
                    out.push(finding(path, 1, v.rule, severity, v.message));
                }
                let description = parsed.description().unwrap_or_default().to_string();
                out.extend(lint::advise(&description, &parsed.body).iter().map(|f| from_lint(path, f)));
                candidates.push((path.clone(), Candidate { name: skill.folder.clone(), description }));
            }
        }
        for file in std::iter::once(&skill.skill_md).chain(&skill.resources) {
            // Valid UTF-8 (nearly always) is borrowed after the fast check; only a file with bad
            // bytes pays for the lossy copy.
            let text = match std::str::from_utf8(&file.bytes) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(&file.bytes),
            };
            let secrets = acknowledge::unacknowledged(crate::library::scan::scan_secrets(&text), &acknowledged);
            out.extend(secrets.iter().map(|f| from_lint(&file.path, f)));
            out.extend(lint::scan_destructive(&text).iter().map(|f| from_lint(&file.path, f)));
        }
    }
    // Each pair once: every skill against all, reporting a pair on the later skill.
    let mut vocabulary = Vocabulary::default();
    let terms: Vec<Terms> =
        candidates.iter().map(|(_, c)| Terms::of(&mut vocabulary, &c.name, &c.description)).collect();
    let entries: Vec<(&str, &Terms)> = candidates.iter().zip(&terms).map(|((_, c), t)| (c.name.as_str(), t)).collect();
    let index = Index::from_terms(&vocabulary, &entries);
    let scorer = index.scorer();
    for (i, (path, candidate)) in candidates.iter().enumerate() {
        for m in scorer.closest_to(i, 4) {
            let earlier = candidates[..i].iter().any(|(_, c)| c.name == m.name);
            if earlier && m.score >= duplicate_threshold {
                out.push(finding(
                    path,
                    1,
                    "near-duplicate",
                    Severity::Warning,
                    format!(
                        "`{}` is similar to `{}` (score {:.2}); consider merging them",
                        candidate.name, m.name, m.score
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn skill(folder: &str, text: &str) -> SkillInput {
        SkillInput {
            folder: folder.into(),
            skill_md: FileInput { path: format!("{folder}/SKILL.md"), bytes: text.as_bytes().to_vec() },
            resources: vec![],
        }
    }

    #[test]
    fn reports_format_errors_secrets_warnings_and_near_duplicates() {
        let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
        let mut with_secret = skill(
            "deploy",
            "---\nname: deploy\ndescription: Deploy with docker compose to staging. Use when deploying.\n---\nrm -rf /\n",
        );
        with_secret.resources.push(FileInput {
            path: "deploy/scripts/env.sh".into(),
            bytes: format!("export AWS={key}\n").into_bytes(),
        });
        let skills = vec![
            with_secret,
            skill(
                "docker-deploy",
                "---\nname: docker-deploy\ndescription: Deploying with docker compose to staging. Use when deploying.\n---\nx\n",
            ),
            skill("wrong-folder", "---\nname: other\ndescription: Something. Use when needed.\n---\nbody\n"),
            skill("broken", "no frontmatter"),
        ];
        let findings = check(&skills, 0.7);
        let has = |path: &str, rule: &str, severity: Severity| {
            findings.iter().any(|f| f.path == path && f.rule == rule && f.severity == severity)
        };
        assert!(has("deploy/scripts/env.sh", "aws-access-key-id", Severity::Error), "{findings:#?}");
        assert!(has("deploy/SKILL.md", "rm-rf-root", Severity::Warning));
        assert!(has("docker-deploy/SKILL.md", "near-duplicate", Severity::Warning));
        assert!(has("wrong-folder/SKILL.md", "name-folder", Severity::Error));
        assert!(has("broken/SKILL.md", "invalid-frontmatter", Severity::Error));
        assert!(findings.iter().all(|f| !f.message.contains(&key)), "secrets are never echoed");
    }
}
