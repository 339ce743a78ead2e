//! The audit trail of background work, so an operator can tell what a reviewer did: for each
//! background review, why it started, a digest of the prompt it was given, every `skill_manage`
//! call its child made through the plugin with the answer (refusals included), how it ended and
//! its final answer; for each curator pass, what it changed. Kept in the state root and shown
//! by `/skills reviews [ID]`; the newest `KEEP` records stay.
//!
//! Layout: `reviews/<stem>.json` (the record: written when the work starts, replaced whole when
//! it ends) and `reviews/<stem>.calls.jsonl` (one line per child call, appended). The stem is
//! a hash of the activation id (ids come from the host and are not file names). Every stored
//! string has credentials redacted and is clipped; arguments are reduced to the action, name
//! and file path (content is never kept: the skill itself, or its history, holds what landed).
//! Tokens are what the host reports through `review-loop.spend` with the review's activation id
//! (the same export a review loop's children are counted by); none are recorded otherwise.
//!
//! Owns: the record format, where it lives, pruning and reading. Callers say what happened.

use crate::digest::sha256_hex;
use crate::host::{Host, Level, Root, WriteMode};
use crate::library::guards::scan::redact_secrets;
use crate::time;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const DIR: &str = "reviews";
/// Records kept (reviews and curator passes together).
pub const KEEP: usize = 200;
/// Records past `KEEP` before the oldest are removed: pruning reads every record, so it runs
/// once per this many new ones, not on every review's start (which must stay cheap).
const PRUNE_SLACK: usize = 50;
/// Longest final answer or call message kept, in characters.
const CLIP: usize = 4000;
/// A review's calls file stops growing here (a runaway reviewer's calls are not all kept).
const MAX_CALLS_BYTES: u64 = 1 << 20;
/// Arguments longer than this are not parsed for their action and name (a write's content can
/// be megabytes; the call itself was bounded and parsed where it was made).
const MAX_ARGS_PARSED: usize = 64 << 10;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The activation id (`review`), or `curator-<ms>`.
    pub id: String,
    /// `review` or `curator`
    pub kind: String,
    pub session: String,
    pub turn: u64,
    pub reason: String,
    pub started_ms: u64,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_sha256: Option<String>,
    #[serde(default)]
    pub prompt_bytes: usize,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// running, completed, failed, aborted, timed-out; `done` for a curator pass.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Tokens the host reported for the review (`review-loop.spend` with its activation id),
    /// summed over its reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// A curator pass's changes and errors.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub changes: Value,
}

fn stem(id: &str) -> String {
    format!("r-{}", &sha256_hex(id.as_bytes())[..16])
}

fn record_path(id: &str) -> String {
    format!("{DIR}/{}.json", stem(id))
}

/// Credentials redacted, control characters kept as they are (the command shows them
/// visibly), at most `CLIP` characters.
fn clean(text: &str) -> String {
    let text = redact_secrets(text).unwrap_or_else(|| text.to_string());
    match text.char_indices().nth(CLIP) {
        Some((at, _)) => format!("{}… ({} characters in all)", &text[..at], text.chars().count()),
        None => text,
    }
}

/// Replaces a record whole (temp file, then rename): readers never see half of one.
fn save(host: &impl Host, record: &Record) {
    let bytes = serde_json::to_vec_pretty(record).unwrap_or_default();
    if let Err(err) = crate::state_file::write_atomic(host, &Root::State, &record_path(&record.id), &bytes) {
        host.log(Level::Warn, &format!("audit: could not keep the record of {}: {err:?}", record.id));
    }
}

