//! Process control, all of it, split by job (the table of contents):
//!
//! - [`command`]: what a child is started with (our own binary or `--child`);
//! - [`spawn`]: the one set-up every child gets before exec (its own process
//!   group, the parent-death signal, stderr to a file), plain children and
//!   short runs to their end; [`capture`]: where a child's stderr is kept
//!   (its file with room reserved, or memory where the file cannot be
//!   written); [`disk`]: the failures of the harness's own files, kept;
//! - [`traced`]: children under ptrace with a seccomp filter, stopped at the
//!   entry of the system calls the filter traps; [`seized`]: a forked
//!   process traced the same way without the filter; [`traps`]: which
//!   calls a traced child stops at, and how (the filter, or its test on
//!   every call's entry);
//! - [`tracee`]: the traced child's side of the fork (its filter, its own
//!   exec) and the CPU it shares with its tracer;
//! - [`fault`]: a trapped call made to fail with an errno instead of running;
//! - [`watchdog`]: the deadline of a traced child, kept from a thread of its own;
//! - [`reap`]: killing a group, reaping it, classifying the exit, and
//!   checking that nothing of the group is left;
//! - [`contain`]: the run's process container (a PID namespace whose init
//!   dies with the driver, or the subreaper), the pids a process sees of
//!   itself there, and the processes that escape their group, named;
//! - [`interrupt`]: the run's interrupt token, which every wait is given
//!   and looks at, and the `SIGINT`/`SIGTERM` handler that raises the
//!   process's;
//! - [`forkserver`]: a child's optional fork server, started once, forking
//!   a process per operation, over the lines of [`forkwire`], kept by
//!   [`served`] (restarted once if it ends, then exec); [`warmpool`]:
//!   a child's optional warm pool, processes exec'd ahead of need and used
//!   once each, for runtimes that cannot fork; [`fresh`]: the check that a
//!   forked or warm process starts as fresh as an exec'd one; [`launcher`]:
//!   one operation started exec'd, forked or warm, the seam the pipeline
//!   calls.
//!
//! Crash model: the driver delivers a real `SIGKILL` to the child's whole
//! process group. A killed trial is valid only if the child is reaped and its
//! status says it died of `SIGKILL`; an early exit cannot pass for a crash.
//! Every child also carries `PR_SET_PDEATHSIG = SIGKILL`, so a driver that is
//! itself killed leaves nothing running.

pub mod capture;
pub mod command;
pub mod contain;
pub mod disk;
mod fault;
pub mod forkserver;
mod forkwire;
mod fresh;
pub mod interrupt;
pub mod launcher;
pub mod quote;
pub mod reap;
mod seized;
mod served;
mod setup;
pub mod spawn;
pub mod traced;
mod tracee;
mod traps;
mod warmpool;
mod watchdog;

use std::time::Duration;

pub use command::ChildCommand;
pub use contain::become_subreaper;
pub use contain::{Containment, Place, contain, escaped};
pub use forkserver::{FORK_SERVER, ForkServer};
pub use forkwire::ForkError;
pub use interrupt::{Interrupt, catch_interrupts};
pub use launcher::{Launch, LaunchError, Launcher, serves_forks, serves_warm};
pub use reap::{Exit, KILL_GRACE, ReapError, Reaped, group_alive, reap_leftovers};
pub use setup::stderr_tail;
pub use spawn::{Cut, Running, can_place, run_to_end};
pub use traced::{TraceError, TraceEvent, Traced};
pub use traps::Traps;
pub use warmpool::{WARM_POOL, WarmError};

/// How often a bounded wait looks again. Pacing only: every wait ends on its
/// condition or its deadline, never on the passing of this interval.
pub const POLL: Duration = Duration::from_micros(200);
