//! Cell 2's syscall sweep: racer r0 killed at each of its kill points, on
//! both of its paths.
//!
//! Crash model: r0 is stopped at the entry of its Nth file-mutating call and
//! killed there while the other racers wait at their barrier or race. Which
//! path r0 takes is decided by the order of release, never by the
//! scheduler: its **winning claim** when it is released alone first (the
//! handoff is pending; the others go once r0 has ended, and race over
//! whatever its kill left), its **losing claim** when the others are
//! released first and r0 once they all ended (one of them won). A census
//! runs each path to its end and counts its points, W and L; the sweep's
//! points are 1..=W (the winning claim's N = n) then W+1..=W+L (the losing
//! claim's N = n - W), so a `--point` names one path and one point of it.
//!
//! Clause: as in every race, at most one racer wins and the store shows the
//! handoff claimed exactly once. A result passes only if r0 was killed at
//! every planned point of its winning claim: a point it never reached means
//! its path was not the census's, and the winning claim, where a claim can
//! be torn, was not covered. A losing-claim point r0 did not reach is
//! counted and said, not an error.
//!
//! Re-executed (WAL legs, `--replay off`, `--point`, a recording that
//! disagrees), each point is a real race, and the store the racers left in
//! its folder is a trial of the one driver ([`crate::pipeline::judge::sweep::re_executed`]):
//! recovered in a batch with its wave's, judged by the race's judge on
//! every racer's journal. A winning point r0 never reached is judged alone
//! at once: its pass is the error above, which no batch may decide.

use std::sync::{Mutex, OnceLock};

use crashcells_protocol::{EXIT_LOST, EXIT_WON, Ready};

use crate::cells::End;
use crate::crashstate::{Files, Names};
use crate::journal;
use crate::kill::racer::Stage;
use crate::kill::syscall::Goal;
use crate::kill::{KillPoint, Ordinal, TrialIndex};
use crate::legaudit::audit_leg;
use crate::pipeline::judge::census::{Census, Filter};
use crate::pipeline::judge::coverage::{self, Coverage, Path};
use crate::pipeline::judge::pending::{MakeTrial, Pending};
use crate::pipeline::judge::sweep::{Sweepable, re_executed};
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::race::job::{Finished, Order, R0, Race, Turn, acks_of};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::ended_with;
use crate::trialdir::TrialEnv;

/// How many of r0's kill points each of its paths has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub winning: u64,
    pub losing: u64,
}

/// One of r0's paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    Winning,
    Losing,
}

impl Claim {
    pub fn name(self) -> &'static str {
        match self {
            Claim::Winning => "winning-claim",
            Claim::Losing => "losing-claim",
        }
    }

    /// The path as a reader says it: `winning claim`.
    pub fn phrase(self) -> &'static str {
        match self {
            Claim::Winning => "winning claim",
            Claim::Losing => "losing claim",
        }
    }

    pub(super) fn order(self) -> Order {
        match self {
            Claim::Winning => Order::R0First,
            Claim::Losing => Order::R0Last,
        }
    }

    /// How r0 ends this path when nothing kills it.
    pub(super) fn exit(self) -> i32 {
        match self {
            Claim::Winning => EXIT_WON,
            Claim::Losing => EXIT_LOST,
        }
    }
}

impl Split {
    /// Which path sweep point `n` is on, and r0's point N on it.
    pub fn locate(self, n: u64) -> (Claim, u64) {
        if n <= self.winning { (Claim::Winning, n) } else { (Claim::Losing, n - self.winning) }
    }

    /// The sweep's points of each path, for the coverage of a result.
    pub fn paths(self) -> Vec<Path> {
        let mut paths = vec![Path { name: Claim::Winning.name(), points: 1..=self.winning }];
        if self.losing > 0 {
            paths.push(Path { name: Claim::Losing.name(), points: self.winning + 1..=self.winning + self.losing });
        }
        paths
    }
}

/// Cell 2's syscall sweep: a race, and how many of r0's points each of
/// its paths has, once the census ran.
pub struct RaceSweep<'a> {
    race: &'a Race<'a>,
    split: OnceLock<Split>,
}

