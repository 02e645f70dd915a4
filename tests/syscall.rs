//! Syscall kill points: the sweep visits every point of a short workload,
//! records where each kill landed, makes the cells sensitive (a
//! `journal_mode=off` leg and the mutants fire) and keeps the reference
//! store green in `delete` and `wal`.

use serde_json::Value;

use crate::common::{results, run_json, scratch};

/// The results of a syscall run (with the folder that holds its evidence),
/// or `None` where this machine refuses ptrace (every result then skips
/// saying so, which is all there is to test).
fn syscall_results(args: &[&str]) -> Option<(i32, Vec<Value>, tempfile::TempDir)> {
    let dir = scratch();
    let mut all = vec!["run", "--kill", "syscall"];
    all.extend_from_slice(args);
    let (code, report) = run_json(&all, dir.path());
    let rs: Vec<Value> = report["results"].as_array().expect("results").clone();
    assert!(!rs.is_empty(), "{report:#}");
    if rs.iter().all(|r| r["verdict"] == "skip" && r["reason"].as_str().unwrap_or("").contains("unavailable")) {
        crate::common::tracing_refused(&rs[0]["reason"]);
        return None;
    }
    for r in &rs {
        assert_eq!(r["kill"], "syscall", "{r:#}");
    }
    Some((code, rs, dir))
}

#[test]
fn delete_and_wal_pass_at_every_kill_point_and_record_each() {
    // Cell 1, the shortest full sweep whose WAL leg still grows to cross a
    // checkpoint (its ordinals then skip): 2.5 s where cell 3 took 11 s.
    let Some((code, rs, _dir)) = syscall_results(&["--cell", "1", "--leg", "delete", "--leg", "wal", "--seed", "21"])
    else {
        return;
    };
    assert_eq!(code, 0, "{rs:#?}");
    for r in &rs {
        assert_eq!(r["verdict"], "pass", "{r:#}");
        let points = r["kill_points"].as_array().unwrap();
        assert_eq!(points.len() as u64, r["trials"].as_u64().unwrap());
        // Every planned point landed: the child was killed at each one.
        assert_eq!(r["points_planned"].as_u64(), Some(points.len() as u64), "{r:#}");
        assert_eq!(r["points_landed"], r["points_planned"], "{r:#}");
        // The sweep is N = 1..=M+1 (in WAL, the windows of the workload
        // grown to cross a checkpoint): each ordinal once, in order; the
        // last is the state the workload's own end left (no call, no file).
        let ordinals: Vec<u64> = points.iter().map(|p| p["ordinal"].as_u64().unwrap()).collect();
        assert!(ordinals.windows(2).all(|w| w[0] < w[1]), "{ordinals:?}");
        if r["effective_mode"] != "wal" {
            assert_eq!(ordinals, (1..=points.len() as u64).collect::<Vec<_>>());
        }
        for (i, p) in points.iter().enumerate() {
            let end = i + 1 == points.len();
            assert!(p["syscall"].is_string() && (end || p["file"].is_string()), "{p}");
        }
        assert_eq!(points.last().unwrap()["syscall"], "exit");
        // The last point comes after the census's last ack.
        let last = points.last().unwrap();
        assert!(last["after_acks"].as_u64().unwrap() >= 1, "{last}");
        assert!(points.iter().any(|p| p["file"] == "acks"), "the ack journal's writes are kill points");
    }
    let files: Vec<_> = rs[1]["kill_points"].as_array().unwrap().iter().map(|p| p["file"].clone()).collect();
    assert!(files.contains(&"wal".into()), "a wal leg writes its -wal: {files:?}");
}

