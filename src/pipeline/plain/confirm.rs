//! A fast path never changes a verdict: a fire found through a forked child
//! (a timed trial, a race, a sweep's point, a recorded sweep's confirming
//! kill) is run again on the plain path, every operation exec'd, at the
//! same trial or point, before it is reported.
//!
//! Crash model and clause: the found trial's own; only the launcher
//! differs. A fork server whose processes do not start as an exec'd child
//! does (state made in the server before the fork: a cache a warm-up fills,
//! a `random.Random()` instance every fork shares) can make a store fire
//! where, exec'd, it does not. Such a fire is an `error` that names the
//! fork server, never a fire and never dropped; a fire the plain path
//! reproduces is reported as found, its details saying it was confirmed.
//! Confirmations cost only where something fired.

use crate::kill::TrialIndex;
use crate::pipeline::outcome::{Failure, Outcome, Site};
use crate::pipeline::run::context::Context;
use crate::pipeline::trial::Trial;
use crate::plan::KillMode;

/// How many exec'd runs, at least, a fire whose kill lands where the
/// scheduler lets it (a timed kill, a free race) gets before it counts as
/// the fork server's: its instant is not repeated, so a run that misses
/// proves little (a fire of every other trial misses 8 runs once in 256).
pub const TRIES: u32 = 8;

/// The most exec'd runs one fire gets.
pub const MOST_TRIES: u32 = 64;

/// How many exec'd runs a fire of `kill` found at trial `index` gets: a
/// sweep's point is one call, and one run says; a kill the scheduler
/// places gets 4 for every trial the found path took to fire (a rare
/// fire, found late, is as rare exec'd: with four times the runs it took,
/// a real one is missed about once in 50), at least [`TRIES`], at most
/// [`MOST_TRIES`]. A point of a race's sweep (`racy`) gets [`TRIES`]: r0's
/// kill lands on one call, but the racers it leaves race where the
/// scheduler lets them, so one exec'd race that passes proves little
/// (measured: racy-claim's fire was the fork server's `error` on 4 seeds
/// of 10 with one run). The runs stop at the first fire: a real finding
/// costs about what it took to find, a fork server's artefact the whole
/// budget.
pub fn tries(kill: KillMode, racy: bool, index: TrialIndex) -> u32 {
    let index = index.get();
    match (kill.sweeps_points(), racy) {
        (true, false) => 1,
        (true, true) => TRIES,
        (false, _) => index.saturating_add(1).saturating_mul(4).clamp(TRIES, MOST_TRIES),
    }
}

/// Where `trial` stands in a result of `kill`, as its repro names it (a
/// sweep's trial 0 is its census: the whole sweep runs again).
pub fn site(kill: KillMode, trial: &Trial) -> Site {
    match (kill.sweeps_points(), trial.index) {
        (false, n) => Site::Trial(n.get()),
        (true, TrialIndex::CENSUS) => Site::Sweep,
        (true, n) => Site::Point(n.get()),
    }
}

/// What one exec'd run at a site found: its outcome, and how it got there
/// when not at the site itself (a recorded state found again where another
/// run reached it: [`crate::pipeline::plain::decide::Refound::how`]). The
/// confirmation's detail is made from it once, never rewritten from its text.
#[derive(Debug)]
pub struct Exec {
    pub outcome: Outcome,
    pub found_by: Option<String>,
}

impl Exec {
    /// A run at the site itself.
    pub fn at_site(outcome: Outcome) -> Exec {
        Exec { outcome, found_by: None }
    }
}

/// Whether `trial` is a fire the plain path must still confirm: it was
/// found through the fork server, and nothing exec'd reproduced it yet.
pub fn needed(ctx: &Context, trial: &Trial) -> bool {
    ctx.fast() && !trial.plain_confirmed && matches!(trial.outcome, Outcome::Fire(_))
}

