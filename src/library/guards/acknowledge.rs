//! Operator acknowledgements of scanner findings: a value the scanner takes for a credential and
//! the operator judges is not one (a test fixture, a documented sample the scanner does not
//! know) is named by its fingerprint (`rule@hash`, see `scan::fingerprint`) under the skill's
//! `metadata.accepted-findings`. Only an approval with `--accept-finding RULE` writes one; a
//! write by the agent keeps the list as it was on disk (one of the owned fields,
//! `SkillFile::keep_owned`), so an agent cannot acknowledge its own finding. Writes and `check`
//! then skip acknowledged values, and only those.

use crate::library::guards::finding::Finding;
use crate::library::storage::skillfile::SkillFile;

/// The metadata key holding the acknowledged fingerprints, comma-separated.
pub const META_KEY: &str = crate::library::storage::skillfile::meta::ACCEPTED_FINDINGS;

/// The fingerprints a skill's metadata acknowledges.
pub fn of(skill: &SkillFile) -> Vec<String> {
    skill
        .meta(META_KEY)
        .map(|list| list.split(',').map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect())
        .unwrap_or_default()
}

/// Adds `fingerprints` to the skill's acknowledgements (sorted, each once).
pub fn add(skill: &mut SkillFile, fingerprints: &[String]) {
    let mut all = of(skill);
    all.extend(fingerprints.iter().cloned());
    all.sort();
    all.dedup();
    skill.set_meta(META_KEY, &all.join(","));
}

/// The findings no acknowledgement covers.
pub fn unacknowledged(findings: Vec<Finding>, acknowledged: &[String]) -> Vec<Finding> {
    findings
        .into_iter()
        .filter(|f| f.fingerprint.as_ref().is_none_or(|fp| !acknowledged.iter().any(|a| a == fp)))
        .collect()
}
