//! Which component the CLI runs: `--wasm PATH` (or `SELF_EVOLVE_WASM`) when given, else the one
//! embedded at build time (`build.rs` copies `dist/self-evolve.wasm`), else the
//! `dist/self-evolve.wasm` of the checkout this binary was built in (by its absolute path: never
//! one in the current folder, which a cloned repository could supply, policy and all).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// The component embedded at build time; empty when the host was built without one.
pub static EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/embedded.wasm"));
/// Its sha256 in hex, computed by `build.rs`.
static EMBEDDED_SHA256: &str = include_str!(concat!(env!("OUT_DIR"), "/embedded.sha256"));

const CHECKOUT_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm");

#[derive(Debug, Clone)]
pub enum Source {
    File(PathBuf),
    Embedded,
}

impl Source {
    /// `--wasm`, else the embedded component, else the checkout's.
    pub fn choose(wasm: Option<PathBuf>) -> Source {
        match wasm {
            Some(path) => Source::File(path),
            None if !EMBEDDED.is_empty() => Source::Embedded,
            None => Source::File(PathBuf::from(CHECKOUT_PATH)),
        }
    }

    pub fn bytes(&self) -> Result<std::borrow::Cow<'static, [u8]>> {
        match self {
            Source::Embedded => {
                self_evolve_host::engine::known_sha256(EMBEDDED, EMBEDDED_SHA256);
                Ok(std::borrow::Cow::Borrowed(EMBEDDED))
            }
            Source::File(path) => read(path).map(std::borrow::Cow::Owned),
        }
    }

    /// For `inspect` and error messages.
    pub fn describe(&self) -> String {
        match self {
            Source::Embedded => format!("embedded in this binary ({} bytes)", EMBEDDED.len()),
            Source::File(path) => path.display().to_string(),
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && path == Path::new(CHECKOUT_PATH) => bail!(
            "no component: this self-evolve was built without one embedded and its checkout has no {CHECKOUT_PATH}; \
             run ./build.sh in the repository and install again, or pass --wasm PATH"
        ),
        Err(err) => Err(err).with_context(|| format!("reading {} (run ./build.sh to produce it)", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_wasm_the_component_never_comes_from_the_current_folder() {
        match Source::choose(None) {
            Source::Embedded => assert!(!EMBEDDED.is_empty()),
            Source::File(path) => assert!(path.is_absolute(), "{}", path.display()),
        }
        assert!(Path::new(CHECKOUT_PATH).is_absolute());
    }

    #[test]
    fn the_embedded_components_digest_from_the_build_is_its_sha256() {
        let engine = self_evolve_host::engine::engine().unwrap();
        // A copy: other bytes at another address, so their digest is computed.
        let copy = EMBEDDED.to_vec();
        let hashed = self_evolve_host::engine::cache_key(engine, &copy);
        Source::Embedded.bytes().unwrap();
        assert_eq!(self_evolve_host::engine::cache_key(engine, EMBEDDED), hashed);
        assert_eq!(EMBEDDED_SHA256.len(), 64);
    }
}
