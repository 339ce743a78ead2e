//! The curator: the mechanical lifecycle of seed 002. User scope only, only skills this plugin
//! wrote, never pinned ones: `active → stale` after `staleDays` without use, `stale → archived`
//! after `archiveDays`, never-used skills get `graceDays` first. Each pass leaves a report.

use crate::config::CuratorConfig;
use crate::host::{EntryKind, FsError, Host, Level, Root, WriteMode};
use crate::library::curation::ledger::{Ledger, Record};
use crate::library::history;
use crate::library::staging::archive::archive_location;
use crate::library::storage::cleanup;
use crate::library::storage::debris;
use crate::library::storage::list_cache::ListCache;
use crate::library::storage::skillfile::{SkillFile, meta};
use crate::library::storage::store::{Layout, Scope, Store, skill_lock};
use crate::time::{self, MS_PER_DAY};
use serde::{Deserialize, Serialize};

pub const REPORT_PATH: &str = "curator/last-report.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub name: String,
    pub from: String,
    pub to: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub at: String,
    pub dry_run: bool,
    pub checked: usize,
    pub changes: Vec<Change>,
    pub errors: Vec<String>,
    /// Skills whose loads are often followed by the user correcting the turn (`evidence`):
    /// named for the operator to read, never changed for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<Flag>,
}