/// Confirms the fire of `found` at `at` on the plain path: `again` runs a
/// trial or point exec'd and gives what it found (`None`: it gave no trial),
/// up to `tries` times, until one fires: first `at` itself, then for a
/// timed trial or a race the result's next trials (the same trial again
/// would repeat its seeded instant, and miss the same way each time). A
/// fire confirms it (its details say where, and what the plain path found
/// if its kinds differ); an interrupt leaves it interrupted; anything else
/// makes it an `error` naming the fork server.
pub fn confirm(
    found: &mut Trial,
    (at, launcher): (Site, &str),
    tries: u32,
    again: &mut dyn FnMut(Site) -> Option<Exec>,
) {
    let mut plain = Outcome::Pass;
    let mut runs = 0;
    while runs < tries {
        let site = at.after(runs);
        runs += 1;
        let Some(Exec { outcome, found_by }) = again(site) else { break };
        match outcome {
            Outcome::Fire(_) => {
                let how = found_by.unwrap_or_else(|| format!("{site} fired too"));
                found.details.push(format!("confirmed exec'd (not through the {launcher}): {how}"));
                if !same_kinds(&outcome, &found.outcome) {
                    found.details.push(format!("exec'd, {site} found: {outcome}"));
                }
                found.plain_confirmed = true;
                return;
            }
            Outcome::Interrupted(_) => {
                found.outcome = outcome;
                return;
            }
            other => plain = other,
        }
    }
    let fire = Box::new(std::mem::replace(&mut found.outcome, Outcome::Pass));
    let launcher = launcher.to_string();
    found.outcome = Outcome::Error(Failure::OnlyForked { at, launcher, found: fire, plain: Box::new(plain), runs });
}

/// The last resort for a fire the exec'd trials did not repeat, timed or
/// a free race's (a kill's instant cannot be carried from one path to
/// another, and exec'd children keep other time: measured, the reference
/// store's ack-before-commit fired forked at trial 14 and at none of 60
/// exec'd trials after it; racy-claim's free race fired forked and passed
/// 8 exec'd races on 2 seeds of 10, exec'd racers starting too far apart to
/// overlap): the plain path's syscall result of the same cell and leg
/// (`swept`: its decisive trial, every operation exec'd), whose kill points
/// and schedules do not depend on time. If it fires, `found` (an
/// [`Failure::OnlyForked`] error) is a fire again, its details saying
/// where the sweep fired and whether the same kind; if not, it stays the
/// error.
pub fn by_sweep(found: &mut Trial, swept: Option<Trial>) {
    let Some(swept) = swept.filter(|t| matches!(t.outcome, Outcome::Fire(_))) else { return };
    let Outcome::Error(Failure::OnlyForked { found: fire, .. }) = &found.outcome else { return };
    let fire = (**fire).clone();
    let kind = if same_kinds(&fire, &swept.outcome) { "the same kind" } else { "another kind" };
    let at = swept.schedule.map_or_else(|| format!("point {}", swept.index), |s| format!("its schedule {s}"));
    found.details.push(format!(
        "confirmed exec'd by the syscall sweep of this cell and leg, whose kill points and schedules do not \
         depend on time: {at} fired {kind}: {}",
        swept.outcome
    ));
    found.outcome = fire;
    found.plain_confirmed = true;
}

/// A timed fire confirmed by the run's syscall result of the same cell and
/// leg, which fired at `point` (`fired`) on the plain path: found exec'd,
/// or found forked and killed again exec'd there. The exec'd sweep
/// [`by_sweep`] would run visits that point, so it would fire: the same
/// verdict, without the exec'd trials or that sweep (issue 42).
pub fn by_syscall_result(found: &mut Trial, (point, launcher): (u32, &str), fired: &Outcome) {
    // After exec'd trials that missed, the found fire is an error naming
    // the fork server: the fire again, as [`by_sweep`] makes it.
    if let Outcome::Error(Failure::OnlyForked { found: fire, .. }) = &found.outcome {
        found.outcome = (**fire).clone();
    }
    let kind = if same_kinds(&found.outcome, fired) { "the same kind" } else { "another kind" };
    found.details.push(format!(
        "confirmed exec'd (not through the {launcher}) by this run's syscall result of this cell and leg, whose \
         kill points do not depend on time: point {point} fired {kind} on the plain path: {fired}"
    ));
    found.plain_confirmed = true;
}

