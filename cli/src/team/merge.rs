//! What of this machine's version of a file the sync's merge did not take. Git replays the local
//! commits onto the remote's and merges what it can; where both sides changed the same (or
//! adjacent) lines, the remote's lines land. `unmerged` finds this machine's edits (base → local)
//! that the merged file lacks and applies them, line by line, to the merged file: a staged
//! conflict changes only what git could not merge and never takes out a teammate's line. The
//! bookkeeping every write stamps (`updated-at`, `version`, ...) is no conflict: the merged
//! file's stays (the remote's, as git settled it; approving re-stamps it).

use anyhow::{Context, Result, bail};
use std::path::Path;

/// Base lines `[start, end)` changed into the other side's lines `[from, to)`; `start == end`
/// is an insertion before base line `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hunk {
    pub start: usize,
    pub end: usize,
    pub from: usize,
    pub to: usize,
}

impl Hunk {
    fn inserts(&self) -> bool {
        self.start == self.end
    }
}

/// `metadata` keys of a SKILL.md the plugin stamps on every write or keeps from disk on every
/// edit: they differ on both sides of nearly every merge and carry nothing to review.
const BOOKKEEPING: &[&str] = &["updated-at", "version", "created-at", "library"];

/// `metadata` keys of a SKILL.md the operator sets (`/skills pin`, archive or restore, an
/// approval accepting findings) that a staged write cannot set: the plugin keeps the file's own.
const OPERATOR: &[&str] = &["pinned", "status", "accepted-findings"];

/// What sync does with one file both sides changed, once the merged version is in the tree.
#[derive(Debug, PartialEq, Eq)]
pub enum Left {
    /// Everything this machine changed is in the merged file.
    Nothing,
    /// Stage this against the merged file (`None`: the file's removal). `whole` is false when
    /// some local edit overlapped a teammate's in a way that cannot be placed line by line:
    /// the edit is added after the teammate's lines, and the whole local version stays kept.
    /// `note`: something of this machine's the staged write cannot carry (an operator's pin,
    /// status or accepted findings the merged file lacks): the whole local version stays kept.
    Stage { content: Option<Vec<u8>>, whole: bool, note: Option<String> },
    /// Nothing to stage, yet not everything local was merged: keep the local version (why).
    Keep(String),
}

/// The file `file` at the merge's base, at this machine's commit before the replay, and merged.
pub struct Versions<'a> {
    pub file: &'a str,
    pub base_rev: &'a str,
    pub local_rev: &'a str,
    pub merged_rev: &'a str,
    pub base: Option<&'a [u8]>,
    pub local: Option<&'a [u8]>,
    pub merged: Option<&'a [u8]>,
}

pub fn unmerged(root: &Path, v: &Versions) -> Left {
    if v.local == v.merged {
        return Left::Nothing;
    }
    let skill_file = v.file.split_once('/').is_some_and(|(_, rest)| rest == "SKILL.md");
    let (content, whole) = match (v.base, v.local, v.merged) {
        (Some(base), Some(local), Some(merged)) => {
            let hunks = hunks(root, v.base_rev, v.merged_rev, v.file)
                .and_then(|to_merged| Ok((to_merged, hunks(root, v.base_rev, v.local_rev, v.file)?)))
                // The bookkeeping this machine re-stamped is none of its edits: left out, it
                // cannot claim (and take out) a teammate's line added beside it.
                .map(|(to_merged, to_local)| match skill_file {
                    true => (to_merged, without_bookkeeping(base, local, to_local)),
                    false => (to_merged, to_local),
                });
            let carried = hunks.and_then(|(to_merged, to_local)| carry(base, merged, local, &to_merged, &to_local));
            match carried {
                Ok(carried) => (carried.bytes, carried.placed_all),
                Err(err) => return Left::Keep(format!("sync could not compare it with the merged file: {err:#}")),
            }
        }
        // Added on both sides: no common lines to go by, so this machine's version, whole.
        (None, Some(local), Some(_)) => (local.to_vec(), true),
        // Removed on the other side (a replay git settled): this machine's version, whole.
        (_, Some(local), None) => return Left::Stage { content: Some(local.to_vec()), whole: true, note: None },
        (_, None, _) => return Left::Stage { content: None, whole: true, note: None },
    };
    let merged = v.merged.unwrap_or_default();
    let (content, note) = match (skill_file, v.local) {
        (true, Some(local)) => {
            let content = keep_keys(&keep_bookkeeping(&content, merged), merged, OPERATOR, true);
            (content, operator_lost(v.file, local, merged))
        }
        _ => (content, None),
    };
    match (content == merged, whole, note) {
        (true, true, None) => Left::Nothing,
        (true, _, Some(note)) => Left::Keep(note),
        (true, false, None) => Left::Keep(
            "part of this machine's change overlaps a teammate's where it cannot be placed line by line".into(),
        ),
        (false, whole, note) => Left::Stage { content: Some(content), whole, note },
    }
}

