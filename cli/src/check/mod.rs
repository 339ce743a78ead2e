//! `self-evolve check DIR…`: reads skill folders on the host and checks them through the
//! component's `checker` export. Errors (format, credentials) exit 1; warnings do not.
//!
//! Hostile folders are expected: links are never followed (each is a finding), only regular
//! files are opened (checked on the open handle, non-blocking, so a FIFO never hangs), skills go
//! to the component in bounded batches, and a file over the size limit is a finding that is
//! still scanned for credentials, in bounded chunks. Whatever cannot be read (a path past the
//! OS's limit, a folder it may not list, a name that is not UTF-8, an argument that is no folder)
//! is a finding naming its path, and the check goes on: one bad entry never hides the rest.
//!
//! The walk of the folders is `walk`; here, the skills it collects go to the component in
//! batches, an oversized file's chunks to the scanner, and the findings to stdout.

mod walk;

use anyhow::Result;
use self_evolve_host::plugin::{FileInput, Finding, Plugin, Severity, SkillInput};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
pub use walk::MAX_FILE_BYTES;
use walk::{Refusal, Walk, collect, estimate, open_regular, shown, size_of};

/// The most skill bytes one call into the component carries (its memory limit is 64 MiB).
const BATCH_BYTES: usize = 8 << 20;
const BATCH_SKILLS: usize = 256;
/// Chunks of an oversized file, overlapping so a key across a boundary is still whole in one.
const CHUNK_BYTES: usize = 1 << 20;
const CHUNK_OVERLAP: usize = 8 << 10;
/// The path of the carrier skill that brings chunks to the scanner; its own findings are dropped.
const CARRIER: &str = "<chunk-carrier>/SKILL.md";

pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Advice => "advice",
    }
}

/// Scans an oversized file for credentials in overlapping chunks, one chunk per call; line
/// numbers are the file's own. A file that cannot be opened or read (any more) is a finding.
fn scan_chunks(plugin: &mut Plugin, path: &Path, walk: &mut Walk) -> Result<Vec<Finding>> {
    let shown_path = shown(path);
    let mut file = match open_regular(path) {
        Ok((file, _)) => file,
        Err(refusal) => {
            walk.refused(path, refusal);
            return Ok(Vec::new());
        }
    };
    let mut found = BTreeSet::new();
    let mut out = Vec::new();
    let mut carry: Vec<u8> = Vec::new();
    let mut lines_before: u64 = 0;
    loop {
        let mut chunk = std::mem::take(&mut carry);
        let start_len = chunk.len();
        if let Err(err) = (&mut file).take((CHUNK_BYTES - start_len) as u64).read_to_end(&mut chunk) {
            walk.refused(path, Refusal::Io(err));
            break;
        }
        if chunk.len() == start_len && start_len > 0 || chunk.is_empty() {
            break;
        }
        let carrier = SkillInput {
            folder: "chunk-carrier".into(),
            skill_md: FileInput { path: CARRIER.into(), bytes: Vec::new() },
            resources: vec![FileInput { path: shown_path.clone(), bytes: chunk.clone() }],
        };
        for mut f in plugin.check(std::slice::from_ref(&carrier))? {
            if f.path != shown_path {
                continue;
            }
            f.line = f.line.saturating_add(u32::try_from(lines_before).unwrap_or(u32::MAX));
            if found.insert((f.line, f.rule.clone())) {
                out.push(f);
            }
        }
        let done = chunk.len() < CHUNK_BYTES;
        let keep = chunk.len().min(CHUNK_OVERLAP);
        let consumed = &chunk[..chunk.len() - keep];
        lines_before += consumed.iter().filter(|&&b| b == b'\n').count() as u64;
        if done {
            break;
        }
        carry = chunk[chunk.len() - keep..].to_vec();
    }
    Ok(out)
}

/// Checks one batch; near-duplicates are judged across all batches at the end.
fn flush(plugin: &mut Plugin, batch: &mut Vec<SkillInput>, findings: &mut Vec<Finding>) -> Result<()> {
    findings.extend(plugin.check_batch(batch)?);
    batch.clear();
    Ok(())
}

/// Every skill under `dirs` through the checker in bounded batches: the findings of the batches
/// (everything but near-duplicates), how many skills, and what the walk noted.
fn batched(plugin: &mut Plugin, dirs: &[PathBuf], progress: &mut Progress) -> Result<(Vec<Finding>, usize, Walk)> {
    let mut walk = Walk::default();
    let mut findings = Vec::new();
    let mut batch: Vec<SkillInput> = Vec::new();
    let mut batch_bytes = 0;
    let mut checked = 0usize;
    // A batch left over from an earlier, interrupted check in this instance is not ours.
    plugin.check_duplicates()?;
    for dir in dirs {
        collect(dir, &mut walk, &mut |skill| {
            checked += 1;
            if !batch.is_empty() && (batch_bytes + size_of(&skill) > BATCH_BYTES || batch.len() >= BATCH_SKILLS) {
                flush(plugin, &mut batch, &mut findings)?;
                batch_bytes = 0;
            }
            batch_bytes += size_of(&skill);
            progress.advance(checked, size_of(&skill));
            batch.push(skill);
            Ok(())
        })?;
    }
    flush(plugin, &mut batch, &mut findings)?;
    Ok((findings, checked, walk))
}