impl Report {
    /// An error may quote a file's line or a host's words, and the report is kept, shown and
    /// logged: each error is redacted once, before any of those.
    pub fn redact_errors(&mut self) {
        for error in &mut self.errors {
            if let Some(clean) = crate::library::guards::scan::redact_secrets(error) {
                *error = clean;
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    pub name: String,
    pub loads: u64,
    pub corrected: u64,
    pub reason: String,
}

/// When the next pass is due.
#[derive(Debug, Default)]
pub struct Schedule {
    pub next_ms: Option<u64>,
    /// The shared schedule's next pass as this process last read it: the file is read again
    /// only once that time has come (a pass elsewhere only ever moves it later).
    shared_seen: Option<u64>,
}

impl Schedule {
    pub fn start(&mut self, now: u64, config: &CuratorConfig) {
        self.next_ms = config.enabled.then_some(now + config.delay_seconds * 1000);
    }

    pub fn due(&self, now: u64) -> bool {
        self.next_ms.is_some_and(|next| now >= next)
    }

    pub fn done(&mut self, now: u64, config: &CuratorConfig) {
        self.next_ms = Some(now + config.interval_hours * 3_600_000);
    }

    /// `due` by the schedule every process of the home shares (`curator-schedule.json` in the
    /// state root): a process per event never lives `delaySeconds`, so the first process to find
    /// no schedule makes its own first pass (its start plus the delay) everyone's, and each pass
    /// sets the next.
    /// Without a state root, this process's schedule.
    pub fn due_shared(&mut self, host: &impl Host, now: u64, config: &CuratorConfig) -> bool {
        if self.next_ms.is_none() {
            return false;
        }
        if !host.has_root(&Root::State) {
            return self.due(now);
        }
        if self.shared_seen.is_some_and(|next| now < next) {
            return false;
        }
        self.shared_seen = shared_next(host);
        match self.shared_seen {
            Some(next) => now >= next,
            // The first process to look: its own first pass (its start plus the delay) is everyone's.
            None => {
                let first = self.next_ms.unwrap_or(now + config.delay_seconds * 1000);
                set_shared_next(host, first);
                self.shared_seen = Some(first);
                now >= first
            }
        }
    }

    /// `done`, and the shared schedule's next pass.
    pub fn done_shared(&mut self, host: &impl Host, now: u64, config: &CuratorConfig) {
        self.done(now, config);
        if host.has_root(&Root::State) {
            set_shared_next(host, now + config.interval_hours * 3_600_000);
            self.shared_seen = self.next_ms;
        }
    }
}

/// The curator's schedule, shared by every process of a home.
const SCHEDULE_PATH: &str = "curator-schedule.json";

fn shared_next(host: &impl Host) -> Option<u64> {
    let bytes = host.read(&Root::State, SCHEDULE_PATH).ok().filter(|b| b.len() <= 1024)?;
    serde_json::from_slice::<serde_json::Value>(&bytes).ok()?.get("nextMs")?.as_u64()
}

fn set_shared_next(host: &impl Host, next: u64) {
    let bytes = serde_json::json!({"nextMs": next}).to_string();
    if let Err(err) = crate::state_file::write_atomic(host, &Root::State, SCHEDULE_PATH, bytes.as_bytes()) {
        host.log(crate::host::Level::Warn, &format!("could not save the curator's schedule: {err}"));
    }
}

/// The day count a skill has gone without use, and why, or None while in its grace period.
fn idle_days(now: u64, last_use: Option<u64>, created: Option<u64>, config: &CuratorConfig) -> Option<(u64, String)> {
    match (last_use, created) {
        (Some(used), _) => {
            Some((now.saturating_sub(used) / MS_PER_DAY, format!("last used {}", &time::iso(used)[..10])))
        }
        (None, Some(created)) => {
            let grace_end = created + config.grace_days * MS_PER_DAY;
            (now >= grace_end).then(|| {
                (
                    now.saturating_sub(created) / MS_PER_DAY,
                    format!("never used since created {}", &time::iso(created)[..10]),
                )
            })
        }
        // No creation time and no use: nothing to measure from; leave it alone.
        (None, None) => None,
    }
}

/// The lock one pass at a time runs under, whichever process runs it (`locks/curator-pass.lock`).
const PASS_LOCK: &str = "curator-pass";

/// The lock a pass that moves skills takes, for `tick` and `/skills curator run` alike:
/// `Ok(None)` without a state root (nothing shared, the pass is this process's), `Err` with why
/// for a person when another process's pass holds it or the state root refused its write.
pub fn take_pass_lock(host: &impl Host) -> Result<Option<crate::state_file::Lock>, String> {
    if !host.has_root(&Root::State) {
        return Ok(None);
    }
    if let Some(lock) = crate::state_file::try_lock(host, PASS_LOCK) {
        return Ok(Some(lock));
    }
    let path = format!("{}/{PASS_LOCK}.lock", crate::state_file::LOCK_DIR);
    Err(match host.stat(&Root::State, &path) {
        Ok(_) => format!(
            "a curator pass is running in another process (it holds `{path}`); run `/skills curator run` again \
             when it is done, or `/skills curator` for its report"
        ),
        Err(err) => format!(
            "could not take `{path}` to run a curator pass ({err}); nothing was changed: check that the state \
             folder is writable, then run `/skills curator run` again"
        ),
    })
}

/// What a pass that lost its lock says, after checking `checked` skills, and what it did then.
fn lost_pass_lock(checked: usize, then: &str) -> String {
    format!("lost the `{PASS_LOCK}` lock to another process after checking {checked} skill(s); {then}")
}

/// One pass. With `dry_run` nothing is written (not even the report).
///
/// `lock` is the `curator-pass` lock the pass runs under, when it runs under one (`tick`): a pass
/// over a large library outlives the lock's stale age, so it is renewed per skill. A pass that
/// loses it (another process broke it as stale and runs its own pass now) stops where it is:
/// no further skill moves, no report or ledger entry of its own; the report it returns says so.
pub fn pass(
    host: &impl Host,
    config: &CuratorConfig,
    ledger: &mut Ledger,
    cache: &mut ListCache,
    dry_run: bool,
    history_versions: usize,
    mut lock: Option<&mut crate::state_file::Lock>,
) -> Report {
    let now = host.now_ms();
    // Decide on what every process recorded, not on this process's copy.
    *ledger = Ledger::load(host);
    if !dry_run {
        crate::library::storage::cleanup::cleanup(host, &[Root::UserSkills, Root::State], true);
        for folder in crate::library::storage::list_index::prune_unused(host, now) {
            host.log(Level::Info, &format!("removed `{folder}`: a project listing index unused for 90 days"));
        }
    }
    let store = Store::new(host, "");
    let (listed, _) = store.list(cache);
    let mut report = Report {
        at: time::iso(now),
        dry_run,
        checked: 0,
        changes: Vec::new(),
        errors: Vec::new(),
        flagged: flagged(&listed, ledger, &super::evaluations::latest(host)),
    };
    let mut lost = None;
    for skill in listed.iter().filter(|s| s.location.scope == Scope::User && s.summary.owned && !s.summary.pinned) {
        if let Some(lock) = lock.as_deref_mut()
            && !lock.refresh(host)
        {
            lost = Some(lost_pass_lock(
                report.checked,
                "this pass stopped there and moved no further skill (the other process runs its own pass)",
            ));
            break;
        }
        report.checked += 1;
        let name = &skill.location.name;
        let bytes = match store.read(&skill.location.root, &skill.location.path()) {
            Ok(bytes) => bytes,
            Err(err) => {
                report.errors.push(format!("{name}: {}", err.message));
                continue;
            }
        };
        let Ok(mut file) = SkillFile::parse_bytes(&bytes) else { continue };
        let usage = ledger.skills.get(name);
        let created =
            file.meta(meta::CREATED_AT).and_then(|c| time::parse_iso(&c)).or_else(|| usage.and_then(|u| u.created_ms));
        let Some((days, why)) = idle_days(now, usage.and_then(|u| u.last_used_ms), created, config) else { continue };
        let status = file.status();
        let target = if days >= config.archive_days && status == "stale" {
            "archived"
        } else if days >= config.stale_days {
            "stale"
        } else {
            "active"
        };
        if target == status {
            continue;
        }
        let change = Change {
            name: name.clone(),
            from: status.clone(),
            to: target.to_string(),
            reason: format!(
                "{why}: {days} days idle (stale after {}, archived after {})",
                config.stale_days, config.archive_days
            ),
        };
        if !dry_run {
            // Under the skill's lock, and only if the file is still what was judged: an agent's
            // patch in between wins, and the curator looks again next pass.
            let result = crate::state_file::with_lock(host, &skill_lock(name), |lock| {
                let now_bytes = store.read(&skill.location.root, &skill.location.path())?;
                if now_bytes != bytes {
                    return Err(crate::state_file::conflict(name));
                }
                if target == "archived" {
                    archive_location(host, "", &skill.location, &change.reason, lock).map(|_| ())
                } else {
                    file.set_meta(meta::STATUS, target);
                    let after = file.to_text();
                    // Not a project's: the curator runs outside any session's folder.
                    let author = history::Author { actor: "curator", by: "curator", session: "", cwd: "" };
                    let path = skill.location.path();
                    let landing = history::Landing {
                        skill: name,
                        scope: skill.location.scope,
                        path: &path,
                        operation: "status",
                        reason: &change.reason,
                        before: Some(&bytes),
                        after: Some(after.as_bytes()),
                    };
                    history::around(host, &author, &landing, history_versions, || {
                        store.write_atomic(&skill.location.root, &path, after.as_bytes())
                    })
                }
            });
            cache.forget(&skill.location.root, &skill.location.path());
            if let Err(err) = result {
                report.errors.push(format!("{name}: {}", err.message));
                continue;
            }
        }
        report.changes.push(change);
    }
    // Checked once more before the pass's own writes: a pass that stalled in its last move (or in
    // its listing, with no skill to check) may have lost the lock since its last check, and its
    // report would overwrite the newer one of the pass that took over.
    if lost.is_none()
        && let Some(lock) = lock
        && !lock.refresh(host)
    {
        lost = Some(lost_pass_lock(
            report.checked,
            "this pass left its report and ledger entry to the other process's pass",
        ));
    }
    report.redact_errors();
    // A stopped pass leaves the ledger and the report to the pass that took over.
    if !dry_run && lost.is_none() {
        if let Err(err) = ledger.record(host, &[Record::CuratorRan(now)]) {
            report.errors.push(format!("ledger: {err}"));
        }
        let text = serde_json::to_vec_pretty(&report).unwrap_or_default();
        if let Err(err) = store.write_atomic(&Root::State, REPORT_PATH, &text) {
            host.log(Level::Warn, &format!("curator: could not write its report: {}", err.message));
        }
    }
    if !dry_run {
        for error in &report.errors {
            host.log(Level::Warn, &format!("curator: {error}; retried on the next pass"));
        }
    }
    if let Some(why) = lost {
        host.log(Level::Warn, &format!("curator: {why}"));
        report.errors.push(why);
    }
    report
}

/// Skills loaded at least `FLAG_MIN_LOADS` times whose loads were followed by a correction at
/// least `FLAG_CORRECTED_SHARE` of the time, and skills whose newest paired evaluation found the
/// agent did better without them, each named once (a name in both scopes shares its counts: the
/// ledger counts by name). Flagged for the operator; an evaluation alone never archives.
fn flagged(
    listed: &[crate::library::storage::list_cache::Listed],
    ledger: &Ledger,
    evaluations: &std::collections::BTreeMap<String, super::evaluations::Evaluation>,
) -> Vec<Flag> {
    use crate::library::curation::evidence::{FLAG_CORRECTED_SHARE, FLAG_MIN_LOADS};
    let mut names: Vec<&str> = listed.iter().map(|s| s.location.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let e = ledger.skills.get(name).map(|u| u.evidence).unwrap_or_default();
            let corrected = e.loads >= FLAG_MIN_LOADS && e.corrected as f64 >= FLAG_CORRECTED_SHARE * e.loads as f64;
            let evaluated = evaluations.get(name).filter(|v| v.negative());
            let mut reasons = Vec::new();
            if corrected {
                reasons.push(format!(
                    "{} of its {} loads were followed by the user correcting the turn",
                    e.corrected, e.loads
                ));
            }
            if let Some(v) = evaluated {
                reasons.push(format!("a paired evaluation found {}", v.summary(None)));
            }
            (!reasons.is_empty()).then(|| Flag {
                name: name.to_string(),
                loads: e.loads,
                corrected: e.corrected,
                reason: format!("{}; read it and fix or archive it", reasons.join("; ")),
            })
        })
        .collect()
}

/// The last pass's report, if any.
pub fn last_report(host: &impl Host) -> Option<Report> {
    let bytes = host.read(&Root::State, REPORT_PATH).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Brings back the newest archived copy of `name` into the user scope, as active.
/// The newest archived copy of `name` (its folder under `archive/`), when it can be restored:
/// no live skill has the name.
pub fn restorable(host: &impl Host, name: &str) -> Result<String, String> {
    let store = Store::new(host, "");
    if store.locate(name).map_err(|e| e.message)?.is_some() {
        return Err(format!("a skill named `{name}` exists; archive or rename it first"));
    }
    let entries = host.list_dir(&Root::State, "archive").unwrap_or_default();
    entries
        .iter()
        .map(|(n, _)| n)
        .filter(|n| {
            n.strip_prefix(name).and_then(|rest| rest.strip_prefix('-')).is_some_and(|ts| ts.parse::<u64>().is_ok())
        })
        .max_by_key(|n| n.rsplit('-').next().and_then(|ts| ts.parse::<u64>().ok()).unwrap_or(0))
        .cloned()
        .ok_or_else(|| format!("no archived copy of `{name}`"))
}

/// Brings back the newest archived copy of `name` as active, under the skill's `lock` (renewed
/// while the files are copied). Built under a hidden name in the skills folder and published
/// with one rename, as archive leaves by one: a crash leaves the skill archived or restored,
/// never half there (the hidden entry is debris `cleanup` removes). The archive copy then
/// leaves the same way.
pub fn restore(
    host: &impl Host,
    name: &str,
    cache: &mut ListCache,
    lock: &mut crate::state_file::Lock,
) -> Result<String, String> {
    let store = Store::new(host, "");
    let folder = restorable(host, name)?;
    let source = format!("archive/{folder}");
    let note: serde_json::Value = host
        .read(&Root::State, &format!("{source}/archived.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if note["scope"].as_str().is_some_and(|s| s != "user") {
        return Err(format!(
            "`{name}` was archived from the {} scope; restore it from a session in that project",
            note["scope"]
        ));
    }
    let layout = if note["layout"] == "flat" { Layout::Flat } else { Layout::Package };
    let files = store.package_files(&Root::State, &source).map_err(|e| e.message)?;
    // A flat skill is its SKILL.md alone, whatever else its archive folder gained since.
    let copied: Vec<&String> = files
        .iter()
        .filter(|f| match layout {
            Layout::Flat => *f == "SKILL.md",
            Layout::Package => *f != "archived.json",
        })
        .collect();
    let now = host.now_ms();
    let entry = match layout {
        Layout::Flat => format!("{name}.md"),
        Layout::Package => name.to_string(),
    };
    let staging = debris::restoring_name(&entry, now);
    // Where a file of the skill goes under an entry (the staging one, then the published one).
    let placed = |base: &str, file: &str| match layout {
        Layout::Flat => base.to_string(),
        Layout::Package => format!("{base}/{file}"),
    };
    let mut build = || -> Result<(), String> {
        for file in &copied {
            let bytes = host.read(&Root::State, &format!("{source}/{file}")).map_err(|e| e.to_string())?;
            let bytes = if *file == "SKILL.md" { reactivate(&bytes) } else { bytes };
            let target = placed(&staging, file);
            host.write(&Root::UserSkills, &target, &bytes, WriteMode::CreateNew).map_err(|e| e.to_string())?;
            if !lock.refresh(host) {
                return Err(format!(
                    "lost the lock on `{name}` to another process while restoring it; nothing was restored"
                ));
            }
        }
        // rename(2) replaces no folder that holds anything (ENOTEMPTY, or EEXIST on some
        // systems), nor a folder by a file or the reverse: an entry holding the name without
        // being a skill (a folder made by hand, no SKILL.md in it) is the operator's to move.
        host.rename(&Root::UserSkills, &staging, &entry).map_err(|e| {
            let refused = matches!(e, FsError::Io(_) | FsError::AlreadyExists | FsError::WrongKind | FsError::Symlink);
            match host.stat(&Root::UserSkills, &entry) {
                Ok(stat) if refused => in_the_way(name, &entry, stat.kind),
                _ => e.to_string(),
            }
        })
    };
    if let Err(err) = build() {
        cleanup::remove_tree(host, &Root::UserSkills, &staging);
        return Err(format!("could not restore `{name}`: {err}; it stays archived in archive/{folder}"));
    }
    for file in &copied {
        cache.forget(&Root::UserSkills, &placed(&entry, file));
    }
    let retired = format!("archive/{}", debris::retired_name(&folder, now));
    if host.rename(&Root::State, &source, &retired).is_ok() {
        cleanup::remove_tree(host, &Root::State, &retired);
    }
    Ok(folder)
}

/// Why a restore cannot publish `entry`: something that is not the skill holds its name.
fn in_the_way(name: &str, entry: &str, kind: EntryKind) -> String {
    let what = match kind {
        EntryKind::Dir => format!("a folder `{entry}/` that is not a skill (no SKILL.md in it)"),
        EntryKind::File => format!("a file `{entry}`"),
        EntryKind::Symlink => format!("a symlink `{entry}`"),
    };
    format!(
        "{what} is in the user skills folder where the skill goes; nothing in it was changed: move or remove \
         it, then run `/skills restore {name}` again"
    )
}

fn reactivate(bytes: &[u8]) -> Vec<u8> {
    match SkillFile::parse_bytes(bytes) {
        Ok(mut skill) => {
            skill.set_meta(meta::STATUS, "active");
            skill.to_text().into_bytes()
        }
        Err(_) => bytes.to_vec(),
    }
}

#[cfg(test)]
#[path = "curator_tests.rs"]
mod tests;
