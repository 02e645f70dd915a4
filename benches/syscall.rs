//! Benchmark of syscall kill points: prints figures, asserts nothing.
//!
//! - crash states checked per second by the `delete` rotation sweep (cell
//!   3), recorded (the default) and re-executed (`--replay off`) side by
//!   side, on `--jobs` = the number of cores, trials in the default work
//!   folder;
//! - the cost of a traced child run against an untraced run of the same child
//!   to the same point (the census's last ack), as a ratio;
//! - the wall time of the default gate (`crashcells run`, timed and syscall),
//!   and of the Python example store's, each beside the same gate of another
//!   build when `CRASHCELLS_BASELINE=/path/to/crashcells` names one (the
//!   machine may be shared: ratios measured in one run are the figures to
//!   trust). `CRASHCELLS_BENCH_PYTHON=0` leaves the Python gate out;
//! - with a baseline named, the recorded rotation sweep (cell 3, `delete`
//!   and `wal`) of both builds through their CLI, rounds interleaved: each
//!   build's median crash states per second and their ratio. The CLI, since
//!   a baseline is only a binary: both sides pay the same start.
//!
//! Run with `cargo bench --bench syscall`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crashcells::harness::{ChildCommand, Exit, Traced, run_to_end};
use crashcells::kill::syscall::{Driven, Goal, Targets, drive, filter};
use crashcells::options::{Replay, RunOptions};
use crashcells::pipeline::Context;
use crashcells::plan::KillMode;
use crashcells::plan::{Selection, plan};

const BIN: &str = env!("CARGO_BIN_EXE_crashcells");
const ROUNDS: u32 = 20;
/// Rounds of each build's sweep side by side: an odd count, for a median.
const SIDE_ROUNDS: usize = 7;

fn child() -> ChildCommand {
    ChildCommand { program: BIN.into(), prefix: vec!["child".into()], cwd: None, env: Vec::new() }
}

fn context(work: &Path, jobs: usize, replay: Replay) -> Context {
    Context {
        options: RunOptions { matrix: "default".into(), seed: Some(1), replay: Some(replay), ..RunOptions::default() },
        seed: 1,
        child: crashcells::harness::Launcher::exec(child()),
        work_root: work.to_path_buf(),
        evidence_root: work.join("evidence"),
        deadline: Duration::from_secs(30),
        interrupt: Default::default(),
        jobs,
        child_ready: None,
        events: Default::default(),
        pool: crashcells::pipeline::run::pool::Pool::new(jobs),
        start: Duration::ZERO,
        execd_start: Duration::ZERO,
        crowd: 1,
        shared: Default::default(),
        // A rate of sweeps: no fire's repro is rerun in it.
        refires: 0,
        known: std::sync::Arc::from([]),
        recoveries: Default::default(),
        plain_fires: Default::default(),
        applied: Default::default(),
        libraries: Default::default(),
    }
}

/// The delete rotation sweep with `replay`: crash states checked per second.
fn sweep_rate(work: &Path, jobs: usize, replay: Replay) -> f64 {
    let catalog = crashcells::catalog::Catalog::embedded().expect("catalog");
    let matrix = crashcells::matrix::Matrix::load("default").expect("matrix");
    let sel = Selection { cells: vec!["3".into()], legs: vec!["delete".into()], kills: vec![KillMode::Syscall] };
    let job = &plan(&catalog, &matrix, &sel, 1).expect("plan")[0];
    let mut ctx = context(work, jobs, replay);
    ctx.child_ready = crashcells::probe::preflight(&ctx.child, work, ctx.deadline, &ctx.interrupt).ok();
    let start = Instant::now();
    let result = crashcells::pipeline::run_job(job, &ctx);
    let secs = start.elapsed().as_secs_f64();
    let states = result.kill_points.len();
    let rate = states as f64 / secs;
    let how = if replay == Replay::On { "recorded" } else { "re-executed (--replay off)" };
    println!(
        "delete rotation sweep, {how}: {states} crash states in {secs:.2}s on {jobs} jobs = {rate:.0} states/s ({})",
        result.verdict.as_str()
    );
    rate
}

/// A fresh folder with a `delete` config home.
fn folder(work: &Path, name: &str) -> std::path::PathBuf {
    let dir = work.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).expect("folder");
    std::fs::write(dir.join("home/config.toml"), "[database]\njournal_mode = \"delete\"\n").expect("config");
    dir
}

fn rotate_args(dir: &Path, stop_after: Option<u64>) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["rotate".into(), "--db".into(), dir.join("s.db").into()];
    a.extend(["--acks".into(), dir.join("a.ndjson").into()]);
    if let Some(n) = stop_after {
        a.extend(["--stop-after".into(), n.to_string().into()]);
    }
    a
}

/// Untraced: the child runs `acks` rotations and exits.
fn untraced(work: &Path, acks: u64) -> Duration {
    let dir = folder(work, "untraced");
    let cmd = child().command(&rotate_args(&dir, Some(acks)), &dir.join("home"));
    let start = Instant::now();
    let (exit, tail) =
        run_to_end(cmd, &dir.join("out"), &dir.join("err"), Duration::from_secs(30), &Default::default())
            .expect("spawn");
    assert_eq!(exit, Ok(Exit::Code(0)), "{tail}");
    start.elapsed()
}

