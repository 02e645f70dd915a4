//! What every trial of a run needs from it ([`Context`]: the options, the
//! child, the folders, the deadline), and the progress hook it reports to
//! ([`Tally`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crashcells_protocol::Ready;

use super::pool::Pool;
use crate::harness::Launcher;
use crate::options::RunOptions;
use crate::recovery::Batching;

/// How much longer than the measured start a readiness wait allows: a
/// preflight ran alone, a loaded machine runs everything slower.
const SLACK: u32 = 3;

/// What every trial of a run needs from it.
#[derive(Clone, Debug)]
pub struct Context {
    /// The run's options as given, its seed resolved: every repro derives
    /// from them.
    pub options: RunOptions,
    pub seed: u64,
    /// The child, exec'd for each operation or forked by its fork server.
    pub child: Launcher,
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
    /// Where this job's trials and kill points report their progress.
    pub tally: Tally,
    /// The run's one pool of child work, shared by every result.
    pub pool: Pool,
    /// How long the child took to write its ready record in the preflight
    /// (through its fork server, if it has one): what the deadline scales
    /// with ([`Context::scaled_deadline`]).
    pub start: Duration,
    /// The most children one unit of the pool starts at once in this run
    /// (a race's claimants; 1 without a race).
    pub crowd: u32,
}

/// A step of a result's progress: how many trials or kill points it will
/// run (once known: a sweep knows after its census), one more that ended,
/// or the phase a sweep is in (`recording`, then `checking`): a recorded
/// sweep spends most of its time before its first point is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Planned(u64),
    Done,
    Phase(&'static str),
}

/// The progress hook of one job: the pipeline calls it, the command line
/// draws it (a progress bar on a terminal, nothing elsewhere). A no-op by
/// default, so that a caller that draws nothing gives nothing.
#[derive(Clone, Default)]
pub struct Tally(Option<Arc<dyn Fn(Step) + Send + Sync>>);

impl Tally {
    pub fn new(f: impl Fn(Step) + Send + Sync + 'static) -> Tally {
        Tally(Some(Arc::new(f)))
    }

    /// `n` trials or kill points are to run.
    pub fn planned(&self, n: u64) {
        if let Some(f) = &self.0 {
            f(Step::Planned(n));
        }
    }

    /// One more trial or kill point ended.
    pub fn done(&self) {
        if let Some(f) = &self.0 {
            f(Step::Done);
        }
    }

    /// The result entered a phase of its work.
    pub fn phase(&self, name: &'static str) {
        if let Some(f) = &self.0 {
            f(Step::Phase(name));
        }
    }
}

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Tally(hook)" } else { "Tally(none)" })
    }
}

#[cfg(test)]
impl Context {
    /// A context for unit tests that start no child: default options, seed
    /// 1, a one-second deadline, `jobs` threads and what the child said.
    pub(crate) fn for_tests(jobs: usize, child_ready: Option<Ready>) -> Context {
        Context {
            options: RunOptions::default(),
            seed: 1,
            child: Launcher::exec(crate::harness::ChildCommand { program: "child".into(), prefix: vec![], cwd: None }),
            work_root: std::env::temp_dir(),
            evidence_root: std::env::temp_dir(),
            deadline: Duration::from_secs(1),
            jobs,
            child_ready,
            tally: Default::default(),
            pool: Pool::new(jobs),
            start: Duration::ZERO,
            crowd: 1,
        }
    }
}

impl Context {
    /// Which recovery steps the child takes for many states in one process
    /// (`dump-batch`, `catch-up-batch` in its ready record); unknown means none.
    pub fn batching(&self) -> Batching {
        let ready = self.child_ready.as_ref();
        Batching {
            dumps: ready.is_some_and(Ready::dumps_in_batches),
            steps: ready.is_some_and(Ready::catches_up_in_batches),
        }
    }

    /// How many children may start at once across the run: the most a unit
    /// starts together (a race's claimants), in every unit of the pool.
    pub fn at_once(&self) -> u32 {
        self.crowd.max(1).saturating_mul(self.pool.size() as u32)
    }

    /// The bound on every wait of a child, given `--deadline` (`asked`):
    /// that, or more when the child's measured start times the children
    /// that may start at once would not fit in it, with room for a loaded
    /// machine. A slow but healthy child gets verdicts, not deadline errors;
    /// a stalled one is still caught.
    pub fn scaled_deadline(&self, asked: Duration) -> Duration {
        asked.max(self.start.saturating_mul(self.at_once()).saturating_mul(SLACK))
    }

    /// The mutant the run asked for, if any.
    pub fn mutant(&self) -> Option<&str> {
        self.options.mutant.as_deref()
    }
}
