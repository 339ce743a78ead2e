//! Characters that hide or reorder text on a person's screen while a model still reads them:
//! zero-width and direction marks, line and paragraph separators, the soft hyphen, the Arabic
//! letter mark, the Mongolian vowel separator, invisible operators, interlinear annotation, and
//! tag characters (invisible text). One list for every place that shows text to a person (the
//! plugin's `/skills` output and the host's CLI), which add control characters by their own
//! rule for newlines.

/// Whether `c` is one of those marks (control characters are the caller's to judge).
pub fn hides_text(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{00ad}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}
