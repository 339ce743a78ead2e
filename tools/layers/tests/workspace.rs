//! The workspace's layers point one way: no crate has a circle of files or of folders, and the
//! product crate's folders stand on the floors `cli/src/lib.rs` names. A new import that closes
//! a loop fails here with the files and the names that tie them.

use layers::{Graph, describe};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 6] =
    ["src", "crates/scan/src", "host-test/src", "cli/src", "tools/componentize/src", "tools/layers/src"];

/// The product crate's floors (cli/src/lib.rs): a folder uses only its own floor and those below.
const PRODUCT_FLOORS: [(&str, u8); 14] = [
    ("cli", 3),
    ("mcp", 3),
    ("hook", 3),
    ("team", 2),
    ("live", 2),
    ("git", 2),
    ("check", 2),
    ("events", 2),
    ("home", 1),
    ("component", 1),
    ("identity", 1),
    ("input", 1),
    ("lib", 4),
    ("main", 4),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(krate: &str) -> Graph {
    Graph::read(&root().join(krate)).unwrap_or_else(|err| panic!("reading {krate}: {err}"))
}

#[test]
fn no_crate_has_a_circle_of_files() {
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = read(krate);
        assert!(graph.edges.len() > 1 || krate.starts_with("tools"), "{krate}: no files read");
        for circle in graph.circles() {
            found.push(format!("{krate}: a circle of {} files\n{}", circle.len(), describe(&graph, &circle)));
        }
    }
    assert!(found.is_empty(), "import circles (move what both use down into a file of its own):\n{}", found.join("\n"));
}

#[test]
fn no_crate_has_a_circle_of_folders() {
    for krate in CRATES {
        let folders = read(krate).folders();
        let graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = folders;
        let circles: Vec<_> = layers::circles_of(&graph).into_iter().filter(|c| c.len() > 1).collect();
        assert!(circles.is_empty(), "{krate}: top-level modules that import each other: {circles:?}");
    }
}

#[test]
fn the_product_stands_on_its_floors() {
    let floors: BTreeMap<&str, u8> = PRODUCT_FLOORS.into_iter().collect();
    let folders = read("cli/src").folders();
    let mut wrong = Vec::new();
    for (from, uses) in &folders {
        let from = from.to_string_lossy();
        let Some(&floor) = floors.get(from.as_ref()) else {
            wrong.push(format!("`{from}` stands on no floor: add it to PRODUCT_FLOORS and to cli/src/lib.rs's list"));
            continue;
        };
        for to in uses {
            let to = to.to_string_lossy();
            match floors.get(to.as_ref()) {
                Some(&below) if below <= floor => {}
                Some(&above) => {
                    wrong.push(format!("`{from}` (floor {floor}) uses `{to}` (floor {above}), a floor above it"))
                }
                None => wrong.push(format!("`{to}` stands on no floor")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
