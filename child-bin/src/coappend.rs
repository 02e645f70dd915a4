//! `co-append`: one of several writers appending to session `main` at once
//! (docs/PROTOCOL.md §2, `co-append`; cell 6, concurrent appends).
//!
//! Crash model: each writer may be killed with `SIGKILL` at any instant
//! while the others run on. Every append is one `BEGIN IMMEDIATE`
//! transaction that reads the session's next position and inserts at it, so
//! no other writer can take that position in between; its ack follows the
//! commit. Clause served: every acked append of every writer survives
//! exactly once, in its writer's order, at unique and contiguous positions.

use std::fs::File;
use std::path::PathBuf;

use clap::Args;
use crashcells_protocol::{APPEND_SESSION, AckWriter, Mutant, Op};

use crate::ChildError;
use crate::ops::{ack, open, ready};

#[derive(Debug, Args)]
pub struct CoAppendArgs {
    #[arg(long)]
    pub db: PathBuf,
    #[arg(long)]
    pub acks: PathBuf,
    /// This writer's name: its messages are `<NAME>-m0, <NAME>-m1, ...`.
    #[arg(long)]
    pub writer: String,
    /// A lock file the driver holds exclusively; the writers go when it drops it.
    #[arg(long)]
    pub barrier: PathBuf,
    #[arg(long)]
    pub mutant: Option<Mutant>,
    /// Exit 0 after this many appends instead of running until killed.
    #[arg(long)]
    pub stop_after: Option<u64>,
}

/// Opens the store, makes sure `main` exists, writes `ready`, waits at the
/// barrier, then appends and acks until killed or `--stop-after`.
pub fn co_append(a: CoAppendArgs) -> Result<(), ChildError> {
    let barrier = File::open(&a.barrier).map_err(ChildError::io("barrier"))?;
    let mut store = open(&a.db)?;
    store.create_session(APPEND_SESSION, None)?;
    let mut acks = AckWriter::create(&a.acks).map_err(ChildError::io("ack journal"))?;
    acks.record(&ready(&store, Op::CoAppend.as_str())).map_err(ChildError::io("ack journal"))?;
    // Blocks until the driver drops its exclusive lock: the writers start together.
    barrier.lock_shared().map_err(ChildError::io("barrier"))?;
    for i in 0..a.stop_after.unwrap_or(u64::MAX) {
        let content = format!("{}-m{i}", a.writer);
        if a.mutant == Some(Mutant::PositionReadOutsideTxn) {
            store.append_position_read_outside(APPEND_SESSION, "user", &content)?;
        } else {
            store.append(APPEND_SESSION, "user", &content, &mut || ())?;
        }
        acks.record(&ack(Op::CoAppend.as_str(), i)).map_err(ChildError::io("ack journal"))?;
    }
    Ok(())
}