/// Traced: the same child stopped at every trapped call until `acks` acks,
/// then killed at the next point.
fn traced(work: &Path, acks: u64) -> Duration {
    let dir = folder(work, "traced");
    let cmd = child().command(&rotate_args(&dir, None), &dir.join("home"));
    let start = Instant::now();
    let mut c = Traced::spawn(cmd, None, filter().expect("filter"), Duration::from_secs(30), &Default::default())
        .expect("traced spawn");
    let targets = Targets::new(&dir.join("s.db"), &dir.join("a.ndjson"));
    let driven = drive(&mut c, &targets, Goal::Census { acks }).expect("drive");
    assert!(matches!(driven, Driven::At(_)));
    assert!(c.kill_and_reap().exit.is_sigkill());
    start.elapsed()
}

fn ratio(work: &Path) {
    let acks = 2;
    let (mut u, mut t) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        u += untraced(work, acks);
        t += traced(work, acks);
    }
    let (u, t) = (u / ROUNDS, t / ROUNDS);
    println!(
        "traced vs untraced child to the {acks}th rotation ack (delete): {:.2} ms vs {:.2} ms = ratio {:.2}",
        t.as_secs_f64() * 1e3,
        u.as_secs_f64() * 1e3,
        t.as_secs_f64() / u.as_secs_f64()
    );
}

/// One gate run of `bin` (with `extra` arguments): its wall time.
fn gate_of(bin: &str, work: &Path, extra: &[&str], what: &str) -> f64 {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(["run", "--seed", "1", "--format", "json", "--workdir"])
        .arg(work)
        .arg("--evidence")
        .arg(work.join("evidence"))
        .args(extra)
        .output()
        .expect("the gate runs");
    let secs = start.elapsed().as_secs_f64();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    println!("{what}: {secs:.2}s, exit {:?}, summary {}", out.status.code(), report["summary"]);
    secs
}

/// The gate of this build, and of the baseline build if one is named, side by side.
fn gate(work: &Path, extra: &[&str], what: &str) {
    let now = gate_of(BIN, work, extra, &format!("{what}, this build"));
    if let Ok(base) = std::env::var("CRASHCELLS_BASELINE") {
        let then = gate_of(&base, work, extra, &format!("{what}, baseline {base}"));
        println!("{what}: this build takes {:.2} of the baseline's time ({:.1}x faster)", now / then, then / now);
    }
}

/// One recorded rotation sweep of `leg` by `bin`'s CLI: its crash states per
/// second (points landed over the result's time) and its verdict.
fn cli_sweep(bin: &str, work: &Path, leg: &str) -> (f64, String) {
    let out = Command::new(bin)
        .args(["run", "--seed", "1", "--cell", "3", "--leg", leg, "--kill", "syscall", "--format", "json"])
        .arg("--workdir")
        .arg(work)
        .arg("--evidence")
        .arg(work.join("evidence"))
        .output()
        .expect("the sweep runs");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let result = &report["results"][0];
    // A report that did not parse prints NaN: a bench asserts nothing.
    let points = result["points_landed"].as_f64().unwrap_or(f64::NAN);
    let secs = result["duration_ms"].as_f64().unwrap_or(f64::NAN) / 1e3;
    (points / secs, result["verdict"].as_str().unwrap_or("no report").to_string())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The machine's load average: a shared machine's figures need it beside them.
fn load() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Each leg's rotation sweep by this build and by `base`, rounds interleaved
/// (this, baseline, this, ...) so that a change of load hits both alike.
fn sweeps_side_by_side(work: &Path, base: &str) {
    for leg in ["delete", "wal"] {
        let before = load();
        let (mut now, mut then, mut verdicts) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..SIDE_ROUNDS {
            let (rate, verdict) = cli_sweep(BIN, work, leg);
            now.push(rate);
            verdicts.push(verdict);
            let (rate, verdict) = cli_sweep(base, work, leg);
            then.push(rate);
            verdicts.push(verdict);
        }
        let (n, t) = (median(now), median(then));
        verdicts.dedup();
        println!(
            "{leg} rotation sweep, recorded, by the CLI, {SIDE_ROUNDS} rounds each interleaved: this build {n:.0} states/s, baseline {t:.0} states/s (medians) = ratio {:.2}; verdicts {}; load {before} before, {} after",
            n / t,
            verdicts.join(", "),
            load()
        );
    }
}

fn main() {
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let root = crashcells::run::default_workdir();
    let work = tempfile::Builder::new().prefix("crashcells-bench-").tempdir_in(&root).expect("work folder");
    println!("trials in {}", root.display());
    ratio(work.path());
    let recorded = sweep_rate(work.path(), jobs, Replay::On);
    let executed = sweep_rate(work.path(), jobs, Replay::Off);
    println!("recorded against re-executed states/s, side by side: {:.1}x", recorded / executed);
    if let Ok(base) = std::env::var("CRASHCELLS_BASELINE") {
        sweeps_side_by_side(work.path(), &base);
    }
    gate(work.path(), &[], "default gate (all cells, all legs, timed and syscall)");
    if std::env::var("CRASHCELLS_BENCH_PYTHON").as_deref() != Ok("0") {
        let store = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/python-store/store.py");
        let child = format!("python3 {store}");
        gate(work.path(), &["--child", &child], "Python example store's default gate");
    }
}
