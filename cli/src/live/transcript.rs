//! The parent conversation a forked reviewer is seeded with, read from Claude Code's JSONL
//! transcript (`transcript_path` in every hook event): what the user and the assistant said and
//! which tools ran, never tool output (where secrets and bulk data live), credentials redacted,
//! the most recent part kept within a bound.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The seed keeps at most this many bytes, the latest ones.
pub const MAX_SEED_BYTES: usize = 48 << 10;
/// A transcript is read up to this size (from its end when larger).
const MAX_READ_BYTES: u64 = 64 << 20;
/// How much of a transcript's end is read for the last assistant message.
const TAIL_BYTES: u64 = 4 << 20;
/// One line of the transcript longer than this is skipped (a pasted blob).
const MAX_LINE_BYTES: usize = 4 << 20;

/// Where a file cannot be opened without blocking (Windows), no transcript is read.
#[cfg(not(unix))]
fn open_regular(_path: &Path) -> Option<std::fs::File> {
    None
}

/// The transcript, when it is a regular file. Opened without blocking, then checked on the open
/// handle: a FIFO or device at `transcript_path` would otherwise hang the hook or the reviewer.
#[cfg(unix)]
fn open_regular(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The conversation as text, oldest first, ending with the last turn; empty when the file
/// cannot be read (a missing transcript never stops a review).
pub fn seed(path: &Path) -> String {
    let Some(mut file) = open_regular(path) else { return String::new() };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_READ_BYTES {
        use std::io::{Seek, SeekFrom};
        if file.seek(SeekFrom::Start(len - MAX_READ_BYTES)).is_err() {
            return String::new();
        }
    }
    let mut reader = BufReader::new(file.take(MAX_READ_BYTES));
    let mut lines: Vec<String> = Vec::new();
    let mut kept = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) if buf.len() > MAX_LINE_BYTES => continue,
            Ok(_) => {}
        }
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&buf) else { continue };
        for line in render(&value) {
            kept += line.len() + 1;
            lines.push(line);
        }
        // Keep memory bounded on long transcripts: drop the oldest lines past twice the bound.
        if kept > 2 * MAX_SEED_BYTES {
            let mut drop = 0;
            while kept > MAX_SEED_BYTES && drop < lines.len() {
                kept -= lines[drop].len() + 1;
                drop += 1;
            }
            lines.drain(..drop);
        }
    }
    let text = lines.join("\n");
    // Redacted before the cut: a cut through a credential leaves its tail (a PEM body without
    // its header, the end of a token), which the scanner no longer knows as one.
    let mut text = self_evolve_scan::redact_secrets(&text).unwrap_or(text);
    if text.len() > MAX_SEED_BYTES {
        let mut cut = text.len() - MAX_SEED_BYTES;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = format!("[earlier conversation omitted]\n{}", &text[cut..]);
    }
    text
}