/// Near-duplicates among the skills under `dirs` (each pair once, on the later skill), then
/// what the walk could not read (a path past the OS's limit, a folder it may not list, a link…),
/// each saying it was not compared: one such entry never hides the other skills' duplicates.
pub fn duplicates(plugin: &mut Plugin, dirs: &[PathBuf]) -> Result<Vec<Finding>> {
    let mut quiet = Progress::new(usize::MAX);
    quiet.after = std::time::Duration::MAX;
    let (_, _, walk) = batched(plugin, dirs, &mut quiet)?;
    let mut found = plugin.check_duplicates()?;
    found.extend(walk.notes.into_iter().filter(|f| f.rule != "too-large").map(|mut f| {
        f.message = format!("not compared for near-duplicates ({}): {}", f.rule, f.message);
        f
    }));
    Ok(found)
}

/// Runs the check and prints it; returns whether any error was found.
pub fn run(plugin: &mut Plugin, dirs: &[PathBuf], json: bool) -> Result<bool> {
    let mut progress = Progress::new(dirs.iter().map(|d| estimate(d)).sum());
    let (mut findings, checked, mut walk) = batched(plugin, dirs, &mut progress)?;
    progress.say("comparing names and descriptions for near-duplicates");
    findings.extend(plugin.check_duplicates()?);
    for path in std::mem::take(&mut walk.oversized) {
        findings.extend(scan_chunks(plugin, &path, &mut walk)?);
    }
    findings.extend(walk.notes);
    progress.done();
    findings.sort_by(|a, b| (&a.path, a.line, &a.rule).cmp(&(&b.path, b.line, &b.rule)));
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = findings.iter().filter(|f| f.severity == Severity::Warning).count();
    // Paths and messages quote folder and file names: shown, never obeyed, in JSON too (serde
    // leaves C1 controls and bidi marks raw).
    use self_evolve_host::text::{visible, visible_json};
    for f in &findings {
        if json {
            let line = serde_json::json!({
                "path": f.path, "line": f.line, "rule": f.rule, "severity": severity_name(f.severity), "message": f.message,
            });
            crate::say!("{}", visible_json(&line.to_string()));
        } else {
            crate::say!(
                "{}:{}: {} [{}] {}",
                visible(&f.path),
                f.line,
                severity_name(f.severity),
                visible(&f.rule),
                visible(&f.message)
            );
        }
    }
    if !json {
        crate::say!(
            "{checked} skill(s) checked: {errors} error(s), {warnings} warning(s), {} advice",
            findings.len() - errors - warnings
        );
    }
    Ok(errors > 0)
}

/// Progress on stderr once a check has run for a second: a bar redrawn in place when stderr
/// is a terminal, otherwise a line every few seconds (logs stay readable).
/// `SELF_EVOLVE_PROGRESS_AFTER_MS` moves the second (tests set 0).
struct Progress {
    started: std::time::Instant,
    after: std::time::Duration,
    last: Option<std::time::Instant>,
    total: usize,
    bytes: u64,
    tty: bool,
    drawn: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        let after = std::env::var("SELF_EVOLVE_PROGRESS_AFTER_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(std::time::Duration::from_secs(1), std::time::Duration::from_millis);
        Progress { started: std::time::Instant::now(), after, last: None, total, bytes: 0, tty, drawn: false }
    }

    fn due(&mut self) -> bool {
        let now = std::time::Instant::now();
        let every = if self.tty { std::time::Duration::from_millis(100) } else { std::time::Duration::from_secs(2) };
        if now.duration_since(self.started) < self.after
            || self.last.is_some_and(|last| now.duration_since(last) < every)
        {
            return false;
        }
        self.last = Some(now);
        true
    }

    fn advance(&mut self, checked: usize, bytes: usize) {
        self.bytes += bytes as u64;
        if !self.due() {
            return;
        }
        let total = self.total.max(checked);
        let mb = self.bytes as f64 / 1e6;
        let secs = self.started.elapsed().as_secs_f64();
        if self.tty {
            let width = 30;
            let filled = (checked * width / total.max(1)).min(width);
            eprint!(
                "\r\x1b[K[{}{}] {checked}/{total} skills, {mb:.0} MB, {secs:.0} s",
                "#".repeat(filled),
                " ".repeat(width - filled)
            );
            self.drawn = true;
        } else {
            eprintln!("check: {checked}/{total} skills, {mb:.0} MB read, {secs:.0} s");
        }
    }

    /// A step after the walk, shown only when the check is already slow enough to show progress.
    fn say(&mut self, step: &str) {
        if self.started.elapsed() >= self.after {
            if self.tty {
                eprint!("\r\x1b[K{step}…");
                self.drawn = true;
            } else {
                eprintln!("check: {step}");
            }
        }
    }

    fn done(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[K");
        }
    }
}
