//! The race shape (cell 2): the hold a controlled schedule stops a process
//! with (hold), its job and free races (job; park, the handoff parked once
//! and copied to each race; racers, the racers started and waited for),
//! its controlled schedules
//! (schedule; opener, a fresh process opening the store beside a held
//! writer), its syscall sweep re-run at every point (sweep),
//! and the same sweep from one recording of each of r0's paths (recorded),
//! whose rebuilt states are set beside real kills point by point (compare).
//! Cell 6's writers are racers too (writers): each appends instead of
//! claiming, and one is killed while the others run on; their sweep is
//! recorded too, on its one path.

pub mod compare;
pub mod hold;
pub mod job;
pub mod opener;
pub mod park;
pub mod preempt;
pub mod racers;
pub mod recorded;
pub mod schedule;
pub mod sweep;
pub mod writers;
pub mod writers_sweep;
