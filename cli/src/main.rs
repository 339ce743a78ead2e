//! The `self-evolve` CLI: operator commands over the real component (see `self_evolve::cli`).

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    self_evolve::cli::main()
}

/// Every command maps a library or a home, which only a Unix host confines: elsewhere the binary
/// says where to run it instead of running half confined.
#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("self-evolve: {}", self_evolve_host::caps::fs::REFUSAL);
    std::process::ExitCode::from(2)
}
