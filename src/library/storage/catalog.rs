//! The skills an agent may be *served* (the MCP Skills Extension, a harness's skill index): what
//! the store lists after shadowing (project over user, package over flat), minus what must not
//! reach an agent — a SKILL.md that cannot be read or parsed, lacks a valid `name` equal to its
//! folder or a `description`, is marked archived, or holds a symlink; hidden entries and the
//! debris of dead writes are never served files. Every file comes with its size and sha256 so a
//! client can verify what it reads. Read-only: the one write path stays `skill_manage`.

use crate::digest::sha256_hex;
use crate::errors::ToolError;
use crate::host::{EntryKind, Host, Root, Stat};
use crate::library::storage::debris::is_debris;
use crate::library::storage::frontmatter::Value;
use crate::library::storage::list_cache::{ListCache, Settled};
pub use crate::library::storage::served::{CachedServed, ServedCache, ServedFile, ServedSkill};
use crate::library::storage::skillfile::SkillFile;
use crate::library::storage::store::{Layout, Location, Store};
use serde_json::json;

/// Files per served skill; a larger skill is not served (a client need not load it).
pub const MAX_FILES: usize = 512;
/// Bytes per served skill, all files together.
pub const MAX_BYTES: u64 = 16 << 20;
/// Skills per page at most.
pub const PAGE_MAX: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub skills: Vec<ServedSkill>,
    /// Where the next page starts in the listing, when more skills follow. A page may hold fewer
    /// skills than asked for: the ones not served are skipped, not replaced.
    pub next_offset: Option<usize>,
}

/// Why a listed skill is not served, for the host's log.
pub struct Skipped {
    pub name: String,
    pub why: String,
}

/// The bytes one page reads and hashes, past its first served skill: a page of large skills
/// ends early (`next_offset` says where), instead of running past the call's deadline and
/// taking the whole catalog down with it (12 skills of 15 MiB did).
pub const PAGE_BYTES: u64 = 32 << 20;

/// One page of the served skills, in the listing's order (by name).
pub fn page(
    host: &impl Host,
    session: &str,
    cache: &mut ListCache,
    offset: usize,
    limit: usize,
) -> (Page, Vec<Skipped>) {
    page_within(host, session, cache, offset, limit, PAGE_BYTES)
}

fn page_within(
    host: &impl Host,
    session: &str,
    cache: &mut ListCache,
    offset: usize,
    limit: usize,
    budget: u64,
) -> (Page, Vec<Skipped>) {
    let store = Store::new(host, session);
    let (listed, total, _) = store.list_page(cache, offset, limit.clamp(1, PAGE_MAX));
    let mut next_offset = (offset.saturating_add(listed.len()) < total).then_some(offset.saturating_add(listed.len()));
    let (mut skills, mut skipped, mut spent) = (Vec::new(), Vec::new(), 0u64);
    let served_cache = &mut cache.served;
    if served_cache.len() > SERVED_CACHE_MAX {
        served_cache.clear();
    }
    for (i, entry) in listed.iter().enumerate() {
        let key = (entry.location.root.clone(), entry.location.path());
        if let Some(skill) = cached(&store, served_cache, &key) {
            let size = skill.files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
            if !skills.is_empty() && spent.saturating_add(size) > budget {
                next_offset = Some(offset.saturating_add(i));
                break;
            }
            spent = spent.saturating_add(size);
            skills.push(skill);
            continue;
        }
        // Stat'ed before anything is read: a change after this is seen by the next page.
        let snapshot = snapshot(&store, &entry.location, &cache.settled);
        let served = servable_from(&store, &entry.location, snapshot.as_deref()).and_then(|servable| {
            let size = servable.bytes();
            if !skills.is_empty() && spent.saturating_add(size) > budget {
                return Ok(None);
            }
            spent = spent.saturating_add(size);
            serve_servable(&store, &entry.location, servable).map(Some)
        });
        if let (Ok(Some(skill)), Some(stats)) = (&served, snapshot)
            && matches_snapshot(skill, &entry.location, &stats)
        {
            served_cache.insert(key, CachedServed { stats, skill: skill.clone() });
        }
        match served {
            Ok(Some(skill)) => skills.push(skill),
            Ok(None) => {
                next_offset = Some(offset.saturating_add(i));
                break;
            }
            Err(why) => skipped.push(Skipped { name: entry.location.name.clone(), why }),
        }
    }
    (Page { skills, next_offset }, skipped)
}

