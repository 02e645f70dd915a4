//! Many crash states at once (recorded sweeps): a child that lists
//! `dump-batch` recovers each pass's copies of a whole batch in one process
//! (`dump --db A --db B ...`, a line per database); a batch that fails is
//! recovered again one state per process, so that a bad state is found and
//! named, and every other state still gets its verdict. A recovery with a
//! step before `dump` (cell 5's `catch-up`, which reads and writes the
//! state's transport) runs the step one state per process (it takes one
//! store), then dumps the batch as above.

use std::path::{Path, PathBuf};

use super::{Pass, Passes, Recovered, RecoveryError, after_step, excused, pass, step, stepped_pass};

/// One crash state of a batch: its database in pass 1's copy and in pass
/// 2's, and, for a recovery with a step, the transport beside each.
#[derive(Clone, Debug)]
pub struct Pair {
    pub first: PathBuf,
    pub second: PathBuf,
    pub transports: Option<[PathBuf; 2]>,
}

/// A batch's recoveries, in the order of its states, and a note when the
/// batched form failed and each state was recovered alone.
#[derive(Debug)]
pub struct BatchRecovery {
    pub results: Vec<Result<Recovered, RecoveryError>>,
    pub note: Option<String>,
}

/// Recovers every state of a batch twice: when `batched` (the child lists
/// `dump-batch`), each state's step (if any: it takes one store) in a
/// process of its own, then one `dump` process per pass for the whole
/// batch; else one process per state and pass, as a single trial.
pub fn recover_batch(p: &Passes, states: &[Pair], batched: bool) -> BatchRecovery {
    let present: Vec<usize> = (0..states.len()).filter(|&i| states[i].first.exists()).collect();
    let mut results: Vec<Option<Result<Recovered, RecoveryError>>> = states
        .iter()
        .map(|s| (!s.first.exists()).then(|| Recovered::missing(s.transports.as_ref().map(|t| t[0].as_path()))))
        .collect();
    let (each, note) = if batched && present.len() > 1 {
        stepped_then_dumped(p, states, &present)
    } else {
        (present.iter().map(|&i| alone(p, &states[i], i)).collect(), None)
    };
    for (&i, r) in present.iter().zip(each) {
        results[i] = Some(r);
    }
    BatchRecovery { results: results.into_iter().map(|r| r.expect("every state has a result")).collect(), note }
}

/// Each present state's step, pass by pass, then both dumps of the batch
/// in one process each; when a batched dump fails, each state is dumped
/// alone (its step is not run again: it already changed the copies), and
/// the note says so.
fn stepped_then_dumped(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
) -> (Vec<Result<Recovered, RecoveryError>>, Option<String>) {
    let copy = |i: usize, n: u32| Copies::of(&states[i], n);
    let stepped: Vec<[_; 2]> = present
        .iter()
        .map(|&i| [1, 2].map(|n| step(p, &copy(i, n).db, &copy(i, n).transport, n, &label(i, n))))
        .collect();
    let (dumps, note) = match batch_dumps(p, states, present) {
        Ok(lines) => (lines.into_iter().map(|pair| pair.map(Ok)).collect(), None),
        Err(why) => {
            let each = present.iter().map(|&i| [1, 2].map(|n| pass(p, &[&copy(i, n).db], n, &label(i, n))));
            (each.collect::<Vec<_>>(), Some(format!("the batched dump failed ({why}); each state was dumped alone")))
        }
    };
    let results = present
        .iter()
        .zip(stepped.into_iter().zip(dumps))
        .map(|(&i, (steps, dumps))| {
            let [s1, s2] = steps;
            let [d1, d2] = dumps;
            let one = |s: Result<Result<(), RecoveryError>, RecoveryError>, d: Result<String, RecoveryError>, n| {
                let (stepped, dump) = (s?, d?);
                excused(stepped, &dump)?;
                Ok::<_, RecoveryError>(Pass { dump, transport: after_step(p, &copy(i, n).transport) })
            };
            Recovered::of(&one(s1, d1, 1)?, &one(s2, d2, 2)?, p.step.map(crashcells_protocol::OpArgs::op))
        })
        .collect();
    (results, note)
}

/// A state's copies for pass `n`: its database, and the transport its step
/// reads and writes (an empty path without a step).
struct Copies {
    db: PathBuf,
    transport: PathBuf,
}

impl Copies {
    fn of(state: &Pair, n: u32) -> Copies {
        let i = usize::from(n != 1);
        let db = if n == 1 { &state.first } else { &state.second }.clone();
        Copies { db, transport: state.transports.as_ref().map_or_else(PathBuf::new, |t| t[i].clone()) }
    }
}

/// The name of state `i`'s outputs in pass `n`.
fn label(i: usize, n: u32) -> String {
    format!("{i}-{n}")
}

/// Both dump passes over the present states in one process each: each
/// state's two lines; `Err` when either pass failed or printed another
/// number of lines than databases.
fn batch_dumps(p: &Passes, states: &[Pair], present: &[usize]) -> Result<Vec<[String; 2]>, String> {
    let run = |n: u32| -> Result<String, String> {
        let dbs: Vec<PathBuf> = present.iter().map(|&i| Copies::of(&states[i], n).db).collect();
        let dbs: Vec<&Path> = dbs.iter().map(PathBuf::as_path).collect();
        let text = pass(p, &dbs, n, &format!("batch-{n}")).map_err(|e| e.to_string())?;
        match text.lines().count() {
            lines if lines == dbs.len() => Ok(text),
            lines => Err(format!("pass {n} printed {lines} lines for {} databases", dbs.len())),
        }
    };
    let (first, second) = (run(1)?, run(2)?);
    Ok(first.lines().zip(second.lines()).map(|(a, b)| [format!("{a}\n"), format!("{b}\n")]).collect())
}

