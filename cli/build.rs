//! Embeds `dist/self-evolve.wasm` in the host when it exists, so an installed `self-evolve` runs
//! from any folder without `--wasm`. Without it (a host built before the component), the
//! embedded component is empty and the CLI asks for `--wasm` or `./build.sh`.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let wasm = manifest.join("../dist/self-evolve.wasm");
    println!("cargo:rerun-if-changed={}", wasm.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("embedded.wasm");
    let bytes = std::fs::read(&wasm).unwrap_or_default();
    if let Err(err) = std::fs::write(&out, bytes) {
        println!("cargo:warning=could not embed the component: {err}");
    }
}
