//! Many crash states at once: a child that lists `dump-batch` recovers each
//! pass's copies of a whole batch in one process (`dump --db A --db B ...`,
//! a line per database), and one that lists `catch-up-batch` runs its
//! recovery step (cell 5's `catch-up`) over the whole batch in one process
//! too (`catch-up --db A --transport TA --db B --transport TB ...`). Two
//! processes per pass, not two per state.
//!
//! A batch that fails costs one more process per state only up to the
//! first state that fails alone: the states are recovered one at a time,
//! in order, each on a fresh copy of its crash state (not on what the
//! failed batch left of it), until one fails; the states after it are not
//! run. A state that could not be recovered does not pass, and every
//! source lists its states in the order its verdict reads them (a power
//! point: the one that lost the least first), so the verdict stops at that
//! state anyway. "Not run" is never a verdict: a state not run that a
//! verdict reads after all is recovered alone then
//! ([`crate::pipeline::judge::driver::Driver::recovered`]), so another
//! state's failure never stands for its own. A child without a batch form
//! is recovered one state per process, in the same order, to the same
//! first failure.
//!
//! A batch whose wait ran out (or that an interrupt cut short) is not
//! recovered alone: a `dump` that hangs would hang again on its first
//! state, and cost the result a second deadline. Its first state takes the
//! batch's error (the lowest state, where the verdict stops), the others
//! are not run, and the note says so. A hung `dump` costs a result one
//! deadline, batched or not.
//!
//! A state whose files name the folder they were written in (a hot
//! journal's super-journal) is recovered alone, laid over that folder for
//! each pass's process ([`placed`]); the others as above.
//!
//! Crash model: each state's copies are its crash state exactly; recovery
//! changes them (a hot journal is rolled back, a step marks and sends), so
//! every fallback starts from a restored copy.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crashcells_protocol::OpArgs;

use super::{
    Pass, Passes, Recovered, RecoveryError, after_step, excused, pass, pass_copies, run_op, step, stepped_pass,
};
use crate::harness::Place;
use crate::trialdir::TrialEnv;

/// Which recovery steps the child takes for many states in one process:
/// `dump` (`dump-batch`) and its recovery step (`catch-up-batch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batching {
    pub dumps: bool,
    pub steps: bool,
}

/// Writes a state's crash files into pass `n`'s copy (its database at the
/// pair's path for that pass, the transport beside it): the copies are
/// cleared of anything a recovery left first.
pub type Restore<'a> = Arc<dyn Fn(u32) -> std::io::Result<()> + Send + Sync + 'a>;

/// One crash state of a batch: its database in pass 1's copy and in pass
/// 2's, for a recovery with a step the transport beside each, how to make
/// its copies afresh, and the folder its files were written in where they
/// name it (a hot journal's super-journal): each pass's copy is then laid
/// over that folder for its own process ([`Place`]).
#[derive(Clone)]
pub struct Pair<'a> {
    pub first: PathBuf,
    pub second: PathBuf,
    pub transports: Option<[PathBuf; 2]>,
    pub restore: Option<Restore<'a>>,
    pub at: Option<PathBuf>,
}

impl std::fmt::Debug for Pair<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pair({}, {})", self.first.display(), self.second.display())
    }
}

impl Pair<'_> {
    /// Its copies for pass `n`: the database, and the transport its step
    /// reads and writes (an empty path without a step).
    fn copies(&self, n: u32) -> (PathBuf, PathBuf) {
        let i = usize::from(n != 1);
        let db = if n == 1 { &self.first } else { &self.second }.clone();
        (db, self.transports.as_ref().map_or_else(PathBuf::new, |t| t[i].clone()))
    }

    /// Pass `n`'s copies as the crash left them, whatever ran on them: the
    /// copy's folder is its store's alone, so every file a recovery left
    /// there (a marker it removed comes back, one it made goes) is cleared
    /// first.
    fn restored(&self, n: u32) -> Result<(), RecoveryError> {
        let Some(restore) = &self.restore else { return Ok(()) };
        let (db, _) = self.copies(n);
        let folder = db.parent().unwrap_or(Path::new("."));
        crate::harness::disk::checked(folder, clear_folder(folder).and_then(|()| restore(n)))
            .map_err(|e| RecoveryError::Copy { pass: n, why: e.to_string() })
    }
}

