//! The `self-evolve` CLI: operator commands over the real component (see `self_evolve::cli`).

fn main() -> std::process::ExitCode {
    self_evolve::cli::main()
}