impl Sweepable for RaceSweep<'_> {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        self.count_points(filter)
    }

    fn at(&self, filter: Filter, n: u64, census: &Census) -> Pending {
        self.killed_at(filter, n, census)
    }

    fn driven(&self, census: &Census, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
        self.race.trials(Some(census), indices, run)
    }
}

impl<'a> RaceSweep<'a> {
    /// The syscall result's trials of `race` and what they covered.
    pub fn run(race: &'a Race<'a>) -> (Vec<Trial>, Option<Coverage>) {
        let me = RaceSweep { race, split: OnceLock::new() };
        let swept = re_executed(race.ctx, race.job.seed, &me);
        let paths = me.split.get().map(|s| s.paths()).unwrap_or_default();
        let coverage = coverage::of(&swept, &paths);
        (swept.trials, coverage)
    }

    /// Runs each path once to its end, traced, and counts r0's points on it.
    /// The winning census's ready record and leg audit stand for every point.
    fn count_points(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        let (winning, env) = self.census_of(filter, Claim::Winning)?;
        // With r0 alone there is no other racer to win first.
        let losing = if self.race.racers > 1 { self.census_of(filter, Claim::Losing)?.0 } else { 0 };
        let _ = self.split.set(Split { winning, losing });
        match ready_of(&env, 0) {
            Ok(ready) => Ok(Census {
                points: winning + losing,
                windows: None,
                audit: audit_leg(&env.db, &ready, self.race.leg),
                ready,
            }),
            Err(f) => Err(ended_with(Some(env), Outcome::Error(f))),
        }
    }

    /// One path's census: the race in that path's order, r0 traced to its end.
    fn census_of(&self, filter: Filter, claim: Claim) -> Result<(u64, TrialEnv), Box<Trial>> {
        let race = self.race;
        let env = race
            .env(&format!("census-{}", claim.name()))
            .map_err(|f| ended_with(None, Outcome::Error(Failure::census(f))))?;
        let finished = match race.run(&env, race.racers, R0::Traced(filter, Goal::ToEnd), claim.order()) {
            Ok(f) => f,
            Err(o) => return Err(ended_with(Some(env), o.of_census())),
        };
        match (finished.r0_points, finished.ends.first()) {
            (Some(points), Some(&End::Exited(code))) if code == claim.exit() => Ok((points, env)),
            _ => {
                let f = Failure::R0OffPath { path: claim.phrase(), ends: finished.ends };
                Err(ended_with(Some(env), Outcome::Error(Failure::census(f))))
            }
        }
    }

    /// A sweep of `race` whose census already ran (a recorded sweep's
    /// recordings): a real kill at one of its points confirms a fire.
    pub(super) fn with_split(race: &'a Race<'a>, split: Split) -> RaceSweep<'a> {
        let me = RaceSweep { race, split: OnceLock::new() };
        let _ = me.split.set(split);
        me
    }

    /// One real race at sweep point `n`, judged on its own recovery: a
    /// recorded fire's confirmation.
    pub(super) fn kill_at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        self.killed_at(filter, n, census).alone(self.race.ctx, self.race.cell)
    }

    /// One trial of the sweep, read up to its recovery: r0 killed at sweep
    /// point `n`, on the path the point belongs to, with the others
    /// released in that path's order; the store they left is the trial's.
    fn killed_at(&self, filter: Filter, n: u64, census: &Census) -> Pending {
        let index = TrialIndex::at(Ordinal(n));
        let Some(&split) = self.split.get() else {
            return Pending::ended(Trial::ended(index, Outcome::Error(Failure::NoSplit)));
        };
        let (claim, at) = split.locate(n);
        let of = if claim == Claim::Winning { split.winning } else { split.losing };
        let mut trial = Trial::new(index);
        let raced = self.race.env(&format!("p{n}")).map_err(Outcome::Error).map(|env| {
            let finished = self.raced(&env, filter, at, claim);
            (env, finished)
        });
        let fate = match raced.as_ref().ok().and_then(|(_, f)| f.as_ref().ok()) {
            Some(f) => f.kill_point.as_ref().map_or(Fate::PathEnded, |k| Fate::Killed(racer_stage(k))),
            None => Fate::RaceEnded,
        };
        trial.details.push(said(claim, (at, of, n), fate));
        let (env, f) = match raced {
            Ok((env, Ok(f))) => (env, f),
            Ok((env, Err(o))) => return Pending::ended(trial.conclude(o).with_env(env)),
            Err(o) => return Pending::ended(trial.conclude(o)),
        };
        if f.r0_points.is_some() && claim == Claim::Winning {
            let judged = self.race.judge(&env, &f, Some(census), &mut trial);
            return Pending::ended(trial.conclude(unreached(claim, at, &f, judged)).with_env(env));
        }
        // The sweep's point, as `--point` takes it; the ordinal stays r0's own.
        trial.kill_point = f.kill_point.clone().map(|kp| KillPoint { trial: index, ..kp });
        let prepared = prepare(&self.race.crash(&env, &f, Some(census)), &mut trial);
        Pending::prepared(trial, env, prepared)
    }
}