/// Removes every file directly in `dir` (a copy's folder, the store's alone).
fn clear_folder(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// A trial's crash state as one state of a batch ([`recover_batch`]): its
/// copies for each pass, in its own folder as [`recover`] makes them. A
/// crash that left no database file gives paths that do not exist, which
/// the batch recovers as the empty store.
pub fn pair_of(env: &TrialEnv) -> Result<Pair<'_>, RecoveryError> {
    if !env.db.exists() {
        let gone = env.path("recovery-none");
        let transports = env.recovery_step.is_some().then(|| [env.transport.clone(), env.transport.clone()]);
        return Ok(Pair { first: gone.join("1.db"), second: gone.join("2.db"), transports, restore: None, at: None });
    }
    let (first, t1) = pass_copies(env, 1)?;
    let (second, t2) = pass_copies(env, 2)?;
    let restore: Restore = std::sync::Arc::new(move |n| pass_copies(env, n).map(drop).map_err(std::io::Error::other));
    let transports = env.recovery_step.is_some().then_some([t1, t2]);
    Ok(Pair { first, second, transports, restore: Some(restore), at: None })
}

/// A batch's recoveries, in the order of its states, and a note when a
/// batched step or dump failed and states were recovered one at a time.
#[derive(Debug)]
pub struct BatchRecovery {
    pub results: Vec<Result<Recovered, RecoveryError>>,
    pub note: Option<String>,
}

