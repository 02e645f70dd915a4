//! What the power-loss sweeps of one cell, leg and seed share when their
//! caller turns sharing on ([`crate::pipeline::run::context::Shared`]: the audit, whose
//! power and torn columns sweep the same recorded run): one recording, and
//! a turn at recovering ([`crate::pipeline::judge::recover::Turn`]). The
//! recoveries themselves are the run's ([`crate::pipeline::run::recoveries`]):
//! the turn makes the second sweep wait for the first's, then find them.
//!
//! Crash model: the torn model keeps every state of the in-order one (its
//! in-order variants, byte for byte), so over one recording the torn sweep's
//! stores include the power sweep's; a store is recovered by content, so
//! whichever sweep comes second recovers only what the first did not
//! recover well (a failed recovery is not lent: each sweep meets its own
//! deadline), and says how many it took in its last detail. Two
//! recordings of one workload are not the same bytes (SQLite's journal
//! nonce and WAL salts are random, rows carry times), so without the shared
//! recording nothing could be shared. The judgement of each state is its
//! sweep's own, as before.

use std::sync::Arc;

use crate::pipeline::judge::recover::Turn;
use crate::pipeline::workload::job::Workload;
use crate::pipeline::workload::recorded::Recording;

/// A recording and a turn at recovering its stores, shared by the
/// power-loss sweeps of one cell, leg and seed.
pub struct Share {
    /// None when the recording could not be used (a skip, an error, a log
    /// that disagrees with the disk): each sweep then records on its own,
    /// and ends as that recording says, with it as evidence.
    rec: Option<Recording>,
    pub turn: Turn,
}

impl Share {
    /// The share of `w`'s power sweeps with `seed`, recorded by the first
    /// that asks; none when the caller shares nothing.
    pub fn of(w: &Workload, seed: u64) -> Option<Arc<Share>> {
        let key = format!("power-loss {} {} {seed}", w.job.cell.id, w.leg.name);
        let rec = || w.honoured_recording(false).ok().filter(|r| r.disagrees.is_none());
        w.ctx.shared.get(&key, || Share { rec: rec(), turn: Turn::default() })
    }

    /// The shared recording, if it can be used.
    pub fn recording(&self) -> Option<&Recording> {
        self.rec.as_ref()
    }
}
