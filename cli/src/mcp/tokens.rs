//! Per-person bearer tokens for `self-evolve serve`: made by `serve token add NAME` (shown once,
//! kept only as a SHA-256 under `serve.tokens` in `<home>/host.json`), revoked by `serve token
//! remove NAME`, and matched against a request's `Authorization: Bearer …` on every request, so
//! a revoked token stops working at once on a running server.
//!
//! Owns: the token format, the person-name rule, the edit of host.json's `serve.tokens` (under a
//! lock, so two edits at once both land) and the constant-time match.

use crate::home::host_file::{HostFile, PERSON_RULE, ServeToken, valid_person};
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

/// What a token starts with, so a scanner (ours included) and a person can tell one apart.
const PREFIX: &str = "sevt_";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The person whose token `bearer` is, comparing against every token in time that does not
/// depend on where the bytes differ.
pub fn person<'a>(tokens: &'a [ServeToken], bearer: &str) -> Option<&'a str> {
    let wanted = digest(bearer);
    let mut found = None;
    for token in tokens {
        // Every byte compared, whatever differs first.
        if token.sha256.iter().zip(&wanted).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0 {
            found = Some(token.person.as_str());
        }
    }
    found
}

/// The token of an `Authorization` header's value (`Bearer TOKEN`, the scheme in any case).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Makes a token for `person`, keeps its hash, and returns the token (shown once).
pub fn add(home: &Path, person: &str) -> Result<String> {
    if !valid_person(person) {
        bail!("`{}`: {PERSON_RULE}", self_evolve_host::text::visible(person));
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random bytes from the OS: {e}"))?;
    let token = format!("{PREFIX}{}", hex(&bytes));
    let sha = hex(&digest(&token));
    edit(home, |tokens| {
        if tokens.contains_key(person) {
            bail!("`{person}` has a token already: remove it first (`self-evolve serve token remove {person}`)");
        }
        let created_ms = self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock);
        tokens.insert(person.to_string(), json!({"sha256": sha, "createdMs": created_ms}));
        Ok(())
    })?;
    Ok(token)
}

/// Revokes `person`'s token.
pub fn remove(home: &Path, person: &str) -> Result<()> {
    edit(home, |tokens| match tokens.remove(person) {
        Some(_) => Ok(()),
        None => bail!(
            "`{}` has no token (`self-evolve serve token list` shows who has)",
            self_evolve_host::text::visible(person)
        ),
    })
}

/// The people with a token.
pub fn list(home: &Path) -> Result<Vec<String>> {
    Ok(HostFile::load(home)?.serve_tokens.into_iter().map(|t| t.person).collect())
}

/// Edits `serve.tokens` of host.json under `host.json.lock` (created new; waited for up to 5 s),
/// read afresh inside the lock, checked as a whole before it replaces the file.
fn edit(home: &Path, change: impl FnOnce(&mut Map<String, Value>) -> Result<()>) -> Result<()> {
    let path = home.join("host.json");
    let lock = home.join("host.json.lock");
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&lock) {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                bail!("{} is held by another edit; if none runs, remove it and retry", lock.display())
            }
            Err(e) => return Err(e).with_context(|| format!("creating {}", lock.display())),
        }
    }
    let result = (|| {
        let mut file: Value = match crate::home::files::read_config(&path, 1 << 20)? {
            Some(bytes) => serde_json::from_slice(&bytes).with_context(|| format!("{} is not JSON", path.display()))?,
            None => json!({}),
        };
        let Some(top) = file.as_object_mut() else { bail!("{} must be a JSON object", path.display()) };
        let serve = top.entry("serve").or_insert_with(|| json!({}));
        let Some(serve) = serve.as_object_mut() else { bail!("`serve` in {} must be an object", path.display()) };
        let tokens = serve.entry("tokens").or_insert_with(|| json!({}));
        let Some(tokens) = tokens.as_object_mut() else {
            bail!("`serve.tokens` in {} must be an object", path.display())
        };
        change(tokens)?;
        HostFile::from_json(&file).with_context(|| format!("in {}", path.display()))?;
        let mut text = serde_json::to_vec_pretty(&file)?;
        text.push(b'\n');
        crate::home::files::write_atomic(&path, &text)
    })();
    let _ = std::fs::remove_file(&lock);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_hashed_matched_and_revoked() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("host.json"), r#"{"hook": {"budgetMs": 5000}}"#).unwrap();
        let alice = add(home.path(), "alice").unwrap();
        let bob = add(home.path(), "bob").unwrap();
        assert!(alice.starts_with(PREFIX) && alice.len() == PREFIX.len() + 64);
        let text = std::fs::read_to_string(home.path().join("host.json")).unwrap();
        assert!(!text.contains(&alice) && !text.contains(&bob), "only hashes are kept: {text}");
        assert!(text.contains("budgetMs"), "the rest of host.json is kept: {text}");
        let tokens = HostFile::load(home.path()).unwrap().serve_tokens;
        assert_eq!(person(&tokens, &alice), Some("alice"));
        assert_eq!(person(&tokens, &bob), Some("bob"));
        assert_eq!(person(&tokens, "sevt_0000"), None);
        assert!(add(home.path(), "alice").is_err(), "one token a person");
        remove(home.path(), "alice").unwrap();
        let tokens = HostFile::load(home.path()).unwrap().serve_tokens;
        assert_eq!(person(&tokens, &alice), None);
        assert_eq!(list(home.path()).unwrap(), ["bob"]);
        assert!(remove(home.path(), "alice").is_err());
    }

    #[test]
    fn a_bad_name_or_file_is_refused_and_nothing_changes() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("host.json");
        for name in ["", "Alice", "-x", "a b", "a/b", &"x".repeat(65)] {
            assert!(add(home.path(), name).is_err(), "{name:?}");
        }
        assert!(!path.exists(), "no host.json was made");
        std::fs::write(&path, r#"{"hook": {"budgetMs": 1}}"#).unwrap();
        assert!(add(home.path(), "alice").is_err(), "an invalid host.json stays as it is");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"hook": {"budgetMs": 1}}"#);
        assert!(!home.path().join("host.json.lock").exists());
        let bad = r#"{"serve": {"tokens": {"alice": {"sha256": "XYZ"}}}}"#;
        assert!(HostFile::from_json(&serde_json::from_str(bad).unwrap()).is_err());
    }

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
    }
}
