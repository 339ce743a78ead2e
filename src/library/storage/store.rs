//! Where skills live and how they are read and written: user and project scopes (project
//! wins, package `<name>/SKILL.md` wins over flat `<name>.md`), locating one skill, atomic
//! writes, symlink refusal, supporting-file paths, the refusal of a folder someone else filled,
//! and the lock a change to a skill holds. Listing is in `listing`.

use crate::errors::ToolError;
use crate::host::{EntryKind, FsError, Host, Root};
use crate::library::storage::debris::is_debris;
use serde_json::json;

/// Folders a skill package may hold supporting files in.
pub const RESOURCE_DIRS: &[&str] = &["references", "templates", "scripts", "assets"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Project,
    User,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }

    /// The scope a record in the state root names (`as_str`'s output; anything else is user).
    pub fn from_stored(text: &str) -> Scope {
        if text == Scope::Project.as_str() { Scope::Project } else { Scope::User }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `<name>/SKILL.md`
    Package,
    /// `<name>.md`
    Flat,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    pub scope: Scope,
    pub layout: Layout,
    pub root: Root,
    pub name: String,
}

impl Location {
    pub fn path(&self) -> String {
        match self.layout {
            Layout::Package => format!("{}/SKILL.md", self.name),
            Layout::Flat => format!("{}.md", self.name),
        }
    }

    /// The entry that is the skill in its root: its folder (package) or its file (flat).
    pub fn path_in_root(&self) -> String {
        match self.layout {
            Layout::Package => self.name.clone(),
            Layout::Flat => format!("{}.md", self.name),
        }
    }

    pub fn describe(&self) -> String {
        format!("{} skill `{}` ({})", self.scope.as_str(), self.name, self.path())
    }
}

pub struct Store<'a, H: Host> {
    pub host: &'a H,
    pub session: String,
}

