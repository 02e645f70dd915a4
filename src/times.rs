//! `times.json`: what the driver's clock saw of a trial, the time axis of
//! its timeline. No call and no ack carries a time of its own (the ack
//! journal's lines have none, a trace counts calls), so the page's axis is
//! the driver's: for a timed kill, when it looked at the ack journal and
//! how many acks it held, and when it sent the kill; for a race, when each
//! racer started, was seen at its barrier, was released and was seen to
//! end (won, lost, or killed at its call), and when its ack journal was
//! last written (its claim's ack). Times are milliseconds from the trial's
//! start; a "seen" time is as late as the driver's poll that saw it.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// The file's name in a trial's folder (and so in its evidence).
pub const FILE: &str = "times.json";

/// A trial as the driver's clock saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Times {
    /// A timed kill: each look at the ack journal, `(ms, acks it held)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<(f64, u64)>,
    /// When the kill was sent, if the driver sent one (r0's, in a race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_ms: Option<f64>,
    /// A race: one per racer, r0 first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub racers: Vec<Racer>,
    /// A race: each barrier's release, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<Release>,
}

/// One racer of a race, as the driver saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Racer {
    pub racer: u32,
    pub started_ms: Option<f64>,
    /// When its ready record was seen: it was at its barrier.
    pub ready_ms: Option<f64>,
    /// When the barrier it waited on was released.
    pub released_ms: Option<f64>,
    /// When its end was seen.
    pub ended_ms: Option<f64>,
    /// `won`, `lost`, `killed`, or how else it ended.
    pub end: Option<String>,
    /// When its ack journal was last written (its claim's ack, if it wrote one).
    pub last_ack_ms: Option<f64>,
    /// A controlled schedule's holds (r0's): when each was seen held, and
    /// when it was let go; the timeline draws each over its lane.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_ms: Vec<(f64, f64)>,
}

/// A barrier's release: whom it let go.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Release {
    pub ms: f64,
    pub who: String,
}

impl Times {
    /// The times a trial's folder holds, if it holds them.
    pub fn read(dir: &Path) -> Option<Times> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(FILE)).ok()?).ok()
    }

    /// Writes them into a trial's folder; the timeline is drawn without a
    /// time axis if this fails, so a failure is not the trial's.
    pub fn write(&self, dir: &Path) {
        let _ = std::fs::write(dir.join(FILE), serde_json::to_string(self).unwrap_or_default());
    }
}

/// A trial's clock, shared by the threads that drive it: its start, and
/// the times recorded so far.
pub struct Clock {
    start: Instant,
    wall: SystemTime,
    times: Mutex<Times>,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::start()
    }
}

impl Clock {
    pub fn start() -> Clock {
        Clock { start: Instant::now(), wall: SystemTime::now(), times: Mutex::new(Times::default()) }
    }

    /// Milliseconds since the start, to the microsecond.
    pub fn now(&self) -> f64 {
        round(self.start.elapsed().as_secs_f64() * 1000.0)
    }

    /// Records something with the times (a poisoned lock records nothing:
    /// the axis is for a reader, never the verdict's).
    pub fn with(&self, f: impl FnOnce(&mut Times)) {
        if let Ok(mut t) = self.times.lock() {
            f(&mut t);
        }
    }

    /// Racer `r`'s entry, made if it is new.
    pub fn racer(&self, r: u32, f: impl FnOnce(&mut Racer)) {
        self.with(|t| {
            if let Some(i) = t.racers.iter().position(|x| x.racer == r) {
                f(&mut t.racers[i]);
            } else {
                let mut racer = Racer { racer: r, ..Racer::default() };
                f(&mut racer);
                t.racers.push(racer);
                t.racers.sort_by_key(|x| x.racer);
            }
        });
    }

    /// A file's last write, on this clock (`None` before the start or unknown).
    pub fn modified(&self, path: &Path) -> Option<f64> {
        let at = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
        at.duration_since(self.wall).ok().map(|d| round(d.as_secs_f64() * 1000.0))
    }

    pub fn times(&self) -> Times {
        self.times.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

fn round(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_written_into_a_folder_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::start();
        clock.racer(1, |r| r.end = Some("won".into()));
        clock.racer(0, |r| r.end = Some("killed".into()));
        clock.racer(1, |r| r.ended_ms = Some(2.5));
        clock.with(|t| t.releases.push(Release { ms: 1.0, who: "r0".into() }));
        let times = clock.times();
        assert_eq!(times.racers.iter().map(|r| r.racer).collect::<Vec<_>>(), [0, 1], "r0 first");
        assert_eq!(times.racers[1].ended_ms, Some(2.5), "an entry is updated, not made again");
        times.write(dir.path());
        assert_eq!(Times::read(dir.path()), Some(times));
        assert_eq!(Times::read(&dir.path().join("absent")), None);
    }
}
