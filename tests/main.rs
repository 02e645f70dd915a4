//! The integration tests: one binary, one module per concern. They run the
//! real `crashcells` binary, as users and CI do.

mod bounds;
mod cells;
mod ci;
mod ci_docs;
mod ci_install;
mod cli;
mod common;
mod confirm;
mod docs;
mod evidence;
mod example_mutants;
mod faults;
mod folder;
mod forkserver;
mod hermes;
mod imports;
mod known;
mod langgraph;
mod libraries;
mod matrices;
mod outputs;
mod protocol;
mod reclaim;
mod recorded;
mod reports;
mod robustness;
mod sdk_node;
mod sdk_python;
mod shown;
mod skips;
mod synclevel;
mod syscall;
mod timeline;
mod warmpool;
mod writers;