/// Both passes of one state, each in a process of its own (its step first).
fn alone(p: &Passes, state: &Pair, i: usize) -> Result<Recovered, RecoveryError> {
    let (one, two) = (Copies::of(state, 1), Copies::of(state, 2));
    let first = stepped_pass(p, &one.db, &one.transport, 1, &label(i, 1))?;
    let second = stepped_pass(p, &two.db, &two.transport, 2, &label(i, 2))?;
    Recovered::of(&first, &second, p.step.map(crashcells_protocol::OpArgs::op))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::harness::{ChildCommand, Launcher};

    /// A child whose `dump` takes one `--db` only, and fails on more.
    fn single_only(dir: &Path) -> Launcher {
        let script = dir.join("child.sh");
        let empty = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#;
        let text = format!("[ $(echo \"$@\" | grep -o -- --db | wc -l) -gt 1 ] && exit 1\necho '{empty}'\n");
        std::fs::write(&script, text).unwrap();
        Launcher::exec(ChildCommand { program: "sh".into(), prefix: vec![script.into()], cwd: None })
    }

    /// A child whose `catch-up` appends a delivery to its `--transport`, and
    /// whose `dump` prints a line per `--db`, or fails on more than `most`.
    fn stepping(dir: &Path, most: usize) -> Launcher {
        let script = dir.join("stepping.sh");
        let empty = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#;
        let text = format!(
            "if [ \"$1\" = catch-up ]; then while [ \"$1\" != --transport ]; do shift; done\n\
             echo '{{\"key\":\"o0\",\"payload\":\"p\"}}' >> \"$2\"; exit 0; fi\n\
             n=$(echo \"$@\" | grep -o -- --db | wc -l)\n[ $n -gt {most} ] && exit 1\n\
             for i in $(seq $n); do echo '{empty}'; done\n"
        );
        std::fs::write(&script, text).unwrap();
        Launcher::exec(ChildCommand { program: "sh".into(), prefix: vec![script.into()], cwd: None })
    }

    #[test]
    fn a_step_runs_once_per_state_and_pass_whether_the_batched_dump_works_or_not() {
        for most in [9, 1] {
            let dir = tempfile::tempdir().unwrap();
            let child = stepping(dir.path(), most);
            let states: Vec<Pair> = (0..3)
                .map(|i| {
                    let path = |s: &str| dir.path().join(format!("{i}-{s}"));
                    std::fs::write(path("1.db"), b"").unwrap();
                    std::fs::write(path("2.db"), b"").unwrap();
                    Pair { first: path("1.db"), second: path("2.db"), transports: Some([path("1.t"), path("2.t")]) }
                })
                .collect();
            let step = crashcells_protocol::OpArgs::new(crashcells_protocol::Op::CatchUp);
            let p = Passes {
                child: &child,
                deadline: Duration::from_secs(10),
                home: dir.path(),
                out: dir.path(),
                step: Some(&step),
            };
            let got = recover_batch(&p, &states, true);
            assert_eq!(got.note.is_some(), most == 1, "{:?}", got.note);
            for r in &got.results {
                assert_eq!(r.as_ref().unwrap().deliveries.len(), 1, "the step ran once on each copy");
            }
        }
    }

    #[test]
    fn a_failing_batch_is_recovered_one_state_at_a_time_and_a_missing_database_is_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let child = single_only(dir.path());
        let pair = |name: &str, present: bool| {
            let p = Pair {
                first: dir.path().join(format!("{name}-1.db")),
                second: dir.path().join(format!("{name}-2.db")),
                transports: None,
            };
            if present {
                std::fs::write(&p.first, b"").unwrap();
                std::fs::write(&p.second, b"").unwrap();
            }
            p
        };
        let states = [pair("a", true), pair("gone", false), pair("b", true)];
        let p =
            Passes { child: &child, deadline: Duration::from_secs(10), home: dir.path(), out: dir.path(), step: None };
        let got = recover_batch(&p, &states, true);
        assert!(got.note.as_deref().unwrap().starts_with("the batched dump failed"), "{:?}", got.note);
        let missing: Vec<bool> = got.results.iter().map(|r| r.as_ref().unwrap().missing_db).collect();
        assert_eq!(missing, [false, true, false]);
        let alone = recover_batch(&p, &states, false);
        assert!(alone.note.is_none() && alone.results.iter().all(Result::is_ok));
    }

    /// A power loss can drop the store and keep the provider's log: the
    /// empty store's deliveries are what its transport held, so a send the
    /// store has no record of is still judged.
    #[test]
    fn a_missing_database_keeps_the_deliveries_of_its_transport() {
        let dir = tempfile::tempdir().unwrap();
        let path = |s: &str| dir.path().join(s);
        std::fs::write(path("1.t"), "{\"key\":\"o0\",\"payload\":\"effect of o0\"}\n").unwrap();
        let state = Pair { first: path("1.db"), second: path("2.db"), transports: Some([path("1.t"), path("2.t")]) };
        let child = Launcher::exec(ChildCommand { program: "false".into(), prefix: vec![], cwd: None });
        let step = crashcells_protocol::OpArgs::new(crashcells_protocol::Op::CatchUp);
        let p = Passes {
            child: &child,
            deadline: Duration::from_secs(1),
            home: dir.path(),
            out: dir.path(),
            step: Some(&step),
        };
        let got = recover_batch(&p, &[state], true);
        let r = got.results[0].as_ref().unwrap();
        assert!(r.missing_db);
        assert_eq!(r.deliveries.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["o0"]);
    }
}
