//! crashcells: a crash-persistence conformance harness for SQLite-backed
//! session stores.
//!
//! Data flows one way: plan (cells × legs × kill modes, seeded) → per trial a
//! private folder and isolated config home → spawn → acks and barriers →
//! kill → reap and classify the exit → audit the on-disk mode → recovery
//! passes → invariants → verdict and evidence → renderers.

pub use model::VERSION;

pub mod applied;
pub mod audit;
pub mod catalog;
pub mod cells;
pub mod childcheck;
pub mod cli;
pub mod crashstate;
pub mod dbfiles;
pub mod error;
pub mod harness;
pub mod journal;
pub mod journalmode;
pub mod kill;
pub mod killmode;
pub mod legaudit;
pub mod matrix;
pub mod model;
pub mod options;
pub mod pipeline;
pub mod plan;
pub mod probe;
pub mod recovery;
pub mod report;
pub mod run;
pub mod scratch;
pub mod seed;
pub mod sqlitelib;
pub mod suggest;
#[doc(hidden)]
pub mod testskip;
pub mod times;
pub mod trialdir;

/// Every insta snapshot of the project lives in `tests/snapshots/`, the unit
/// tests' beside the integration tests', named by what it shows.
#[cfg(test)]
pub(crate) fn snapshots() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s
}
