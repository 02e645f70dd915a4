//! What the power-loss sweeps of one cell, leg and seed share when their
//! caller turns sharing on ([`super::context::Shared`]: the audit, whose
//! power and torn columns sweep the same recorded run): one recording, and
//! the recovery of each distinct store, made once for both.
//!
//! Crash model: the torn model keeps every state of the in-order one (its
//! in-order variants, byte for byte), so over one recording the torn sweep's
//! stores include the power sweep's; a store is recovered by content, so
//! whichever sweep comes second recovers only what the first did not. Two
//! recordings of one workload are not the same bytes (SQLite's journal
//! nonce and WAL salts are random, rows carry times), so without the shared
//! recording nothing could be shared. The judgement of each state is its
//! sweep's own, as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::batch::{Checker, Recovery};
use super::recorded::Recording;
use super::workload::Workload;
use crate::crashstate::Files;

/// A recording and the recoveries of its stores, shared by the power-loss
/// sweeps of one cell, leg and seed.
pub struct Share {
    /// None when the recording could not be used (a skip, an error, a log
    /// that disagrees with the disk): each sweep then records on its own,
    /// and ends as that recording says, with it as evidence.
    rec: Option<Recording>,
    recovered: Mutex<Known>,
}

/// Recovered stores by a hash of their bytes, each with its bytes.
type Known = HashMap<u64, Vec<(Files, Arc<Recovery>)>>;

impl Share {
    /// The share of `w`'s power sweeps with `seed`, recorded by the first
    /// that asks; none when the caller shares nothing.
    pub fn of(w: &Workload, seed: u64) -> Option<Arc<Share>> {
        let key = format!("power-loss {} {} {seed}", w.job.cell.id, w.leg.name);
        let rec = || w.honoured_recording(false).ok().filter(|r| r.disagrees.is_none());
        w.ctx.shared.get(&key, || Share { rec: rec(), recovered: Mutex::default() })
    }

    /// The shared recording, if it can be used.
    pub fn recording(&self) -> Option<&Recording> {
        self.rec.as_ref()
    }
}

/// Recovers `files`, in batches over the sweep's threads; with a share,
/// only the stores no sweep of it recovered yet (the share is held while
/// they are, so that a second sweep asking meanwhile waits, then finds
/// them).
pub fn recover(checker: &Checker, files: &[Files], share: Option<&Share>) -> Vec<Arc<Recovery>> {
    let Some(share) = share else {
        return power_batches(checker, &files.iter().collect::<Vec<_>>()).into_iter().map(Arc::new).collect();
    };
    let mut known = share.recovered.lock().expect("no sweep panics holding the recoveries");
    // Each store hashed once: a WAL state's store is megabytes.
    let keys: Vec<u64> = files.iter().map(Files::store_hash).collect();
    let found = |i: usize, known: &Known| {
        let f = &files[i];
        known.get(&keys[i])?.iter().find(|(g, _)| g.store().eq(f.store())).map(|(_, r)| Arc::clone(r))
    };
    let missing: Vec<usize> = (0..files.len()).filter(|&i| found(i, &known).is_none()).collect();
    (missing.len()..files.len()).for_each(|_| checker.ctx.tally.done());
    let stores: Vec<&Files> = missing.iter().map(|&i| &files[i]).collect();
    for (&i, r) in missing.iter().zip(power_batches(checker, &stores)) {
        // An interrupted batch is not kept: a later sweep would take it for a verdict.
        if matches!(r, Err(super::outcome::Outcome::Interrupted(_))) {
            continue;
        }
        known.entry(keys[i]).or_default().push((files[i].clone(), Arc::new(r)));
    }
    let interrupted = || Arc::new(Err(super::outcome::Outcome::Interrupted(super::outcome::Interruption::PowerStates)));
    (0..files.len()).map(|i| found(i, &known).unwrap_or_else(interrupted)).collect()
}

/// Recovers `files` in batches over the sweep's threads, in order, each
/// batch a step of the sweep's progress.
fn power_batches(checker: &Checker, files: &[&Files]) -> Vec<Recovery> {
    checker.recover_spread(files, "power", &|range| range.for_each(|_| checker.ctx.tally.done()))
}
