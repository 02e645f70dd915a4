//! Kill modes: how a trial's child meets its `SIGKILL`.
//!
//! - [`timed`]: once the child has acknowledged a seeded number of
//!   operations (the seed suite's method: long, realistic runs, but a kill
//!   rarely lands inside a commit);
//! - [`syscall`]: at the entry of the child's Nth file-mutating system call,
//!   for every N of a short workload, so that every crash state of its write
//!   path is visited;
//! - [`outside`]: files a traced child creates outside its folder, named;
//! - [`inject`]: what an injecting mode does to a call instead of a kill,
//!   and [`fault`], `--kill fault`'s injection (a write or sync fails), and
//!   [`short_write`], `--kill short-write`'s (a write is cut short).
//!
//! [`KillPoint`] says where a trial's kill landed, for every report, and
//! for a race ([`racer`]) where the killed racer was in it.

pub mod fault;
pub mod inject;
pub mod locks;
pub mod outside;
pub mod racer;
pub mod short_write;
pub mod syscall;
pub mod timed;

use serde::{Deserialize, Serialize};
use std::fmt;

/// A kill point's ordinal: the Nth counted call of a traced run, from 1
/// (the point after its last call is one more). Its own type, apart from
/// [`TrialIndex`]: a sweep names its trials by their points, a timed run
/// by their number, and the two were one `u32` cast from a `u64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ordinal(pub u64);

impl fmt::Display for Ordinal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A trial's index in its job: a timed trial's number, or the ordinal of
/// the kill point a sweep judged (0: its census). A report's field is 32
/// bits, so an ordinal past it saturates (no workload has 4 billion calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TrialIndex(u32);

impl TrialIndex {
    /// A sweep's census, before any point.
    pub const CENSUS: TrialIndex = TrialIndex(0);

    /// The `n`th trial of a run that counts its trials.
    pub const fn nth(n: u32) -> TrialIndex {
        TrialIndex(n)
    }

    /// The trial that judged kill point `at`.
    pub fn at(at: Ordinal) -> TrialIndex {
        TrialIndex(u32::try_from(at.0).unwrap_or(u32::MAX))
    }

    /// The kill point a sweep's trial judged (its census: 0).
    pub fn ordinal(self) -> Ordinal {
        Ordinal(u64::from(self.0))
    }

    pub const fn get(self) -> u32 {
        self.0
    }

    /// The next trial.
    pub fn next(self) -> TrialIndex {
        TrialIndex(self.0.saturating_add(1))
    }
}

impl fmt::Display for TrialIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a trial's kill landed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillPoint {
    pub trial: TrialIndex,
    /// Acknowledged operations seen when the kill was sent.
    pub after_acks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    /// A race's kill (cell 2): where the killed racer was, and whether the
    /// kill played a part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racer: Option<racer::RacerAt>,
}

impl KillPoint {
    /// One line for a reader: the trial, the acks seen, and where the
    /// syscall kill mode stopped the child when it did.
    pub fn describe(&self) -> String {
        let mut s = format!("trial {}, after {}", self.trial, count(self.after_acks, "ack"));
        if self.ordinal.is_some() || self.syscall.is_some() {
            s.push_str(", at");
            if let Some(n) = self.ordinal {
                s.push_str(&format!(" syscall #{n}"));
            }
            if let Some(name) = &self.syscall {
                s.push_str(&format!(" {name}"));
            }
        }
        let mut place = Vec::new();
        if let Some(f) = &self.file {
            place.push(f.clone());
        }
        if let Some(o) = self.offset {
            place.push(format!("offset {o}"));
        }
        if let Some(n) = self.len {
            place.push(count(n, "byte"));
        }
        if !place.is_empty() {
            s.push_str(&format!(" ({})", place.join(", ")));
        }
        if let Some(r) = &self.racer {
            s.push_str(&format!("; {}", r.describe()));
        }
        s
    }

    /// The call this kill stopped, as a race's label reads it.
    pub fn call(&self) -> racer::Call<'_> {
        racer::Call { syscall: self.syscall.as_deref(), file: self.file.as_deref() }
    }
}

/// `n` of a thing, for a reader: "1 ack", "2 acks".
fn count(n: u64, one: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {one}s") }
}