/// Served entries kept at most (each is small; past this the cache starts over).
const SERVED_CACHE_MAX: usize = 200_000;

/// The cached entry of this skill, when every path it was made under stats as it did then.
fn cached(store: &Store<impl Host>, cache: &mut ServedCache, key: &(Root, String)) -> Option<ServedSkill> {
    let entry = cache.get(key)?;
    let paths: Vec<String> = entry.stats.iter().map(|(p, _)| p.clone()).collect();
    let now = store.host.stat_many(&key.0, &paths);
    if now.len() == paths.len() && entry.stats.iter().zip(&now).all(|((_, was), is)| is.as_ref() == Ok(was)) {
        return Some(entry.skill.clone());
    }
    cache.remove(key);
    None
}

/// The stats a served entry of this skill would stand on, or `None` when it may not be cached:
/// a path did not stat, a symlink, too many entries, or an mtime not yet settled.
fn snapshot(store: &Store<impl Host>, location: &Location, settled: &Settled) -> Option<Vec<(String, Stat)>> {
    let root = &location.root;
    let mut paths = Vec::new();
    if location.layout == Layout::Package {
        // Each folder before its listing: an entry added after the stat changes the mtime.
        let mut dirs = vec![location.name.clone()];
        while let Some(dir) = dirs.pop() {
            paths.push(dir.clone());
            for (entry, kind) in store.host.list_dir(root, &dir).ok()? {
                let path = format!("{dir}/{entry}");
                match kind {
                    EntryKind::Dir => dirs.push(path),
                    EntryKind::File => paths.push(path),
                    EntryKind::Symlink => return None,
                }
            }
            if paths.len() > 2 * MAX_FILES {
                return None;
            }
        }
    } else {
        paths.push(location.path());
    }
    let stats = store.host.stat_many(root, &paths);
    let settled = |st: &Stat| settled.mtime(store.host, st.modified_ms);
    paths.into_iter().zip(stats).map(|(p, st)| st.ok().filter(settled).map(|st| (p, st))).collect()
}

/// Whether the served files are the snapshot's files at the snapshot's sizes (else something
/// changed between the stat and the reads, and the entry is not kept).
fn matches_snapshot(skill: &ServedSkill, location: &Location, stats: &[(String, Stat)]) -> bool {
    let prefix = match location.layout {
        Layout::Package => format!("{}/", location.name),
        Layout::Flat => String::new(),
    };
    skill.files.iter().all(|f| {
        let path = if location.layout == Layout::Flat { location.path() } else { format!("{prefix}{}", f.path) };
        stats.iter().any(|(p, st)| *p == path && st.kind == EntryKind::File && st.size == f.size)
    })
}

/// The served skill of this name (the winner after shadowing), or why there is none.
pub fn get(host: &impl Host, session: &str, name: &str) -> Result<ServedSkill, ToolError> {
    let store = Store::new(host, session);
    let location = locate(&store, name)?;
    serve(&store, &location).map_err(|why| not_served(name, &why))
}

