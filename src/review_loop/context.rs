//! Where a finding points in the artifact: the diff lines around `file:line`, the lines of a
//! supporting document, a deliverable's quoted passage and its section. The falsifier reads
//! these; the drift guard compares claims with them.

use std::collections::HashMap;
use std::ops::Range;

/// Lines either side of the cited line (seed 003, Step 5: "±10 lines").
pub const RADIUS: usize = 10;
/// Longest context handed to a falsifier, in bytes.
const MAX_CONTEXT: usize = 8 * 1024;

/// Every file's part of a unified diff, by path (the `+++` side, else the `---` side), found in
/// one pass.
pub fn diff_sections(diff: &str) -> HashMap<String, Range<usize>> {
    let git = diff.starts_with("diff --git ") || diff.contains("\ndiff --git ");
    // (start, names) of each file's part; each ends where the next starts.
    let mut parts: Vec<(usize, Vec<String>)> = Vec::new();
    let mut offset = 0;
    for line in diff.split_inclusive('\n') {
        let header = if git { line.starts_with("diff --git ") } else { line.starts_with("--- ") };
        if header {
            parts.push((offset, Vec::new()));
        }
        if let Some((_, names)) = parts.last_mut()
            && (line.starts_with("+++ ") || line.starts_with("--- "))
            && let Some(path) = line[4..].split_whitespace().next()
        {
            let path = path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(path);
            if path != "/dev/null" && !names.iter().any(|n| n == path) {
                names.push(path.to_string());
            }
        }
        offset += line.len();
    }
    let mut out = HashMap::new();
    for (i, (start, names)) in parts.iter().enumerate() {
        let end = parts.get(i + 1).map_or(diff.len(), |(next, _)| *next);
        for name in names {
            out.entry(name.clone()).or_insert(*start..end);
        }
    }
    out
}

/// The part of a unified diff about `file` (one lookup; callers with many use `diff_sections`).
pub fn diff_section<'a>(diff: &'a str, file: &str) -> Option<&'a str> {
    diff_sections(diff).get(file.trim_start_matches("./")).map(|r| &diff[r.clone()])
}

/// ±`RADIUS` diff lines around the line that is (or is nearest to) new-file line `line`.
pub fn diff_window(section: &str, line: u32) -> Option<String> {
    let range = diff_window_range(section, line)?;
    Some(clip(section[range].trim_end_matches('\n').to_string()))
}

/// Byte range (within `section`) of the ±`RADIUS` diff lines around new-file line `line`.
pub fn diff_window_range(section: &str, line: u32) -> Option<Range<usize>> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    let mut new_line: Option<u32> = None;
    let mut best: Option<(u32, usize)> = None;
    for text in section.split_inclusive('\n') {
        let i = starts.len();
        starts.push(offset);
        offset += text.len();
        if let Some(rest) = text.strip_prefix("@@ ") {
            new_line = hunk_new_start(rest);
            continue;
        }
        let Some(current) = new_line else { continue };
        if text.starts_with('-') {
            continue;
        }
        let distance = current.abs_diff(line);
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, i));
        }
        new_line = Some(current + 1);
    }
    let (_, at) = best?;
    let from = starts[at.saturating_sub(RADIUS)];
    let to = starts.get(at + RADIUS + 1).copied().unwrap_or(section.len());
    Some(from..to)
}

/// `-a,b +c,d @@` → c.
fn hunk_new_start(rest: &str) -> Option<u32> {
    let plus = rest.split_whitespace().find(|p| p.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

/// ±`RADIUS` lines of a plain text around 1-based `line` (the start when `line` is past the end).
pub fn text_window(text: &str, line: Option<u32>) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = line.map_or(0, |l| (l as usize).saturating_sub(1)).min(lines.len().saturating_sub(1));
    if line.is_none() {
        return clip(lines.iter().take(2 * RADIUS + 1).copied().collect::<Vec<_>>().join("\n"));
    }
    window(&lines, at)
}

fn window(lines: &[&str], at: usize) -> String {
    let from = at.saturating_sub(RADIUS);
    let to = (at + RADIUS + 1).min(lines.len());
    clip(lines[from..to].join("\n"))
}

/// The markdown section holding byte offset `at`: from the heading before it to the next heading.
pub fn section_at(text: &str, at: usize) -> &str {
    let mut start = 0;
    let mut end = text.len();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with('#') {
            if offset <= at {
                start = offset;
            } else {
                end = offset;
                break;
            }
        }
        offset += line.len();
    }
    &text[start..end]
}

/// The section whose heading text contains `heading` (case-insensitive).
pub fn section_named<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let wanted = heading.trim().trim_start_matches('#').trim().to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with('#') && line.trim_start_matches('#').trim().to_lowercase().contains(&wanted) {
            return Some(section_at(text, offset));
        }
        offset += line.len();
    }
    None
}

/// Where a quoted passage sits in a text: exact first, then ignoring case and runs of spaces.
pub fn find_passage(text: &str, passage: &str) -> Option<usize> {
    let passage = passage.trim().trim_matches('"');
    if passage.is_empty() {
        return None;
    }
    if let Some(at) = text.find(passage) {
        return Some(at);
    }
    // A loose match on the passage's first line, which models quote most faithfully.
    let first = passage.lines().next()?.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase().contains(&first) {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

pub fn clip(mut text: String) -> String {
    if text.len() > MAX_CONTEXT {
        let mut cut = MAX_CONTEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n…");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,4 @@\n fn a() {}\n-fn b() {}\n+fn b(x: u32) {}\n+fn c() {}\n fn d() {}\ndiff --git a/src/z.rs b/src/z.rs\n--- a/src/z.rs\n+++ b/src/z.rs\n@@ -40,2 +40,2 @@\n-old\n+new\n";

    #[test]
    fn sections_and_windows_of_a_diff() {
        let a = diff_section(DIFF, "src/a.rs").unwrap();
        assert!(a.contains("fn c()") && !a.contains("src/z.rs"));
        let z = diff_section(DIFF, "src/z.rs").unwrap();
        assert!(z.contains("+new"));
        assert!(diff_section(DIFF, "src/missing.rs").is_none());
        let all = diff_sections(DIFF);
        assert_eq!((&DIFF[all["src/a.rs"].clone()], &DIFF[all["src/z.rs"].clone()]), (a, z));
        let w = diff_window(a, 3).unwrap();
        assert!(w.contains("+fn c() {}"));
        assert!(diff_window(z, 41).unwrap().contains("+new"));
    }

    #[test]
    fn markdown_sections_and_passages() {
        let doc = "# Title\nintro\n## Costs\nwe spent 4 units\n## Plan\nnext steps\n";
        let at = find_passage(doc, "We  spent 4 units").unwrap();
        assert_eq!(section_at(doc, at), "## Costs\nwe spent 4 units\n");
        assert_eq!(section_named(doc, "plan"), Some("## Plan\nnext steps\n"));
        assert!(find_passage(doc, "not here").is_none());
    }

    #[test]
    fn text_windows_clamp() {
        let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let w = text_window(&text, Some(25));
        assert!(w.starts_with("line 15") && w.ends_with("line 35"));
        assert!(text_window(&text, Some(999)).ends_with("line 50"));
        assert!(text_window(&text, None).starts_with("line 1\n"));
    }
}
