//! The `self-evolve` CLI: operator commands over the real component (see `self_evolve_host::cli`).

fn main() -> std::process::ExitCode {
    self_evolve_host::cli::main()
}