/// `to_local` without the hunks that only re-stamp bookkeeping (every base and local line of
/// them a `BOOKKEEPING` entry).
fn without_bookkeeping(base: &[u8], local: &[u8], to_local: Vec<Hunk>) -> Vec<Hunk> {
    let entries = |text: &[u8]| -> Vec<usize> {
        metadata(&lines(text)).into_iter().filter(|(_, k)| BOOKKEEPING.contains(&k.as_str())).map(|(i, _)| i).collect()
    };
    let (in_base, in_local) = (entries(base), entries(local));
    to_local
        .into_iter()
        .filter(|h| !((h.start..h.end).all(|i| in_base.contains(&i)) && (h.from..h.to).all(|i| in_local.contains(&i))))
        .collect()
}

/// The operator's fields (`OPERATOR`) this machine's SKILL.md has that the merged one lacks or
/// has otherwise: what they were and the command that sets them again (`None`: none differ).
fn operator_lost(file: &str, local: &[u8], merged: &[u8]) -> Option<String> {
    let name = file.split_once('/').map_or(file, |(skill, _)| skill);
    let (mine, theirs) = (lines(local), lines(merged));
    let (mine_spans, their_spans) = (spans(&mine), spans(&theirs));
    let text = |lines: &[&[u8]], spans: &[(usize, usize, String)], key: &str| -> Option<String> {
        spans
            .iter()
            .find(|(_, _, k)| k == key)
            .map(|(a, b, _)| String::from_utf8_lossy(&lines[*a..*b].concat()).into_owned())
    };
    let mut lost = Vec::new();
    for key in OPERATOR {
        let (here, there) = (text(&mine, &mine_spans, key), text(&theirs, &their_spans, key));
        if here == there {
            continue;
        }
        let value =
            here.as_deref().and_then(|t| t.split_once(':')).map(|(_, v)| v.trim().trim_matches('"').to_string());
        let again = match (*key, value.as_deref()) {
            ("pinned", Some("true")) => format!("`self-evolve skills pin {name}`"),
            ("pinned", _) => format!("`self-evolve skills unpin {name}`"),
            ("status", Some("archived")) => format!("`self-evolve skills archive {name}`"),
            ("status", _) => format!("`self-evolve skills restore {name}`"),
            _ => "`self-evolve skills approve ID --accept-finding RULE` for each finding accepted here".to_string(),
        };
        let was = match &here {
            Some(t) => format!("`{}`", t.trim()),
            None => format!("no `{key}`"),
        };
        lost.push(format!("{was} (run {again} again)"));
    }
    (!lost.is_empty()).then(|| {
        format!(
            "this machine's {} is not in the merged file (a teammate's edit landed beside it) and a staged write \
             cannot set it: your whole version is kept",
            lost.join(", ")
        )
    })
}