/// Recovers every state of a batch twice (see the module's comment); a
/// state without a database file is the empty store.
pub fn recover_batch(p: &Passes, states: &[Pair], batching: Batching) -> BatchRecovery {
    let present: Vec<usize> = (0..states.len()).filter(|&i| states[i].first.exists()).collect();
    let mut results: Vec<Option<Result<Recovered, RecoveryError>>> = states
        .iter()
        .map(|s| (!s.first.exists()).then(|| Recovered::missing(s.transports.as_ref().map(|t| t[0].as_path()))))
        .collect();
    let (first, note) = pass_of(p, states, &present, 1, batching);
    let mut notes: Vec<String> = note.into_iter().collect();
    // A state whose first pass failed is an error whatever its second
    // finds: the second runs only where the first gave a dump, so a dump
    // that hangs costs its result one deadline, not one per pass.
    let again: Vec<usize> = present.iter().zip(&first).filter(|(_, one)| one.is_ok()).map(|(&i, _)| i).collect();
    let (second, note) = pass_of(p, states, &again, 2, batching);
    notes.extend(note);
    let mut second: std::collections::HashMap<usize, _> = again.into_iter().zip(second).collect();
    for (&i, one) in present.iter().zip(first) {
        let two = |one: Pass| {
            let two = second.remove(&i).expect("a second pass of every first that gave a dump")?;
            Recovered::of(&one, &two, p.step.map(OpArgs::op))
        };
        results[i] = Some(one.and_then(two));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    BatchRecovery { results: results.into_iter().map(|r| r.expect("every state has a result")).collect(), note }
}

/// Pass `n` of the `present` states: those laid over the folder their files
/// name each in a process of its own ([`placed`]), the others as
/// [`unplaced`] recovers them; the results in the order of `present`.
fn pass_of(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
    n: u32,
    batching: Batching,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    let (laid, free): (Vec<usize>, Vec<usize>) = present.iter().partition(|&&i| states[i].at.is_some());
    if laid.is_empty() {
        return unplaced(p, states, present, n, batching);
    }
    let (got, note) = unplaced(p, states, &free, n, batching);
    let mut by_state: std::collections::HashMap<usize, _> = free.into_iter().zip(got).collect();
    by_state.extend(laid.iter().map(|&i| (i, placed(p, &states[i], i, n))));
    (present.iter().map(|i| by_state.remove(i).expect("a pass of every present state")).collect(), note)
}

/// Pass `n` of a state whose files name the folder they were written in:
/// its copy laid over that folder for the pass's processes alone, which see
/// its database and transport there. One process per pass: a batch's
/// states were all written at the one path.
fn placed(p: &Passes, state: &Pair, i: usize, n: u32) -> Result<Pass, RecoveryError> {
    let (db, transport) = state.copies(n);
    let at = state.at.clone().expect("a placed state names its folder");
    let place = Place { state: db.parent().unwrap_or(Path::new(".")).to_path_buf(), at };
    let (db, transport) = (place.seen(&db), place.seen(&transport));
    let p = Passes { place: Some(place), ..p.clone() };
    stepped_pass(&p, &db, &transport, n, &label(i, n))
}

/// Pass `n` of the `present` states: in batches where the child has the
/// batch form and there is more than one, else one at a time.
fn unplaced(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
    n: u32,
    batching: Batching,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    if batching.dumps && present.len() > 1 {
        one_pass(p, states, present, n, batching)
    } else {
        alone(p, states, present, n, true)
    }
}

/// Pass `n` of the present states with the batch forms: the steps in one
/// process (or one per state, without `catch-up-batch`), then the dumps in
/// one; a batch that fails falls back to one state at a time.
fn one_pass(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
    n: u32,
    batching: Batching,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    let stepped: Vec<Result<Result<(), RecoveryError>, RecoveryError>> = match p.step {
        None => present.iter().map(|_| Ok(Ok(()))).collect(),
        Some(_) if batching.steps => match step_batch(p, states, present, n) {
            Ok(()) => present.iter().map(|_| Ok(Ok(()))).collect(),
            Err(e) => return after_failed_batch(p, states, present, n, "recovery step", e),
        },
        Some(_) => present
            .iter()
            .map(|&i| {
                let (db, transport) = states[i].copies(n);
                step(p, &db, &transport, n, &label(i, n))
            })
            .collect(),
    };
    let dumps = match dump_batch(p, states, present, n) {
        Ok(dumps) => dumps,
        Err(e) => return after_failed_batch(p, states, present, n, "dump", e),
    };
    let each = present
        .iter()
        .zip(stepped.into_iter().zip(dumps))
        .map(|(&i, (stepped, dump))| {
            excused(stepped?, &dump)?;
            Ok(Pass { dump, transport: after_step(p, &states[i].copies(n).1) })
        })
        .collect();
    (each, None)
}

/// After a failed batch: a batch whose wait ran out or was interrupted is
/// [`cut_short`]; any other failure falls back to each state alone.
fn after_failed_batch(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
    n: u32,
    what: &str,
    e: RecoveryError,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    if e.by_deadline() || matches!(e, RecoveryError::Interrupted { .. }) {
        cut_short(present, n, what, e)
    } else {
        fallback(p, states, present, n, what, &e.to_string())
    }
}

/// A batch whose wait ran out (or an interrupt): its first state takes the
/// batch's error, the others are not run. Recovering them alone would wait
/// a deadline again on a `dump` that hangs on every state.
fn cut_short(
    present: &[usize],
    n: u32,
    what: &str,
    e: RecoveryError,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    let note = format!(
        "pass {n}: the batched {what} of {} states was cut short ({e}); they were not recovered alone, since each \
         would wait as long again",
        present.len()
    );
    let mut each = vec![Err(e)];
    each.extend(present.iter().skip(1).map(|_| Err(RecoveryError::NotRun { pass: n })));
    each.truncate(present.len());
    (each, Some(note))
}

/// After a failed batch: each state on restored copies, alone, in order, up
/// to the first that fails alone; the note says so.
fn fallback(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
    n: u32,
    what: &str,
    why: &str,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    let (each, _) = alone(p, states, present, n, false);
    let ran = each.iter().position(Result::is_err).map_or(each.len(), |k| k + 1);
    let note = format!(
        "pass {n}: the batched {what} failed ({why}); its states were recovered alone, in order, on fresh copies, \
         up to the first that failed alone ({ran} of {})",
        present.len()
    );
    (each, Some(note))
}

/// Pass `n` of the present states one at a time, up to the first that
/// fails: the states after it are not run. Unless the copies are `fresh`
/// (nothing ran on them yet), each is restored first.
fn alone(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
    n: u32,
    fresh: bool,
) -> (Vec<Result<Pass, RecoveryError>>, Option<String>) {
    let mut each = Vec::with_capacity(present.len());
    let mut failed = false;
    for &i in present {
        if failed {
            each.push(Err(RecoveryError::NotRun { pass: n }));
            continue;
        }
        let (db, transport) = states[i].copies(n);
        let restored = if fresh { Ok(()) } else { states[i].restored(n) };
        let r = restored.and_then(|()| stepped_pass(p, &db, &transport, n, &label(i, n)));
        failed = r.is_err();
        each.push(r);
    }
    (each, None)
}

/// The name of state `i`'s outputs in pass `n`.
fn label(i: usize, n: u32) -> String {
    format!("{i}-{n}")
}

/// The recovery step over every present state in one process: `Err` says
/// why it did not end with exit code 0.
fn step_batch(p: &Passes, states: &[Pair], present: &[usize], n: u32) -> Result<(), RecoveryError> {
    let Some(step) = p.step else { return Ok(()) };
    let args = present.iter().fold(step.clone(), |a, &i| {
        let (db, transport) = states[i].copies(n);
        a.db(&db).transport(&transport)
    });
    let op = step.op();
    match run_op(p, &args, n, &format!("{op}-batch-{n}")) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((exit, stderr_tail))) => Err(RecoveryError::StepFailed { pass: n, op, exit, stderr_tail }),
        Err(RecoveryError::Deadline { pass, deadline }) => Err(RecoveryError::StepDeadline { pass, op, deadline }),
        Err(e) => Err(e),
    }
}