impl RaceSweep<'_> {
    /// One race with r0 killed at its point `at` on `claim`, the others
    /// released in that claim's order, and r0's kill weighed: whether it
    /// left the store as it found it.
    fn raced(&self, env: &TrialEnv, filter: Filter, at: u64, claim: Claim) -> Result<Finished, Outcome> {
        let r0 = R0::Traced(filter, Goal::KillAt(at));
        // The store when one side of the race had ended and the other had not begun.
        let at_turn = Mutex::new(None);
        let turn = |t: Turn| {
            if t == Turn::Sides {
                *at_turn.lock().expect("no turn panics") = store_of(env);
            }
        };
        let finished = self.race.run_turning(env, self.race.racers, r0, claim.order(), &turn)?;
        let turned = at_turn.into_inner().expect("no turn panics");
        Ok(self.weighed(finished, claim, turned, env))
    }

    /// Marks r0's kill as one that played no part where the store's files
    /// were the same before and after r0's turn: on the winning claim the
    /// parked store against what r0 left (read before the others went), on
    /// the losing claim what the others left against the store at the end.
    fn weighed(&self, mut f: Finished, claim: Claim, turned: Option<Files>, env: &TrialEnv) -> Finished {
        let Some(racer) = f.kill_point.as_mut().and_then(|k| k.racer.as_mut()) else { return f };
        let (found, left) = match claim {
            Claim::Winning => (self.race.parked_store().ok(), turned),
            Claim::Losing => (turned, store_of(env)),
        };
        if let (Some(found), Some(left)) = (found, left) {
            racer.no_part |= found.differs_from(&left).is_none();
        }
        f
    }
}

/// The store's files in a race's folder, if they can be read.
fn store_of(env: &TrialEnv) -> Option<Files> {
    Files::read_store(env.dir(), &Names::store(&env.db)).ok()
}

/// Where a killed r0 was, from its kill point.
fn racer_stage(kill: &KillPoint) -> Option<Stage> {
    kill.racer.as_ref().map(|r| r.stage)
}

/// What became of r0 at a sweep point.
#[derive(Clone, Copy, Debug)]
enum Fate {
    /// Killed there, where it was if its journal says.
    Killed(Option<Stage>),
    /// Its path ended before the point.
    PathEnded,
    /// An error cut the race short: r0's path did not end early, the race did.
    RaceEnded,
}

/// What became of r0 at sweep point `n` (its point `at` of `of` on its `claim`).
fn said(claim: Claim, (at, of, n): (u64, u64, u64), fate: Fate) -> String {
    let path = claim.phrase();
    match fate {
        Fate::Killed(stage) => killed_on(claim, stage, (at, of, n)),
        Fate::RaceEnded => format!(
            "r0 not killed at its point {at} of {of} on its {path} (sweep point {n}): the race ended before r0 got there"
        ),
        Fate::PathEnded => format!("r0 not killed: its {path} ended before its point {at} of {of} (sweep point {n})"),
    }
}

/// Where r0 was killed at sweep point `n`, its point `at` of `of` on the
/// path `claim`'s order sent it on: before its barrier it never claimed,
/// whatever the order.
pub(super) fn killed_on(claim: Claim, stage: Option<Stage>, (at, of, n): (u64, u64, u64)) -> String {
    let path = claim.phrase();
    let place = format!("at its point {at} of {of} (sweep point {n})");
    match stage {
        Some(Stage::BeforeBarrier) => {
            format!("r0 killed before its barrier, {place}, sent on its {path}: it never claimed")
        }
        Some(Stage::AfterClaim) => format!("r0 killed after its {path}, {place}: its claim was over"),
        Some(Stage::InClaim) | None => format!("r0 killed on its {path}, {place}"),
    }
}