/// `git diff` of `file` from `from` to `to` as hunks, an equal-sized replacement split line by
/// line (two consecutive lines edited are two line edits, not one block). Nothing the
/// repository configures changes what this reads: no external diff, no text conversion, no
/// fused hunks, binary read as text.
pub fn hunks(root: &Path, from: &str, to: &str, file: &str) -> Result<Vec<Hunk>> {
    let out = crate::git::git_bytes(
        root,
        &[
            "diff",
            "-U0",
            "--inter-hunk-context=0",
            "--histogram",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--text",
            "--no-renames",
            from,
            to,
            "--",
            file,
        ],
    )?;
    parse(&out)
}

/// The hunks of a `-U0` diff (only its `@@ -a,b +c,d @@` lines are read).
pub fn parse(diff: &[u8]) -> Result<Vec<Hunk>> {
    let mut hunks = Vec::new();
    for line in diff.split(|&b| b == b'\n') {
        let Some(rest) = line.strip_prefix(b"@@ -") else { continue };
        let rest = String::from_utf8_lossy(rest);
        let ranges = rest.split(" @@").next().unwrap_or("");
        let (old, new) = ranges.split_once(" +").with_context(|| format!("a hunk header sync cannot read: {rest}"))?;
        let ((start, end), (from, to)) = (range(old)?, range(new)?);
        let hunk = Hunk { start, end, from, to };
        if hunk.end - hunk.start == hunk.to - hunk.from {
            hunks.extend((0..hunk.end - hunk.start).map(|i| Hunk {
                start: start + i,
                end: start + i + 1,
                from: from + i,
                to: from + i + 1,
            }));
        } else {
            hunks.push(hunk);
        }
    }
    Ok(hunks)
}

/// `a[,b]` as the 0-based range `[a-1, a-1+b)`; `a,0` is the empty range after line `a`.
fn range(spec: &str) -> Result<(usize, usize)> {
    let bad = || format!("a hunk range sync cannot read: {spec}");
    let (first, count) = match spec.split_once(',') {
        Some((first, count)) => (first.parse::<usize>().with_context(bad)?, count.parse::<usize>().with_context(bad)?),
        None => (spec.parse::<usize>().with_context(bad)?, 1),
    };
    if count == 0 {
        return Ok((first, first));
    }
    let start = first.checked_sub(1).with_context(bad)?;
    Ok((start, start + count))
}

