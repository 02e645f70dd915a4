//! `crashcells-protocol`: the wire format between the crashcells driver and
//! a child store, and nothing else (docs/PROTOCOL.md): the ready and ack
//! records, `dump`'s canonical state, the claim's exit codes, the config
//! home's variable and file, the journal-mode and synchronous enums, a
//! typed builder of an operation's arguments, the fake transport that
//! `deliver` sends through, the WAL-reset bug's range of SQLite versions and
//! the reference resolver, and the corpus of cases (`corpus/*.json`) that
//! the adapter libraries test themselves against.
//!
//! The driver and the reference store both depend on this crate and on
//! nothing of each other: a store in any language speaks the same format.

pub mod config;
pub mod corpus;
pub mod dump;
pub mod op;
pub mod records;
pub mod resolver;
pub mod transport;
pub mod version;

pub use config::{ConfigError, DatabaseConfig, HOME_ENV, JournalMode, Synchronous};
pub use dump::{Dump, DumpMessage, DumpObligation, DumpSession, LiveError};
pub use op::{
    APPEND_SESSION, CARRIED, DROP_EVERY, DROP_FIRST, EXIT_LOST, EXIT_UNSUPPORTED, EXIT_WON, FORK_EVERY, ForkStep,
    HANDOFF_SESSION, Mutant, Op, OpArgs, Rotation, STALL_AFTER,
};
pub use records::{
    Ack, AckWriter, CATCH_UP_BATCH, DUMP_BATCH, Decider, Decision, FORK_SERVER, ROTATE_SHAPES, Ready, Record, WARM_POOL,
};
pub use transport::Delivery;
pub use version::{SqliteVersion, WAL_RESET_RANGE, wal_reset_affected};

/// The protocol version the reference store speaks, and the newest the
/// driver speaks.
pub const PROTOCOL: u32 = 2;

/// Every version the driver speaks. A child of version 1 lists no
/// operations: it implements the five of version 1 and no others.
pub const SUPPORTED: [u32; 2] = [1, 2];

/// Whether the driver speaks version `v`.
pub fn speaks(v: u32) -> bool {
    SUPPORTED.contains(&v)
}

/// The versions the driver speaks, for a message: `1 and 2`.
pub fn spoken() -> String {
    let words: Vec<String> = SUPPORTED.iter().map(u32::to_string).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => words.join(""),
    }
}
