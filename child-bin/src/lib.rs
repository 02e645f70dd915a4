//! `crashcells-child`: the reference session store, its journal-mode
//! resolver, and the child operations the crashcells driver runs in a
//! separate process and kills with `SIGKILL`.
//!
//! The driver reaches all of this only through the child's command line
//! (`crashcells child <op> ...`), the ack journal and `dump`'s JSON, so that
//! another store can stand behind the same commands.

pub mod coappend;
pub mod forkserver;
pub mod ops;
pub mod resolver;
pub mod store;

use std::path::PathBuf;

pub use crashcells_protocol::PROTOCOL;

// One SQLite per build: with both features cargo would quietly link the
// bundled library, and a run meant to probe the system's would probe the
// wrong one.
#[cfg(all(feature = "bundled", feature = "system-sqlite"))]
compile_error!(
    "features `bundled` and `system-sqlite` exclude each other: build with `--no-default-features --features system-sqlite`"
);

/// What can stop a child before or during its work.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error(transparent)]
    Config(#[from] crashcells_protocol::ConfigError),
    #[error("store: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("no database at {}", .0.display())]
    Missing(PathBuf),
    /// Flags that do not fit together (exit 2, as clap's own errors).
    #[error("{0}")]
    Usage(String),
}

impl ChildError {
    pub(crate) fn io(what: &str) -> impl FnOnce(std::io::Error) -> ChildError + '_ {
        move |e| ChildError::Io(what.to_string(), e)
    }

    /// The exit code for this error: 2 for bad configuration, 3 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ChildError::Config(_) | ChildError::Usage(_) => 2,
            _ => 3,
        }
    }
}

/// Test-only: when this variable is set, the reference store's clock is
/// fixed and SQLite's pseudo-random generator (the rollback journal's nonce,
/// the WAL's salts) is seeded, so that two runs of one workload write the
/// same bytes. The driver's equivalence test (a real kill at point N against
/// the recorded state N) needs it; nothing else sets it, and it is no part
/// of the child protocol.
pub const DETERMINISTIC_ENV: &str = "CRASHCELLS_CHILD_DETERMINISTIC";

/// Whether [`DETERMINISTIC_ENV`] is set.
pub fn deterministic() -> bool {
    std::env::var_os(DETERMINISTIC_ENV).is_some()
}

/// Seeds SQLite's PRNG under [`DETERMINISTIC_ENV`]; a no-op otherwise.
fn seed_sqlite_prng() {
    if deterministic() {
        // SAFETY: SQLITE_TESTCTRL_PRNG_SEED takes an int and a (null)
        // connection: seed the PRNG with the int. It is called before any
        // connection opens.
        unsafe {
            rusqlite::ffi::sqlite3_test_control(
                rusqlite::ffi::SQLITE_TESTCTRL_PRNG_SEED,
                1 as std::ffi::c_int,
                std::ptr::null_mut::<rusqlite::ffi::sqlite3>(),
            );
        }
    }
}

/// `sqlite_source_id()` of the linked library.
pub fn sqlite_source_id() -> String {
    rusqlite::Connection::open_in_memory()
        .and_then(|c| c.query_row("SELECT sqlite_source_id()", [], |r| r.get(0)))
        .unwrap_or_default()
}

/// The child's command line: one operation and its flags.
#[derive(clap::Parser)]
#[command(about = "The crashcells reference session store, as a child (docs/PROTOCOL.md)")]
struct Cli {
    #[command(subcommand)]
    op: ops::ChildOp,
}

/// Parses `args` (the program name first) and runs the operation; returns
/// the exit code. A usage error (an unknown mutant, say) exits 2, so that a
/// mutant this store does not know is refused rather than ignored.
pub fn main_from(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    use clap::Parser;
    match Cli::try_parse_from(args) {
        Ok(cli) => main_with(cli.op),
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() { 2 } else { 0 }
        }
    }
}

/// Runs a child operation as a process would: errors go to stderr as one
/// line, and the result is the exit code.
pub fn main_with(op: ops::ChildOp) -> i32 {
    seed_sqlite_prng();
    match ops::run(op) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("crashcells child: error: {e}");
            e.exit_code()
        }
    }
}