/// Lines with their endings (the last may have none).
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// Whether two hunks touch the same base lines: ranges that share a line, an insertion strictly
/// inside a range, two insertions at one place. Edits of neighbouring lines do not.
fn overlap(a: &Hunk, b: &Hunk) -> bool {
    match (a.inserts(), b.inserts()) {
        (false, false) => a.start < b.end && b.start < a.end,
        (true, true) => a.start == b.start,
        (true, false) => b.start < a.start && a.start < b.end,
        (false, true) => a.start < b.start && b.start < a.end,
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Carried {
    /// The merged file with this machine's edits that it lacked.
    pub bytes: Vec<u8>,
    /// Every local edit is in `bytes` as this machine made it.
    pub placed_all: bool,
}

/// The merged file with the local edits (`to_local`, from base) it lacks. A local edit of lines
/// nobody else changed is applied as it is; one of lines the merge changed too replaces the
/// merged lines when it covers every base line they replaced (so it takes out only lines this
/// machine took out or edited, in the teammate's wording); otherwise it is added after them,
/// taking nothing out, and `placed_all` says so.
pub fn carry(base: &[u8], merged: &[u8], local: &[u8], to_merged: &[Hunk], to_local: &[Hunk]) -> Result<Carried> {
    let (base, merged, local) = (lines(base), lines(merged), lines(local));
    #[derive(Clone, Copy, PartialEq)]
    enum Side {
        Merged,
        Local,
    }
    let mut all: Vec<(Hunk, Side)> = to_merged.iter().map(|h| (*h, Side::Merged)).collect();
    all.extend(to_local.iter().map(|h| (*h, Side::Local)));
    for (h, side) in &all {
        let other = if *side == Side::Merged { merged.len() } else { local.len() };
        if h.start > h.end || h.end > base.len() || h.from > h.to || h.to > other {
            bail!("a hunk outside the file ({h:?})");
        }
    }
    all.sort_by_key(|(h, side)| (h.start, h.end, *side == Side::Local));
    // Groups of hunks that overlap, in base order.
    let mut groups: Vec<Vec<(Hunk, Side)>> = Vec::new();
    for (h, side) in all {
        match groups.last_mut() {
            Some(group) if group.iter().any(|(g, _)| overlap(g, &h)) => group.push((h, side)),
            _ => groups.push(vec![(h, side)]),
        }
    }
    let mut out: Vec<&[u8]> = Vec::new();
    let mut placed_all = true;
    let mut pos = 0;
    for group in groups {
        let start = group.iter().map(|(h, _)| h.start).min().unwrap_or(pos);
        let end = group.iter().map(|(h, _)| h.end).max().unwrap_or(pos);
        if start < pos {
            bail!("hunks out of order");
        }
        out.extend_from_slice(&base[pos..start]);
        pos = end;
        let of = |side: Side| -> Vec<Hunk> { group.iter().filter(|(_, s)| *s == side).map(|(h, _)| *h).collect() };
        let (m, l) = (of(Side::Merged), of(Side::Local));
        let (mine, theirs) = (version(&base, &l, &local, start, end), version(&base, &m, &merged, start, end));
        let covered = |h: &Hunk| !h.inserts() && (h.start..h.end).all(|i| l.iter().any(|x| x.start <= i && i < x.end));
        if l.is_empty() || mine == theirs {
            out.extend(theirs);
        } else if m.is_empty() || m.iter().all(|h| covered(h) && h.to - h.from <= h.end - h.start) {
            // Every merged hunk here replaced base lines this machine changed too, adding none
            // of its own (an added teammate's line is never taken out by a local edit).
            out.extend(mine);
        } else {
            out.extend(theirs);
            for h in &l {
                out.extend_from_slice(&local[h.from..h.to]);
            }
            placed_all = false;
        }
    }
    out.extend_from_slice(&base[pos.min(base.len())..]);
    Ok(Carried { bytes: out.concat(), placed_all })
}

/// One side's lines for base lines `[start, end)`: its hunks there applied to the base.
fn version<'a>(base: &[&'a [u8]], hunks: &[Hunk], lines: &[&'a [u8]], start: usize, end: usize) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = start;
    for h in hunks {
        out.extend_from_slice(&base[at.min(h.start)..h.start]);
        out.extend_from_slice(&lines[h.from..h.to]);
        at = h.end;
    }
    out.extend_from_slice(&base[at.min(end)..end]);
    out
}

/// `text` (a SKILL.md) with the merged file's bookkeeping lines in place of its own.
pub fn keep_bookkeeping(text: &[u8], merged: &[u8]) -> Vec<u8> {
    keep_keys(text, merged, BOOKKEEPING, false)
}

/// `text` (a SKILL.md) with the merged file's `metadata` entries of `keys` (a value's
/// continuation lines too) in place of its own; `remove`: an entry the merged file lacks goes.
fn keep_keys(text: &[u8], merged: &[u8], keys: &[&str], remove: bool) -> Vec<u8> {
    let theirs_lines = lines(merged);
    let theirs = spans(&theirs_lines);
    let mine = lines(text);
    let mut out: Vec<&[u8]> = Vec::with_capacity(mine.len());
    let mut at = 0;
    for (start, end, key) in spans(&mine) {
        if !keys.contains(&key.as_str()) {
            continue;
        }
        match theirs.iter().find(|(_, _, k)| *k == key) {
            Some((a, b, _)) => {
                out.extend_from_slice(&mine[at..start]);
                out.extend_from_slice(&theirs_lines[*a..*b]);
            }
            None if remove => out.extend_from_slice(&mine[at..start]),
            None => out.extend_from_slice(&mine[at..end]),
        }
        at = end;
    }
    out.extend_from_slice(&mine[at..]);
    out.concat()
}

/// The `metadata` entries of a SKILL.md as line ranges `[start, end)` (a multi-line value's
/// continuation lines included), with their keys.
fn spans(lines: &[&[u8]]) -> Vec<(usize, usize, String)> {
    let continues =
        |line: &[u8]| line.strip_prefix(b"  ").is_some_and(|rest| rest.starts_with(b" ") || rest.starts_with(b"\t"));
    metadata(lines)
        .into_iter()
        .map(|(start, key)| {
            let end = (start + 1..lines.len()).find(|&i| !continues(lines[i])).unwrap_or(lines.len());
            (start, end, key)
        })
        .collect()
}

/// The `metadata` entries of a SKILL.md's frontmatter: (line index, key).
fn metadata(lines: &[&[u8]]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    if lines.first().is_none_or(|l| l.trim_ascii_end() != b"---") {
        return out;
    }
    let mut inside = false;
    for (index, line) in lines.iter().enumerate().skip(1) {
        if line.trim_ascii_end() == b"---" {
            break;
        }
        if line.starts_with(b" ") || line.starts_with(b"\t") {
            // An entry is indented by two (the plugin's emitter); deeper lines continue a value.
            let entry = line.strip_prefix(b"  ").filter(|rest| !rest.starts_with(b" ") && !rest.starts_with(b"\t"));
            if let (true, Some(entry)) = (inside, entry)
                && let Some(colon) = entry.iter().position(|&b| b == b':')
            {
                out.push((index, String::from_utf8_lossy(entry[..colon].trim_ascii()).into_owned()));
            }
        } else {
            inside = line.trim_ascii_end() == b"metadata:";
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(start: usize, end: usize, from: usize, to: usize) -> Hunk {
        Hunk { start, end, from, to }
    }

    fn text(lines: &[&str]) -> Vec<u8> {
        lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
    }

    #[test]
    fn hunk_headers_are_read_and_equal_replacements_split_by_line() {
        let diff = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@ a\n-b\n-c\n+B\n+C\n\
                     @@ -4,0 +5 @@ d\n+e\n@@ -6 +6,0 @@\n-f\n@@ -8,2 +7,3 @@\n";
        assert_eq!(parse(diff).unwrap(), [h(1, 2, 1, 2), h(2, 3, 2, 3), h(4, 4, 4, 5), h(5, 6, 6, 6), h(7, 9, 6, 9)]);
        assert!(parse(b"@@ -x +1 @@\n").is_err());
    }

    #[test]
    fn local_edits_the_merge_holds_are_not_carried_again() {
        // base a b c d e; teammate edited a, this machine d; git merged both.
        let base = text(&["a", "b", "c", "d", "e"]);
        let merged = text(&["A", "b", "c", "D", "e"]);
        let local = text(&["a", "b", "c", "D", "e"]);
        let carried = carry(&base, &merged, &local, &[h(0, 1, 0, 1), h(3, 4, 3, 4)], &[h(3, 4, 3, 4)]).unwrap();
        assert_eq!(carried, Carried { bytes: merged, placed_all: true });
    }

    #[test]
    fn a_line_both_edited_is_replaced_and_nothing_else() {
        let base = text(&["a", "b", "c", "d"]);
        // The teammate edited b and c (one block); this machine c and appended e.
        let merged = text(&["a", "B", "C", "d", "e"]);
        let local = text(&["a", "b", "c'", "d", "e"]);
        let carried = carry(
            &base,
            &merged,
            &local,
            &[h(1, 2, 1, 2), h(2, 3, 2, 3), h(4, 4, 4, 5)],
            &[h(2, 3, 2, 3), h(4, 4, 4, 5)],
        )
        .unwrap();
        assert_eq!(carried, Carried { bytes: text(&["a", "B", "c'", "d", "e"]), placed_all: true });
        // Neighbouring lines: git sees one conflict, and the merge kept the teammate's side.
        let merged = text(&["A", "b", "c"]);
        let local = text(&["a", "b'", "c"]);
        let base = text(&["a", "b", "c"]);
        let carried = carry(&base, &merged, &local, &[h(0, 1, 0, 1)], &[h(1, 2, 1, 2)]).unwrap();
        assert_eq!(carried.bytes, text(&["A", "b'", "c"]));
    }

    #[test]
    fn an_edit_inside_a_teammates_rewrite_is_added_after_it_taking_nothing_out() {
        let base = text(&["a", "b", "c", "d"]);
        let merged = text(&["a", "X", "d"]); // b c became X
        let local = text(&["a", "b", "c!", "d"]);
        let carried = carry(&base, &merged, &local, &[h(1, 3, 1, 2)], &[h(2, 3, 2, 3)]).unwrap();
        assert_eq!(carried, Carried { bytes: text(&["a", "X", "c!", "d"]), placed_all: false });
        // A local removal of a line inside the teammate's rewrite: nothing to add, not placed.
        let carried = carry(&base, &merged, &text(&["a", "b", "d"]), &[h(1, 3, 1, 2)], &[h(2, 3, 2, 2)]).unwrap();
        assert_eq!(carried, Carried { bytes: text(&["a", "X", "d"]), placed_all: false });
        // A local removal of every line the teammate rewrote: a true conflict, the removal wins.
        let carried = carry(&base, &merged, &text(&["a", "d"]), &[h(1, 3, 1, 2)], &[h(1, 3, 1, 1)]).unwrap();
        assert_eq!(carried, Carried { bytes: text(&["a", "d"]), placed_all: true });
        // Both inserted at one place: the teammate's lines stay, this machine's follow.
        let carried =
            carry(&text(&["a"]), &text(&["a", "T"]), &text(&["a", "L"]), &[h(1, 1, 1, 2)], &[h(1, 1, 1, 2)]).unwrap();
        assert_eq!(carried.bytes, text(&["a", "T", "L"]));
    }

    #[test]
    fn a_local_rewrite_covering_the_teammates_edit_replaces_it() {
        let base = text(&["a", "b", "c", "d"]);
        let merged = text(&["a", "B", "c", "d"]);
        let local = text(&["a", "x", "d"]); // b c became x here
        let carried = carry(&base, &merged, &local, &[h(1, 2, 1, 2)], &[h(1, 3, 1, 2)]).unwrap();
        assert_eq!(carried, Carried { bytes: local, placed_all: true });
    }

    #[test]
    fn hunks_outside_the_file_are_refused() {
        assert!(carry(b"a\n", b"a\n", b"a\n", &[h(0, 3, 0, 1)], &[]).is_err());
    }

    #[test]
    fn bookkeeping_comes_from_the_merged_file() {
        let merged = "---\nname: s\nmetadata:\n  authored-by: self-evolve\n  updated-at: \"2026-01-02\"\n  version: \"3\"\n---\nversion: body\n";
        let local = "---\nname: s\nmetadata:\n  authored-by: self-evolve\n  pinned: \"true\"\n  updated-at: \"2026-01-03\"\n  version: \"4\"\n---\nversion: mine\n";
        let kept = keep_bookkeeping(local.as_bytes(), merged.as_bytes());
        assert_eq!(
            String::from_utf8(kept).unwrap(),
            "---\nname: s\nmetadata:\n  authored-by: self-evolve\n  pinned: \"true\"\n  updated-at: \"2026-01-02\"\n  version: \"3\"\n---\nversion: mine\n"
        );
        assert_eq!(keep_bookkeeping(b"no frontmatter\n", merged.as_bytes()), b"no frontmatter\n");
        // A line continuing a multi-line value is no entry.
        let block = "---\nmetadata:\n  note: |-\n    version: 9\n  version: \"4\"\n---\n";
        let kept = keep_bookkeeping(block.as_bytes(), merged.as_bytes());
        assert_eq!(
            String::from_utf8(kept).unwrap(),
            "---\nmetadata:\n  note: |-\n    version: 9\n  version: \"3\"\n---\n"
        );
    }
}
