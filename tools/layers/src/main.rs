//! `cargo run -p layers -- DIR…`: each crate source root's circles and its folders' arrows.

fn main() -> std::process::ExitCode {
    let mut clean = true;
    for dir in std::env::args().skip(1) {
        let graph = match layers::Graph::read(std::path::Path::new(&dir)) {
            Ok(graph) => graph,
            Err(err) => {
                eprintln!("layers: reading {dir}: {err}");
                return std::process::ExitCode::from(2);
            }
        };
        println!("{dir}: {} files", graph.edges.len());
        for (folder, uses) in graph.folders() {
            let uses: Vec<_> = uses.iter().map(|u| u.display().to_string()).collect();
            println!("  {} -> {}", folder.display(), uses.join(", "));
        }
        for circle in graph.circles() {
            clean = false;
            println!("circle of {} files:\n{}", circle.len(), layers::describe(&graph, &circle));
        }
    }
    if clean { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}
