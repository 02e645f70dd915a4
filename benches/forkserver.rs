//! Benchmark of the fork server: prints figures, asserts nothing.
//!
//! For the Python example store (and the Hermes adapter, when its wheel was
//! fetched), the wall time of `ROUNDS` operations `append --stop-after 1`,
//! each in a fresh trial folder and run to its end, started exec'd and
//! forked by the child's fork server, side by side in one run (the machine
//! may be shared: the ratio measured in one run is the figure to trust). The
//! server's start is timed apart, and the ratio given with and without it.
//! Then the same for traced runs (`append --stop-after 4` driven to its end,
//! as a sweep's recording runs it): an exec'd child stops only at the calls
//! its seccomp filter traps, a forked one at every system call
//! (`PTRACE_SYSCALL`), so what the fork saves there is less.
//!
//! Run with `cargo bench --bench forkserver` (`ROUNDS=N` to change 50).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crashcells::harness::{ChildCommand, Exit, Interrupt, Launch, Launcher};
use crashcells::kill::syscall::{Driven, Goal, Targets, drive, trap_set};
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

fn bench(name: &str, script: PathBuf, work: &Path, rounds: u32) {
    let child = ChildCommand { program: "python3".into(), prefix: vec![script.into()], cwd: None, env: Vec::new() };
    let exec = time_ops(&Launcher::exec(child.clone()), &work.join(format!("{name}-exec")), rounds);
    let start = Instant::now();
    let server =
        Launcher::with_fork_server(child, &work.join(format!("{name}-server.stderr")), DEADLINE, &Interrupt::new())
            .expect("the fork server starts");
    let started = start.elapsed();
    let forked = time_ops(&server, &work.join(format!("{name}-fork")), rounds);
    report(name, "`append --stop-after 1`", rounds, exec, forked, started);
    let traced = rounds.div_ceil(5);
    let exec =
        time_traced(&Launcher::exec(ChildCommand::clone(&server)), &work.join(format!("{name}-exec-traced")), traced);
    let forked = time_traced(&server, &work.join(format!("{name}-fork-traced")), traced);
    report(name, "traced `append --stop-after 4`", traced, exec, forked, started);
}

fn report(name: &str, what: &str, rounds: u32, exec: Duration, forked: Duration, started: Duration) {
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(rounds);
    println!(
        "{name}: {rounds} x {what}: exec'd {:.2}s ({:.1} ms each), forked {:.2}s ({:.1} ms each) \
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
        let t = Trial::new(dir, i, 1);
        let (exit, tail) = launcher.run_to_end(&t.launch(), DEADLINE, &Interrupt::new()).expect("the operation starts");
        assert_eq!(exit, Ok(Exit::Code(0)), "{tail}");
    }
    start.elapsed()
}

/// The wall time of `rounds` traced runs to their end, as a recording
/// drives them.
fn time_traced(launcher: &Launcher, dir: &Path, rounds: u32) -> Duration {
    let traps = trap_set().expect("the seccomp filter");
    let start = Instant::now();
    for i in 0..rounds {
        let t = Trial::new(dir, i, 4);
        let mut child = launcher.spawn_traced(&t.launch(), traps, DEADLINE, &Interrupt::new()).expect("a traced start");
        let targets = Targets::new(&t.dir.join("store.db"), &t.dir.join("acks.ndjson"));
        match drive(&mut child, &targets, Goal::ToEnd).expect("a traced run") {
            Driven::Exited { exit: Exit::Code(0), .. } => {}
            other => panic!("{other:?}: {}", child.stderr_tail()),
        }
    }
    start.elapsed()
}

/// A fresh trial folder and `append --stop-after N`'s arguments in it.
struct Trial {
    dir: PathBuf,
    home: PathBuf,
    stderr: PathBuf,
    args: Vec<OsString>,
}

impl Trial {
    fn new(dir: &Path, i: u32, stop_after: u64) -> Trial {
        let dir = dir.join(format!("t{i}"));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("a trial folder");
        let args =
            OpArgs::new(Op::Append).db(&dir.join("store.db")).acks(&dir.join("acks.ndjson")).stop_after(stop_after);
        Trial { stderr: dir.join("child.stderr"), args: args.to_args(), dir, home }
    }

    fn launch(&self) -> Launch<'_> {
        Launch { args: &self.args, home: &self.home, trial: &self.dir, stdout: None, stderr: Some(&self.stderr) }
    }
}
