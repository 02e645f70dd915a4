//! One trial's world: a private folder with the database, the ack journal,
//! the child's stderr and an isolated config home; and what the trial found.
//! A passing trial's folder is removed; a fire's or an error's is kept as
//! evidence.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::audit::Audit;
use crate::harness::ChildCommand;
use crate::matrix::Leg;
use crate::report::KillPoint;

/// What every cell needs from the run.
#[derive(Clone, Debug)]
pub struct Context {
    pub child: ChildCommand,
    /// The run's own work folder; trials make theirs inside it.
    pub work_root: PathBuf,
    /// Where fires and errors keep their evidence (created on first use).
    pub evidence_root: PathBuf,
    pub mutant: Option<String>,
    /// The bound on every wait of a trial.
    pub deadline: Duration,
    /// `--trials`: overrides the catalog's trials (or races) per result.
    pub trials: Option<u32>,
    /// `--trial`: run only this trial of each result.
    pub only_trial: Option<u32>,
    /// What `repro` must say to rerun a result: the run's seed, matrix and child.
    pub seed: u64,
    /// `--point`: a syscall result runs only this kill point.
    pub only_point: Option<u64>,
    /// `--points`: a syscall sweep visits this many points, drawn with the seed.
    pub points: Option<u32>,
    /// Threads a syscall sweep spreads its trials over.
    pub jobs: usize,
    pub matrix_arg: String,
    pub child_arg: Option<String>,
    /// `--catalog`, which changes a cell's window and trials.
    pub catalog_arg: Option<String>,
}

/// `--deadline` when not given; a repro names any other value.
pub const DEFAULT_DEADLINE_SECS: u64 = 30;

/// A trial's private folder.
#[derive(Debug)]
pub struct TrialEnv {
    dir: tempfile::TempDir,
    pub db: PathBuf,
    pub acks: PathBuf,
    pub home: PathBuf,
    pub stderr: PathBuf,
}

impl TrialEnv {
    /// Makes the folder and writes the leg's config into its home.
    pub fn new(ctx: &Context, leg: &Leg, label: &str) -> std::io::Result<TrialEnv> {
        let dir = tempfile::Builder::new().prefix(&format!("{label}-")).tempdir_in(&ctx.work_root)?;
        let home = dir.path().join("home");
        leg.config().write_home(&home)?;
        Ok(TrialEnv {
            db: dir.path().join("store.db"),
            acks: dir.path().join("acks.ndjson"),
            stderr: dir.path().join("child.stderr"),
            home,
            dir,
        })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Copies everything the trial left into `dest`, then removes the folder.
    /// `dest` must not exist yet: evidence is never merged into, or written
    /// over, another trial's or another run's.
    pub fn keep(self, dest: &Path) -> std::io::Result<()> {
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::create_dir(dest)?;
        copy_tree(self.dir.path(), dest)
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// What a trial concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The clause was violated; the reason says how.
    Fire(String),
    /// The leg could not be probed here.
    Skip(String),
    /// The harness could not reach a verdict.
    Error(String),
}

/// A finished trial.
#[derive(Debug)]
pub struct Trial {
    pub index: u32,
    pub outcome: Outcome,
    pub kill_point: Option<KillPoint>,
    pub acked: u64,
    pub audit: Option<Audit>,
    pub synchronous: Option<String>,
    pub details: Vec<String>,
    pub env: Option<TrialEnv>,
}

impl Trial {
    pub fn new(index: u32, env: Option<TrialEnv>) -> Trial {
        Trial {
            index,
            outcome: Outcome::Pass,
            kill_point: None,
            acked: 0,
            audit: None,
            synchronous: None,
            details: Vec::new(),
            env,
        }
    }

    /// Ends the trial with `outcome` unless an earlier step already ended it.
    pub fn conclude(mut self, outcome: Outcome) -> Trial {
        if self.outcome == Outcome::Pass {
            self.outcome = outcome;
        }
        self
    }
}
