//! Faults beyond the clean crash (issue 24), end to end: `--kill fault`
//! fires on a store that acknowledges an append whose commit failed, on
//! every seed, and its repro fires again, while the reference store passes
//! the same runs; `--kill torn` fires where a power loss loses acked data,
//! names the rule that made its state and says its bound; and each is
//! opt-in.

use serde_json::Value;

use crate::common::{run_json, scratch};

/// The one result of a run, or none where ptrace is refused.
fn one(args: &[&str]) -> Option<(i32, Value)> {
    kept(args).map(|(code, r, _)| (code, r))
}

/// [`one`], with the folder that holds its evidence.
fn kept(args: &[&str]) -> Option<(i32, Value, tempfile::TempDir)> {
    let dir = scratch();
    let (code, report) = run_json(args, dir.path());
    let r = report["results"][0].clone();
    if r["reason"].as_str().unwrap_or("").contains("unavailable") {
        crate::common::tracing_refused(&r["reason"]);
        return None;
    }
    Some((code, r, dir))
}

fn details(r: &Value) -> Vec<String> {
    r["details"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect()
}

/// Twelve faulted points drawn with each seed: the mutant acks the append
/// in flight at some of them on every seed of ten, the reference store at
/// none. The reference runs on four of the seeds (both parities, both
/// ends): a pass costs all twelve runs where a fire stops at its first, and
/// "every seed" is the mutant's claim.
#[test]
fn the_ack_despite_io_error_mutant_fires_on_every_seed_and_the_reference_store_passes() {
    for seed in 1..=10 {
        let reference_too = seed % 3 == 1;
        let seed = seed.to_string();
        let args = ["run", "--cell", "1", "--leg", "wal", "--kill", "fault", "--points", "12", "--seed", &seed];
        let Some((code, r)) = one(&[&args[..], &["--mutant", "ack-despite-io-error"]].concat()) else { return };
        assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "seed {seed}: {r:#}");
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("was acknowledged, though the") && reason.contains("while it was in flight"),
            "{reason}"
        );
        assert!(r["repro"].as_str().unwrap().contains("--kill fault --seed"), "{r:#}");
        if !reference_too {
            continue;
        }
        let (code, r) = one(&args).unwrap();
        assert_eq!((code, r["verdict"].as_str()), (0, Some("pass")), "seed {seed}: {r:#}");
    }
}

/// `--kill short-write` cuts each write of the store's files short: the
/// reference store passes (SQLite writes the rest), a store that copies an
/// image over its database with one write and ignores the count fires,
/// and its repro, that one point, fires again.
#[test]
fn a_short_write_fires_on_a_store_that_ignores_the_count_and_the_reference_store_passes() {
    let args = ["run", "--cell", "1", "--leg", "wal", "--kill", "short-write", "--seed", "3"];
    let Some((code, r)) = one(&[&args[..], &["--mutant", "ignore-short-write"]].concat()) else { return };
    assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "{r:#}");
    assert_eq!(r["kill"], "short-write");
    let fault = details(&r).into_iter().find(|d| d.starts_with("fault at #")).unwrap();
    assert!(
        fault.contains("write of") && fault.contains("to the database") && fault.contains("was cut short"),
        "{fault}"
    );
    let repro = r["repro"].as_str().unwrap();
    assert!(repro.contains("--kill short-write --seed 3 --point "), "{repro}");
    let (code, again) = one(&repro.split(' ').skip(1).collect::<Vec<_>>()).unwrap();
    assert_eq!((code, &again["reason"]), (1, &r["reason"]), "{again:#}");
    let (code, r) = one(&[&args[..], &["--points", "12"]].concat()).unwrap();
    assert_eq!((code, r["verdict"].as_str()), (0, Some("pass")), "{r:#}");
    assert!(details(&r).iter().any(|d| d.starts_with("cut 12 writes of the store's files short")), "{r:#}");
}

/// A fault fire's repro is that one point, and it fires again with the
/// same reason; its evidence says which call was made to fail.
#[test]
fn a_fault_fire_reruns_from_its_repro_and_keeps_its_run_as_evidence() {
    let args = ["run", "--cell", "1", "--leg", "delete", "--kill", "fault", "--points", "8", "--seed", "5"];
    let Some((_, first, _dir)) = kept(&[&args[..], &["--mutant", "ack-despite-io-error"]].concat()) else { return };
    let repro = first["repro"].as_str().unwrap();
    assert!(repro.contains(" --point "), "{repro}");
    let evidence = std::path::Path::new(first["evidence"].as_str().expect("a fire keeps its run"));
    let note = std::fs::read_to_string(evidence.join("fault.txt")).unwrap();
    assert!(note.starts_with("fault at #") && note.contains("the call never ran"), "{note}");
    let words: Vec<&str> = repro.split(' ').skip(1).collect();
    let (code, again) = one(&words).unwrap();
    assert_eq!(code, 1, "{again:#}");
    assert_eq!(again["reason"], first["reason"]);
}