/// A race in which r0 finished before its kill point: on the winning claim
/// an error (that point of the winning path was not covered) unless the
/// race fired anyway; on the losing claim the race's own outcome.
fn unreached(claim: Claim, at: u64, f: &Finished, judged: Outcome) -> Outcome {
    match (f.r0_points, claim, &judged) {
        (Some(points), Claim::Winning, Outcome::Pass) => Outcome::Error(Failure::WinningPointUnreached { points, at }),
        _ => judged,
    }
}

/// Racer `r`'s ready record, or why there is none.
pub(super) fn ready_of(env: &TrialEnv, r: u32) -> Result<Ready, Failure> {
    let bytes = std::fs::read(acks_of(env, r)).unwrap_or_default();
    match journal::parse(&bytes).map(|j| j.ready) {
        Ok(Some(ready)) => Ok(ready),
        Ok(None) => Err(Failure::census(Failure::RacerNoReady(r))),
        Err(error) => Err(Failure::census(Failure::Journal { process: Some(format!("r{r}")), error })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_points_number_the_winning_claim_first_then_the_losing_one() {
        let split = Split { winning: 40, losing: 12 };
        assert_eq!(split.locate(1), (Claim::Winning, 1));
        assert_eq!(split.locate(40), (Claim::Winning, 40));
        assert_eq!(split.locate(41), (Claim::Losing, 1));
        assert_eq!(split.locate(52), (Claim::Losing, 12));
        let paths = split.paths();
        assert_eq!(paths[0].points, 1..=40);
        assert_eq!(paths[1].points, 41..=52);
        assert_eq!(Split { winning: 5, losing: 0 }.paths().len(), 1, "a lone racer has no losing claim");
    }

    /// What a point says of r0 comes from the race, not from the verdict:
    /// a point r0's path ended before is said so whatever the judge found.
    #[test]
    fn a_point_says_whether_r0_was_killed_its_path_ended_or_the_race_did() {
        let in_claim = Fate::Killed(Some(Stage::InClaim));
        assert!(
            said(Claim::Winning, (3, 22, 3), in_claim).starts_with("r0 killed on its winning claim, at its point 3")
        );
        assert!(
            said(Claim::Losing, (31, 30, 52), Fate::PathEnded).contains("its losing claim ended before its point 31")
        );
        assert!(said(Claim::Winning, (3, 22, 3), Fate::RaceEnded).ends_with("the race ended before r0 got there"));
        // ADK's point 1: r0 killed writing its ready record, sent on its winning claim.
        assert_eq!(
            said(Claim::Winning, (1, 22, 1), Fate::Killed(Some(Stage::BeforeBarrier))),
            "r0 killed before its barrier, at its point 1 of 22 (sweep point 1), sent on its winning claim: it never \
             claimed"
        );
        assert!(said(Claim::Losing, (9, 9, 31), Fate::Killed(Some(Stage::AfterClaim))).starts_with("r0 killed after"));
    }

    #[test]
    fn a_winning_point_r0_never_reached_is_an_error_unless_the_race_fired() {
        let f = Finished {
            ends: vec![End::Exited(EXIT_WON)],
            kill_point: None,
            r0_points: Some(30),
            log: None,
            wal_index: None,
        };
        assert!(matches!(
            unreached(Claim::Winning, 31, &f, Outcome::Pass),
            Outcome::Error(Failure::WinningPointUnreached { points: 30, at: 31 })
        ));
        let fire = Outcome::Fire(crate::pipeline::outcome::Finding {
            violations: vec![crate::cells::Violation::new("winners", "two won")],
            power: None,
            fault: None,
        });
        assert_eq!(unreached(Claim::Winning, 31, &f, fire.clone()), fire);
        assert_eq!(unreached(Claim::Losing, 31, &f, Outcome::Pass), Outcome::Pass);
    }
}
