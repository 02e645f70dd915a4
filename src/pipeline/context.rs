//! What every trial of a run needs from it ([`Context`]: the options, the
//! child, the folders, the deadline), and the progress hook it reports to
//! ([`Tally`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crashcells_protocol::Ready;

use crate::harness::ChildCommand;
use crate::options::RunOptions;

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
    /// Where this job's trials and kill points report their progress.
    pub tally: Tally,
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
            child: ChildCommand { program: "child".into(), prefix: vec![], cwd: None },
            work_root: std::env::temp_dir(),
            evidence_root: std::env::temp_dir(),
            deadline: Duration::from_secs(1),
            jobs,
            child_ready,
            tally: Default::default(),
        }
    }
}

impl Context {
    /// Whether the child recovers many states in one `dump` (`dump-batch`
    /// in its ready record); unknown means no.
    pub fn dumps_in_batches(&self) -> bool {
        self.child_ready.as_ref().is_some_and(Ready::dumps_in_batches)
    }

    /// The mutant the run asked for, if any.
    pub fn mutant(&self) -> Option<&str> {
        self.options.mutant.as_deref()
    }
}
