//! The reference child as a binary of its own, for running it by hand:
//! `crashcells-child <op> ...` behaves as `crashcells child <op> ...`.

use clap::Parser;

#[derive(Parser)]
#[command(name = "crashcells-child", version, about = "The crashcells reference session store, as a child")]
struct Cli {
    #[command(subcommand)]
    op: crashcells_child::ops::ChildOp,
}

fn main() {
    std::process::exit(crashcells_child::main_with(Cli::parse().op));
}
