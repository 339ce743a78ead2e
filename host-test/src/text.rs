//! Text shown to a person: control characters and the Unicode controls that reorder or hide
//! text (bidi overrides, zero-width marks) become visible escapes, so a hostile file name or
//! message cannot rewrite a terminal line or hide what it says.

use std::borrow::Cow;

fn hidden(c: char) -> bool {
    (c.is_control() && c != '\t') || self_evolve_scan::hides_text(c)
}

/// `text` with every hidden or control character written as `\u{…}`; unchanged (borrowed) when
/// there is none.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `visible` for text of several lines: each line escaped, the newlines between them kept.
pub fn visible_lines(text: &str) -> String {
    text.split('\n').map(visible).collect::<Vec<_>>().join("\n")
}

/// An error or log text for a person's stderr: credentials redacted (an error may quote a remote
/// URL with its password, or a file's line), then `visible_lines`.
pub fn shown_error(text: &str) -> String {
    visible_lines(&self_evolve_scan::redact_secrets(text).unwrap_or_else(|| text.to_string()))
}

/// `visible` for JSON a person may read on a terminal (`--json` answers): every hidden or control
/// character is written as a JSON escape (`\u202e`; a surrogate pair past U+FFFF), so a parser
/// reads the same value while a terminal obeys nothing. serde escapes only C0 controls, quotes
/// and backslashes; DEL, C1 controls (`\u{9b}` starts an escape sequence on some terminals),
/// bidi overrides and zero-width marks pass through it raw. A newline or tab outside a string
/// (pretty-printed JSON) is kept.
pub fn visible_json(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| hidden(c) && c != '\n';
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 12);
    for c in json.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{visible, visible_json, visible_lines};

    #[test]
    fn an_error_shown_has_its_credentials_redacted_and_its_escapes_visible() {
        let shown = super::shown_error("fetch https://ci:hunter2-Kq9vXz7@git.example.com/lib.git failed\n\x1b[2J");
        assert!(!shown.contains("hunter2-Kq9vXz7") && shown.contains("[redacted: password-in-url]"), "{shown}");
        assert!(shown.ends_with("\n\\u{1b}[2J"), "{shown}");
    }

    #[test]
    fn lines_keep_their_newlines_and_lose_their_carriage_returns() {
        assert_eq!(visible_lines("a\r\nb\x1b\n"), "a\\u{d}\nb\\u{1b}\n");
    }

    #[test]
    fn controls_and_bidi_overrides_become_escapes() {
        assert_eq!(visible("plain skill"), "plain skill");
        assert_eq!(visible("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(visible("line\nnext\r"), "line\\u{a}next\\u{d}");
        assert_eq!(visible("evil\u{202e}txt.md"), "evil\\u{202e}txt.md");
        assert_eq!(visible("zero\u{200b}width"), "zero\\u{200b}width");
    }

    #[test]
    fn separators_soft_hyphens_and_tag_characters_become_escapes() {
        assert_eq!(visible("a\u{2028}b\u{ad}c\u{e0041}"), "a\\u{2028}b\\u{ad}c\\u{e0041}");
        assert_eq!(visible("café ✓"), "café ✓");
    }

    #[test]
    fn json_keeps_its_value_and_shows_no_hidden_character() {
        let value = serde_json::json!({"name": "a\x1b[31m\x07\r\u{9b}\u{202e}\u{2066}\u{200b}\u{7f}\u{e0041}b"});
        for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            let shown = visible_json(&text);
            assert!(
                shown.chars().all(|c| c == '\n' || !(c.is_control() || self_evolve_scan::hides_text(c))),
                "{shown}"
            );
            assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), value, "the same value: {shown}");
        }
        assert!(visible_json(&value.to_string()).contains(r"\u202e\u2066\u200b\u007f\udb40\udc41"));
        assert!(matches!(visible_json(r#"{"plain":"café"}"#), std::borrow::Cow::Borrowed(_)));
    }
}