/// The bytes of one served file. `path` is relative to the skill's folder; a supporting file
/// must be one the skill's entry lists.
pub fn read(host: &impl Host, session: &str, name: &str, path: &str) -> Result<Vec<u8>, ToolError> {
    let store = Store::new(host, session);
    let location = locate(&store, name)?;
    // The serving rules without reading (or hashing) every file of the skill for one of them.
    let skill = servable(&store, &location).map_err(|why| not_served(name, &why))?;
    if path == "SKILL.md" {
        return Ok(skill.bytes);
    }
    // Only a path the entry lists: those came from walking the folder, so no `..`, no hidden
    // entry, no debris.
    if !skill.files.iter().any(|(p, _)| p == path) {
        return Err(ToolError::new(
            "not-found",
            format!("skill `{name}` serves no file `{path}`"),
            "read the skill's entry for the files it serves",
        )
        .with_details(json!({"name": name, "path": path})));
    }
    let full = format!("{name}/{path}");
    store.refuse_symlinks(&location.root, &full)?;
    store.read(&location.root, &full)
}

fn locate(store: &Store<impl Host>, name: &str) -> Result<Location, ToolError> {
    crate::library::storage::skillfile::check_name(name).map_err(|why| {
        ToolError::new(
            "invalid-name",
            format!("`{name}` is not a skill name: {why}"),
            "list the skills for their names",
        )
        .with_details(json!({"name": name}))
    })?;
    store.locate(name)?.ok_or_else(|| {
        ToolError::new("not-found", format!("no skill named `{name}`"), "list the skills for their names")
            .with_details(json!({"name": name}))
    })
}

fn not_served(name: &str, why: &str) -> ToolError {
    ToolError::new(
        "not-served",
        format!("skill `{name}` is not served: {why}"),
        "run `self-evolve check` on the skill folder and fix what it reports",
    )
    .with_details(json!({"name": name}))
}

/// Rules a served skill must meet; the others (an unknown key, a long description) only warn.
const BLOCKING: &[&str] = &[
    "name-missing",
    "name-type",
    "name-format",
    "name-folder",
    "description-missing",
    "description-type",
    "description-empty",
];

/// A skill that meets the serving rules: its SKILL.md's bytes, parsed, and the supporting files
/// it serves with their sizes as a stat saw them (nothing read but the SKILL.md).
struct Servable {
    bytes: Vec<u8>,
    skill: SkillFile,
    files: Vec<(String, u64)>,
}

impl Servable {
    /// What serving it reads: its SKILL.md and its files as last stat'ed.
    fn bytes(&self) -> u64 {
        self.files.iter().fold(self.bytes.len() as u64, |sum, (_, size)| sum.saturating_add(*size))
    }
}

fn servable(store: &Store<impl Host>, location: &Location) -> Result<Servable, String> {
    servable_from(store, location, None)
}

/// `servable`, with the skill's folders and files already walked and stat'ed (a `snapshot`),
/// when there is one: they are not listed and stat'ed again.
fn servable_from(
    store: &Store<impl Host>,
    location: &Location,
    snapshot: Option<&[(String, Stat)]>,
) -> Result<Servable, String> {
    let name = &location.name;
    let bytes = store.read(&location.root, &location.path()).map_err(|e| e.message)?;
    let skill = SkillFile::parse_bytes(&bytes).map_err(|e| format!("its SKILL.md does not parse: {}", e.message))?;
    if let Some(violation) = skill.validate(Some(name)).into_iter().find(|v| BLOCKING.contains(&v.rule)) {
        return Err(violation.message);
    }
    if skill.status() == "archived" {
        return Err("it is marked archived".into());
    }
    let mut files = Vec::new();
    if location.layout == Layout::Package
        && let Some(stats) = snapshot
    {
        let prefix = format!("{name}/");
        for (path, stat) in stats {
            let Some(rel) = path.strip_prefix(&prefix) else { continue };
            // What `package_files` leaves out (debris), and what is never served (hidden).
            if stat.kind == EntryKind::File
                && rel != "SKILL.md"
                && !rel.split('/').any(|c| c.starts_with('.') || is_debris(c))
            {
                files.push((rel.to_string(), stat.size));
            }
        }
        files.sort();
        if files.len() + 1 > MAX_FILES {
            return Err(format!("it has more than {MAX_FILES} files"));
        }
    } else if location.layout == Layout::Package {
        let paths: Vec<String> = store
            .package_files(&location.root, name)
            .map_err(|e| e.message)?
            .into_iter()
            .filter(|p| p != "SKILL.md" && !p.split('/').any(|c| c.starts_with('.')))
            .collect();
        if paths.len() + 1 > MAX_FILES {
            return Err(format!("it has more than {MAX_FILES} files"));
        }
        let full: Vec<String> = paths.iter().map(|p| format!("{name}/{p}")).collect();
        for (path, stat) in paths.into_iter().zip(store.host.stat_many(&location.root, &full)) {
            let stat = stat.map_err(|e| format!("`{path}`: {e}"))?;
            files.push((path, stat.size));
        }
    }
    let total = files.iter().fold(bytes.len() as u64, |sum, (_, size)| sum.saturating_add(*size));
    if total > MAX_BYTES {
        return Err(format!("its files hold more than {MAX_BYTES} bytes"));
    }
    Ok(Servable { bytes, skill, files })
}

