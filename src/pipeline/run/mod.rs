//! The run's machinery, shared by every job of a run: the child-work pool,
//! the threads, the run's recoveries by store bytes, the refire of a fire's
//! repro, the syscall results' plain-path fires, the clock of confirmations
//! and refires, and the context every trial reads. Order: each file imports
//! only files listed before it, and the vocabulary (`outcome`, `trial`).

pub mod context;
pub mod parallel;
pub mod plainfires;
pub mod pool;
pub mod recoveries;
pub mod refire;
pub mod spent;