/// Writes a new record in one step (on a review's start, which is on the turn's path): a crash
/// mid-write leaves a record that does not parse, which readers skip.
fn create(host: &impl Host, record: &Record) {
    let bytes = serde_json::to_vec(record).unwrap_or_default();
    match host.write(&Root::State, &record_path(&record.id), &bytes, WriteMode::CreateNew) {
        Ok(()) => {}
        // The host reused an activation id (hosts number them per process from 1, and the state
        // root outlives processes): the earlier review is kept under `ID@<its start>`, with its
        // calls, and the id is this review's from now on.
        Err(crate::host::FsError::AlreadyExists) => {
            set_aside(host, &record.id);
            if let Err(err) = host.write(&Root::State, &record_path(&record.id), &bytes, WriteMode::CreateNew) {
                host.log(Level::Warn, &format!("audit: could not keep the record of {}: {err:?}", record.id));
            }
        }
        Err(err) => host.log(Level::Warn, &format!("audit: could not keep the record of {}: {err:?}", record.id)),
    }
}

/// Moves the record of `id` and its calls to `id@<its start>` (or removes them when they do
/// not read), so a reused id starts a fresh record.
fn set_aside(host: &impl Host, id: &str) {
    let calls_path = |id: &str| format!("{DIR}/{}.calls.jsonl", stem(id));
    match load(host, id) {
        Some(mut old) => {
            let aside = format!("{id}@{}", old.started_ms);
            let _ = host.rename(&Root::State, &calls_path(id), &calls_path(&aside));
            old.id = aside;
            save(host, &old);
        }
        None => {
            let _ = host.remove_file(&Root::State, &calls_path(id));
        }
    }
    let _ = host.remove_file(&Root::State, &record_path(id));
}

/// A background review started: why, and what it was given.
pub fn review_started(
    host: &impl Host,
    id: &str,
    session: &str,
    turn: u64,
    reason: &str,
    prompt: &str,
    tools: &[String],
) {
    let now = host.now_ms();
    create(
        host,
        &Record {
            id: id.to_string(),
            kind: "review".into(),
            session: session.to_string(),
            turn,
            reason: clean(reason),
            started_ms: now,
            started_at: time::iso(now),
            prompt_sha256: Some(sha256_hex(prompt.as_bytes())),
            prompt_bytes: prompt.len(),
            tools: tools.to_vec(),
            status: "running".into(),
            ..Record::default()
        },
    );
    // Counting the records is a listing; a review's start is on the turn's path, so about one
    // start in sixteen (those whose id hashes to a leading 0) looks.
    if stem(id).starts_with("r-0") {
        prune(host);
    }
}

/// Whether `id` is a background review this home keeps a record of.
pub fn is_review(host: &impl Host, id: &str) -> bool {
    host.stat(&Root::State, &record_path(id)).is_ok()
}

/// Whether `id` is a background review still running: only its calls are kept (a call under an
/// id whose review ended belongs to no review on record).
pub fn is_running(host: &impl Host, id: &str) -> bool {
    load(host, id).is_some_and(|r| r.status == "running")
}

