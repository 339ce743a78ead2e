//! Archiving a skill: the moves that take it out of its root into `archive/` in the state root
//! (`archive_location`, for the agent's archive, its approval, the operator's and the curator's),
//! and what a staged archive records so that its approval archives exactly the skill the operator
//! read: the digest of every file (`digest`) and a diff removing each one (`staged`).

use crate::digest::{sha256_hex, unified_diff};
use crate::errors::ToolError;
use crate::host::{Host, Root};
use crate::library::guards::scan::redact_secrets;
use crate::library::storage::cleanup;
use crate::library::storage::debris;
use crate::library::storage::store::{Layout, Location, Store, fs_error};
use crate::state_file;
use crate::time;
use serde_json::json;

/// What a staged archive shows and keeps: the skill's files (relative to the skill), their
/// digest, and the diff the operator reads.
pub struct Staged {
    pub files: Vec<String>,
    pub digest: String,
    pub diff: String,
}

/// Every file of the skill, as `archive_location` moves them: (path inside the root, path
/// inside the skill, bytes). A flat skill is its one file.
fn contents(store: &Store<impl Host>, location: &Location) -> Result<Vec<(String, String, Vec<u8>)>, ToolError> {
    let files: Vec<(String, String)> = match location.layout {
        Layout::Package => store
            .package_files(&location.root, &location.name)?
            .into_iter()
            .map(|f| (format!("{}/{f}", location.name), f))
            .collect(),
        Layout::Flat => vec![(location.path(), location.path())],
    };
    files
        .into_iter()
        .map(|(path, inside)| {
            let bytes = store.read(&location.root, &path)?;
            Ok((path, inside, bytes))
        })
        .collect()
}

fn digest_of(contents: &[(String, String, Vec<u8>)]) -> String {
    let lines: String = contents.iter().map(|(path, _, bytes)| format!("{path}\t{}\n", sha256_hex(bytes))).collect();
    sha256_hex(lines.as_bytes())
}

/// The digest of every file of the skill (paths and contents): any file changed, added or
/// removed changes it.
pub fn digest(store: &Store<impl Host>, location: &Location) -> Result<String, ToolError> {
    Ok(digest_of(&contents(store, location)?))
}

/// The files, digest and diff of an archive of the skill at `location` for `reason`. The diff
/// opens with what the archive does (comment lines, which `git apply` and `patch` skip), then
/// removes every file; a credential on disk is shown redacted, as in every diff kept or shown.
pub fn staged(store: &Store<impl Host>, location: &Location, reason: &str) -> Result<Staged, ToolError> {
    let contents = contents(store, location)?;
    let name = &location.name;
    let mut diff = format!(
        "# archive `{name}` ({} scope): every file below leaves the skills folder for archive/ in the state \
         root; `/skills restore {name}` brings it back\n",
        location.scope.as_str()
    );
    if !reason.is_empty() {
        // One line, whatever the agent wrote: a line break must not start a diff of its own.
        diff.push_str(&format!("# reason: {}\n", reason.replace('\n', "\\u{a}").replace('\r', "\\u{d}")));
    }
    diff.push_str(&removal_diff(&contents));
    let diff = redact_secrets(&diff).unwrap_or(diff);
    Ok(Staged {
        files: contents.iter().map(|(_, inside, _)| inside.clone()).collect(),
        digest: digest_of(&contents),
        diff,
    })
}

/// A diff removing every file, each text redacted before its diff is built: a credential is
/// found in the file as written, never only in the diff's `-` lines (a PEM key, a token at a
/// line's start read differently with a prefix on every line).
fn removal_diff(contents: &[(String, String, Vec<u8>)]) -> String {
    let mut diff = String::new();
    for (path, _, bytes) in contents {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                let redacted = redact_secrets(text);
                let text = redacted.as_deref().unwrap_or(text);
                diff.push_str(&unified_diff(path, Some(text.as_bytes()), None));
            }
            Err(_) => diff.push_str(&format!(
                "diff --git a/{path} b/{path}\ndeleted file mode 100644\nBinary files a/{path} and /dev/null differ\n"
            )),
        }
    }
    diff
}

