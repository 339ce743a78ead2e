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

#[cfg(test)]
mod tests {
    use super::{visible, visible_lines};

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
}
