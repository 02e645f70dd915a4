//! Rebuilt race states beside real kills, point by point: what shows that
//! a recorded cell-2 or cell-6 sweep's states are the real ones before they
//! are trusted (on WAL, that the wal-index model of
//! [`crate::crashstate::walindex`] stands).
//!
//! Crash model: both sides are [`crate::pipeline::race::recorded`]'s: at
//! sweep point N, r0 killed at the entry of its Nth call on the point's
//! path; one side rebuilds that state from the recording and races the
//! surviving racers over it, the other kills a real r0 there in a real
//! race (for cell 6, the other writers appending on what r0 left). Clause:
//! the race's (the writers'); a point agrees when both reach the same kind
//! of verdict (pass, fire, error).

use crate::kill::{Ordinal, TrialIndex};
use crate::pipeline::outcome::Outcome;
use crate::pipeline::race::job::Race;
use crate::pipeline::race::recorded::{RealKills, judged, recordings};
use crate::pipeline::trial::Trial;

/// Races a point's real kill may take to reach the rebuilt state's
/// verdict: what the survivors do is the scheduler's (two of them closing
/// at once skip the checkpoint a lone last one makes, and a commit r0 wrote
/// but never indexed then comes back), as a timed fire gets its tries.
pub const TRIES: u32 = 5;

/// One sweep point's verdicts: the rebuilt state's and the real kill's,
/// how many real races it took to reach the rebuilt verdict, and whether
/// the rebuilt state dropped a commit r0's `-shm` had not indexed (where
/// the real verdict is the others' timing: see
/// [`crate::pipeline::race::recorded`]'s `without_unindexed`); and each
/// side's details, where the judge says what it found (for the writers,
/// what each acked and what was recovered of it).
#[derive(Debug)]
pub struct Side {
    pub point: u64,
    pub recorded: Outcome,
    pub real: Outcome,
    pub races: u32,
    pub unindexed: bool,
    pub details: [Vec<String>; 2],
}

impl Side {
    /// Whether both reached the same kind of verdict.
    pub fn agrees(&self) -> bool {
        std::mem::discriminant(&self.recorded) == std::mem::discriminant(&self.real)
    }
}

/// The verdicts at sweep points `points` of `race` (its racers the
/// catalog's `sweep_racers`) rebuilt from its recordings, beside a real
/// kill of r0 there in `full` (every racer, as a recorded fire's
/// confirmation races), a point's real kill raced again up to [`TRIES`]
/// times until it reaches the rebuilt verdict; or why the recordings
/// cannot stand for the states.
/// No points: every winning-claim point after r0's ready record, where the
/// others were connected when r0 died (on WAL, where the `-shm` matters);
/// `most` keeps that many of them, spread evenly from the first to the last.
pub fn side_by_side(
    race: &Race,
    full: &Race,
    (points, most): (Option<&[u64]>, Option<usize>),
) -> Result<Vec<Side>, String> {
    let rec = match recordings(race) {
        Ok(Ok(rec)) => rec,
        Ok(Err(why)) => return Err(why),
        Err(ended) => return Err(ended.trials.last().map_or("the recording ended".into(), |t| t.outcome.to_string())),
    };
    if let Some(why) = rec.disagrees() {
        return Err(why.clone());
    }
    let connected = rec.connected();
    let points = points.map_or(connected, <[u64]>::to_vec);
    let points = match most {
        Some(n) if n >= 2 && points.len() > n => {
            (0..n).map(|i| points[i * (points.len() - 1) / (n - 1)]).collect::<Vec<_>>()
        }
        _ => points,
    };
    let real = RealKills::of(full, rec.split());
    let rebuilt = |point: u64| {
        let (mut trials, _, unindexed) = judged(race, &rec, &[point]);
        let t = trials.pop().unwrap_or_else(|| Trial::new(TrialIndex::at(Ordinal(point))));
        (t.outcome, t.details, !unindexed.is_empty())
    };
    let killed = |point: u64| {
        let t = real.kill_at(rec.filter, point, &rec.census);
        (t.outcome, t.details)
    };
    let side = |&point: &u64| {
        let (recorded, rebuilt_said, unindexed) = rebuilt(point);
        let (real, real_said) = killed(point);
        let mut side = Side { point, recorded, real, races: 1, unindexed, details: [rebuilt_said, real_said] };
        while !side.agrees() && side.races < TRIES {
            // A harness error (a deadline on a loaded machine) is no verdict: that side runs again.
            if matches!(side.recorded, Outcome::Error(_)) {
                (side.recorded, side.details[0], _) = rebuilt(point);
            }
            (side.real, side.details[1]) = killed(point);
            side.races += 1;
        }
        side
    };
    Ok(points.iter().map(side).collect())
}
