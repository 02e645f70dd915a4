//! The `crashcells` binary: parse, run, exit. Everything else is the library.
//!
//! The one exception is the hidden `crashcells child <op> ...`: the reference
//! store, which the driver re-executes from its own binary so that `cargo
//! install` gives one self-contained program. It is served here, by the
//! store's crate, so that the driver's library never links the store it
//! judges: it reaches every child, ours included, only through the protocol.

fn main() {
    let code = if std::env::args_os().nth(1).is_some_and(|a| a == "child") {
        crashcells_child::main_from(std::env::args_os().skip(1))
    } else {
        crashcells::cli::main().code()
    };
    std::process::exit(code);
}
