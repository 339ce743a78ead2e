//! The fs capability where it cannot confine (Windows): every operation is refused, and
//! `Plugin::load` refuses a host config that maps any root (`REFUSAL`), so no host runs half
//! confined. Confinement rests on opening each path component relative to an open folder handle
//! without following links (`openat` with `O_NOFOLLOW`), which this crate does through POSIX.

use super::{FsCap, FsErr, Kind, Mode, RootRef, StatInfo};

impl FsCap {
    pub fn read(&mut self, _root: &RootRef, _path: &str) -> Result<Vec<u8>, FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn write(&mut self, _root: &RootRef, _path: &str, _data: &[u8], _mode: Mode) -> Result<(), FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn rename(&mut self, _root: &RootRef, _from: &str, _to: &str) -> Result<(), FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn remove_file(&mut self, _root: &RootRef, _path: &str) -> Result<(), FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn remove_dir(&mut self, _root: &RootRef, _path: &str) -> Result<(), FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn create_dir_all(&mut self, _root: &RootRef, _path: &str) -> Result<(), FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn list_dir(&mut self, _root: &RootRef, _path: &str) -> Result<Vec<(String, Kind)>, FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn stat(&mut self, _root: &RootRef, _path: &str) -> Result<StatInfo, FsErr> {
        Err(FsErr::NotPermitted)
    }

    pub fn stat_many(&mut self, _root: &RootRef, paths: &[String]) -> Vec<Result<StatInfo, FsErr>> {
        paths.iter().map(|_| Err(FsErr::NotPermitted)).collect()
    }
}
