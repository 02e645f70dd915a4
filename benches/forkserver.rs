//! Benchmark of the fork server: prints figures, asserts nothing.
//!
//! For the Python example store (and the Hermes adapter, when its wheel was
//! fetched), the wall time of `ROUNDS` operations `append --stop-after 1`,
//! each in a fresh trial folder and run to its end, started exec'd and
//! forked by the child's fork server, side by side in one run (the machine
//! may be shared: the ratio measured in one run is the figure to trust). The
//! server's start is timed apart, and the ratio given with and without it.
//!
//! Run with `cargo bench --bench forkserver` (`ROUNDS=N` to change 50).

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use crashcells::harness::{ChildCommand, Exit, Launch, Launcher};
use crashcells_protocol::{Op, OpArgs};

const DEADLINE: Duration = Duration::from_secs(60);

fn main() {
    let rounds = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(50);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Trials where a run makes them (tmpfs where there is one): a disk's fsyncs
    // would measure the disk, not the start of a process.
    let work = tempfile::tempdir_in(crashcells::run::default_workdir()).expect("a work folder");
    bench("python-store", root.join("examples/python-store/store.py"), work.path(), rounds);
    let hermes = root.join("examples/hermes-store");
    if hermes.join(".wheel/site/.complete").is_file() {
        bench("hermes-store", hermes.join("adapter.py"), work.path(), rounds);
    } else {
        println!("hermes-store: left out (run examples/hermes-store/fetch first)");
    }
}

fn bench(name: &str, script: std::path::PathBuf, work: &Path, rounds: u32) {
    let child = ChildCommand { program: "python3".into(), prefix: vec![script.into()] };
    let exec = time_ops(&Launcher::exec(child.clone()), &work.join(format!("{name}-exec")), rounds);
    let start = Instant::now();
    let server = Launcher::with_fork_server(child, &work.join(format!("{name}-server.stderr")), DEADLINE)
        .expect("the fork server starts");
    let started = start.elapsed();
    let forked = time_ops(&server, &work.join(format!("{name}-fork")), rounds);
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(rounds);
    println!(
        "{name}: {rounds} x `append --stop-after 1`: exec'd {:.2}s ({:.1} ms each), forked {:.2}s ({:.1} ms each) \
         after a server start of {:.2}s: {:.1}x faster ({:.1}x with the start)",
        exec.as_secs_f64(),
        per(exec),
        forked.as_secs_f64(),
        per(forked),
        started.as_secs_f64(),
        exec.as_secs_f64() / forked.as_secs_f64(),
        exec.as_secs_f64() / (forked + started).as_secs_f64(),
    );
}

/// The wall time of `rounds` operations started by `launcher`, one after
/// the other, each in a fresh folder of `dir`.
fn time_ops(launcher: &Launcher, dir: &Path, rounds: u32) -> Duration {
    let start = Instant::now();
    for i in 0..rounds {
        let trial = dir.join(format!("t{i}"));
        let home = trial.join("home");
        std::fs::create_dir_all(&home).expect("a trial folder");
        let args: Vec<OsString> = OpArgs::new(Op::Append)
            .db(&trial.join("store.db"))
            .acks(&trial.join("acks.ndjson"))
            .stop_after(1)
            .to_args();
        let stderr = trial.join("child.stderr");
        let launch = Launch { args: &args, home: &home, trial: &trial, stdout: None, stderr: Some(&stderr) };
        let (exit, tail) = launcher.run_to_end(&launch, DEADLINE).expect("the operation starts");
        assert_eq!(exit, Ok(Exit::Code(0)), "{tail}");
    }
    start.elapsed()
}
