//! The trial pipeline, written once for every cell (the table of contents):
//!
//! - [`context`]: what every trial of a run needs from it, and the progress
//!   hook it reports to;
//! - [`trial`] and [`outcome`]: what a trial found, as data: a pass, a fire
//!   with its violations, a skip, an error or an interruption, each with
//!   its typed reason (the report turns them into words);
//! - [`verdict`]: from any crash state to a verdict: journals, ready record,
//!   leg audit (skip), recovery, the cell's check; every crash source below
//!   ends there;
//! - [`parallel`]: work over `--jobs` threads, and the loop that stops at
//!   the first item that does not pass;
//! - [`census`]: whether syscall kill points can run here, and what a
//!   sweep learns before its points;
//! - [`workload`]: a workload cell's job (one child runs until killed), and
//!   its crash sources: [`timed`] (a kill once a seeded number of acks is
//!   reached), [`point`] (a real kill at syscall point N, and the census
//!   that counts the points), [`recorded`] (one recorded run, every crash
//!   state rebuilt from its log, a fire confirmed by a real kill; [`refind`]:
//!   for a store whose calls differ from run to run, a kill where a run
//!   reaches the fired state again), [`power`]
//!   (the power-loss states of the same log, in-order or torn, sharing a
//!   recording and its recoveries where asked: [`power_share`]), [`fault`]
//!   (a run per write or sync made to fail, and what the store made of it,
//!   its plan and its findings' words);
//! - [`driver`]: the one driver of crash states: a crash source
//!   ([`driver::Source`]) yields units and judges one; the driver owns the
//!   waves up to the first that does not pass, each distinct store
//!   recovered once, the evidence with its recovery beside it, progress
//!   (every crash source runs through it); [`recoveries`]:
//!   the run's recoveries by store bytes, each distinct state recovered
//!   once per run;
//! - [`pending`]: the trials of a timed result, of a free race or of a
//!   re-executed sweep as the driver's source, each trial's folder read in
//!   as its store;
//! - [`race`]: the race shape (cell 2): park, a barrier, N claimants,
//!   released together (no kill), or in an order that decides whether racer
//!   r0 wins or loses while it is traced to a kill point; [`race_sweep`]:
//!   cell 2's syscall sweep over both of r0's paths, re-run at every point
//!   through the one driver;
//!   [`race_recorded`]: the same sweep from one recording of each path,
//!   through the one driver;
//! - [`sweep`]: the re-executed sweep's plan (a census, the points), its
//!   points run through the one driver; [`coverage`]: the
//!   points a sweep planned and those that landed;
//! - [`confirm`]: a fire found through a forked child, run again with every
//!   operation exec'd before it is reported; [`refire`]: a fire's repro
//!   rerun a few times in the run, how often it fired again;
//! - [`result`]: a job's trials folded into its result, its evidence kept,
//!   its repro derived from the run's options.
//!
//! Data flows one way: job → crash source → reap and classify → leg audit →
//! recovery passes → the cell's judgement → result and evidence. Each file
//! imports only files listed before it that it needs (tests/imports.rs
//! checks that no two import each other).

pub mod judge;
pub mod outcome;
pub mod plain;
pub mod race;
pub mod result;
pub mod run;
pub mod trial;
pub mod workload;

pub use outcome::Outcome;
pub use result::dispatch::{run_job, run_job_guarded};
pub use run::context::{Context, Shared, Step, Tally, preflight_deadline, scale_deadline};
pub use trial::Trial;