/// Archives a skill by moves, never copy-then-delete of the live skill: the files are copied into
/// a hidden `archive/.partial-…` folder, published with one rename, and then the skill leaves its
/// root with one rename to a hidden `.NAME.archived-…` entry that is removed afterwards. A crash at
/// any point leaves the skill whole or gone, never half; what a dead call leaves is hidden debris
/// that `cleanup` removes. Returns the archive folder. The caller holds the skill's `lock`; the
/// copy renews it.
pub fn archive_location(
    host: &impl Host,
    session: &str,
    location: &Location,
    reason: &str,
    lock: &mut state_file::Lock,
) -> Result<String, ToolError> {
    let store = Store::new(host, session);
    let now = host.now_ms();
    let folder = format!("archive/{}-{now}", location.name);
    let partial = format!("archive/{}{}-{now}", debris::PARTIAL_PREFIX, location.name);
    let files: Vec<(String, String)> = match location.layout {
        Layout::Package => store
            .package_files(&location.root, &location.name)?
            .into_iter()
            .map(|f| (format!("{}/{f}", location.name), format!("{partial}/{f}")))
            .collect(),
        Layout::Flat => vec![(location.path(), format!("{partial}/SKILL.md"))],
    };
    let note = json!({
        "name": location.name,
        "scope": location.scope.as_str(),
        "layout": if location.layout == Layout::Package { "package" } else { "flat" },
        "session": session,
        "archivedAt": time::iso(now),
        "reason": reason,
    });
    let mut copy = || -> Result<(), ToolError> {
        for (from, to) in &files {
            let bytes = store.read(&location.root, from)?;
            host.write(&Root::State, to, &bytes, crate::host::WriteMode::CreateNew).map_err(|e| fs_error(e, to))?;
            // A big package takes longer to copy than an unrenewed lock lives. A lock lost
            // meanwhile means another process may be changing the skill: it is not moved away.
            if !lock.refresh(host) {
                return Err(state_file::conflict(&location.name));
            }
        }
        let note_path = format!("{partial}/archived.json");
        host.write(&Root::State, &note_path, note.to_string().as_bytes(), crate::host::WriteMode::CreateNew)
            .map_err(|e| fs_error(e, &note_path))?;
        host.rename(&Root::State, &partial, &folder).map_err(|e| fs_error(e, &folder))
    };
    // A withdrawn copy leaves no trace of its own. `archive/` stays, even when this copy was its
    // first and it is empty now: it is shared, and removing it could pull it from under another
    // process's first copy that has just made it (a write opens the folder, then creates its
    // entry there). An empty archive folder is harmless.
    let withdraw = |copied: &str| cleanup::remove_tree(host, &Root::State, copied);
    if let Err(err) = copy() {
        withdraw(&partial);
        return Err(err);
    }
    let debris = debris::retired_name(&location.path_in_root(), now);
    if let Err(err) = host.rename(&location.root, &location.path_in_root(), &debris) {
        // The skill stays where it was; the archive copy is withdrawn.
        withdraw(&folder);
        return Err(fs_error(err, &location.path_in_root()));
    }
    cleanup::remove_tree(host, &location.root, &debris);
    Ok(folder)
}

#[cfg(test)]
mod tests {
    use super::removal_diff;

    /// A PEM key's text, made at run time (this file holds no scannable literal).
    fn key(seed: usize) -> (String, Vec<String>) {
        const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let body: Vec<String> = (0..8)
            .map(|l| (0..64).map(|i| char::from(B64[(i * 37 + l * 11 + seed * 7 + i * i * 3) % 64])).collect())
            .collect();
        let label = ["RSA", "PRIVATE", "KEY"].join(" ");
        (format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", body.join("\n")), body)
    }

    #[test]
    fn each_file_is_redacted_before_its_removal_diff_is_built() {
        let (pem, body) = key(1);
        let text = format!("# Deploy\n\nUse this key:\n{pem}Then rotate it.\n");
        let contents = vec![
            ("deploy/SKILL.md".to_string(), "SKILL.md".to_string(), text.into_bytes()),
            ("deploy/bin.dat".to_string(), "bin.dat".to_string(), vec![0xff, 0xfe, 0]),
        ];
        let diff = removal_diff(&contents);
        for line in &body {
            assert!(!diff.contains(&line[..16]), "a body line survived:\n{diff}");
        }
        assert!(!diff.contains("-----END"), "the END line survived:\n{diff}");
        // The diff's shape is kept: headers, every line removed, the prose around the key.
        for kept in [
            "diff --git a/deploy/SKILL.md b/deploy/SKILL.md\ndeleted file mode 100644\n",
            "--- a/deploy/SKILL.md\n+++ /dev/null\n",
            "-# Deploy\n",
            "-Use this key:\n-[redacted: private-key]\n-Then rotate it.\n",
            "Binary files a/deploy/bin.dat and /dev/null differ\n",
        ] {
            assert!(diff.contains(kept), "{kept:?} missing:\n{diff}");
        }
    }
}
