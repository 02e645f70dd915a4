//! A crash state as the pipeline checks it, whichever model made it: the
//! kill point it belongs to, its ack journal, its store's files, and (for a
//! power-loss state) the rule that dropped data; and the process-crash
//! states of a recording at the points a sweep visits. The power-loss
//! states of the same log are [`super::power`]'s.
//!
//! Crash model: a `SIGKILL` at the entry of kill point N leaves the files
//! as the logged calls before N wrote them ([`super::files`]).

use super::files::Files;
use super::log::Log;
use crate::kill::syscall::{FileKind, Point};

/// One crash state to judge.
#[derive(Clone, Debug)]
pub struct State {
    /// The kill point it belongs to.
    pub point: Point,
    /// Its ack journal's bytes.
    pub acks: Vec<u8>,
    /// Its store's files (the acks among them or not: recovery ignores them).
    pub files: Files,
    /// States with one version (consecutive, of one log) hold one store.
    pub version: u64,
    /// For a power-loss state: the rule that dropped data, for a reader.
    pub rule: Option<String>,
}

/// The process-crash state at each of `points` (ascending), with its acks.
pub fn process_states(log: &Log, points: &[u64]) -> Vec<State> {
    states_from(Files::default(), log, points)
}

/// [`process_states`] of a log that began on the files `base` (a race's
/// claimant starts from the parked store, not from an empty folder).
pub fn states_from(base: Files, log: &Log, points: &[u64]) -> Vec<State> {
    let mut files = base;
    let mut applied = 0;
    let mut states = Vec::with_capacity(points.len());
    for &n in points {
        let before = log.before(n);
        for e in &before[applied..] {
            files.apply(&e.effect);
        }
        applied = before.len();
        let acks = files.get(FileKind::Acks).unwrap_or_default();
        let point = log.point(n);
        states.push(State { point, acks, files: files.clone(), version: files.version(), rule: None });
    }
    states
}
