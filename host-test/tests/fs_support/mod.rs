//! What the fs capability tests share: a world of folders (user skills, state, and an outside
//! holding a file no call may reach) and a capability over it.
#![allow(dead_code)]

use self_evolve_host::caps::fs::{FsCap, FsConfig, FsFaults, ProjectRoots};
use std::path::PathBuf;

pub struct World {
    pub _tmp: tempfile::TempDir,
    pub base: PathBuf,
    pub user: PathBuf,
    pub state: PathBuf,
    pub outside: PathBuf,
}

pub fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (user, state, outside) = (base.join("user-skills"), base.join("state"), base.join("outside"));
    for dir in [&user, &state, &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(outside.join("secret.txt"), b"do not read").unwrap();
    World { _tmp: tmp, base, user, state, outside }
}

pub fn cap(w: &World) -> FsCap {
    let config = FsConfig {
        user_skills: Some(w.user.clone()),
        state: Some(w.state.clone()),
        projects: ProjectRoots { discover: false, ..Default::default() },
        ..FsConfig::default()
    };
    FsCap::new(config, FsFaults::default())
}
