//! What a trial found: its outcome, its kill point, the leg audit and what
//! recovery said, and the folder it ran in ([`TrialEnv`]), which is removed
//! when the trial passes and kept as evidence when it does not.

use super::outcome::Outcome;
use crate::kill::{KillPoint, TrialIndex};
use crate::legaudit::Audit;
use crate::model::Trace;
use crate::trialdir::TrialEnv;

/// A finished trial.
#[derive(Debug)]
pub struct Trial {
    /// The trial's number (timed), or its kill point (syscall; 0 for a census).
    pub index: TrialIndex,
    pub outcome: Outcome,
    pub kill_point: Option<KillPoint>,
    pub acked: u64,
    pub audit: Option<Audit>,
    pub synchronous: Option<String>,
    /// `PRAGMA integrity_check` of the recovered store, once recovery ran.
    pub integrity: Option<String>,
    pub details: Vec<String>,
    pub env: Option<TrialEnv>,
    /// A fire found through a forked child that the plain path (every
    /// operation exec'd) reproduced ([`super::confirm`]).
    pub plain_confirmed: bool,
    /// The calls of its run and where its crash was put, when it is
    /// evidence and a trace was taken: its timeline's calls.
    pub trace: Option<Trace>,
    /// The controlled schedule a race's trial ran (`reads-first`), if any:
    /// what a confirmation names, never read back from the details' text.
    pub schedule: Option<&'static str>,
}

impl Trial {
    pub fn new(index: TrialIndex) -> Trial {
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
            plain_confirmed: false,
            trace: None,
            schedule: None,
        }
    }

    /// A sweep point's evidence besides its folder: its kill point as JSON
    /// beside its files, and `calls` (its run's, up to the kill) for the
    /// timeline. Kept only when it is evidence: a sweep's passing points
    /// would add up.
    pub fn with_calls(mut self, calls: Trace) -> Trial {
        if let (Some(kp), Some(env)) = (&self.kill_point, &self.env) {
            let _ = std::fs::write(env.path("kill-point.json"), serde_json::to_string_pretty(kp).unwrap_or_default());
        }
        self.trace = Some(calls);
        self
    }

    /// A trial that ended before it began, with `outcome`.
    pub fn ended(index: TrialIndex, outcome: Outcome) -> Trial {
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

    /// Whether the trial is a confirmation's to check again: it did not
    /// pass, and not because a wait ran out its deadline. A recorded state
    /// whose recovery overstayed is recovered by the same `dump` a real
    /// kill's would be: confirming it would wait out the deadline again,
    /// and a hung `dump` would cost its result one deadline per check.
    pub fn to_confirm(&self) -> bool {
        self.is_bad() && !matches!(&self.outcome, Outcome::Error(f) if f.by_deadline())
    }

    /// Gives the trial its folder, kept as evidence if it does not pass.
    pub fn with_env(mut self, env: TrialEnv) -> Trial {
        self.env = Some(env);
        self
    }
}
