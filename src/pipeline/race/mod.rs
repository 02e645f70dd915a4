//! The race shape (cell 2): the hold a controlled schedule stops a process
//! with (hold), its job and free races (job), its controlled schedules
//! (schedule), its syscall sweep re-run at every point (sweep),
//! and the same sweep from one recording of each of r0's paths (recorded).

pub mod hold;
pub mod job;
pub mod recorded;
pub mod schedule;
pub mod sweep;
