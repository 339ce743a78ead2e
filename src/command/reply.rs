//! Defines how a `/skills` answer is shaped: the usage text and the errors that end with it,
//! `--json` or text as asked, and aligned tables whose cells cannot forge a line. Every
//! subcommand file renders through it; it uses nothing of the plugin.

use serde_json::Value;

pub const USAGE: &str = "usage: /skills <subcommand> [--json]

  list [--scope user|project] [--status STATUS]   skills in both scopes
  show NAME | show NAME@VERSION                   one skill's file and state; its SKILL.md before a version
  pending                                         staged writes waiting for approval
  diff ID | diff NAME@VERSION                     a staged write's unified diff; a kept version against the file now
  diff NAME@A NAME@B                              the file before version A against the file before version B
  approve ID [--accept-finding RULE]…             apply a staged write (ID may be `latest`); a held write
                                                  lands only when each finding's rule is accepted
  reject ID                                       discard a staged write
  log NAME                                        a skill's kept versions: when, who, what, why
  revert NAME [VERSION]                           restore the file as it was before a version (default: the
                                                  newest), through the guarded write path (staged when on)
  pin NAME | unpin NAME                           keep a skill out of the curator's reach
  archive NAME | restore NAME                     retire a skill to the archive, or bring it back
  curator [run] [--dry-run]                       the last curator report; `run` runs a pass now
  review on|off|now|status                        background reviews
  reviews [ID]                                    what background reviews and curator passes did: why, the
                                                  reviewer's calls and answers, how it ended
  loops [verdict SESSION]                         review loops, running and archived; a session's last verdict
  approval on|off                                 stage every write for approval
  help                                            this message

Every subcommand accepts --json.";

pub(super) fn usage_error(message: &str) -> String {
    format!("{message}\n\n{USAGE}")
}

/// Renders a JSON value or a table, as asked.
pub(super) fn answer(json_mode: bool, value: Value, text: impl FnOnce() -> String) -> Result<String, String> {
    Ok(if json_mode { value.to_string() } else { text() })
}

pub(super) fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// A line break shown as `visible` shows other control characters: text from an agent or a
/// reviewer (a reason, a path, a refusal) must not forge a line of the operator's output.
pub fn one_line(text: &str) -> String {
    text.replace('\n', "\\u{a}")
}

/// Columns padded to their widest cell; the last column is not padded.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows.into_iter().map(|row| row.into_iter().map(|c| one_line(&c)).collect()).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let n = cells.len();
        let mut out = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i + 1 == n {
                out.push_str(&cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = vec![line(headers.iter().map(|h| h.to_string()).collect())];
    out.extend(rows.into_iter().map(line));
    out.join("\n")
}
