//! The `crashcells` binary: parse, run, exit. Everything else is the library.

fn main() {
    std::process::exit(crashcells::cli::main());
}
