//! Controlled schedules for a race (issue 40, item 1): a claim that checks
//! and then acts outside one transaction is seen by construction, not when
//! the scheduler happens to overlap the racers.
//!
//! Crash model: nothing is killed. Under syscall tracing r0 is released
//! alone and stopped at the entry of its first file-mutating call after its
//! barrier, the first write of its claim: its read is done, its write not
//! begun, and (SQLite) it holds the write lock. The others are then
//! released and run until each one waits for that lock (stopped in a
//! sleep: the busy handler's) or has ended; only then does r0 go on. So
//! every claim's read comes before any claim's write (`reads-first`): a
//! store that reads `pending` and writes `running` without the predicate
//! lets every racer win, whatever the machine's load.
//!
//! Clause: the race's own (cell 2): at most one racer wins, the handoff is
//! claimed exactly once. The free races stay beside this schedule: they
//! sample contention as a whole.
//!
//! The hold itself is not the race's (`race::hold`): a cell with two
//! writers can use it too.

use std::sync::Mutex;

use crate::kill::TrialIndex;
use crate::pipeline::judge::census::preflight;
use crate::pipeline::judge::coverage::Coverage;
use crate::pipeline::judge::pending::Pending;
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::Outcome;
use crate::pipeline::race::hold::{Hold, READS_FIRST};
use crate::pipeline::race::job::{Order, R0, Race, Racing};
use crate::pipeline::trial::Trial;

impl Race<'_> {
    /// The race's controlled schedules, each a trial judged as a free race
    /// is: today `reads-first`, as trial 0 (a sweep's points start at 1);
    /// and what each schedule's hold did, as data for [`noted`].
    pub fn scheduled(&self) -> (Vec<Trial>, Vec<String>) {
        let said = Mutex::new(Vec::new());
        let trials = self.trials(None, &[TrialIndex::CENSUS], &|i| self.reads_first(i, &said));
        (trials, said.into_inner().unwrap_or_default())
    }

    fn reads_first(&self, index: TrialIndex, said: &Mutex<Vec<String>>) -> Pending {
        let filter = match preflight() {
            Ok(filter) => filter,
            Err(o) => return Pending::ended(Trial::ended(index, o)),
        };
        let env = match self.env(READS_FIRST) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let hold = Hold::default();
        let mut trial = Trial::new(index);
        trial.schedule = Some(READS_FIRST);
        let raced = self.run(&env, self.racers, R0::Held(filter, &hold), Order::ReadsFirst);
        let what = if self.racing == Racing::Claims { "claim" } else { "append" };
        let held = hold.said(self.racers, what);
        said.lock().expect("no schedule panics holding its words").push(held.clone());
        trial.details.push(held);
        let prepared = raced.and_then(|f| prepare(&self.crash(&env, &f, None), &mut trial));
        Pending::prepared(trial, env, prepared)
    }
}

/// A sweep's trials after schedules that passed: a passing result says, in
/// its details, which schedules it passed too (`said`, as each schedule
/// made it: no detail is looked for by its text).
pub fn noted(
    said: &[String],
    (mut trials, coverage): (Vec<Trial>, Option<Coverage>),
) -> (Vec<Trial>, Option<Coverage>) {
    if let Some(last) = trials.last_mut().filter(|t| !t.is_bad()) {
        last.details.extend(said.iter().map(|d| format!("passed {d}")));
    }
    (trials, coverage)
}
