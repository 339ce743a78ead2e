//! A session's conversation kept by the host in Claude Code's transcript shape
//! (`<home>/run/sessions/<hash>.jsonl`), for harnesses whose own transcript a reviewer's seed
//! cannot read (Codex's rollout, Gemini CLI's, Cursor's, Hermes', and `self-evolve event` lines):
//! a reviewer started from their turns is seeded with the conversation as one started from a
//! Claude Code hook is. Kept redacted, and past `MAX_TRANSCRIPT_BYTES` only its latest part.

use serde_json::json;
use std::io::Write;
use std::path::Path;

/// One thing said in the session, as the transcript keeps it.
#[derive(Debug, Clone, Copy)]
pub enum Said<'a> {
    User(&'a str),
    Assistant(&'a str),
    /// A tool the assistant used (its name only; the seed leaves tool output out).
    Tool(&'a str),
}

const MAX_TRANSCRIPT_BYTES: u64 = 8 << 20;

/// Appends `said` to the session's kept transcript; returns its path when there is one.
pub fn keep(home: &Path, session: &str, said: &[Said]) -> Option<String> {
    use sha2::Digest;
    let key = hex(&sha2::Sha256::digest(session.as_bytes())[..12]);
    let dir = home.join("run").join("sessions");
    let path = dir.join(format!("{key}.jsonl"));
    // The file is a copy of the conversation a reviewer is later seeded from: kept redacted.
    let redacted = |text: &str| self_evolve_scan::redact_secrets(text).unwrap_or_else(|| text.to_string());
    let mut lines = String::new();
    for entry in said {
        let value = match entry {
            Said::User(text) => json!({"type": "user", "message": {"role": "user", "content": redacted(text)}}),
            Said::Assistant(text) => {
                json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": redacted(text)}]}})
            }
            Said::Tool(tool) => {
                json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": tool}]}})
            }
        };
        lines.push_str(&format!("{value}\n"));
    }
    if !lines.is_empty() {
        let appended = std::fs::create_dir_all(&dir).and_then(|_| {
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
            file.write_all(lines.as_bytes())?;
            if file.metadata()?.len() > MAX_TRANSCRIPT_BYTES {
                let text = std::fs::read(&path)?;
                let keep = &text[text.len() - (MAX_TRANSCRIPT_BYTES / 2) as usize..];
                let from = keep.iter().position(|b| *b == b'\n').map_or(keep.len(), |i| i + 1);
                let tmp = path.with_extension(format!("jsonl.{}.tmp", std::process::id()));
                std::fs::write(&tmp, &keep[from..])?;
                std::fs::rename(&tmp, &path)?;
            }
            Ok(())
        });
        if let Err(err) = appended {
            eprintln!("self-evolve: keeping the transcript of `{}`: {err}", self_evolve_host::text::visible(session));
        }
    }
    path.is_file().then(|| path.to_string_lossy().into_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