/// Under synchronous=OFF nothing is durable: the torn sweep fires, naming
/// the rule that made the state, as the in-order one does; under FULL in
/// WAL every commit is synced and it passes, saying its bound and how many
/// states each point had.
#[test]
fn torn_power_loss_fires_with_its_rule_where_commits_are_not_synced_and_passes_where_they_are() {
    let base = ["run", "--kill", "torn", "--cell", "1", "--matrix", "audit", "--seed", "43"];
    // Twelve points of the unsynced sweep: its fire (the same point, #56,
    // as the whole sweep's) is the subject, not the sweep's every point;
    // the synced leg's pass stays a whole sweep, each point's states counted.
    let off = ["--leg", "wal-sync-off", "--points", "12"];
    let Some((code, r)) = one(&[&base[..], &off].concat()) else { return };
    assert_eq!((code, r["kill"].as_str()), (1, Some("torn")), "{r:#}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains("power loss at #") && reason.contains("was never made durable by"), "{reason}");
    assert!(r["repro"].as_str().unwrap().contains("--kill torn --seed 43 --point"), "{r:#}");
    let (code, r) = one(&[&base[..], &["--leg", "wal-sync-full"]].concat()).unwrap();
    assert_eq!((code, r["verdict"].as_str()), (0, Some("pass")), "{r:#}");
    let d = details(&r);
    assert!(d.iter().any(|l| l.starts_with("torn power model, bound: 4096-byte sectors")), "{d:#?}");
    let per_point = d.iter().find(|l| l.starts_with("states per kill point (built/distinct): #1 ")).expect("{d:#?}");
    assert_eq!(per_point.matches(", #").count() + 1, r["points_planned"].as_u64().unwrap() as usize, "{per_point}");
}

/// Neither mode is part of `--kill all`, and `--kill fault` refuses a point
/// whose call it cannot fail, saying what the call is.
#[test]
fn torn_and_fault_are_opt_in_and_a_point_with_nothing_to_fail_is_skipped() {
    let dir = scratch();
    let (_, report) = run_json(&["run", "--cell", "1", "--leg", "delete", "--points", "1", "--seed", "44"], dir.path());
    let kills: Vec<_> = report["results"].as_array().unwrap().iter().map(|r| r["kill"].clone()).collect();
    assert_eq!(kills, ["timed", "syscall"]);
    // A point past the plan is refused, naming the plan's range; its last
    // point is the child's own end: no call at all, nothing to fail.
    let fault = ["run", "--cell", "1", "--leg", "delete", "--kill", "fault", "--seed", "44", "--point"];
    let Some((_, r)) = one(&[&fault[..], &["9999"]].concat()) else {
        return;
    };
    let outside = r["reason"].as_str().unwrap();
    assert_eq!(r["verdict"], "error", "{r:#}");
    let last = outside.rsplit(" to ").next().and_then(|n| n.trim().parse::<u64>().ok()).expect(outside);
    let (_, r) = one(&[&fault[..], &[last.to_string().as_str()]].concat()).unwrap();
    assert_eq!(r["verdict"], "skip", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("fault injection fails only writes"), "{r:#}");
}

/// The audit's new columns on one leg: with `journal_mode=off` a failed
/// write leaves the database corrupt (SQLite cannot roll back without a
/// journal), so every column loses, each with a repro, and the fault
/// column's repro fires again.
#[test]
fn the_audit_fills_the_torn_and_fault_columns_and_each_loss_has_a_repro_that_fires_again() {
    let dir = scratch();
    let (_, report, matrix) =
        crate::common::audit_one_leg(dir.path(), "[[legs]]\nname = \"off\"\njournal_mode = \"off\"\n");
    let row = &report["rows"][0];
    if row["process_crash"]["reason"].as_str().unwrap_or("").contains("unavailable") {
        return crate::common::tracing_refused(&row["process_crash"]["reason"]);
    }
    for column in ["process_crash", "power_loss", "torn_power_loss", "fault_injection"] {
        assert_eq!(row[column]["keeps"], false, "{column}: {row:#}");
        assert!(row[column]["repro"].as_str().unwrap().starts_with("crashcells run --cell "), "{column}: {row:#}");
    }
    let fault = &row["fault_injection"];
    assert!(fault["reason"].as_str().unwrap().contains("fault at #"), "{fault:#}");
    let repro = fault["repro"].as_str().unwrap();
    assert!(
        repro.contains(&format!("--matrix {} ", matrix.display())),
        "the matrix as the audit was given it: {repro}"
    );
    let words: Vec<&str> = repro.split(' ').skip(1).collect();
    let (code, again) = one(&words).unwrap();
    assert_eq!((code, again["kill"].as_str()), (1, Some("fault")), "{again:#}");
}
