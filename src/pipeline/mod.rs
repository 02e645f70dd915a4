//! The trial pipeline, written once for every cell (the table of contents):
//!
//! - [`trial`]: a trial's private folder, its outcome, and what it found;
//! - [`source`]: crash sources for a workload cell: a timed kill, a kill at
//!   syscall point N, and the census that counts a workload's points;
//! - [`race`]: the race shape (cell 2): park, a barrier, N claimants, racer
//!   r0 either racing freely or traced to a kill point;
//! - [`verdict`]: from a crashed (or finished) child to a verdict: journals,
//!   ready record, leg audit (skip), two recovery passes, the cell's check;
//! - [`sweep`]: the sweep skeleton: a census, then one trial per kill point
//!   spread over threads, the lowest non-passing point decisive;
//! - [`recorded`]: the default syscall sweep of a workload: one recorded
//!   run, every crash state rebuilt from its log, a fire confirmed by a real
//!   kill; [`power`]: the power-loss states of the same log; [`batch`]:
//!   checking rebuilt states many at a time;
//! - [`result`]: a job's trials folded into its result, its evidence kept,
//!   its repro derived from the run's options.
//!
//! Data flows one way: job → crash source → reap and classify → leg audit →
//! recovery passes → the cell's judgement → result and evidence.

pub mod batch;
pub mod power;
pub mod race;
pub mod recorded;
pub mod result;
pub mod source;
pub mod sweep;
pub mod trial;
pub mod verdict;

use std::path::PathBuf;
use std::time::Duration;

use crashcells_protocol::Ready;

use crate::harness::ChildCommand;
use crate::options::RunOptions;

pub use result::{run_job, run_job_guarded};
pub use trial::{Outcome, Trial, TrialEnv};

/// What every trial of a run needs from it.
#[derive(Clone, Debug)]
pub struct Context {
    /// The run's options as given, its seed resolved: every repro derives
    /// from them.
    pub options: RunOptions,
    pub seed: u64,
    pub child: ChildCommand,
    /// The run's own work folder; trials make theirs inside it.
    pub work_root: PathBuf,
    /// Where fires and errors keep their evidence (created on first use).
    pub evidence_root: PathBuf,
    /// The bound on every wait of a trial.
    pub deadline: Duration,
    /// Threads a syscall sweep spreads its trials over.
    pub jobs: usize,
    /// What the child said of itself in the preflight (its protocol and the
    /// operations it implements); none when the run was interrupted first.
    pub child_ready: Option<Ready>,
}

impl Context {
    /// The mutant the run asked for, if any.
    pub fn mutant(&self) -> Option<&str> {
        self.options.mutant.as_deref()
    }
}