impl<'a, H: Host> Store<'a, H> {
    pub fn new(host: &'a H, session: &str) -> Store<'a, H> {
        Store { host, session: session.to_string() }
    }

    /// Mapped skill roots, highest priority first.
    pub fn roots(&self) -> Vec<(Scope, Root)> {
        let mut roots = Vec::new();
        let project = Root::ProjectSkills(self.session.clone());
        if !self.session.is_empty() && self.host.has_root(&project) {
            roots.push((Scope::Project, project));
        }
        if self.host.has_root(&Root::UserSkills) {
            roots.push((Scope::User, Root::UserSkills));
        }
        roots
    }

    pub fn root_of(&self, scope: Scope) -> Option<Root> {
        self.roots().into_iter().find(|(s, _)| *s == scope).map(|(_, r)| r)
    }

    /// The winning location of `name`: project before user, package before flat.
    pub fn locate(&self, name: &str) -> Result<Option<Location>, ToolError> {
        for (scope, root) in self.roots() {
            for layout in [Layout::Package, Layout::Flat] {
                let location = Location { scope, layout, root: root.clone(), name: name.to_string() };
                match self.host.stat(&root, &location.path()) {
                    Ok(stat) if stat.kind == EntryKind::File => return Ok(Some(location)),
                    Ok(stat) if stat.kind == EntryKind::Symlink => return Err(symlink_error(&location.path())),
                    Ok(_) | Err(FsError::NotFound) | Err(FsError::WrongKind) => {}
                    Err(FsError::Symlink) => return Err(symlink_error(&location.path())),
                    Err(err) => return Err(fs_error(err, &location.path())),
                }
            }
            // A symlinked package folder holding the skill: refuse rather than ignore.
            if let Ok(stat) = self.host.stat(&root, name)
                && stat.kind == EntryKind::Symlink
            {
                return Err(symlink_error(name));
            }
        }
        Ok(None)
    }

    pub fn read(&self, root: &Root, path: &str) -> Result<Vec<u8>, ToolError> {
        self.host.read(root, path).map_err(|e| fs_error(e, path))
    }

    /// Refuses when any existing component of `path` is a symlink.
    pub fn refuse_symlinks(&self, root: &Root, path: &str) -> Result<(), ToolError> {
        let mut end = 0;
        for component in path.split('/') {
            end += component.len();
            match self.host.stat(root, &path[..end]) {
                Ok(stat) if stat.kind == EntryKind::Symlink => return Err(symlink_error(&path[..end])),
                Ok(_) => {}
                Err(FsError::NotFound) => return Ok(()),
                Err(FsError::Symlink) => return Err(symlink_error(path)),
                Err(err) => return Err(fs_error(err, path)),
            }
            end += 1;
        }
        Ok(())
    }

    /// Temp file in the same folder, then rename. On failure nothing new is left behind,
    /// including a folder the write created.
    pub fn write_atomic(&self, root: &Root, path: &str, bytes: &[u8]) -> Result<(), ToolError> {
        self.refuse_symlinks(root, path)?;
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let created_dir = !dir.is_empty() && matches!(self.host.stat(root, dir), Err(FsError::NotFound));
        let result = crate::state_file::write_atomic(self.host, root, path, bytes).map_err(|e| fs_error(e, path));
        if result.is_err() && created_dir {
            self.remove_empty_dirs(root, dir);
        }
        result
    }

    /// Removes `dir` and its parents while they are empty.
    pub fn remove_empty_dirs(&self, root: &Root, dir: &str) {
        let mut dir = dir.to_string();
        while !dir.is_empty() {
            if self.host.remove_dir(root, &dir).is_err() {
                return;
            }
            dir = dir.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
        }
    }

    /// Every file under a package folder, relative to it, sorted.
    pub fn package_files(&self, root: &Root, name: &str) -> Result<Vec<String>, ToolError> {
        let mut out = Vec::new();
        let mut stack = vec![String::new()];
        while let Some(rel) = stack.pop() {
            let dir = if rel.is_empty() { name.to_string() } else { format!("{name}/{rel}") };
            let entries = self.host.list_dir(root, &dir).map_err(|e| fs_error(e, &dir))?;
            for (entry, kind) in entries {
                let child = if rel.is_empty() { entry } else { format!("{rel}/{entry}") };
                if is_debris(entry_name(&child)) {
                    continue; // a dead write's temp file is not the skill's
                }
                match kind {
                    EntryKind::File => out.push(child),
                    EntryKind::Dir => stack.push(child),
                    EntryKind::Symlink => return Err(symlink_error(&format!("{name}/{child}"))),
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

fn entry_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A supporting-file path: `<references|templates|scripts|assets>/…`, plain components only.
pub fn check_resource_path(path: &str) -> Result<(), ToolError> {
    let bad = |why: &str| {
        ToolError::new(
            "invalid-path",
            format!("file_path `{path}` {why}"),
            "use a relative path such as references/guide.md",
        )
        .with_details(json!({"file_path": path, "allowed_folders": RESOURCE_DIRS}))
    };
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Err(bad("must be relative, '/'-separated"));
    }
    let components: Vec<&str> = path.split('/').collect();
    if components.iter().any(|c| c.is_empty() || *c == "." || *c == ".." || c.starts_with('.') || c.len() > 255) {
        return Err(bad("may not hold empty, '.', '..' or hidden components"));
    }
    if components.iter().any(|c| c.chars().any(char::is_control)) {
        return Err(bad("may not hold control characters"));
    }
    if components.len() < 2 || !RESOURCE_DIRS.contains(&components[0]) {
        return Err(bad("must be inside references/, templates/, scripts/ or assets/"));
    }
    Ok(())
}

/// `exists` when a folder of this name without a SKILL.md holds someone's files: a create there
/// would adopt them (a script included) silently. Run by a direct create and by the approval of
/// a staged one alike.
pub fn refuse_foreign_folder(store: &Store<impl Host>, root: &Root, scope: Scope, name: &str) -> Result<(), ToolError> {
    if let Ok(stat) = store.host.stat(root, name)
        && stat.kind == EntryKind::Dir
    {
        let files = store.package_files(root, name)?;
        if !files.is_empty() {
            return Err(ToolError::new(
                "exists",
                format!(
                    "the {} folder `{name}/` exists without a SKILL.md and holds {} file(s)",
                    scope.as_str(),
                    files.len()
                ),
                "choose another name, or ask the operator to remove or finish that folder",
            )
            .with_details(json!({"name": name, "files": files})));
        }
    }
    Ok(())
}

pub fn symlink_error(path: &str) -> ToolError {
    ToolError::new(
        "symlink",
        format!("`{path}` is or passes through a symlink; this plugin never writes through symlinks"),
        "ask the operator to replace the symlink with a real folder, or use another skill name",
    )
    .with_details(json!({"path": path}))
}

pub fn fs_error(err: FsError, path: &str) -> ToolError {
    match err {
        FsError::Symlink => symlink_error(path),
        FsError::NotFound => {
            ToolError::new("not-found", format!("`{path}` does not exist"), "list the skill's files with `view`")
                .with_details(json!({"path": path}))
        }
        FsError::NoSpace => {
            ToolError::new("io", format!("no space left writing `{path}`"), "tell the operator the disk is full")
        }
        FsError::InvalidPath => {
            ToolError::new("invalid-path", format!("`{path}` is not a valid path"), "use plain relative names")
        }
        FsError::Io(msg) if msg.starts_with("too-large:") => ToolError::new(
            "too-large",
            format!("`{path}` is larger than the host lets the plugin read ({msg})"),
            "leave this file alone; the operator can split it or raise the host's read limit",
        )
        .with_details(json!({"path": path})),
        FsError::WrongKind => ToolError::new(
            "wrong-kind",
            format!("`{path}` is not a regular file or folder where one was expected"),
            "FIFOs, sockets and devices are never opened; view the skill to see its files",
        )
        .with_details(json!({"path": path})),
        other => ToolError::new(
            "io",
            format!("filesystem error on `{path}`: {other}"),
            "retry once; if it persists, tell the operator",
        )
        .with_details(json!({"path": path})),
    }
}

/// The lock a change to skill `name` holds (hashed: any folder name makes a valid lock name).
pub fn skill_lock(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    format!("skill-{}", crate::digest::hex(&digest[..8]))
}