/// One `skill_manage` call a review's child made, and the answer it got.
pub fn review_call(host: &impl Host, id: &str, tool: &str, args_json: &str, answer: &Result<String, String>) {
    let path = format!("{DIR}/{}.calls.jsonl", stem(id));
    if host.stat(&Root::State, &path).is_ok_and(|s| s.size > MAX_CALLS_BYTES) {
        return;
    }
    let args: Value = if args_json.len() <= MAX_ARGS_PARSED {
        serde_json::from_str(args_json).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let field = |key: &str| args.get(key).and_then(Value::as_str).map(clean);
    let (ok, detail) = match answer {
        Ok(text) => {
            // What a write did (`written`, `staged` and its id); a read answers with neither.
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            let kept: serde_json::Map<String, Value> = ["status", "id"]
                .iter()
                .filter_map(|k| v.get(*k).filter(|x| !x.is_null()).map(|x| (k.to_string(), x.clone())))
                .collect();
            (true, Value::Object(kept))
        }
        Err(text) => {
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            let message = v.get("message").and_then(Value::as_str).map(clean);
            (false, json!({"code": v.get("code").cloned().unwrap_or(Value::Null), "message": message}))
        }
    };
    let line = json!({
        "at": time::iso(host.now_ms()), "tool": tool, "action": field("action"), "name": field("name"),
        "file_path": field("file_path"), "ok": ok, "answer": detail,
    });
    if let Err(err) = host.write(&Root::State, &path, format!("{line}\n").as_bytes(), WriteMode::Append) {
        host.log(Level::Warn, &format!("audit: could not keep a call of {id}: {err:?}"));
    }
}

/// A background review ended (completed, failed, aborted, timed out), with its final answer.
/// The first end is the one kept: a reviewer the plugin aborted for overrunning later reports
/// `aborted` to the host, which is not news.
pub fn review_ended(host: &impl Host, id: &str, status: &str, answer: &str) {
    let Some(mut record) = load(host, id).filter(|r| r.status == "running") else { return };
    record.ended_ms = Some(host.now_ms());
    record.status = status.to_string();
    record.answer = Some(clean(answer.trim()));
    save(host, &record);
}

/// Tokens the host says a background review spent (reports add up; a review with no record
/// is not one of ours).
pub fn review_spent(host: &impl Host, id: &str, input: u64, output: u64) {
    let Some(mut record) = load(host, id) else { return };
    record.input_tokens = Some(record.input_tokens.unwrap_or(0).saturating_add(input));
    record.output_tokens = Some(record.output_tokens.unwrap_or(0).saturating_add(output));
    save(host, &record);
}

/// A curator pass that ran (not a dry run): its changes and errors.
pub fn curator_pass(host: &impl Host, report: &crate::library::curation::curator::Report) {
    let now = host.now_ms();
    let mut changes = serde_json::to_value(report).unwrap_or(Value::Null);
    // Errors quote what a skill held: kept redacted, as every string here.
    crate::library::guards::scan::redact_json(&mut changes);
    save(
        host,
        &Record {
            id: format!("curator-{now}"),
            kind: "curator".into(),
            reason: format!("{} skill(s) checked", report.checked),
            started_ms: now,
            started_at: time::iso(now),
            ended_ms: Some(now),
            status: "done".into(),
            changes,
            ..Record::default()
        },
    );
    prune(host);
}

pub fn load(host: &impl Host, id: &str) -> Option<Record> {
    serde_json::from_slice(&host.read(&Root::State, &record_path(id)).ok()?).ok()
}

/// Every record, oldest first.
pub fn list(host: &impl Host) -> Vec<Record> {
    let Ok(entries) = host.list_dir(&Root::State, DIR) else { return Vec::new() };
    let mut out: Vec<Record> = entries
        .iter()
        .filter(|(name, _)| name.ends_with(".json"))
        .filter_map(|(name, _)| host.read(&Root::State, &format!("{DIR}/{name}")).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect();
    out.sort_by(|a, b| a.started_ms.cmp(&b.started_ms).then_with(|| a.id.cmp(&b.id)));
    out
}

/// How many calls a review's child made (lines counted, not parsed: a listing of 250 records
/// reads their files, which can be long).
pub fn call_count(host: &impl Host, id: &str) -> usize {
    host.read(&Root::State, &format!("{DIR}/{}.calls.jsonl", stem(id)))
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// The calls a review's child made, in order (lines that do not parse are skipped).
pub fn calls(host: &impl Host, id: &str) -> Vec<Value> {
    let Ok(bytes) = host.read(&Root::State, &format!("{DIR}/{}.calls.jsonl", stem(id))) else { return Vec::new() };
    String::from_utf8_lossy(&bytes).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn prune(host: &impl Host) {
    let count = host.list_dir(&Root::State, DIR).map_or(0, |e| e.iter().filter(|(n, _)| n.ends_with(".json")).count());
    if count <= KEEP + PRUNE_SLACK {
        return;
    }
    let all = list(host);
    for old in &all[..all.len().saturating_sub(KEEP)] {
        let _ = host.remove_file(&Root::State, &format!("{DIR}/{}.calls.jsonl", stem(&old.id)));
        let _ = host.remove_file(&Root::State, &record_path(&old.id));
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
