//! The reference child as a binary of its own, for running it by hand:
//! `crashcells-child <op> ...` behaves as `crashcells child <op> ...`.

fn main() {
    std::process::exit(crashcells_child::main_from(std::env::args_os()));
}