/// Whether two fires violated the same kinds, in the same order (their
/// sentences may differ: a timed kill's counts do).
fn same_kinds(a: &Outcome, b: &Outcome) -> bool {
    let kinds = |o: &Outcome| match o {
        Outcome::Fire(f) => f.violations.iter().map(|v| v.kind.to_string()).collect(),
        _ => Vec::new(),
    };
    kinds(a) == kinds(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Violation;
    use crate::pipeline::outcome::{Finding, Interruption};

    fn fire(what: &str) -> Outcome {
        let kind = if what.starts_with('8') { "winners" } else { "double-claim" };
        Outcome::Fire(Finding { violations: vec![Violation::new(kind, what)], power: None, fault: None })
    }

    fn found() -> Trial {
        Trial::ended(TrialIndex::nth(4), fire("8 of 8 racers won"))
    }

    #[test]
    fn a_fire_the_plain_path_repeats_is_kept_and_says_so() {
        let mut t = found();
        let mut runs = vec![Outcome::Pass, fire("2 of 8 racers won")].into_iter();
        let mut sites = Vec::new();
        confirm(&mut t, (Site::Trial(4), "fork server"), 3, &mut |site| {
            sites.push(site);
            runs.next().map(Exec::at_site)
        });
        assert_eq!(sites, [Site::Trial(4), Site::Trial(5)], "the found trial, then the next");
        assert_eq!(t.outcome, fire("8 of 8 racers won"));
        assert!(t.plain_confirmed);
        assert_eq!(
            t.details,
            [
                "confirmed exec'd (not through the fork server): trial 5 fired too",
                "exec'd, trial 5 found: 2 of 8 racers won",
            ]
        );
    }

    /// A fire found again where another run reached its state says so in
    /// its one detail, made from what the run found, not rewritten after.
    #[test]
    fn a_fire_found_again_elsewhere_says_how_in_its_detail() {
        let mut t = found();
        let by = "by a real kill where the store's files first held the state of point 4 again";
        confirm(&mut t, (Site::Point(4), "fork server"), 1, &mut |_| {
            Some(Exec { outcome: fire("8 of 8 racers won"), found_by: Some(by.into()) })
        });
        assert!(t.plain_confirmed);
        assert_eq!(t.details, [format!("confirmed exec'd (not through the fork server): {by}")]);
    }

    #[test]
    fn a_fire_only_the_fork_server_sees_is_an_error_naming_it() {
        let mut t = found();
        let mut runs = 0;
        confirm(&mut t, (Site::Trial(4), "fork server"), 3, &mut |_| {
            runs += 1;
            Some(Exec::at_site(Outcome::Pass))
        });
        assert_eq!(runs, 3, "every try was spent");
        let Outcome::Error(Failure::OnlyForked { at: Site::Trial(4), found, runs: 3, .. }) = &t.outcome else {
            panic!("{:?}", t.outcome)
        };
        assert_eq!(**found, fire("8 of 8 racers won"));
        let why = t.outcome.to_string();
        assert!(why.starts_with("fires only through the fork server: there it found 8 of 8"), "{why}");
        assert!(why.contains("exec'd, trials 4 to 6 pass;"), "{why}");
        assert!(why.contains("state the fork server's processes made before their operation"), "{why}");
        assert!(!t.plain_confirmed);
    }

    #[test]
    fn a_timed_fire_the_trials_missed_is_a_fire_again_when_the_execd_sweep_fires() {
        let mut t = found();
        confirm(&mut t, (Site::Trial(4), "fork server"), 8, &mut |_| Some(Exec::at_site(Outcome::Pass)));
        let error = t.outcome.clone();
        by_sweep(&mut t, Some(Trial::ended(TrialIndex::nth(3), Outcome::Pass)));
        assert_eq!(t.outcome, error, "a sweep that passes leaves the error");
        by_sweep(&mut t, None);
        assert_eq!(t.outcome, error);
        by_sweep(&mut t, Some(Trial::ended(TrialIndex::nth(31), fire("8 of 8 racers won"))));
        assert_eq!(t.outcome, fire("8 of 8 racers won"));
        assert!(t.plain_confirmed);
        let last = t.details.last().unwrap();
        assert!(last.contains("point 31 fired the same kind: 8 of 8 racers won"), "{last}");
    }

    /// racy-claim's free race, forked, fired; exec'd, its racers started
    /// too far apart to overlap: the syscall result's schedule confirms it.
    #[test]
    fn a_free_race_the_execd_races_missed_is_a_fire_again_when_the_schedule_fires() {
        let mut t = found();
        confirm(&mut t, (Site::Trial(0), "fork server"), 8, &mut |_| Some(Exec::at_site(Outcome::Pass)));
        let mut scheduled = Trial::ended(TrialIndex::nth(0), fire("8 of 8 racers won"));
        scheduled.schedule = Some("reads-first");
        by_sweep(&mut t, Some(scheduled));
        assert_eq!(t.outcome, fire("8 of 8 racers won"));
        let last = t.details.last().unwrap();
        assert!(last.contains("its schedule reads-first fired the same kind"), "{last}");
    }

    #[test]
    fn a_timed_fire_the_runs_syscall_result_fired_is_confirmed_by_it() {
        let mut t = found();
        by_syscall_result(&mut t, (31, "fork server"), &fire("double-claim"));
        assert_eq!(t.outcome, fire("8 of 8 racers won"), "the fire found stays the result's");
        assert!(t.plain_confirmed);
        let said = t.details.last().unwrap();
        assert!(
            said.starts_with("confirmed exec'd (not through the fork server) by this run's syscall result"),
            "{said}"
        );
        assert!(said.contains("point 31 fired another kind on the plain path"), "{said}");
        // After exec'd trials that missed: the error is the fire again.
        let mut t = found();
        confirm(&mut t, (Site::Trial(4), "fork server"), 8, &mut |_| Some(Exec::at_site(Outcome::Pass)));
        assert!(matches!(t.outcome, Outcome::Error(_)), "{:?}", t.outcome);
        by_syscall_result(&mut t, (31, "fork server"), &fire("8 of 8 racers won"));
        assert_eq!(t.outcome, fire("8 of 8 racers won"));
        assert!(t.details.last().unwrap().contains("point 31 fired the same kind"), "{:?}", t.details);
    }

    #[test]
    fn a_point_runs_once_and_an_interrupt_leaves_no_verdict() {
        let (point, timed, race) = (
            tries(KillMode::Syscall, false, TrialIndex::nth(9)),
            tries(KillMode::Timed, false, TrialIndex::nth(0)),
            tries(KillMode::None, true, TrialIndex::nth(2)),
        );
        assert_eq!((point, timed, race), (1, 8, 12));
        assert_eq!(tries(KillMode::Timed, false, TrialIndex::nth(99)), MOST_TRIES);
        // A race's sweep point: r0's call is fixed, the others race freely.
        assert_eq!(tries(KillMode::Syscall, true, TrialIndex::nth(30)), TRIES);
        let mut t = found();
        confirm(&mut t, (Site::Point(4), "fork server"), 1, &mut |_| Some(Exec::at_site(Outcome::Pass)));
        assert!(t.outcome.to_string().contains("exec'd, point 4 passes;"), "{}", t.outcome);
        assert!(!t.outcome.to_string().contains("too rare"), "one run of a point: no scheduler to blame");
        let mut t = found();
        confirm(&mut t, (Site::Trial(4), "fork server"), 3, &mut |_| {
            Some(Exec::at_site(Outcome::Interrupted(Interruption::BeforeTrial)))
        });
        assert_eq!(t.outcome, Outcome::Interrupted(Interruption::BeforeTrial));
    }
}