/// One dump over every present state's copy for pass `n`: each state's
/// line; `Err` when it failed or printed another number of lines than
/// databases.
fn dump_batch(p: &Passes, states: &[Pair], present: &[usize], n: u32) -> Result<Vec<String>, RecoveryError> {
    let dbs: Vec<PathBuf> = present.iter().map(|&i| states[i].copies(n).0).collect();
    let dbs: Vec<&Path> = dbs.iter().map(PathBuf::as_path).collect();
    let text = pass(p, &dbs, n, &format!("batch-{n}"))?;
    match text.lines().count() {
        lines if lines == dbs.len() => Ok(text.lines().map(|l| format!("{l}\n")).collect()),
        lines => {
            Err(RecoveryError::Read { pass: n, why: format!("printed {lines} lines for {} databases", dbs.len()) })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::harness::{ChildCommand, Launcher};

    const EMPTY: &str = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#;

    /// A `sh` child from `script`, whose own log of each run is `runs`.
    fn child(dir: &Path, script: &str) -> Launcher {
        let path = dir.join("child.sh");
        std::fs::write(&path, format!("echo \"$@\" >> {}\n{script}", dir.join("runs").display())).unwrap();
        Launcher::exec(ChildCommand { program: "sh".into(), prefix: vec![path.into()], cwd: None, env: Vec::new() })
    }

    /// How many processes the child ran, and how many of them were `op`.
    fn runs(dir: &Path, op: &str) -> (usize, usize) {
        let text = std::fs::read_to_string(dir.join("runs")).unwrap_or_default();
        (text.lines().count(), text.lines().filter(|l| l.starts_with(op)).count())
    }

    /// `n` states in `dir`, each with copies for both passes (and
    /// transports) in folders of their own (`dir/{i}-1/1.db`), whose
    /// restore counts its calls in `restored`.
    fn states<'a>(dir: &Path, n: usize, restored: &'a AtomicUsize) -> Vec<Pair<'a>> {
        (0..n)
            .map(|i| {
                let path = |s: &str| dir.join(format!("{i}-{}", &s[..1])).join(s);
                for s in ["1.db", "2.db"] {
                    std::fs::create_dir_all(path(s).parent().unwrap()).unwrap();
                    std::fs::write(path(s), b"crash state").unwrap();
                }
                let copies = [path("1.db"), path("2.db")];
                let restore: Restore<'a> = Arc::new(move |n| {
                    restored.fetch_add(1, Ordering::SeqCst);
                    std::fs::write(&copies[n as usize - 1], b"crash state")
                });
                Pair {
                    first: path("1.db"),
                    second: path("2.db"),
                    transports: Some([path("1.t"), path("2.t")]),
                    restore: Some(restore),
                    at: None,
                }
            })
            .collect()
    }

    fn passes<'a>(child: &'a Launcher, dir: &'a Path, step: Option<&'a OpArgs>) -> Passes<'a> {
        let interrupt = crate::harness::Interrupt::new();
        Passes { child, deadline: Duration::from_secs(10), interrupt, home: dir, out: dir, step, place: None }
    }

    /// A child that takes both batch forms: `catch-up` appends a delivery
    /// to each `--transport`, `dump` prints a line per `--db`, or fails when
    /// a database holds the word `broken`.
    const BATCHING: &str = r#"
