//! Recorded crash states: a state rebuilt from the log is the state a real
//! kill at that point leaves, byte for byte (the reference store made
//! deterministic by its test-only flag); `dump` recovers several databases
//! in one process in both stores; a recorded fire is confirmed by a real
//! kill; power-loss states fire where SQLite's documentation says data can
//! be lost, and pass where it says it is kept.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crashcells::crashstate::record::record;
use crashcells::crashstate::{Files, Names};
use crashcells::harness::{ChildCommand, Interrupt, TraceError, Traced};
use crashcells::kill::syscall::{Driven, FileKind, Goal, Targets, drive, filter};
use serde_json::Value;

use crate::common::{bin, run_json, scratch};

fn reference() -> ChildCommand {
    ChildCommand {
        program: env!("CARGO_BIN_EXE_crashcells").into(),
        prefix: vec!["child".into()],
        cwd: None,
        env: Vec::new(),
    }
}

/// A trial-like folder with a config home asking for `mode`.
fn folder(root: &Path, name: &str, mode: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::write(dir.join("home/config.toml"), format!("[database]\njournal_mode = \"{mode}\"\n")).unwrap();
    dir.canonicalize().unwrap()
}

/// The deterministic reference child appending twice in `dir`, traced.
fn traced(dir: &Path) -> Result<Traced, TraceError> {
    let args = ["append", "--db", "store.db", "--acks", "acks.ndjson", "--stop-after", "2"];
    let args: Vec<std::ffi::OsString> = args.iter().map(|a| (*a).into()).collect();
    let mut cmd = reference().command(&args, &dir.join("home"));
    cmd.current_dir(dir).env(crashcells_child::DETERMINISTIC_ENV, "1");
    Traced::spawn(cmd, None, filter().unwrap(), Duration::from_secs(20), &Interrupt::new())
}

fn targets(dir: &Path) -> Targets {
    Targets::new(&dir.join("store.db"), &dir.join("acks.ndjson"))
}

