//! The run's one event stream: what the dispatcher and the pipeline say
//! while a run goes, typed, run → result → trial or point → phase. Every
//! consumer reads the same events: the progress bars, the timeline writer
//! (a fire's `timeline.html`, written as its evidence is staged) and the
//! collector the report is built from. The pipeline only emits; it never
//! calls a renderer, and none of them can change a verdict.

use std::path::Path;
use std::sync::Arc;

use super::{CellResult, Trace};
use crate::plan::Job;

/// The phase a result's work is in: a recorded sweep spends most of its
/// time before its first point is judged, so the bars say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Recording the workload whose crash states the sweep judges.
    Recording,
    /// Judging the points of the recording.
    Checking,
    /// Recovering the distinct crash states.
    Recovering,
}

impl Phase {
    /// The word the progress bars show.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Recording => "recording",
            Phase::Checking => "checking",
            Phase::Recovering => "recovering",
        }
    }

    /// Every phase, for the bars' width check.
    pub fn all() -> [Phase; 3] {
        [Phase::Recording, Phase::Checking, Phase::Recovering]
    }
}

/// One event of a run. `index` is the result's place in the plan the
/// dispatcher runs.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A result began.
    Begun { index: usize, job: &'a Job },
    /// It will run `count` trials, kill points or recoveries (a sweep
    /// knows after its census).
    Planned { index: usize, count: u64 },
    /// One more of them ended.
    Done { index: usize },
    /// It entered a phase of its work.
    Phase { index: usize, phase: Phase },
    /// Its evidence is being staged in `stage`, the folder that becomes
    /// the kept one once every file is in: what a fire's files say is
    /// there to read, and a consumer may add a file of its own.
    Staged { index: usize, result: &'a CellResult, trace: Option<&'a Trace>, stage: &'a Path },
    /// It finished, the `done`th of `total`.
    Finished { index: usize, done: usize, total: usize, result: &'a CellResult },
}

/// A consumer of the event stream. An error it returns is said in the
/// result whose event it was (a timeline that could not be written), never
/// a verdict.
pub trait Listener: Send + Sync {
    fn on(&self, event: &Event) -> Result<(), String>;
}

/// Hears nothing: for tests and library callers that show nothing.
pub struct Quiet;

impl Listener for Quiet {
    fn on(&self, _: &Event) -> Result<(), String> {
        Ok(())
    }
}

/// Several consumers as one, each told every event in turn.
pub struct Fanout(pub Vec<Arc<dyn Listener>>);

impl Listener for Fanout {
    fn on(&self, event: &Event) -> Result<(), String> {
        let errors: Vec<String> = self.0.iter().filter_map(|l| l.on(event).err()).collect();
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }
}

/// The stream as one result's work holds it: its index in the plan and
/// where its events go. A default one goes nowhere, so that a caller that
/// listens to nothing hears nothing.
#[derive(Clone, Default)]
pub struct Events {
    to: Option<Arc<dyn Listener>>,
    index: usize,
}

impl Events {
    /// The events of result `index`, told to `to`.
    pub fn of(index: usize, to: Arc<dyn Listener>) -> Events {
        Events { to: Some(to), index }
    }

    /// `n` trials, kill points or recoveries are to run.
    pub fn planned(&self, count: u64) {
        // A progress step a consumer could not draw is nothing a result says.
        let _ = self.emit(&Event::Planned { index: self.index, count });
    }

    /// One more of them ended.
    pub fn done(&self) {
        let _ = self.emit(&Event::Done { index: self.index });
    }

    /// The result entered `phase`.
    pub fn phase(&self, phase: Phase) {
        let _ = self.emit(&Event::Phase { index: self.index, phase });
    }

    /// The result's evidence is staged in `stage`: what the consumers could
    /// not do with it, each said in a line.
    pub fn staged(&self, result: &CellResult, trace: Option<&Trace>, stage: &Path) -> Option<String> {
        self.emit(&Event::Staged { index: self.index, result, trace, stage }).err()
    }

    fn emit(&self, event: &Event) -> Result<(), String> {
        self.to.as_ref().map_or(Ok(()), |to| to.on(event))
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.to.is_some() { "Events(heard)" } else { "Events(none)" })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Keeps the steps it hears, as words.
    #[derive(Default)]
    struct Heard(Mutex<Vec<String>>);

    impl Listener for Heard {
        fn on(&self, event: &Event) -> Result<(), String> {
            let said = match event {
                Event::Planned { index, count } => format!("{index} planned {count}"),
                Event::Done { index } => format!("{index} done"),
                Event::Phase { index, phase } => format!("{index} {}", phase.as_str()),
                _ => "other".into(),
            };
            self.0.lock().unwrap().push(said);
            Err("no room".into())
        }
    }

    #[test]
    fn a_results_events_reach_every_consumer_with_its_index_and_their_errors_come_back() {
        let (a, b) = (Arc::new(Heard::default()), Arc::new(Heard::default()));
        let events = Events::of(3, Arc::new(Fanout(vec![a.clone(), b.clone()])));
        events.planned(2);
        events.phase(Phase::Checking);
        events.done();
        for heard in [&a, &b] {
            assert_eq!(*heard.0.lock().unwrap(), ["3 planned 2", "3 checking", "3 done"]);
        }
        let result = CellResult::new("c", 1, "wal", crate::plan::KillMode::Syscall, super::super::Verdict::Fire);
        assert_eq!(events.staged(&result, None, Path::new("/x")).as_deref(), Some("no room; no room"));
        assert_eq!(Events::default().staged(&result, None, Path::new("/x")), None, "nobody listening");
    }
}
