//! Numbers checked at the door (issue 50): every numeric flag of every
//! subcommand, found by walking the command line's own definition (so a
//! flag added later is walked too), given values out of its range and
//! values that are no number at all. Each must be refused at parse time:
//! exit 2, one line on stderr that names the flag, and no panic (a
//! `--deadline` of `u64::MAX` once overflowed an `Instant` deep in a run).

use std::any::TypeId;

use clap::CommandFactory;

use crate::common::{bin, scratch};

/// The value types a numeric flag parses to: unsigned and signed whole
/// numbers, and `--partition`'s `k/n`.
fn numeric(id: &impl PartialEq<TypeId>) -> bool {
    let ids = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<crashcells::model::Partition>(),
    ];
    ids.iter().any(|t| id == t)
}

/// Values no numeric flag takes: no number, a fraction, an exponent,
/// a word after the number, nothing.
const MALFORMED: [&str; 5] = ["abc", "1.5", "1e3", "3x", ""];

/// Values out of a flag's range. `--seed` takes every `u64` (its largest
/// is a seed like any other), so only what no `u64` holds is out of its range.
fn out_of_range(long: &str, partition: bool) -> Vec<&'static str> {
    match (long, partition) {
        (_, true) => vec!["1/18446744073709551615", "0/4", "5/4", "-1/2"],
        ("seed", _) => vec!["18446744073709551616", "-1"],
        _ => vec!["18446744073709551615", "9223372036854775807", "18446744073709551616", "-1"],
    }
}

/// Arguments after the flag under test that end the command quickly with
/// its own error should the value be taken: a test that fails must not
/// start a run.
fn stopper(sub: &str, dir: &std::path::Path) -> Vec<String> {
    let none = dir.join("none").display().to_string();
    match sub {
        "run" | "audit" => vec!["--matrix".into(), none],
        "child-check" => vec!["--child".into(), none],
        "prune" => vec!["--evidence".into(), none],
        "report" => vec!["--from".into(), none],
        _ => vec![],
    }
}

#[test]
fn every_numeric_flag_refuses_what_it_cannot_take_in_one_line() {
    let dir = scratch();
    let cli = crashcells::cli::Cli::command();
    let (mut tried, mut flags, mut failures) = (0, Vec::new(), Vec::new());
    for sub in cli.get_subcommands() {
        for arg in sub.get_arguments() {
            let (Some(long), true) = (arg.get_long(), arg.get_action().takes_values()) else { continue };
            let id = arg.get_value_parser().type_id();
            if !numeric(&id) {
                continue;
            }
            let partition = id == TypeId::of::<crashcells::model::Partition>();
            flags.push(format!("{} --{long}", sub.get_name()));
            for value in out_of_range(long, partition).into_iter().chain(MALFORMED) {
                tried += 1;
                let mut cmd = bin();
                cmd.arg(sub.get_name()).arg(format!("--{long}={value}")).args(stopper(sub.get_name(), dir.path()));
                let out = cmd.output().expect("the binary runs");
                let err = String::from_utf8_lossy(&out.stderr);
                let one_line = err.trim_end().lines().count() == 1;
                if out.status.code() != Some(2)
                    || !one_line
                    || !err.contains(&format!("--{long}"))
                    || err.contains("panicked")
                {
                    failures.push(format!("{} --{long}={value:?}: {:?} {err:?}", sub.get_name(), out.status.code()));
                }
            }
        }
    }
    // The walk found the flags it is about: a definition it cannot read would pass vacuously.
    for expected in [
        "run --deadline",
        "run --jobs",
        "run --partition",
        "child-check --deadline",
        "audit --deadline",
        "prune --keep",
    ] {
        assert!(flags.iter().any(|f| f == expected), "{expected} not walked: {flags:?}");
    }
    assert!(tried >= 100, "{tried} values tried");
    assert!(failures.is_empty(), "{} of {tried} refused wrongly:\n{}", failures.len(), failures.join("\n"));
}

/// `CRASHCELLS_REFIRE`, `--refire`'s variable, is bounded as the flag is.
#[test]
fn a_numeric_variable_is_bounded_as_its_flag() {
    let dir = scratch();
    let out = bin()
        .env("CRASHCELLS_REFIRE", "18446744073709551615")
        .args(["run", "--matrix"])
        .arg(dir.path().join("none"))
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--refire") && err.contains("0 to 1000"), "{err}");
}

/// Runs `crashcells args` and returns its exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = bin().args(args).output().expect("the binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `--trial` beyond the plan's trials is refused with the plan's range,
/// before any child runs, where it once ran nothing and passed.
#[test]
fn a_trial_outside_the_plan_names_its_range() {
    let (code, err) = refused(&["run", "--seed", "1", "--cell", "1", "--kill", "timed", "--trial", "999"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--trial 999 is outside the plan") && err.contains("trials 0 to"), "{err}");
}

/// A `--child` that names no program, or one that cannot be executed, is
/// said so at once, where it once waited for a ready record.
#[test]
fn a_child_that_cannot_start_is_named() {
    let dir = scratch();
    let script = dir.path().join("store.py");
    std::fs::write(&script, "print('no')\n").unwrap();
    let missing = dir.path().join("missing-store");
    for (child, says) in [
        (missing.display().to_string(), "not found"),
        (script.display().to_string(), "not executable"),
        ("crashcells-no-such-program".to_string(), "no such program on PATH"),
    ] {
        for sub in ["child-check", "run", "audit"] {
            let (code, err) = refused(&[sub, "--child", &child]);
            assert_eq!(code, Some(2), "{sub} {child}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(err.contains("--child") && err.contains(says), "{sub} {child}: {err}");
        }
    }
}