/// The ack journal without the ready record's pid, which differs per run.
fn without_pid(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    regex::Regex::new(r#""pid":\d+"#).unwrap().replace(&text, r#""pid":0"#).into_owned()
}

/// Compares a rebuilt state with the files a real run left in `dir`.
fn same_as_disk(state: &Files, dir: &Path, n: u64) {
    let names = Names::new(&dir.join("store.db"), &dir.join("acks.ndjson"), &dir.join("transport.ndjson"));
    for kind in [FileKind::Database, FileKind::Journal, FileKind::Wal] {
        let disk = std::fs::read(dir.join(names.of(kind))).ok();
        assert_eq!(state.get(kind), disk, "point {n}: the {} differs", kind.as_str());
    }
    let disk = std::fs::read(dir.join("acks.ndjson")).unwrap_or_default();
    assert_eq!(without_pid(&state.get(FileKind::Acks).unwrap_or_default()), without_pid(&disk), "point {n}: acks");
}

fn equivalence_at_every_point(mode: &str) {
    let root = scratch();
    let rec = folder(root.path(), "recorded", mode);
    let mut child = match traced(&rec) {
        Err(TraceError::NotPermitted(why)) => return crate::common::tracing_refused(why),
        other => other.unwrap(),
    };
    let (driven, log) = record(&mut child, &targets(&rec), Goal::ToEnd).unwrap();
    assert!(matches!(driven, Driven::Exited { .. }), "{driven:?}");
    drop(child);
    assert!(log.total() > 20, "a workload of two appends has its points: {}", log.total());
    for n in 1..=log.total() {
        let dir = folder(root.path(), &format!("p{n}"), mode);
        let mut real = traced(&dir).unwrap();
        let at = drive(&mut real, &targets(&dir), Goal::KillAt(n)).unwrap();
        // The same call at the same place; an ack's length may differ by the
        // ready record's pid, the one thing two runs cannot share.
        let want = log.point(n);
        let same = |p: &crashcells::kill::syscall::Point| {
            (p.ordinal, p.syscall, p.file, p.offset) == (want.ordinal, want.syscall, want.file, want.offset)
                && (p.file == Some(FileKind::Acks) || p.len == want.len)
        };
        assert!(matches!(at, Driven::At(ref p) if same(p)), "point {n}: {at:?} (recorded: {want:?})");
        assert!(real.kill_and_reap().exit.is_sigkill());
        same_as_disk(&Files::after(log.before(n)), &dir, n);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    same_as_disk(&Files::after(log.ran()), &rec, log.total() + 1);
}

#[test]
fn a_recorded_state_is_the_state_a_real_kill_leaves_at_every_point_in_delete() {
    equivalence_at_every_point("delete");
}

#[test]
fn a_recorded_state_is_the_state_a_real_kill_leaves_at_every_point_in_wal() {
    equivalence_at_every_point("wal");
}

/// Two stores of two and three appends, each dumped alone and then both in
/// one batch: the batch prints each one's line, in order.
fn batch_dump_matches_single_dumps(child: &[&str]) {
    let root = scratch();
    let home = folder(root.path(), "h", "delete").join("home");
    let run = |args: &[&str]| {
        let out = Command::new(child[0]).args(&child[1..]).args(args).env("CRASHCELLS_HOME", &home).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let (a, b) = (root.path().join("a.db"), root.path().join("b.db"));
    for (db, n) in [(&a, "2"), (&b, "3")] {
        let acks = db.with_extension("acks");
        run(&["append", "--db", db.to_str().unwrap(), "--acks", acks.to_str().unwrap(), "--stop-after", n]);
    }
    let single = |db: &Path| run(&["dump", "--db", db.to_str().unwrap()]);
    let (one, two) = (single(&a), single(&b));
    assert_ne!(one, two);
    let both = run(&["dump", "--db", a.to_str().unwrap(), "--db", b.to_str().unwrap()]);
    assert_eq!(both, format!("{one}{two}"));
    let missing = Command::new(child[0])
        .args(&child[1..])
        .args(["dump", "--db", a.to_str().unwrap(), "--db", "nowhere.db"])
        .env("CRASHCELLS_HOME", &home)
        .output()
        .unwrap();
    assert!(!missing.status.success() && missing.stdout.is_empty(), "a batch with a missing file prints nothing");
}

#[test]
fn the_reference_store_dumps_several_databases_in_one_process() {
    batch_dump_matches_single_dumps(&[env!("CARGO_BIN_EXE_crashcells"), "child"]);
}

#[test]
fn the_python_store_dumps_several_databases_in_one_process() {
    let store = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/python-store/store.py");
    if Command::new("python3").arg("--version").output().is_err() {
        return crashcells::testskip::skip_or_fail(crashcells::testskip::Need::Python, "it runs a Python store");
    }
    batch_dump_matches_single_dumps(&["python3", store]);
}

/// The results of a run (with the folder that holds its evidence), or none
/// where ptrace is refused.
fn sweep(args: &[&str]) -> Option<(i32, Vec<Value>, tempfile::TempDir)> {
    let dir = scratch();
    let (code, report) = run_json(args, dir.path());
    let rs = report["results"].as_array().unwrap().clone();
    if rs.iter().all(|r| r["reason"].as_str().unwrap_or("").contains("unavailable")) {
        crate::common::tracing_refused(&rs[0]["reason"]);
        return None;
    }
    Some((code, rs, dir))
}

#[test]
fn a_recorded_fire_is_confirmed_by_a_real_kill_and_its_repro_is_that_kill() {
    let args = ["run", "--cell", "1", "--leg", "delete", "--kill", "syscall", "--mutant", "ack-before-commit"];
    let Some((code, rs, _dir)) = sweep(&[&args[..], &["--seed", "41"]].concat()) else { return };
    assert_eq!(code, 1, "{rs:#?}");
    let r = &rs[0];
    let n = r["kill_points"].as_array().unwrap().last().unwrap()["ordinal"].as_u64().unwrap();
    let details: Vec<&str> = r["details"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    assert!(details.contains(&format!("confirmed by a real kill at point {n}").as_str()), "{r:#}");
    assert!(r["repro"].as_str().unwrap().contains(&format!("--point {n}")), "{r:#}");
    assert!(!r["repro"].as_str().unwrap().contains("--replay"), "a repro point is a real kill already: {r:#}");
    assert_eq!(r["states"], "recorded", "the sweep's states came from its recording: {r:#}");
    // Its repro, one point, is a real kill: re-executed, and no whole sweep.
    let repro = r["repro"].as_str().unwrap().split(' ').skip(1).collect::<Vec<_>>();
    let (code, rs, _dir) = sweep(&repro).unwrap();
    assert_eq!((&rs[0]["states"], &rs[0]["sampled"]), (&Value::from("re-executed"), &Value::from(true)), "{:#}", rs[0]);
    assert_eq!((code, rs[0]["verdict"].as_str()), (1, Some("fire")), "the real kill fires again: {:#}", rs[0]);
}

/// A store that writes from a thread pool (tests/adapters/pooled.py) does
/// not make the same calls twice: the real kill at a recorded fire's point
/// lands elsewhere in about two runs of three. Its planted ack-before-commit
/// still fires, confirmed by a real kill at the point or, where that
/// passed, in a run killed where it reached the fired state again (by its
/// files' hash, or by the fired call once the same acks were written),
/// never an error naming the non-determinism; without the bug it passes.
#[test]
fn a_store_that_writes_from_a_thread_pool_fires_when_broken_and_passes_when_not() {
    if Command::new("python3").arg("--version").output().is_err() {
        return crashcells::testskip::skip_or_fail(crashcells::testskip::Need::Python, "it runs a Python store");
    }
    let child = concat!("python3 ", env!("CARGO_MANIFEST_DIR"), "/tests/adapters/pooled.py");
    // Two appends, not the catalog's four: the bug fires at the first, and
    // the passing sweep costs half the points.
    let cells = scratch();
    let cell = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/cells/1-prefix-durability.toml")).unwrap();
    assert!(cell.contains("\nsweep_ops = 4\n"), "the catalog's cell 1 changed: {cell}");
    std::fs::write(
        cells.path().join("1-prefix-durability.toml"),
        cell.replace("\nsweep_ops = 4\n", "\nsweep_ops = 2\n"),
    )
    .unwrap();
    let catalog = cells.path().to_str().unwrap();
    let args = ["run", "--child", child, "--catalog", catalog, "--cell", "1", "--leg", "delete", "--kill", "syscall"];
    let args = [&args[..], &["--seed", "45"]].concat();
    let Some((code, rs, _dir)) = sweep(&[&args[..], &["--mutant", "ack-before-commit"]].concat()) else { return };
    let r = &rs[0];
    assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "{r:#}");
    let details: Vec<&str> = r["details"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    let how = details.iter().find(|d| d.starts_with("confirmed by a real kill")).expect("how it was confirmed");
    let ways = ["at point ", "once the ack journal held what it held there", "files first held the state"];
    assert!(ways.iter().any(|w| how.contains(w)), "{how}");
    let (code, rs, _dir) = sweep(&args).unwrap();
    assert_eq!((code, rs[0]["verdict"].as_str()), (0, Some("pass")), "{:#}", rs[0]);
}

/// A re-executed sweep (its points' folders recovered in batches by the
/// one driver) passes on the reference store and fires on a mutant, the
/// fire's evidence its kill point and calls, as a lone real kill's.
#[test]
fn replay_off_re_executes_and_says_so_in_the_repro() {
    let args = ["run", "--cell", "3", "--leg", "delete", "--kill", "syscall", "--replay", "off", "--points", "3"];
    let Some((code, rs, _dir)) = sweep(&[&args[..], &["--seed", "42"]].concat()) else { return };
    assert_eq!(code, 0, "{rs:#?}");
    assert_eq!(rs[0]["trials"], 3, "{:#}", rs[0]);
    assert!(rs[0]["repro"].as_str().unwrap().contains("--replay off"), "{:#}", rs[0]);
    assert_eq!(rs[0]["states"], "re-executed", "{:#}", rs[0]);
    let args = ["run", "--cell", "1", "--leg", "delete", "--kill", "syscall", "--replay", "off", "--seed", "41"];
    let (code, rs, _dir) = sweep(&[&args[..], &["--mutant", "ack-before-commit"]].concat()).unwrap();
    let r = &rs[0];
    assert_eq!((code, r["verdict"].as_str(), r["states"].as_str()), (1, Some("fire"), Some("re-executed")), "{r:#}");
    let evidence = std::path::Path::new(r["evidence"].as_str().expect("the fire's evidence"));
    assert!(evidence.join("kill-point.json").exists() && evidence.join("recovery-1").exists(), "{r:#}");
    assert!(r["timeline"].is_string(), "{r:#}");
}

#[test]
fn power_loss_loses_acked_appends_with_synchronous_off_and_keeps_them_in_wal_full() {
    let base = ["run", "--kill", "power", "--cell", "1", "--matrix", "audit", "--seed", "43"];
    let Some((code, rs, _dir)) = sweep(&[&base[..], &["--leg", "wal-sync-off"]].concat()) else { return };
    assert_eq!(code, 1, "{rs:#?}");
    let r = &rs[0];
    assert_eq!((r["verdict"].as_str(), r["kill"].as_str()), (Some("fire"), Some("power")), "{r:#}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains("power loss at #") && reason.contains("was never made durable by"), "{reason}");
    let evidence = Path::new(r["evidence"].as_str().expect("a power fire keeps its state"));
    assert!(evidence.join("power-loss.txt").is_file() && evidence.join("acks.ndjson").is_file(), "{r:#}");
    assert!(r["repro"].as_str().unwrap().contains("--kill power --seed 43 --point"), "{r:#}");
    // pragma.html: with synchronous=FULL in WAL mode every commit is synced.
    let (code, rs, _dir) = sweep(&[&base[..], &["--leg", "wal-sync-full"]].concat()).unwrap();
    assert_eq!(code, 0, "{rs:#?}");
    assert_eq!(rs[0]["verdict"], "pass", "{:#}", rs[0]);
}

/// The Python example as a `--child` on crashcells' bundled SQLite, placed
/// in `dir` and loaded before the machine's (whose library may refuse WAL
/// at the WAL-reset gate): the leg runs on the child's own launcher, its
/// fork server, as a store linked to a current SQLite does.
fn python_on_bundled(dir: &Path) -> String {
    use crashcells::sqlitelib::{Library, Placement, place};
    let Placement::Placed(placed) = place(&Library::Bundled, dir, "bundled").unwrap() else {
        panic!("this build has no bundled SQLite")
    };
    let store = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/python-store/store.py");
    format!("env LD_LIBRARY_PATH={} python3 {store}", placed.loader_path().to_string_lossy())
}

/// Issue 49, item 4: a store that keeps each body in a file beside its
/// database, renamed into place with no fsync of it or of the folder (the
/// Python example's `unsynced-body-file`), meets power states whose commit
/// is durable and whose file is gone: its `dump` fails. That is a fire,
/// found through the fork server and confirmed exec'd, its repro firing
/// again, on every seed (with the warm pool too); before, the exec'd
/// confirmation's batch stopped at another state and left the state it
/// judged "not run", and the result was an error blaming the fork server.
/// The store without the mutant passes the same sweeps.
#[test]
fn a_power_loss_that_loses_a_file_the_store_needs_fires_confirmed_execd() {
    if Command::new("python3").arg("--version").output().is_err() {
        return crashcells::testskip::skip_or_fail(crashcells::testskip::Need::Python, "it runs a Python store");
    }
    let lib = scratch();
    let child = python_on_bundled(lib.path());
    let base = ["run", "--child", &child, "--leg", "wal", "--cell", "1", "--kill", "power"];
    // One rerun of the repro says whether it fires again, at a fifth of the default's cost.
    let mutant = ["--mutant", "unsynced-body-file", "--refire", "1"];
    let runs = [("1", "on"), ("2", "on"), ("3", "on"), ("1", "off")];
    for (seed, fork_server) in runs {
        let args = [&base[..], &mutant, &["--seed", seed, "--fork-server", fork_server]].concat();
        let Some((code, rs, _dir)) = sweep(&args) else { return };
        let r = &rs[0];
        let said = format!("seed {seed}, fork server {fork_server}: {r:#}");
        assert_eq!(rs.len(), 1, "one result, a fire, no error: {said}");
        assert_eq!(
            (code, r["verdict"].as_str(), r["effective_mode"].as_str()),
            (1, Some("fire"), Some("wal")),
            "{said}"
        );
        assert_eq!(r["violation"], "store-failed-dump", "{said}");
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.contains("was never made durable by a directory fsync"), "{said}");
        assert!(reason.contains("No such file or directory"), "{said}");
        let launcher = if fork_server == "on" { "fork server" } else { "warm pool" };
        let confirmed = format!("confirmed exec'd (not through the {launcher}");
        assert!(r["details"].as_array().unwrap().iter().any(|d| d.as_str().unwrap().starts_with(&confirmed)), "{said}");
        assert_eq!(r["refire"]["fired"], r["refire"]["runs"], "its repro fires every time: {said}");
    }
    for seed in ["1", "2", "3"] {
        let Some((code, rs, _dir)) = sweep(&[&base[..], &["--seed", seed]].concat()) else { return };
        assert_eq!((code, rs[0]["verdict"].as_str()), (0, Some("pass")), "seed {seed}: {:#}", rs[0]);
    }
    // The reference store plays every other mutant; this one it refuses
    // in the preflight, rather than pass as if it were broken so.
    let dir = scratch();
    let out = crate::common::run(&["run", "--cell", "1", "--mutant", "unsynced-body-file"], dir.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("does not implement the mutant `unsynced-body-file`"), "{said}");
}

#[test]
fn power_is_opt_in_and_not_part_of_kill_all() {
    let dir = scratch();
    let out = bin().args(["run", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("power"));
    let (_, report) = run_json(&["run", "--cell", "1", "--leg", "delete", "--points", "1", "--seed", "44"], dir.path());
    let kills: Vec<_> = report["results"].as_array().unwrap().iter().map(|r| r["kill"].clone()).collect();
    assert_eq!(kills, ["timed", "syscall"]);
}

/// The audit's crash columns on one leg: WAL with synchronous=NORMAL keeps
/// every acked commit across a process crash but not across a power loss
/// (pragma.html: "A transaction committed in WAL mode with
/// synchronous=NORMAL might roll back following a power loss").
#[test]
fn the_audit_says_a_leg_keeps_acked_commits_under_a_process_crash_but_loses_them_to_a_power_loss() {
    let dir = scratch();
    let legs = "[[legs]]\nname = \"wal-normal\"\njournal_mode = \"wal\"\nsynchronous = \"normal\"\n";
    let (code, report, matrix) = crate::common::audit_one_leg(dir.path(), legs);
    let row = &report["rows"][0];
    if row["process_crash"]["reason"].as_str().unwrap_or("").contains("unavailable") {
        return crate::common::tracing_refused(&row["process_crash"]["reason"]);
    }
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(row["process_crash"]["keeps"], true, "{row:#}");
    assert_eq!(row["power_loss"]["keeps"], false, "{row:#}");
    let reason = row["power_loss"]["reason"].as_str().unwrap();
    assert!(reason.contains("was never made durable by an fsync of the wal"), "{reason}");
    // A `LOSES` has the repro of the result that lost the commit, and it
    // loses it again (a power state is a model of the recording: no luck).
    let repro = row["power_loss"]["repro"].as_str().expect("a LOSES has a repro");
    let expected = format!("--matrix {} --leg wal-normal --kill power --seed 1 --point", matrix.display());
    assert!(repro.starts_with("crashcells run --cell prefix-durability") && repro.contains(&expected), "{repro}");
    assert_eq!(row["process_crash"].get("repro"), None, "a keeps has none: {row:#}");
    let args: Vec<&str> = repro.split(' ').skip(1).collect();
    let (code, rerun) = run_json(&args, dir.path());
    assert_eq!((code, &rerun["results"][0]["verdict"]), (1, &Value::from("fire")), "{rerun:#}");
    // The human table says what its crash columns are and where each row is explained.
    // It is this audit's report as `--format human` prints it (`audit` prints one
    // report either way), rendered from the JSON: a second audit would sweep again.
    let human: crashcells::audit::AuditReport = serde_json::from_value(report.clone()).expect("an audit report");
    let human = human.to_human();
    // It names the cells the registry says answer durability, however many.
    let columns = crashcells::audit::crash::Columns::not_honored();
    let legend = crashcells::audit::render::legend(&columns, &crashcells::audit::crash::cell_numbers());
    // The table wraps the legend to its width: read it with the breaks unmade.
    let flat = human.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&legend), "{human}");
    assert!(flat.contains("\"The audit's crash columns, row by row\""), "{human}");
    assert!(human.contains(&format!("    power loss repro: {repro}")), "{human}");
}

/// The torn power model's size on real logs: the reference store's cell 1
/// sweep workload (4 appends) recorded on four legs of the audit matrix,
/// every point wanted. Prints per leg the points, the distinct stores of the
/// in-order and the torn model (each costs a recovery), the most states at
/// one point and the time to build; the default bound keeps the torn model
/// within three times the in-order one (docs/DESIGN.md, "Torn and reordered
/// writes", has the figures for every leg and both cells).
#[test]
fn torn_power_states_stay_bounded_on_the_reference_store() {
    use crashcells::crashstate::{Files, power, torn};
    let root = scratch();
    for (mode, sync) in [("wal", "full"), ("wal", "off"), ("delete", "full"), ("delete", "off")] {
        let dir = folder(root.path(), &format!("{mode}-{sync}"), mode);
        let config = format!("[database]\njournal_mode = \"{mode}\"\nsynchronous = \"{sync}\"\n");
        std::fs::write(dir.join("home/config.toml"), config).unwrap();
        let args = ["append", "--db", "store.db", "--acks", "acks.ndjson", "--stop-after", "4"];
        let args: Vec<std::ffi::OsString> = args.iter().map(|a| (*a).into()).collect();
        let mut cmd = reference().command(&args, &dir.join("home"));
        cmd.current_dir(&dir);
        let mut child = match Traced::spawn(cmd, None, filter().unwrap(), Duration::from_secs(20), &Interrupt::new()) {
            Err(TraceError::NotPermitted(why)) => return crate::common::tracing_refused(why),
            other => other.unwrap(),
        };
        let (_, log) = record(&mut child, &targets(&dir), Goal::ToEnd).unwrap();
        let wanted: Vec<u64> = (1..=log.total() + 1).collect();
        let started = std::time::Instant::now();
        let t = torn::model(log.ran(), &wanted, torn::Bound::default());
        let took = started.elapsed();
        let p = power::model(log.ran(), &wanted);
        let mut in_order: Vec<&Files> = Vec::new();
        for s in &p.states {
            if !in_order.iter().any(|f| f.store().eq(s.files.store())) {
                in_order.push(&s.files);
            }
        }
        let (ps, ts) = (in_order.len(), t.states.len());
        let most = t.points.iter().map(|a| a.states.len()).max().unwrap_or(0);
        let points = wanted.len();
        eprintln!(
            "{mode}/{sync}: {points} points; stores: in-order {ps}, torn {ts}; most at a point {most}; {took:.1?}"
        );
        assert!(ts <= 3 * ps, "{mode}/{sync}: {ts} torn stores for {ps} in-order ones");
        assert_eq!(t.explored.len(), t.points.len(), "every point says how many states it built");
    }
}

/// A recorded sweep tells the run's event stream what it is doing: `recording`
/// before it knows its points (a bar then has no count to show), then its
/// points and `checking`, and each point as its batch is judged, not all at
/// once after the last (a bar sat at `0/94 points` through the checking).
#[test]
fn a_recorded_sweep_reports_its_phases_and_its_points_as_they_are_judged() {
    use std::sync::{Arc, Mutex};

    use crashcells::model::{Event, Events, Listener, Phase};
    use crashcells::pipeline::Context;
    use crashcells::plan::{KillMode, Selection, plan};

    /// A step of a result's progress, as heard.
    #[derive(Debug, PartialEq)]
    enum Step {
        Planned(u64),
        Done,
        Phase(Phase),
    }
    struct Steps(Mutex<Vec<Step>>);
    impl Listener for Steps {
        fn on(&self, event: &Event) -> Result<(), String> {
            let step = match *event {
                Event::Planned { count, .. } => Step::Planned(count),
                Event::Done { .. } => Step::Done,
                Event::Phase { phase, .. } => Step::Phase(phase),
                _ => return Ok(()),
            };
            self.0.lock().unwrap().push(step);
            Ok(())
        }
    }

    let dir = scratch();
    let work = dir.path().canonicalize().unwrap();
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    let matrix = crashcells::matrix::Matrix::load("default").unwrap();
    let selection = Selection { cells: vec!["1".into()], legs: vec!["delete".into()], kills: vec![KillMode::Syscall] };
    let job = plan(&catalog, &matrix, &selection, 7).unwrap().remove(0);
    let heard = Arc::new(Steps(Mutex::new(Vec::new())));
    let child = crashcells::harness::Launcher::exec(reference());
    let ready = crashcells::probe::preflight(&child, &work, Duration::from_secs(30), &Interrupt::new()).unwrap();
    let options = crashcells::options::RunOptions { matrix: "default".into(), ..Default::default() };
    let ctx = Context::new(options, 7, child, work.clone(), work.join("evidence"), Duration::from_secs(30), 2);
    let ctx = Context { child_ready: Some(ready), events: Events::of(0, heard.clone()), ..ctx };
    let result = crashcells::pipeline::run_job(&job, &ctx);
    if result.reason.contains("unavailable") {
        return crate::common::tracing_refused(&result.reason);
    }
    assert_eq!(result.verdict, crashcells::model::Verdict::Pass, "{result:#?}");
    let steps = std::mem::take(&mut *heard.0.lock().unwrap());
    let planned = result.sweep.points_planned.unwrap();
    let first = [Step::Phase(Phase::Recording), Step::Planned(planned), Step::Phase(Phase::Checking)];
    assert_eq!(steps[..3], first, "{steps:?}");
    assert_eq!(steps[3..].iter().filter(|s| **s == Step::Done).count() as u64, planned, "{steps:?}");
}

/// A catalog folder in `scratch` whose cell 2 runs on every leg: its
/// `delete` leg is a race on a rollback journal (its WAL legs are the
/// point-by-point comparison's, below).
fn race_on_every_leg(scratch: &Path) -> String {
    let dir = scratch.join("cells");
    std::fs::create_dir_all(&dir).unwrap();
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cells/2-consume-once.toml")).unwrap();
    std::fs::write(dir.join("2-consume-once.toml"), text.replace("legs = \"default\"", "legs = \"all\"")).unwrap();
    dir.to_string_lossy().into_owned()
}

/// Cell 2's sweep from recordings, on the reference store's `delete` leg:
/// it lands the points the re-executed sweep lands and passes; on
/// split-claim (a claim in two transactions) a state rebuilt from the
/// winning claim's recording fires, a real kill at that point fires too,
/// and that is what is reported. Under `--replay off` the race re-runs.
#[test]
fn a_recorded_race_sweep_passes_on_the_reference_and_fires_on_split_claim_confirmed_by_a_real_kill() {
    let dir = scratch();
    let catalog = race_on_every_leg(dir.path());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--catalog", &catalog, "--kill", "syscall", "--cell", "2", "--leg", "delete"];
        args.extend_from_slice(&["--seed", "36"]);
        args.extend_from_slice(extra);
        let (code, report) = run_json(&args, dir.path());
        (code, report["results"][0].clone())
    };
    let (code, r) = run(&[]);
    if r["verdict"] == "skip" {
        return crate::common::tracing_refused(&r["reason"]);
    }
    assert_eq!((code, &r["verdict"], &r["states"]), (0, &Value::from("pass"), &Value::from("recorded")), "{r:#}");
    let (_, plain) = run(&["--replay", "off"]);
    assert_eq!(plain["states"], "re-executed", "{plain:#}");
    assert_eq!(r["points_by_path"], plain["points_by_path"], "the same points, planned and landed: {r:#}");
    let (code, fire) = run(&["--mutant", "split-claim"]);
    assert_eq!((code, &fire["verdict"]), (1, &Value::from("fire")), "{fire:#}");
    let details = fire["details"].to_string();
    assert!(details.contains("r0 killed on its winning claim"), "{fire:#}");
    assert!(details.contains("confirmed by a real kill at point"), "{fire:#}");
}

/// Cell 2's sweep from recordings on WAL, point by point against real
/// kills, on the reference store and on split-claim: at every winning-claim
/// point where the others were connected when r0 died, the state rebuilt
/// with r0's `-shm` laid and held reaches the real kill's verdict. Without
/// the `-shm` (the others rebuild the index from the WAL and see a commit
/// r0 had not indexed), split-claim's first fire came a point early. Where
/// r0 died between writing a commit and indexing it (its WAL sync), the
/// real verdict is the others' timing; the rebuilt state drops that commit,
/// as their last close's checkpoint does: split-claim's claim record there
/// is lost, and the state fires every time (racing over the whole WAL, it
/// passed in 2 of 30 rebuilt races on a loaded machine, and CI went red).
#[test]
fn rebuilt_wal_race_states_reach_the_verdicts_of_real_kills_point_by_point() {
    use crashcells::pipeline::Context;
    use crashcells::pipeline::race::compare::side_by_side;
    use crashcells::pipeline::race::job::Race;
    use crashcells::pipeline::run::context::Scope;
    use crashcells::plan::{KillMode, Selection, plan};

    let dir = scratch();
    let work = dir.path().canonicalize().unwrap();
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    let matrix = crashcells::matrix::Matrix::load("default").unwrap();
    let selection = Selection { cells: vec!["2".into()], legs: vec!["default".into()], kills: vec![KillMode::Syscall] };
    let job = plan(&catalog, &matrix, &selection, 11).unwrap().remove(0);
    let child = crashcells::harness::Launcher::exec(reference());
    let ready = crashcells::probe::preflight(&child, &work, Duration::from_secs(30), &Interrupt::new()).unwrap();
    let (cell, leg) = (crashcells::cells::find(&job.cell.id).unwrap(), job.leg.as_ref().unwrap());
    let (mut fired, mut lost_claims) = (0, 0);
    for mutant in [None, Some("split-claim")] {
        let options = crashcells::options::RunOptions {
            matrix: "default".into(),
            mutant: mutant.map(str::to_string),
            ..Default::default()
        };
        let ctx =
            Context::new(options, 11, child.clone(), work.clone(), work.join("evidence"), Duration::from_secs(30), 2);
        let ctx = Context { child_ready: Some(ready.clone()), ..ctx };
        let race = Race::new(Scope { job: &job, leg, cell, ctx: &ctx }, job.cell.params.sweep_racers());
        let full = Race::new(Scope { job: &job, leg, cell, ctx: &ctx }, job.cell.params.sweep_racers());
        let sides = match side_by_side(&race, &full, (None, None)) {
            Err(why) if why.contains("unavailable") => return crate::common::tracing_refused(&why),
            Err(why) => panic!("{mutant:?}: the recordings did not stand: {why}"),
            Ok(sides) => sides,
        };
        assert!(sides.len() >= 8, "{mutant:?}: the claim's points after r0's ready record: {sides:#?}");
        for s in &sides {
            let lag = if s.unindexed { ", an unindexed commit dropped" } else { "" };
            eprintln!("{mutant:?} point {}: rebuilt {}, real {} (race {}{lag})", s.point, s.recorded, s.real, s.races);
        }
        let differ: Vec<_> = sides.iter().filter(|s| !s.agrees()).collect();
        assert!(differ.is_empty(), "{mutant:?}: rebuilt and real verdicts differ: {differ:#?}");
        let is_fire = |o: &crashcells::pipeline::Outcome| matches!(o, crashcells::pipeline::Outcome::Fire(_));
        fired += sides.iter().filter(|s| is_fire(&s.real)).count();
        lost_claims += sides.iter().filter(|s| s.unindexed && is_fire(&s.recorded)).count();
    }
    assert!(fired > 0, "split-claim fired at no point: the comparison compared nothing that fires");
    assert!(
        lost_claims > 0,
        "no rebuilt state dropped an unindexed claim record: the timing-bound point went unchecked"
    );
}

/// Cell 6's sweep from a recording, point by point against real kills, on
/// the reference store's DELETE and WAL legs: at every point of r0's
/// appends, the state rebuilt from r0's recording, with the other writer
/// appending on it (in WAL the `-shm` r0 left laid and held), reaches the
/// verdict of a real kill of r0 there with the other writer appending on
/// what it left, and recovers as many of each writer's appends as it acked.
#[test]
fn rebuilt_writer_states_reach_the_verdicts_of_real_kills_point_by_point() {
    writer_states_side_by_side(reference(), &["delete", "wal"], None);
}

/// The same for Hermes's `SessionDB`, whose open writes (it upserts its
/// session row): its other writer's open lands while r0 waits at its
/// barrier, and the recording holds it from r0's release on (issue 51,
/// item 4). Only WAL: Hermes refuses DELETE.
#[test]
fn rebuilt_hermes_writer_states_reach_the_verdicts_of_real_kills_point_by_point() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hermes-store/.wheel/site/.complete");
    if !site.is_file() {
        use crashcells::testskip::{Need, skip_or_fail};
        return skip_or_fail(Need::HermesWheel, format_args!("{} is missing", site.display()));
    }
    let adapter = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hermes-store/adapter.py");
    let hermes = ChildCommand { program: "python3".into(), prefix: vec![adapter.into()], cwd: None, env: Vec::new() };
    // Eight of its some thirty points, the first and last among them: each
    // real kill races two Hermes processes, and every point costs a second.
    writer_states_side_by_side(hermes, &["wal"], Some(8));
}

/// Cell 6's writers of `child` on each of `legs`: every point's rebuilt
/// state (or `most` of them, spread) against a real kill there, verdicts
/// and appends alike.
fn writer_states_side_by_side(child: ChildCommand, legs: &[&str], most: Option<usize>) {
    use crashcells::pipeline::Context;
    use crashcells::pipeline::race::compare::side_by_side;
    use crashcells::pipeline::race::job::Race;
    use crashcells::pipeline::run::context::Scope;
    use crashcells::plan::{KillMode, Selection, plan};

    let dir = scratch();
    let work = dir.path().canonicalize().unwrap();
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    let matrix = crashcells::matrix::Matrix::load("default").unwrap();
    let selection = Selection { cells: vec!["6".into()], legs: vec!["default".into()], kills: vec![KillMode::Syscall] };
    let job = plan(&catalog, &matrix, &selection, 11).unwrap().remove(0);
    let child = crashcells::harness::Launcher::exec(child);
    let ready = crashcells::probe::preflight(&child, &work, Duration::from_secs(30), &Interrupt::new()).unwrap();
    let cell = crashcells::cells::find(&job.cell.id).unwrap();
    // One append each: its every call and its ack, at half the cost of the sweep's two.
    let writers = job.cell.params.racers.unwrap();
    for &name in legs {
        // Cell 6 runs on the default leg only; its states are compared on both journals.
        let leg = matrix.legs.iter().find(|l| l.name == name).unwrap();
        let job = crashcells::plan::Job { leg: Some(leg.clone()), ..job.clone() };
        let options = crashcells::options::RunOptions { matrix: "default".into(), ..Default::default() };
        let root = work.join(name);
        std::fs::create_dir_all(&root).unwrap();
        let ctx = Context::new(options, 11, child.clone(), root, work.join("evidence"), Duration::from_secs(30), 2);
        let ctx = Context { child_ready: Some(ready.clone()), ..ctx };
        let race = Race::writers(Scope { job: &job, leg, cell, ctx: &ctx }, (writers, 1));
        let sides = match side_by_side(&race, &race, (None, most)) {
            Err(why) if why.contains("unavailable") => return crate::common::tracing_refused(&why),
            Err(why) => panic!("{name}: the recording did not stand: {why}"),
            Ok(sides) => sides,
        };
        assert!(sides.len() >= most.unwrap_or(6).min(6), "{name}: r0's points after its ready record: {sides:#?}");
        for s in &sides {
            eprintln!("{name} point {}: rebuilt {}, real {} (race {})", s.point, s.recorded, s.real, s.races);
        }
        let differ: Vec<_> = sides.iter().filter(|s| !s.agrees()).collect();
        assert!(differ.is_empty(), "{name}: rebuilt and real verdicts differ: {differ:#?}");
        // Beyond the verdict, the same appends acked and recovered, writer by writer.
        let found = |said: &[String]| said.iter().filter(|d| d.contains(": acked ")).cloned().collect::<Vec<_>>();
        for s in &sides {
            let (rebuilt, real) = (found(&s.details[0]), found(&s.details[1]));
            assert_eq!(rebuilt.len(), writers as usize, "{name} point {}: {s:#?}", s.point);
            assert_eq!(rebuilt, real, "{name} point {}: the writers' appends differ", s.point);
        }
    }
}
