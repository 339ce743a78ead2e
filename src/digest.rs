//! Fingerprints and diffs of byte strings: `sha256_hex`, what staged writes, version history,
//! review state and the audit compare, and `unified_diff`, what an operator reads and `git apply`
//! accepts. A utility at the ground floor: it uses nothing of the crate. (Not `schedule::digest`,
//! the digest of a session's turns.)

use sha2::{Digest, Sha256};

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`, by table: a session's folder is named by a hash at every event, and
/// `format!` per byte was a fifth of a replay's time in the component.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0F)]));
    }
    out
}

/// A unified diff from the scope root, for `git apply` / `patch -p1` run there.
pub fn unified_diff(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let old_text = old.map(String::from_utf8_lossy).unwrap_or_default();
    let new_text = new.map(String::from_utf8_lossy).unwrap_or_default();
    let a = if old.is_some() { format!("a/{path}") } else { "/dev/null".to_string() };
    let b = if new.is_some() { format!("b/{path}") } else { "/dev/null".to_string() };
    let diff = similar::TextDiff::from_lines(old_text.as_ref(), new_text.as_ref());
    let body = diff.unified_diff().context_radius(3).header(&a, &b).to_string();
    let mut out = format!("diff --git a/{path} b/{path}\n");
    if old.is_none() {
        out.push_str("new file mode 100644\n");
    } else if new.is_none() {
        out.push_str("deleted file mode 100644\n");
    }
    out.push_str(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn hex_by_table_is_what_format_gives() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex(&all), all.iter().map(|b| format!("{b:02x}")).collect::<String>());
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[]), "");
    }
}
