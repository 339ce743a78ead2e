//! Offline checks of skill folders, for `self-evolve check`: the format rules as errors (the
//! description limit as a warning, as published skills exceed it), credentials as errors,
//! destructive idioms, advice and near-duplicates as warnings.

use crate::library::dedupe::{Index, Terms, Vocabulary};
use crate::library::guards::acknowledge;
use crate::library::guards::finding::{Finding as ContentFinding, Severity as LintSeverity};
use crate::library::guards::lint;
use crate::library::storage::skillfile::SkillFile;

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

fn from_lint(path: &str, f: &ContentFinding) -> Finding {
    let severity = match f.severity {
        LintSeverity::Secret => Severity::Error,
        LintSeverity::Warning => Severity::Warning,
        LintSeverity::Advice => Severity::Advice,
    };
    finding(path, f.line, f.rule, severity, f.message.clone())
}

/// Checks every skill; near-duplicates are scored across the whole set.
pub fn check(skills: &[SkillInput], duplicate_threshold: f64) -> Vec<Finding> {
    let mut run = Run::default();
    let mut out = run.add(skills);
    out.extend(run.duplicates(duplicate_threshold));
    out
}

/// A check in batches, for libraries too large for one call: each batch's files are checked
/// at once and dropped; only each skill's path, name and interned terms stay for the
/// near-duplicate pass at the end (tens of bytes per skill, whatever the files weigh).
#[derive(Default)]
pub struct Run {
    vocabulary: Vocabulary,
    /// (SKILL.md path, name, terms) of every skill batched so far, in order.
    skills: Vec<(String, String, Terms)>,
}

impl Run {
    /// Checks one batch: format, credentials, destructive idioms, advice. No near-duplicates.
    pub fn add(&mut self, skills: &[SkillInput]) -> Vec<Finding> {
        let mut out = Vec::new();
        for skill in skills {
            let path = &skill.skill_md.path;
            // Values the operator accepted as not credentials (`metadata.accepted-findings`).
            let mut acknowledged: Vec<String> = Vec::new();
            match SkillFile::parse_bytes(&skill.skill_md.bytes) {
                Err(e) => {
                    out.push(finding(path, e.line.unwrap_or(0), "invalid-frontmatter", Severity::Error, e.message))
                }
                Ok(parsed) => {
                    acknowledged = acknowledge::of(&parsed);
                    for v in parsed.validate(Some(&skill.folder)) {
                        let severity = if v.lenient { Severity::Warning } else { Severity::Error };
                        out.push(finding(path, 1, v.rule, severity, v.message));
                    }
                    let description = parsed.description().unwrap_or_default();
                    out.extend(lint::advise(description, &parsed.body).iter().map(|f| from_lint(path, f)));
                    let terms = Terms::of(&mut self.vocabulary, &skill.folder, description);
                    self.skills.push((path.clone(), skill.folder.clone(), terms));
                }
            }
            for file in std::iter::once(&skill.skill_md).chain(&skill.resources) {
                // Valid UTF-8 (nearly always) is borrowed after the fast check; only a file with
                // bad bytes pays for the lossy copy.
                let text = match std::str::from_utf8(&file.bytes) {
                    Ok(text) => std::borrow::Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(&file.bytes),
                };
                let secrets =
                    acknowledge::unacknowledged(crate::library::guards::scan::scan_secrets(&text), &acknowledged);
                out.extend(secrets.iter().map(|f| from_lint(&file.path, f)));
                out.extend(lint::scan_destructive(&text).iter().map(|f| from_lint(&file.path, f)));
            }
        }
        out
    }

    /// Near-duplicates among every skill batched so far, each pair once (on the later skill,
    /// naming the earlier one and its path); then starts over.
    pub fn duplicates(&mut self, threshold: f64) -> Vec<Finding> {
        let Run { vocabulary, skills } = std::mem::take(self);
        let entries: Vec<(&str, &Terms)> = skills.iter().map(|(_, name, terms)| (name.as_str(), terms)).collect();
        let index = Index::from_terms(&vocabulary, &entries);
        index
            .scorer()
            .pairs(threshold)
            .into_iter()
            .map(|pair| {
                let (path, name, _) = &skills[pair.later];
                let (other_path, other, _) = &skills[pair.earlier];
                finding(
                    path,
                    1,
                    "near-duplicate",
                    Severity::Warning,
                    format!(
                        "`{name}` is similar to `{other}` ({other_path}, score {:.2}); consider merging them",
                        pair.score
                    ),
                )
            })
            .collect()
    }
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

    #[test]
    fn a_reworded_twin_is_a_near_duplicate_across_batches() {
        let a = skill(
            "aa-tls-cert-rotation",
            "---\nname: aa-tls-cert-rotation\ndescription: Rotate expiring TLS certificates on the load balancer.\n---\nbody\n",
        );
        let b = skill(
            "zz-renew-load-balancer-certs",
            "---\nname: zz-renew-load-balancer-certs\ndescription: Renewing the load balancer's TLS certs before they expire.\n---\nbody\n",
        );
        let mut run = Run::default();
        assert!(run.add(std::slice::from_ref(&a)).iter().all(|f| f.rule != "near-duplicate"));
        assert!(run.add(std::slice::from_ref(&b)).iter().all(|f| f.rule != "near-duplicate"));
        let found = run.duplicates(0.6);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].path, "zz-renew-load-balancer-certs/SKILL.md");
        assert!(found[0].message.contains("`aa-tls-cert-rotation` (aa-tls-cert-rotation/SKILL.md, score"), "{found:?}");
        assert!(run.duplicates(0.6).is_empty(), "the batches are forgotten after the pass");
    }
}
