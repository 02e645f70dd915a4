//! The trial pipeline, written once for every cell: a folder per family,
//! listed here lowest first. Each file imports only files listed before it
//! (its folder's earlier files, or earlier folders); `tests/imports.rs`
//! checks that order (`PIPELINE`).
//!
//! - [`outcome`] and [`trial`], the vocabulary: what a trial found, as data
//!   (a pass, a fire with its violations, a skip, an error or an
//!   interruption, each with its typed reason);
//! - [`run`], the run's machinery: the pool of child work, the threads, the
//!   run's recoveries by store bytes, a fire's refires, the context;
//! - [`judge`]: the census, a crash state to a verdict, the one driver of
//!   crash states (every crash source runs through it), and the sources and
//!   sweeps it shares;
//! - [`plain`]: the plain-path decision: a fire found forked, confirmed
//!   exec'd; a recorded fire against a real kill;
//! - [`workload`]: a workload cell's job and its crash sources (timed,
//!   point, refind, recorded, power, fault);
//! - [`race`]: the race shape (cell 2), its sweep and its recorded sweep;
//! - [`result`]: a job dispatched to its shape's crash source, its trials
//!   folded into its result.
//!
//! Data flows one way: job → crash source → reap and classify → leg audit →
//! recovery passes → the cell's judgement → result and evidence.

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
pub use run::context::{Context, FIRST_START, OnLibrary, Shared, preflight_deadline, scale_deadline};
pub use trial::Trial;