#[test]
fn a_wal_sweep_crosses_a_checkpoint_and_the_wals_restart() {
    // At the store's own settings (SQLite's 1000-page autocheckpoint):
    // the workload grows until it crosses both.
    let Some((code, rs, _dir)) = syscall_results(&["--cell", "1", "--leg", "wal", "--seed", "11"]) else { return };
    assert_eq!(code, 0, "{rs:#?}");
    let r = &rs[0];
    assert_eq!((&r["verdict"], &r["effective_mode"]), (&"pass".into(), &"wal".into()), "{r:#}");
    let points = r["kill_points"].as_array().unwrap();
    let is = |p: &Value, file: &str| p["file"] == file && p["syscall"].as_str().is_some_and(|s| s.contains("write"));
    // A checkpoint: the database written once appends were acked; then a
    // restart: the WAL written from its start again.
    let checkpoint = points.iter().position(|p| is(p, "database") && p["after_acks"].as_u64() > Some(0));
    let checkpoint = checkpoint.expect("a write to the database after the first ack: a checkpoint");
    let restart = points[checkpoint..].iter().find(|p| is(p, "wal") && p["offset"] == 0);
    assert!(restart.is_some(), "a write to the start of the WAL after the checkpoint: {r:#}");
    let (landed, distinct) = (r["points_landed"].as_u64().unwrap(), r["states_distinct"].as_u64().unwrap());
    assert!(0 < distinct && distinct <= landed, "{r:#}");
    let details = r["details"].to_string();
    assert!(details.contains("the WAL's restart at point"), "{details}");
}

#[test]
fn journal_mode_off_makes_rotation_atomicity_fire() {
    // A full sweep visits every point whatever the seed: one seed shows it.
    let args = ["--cell", "3", "--matrix", "audit", "--leg", "off", "--seed", "22"];
    let Some((code, rs, _dir)) = syscall_results(&args) else { return };
    assert_eq!(code, 1, "{rs:#?}");
    assert_eq!(rs[0]["verdict"], "fire", "{:#}", rs[0]);
    assert_eq!(rs[0]["effective_mode"], "off", "{:#}", rs[0]);
}

fn fires_with_mutant(cell: &str, mutant: &str, needle: &str, seed: &str) -> Value {
    let args = ["--cell", cell, "--leg", "delete", "--mutant", mutant, "--seed", seed];
    let (code, rs, _dir) = syscall_results(&args).expect("ptrace is permitted where mutants are tested");
    assert_eq!(code, 1, "{rs:#?}");
    let r = rs[0].clone();
    assert_eq!(r["verdict"], "fire", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains(needle), "{r:#}");
    let kp = r["kill_points"].as_array().unwrap().last().unwrap().clone();
    assert!(kp["ordinal"].is_u64() && kp["syscall"].is_string(), "{kp}");
    assert!(r["repro"].as_str().unwrap().contains(&format!("--point {}", kp["ordinal"])), "{r:#}");
    let evidence = r["evidence"].as_str().expect("a fire keeps its evidence");
    assert!(std::path::Path::new(evidence).join("kill-point.json").is_file(), "{evidence}");
    r
}

/// The mutants fire under syscall kills, and a fire's `--point` reproduces
/// the same crash state: same reason, same kill point, one trial.
#[test]
fn mutants_fire_under_syscall_kills_and_a_repro_point_reproduces_the_crash_state() {
    if syscall_results(&["--cell", "1", "--leg", "delete", "--seed", "1", "--point", "1"]).is_none() {
        return;
    }
    // A full sweep visits every point whatever the seed: one seed shows it.
    fires_with_mutant("1", "ack-before-commit", "was lost", "31");
    let fired = fires_with_mutant("3", "split-rotation", "orphan", "31");
    let point = fired["kill_points"].as_array().unwrap().last().unwrap().clone();
    let n = point["ordinal"].to_string();
    let args = ["--cell", "3", "--leg", "delete", "--mutant", "split-rotation", "--seed", "31", "--point", &n];
    let (code, rs, _dir) = syscall_results(&args).unwrap();
    assert_eq!(code, 1);
    assert_eq!(rs[0]["trials"], 1);
    // The same finding, word for word; the sweep's details add why its later
    // points did not run, the repro's (one point, planned and landed) has
    // nothing to add.
    assert_eq!(rs[0]["reason"], fired["reason"]);
    let noted = |r: &serde_json::Value| r["details"].to_string().contains("planned kill points landed");
    assert!(noted(&fired) && !noted(&rs[0]), "{fired:#} / {:#}", rs[0]);
    assert_eq!((rs[0]["points_planned"].as_u64(), rs[0]["points_landed"].as_u64()), (Some(1), Some(1)));
    assert_eq!(rs[0]["kill_points"][0], point);
}

