//! `self-evolve check DIR…`: reads skill folders on the host and checks them through the
//! component's `checker` export. Errors (format, credentials) exit 1; warnings do not.
//!
//! Hostile folders are expected: links are never followed (each is a finding), only regular
//! files are opened (checked on the open handle, non-blocking, so a FIFO never hangs), skills go
//! to the component in bounded batches, and a file over the size limit is a finding that is
//! still scanned for credentials, in bounded chunks. Whatever cannot be read (a path past the
//! OS's limit, a folder it may not list, a name that is not UTF-8, an argument that is no folder)
//! is a finding naming its path, and the check goes on: one bad entry never hides the rest.

use anyhow::Result;
use self_evolve_host::plugin::{FileInput, Finding, Plugin, Severity, SkillInput};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files larger than this are not parsed; they are a finding, and scanned for credentials in chunks.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// A package's files read at most (the catalog serves skills of at most 16 MiB and 512 files).
const PACKAGE_MAX_BYTES: u64 = 64 << 20;
const PACKAGE_MAX_FILES: usize = 1024;
/// The most skill bytes one call into the component carries (its memory limit is 64 MiB).
const BATCH_BYTES: usize = 8 << 20;
const BATCH_SKILLS: usize = 256;
/// Chunks of an oversized file, overlapping so a key across a boundary is still whole in one.
const CHUNK_BYTES: usize = 1 << 20;
const CHUNK_OVERLAP: usize = 8 << 10;
/// The path of the carrier skill that brings chunks to the scanner; its own findings are dropped.
const CARRIER: &str = "<chunk-carrier>/SKILL.md";

/// Why a file or folder was not read as a whole.
#[derive(Debug)]
enum Refusal {
    Symlink,
    NotRegular,
    HardLinked(u64),
    TooLarge(u64),
    /// A name the plugin skips (it never passes a mangled name on), so nothing checks it.
    NotUtf8,
    Io(std::io::Error),
}

/// Opens `path` only if it is a regular file with one link, never following a link; the checks
/// run on the open handle. Returns the file and its size.
fn open_regular(path: &Path) -> std::result::Result<(std::fs::File, u64), Refusal> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path).map_err(|e| {
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link { Refusal::Symlink } else { Refusal::Io(e) }
    })?;
    let meta = file.metadata().map_err(Refusal::Io)?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular);
    }
    if meta.nlink() > 1 {
        return Err(Refusal::HardLinked(meta.nlink()));
    }
    Ok((file, meta.len()))
}

