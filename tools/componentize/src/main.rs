//! Wraps the plugin's core wasm module into a component and audits the result.
//! The import list it prints is the capability manifest: anything outside
//! `self-evolve:plugin/*` fails the build.

use anyhow::{Context, Result, bail};
use std::path::Path;
use wit_component::{ComponentEncoder, DecodedWasm};

const ALLOWED_IMPORT_PREFIX: &str = "self-evolve:plugin/";

const USAGE: &str = "usage:
  componentize CORE.wasm OUT.wasm   wrap a core module (with wit-bindgen's embedded type) into a component
  componentize --audit COMPONENT    print size, imports and exports; fail on foreign imports";

fn main() {
    if let Err(err) = run(std::env::args().skip(1).collect()) {
        eprintln!("componentize: {err:#}");
        std::process::exit(1);
    }
}

fn run(args: Vec<String>) -> Result<()> {
    match args.as_slice() {
        [flag, component] if flag == "--audit" => audit(Path::new(component)),
        [core, out] if !core.starts_with('-') => {
            let bytes = std::fs::read(core).with_context(|| format!("reading {core}"))?;
            let component = ComponentEncoder::default()
                .validate(true)
                .module(&bytes)
                .context("the core module has no usable component-type section (was it built with wit-bindgen?)")?
                .encode()
                .context("encoding the component")?;
            std::fs::write(out, &component).with_context(|| format!("writing {out}"))?;
            audit(Path::new(out))
        }
        _ => bail!("{USAGE}"),
    }
}

/// Decodes the component's world and checks that it imports only our own interfaces.
fn audit(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let (resolve, world) = match wit_component::decode(&bytes).context("decoding the component")? {
        DecodedWasm::Component(resolve, world) => (resolve, world),
        DecodedWasm::WitPackage(..) => {
            bail!("{} is a WIT package, not a component", path.display())
        }
    };
    let world = &resolve.worlds[world];
    let key_name = |key: &wit_parser::WorldKey| resolve.name_world_key(key);
    let imports: Vec<String> = world.imports.keys().map(key_name).collect();
    let exports: Vec<String> = world.exports.keys().map(key_name).collect();

    println!("component: {} ({} bytes, {:.1} KiB)", path.display(), bytes.len(), bytes.len() as f64 / 1024.0);
    println!("imports ({}):", imports.len());
    for import in &imports {
        println!("  {import}");
    }
    println!("exports ({}):", exports.len());
    for export in &exports {
        println!("  {export}");
    }
    let foreign: Vec<&String> = imports.iter().filter(|i| !i.starts_with(ALLOWED_IMPORT_PREFIX)).collect();
    if !foreign.is_empty() {
        bail!(
            "the component imports {} interface(s) outside {ALLOWED_IMPORT_PREFIX}*: {:?}. \
             Remove the dependency that pulls them in (WASI, wasm-bindgen, …); the plugin may only use its own capabilities.",
            foreign.len(),
            foreign
        );
    }
    Ok(())
}