#[test]
fn sampled_points_are_few_and_within_the_sweep() {
    let dir = scratch();
    let args = ["run", "--kill", "syscall", "--cell", "1", "--leg", "delete", "--points", "5", "--seed", "34"];
    let (_, report) = run_json(&args, dir.path());
    let r = results(&report, "prefix-durability")[0];
    if r["verdict"] == "skip" {
        return crate::common::tracing_refused(&r["reason"]);
    }
    assert_eq!(r["verdict"], "pass", "{r:#}");
    assert_eq!(r["kill_points"].as_array().unwrap().len(), 5, "{r:#}");
    // The five sampled points are the plan, and each landed.
    assert_eq!((r["points_planned"].as_u64(), r["points_landed"].as_u64()), (Some(5), Some(5)), "{r:#}");
}

/// `(path, planned, landed)` of each path a cell-2 result names.
fn paths(r: &Value) -> Vec<(String, u64, u64)> {
    let by_path = r["points_by_path"].as_array().unwrap_or_else(|| panic!("no points_by_path: {r:#}"));
    by_path
        .iter()
        .map(|p| {
            (p["path"].as_str().unwrap().to_string(), p["planned"].as_u64().unwrap(), p["landed"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn consume_once_kills_r0_at_every_point_of_both_its_claims() {
    let Some((code, rs, _dir)) = syscall_results(&["--cell", "2", "--seed", "35"]) else { return };
    assert_eq!(code, 0, "{rs:#?}");
    let r = &rs[0];
    assert_eq!(r["verdict"], "pass", "{r:#}");
    let p = paths(r);
    let names: Vec<&str> = p.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["winning-claim", "losing-claim"], "{r:#}");
    for (name, planned, landed) in &p {
        assert!(*planned > 0 && landed == planned, "{name}: {landed} of {planned} landed: {r:#}");
    }
    let total: u64 = p.iter().map(|(_, planned, _)| planned).sum();
    assert_eq!((r["points_planned"].as_u64(), r["points_landed"].as_u64()), (Some(total), Some(total)), "{r:#}");
    assert_eq!(r["trials"].as_u64(), Some(total), "{r:#}");
}

#[test]
fn consume_once_fires_on_racy_claim_and_on_split_claim_under_syscall_kills() {
    if syscall_results(&["--cell", "2", "--seed", "1", "--point", "1"]).is_none() {
        return;
    }
    let (code, rs, _dir) = syscall_results(&["--cell", "2", "--seed", "35", "--mutant", "racy-claim"]).unwrap();
    assert_eq!(code, 1, "{rs:#?}");
    assert!(rs[0]["reason"].as_str().unwrap().contains("won the handoff"), "{:#}", rs[0]);
    // A kill between split-claim's two transactions, on r0's winning claim,
    // leaves the handoff taken by nobody: always at the same point.
    let (code, rs, _dir) = syscall_results(&["--cell", "2", "--seed", "36", "--mutant", "split-claim"]).unwrap();
    assert_eq!(code, 1, "{rs:#?}");
    let r = &rs[0];
    assert!(r["reason"].as_str().unwrap().contains("claimed 0 times"), "{r:#}");
    let details = r["details"].as_array().unwrap();
    assert!(details[0].as_str().unwrap().starts_with("r0 killed on its winning claim"), "{r:#}");
    // Its kill point says where r0 was: in its claim, its kill a part of the fire.
    let racer = &r["kill_points"].as_array().unwrap().last().unwrap()["racer"];
    assert_eq!(racer["stage"], "in-claim", "{r:#}");
    assert_eq!(racer["path"], "winning-claim", "{r:#}");
    assert!(racer.get("no_part").is_none(), "split-claim's torn claim is the kill's: {r:#}");
    // The sweep stopped at the fire: the details say how many points did not run.
    let (planned, landed) = (r["points_planned"].as_u64().unwrap(), r["points_landed"].as_u64().unwrap());
    assert!(landed < planned, "{r:#}");
    assert!(r["details"].to_string().contains(&format!("{landed} of {planned} planned kill points landed")), "{r:#}");
    // Its repro kills r0 at that one point and fires again.
    let point = r["repro"].as_str().unwrap().split("--point ").nth(1).unwrap().split(' ').next().unwrap().to_string();
    let args = ["--cell", "2", "--seed", "36", "--mutant", "split-claim", "--point", &point];
    let (code, again, _dir) = syscall_results(&args).unwrap();
    assert_eq!((code, &again[0]["verdict"]), (1, &Value::from("fire")), "{again:#?}");
    assert_eq!((again[0]["points_planned"].as_u64(), again[0]["points_landed"].as_u64()), (Some(1), Some(1)));
}

/// The tracer matches the resolved paths /proc reports: a work folder reached
/// through a symlink must still find the database's files.
#[test]
fn a_workdir_behind_a_symlink_is_swept_like_any_other() {
    let dir = scratch();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    // A few points are enough: a tracer that matched no file would find no
    // point at all, and the census would stall into an error.
    let out = crate::common::bin()
        .args(["run", "--cell", "1", "--leg", "delete", "--kill", "syscall", "--seed", "3", "--points", "3"])
        .args(["--format", "json"])
        .arg("--workdir")
        .arg(&link)
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report:#}");
}

/// Cell `cell` on the `wal` leg (the fewest kill points) under a full
/// sweep: the reference store passes, and the mutant fires with `needle`.
/// `None` where ptrace is refused; else both results, and the folder that
/// holds the fire's evidence.
fn reference_passes_and_mutant_fires_on_wal(
    cell: &str,
    mutant: &str,
    needle: &str,
) -> Option<(Value, Value, tempfile::TempDir)> {
    let base = ["--cell", cell, "--leg", "wal", "--seed", "36"];
    let (code, rs, _dir) = syscall_results(&base)?;
    assert_eq!((code, &rs[0]["verdict"]), (0, &Value::from("pass")), "{rs:#?}");
    let (code, fired, dir) = syscall_results(&[&base[..], &["--mutant", mutant]].concat()).unwrap();
    assert_eq!(code, 1, "{fired:#?}");
    assert!(fired[0]["reason"].as_str().unwrap().contains(needle), "{:#}", fired[0]);
    Some((rs[0].clone(), fired[0].clone(), dir))
}

#[test]
fn fork_determinism_fires_on_a_torn_fork_at_a_kill_point_inside_the_rewind() {
    let Some((_, fired, _dir)) =
        reference_passes_and_mutant_fires_on_wal("4", "torn-fork", "the live transcript of main is")
    else {
        return;
    };
    // The tear is between two commits of the first rewind, operation 3.
    assert!(fired["reason"].as_str().unwrap().contains("operation 3, rewind to"), "{fired:#}");
    assert_eq!(fired["acked"], 3, "{fired:#}");
}

#[test]
fn outbox_exactly_once_fires_on_a_resend_after_a_kill_between_send_and_record() {
    let Some((passed, fired, _dir)) =
        reference_passes_and_mutant_fires_on_wal("5", "resend-on-catch-up", "was delivered 2 times")
    else {
        return;
    };
    let files: Vec<_> = passed["kill_points"].as_array().unwrap().iter().map(|p| p["file"].clone()).collect();
    assert!(files.contains(&"transport".into()), "the send is a kill point: {files:?}");
    // The decisive point comes after the send: the next one is the mark's.
    let sweep = fired["kill_points"].as_array().unwrap();
    let send = sweep.iter().position(|p| p["file"] == "transport").expect("the send was visited");
    assert!(sweep.len() > send + 1, "{fired:#}");
    let evidence = std::path::Path::new(fired["evidence"].as_str().unwrap());
    let copy = std::fs::read_to_string(evidence.join("recovery-1/transport.ndjson")).unwrap();
    assert_eq!(copy.lines().filter(|l| l.contains("\"o0\"")).count(), 2, "{copy}");
}

/// Issue 23's mutants fire under syscall kills whatever the seed: each
/// sweep covers every shape of its operation (four rotations of the four
/// shapes; rewinds that cut to the start, the middle and the end), so the
/// verdict does not hang on the draw. A torn branch used to fire on 3
/// seeds of 5, a split continuation on none. Seeds of both parities on the
/// reference store, one on the Python example; `scripts/detection-rates`
/// runs ten on every leg. No refires: they measure how often a fire fires
/// again and cannot change a verdict (half of each run's time).
#[test]
fn split_continuation_and_torn_branch_fire_whatever_the_seed() {
    let python = format!("python3 {}/examples/python-store/store.py", env!("CARGO_MANIFEST_DIR"));
    let cases = [("3", "split-continuation", "its system message is missing"), ("4", "torn-branch", "neither")];
    for (cell, mutant, needle) in cases {
        let runs = [("1", "wal", None), ("2", "wal", None), ("3", "default", Some(python.as_str()))];
        for (seed, leg, child) in runs {
            let mut args = vec!["--cell", cell, "--leg", leg, "--mutant", mutant, "--seed", seed, "--refire", "0"];
            args.extend(child.map(|c| ["--child", c]).into_iter().flatten());
            // The first run finds a machine that refuses ptrace, as a probe would.
            let Some((code, rs, _dir)) = syscall_results(&args) else { return };
            let r = &rs[0];
            assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "{mutant}, seed {seed}, {child:?}: {r:#}");
            assert!(r["reason"].as_str().unwrap().contains(needle), "{r:#}");
        }
    }
}

/// The reference child appending once in a fresh DELETE store in `dir`,
/// traced, its stderr in `dir/err`; `None` where ptrace is refused.
fn traced_append(dir: &std::path::Path) -> Option<crashcells::harness::Traced> {
    use crashcells::harness::{ChildCommand, Interrupt, TraceError, Traced};
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::write(dir.join("home/config.toml"), "[database]\njournal_mode = \"delete\"\n").unwrap();
    let reference = ChildCommand {
        program: env!("CARGO_BIN_EXE_crashcells").into(),
        prefix: vec!["child".into()],
        cwd: None,
        env: Vec::new(),
    };
    let args = ["append", "--db", "store.db", "--acks", "acks.ndjson", "--stop-after", "1"];
    let args: Vec<std::ffi::OsString> = args.iter().map(|a| (*a).into()).collect();
    let mut cmd = reference.command(&args, &dir.join("home"));
    cmd.current_dir(dir);
    let filter = crashcells::kill::syscall::filter().unwrap();
    match Traced::spawn(cmd, Some(&dir.join("err")), filter, std::time::Duration::from_secs(20), &Interrupt::new()) {
        Err(TraceError::NotPermitted(why)) => {
            crate::common::tracing_refused(why);
            None
        }
        other => Some(other.unwrap()),
    }
}

/// Fault injection (issue 24): the reference store's first journal write
/// fails with ENOSPC and, in another run, its first fsync with EIO; SQLite
/// reports each (SQLITE_FULL, SQLITE_IOERR), the child runs on to its end
/// and acknowledges nothing.
#[test]
fn a_call_made_to_fail_is_reported_by_sqlite_and_nothing_is_acknowledged() {
    use crashcells::kill::fault::fault_for;
    use crashcells::kill::inject::Injected;
    use crashcells::kill::syscall::{Driven, FileKind, Goal, Point, Targets, drive_observed};
    let root = scratch();
    let root = root.path().canonicalize().unwrap();
    // The census: every kill point, to find the first journal write and sync.
    let dir = root.join("census");
    let Some(mut child) = traced_append(&dir) else { return };
    let targets = |dir: &std::path::Path| Targets::new(&dir.join("store.db"), &dir.join("acks.ndjson"));
    let mut points: Vec<Point> = Vec::new();
    let mut seen = |_: u32, _: i64, _: [u64; 6], p: Option<&Point>| points.extend(p.cloned());
    let driven = drive_observed(&mut child, &targets(&dir), Goal::ToEnd, &mut seen).unwrap();
    assert!(matches!(driven, Driven::Exited { .. }), "{driven:?}");
    drop(child);
    use nix::errno::Errno;
    // The first call on the journal that fault injection fails with `errno`.
    let first = |errno: Errno| {
        let p = points.iter().find(|p| p.file == Some(FileKind::Journal) && fault_for(p.syscall.name()) == Some(errno));
        p.map(|p| (p.ordinal.0, p.syscall.name())).unwrap()
    };
    for (errno, message) in [(Errno::ENOSPC, "database or disk is full"), (Errno::EIO, "disk I/O error")] {
        let (n, syscall) = first(errno);
        let dir = root.join(syscall);
        let mut child = traced_append(&dir).unwrap();
        let driven = drive_observed(
            &mut child,
            &targets(&dir),
            Goal::InjectAt(n, Injected::Failed(errno)),
            &mut |_, _, _, _| {},
        )
        .unwrap();
        let Driven::Exited { exit, counted } = driven else { panic!("{syscall}: {driven:?}") };
        drop(child);
        let err = std::fs::read_to_string(dir.join("err")).unwrap();
        assert!(counted >= n, "{syscall}: the fault was made at #{n}");
        assert!(err.contains(message), "{syscall} failed with {errno}: {err}");
        assert_ne!(exit, crashcells::harness::Exit::Code(0), "{syscall}: {err}");
        let acks = std::fs::read_to_string(dir.join("acks.ndjson")).unwrap_or_default();
        assert!(!acks.contains("\"kind\":\"ack\""), "{syscall}: nothing acknowledged after the failure: {acks}");
    }
}

/// The `reads-first` schedule holds r0 at its claim's first write until the
/// others wait for the lock: racy-claim's check-then-act fires by
/// construction (every racer read `pending`), and the reference store,
/// whose claim checks inside its write, passes the same schedule and the
/// between-transactions one. Each detail says what the others did, not
/// what the schedule meant them to.
#[test]
fn reads_first_fires_racy_claim_by_construction_and_passes_the_reference_store() {
    let Some((code, rs, _dir)) = syscall_results(&["--cell", "2", "--seed", "1", "--mutant", "racy-claim"]) else {
        return;
    };
    assert_eq!(code, 1, "{rs:#?}");
    let r = &rs[0];
    assert!(r["reason"].as_str().unwrap().contains("racers won the handoff"), "{r:#}");
    let schedule = r["details"][0].as_str().unwrap();
    assert!(schedule.starts_with("schedule reads-first: r0 held at its claim's first write"), "{r:#}");
    assert!(schedule.contains("waited for the write lock") && schedule.ends_with("then let go"), "{r:#}");
    let (code, rs, _dir) = syscall_results(&["--cell", "2", "--seed", "1", "--points", "2"]).unwrap();
    assert_eq!((code, &rs[0]["verdict"]), (0, &Value::from("pass")), "{rs:#?}");
    let passed = rs[0]["details"].to_string();
    assert!(passed.contains("passed schedule reads-first: r0 held"), "{:#}", rs[0]);
    assert!(!passed.contains("every claim read before any claim wrote"), "what it meant, not what it did");
    assert!(passed.contains("passed schedule between-transactions: r0 held after its first commit"), "{:#}", rs[0]);
    assert!(passed.contains("claimed (its claim acked)"), "{:#}", rs[0]);
    assert!(passed.contains("passed schedule preemptions-2: r0 to be held at its lock calls"), "{:#}", rs[0]);
    assert!(passed.contains("passed schedule preemptions-3: r0 to be held at its lock calls"), "{:#}", rs[0]);
}
