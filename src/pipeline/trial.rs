//! What a trial found: its outcome, its kill point, the leg audit and what
//! recovery said, and the folder it ran in ([`TrialEnv`]), which is removed
//! when the trial passes and kept as evidence when it does not.

use super::outcome::Outcome;
use crate::kill::KillPoint;
use crate::legaudit::Audit;
use crate::report::Trace;
use crate::trialdir::TrialEnv;

/// A finished trial.
#[derive(Debug)]
pub struct Trial {
    /// The trial's number (timed), or its kill point (syscall; 0 for a census).
    pub index: u32,
    pub outcome: Outcome,
    pub kill_point: Option<KillPoint>,
    pub acked: u64,
    pub audit: Option<Audit>,
    pub synchronous: Option<String>,
    /// `PRAGMA integrity_check` of the recovered store, once recovery ran.
    pub integrity: Option<String>,
    pub details: Vec<String>,
    pub env: Option<TrialEnv>,
    /// The calls of its run and where its crash was put, when it is
    /// evidence and a trace was taken: its timeline's calls.
    pub trace: Option<Trace>,
}

impl Trial {
    pub fn new(index: u32) -> Trial {
        Trial {
            index,
            outcome: Outcome::Pass,
            kill_point: None,
            acked: 0,
            audit: None,
            synchronous: None,
            integrity: None,
            details: Vec::new(),
            env: None,
            trace: None,
        }
    }

    /// A trial that ended before it began, with `outcome`.
    pub fn ended(index: u32, outcome: Outcome) -> Trial {
        Trial::new(index).conclude(outcome)
    }

    /// Ends the trial with `outcome` unless an earlier step already ended it.
    pub fn conclude(mut self, outcome: Outcome) -> Trial {
        if self.outcome.is_pass() {
            self.outcome = outcome;
        }
        self
    }

    /// Whether the trial ended on something other than a pass.
    pub fn is_bad(&self) -> bool {
        !self.outcome.is_pass()
    }

    /// Gives the trial its folder, kept as evidence if it does not pass.
    pub fn with_env(mut self, env: TrialEnv) -> Trial {
        self.env = Some(env);
        self
    }
}