if [ "$1" = catch-up ]; then shift; while [ $# -gt 0 ]; do
  [ "$1" = --transport ] && echo '{"key":"o0","payload":"p"}' >> "$2"; shift; done; exit 0; fi
shift; for a in "$@"; do case "$a" in --*) ;; *) grep -q broken "$a" && exit 1;; esac; done
for a in "$@"; do case "$a" in --db) echo 'LINE';; esac; done
"#;

    #[test]
    fn a_batch_costs_two_processes_per_pass_whatever_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let child = child(dir.path(), &BATCHING.replace("LINE", EMPTY));
        let restored = AtomicUsize::new(0);
        let states = states(dir.path(), 5, &restored);
        let step = OpArgs::new(crashcells_protocol::Op::CatchUp);
        let got =
            recover_batch(&passes(&child, dir.path(), Some(&step)), &states, Batching { dumps: true, steps: true });
        assert!(got.note.is_none(), "{:?}", got.note);
        assert!(got.results.iter().all(|r| r.as_ref().unwrap().deliveries.len() == 1), "the step ran on each copy");
        assert_eq!(runs(dir.path(), "catch-up"), (4, 2), "one step and one dump per pass");
        assert_eq!(restored.load(Ordering::SeqCst), 0, "no fallback, no restore");
    }

    #[test]
    fn a_failing_batch_is_recovered_alone_only_up_to_the_first_state_that_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let child = child(dir.path(), &BATCHING.replace("LINE", EMPTY));
        let restored = AtomicUsize::new(0);
        let states = states(dir.path(), 6, &restored);
        // State 2 is broken in both passes: restores write it broken again.
        for s in ["2-1/1.db", "2-2/2.db"] {
            std::fs::write(dir.path().join(s), b"broken").unwrap();
        }
        let mut states = states;
        states[2].restore = None;
        let got = recover_batch(&passes(&child, dir.path(), None), &states, Batching { dumps: true, steps: true });
        let ok: Vec<bool> = got.results.iter().map(Result::is_ok).collect();
        assert_eq!(ok, [true, true, false, false, false, false]);
        assert!(matches!(got.results[3], Err(RecoveryError::NotRun { .. })), "{:?}", got.results[3]);
        let note = got.note.unwrap();
        assert!(note.contains("up to the first that failed alone (3 of 6)"), "{note}");
        // Pass 1: the batch, then states 0, 1 and 2 alone: 4, not 1 + 6.
        // Pass 2: states 0 and 1 only, in one batch: a state whose first
        // pass failed is an error whatever its second finds.
        assert_eq!(runs(dir.path(), "dump").1, 5);
        assert_eq!(restored.load(Ordering::SeqCst), 2, "each state run alone got a fresh copy");
    }

    /// A batched dump that overstays its deadline is the one wait its
    /// states cost: none is recovered alone afterwards (a hung `dump` would
    /// hang on the first again), and no second pass runs.
    #[test]
    fn a_batch_that_runs_out_its_deadline_is_not_recovered_alone() {
        let dir = tempfile::tempdir().unwrap();
        let child = child(dir.path(), "[ \"$1\" = dump ] && exec sleep 30\nexit 0\n");
        let restored = AtomicUsize::new(0);
        let states = states(dir.path(), 3, &restored);
        let step = OpArgs::new(crashcells_protocol::Op::CatchUp);
        let p = Passes { deadline: Duration::from_millis(300), ..passes(&child, dir.path(), Some(&step)) };
        let got = recover_batch(&p, &states, Batching { dumps: true, steps: true });
        assert!(matches!(got.results[0], Err(RecoveryError::Deadline { pass: 1, .. })), "{:?}", got.results[0]);
        assert!(got.results[1..].iter().all(|r| matches!(r, Err(RecoveryError::NotRun { pass: 1 }))));
        assert!(got.note.unwrap().contains("not recovered alone"));
        // One batched step and one batched dump: no state alone, no pass 2.
        assert_eq!(runs(dir.path(), "dump"), (2, 1));
        assert_eq!(restored.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn without_batch_forms_each_state_is_alone_and_a_missing_database_is_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let child = child(
            dir.path(),
            &format!("[ $(echo \"$@\" | grep -o -- --db | wc -l) -gt 1 ] && exit 1\necho '{EMPTY}'\n"),
        );
        let restored = AtomicUsize::new(0);
        let mut states = states(dir.path(), 3, &restored);
        std::fs::remove_file(&states[1].first).unwrap();
        states[1].transports = None;
        let got = recover_batch(&passes(&child, dir.path(), None), &states, Batching::default());
        let missing: Vec<bool> = got.results.iter().map(|r| r.as_ref().unwrap().missing_db).collect();
        assert_eq!(missing, [false, true, false]);
        assert!(got.note.is_none());
    }

    /// SQLite's hot journal names its super-journal by absolute path, so a
    /// state whose files name the folder they were written in is recovered
    /// there: each pass's copy laid over it for its own process, whose
    /// `--db` names the folder. Here the folder holds other bytes, which
    /// the child must not see.
    #[test]
    fn a_state_that_names_its_folder_is_recovered_laid_over_it_one_process_per_pass() {
        if let Err(why) = crate::harness::can_place() {
            return crate::testskip::skip_or_fail(crate::testskip::Need::Mounts, why);
        }
        let dir = tempfile::tempdir().unwrap();
        let script = format!("shift; shift; grep -q 'crash state' \"$1\" || exit 1; echo '{EMPTY}'");
        let child = child(dir.path(), &script);
        let restored = AtomicUsize::new(0);
        let mut states = states(dir.path(), 2, &restored);
        let at = dir.path().join("written-in");
        std::fs::create_dir(&at).unwrap();
        for db in ["1.db", "2.db"] {
            std::fs::write(at.join(db), b"other bytes").unwrap();
        }
        states[0].at = Some(at.clone());
        let got = recover_batch(&passes(&child, dir.path(), None), &states, Batching { dumps: true, steps: true });
        assert!(got.results.iter().all(Result::is_ok), "{:?}", got.results);
        let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
        for db in ["1.db", "2.db"] {
            assert!(runs.contains(&format!("--db {}", at.join(db).display())), "{runs}");
        }
        assert_eq!(std::fs::read(at.join("1.db")).unwrap(), b"other bytes", "the folder itself is untouched");
    }

    /// A power loss can drop the store and keep the provider's log: the
    /// empty store's deliveries are what its transport held, so a send the
    /// store has no record of is still judged.
    #[test]
    fn a_missing_database_keeps_the_deliveries_of_its_transport() {
        let dir = tempfile::tempdir().unwrap();
        let path = |s: &str| dir.path().join(s);
        std::fs::write(path("1.t"), "{\"key\":\"o0\",\"payload\":\"effect of o0\"}\n").unwrap();
        let state = Pair {
            first: path("1.db"),
            second: path("2.db"),
            transports: Some([path("1.t"), path("2.t")]),
            restore: None,
            at: None,
        };
        let child =
            Launcher::exec(ChildCommand { program: "false".into(), prefix: vec![], cwd: None, env: Vec::new() });
        let step = OpArgs::new(crashcells_protocol::Op::CatchUp);
        let got =
            recover_batch(&passes(&child, dir.path(), Some(&step)), &[state], Batching { dumps: true, steps: true });
        let r = got.results[0].as_ref().unwrap();
        assert!(r.missing_db);
        assert_eq!(r.deliveries.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["o0"]);
    }
}
