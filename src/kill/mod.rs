//! Kill modes: how a trial's child meets its `SIGKILL`.
//!
//! - [`timed`]: once the child has acknowledged a seeded number of
//!   operations (the seed suite's method: long, realistic runs, but a kill
//!   rarely lands inside a commit);
//! - [`syscall`]: at the entry of the child's Nth file-mutating system call,
//!   for every N of a short workload, so that every crash state of its write
//!   path is visited;
//! - [`inject`]: what an injecting mode does to a call instead of a kill,
//!   and [`fault`], `--kill fault`'s injection (a write or sync fails), and
//!   [`short_write`], `--kill short-write`'s (a write is cut short).
//!
//! [`KillPoint`] says where a trial's kill landed, for every report.

pub mod fault;
pub mod inject;
pub mod short_write;
pub mod syscall;
pub mod timed;

use serde::{Deserialize, Serialize};

/// Where a trial's kill landed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillPoint {
    pub trial: u32,
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
        s
    }
}

/// `n` of a thing, for a reader: "1 ack", "2 acks".
fn count(n: u64, one: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {one}s") }
}
