//! Recovery passes. After the kill, the driver reads the store only through
//! the child's `dump` operation, each pass a fresh process, so that any store
//! behind the protocol can be checked and recovery itself is exercised twice.
//!
//! Clause (every cell): recovery is deterministic: two passes print the same
//! canonical state; and the recovered file passes `PRAGMA integrity_check`.

use std::ffi::OsString;

use crashcells_child::store::Dump;

use crate::harness::{Exit, run_to_end};
use crate::trial::{Context, TrialEnv};

/// The recovered state of a trial's store, read twice.
#[derive(Debug)]
pub struct Recovered {
    pub dump: Dump,
    /// Why the two passes disagree, if they do.
    pub nondeterministic: Option<String>,
}

/// One `dump` pass: the canonical JSON text.
fn pass(ctx: &Context, env: &TrialEnv, n: u32) -> Result<String, String> {
    let args: Vec<OsString> = vec!["dump".into(), "--db".into(), env.db.clone().into()];
    let stdout = env.path(&format!("dump-{n}.json"));
    let stderr = env.path(&format!("dump-{n}.stderr"));
    let (exit, tail) = run_to_end(ctx.child.command(&args, &env.home), &stdout, &stderr, ctx.deadline)
        .map_err(|e| format!("recovery pass {n} could not start: {e}"))?;
    match exit {
        Some(Exit::Code(0)) => std::fs::read_to_string(&stdout).map_err(|e| format!("recovery pass {n}: {e}")),
        Some(other) => Err(format!("recovery pass {n} failed ({other}): {tail}")),
        None => Err(format!("recovery pass {n} did not finish within {:?}", ctx.deadline)),
    }
}

/// Runs two recovery passes and parses the first. An `Err` is a harness
/// error (a pass that could not run or printed something that is not a dump).
pub fn recover(ctx: &Context, env: &TrialEnv) -> Result<Recovered, String> {
    let first = pass(ctx, env, 1)?;
    let second = pass(ctx, env, 2)?;
    let dump: Dump = serde_json::from_str(first.trim()).map_err(|e| format!("recovery pass 1 printed no dump: {e}"))?;
    let nondeterministic = (first != second).then(|| first_difference(&first, &second));
    Ok(Recovered { dump, nondeterministic })
}

fn first_difference(a: &str, b: &str) -> String {
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let around = |s: &str| s.get(at.saturating_sub(20)..(at + 40).min(s.len())).unwrap_or("").to_string();
    format!("recovery is not deterministic: the two passes differ at byte {at} ({:?} vs {:?})", around(a), around(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difference_names_the_byte() {
        let d = first_difference(r#"{"a":1}"#, r#"{"a":2}"#);
        assert!(d.contains("byte 5"), "{d}");
    }
}