/// A file's bytes when it is regular and within the limit.
fn read_regular(path: &Path) -> std::result::Result<Vec<u8>, Refusal> {
    let (file, size) = open_regular(path)?;
    if size > MAX_FILE_BYTES {
        return Err(Refusal::TooLarge(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(Refusal::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Refusal::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What `check` found on the host side, before the component looked at anything.
#[derive(Default)]
struct Walk {
    notes: Vec<Finding>,
    /// Files over the size limit: scanned for credentials in chunks.
    oversized: Vec<PathBuf>,
}

impl Walk {
    fn refused(&mut self, path: &Path, refusal: Refusal) {
        let (rule, message) = match refusal {
            Refusal::Symlink => ("symlink", "a symlink; the plugin never follows links".to_string()),
            Refusal::NotRegular => {
                ("not-a-file", "not a regular file (a FIFO, socket or device); the plugin never opens one".to_string())
            }
            Refusal::HardLinked(n) => {
                ("hard-link", format!("has {n} hard links; the plugin refuses to read or write such a file"))
            }
            Refusal::TooLarge(size) => {
                self.oversized.push(path.to_path_buf());
                (
                    "too-large",
                    format!(
                        "{size} bytes, over the {MAX_FILE_BYTES}-byte limit: not parsed, scanned for credentials in chunks"
                    ),
                )
            }
            Refusal::NotUtf8 => (
                "not-utf8-name",
                "a name that is not UTF-8; the plugin skips it, so it was not checked: rename it".to_string(),
            ),
            Refusal::Io(err) if err.raw_os_error() == Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()) => {
                ("path-too-long", too_long(path, &err))
            }
            Refusal::Io(err) => ("unreadable", format!("cannot read: {err}")),
        };
        // A large file is not wrong in itself; what the chunked scan finds in it may be.
        let severity = if rule == "too-large" { Severity::Warning } else { Severity::Error };
        self.notes.push(note(path, rule, severity, &message));
    }
}

/// Why the OS said a path is too long: one name past what a folder entry may hold, or the whole
/// path past what it opens by path (PATH_MAX, a deeply nested folder).
fn too_long(path: &Path, err: &std::io::Error) -> String {
    /// The longest name a folder entry may have on Linux file systems (NAME_MAX).
    const NAME_MAX: usize = 255;
    let longest = path.components().map(|c| c.as_os_str().len()).max().unwrap_or(0);
    if longest > NAME_MAX {
        format!("a name of {longest} bytes, past the {NAME_MAX} a folder entry may have ({err}); not read")
    } else {
        format!(
            "a path of {} bytes, past what the OS opens by path (PATH_MAX) ({err}); not read, and the plugin \
             cannot reach it either: nest it less deeply or shorten its names",
            path.as_os_str().len()
        )
    }
}

/// The entries of a folder, sorted, each with its type as the folder says (links not followed).
/// A folder that cannot be listed, or an entry whose type cannot be read, is a finding; the
/// entries that can be read are still returned.
fn entries(dir: &Path, walk: &mut Walk) -> Vec<(PathBuf, std::fs::FileType)> {
    let mut out = Vec::new();
    let list = match std::fs::read_dir(dir) {
        Ok(list) => list,
        Err(err) => {
            walk.refused(dir, Refusal::Io(err));
            return out;
        }
    };
    for entry in list {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                // The listing itself failed part-way (an I/O error): what it gave is kept.
                walk.refused(dir, Refusal::Io(err));
                break;
            }
        };
        let path = entry.path();
        if entry.file_name().to_str().is_none() {
            walk.refused(&path, Refusal::NotUtf8);
            continue;
        }
        match entry.file_type() {
            Ok(ty) => out.push((path, ty)),
            Err(err) => walk.refused(&path, Refusal::Io(err)),
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether `dir` holds a SKILL.md (of any type: a linked or special one is a finding later).
/// `None` when the OS cannot say (that is a finding).
fn holds_skill_md(dir: &Path, walk: &mut Walk) -> Option<bool> {
    let skill_md = dir.join("SKILL.md");
    match std::fs::symlink_metadata(&skill_md) {
        Ok(_) => Some(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(err) => {
            walk.refused(&skill_md, Refusal::Io(err));
            None
        }
    }
}

/// One skill folder (holding SKILL.md) or a folder of skills (packages and flat `.md` files),
/// handed to `each` one skill at a time. Only `each` fails the walk (the component's errors);
/// what cannot be read, `dir` itself included, is a finding.
fn collect(dir: &Path, walk: &mut Walk, each: &mut dyn FnMut(SkillInput) -> Result<()>) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(err) => {
            walk.refused(dir, Refusal::Io(err));
            return Ok(());
        }
    };
    if meta.file_type().is_symlink() {
        let message = "a symlink, not followed: pass the folder it points to, if you trust it";
        walk.notes.push(note(dir, "symlink", Severity::Error, message));
        return Ok(());
    }
    if !meta.is_dir() {
        let message = "not a folder: pass a skill folder (with SKILL.md) or a folder of skills";
        walk.notes.push(note(dir, "not-a-folder", Severity::Error, message));
        return Ok(());
    }
    match holds_skill_md(dir, walk) {
        Some(true) => {
            if let Some(skill) = package(dir, walk) {
                each(skill)?;
            }
            return Ok(());
        }
        Some(false) => {}
        None => return Ok(()),
    }
    for (path, ty) in entries(dir, walk) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if ty.is_symlink() {
            walk.refused(&path, Refusal::Symlink);
        } else if ty.is_dir() {
            if holds_skill_md(&path, walk) == Some(true)
                && let Some(skill) = package(&path, walk)
            {
                each(skill)?;
            }
        } else if name.ends_with(".md") && !name.eq_ignore_ascii_case("README.md") {
            match read_regular(&path) {
                Ok(bytes) => {
                    let folder = name.trim_end_matches(".md").to_string();
                    each(SkillInput { folder, skill_md: FileInput { path: shown(&path), bytes }, resources: vec![] })?;
                }
                Err(refusal) => walk.refused(&path, refusal),
            }
        }
    }
    Ok(())
}

/// A skill package; `None` when its SKILL.md cannot be read whole (that is a finding, as is
/// every file or folder in it that cannot be read).
fn package(dir: &Path, walk: &mut Walk) -> Option<SkillInput> {
    let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let skill_md = dir.join("SKILL.md");
    let bytes = match read_regular(&skill_md) {
        Ok(bytes) => Some(bytes),
        Err(refusal) => {
            walk.refused(&skill_md, refusal);
            None
        }
    };
    let mut resources = Vec::new();
    let mut held = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    'walk: while let Some(current) = stack.pop() {
        for (path, ty) in entries(&current, walk) {
            if ty.is_symlink() {
                walk.refused(&path, Refusal::Symlink);
            } else if ty.is_dir() {
                stack.push(path);
            } else if path != skill_md {
                // Each file is bounded; so is a package, or a folder of many bounded files (a zip
                // of zeros unpacked) would hold the host's memory whole before the check begins.
                if resources.len() >= PACKAGE_MAX_FILES || held > PACKAGE_MAX_BYTES {
                    let message = format!(
                        "holds more than {PACKAGE_MAX_FILES} files or {PACKAGE_MAX_BYTES} bytes; the rest was not read \
                         (nor scanned): split it, or move what it does not need out"
                    );
                    walk.notes.push(note(dir, "package-too-large", Severity::Error, &message));
                    break 'walk;
                }
                match read_regular(&path) {
                    Ok(bytes) => {
                        held += bytes.len() as u64;
                        resources.push(FileInput { path: shown(&path), bytes });
                    }
                    Err(refusal) => walk.refused(&path, refusal),
                }
            }
        }
    }
    resources.sort_by(|a, b| a.path.cmp(&b.path));
    bytes.map(|bytes| SkillInput { folder, skill_md: FileInput { path: shown(&skill_md), bytes }, resources })
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn note(path: &Path, rule: &str, severity: Severity, message: &str) -> Finding {
    Finding { path: shown(path), line: 0, rule: rule.into(), severity, message: message.into() }
}

pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Advice => "advice",
    }
}

fn size_of(skill: &SkillInput) -> usize {
    skill.skill_md.bytes.len() + skill.resources.iter().map(|r| r.bytes.len()).sum::<usize>()
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

/// How many skills `dir` holds at most, from its entries alone (for the progress bar).
fn estimate(dir: &Path) -> usize {
    if std::fs::symlink_metadata(dir.join("SKILL.md")).is_ok() {
        return 1;
    }
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries.filter_map(|e| e.ok()).filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count()
    })
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