/// One transcript entry as seed lines: `User: …`, `Assistant: …`, `[tool NAME]`.
fn render(entry: &serde_json::Value) -> Vec<String> {
    let role = match entry["type"].as_str() {
        Some("user") => "User",
        Some("assistant") => "Assistant",
        _ => return Vec::new(),
    };
    let content = &entry["message"]["content"];
    let mut out = Vec::new();
    match content {
        serde_json::Value::String(text) if !text.trim().is_empty() => out.push(format!("{role}: {}", text.trim())),
        serde_json::Value::Array(parts) => {
            for part in parts {
                match part["type"].as_str() {
                    Some("text") => {
                        if let Some(text) = part["text"].as_str().filter(|t| !t.trim().is_empty()) {
                            out.push(format!("{role}: {}", text.trim()));
                        }
                    }
                    Some("tool_use") => {
                        out.push(format!("[tool {}]", part["name"].as_str().unwrap_or("?")));
                    }
                    // Tool results and anything else: never in the seed.
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// The last thing the assistant said (its last entry with text, every line of it), for the
/// gate's digest when the hook event lacks it.
pub fn last_assistant_text(path: &Path) -> Option<String> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_regular(path)?;
    // A `Stop` hook runs at the end of every turn: only the transcript's tail is read.
    let len = file.metadata().ok()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut reader = BufReader::new(file.take(TAIL_BYTES));
    let (mut last, mut buf) = (None, Vec::new());
    if from > 0 {
        // The first line read starts mid-entry.
        reader.read_until(b'\n', &mut buf).ok()?;
        buf.clear();
    }
    while reader.read_until(b'\n', &mut buf).ok()? > 0 {
        if buf.len() <= MAX_LINE_BYTES
            && let Ok(value) = serde_json::from_slice::<serde_json::Value>(&buf)
            && value["type"] == "assistant"
        {
            let said: Vec<String> =
                render(&value).into_iter().filter_map(|l| l.strip_prefix("Assistant: ").map(str::to_string)).collect();
            if !said.is_empty() {
                last = Some(said.join("\n"));
            }
        }
        buf.clear();
    }
    last.map(|text| self_evolve_scan::redact_secrets(&text).unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(lines: &[serde_json::Value]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        std::fs::write(file.path(), text.join("\n") + "\n").unwrap();
        file
    }

    #[test]
    fn keeps_what_was_said_and_which_tools_ran_never_their_output() {
        let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
        let file = transcript(&[
            serde_json::json!({"type": "summary", "summary": "x"}),
            serde_json::json!({"type": "user", "message": {"role": "user", "content": format!("use pnpm; my token is {key}")}}),
            serde_json::json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "Switching to pnpm."},
                {"type": "tool_use", "name": "Bash", "input": {"command": "pnpm i"}}
            ]}}),
            serde_json::json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "content": "SECRET OUTPUT"}
            ]}}),
        ]);
        let seed = seed(file.path());
        assert!(seed.starts_with("User: use pnpm; my token is [redacted"), "{seed}");
        assert!(seed.contains("Assistant: Switching to pnpm.\n[tool Bash]"), "{seed}");
        assert!(!seed.contains(&key) && !seed.contains("SECRET OUTPUT") && !seed.contains("pnpm i"), "{seed}");
        assert_eq!(last_assistant_text(file.path()).as_deref(), Some("Switching to pnpm."));
        let multi =
            transcript(&[serde_json::json!({"type": "assistant", "message": {"content": "Done.\nTwo lines."}})]);
        assert_eq!(last_assistant_text(multi.path()).as_deref(), Some("Done.\nTwo lines."));
    }

    #[test]
    fn the_last_assistant_message_is_read_from_the_tail_of_a_long_transcript() {
        let filler = serde_json::json!({"type": "user", "message": {"content": "x".repeat(1000)}}).to_string();
        let first = serde_json::json!({"type": "assistant", "message": {"content": "long ago"}}).to_string();
        let last = serde_json::json!({"type": "assistant", "message": {"content": "just now"}}).to_string();
        let body = vec![filler; 5_000].join("\n");
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), format!("{first}\n{body}\n{last}\n")).unwrap();
        assert_eq!(last_assistant_text(file.path()).as_deref(), Some("just now"));
        std::fs::write(file.path(), format!("{first}\n{body}\n")).unwrap();
        assert_eq!(last_assistant_text(file.path()), None, "only the tail is read");
    }

    #[test]
    fn long_or_broken_transcripts_keep_the_latest_part() {
        let mut lines = vec![serde_json::json!({"type": "user", "message": {"content": "first"}})];
        for i in 0..5_000 {
            lines.push(serde_json::json!({"type": "assistant", "message": {"content": format!("step {i} é")}}));
        }
        let file = transcript(&lines);
        std::fs::write(file.path(), [std::fs::read(file.path()).unwrap(), b"{not json\n\xff\xfe\n".to_vec()].concat())
            .unwrap();
        let seed = seed(file.path());
        assert!(seed.len() <= MAX_SEED_BYTES + 64, "{}", seed.len());
        assert!(seed.starts_with("[earlier conversation omitted]"));
        assert!(seed.ends_with("step 4999 é"), "{}", &seed[seed.len() - 40..]);
        assert_eq!(super::seed(Path::new("/nonexistent/transcript.jsonl")), "");
    }

    #[test]
    fn a_fifo_or_a_folder_where_the_transcript_should_be_is_no_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("transcript.jsonl");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Would block for ever if opened as a file and read.
        assert_eq!(seed(&fifo), "");
        assert_eq!(last_assistant_text(&fifo), None);
        assert_eq!(seed(dir.path()), "");
    }
}
