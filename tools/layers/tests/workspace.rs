//! The workspace's layers point one way: no crate has a circle of files or of folders, and the
//! product crate's folders stand on the floors `cli/src/lib.rs` names. A new import that closes
//! a loop fails here with the files and the names that tie them.

use layers::{Graph, describe};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 6] =
    ["src", "crates/scan/src", "host-test/src", "cli/src", "tools/componentize/src", "tools/layers/src"];

/// Each crate's floors, as its `lib.rs` (and docs/architecture.md) describe them: a top-level
/// module uses only modules on floors below its own (higher is nearer the user).
const FLOORS: [(&str, &[(&str, u8)]); 3] = [
    (
        "cli/src",
        &[
            ("main", 60),
            ("lib", 60),
            // Front doors: the CLI starts the other three.
            ("cli", 51),
            ("mcp", 50),
            ("hook", 50),
            ("console", 50),
            // Services: the operator's `/skills` line (the CLI's and the console's); team sync on
            // live sessions on the git tree; checking, event lines, the gate log's summary, harness setup.
            ("operator", 44),
            ("team", 43),
            ("live", 42),
            ("git", 41),
            ("check", 41),
            ("events", 41),
            ("setup", 41),
            ("gate_stats", 41),
            // Paired evaluations read a skill's history through the operator's line.
            ("eval", 45),
            // The home.
            ("home", 30),
            ("component", 30),
            ("identity", 30),
            ("input", 30),
        ],
    ),
    (
        "host-test/src",
        &[
            ("lib", 60),
            ("plugin", 50),
            ("sandbox", 40),
            ("bindings", 40),
            ("engine", 30),
            ("state", 30),
            ("caps", 20),
            ("testing", 10),
            ("lines", 10),
            ("text", 10),
        ],
    ),
    (
        "src",
        &[
            ("lib", 90),
            ("adapter", 80),
            ("plugin", 70),
            ("command", 60),
            ("active", 50),
            // The engines and the schedule, side by side on the library.
            ("review_loop", 40),
            ("feedback", 40),
            ("shadow", 40),
            ("schedule", 40),
            ("library", 30),
            ("config", 20),
            ("state_file", 20),
            ("fake", 20),
            ("api", 10),
            ("errors", 10),
            ("host", 10),
            ("time", 10),
            ("digest", 10),
            ("visible", 10),
            ("guidance", 10),
            ("rounds", 10),
        ],
    ),
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
fn every_crate_stands_on_its_floors() {
    let mut wrong = Vec::new();
    for (krate, floors) in FLOORS {
        let floors: BTreeMap<&str, u8> = floors.iter().copied().collect();
        for (from, uses) in read(krate).folders() {
            let from = from.to_string_lossy();
            let Some(&floor) = floors.get(from.as_ref()) else {
                wrong.push(format!(
                    "{krate}: `{from}` stands on no floor: add it to FLOORS here and to the crate's lib.rs"
                ));
                continue;
            };
            for to in uses {
                let to = to.to_string_lossy();
                match floors.get(to.as_ref()) {
                    Some(&below) if below < floor => {}
                    Some(&other) => wrong.push(format!(
                        "{krate}: `{from}` (floor {floor}) uses `{to}` (floor {other}), which is not below it"
                    )),
                    None => wrong.push(format!("{krate}: `{to}` stands on no floor")),
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
