//! Kill modes: how a trial's child meets its `SIGKILL`.
//!
//! - [`timed`]: once the child has acknowledged a seeded number of
//!   operations (the seed suite's method: long, realistic runs, but a kill
//!   rarely lands inside a commit);
//! - [`syscall`]: at the entry of the child's Nth file-mutating system call,
//!   for every N of a short workload, so that every crash state of its write
//!   path is visited.

pub mod record;
pub mod syscall;
pub mod timed;
