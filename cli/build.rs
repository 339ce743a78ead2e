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
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("embedded.wasm");
    if let Err(err) = std::fs::write(&out, bytes) {
        println!("cargo:warning=could not embed the component: {err}");
    }
}
