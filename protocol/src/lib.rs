//! `crashcells-protocol`: the wire format between the crashcells driver and
//! a child store, and nothing else (docs/PROTOCOL.md): the ready and ack
//! records, `dump`'s canonical state, the claim's exit codes, the config
//! home's variable and file, the journal-mode and synchronous enums, and a
//! typed builder of an operation's arguments.
//!
//! The driver and the reference store both depend on this crate and on
//! nothing of each other: a store in any language speaks the same format.

pub mod config;
pub mod dump;
pub mod op;
pub mod records;

pub use config::{ConfigError, DatabaseConfig, HOME_ENV, JournalMode, Synchronous};
pub use dump::{Dump, DumpMessage, DumpSession};
pub use op::{APPEND_SESSION, EXIT_LOST, EXIT_WON, Mutant, Op, OpArgs};
pub use records::{Ack, AckWriter, Decider, Decision, Ready, Record};

/// The protocol version the driver and the reference store speak.
pub const PROTOCOL: u32 = 1;
