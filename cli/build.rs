//! Embeds the component in the binary, so an installed `self-evolve` runs from any folder without
//! `--wasm`: in a checkout, `dist/self-evolve.wasm` (what ./build.sh made); in a packaged crate
//! (`cargo package`, then `cargo install`), the `self-evolve.wasm` the package carries, which
//! ./build.sh copies into this folder. Without either (a host built before the component), the
//! embedded component is empty and the CLI asks for `--wasm` or `./build.sh`.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let checkout = manifest.join("../dist/self-evolve.wasm");
    let packaged = manifest.join("self-evolve.wasm");
    println!("cargo:rerun-if-changed={}", checkout.display());
    println!("cargo:rerun-if-changed={}", packaged.display());
    let bytes = std::fs::read(&checkout).or_else(|_| std::fs::read(&packaged)).unwrap_or_default();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    // Its sha256, so a process finds its compiled-code cache entry without hashing 2 MB at every
    // start (a millisecond of a hook process).
    let sha256: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
    };
    let written = std::fs::write(out_dir.join("embedded.wasm"), bytes)
        .and_then(|()| std::fs::write(out_dir.join("embedded.sha256"), sha256));
    if let Err(err) = written {
        println!("cargo:warning=could not embed the component: {err}");
    }
}
