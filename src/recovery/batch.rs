//! Many crash states at once (recorded sweeps): a child that lists
//! `dump-batch` recovers each pass's copies of a whole batch in one process
//! (`dump --db A --db B ...`, a line per database); a batch that fails is
//! recovered again one state per process, so that a bad state is found and
//! named, and every other state still gets its verdict. A state whose
//! recovery has a step before `dump` (cell 5's `catch-up`, which reads and
//! writes the state's transport) is recovered one state per process: the
//! step takes one store.

use std::path::{Path, PathBuf};

use super::{Pass, Passes, Recovered, RecoveryError, pass, stepped_pass};

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

/// Recovers every state of a batch twice: in one process per pass when
/// `batched` (the child lists `dump-batch`) and no step comes first, else
/// (or when that fails) one process per state and pass.
pub fn recover_batch(p: &Passes, states: &[Pair], batched: bool) -> BatchRecovery {
    let present: Vec<usize> = (0..states.len()).filter(|&i| states[i].first.exists()).collect();
    let mut results: Vec<Option<Result<Recovered, RecoveryError>>> =
        states.iter().map(|s| (!s.first.exists()).then(|| Ok(Recovered::missing()))).collect();
    let mut note = None;
    let together = match present.len() {
        0 => Some(Vec::new()),
        1 => None,
        _ if batched && p.step.is_none() => match batch_passes(p, states, &present) {
            Ok(each) => Some(each),
            Err(why) => {
                note = Some(format!("the batched dump failed ({why}); each state was recovered alone"));
                None
            }
        },
        _ => None,
    };
    let each = together.unwrap_or_else(|| present.iter().map(|&i| alone(p, &states[i], i)).collect());
    for (&i, r) in present.iter().zip(each) {
        results[i] = Some(r);
    }
    BatchRecovery { results: results.into_iter().map(|r| r.expect("every state has a result")).collect(), note }
}

/// Both passes over the present states in one process each; `Err` when
/// either pass failed or printed another number of lines than databases.
fn batch_passes(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
) -> Result<Vec<Result<Recovered, RecoveryError>>, String> {
    let run = |n: u32| -> Result<String, String> {
        let dbs: Vec<&Path> =
            present.iter().map(|&i| if n == 1 { &states[i].first } else { &states[i].second }.as_path()).collect();
        let text = pass(p, &dbs, n, &format!("batch-{n}")).map_err(|e| e.to_string())?;
        match text.lines().count() {
            lines if lines == dbs.len() => Ok(text),
            lines => Err(format!("pass {n} printed {lines} lines for {} databases", dbs.len())),
        }
    };
    let (first, second) = (run(1)?, run(2)?);
    let line = |l: &str| Pass { dump: format!("{l}\n"), transport: Vec::new() };
    Ok(first.lines().zip(second.lines()).map(|(a, b)| Recovered::of(&line(a), &line(b), None)).collect())
}

/// Both passes of one state, each in a process of its own (its step first).
fn alone(p: &Passes, state: &Pair, i: usize) -> Result<Recovered, RecoveryError> {
    let transport = |n: usize| state.transports.as_ref().map_or_else(PathBuf::new, |t| t[n].clone());
    let first = stepped_pass(p, &state.first, &transport(0), 1, &format!("{i}-1"))?;
    let second = stepped_pass(p, &state.second, &transport(1), 2, &format!("{i}-2"))?;
    Recovered::of(&first, &second, p.step.map(crashcells_protocol::OpArgs::op))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::harness::ChildCommand;

    /// A child whose `dump` takes one `--db` only, and fails on more.
    fn single_only(dir: &Path) -> ChildCommand {
        let script = dir.join("child.sh");
        let empty = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#;
        let text = format!("[ $(echo \"$@\" | grep -o -- --db | wc -l) -gt 1 ] && exit 1\necho '{empty}'\n");
        std::fs::write(&script, text).unwrap();
        ChildCommand { program: "sh".into(), prefix: vec![script.into()] }
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
}
