//! A workload cell's job (one child runs its operation until killed) and
//! every crash source of it; every method of `Workload` is in this folder.
//! Order: job, then its sources, each importing only those listed before it.

pub mod fault;
pub mod job;
pub mod point;
pub mod power;
pub mod power_share;
pub mod recorded;
pub mod refind;
pub mod timed;