/// The served entry: every file read and hashed (its size is the bytes read, not the stat's).
fn serve(store: &Store<impl Host>, location: &Location) -> Result<ServedSkill, String> {
    serve_servable(store, location, servable(store, location)?)
}

fn serve_servable(store: &Store<impl Host>, location: &Location, servable: Servable) -> Result<ServedSkill, String> {
    let Servable { bytes, skill, files: supporting } = servable;
    let name = &location.name;
    let mut files = vec![ServedFile { path: "SKILL.md".into(), size: bytes.len() as u64, sha256: sha256_hex(&bytes) }];
    let mut total = bytes.len() as u64;
    for (path, _) in supporting {
        let data = store.read(&location.root, &format!("{name}/{path}")).map_err(|e| e.message)?;
        // A file that grew since the stat still counts against the bound.
        total += data.len() as u64;
        if total > MAX_BYTES {
            return Err(format!("its files hold more than {MAX_BYTES} bytes"));
        }
        files.push(ServedFile { path, size: data.len() as u64, sha256: sha256_hex(&data) });
    }
    let mut frontmatter = String::new();
    write_json(&Value::Map(skill.fields.clone()), &mut frontmatter);
    Ok(ServedSkill {
        name: name.clone(),
        scope: location.scope.as_str(),
        description: skill.description().unwrap_or_default().to_string(),
        frontmatter_json: frontmatter,
        files,
    })
}

/// A frontmatter value as JSON: a plain scalar is read as YAML 1.2's core schema reads it (null,
/// booleans, integers, finite floats); a quoted one, and anything else, stays a string.
pub fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Str { text, plain: false } => serde_json::Value::String(text.clone()),
        Value::Str { text, plain: true } => plain_scalar(text),
        Value::Seq(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => {
            serde_json::Value::Object(entries.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

/// [`to_json`] written out with mappings in source order (a `serde_json` map sorts its keys).
fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Map(entries) => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                write_json(value, out);
            }
            out.push('}');
        }
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&to_json(scalar).to_string()),
    }
}

fn plain_scalar(text: &str) -> serde_json::Value {
    use serde_json::Value as J;
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return J::Null,
        "true" | "True" | "TRUE" => return J::Bool(true),
        "false" | "False" | "FALSE" => return J::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = text.trim_start_matches('+').parse::<i64>()
    {
        return J::from(n);
    }
    let float_shape = {
        let (mantissa, exponent) = match digits.split_once(['e', 'E']) {
            Some((m, e)) => (m, Some(e.strip_prefix(['-', '+']).unwrap_or(e))),
            None => (digits, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        (mantissa.contains('.') || exponent.is_some())
            && (!int.is_empty() || !frac.is_empty())
            && all_digits(int)
            && all_digits(frac)
            && exponent.is_none_or(|e| !e.is_empty() && all_digits(e))
    };
    if float_shape
        && let Ok(f) = text.trim_start_matches('+').parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(f)
    {
        return J::Number(n);
    }
    J::String(text.to_string())
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
