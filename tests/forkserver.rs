//! The fork server (docs/PROTOCOL.md, "Fork server"), through the library's
//! launcher, with the Python example store's server: a forked operation
//! leaves what an exec'd one leaves, a forked process is killed and reaped
//! as an exec'd child is, a traced one meets the same kill points, a server
//! that dies gives errors rather than hangs, and a server that leaks a
//! descriptor into its forks is refused, by the launcher and by
//! `child-check`, with one line naming the descriptor; `child-check` also
//! refuses servers whose forks differ from exec'd runs, and one with a
//! second thread at ready.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crashcells::harness::{ChildCommand, Exit, Interrupt, Launch, Launcher, TraceError, group_alive};
use crashcells::kill::syscall::{Driven, Goal, Point, Targets, drive_observed, trap_set};
use crashcells_protocol::{Op, OpArgs};
use serde_json::Value;

use crate::common::scratch;

pub const DEADLINE: Duration = Duration::from_secs(30);

pub fn python(script: &str) -> ChildCommand {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    ChildCommand { program: "python3".into(), prefix: vec![path.into()], cwd: None, env: Vec::new() }
}

pub fn store() -> ChildCommand {
    python("examples/python-store/store.py")
}

fn served(child: ChildCommand, root: &Path) -> Launcher {
    Launcher::with_fork_server(child, &root.join("server.stderr"), DEADLINE, &Interrupt::new())
        .expect("the fork server starts")
}

/// A trial folder with a config home asking for `delete` (the same mode
/// on every SQLite, so that two runs write the same calls), and `append`'s
/// arguments in it.
pub struct Trial {
    pub dir: PathBuf,
    pub home: PathBuf,
    pub stderr: PathBuf,
    pub args: Vec<OsString>,
}

impl Trial {
    pub fn new(root: &Path, name: &str, stop_after: Option<u64>) -> Trial {
        let dir = root.join(name);
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), "[database]\njournal_mode = \"delete\"\n").unwrap();
        let mut args = OpArgs::new(Op::Append).db(&dir.join("store.db")).acks(&dir.join("acks.ndjson"));
        if let Some(n) = stop_after {
            args = args.stop_after(n);
        }
        Trial { stderr: dir.join("child.stderr"), dir, home, args: args.to_args() }
    }

    pub fn launch(&self) -> Launch<'_> {
        Launch { args: &self.args, home: &self.home, trial: &self.dir, stdout: None, stderr: Some(&self.stderr) }
    }

    /// The store as an exec'd `dump` prints it.
    pub fn dump(&self) -> String {
        let args = OpArgs::new(Op::Dump).db(&self.dir.join("store.db")).to_args();
        let out = self.dir.join("dump.stdout");
        let launch = Launch { args: &args, stdout: Some(&out), ..self.launch() };
        let (exit, tail) = Launcher::exec(store()).run_to_end(&launch, DEADLINE, &Interrupt::new()).unwrap();
        assert_eq!(exit, Ok(Exit::Code(0)), "{tail}");
        std::fs::read_to_string(out).unwrap()
    }

    /// The ack journal, the ready record's pid masked (it is the process's).
    pub fn acks(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("acks.ndjson")).unwrap();
        regex::Regex::new(r#""pid":\d+"#).unwrap().replace(&text, r#""pid":0"#).into_owned()
    }
}

#[test]
fn a_forked_operation_leaves_what_an_exec_one_leaves() {
    let root = scratch();
    let forks = served(store(), root.path());
    let (exec, forked) = (Trial::new(root.path(), "exec", Some(3)), Trial::new(root.path(), "forked", Some(3)));
    let (exit, tail) = Launcher::exec(store()).run_to_end(&exec.launch(), DEADLINE, &Interrupt::new()).unwrap();
    assert_eq!(exit, Ok(Exit::Code(0)), "{tail}");
    let mut running = forks.spawn(&forked.launch(), DEADLINE, &Interrupt::new()).unwrap();
    let pid = running.pid();
    assert_eq!(
        running.wait_until(Instant::now() + DEADLINE, &Interrupt::new()),
        Ok(Exit::Code(0)),
        "{}",
        running.stderr_tail()
    );
    assert_eq!(forked.dump(), exec.dump());
    assert_eq!(forked.acks(), exec.acks());
    // The operation ran in the forked process, not in the server.
    let ready = std::fs::read_to_string(forked.dir.join("acks.ndjson")).unwrap();
    assert!(ready.starts_with(&format!(r#"{{"kind":"ready","protocol":2,"pid":{pid},"#)), "{ready}");
    assert_ne!(Some(pid), forks.server_pid());
}

#[test]
fn a_killed_forked_process_is_reaped_as_sigkill_and_leaves_nothing() {
    let root = scratch();
    let forks = served(store(), root.path());
    let trial = Trial::new(root.path(), "killed", None);
    let mut running = forks.spawn(&trial.launch(), DEADLINE, &Interrupt::new()).unwrap();
    let acks = trial.dir.join("acks.ndjson");
    let until = Instant::now() + DEADLINE;
    while std::fs::read(&acks).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) < 3 {
        assert!(running.is_alive() && Instant::now() < until, "{}", running.stderr_tail());
        std::thread::sleep(Duration::from_millis(1));
    }
    let pgid = nix::unistd::Pid::from_raw(running.pid() as i32);
    let reaped = running.kill_and_reap();
    reaped.check().unwrap();
    assert!(!group_alive(pgid));
}

/// Every trapped call of a run to its end: its point, if it is one (with
/// the ready record's length masked: it holds the pid), and its name.
pub fn calls(launcher: &Launcher, trial: &Trial) -> Vec<(Option<Point>, i64)> {
    let traps = trap_set().unwrap();
    let mut child = match launcher.spawn_traced(&trial.launch(), traps, DEADLINE, &Interrupt::new()) {
        Err(TraceError::NotPermitted(why)) => panic!("ptrace refused: {why}"),
        other => other.unwrap(),
    };
    let targets = Targets::new(&trial.dir.join("store.db"), &trial.dir.join("acks.ndjson"));
    let mut seen = Vec::new();
    let mut observe = |_pid: u32, nr: i64, _args: [u64; 6], point: Option<&Point>| seen.push((point.cloned(), nr));
    match drive_observed(&mut child, &targets, Goal::ToEnd, &mut observe).unwrap() {
        Driven::Exited { exit, .. } => assert_eq!(exit, Exit::Code(0), "{}", child.stderr_tail()),
        Driven::At(p) => panic!("stopped at {p:?}"),
    }
    let first_ack =
        seen.iter().position(|(p, _)| p.as_ref().is_some_and(|p| p.file.is_some_and(|f| f.as_str() == "acks")));
    if let Some((Some(p), _)) = first_ack.map(|i| &mut seen[i]) {
        p.len = None;
    }
    seen
}

/// Whether a traced child can run here: the architecture has kill points
/// and ptrace with seccomp is permitted (a container's profile may refuse
/// it). Where not, says why through the one skip policy, which fails the
/// test in CI; the test then returns instead of failing on the refusal.
pub fn traced_allowed() -> bool {
    let refused = crashcells::kill::syscall::unsupported_arch().or_else(tracing_refused_here);
    if let Some(why) = &refused {
        crate::common::tracing_refused(why);
    }
    refused.is_none()
}

/// Why tracing a child is refused on this machine, if it is: a traced
/// `true` is started (and dropped: killed and reaped) to find out.
fn tracing_refused_here() -> Option<String> {
    let filter = crashcells::kill::syscall::filter().ok()?;
    match crashcells::harness::Traced::spawn(
        std::process::Command::new("true"),
        None,
        filter,
        DEADLINE,
        &Interrupt::new(),
    ) {
        Err(TraceError::NotPermitted(why)) => Some(why),
        _ => None,
    }
}

/// The same kill points, call for call (name, file, offset, length), and
/// the same trapped calls that are no kill point, for the Python store's
/// `append --stop-after 2` exec'd and forked.
#[test]
fn a_traced_forked_process_meets_the_kill_points_of_an_exec_one() {
    if !traced_allowed() {
        return;
    }
    let root = scratch();
    let forks = served(store(), root.path());
    let exec = calls(&Launcher::exec(store()), &Trial::new(root.path(), "exec", Some(2)));
    let forked = calls(&forks, &Trial::new(root.path(), "forked", Some(2)));
    let points = |c: &[(Option<Point>, i64)]| c.iter().filter_map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert!(points(&exec).len() > 10, "{exec:?}");
    assert_eq!(points(&forked), points(&exec));
    // The exec'd child's start (the interpreter's imports) traps calls the
    // forked process's does not: compare from the store's first point on.
    let from_first = |c: &[(Option<Point>, i64)]| {
        let first = c.iter().position(|(p, _)| p.is_some()).unwrap();
        c[first..].iter().map(|(_, nr)| *nr).collect::<Vec<_>>()
    };
    assert_eq!(from_first(&forked), from_first(&exec));
}

/// A recording of a forked run rebuilds the files on disk, as the recorded
/// sweep's self-check requires: the bytes of each write were read from the
/// process at its stop, the offsets from its descriptors.
#[test]
fn a_recorded_forked_run_rebuilds_its_files() {
    if !traced_allowed() {
        return;
    }
    let root = scratch();
    let forks = served(store(), root.path());
    let trial = Trial::new(root.path(), "recorded", Some(3));
    let mut child = forks.spawn_traced(&trial.launch(), trap_set().unwrap(), DEADLINE, &Interrupt::new()).unwrap();
    let (db, acks) = (trial.dir.join("store.db"), trial.dir.join("acks.ndjson"));
    let (driven, log) =
        crashcells::crashstate::record::record(&mut child, &Targets::new(&db, &acks), Goal::ToEnd).unwrap();
    assert!(matches!(driven, Driven::Exited { exit: Exit::Code(0), .. }), "{driven:?}");
    let files = crashcells::crashstate::Files::after(log.ran());
    use crashcells::kill::syscall::FileKind;
    assert_eq!(files.get(FileKind::Database), Some(std::fs::read(&db).unwrap()));
    assert_eq!(files.get(FileKind::Acks), Some(std::fs::read(&acks).unwrap()));
}

#[test]
fn a_traced_forked_process_killed_at_a_point_ends_by_sigkill_and_leaves_nothing() {
    if !traced_allowed() {
        return;
    }
    let root = scratch();
    let forks = served(store(), root.path());
    let trial = Trial::new(root.path(), "killed", Some(2));
    let mut child = forks.spawn_traced(&trial.launch(), trap_set().unwrap(), DEADLINE, &Interrupt::new()).unwrap();
    let targets = Targets::new(&trial.dir.join("store.db"), &trial.dir.join("acks.ndjson"));
    let at = match crashcells::kill::syscall::drive(&mut child, &targets, Goal::KillAt(5)).unwrap() {
        Driven::At(p) => p,
        other => panic!("{other:?}"),
    };
    assert_eq!(at.ordinal.0, 5);
    let pgid = nix::unistd::Pid::from_raw(child.pid() as i32);
    child.kill_and_reap().check().unwrap();
    assert!(!group_alive(pgid));
    // The server, which reaped it after the tracer, forks the next one.
    let mut next =
        forks.spawn(&Trial::new(root.path(), "next", Some(1)).launch(), DEADLINE, &Interrupt::new()).unwrap();
    assert_eq!(next.wait_until(Instant::now() + DEADLINE, &Interrupt::new()), Ok(Exit::Code(0)));
}

/// A store behind a launcher script forks and execs: every process the
/// forked process starts is traced too, and its trapped calls are seen.
#[test]
fn the_processes_a_traced_forked_process_starts_are_traced_too() {
    if !traced_allowed() {
        return;
    }
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/forkserver");
    let script = format!(
        "import subprocess, sys\nsys.path.insert(0, {helper:?})\nimport crashcells_forkserver\n\
         def main():\n    return subprocess.run(['sh', '-c', 'echo child > ' + sys.argv[2]]).returncode\n\
         if sys.argv[-1:] == ['fork-server']:\n    crashcells_forkserver.serve(main)\nsys.exit(main())\n"
    );
    let child = ChildCommand {
        program: "python3".into(),
        prefix: vec!["-c".into(), script.into()],
        cwd: None,
        env: Vec::new(),
    };
    let root = scratch();
    let forks = served(child, root.path());
    let trial = Trial::new(root.path(), "launcher", None);
    let out = trial.dir.join("out.db");
    let args: Vec<OsString> = vec!["write".into(), out.clone().into()];
    let launch = Launch { args: &args, ..trial.launch() };
    let mut child = forks.spawn_traced(&launch, trap_set().unwrap(), DEADLINE, &Interrupt::new()).unwrap();
    let targets = Targets::new(&out, &trial.dir.join("acks.ndjson"));
    let mut writers = Vec::new();
    let mut observe = |pid: u32, _nr: i64, _args: [u64; 6], point: Option<&Point>| {
        if point.is_some() {
            writers.push(pid);
        }
    };
    let driven = drive_observed(&mut child, &targets, Goal::ToEnd, &mut observe).unwrap();
    assert!(matches!(driven, Driven::Exited { exit: Exit::Code(0), counted: 1 }), "{driven:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "child\n");
    assert_ne!(writers, [child.pid()], "the shell's write is its own process's");
}

/// A process in flight when its server dies ends in an error naming the
/// loss, not a hang; the next operation is forked by a server started
/// again, and once that one dies too, operations are exec'd.
#[test]
fn a_server_that_dies_gives_errors_not_hangs_and_is_restarted_once() {
    let root = scratch();
    let forks = served(store(), root.path());
    let first = forks.server_pid().unwrap();
    let trial = Trial::new(root.path(), "orphaned", None);
    let mut running = forks.spawn(&trial.launch(), DEADLINE, &Interrupt::new()).unwrap();
    let kill =
        |pid: u32| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
    kill(first).unwrap();
    let start = Instant::now();
    assert_eq!(running.wait_until(start + DEADLINE, &Interrupt::new()), Ok(Exit::ServerLost));
    let reaped = running.kill_and_reap();
    let why = reaped.check().unwrap_err().to_string();
    assert!(why.contains("the loss of its fork server"), "{why}");
    assert!(start.elapsed() < DEADLINE / 2, "{:?}", start.elapsed());
    let run = |name: &str| {
        let mut next =
            forks.spawn(&Trial::new(root.path(), name, Some(1)).launch(), DEADLINE, &Interrupt::new()).unwrap();
        assert_eq!(
            next.wait_until(Instant::now() + DEADLINE, &Interrupt::new()),
            Ok(Exit::Code(0)),
            "{}",
            next.stderr_tail()
        );
        next.pid()
    };
    run("restarted");
    let second = forks.server_pid().expect("a second server");
    assert_ne!(second, first);
    kill(second).unwrap();
    // The second server's end is seen at the next request: that one is exec'd.
    let execd = run("execd");
    assert_eq!(forks.server_pid(), None);
    let ready = std::fs::read_to_string(root.path().join("execd/acks.ndjson")).unwrap();
    assert!(ready.contains(&format!(r#""pid":{execd}"#)), "{ready}");
    let notes = forks.notes();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains(&format!("process {first} ended")) && notes[0].contains("restarted as process"),
        "{notes:?}"
    );
    assert!(notes[1].ends_with("every later operation was exec'd"), "{notes:?}");
}

pub fn leaky() -> ChildCommand {
    python("tests/adapters/leaky_forkserver.py")
}

#[test]
fn a_server_that_leaks_a_descriptor_is_refused_naming_it() {
    let root = scratch();
    let forks = served(leaky(), root.path());
    let trial = Trial::new(root.path(), "leaked", Some(1));
    let e = forks.spawn(&trial.launch(), DEADLINE, &Interrupt::new()).unwrap_err().to_string();
    assert!(!e.contains('\n'), "{e}");
    let pattern = r"^fork server: process \d+ holds descriptor \d+ \(.*/cache\.db \(deleted\)\) when it starts its operation; a forked process must start as fresh as an exec'd one$";
    assert!(regex::Regex::new(pattern).unwrap().is_match(&e), "{e}");
    // Nothing ran: the process was killed at its stop.
    assert!(!trial.dir.join("acks.ndjson").exists());
}

/// `child-check` runs every operation the child lists exec'd and forked,
/// twice through one server, and names what differs: a leaked descriptor, a
/// cache the warm-up filled (the forked `append` fails), a shared
/// `random.Random()` (the second claimant wins too), a second thread at
/// ready. The example's own server passes.
#[test]
fn child_check_checks_the_server_and_refuses_broken_ones() {
    let cases = [
        (store(), None),
        (leaky(), Some("holds descriptor")),
        (
            python("tests/adapters/cached_forkserver.py"),
            Some(
                "the forked `append` (round 1 of 2, request 1 of the server): `append` ended with exit code 3 forked, exit code 0 exec'd; look for state the server made before the fork",
            ),
        ),
        (
            python("tests/adapters/shared_rng_forkserver.py"),
            Some(
                "two claims` (round 1 of 2, request 9 of the server): `r1` ended with exit code 0 forked, exit code 10 exec'd",
            ),
        ),
        (python("tests/adapters/threaded_forkserver.py"), Some("runs 2 threads when it says it is ready")),
    ];
    let checks: Vec<_> = std::thread::scope(|scope| {
        let runs: Vec<_> = cases
            .iter()
            .map(|(child, _)| scope.spawn(|| crate::common::child_check_entry(child, "fork-server")))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for ((child, refused), check) in cases.iter().zip(checks) {
        let detail = check["detail"].as_str().unwrap();
        match refused {
            None => assert_eq!(check["ok"], true, "{}: {check}", child.display()),
            Some(why) => {
                assert_eq!(check["ok"], false, "{}: {check}", child.display());
                assert!(detail.contains(why), "{}: {detail}", child.display());
            }
        }
    }
}

/// `run` starts the child's fork server after its preflight and forks the
/// preflight's operation again through it: a server whose processes hold a
/// descriptor of the trial's folder (or a database) stops the run there,
/// with one line naming the descriptor and exit 2, before any cell.
#[test]
fn run_refuses_a_leaky_fork_server_before_any_cell() {
    let dir = scratch();
    let out = crate::common::run(&["run", "--child", &leaky().display(), "--cell", "1", "--seed", "3"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("fork server")).unwrap_or_default();
    assert!(line.contains("holds descriptor") && line.contains("cache.db"), "{stderr}");
    assert!(out.stdout.is_empty(), "no report: no cell ran");
    // With the server (and the pool) off, the same child's operations are exec'd and fine.
    let off = ["run", "--child", &leaky().display(), "--cell", "1", "--leg", "delete", "--seed", "3"];
    let rest = ["--kill", "timed", "--trials", "1", "--fork-server", "off", "--warm-pool", "off"];
    let out = crate::common::run(&[&off[..], &rest[..]].concat(), dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A run of `adapter` on cell 1's `delete` leg, timed, `trials` trials: the
/// report and how long it took.
fn timed_run(adapter: &str, trials: &str) -> (Value, Duration) {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let child = python(adapter).display();
    let args = ["run", "--child", &child, "--cell", "1", "--leg", "delete", "--kill", "timed", "--trials", trials];
    let rest = ["--seed", "3", "--catalog", catalog.to_str().unwrap()];
    let began = Instant::now();
    let (_, report) = crate::common::run_json(&[&args[..], &rest[..]].concat(), dir.path());
    (report, began.elapsed())
}

/// A server that dies a moment after its fifth fork, with that process in
/// its operation, is started again once, and when that one dies too, the
/// run execs; the work its deaths cut short is retried exec'd, once: the
/// result is a verdict, not an error, it says it was retried, and the
/// report says what befell the server and when.
#[test]
fn a_server_that_dies_after_a_few_requests_is_restarted_once_then_the_run_execs() {
    let (report, _) = timed_run("tests/adapters/dying_forkserver.py", "20");
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "pass", "{r:#}");
    let details: Vec<&str> = r["details"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let retried = details.iter().find(|d| d.starts_with("retried exec'd")).expect("the retry said");
    // What the first try found is the scheduler's: a child that ended early,
    // or one that ended with its server before its kill; both name the loss.
    let found = ["child ended early", "the loss of its fork server"];
    assert!(retried.contains("served 5 requests, dying") && found.iter().any(|f| retried.contains(f)), "{retried}");
    assert_eq!(r["children"], "exec", "the verdict is the exec'd retry's: {r:#}");
    let launcher = report["launcher"].as_str().unwrap_or_default();
    assert!(launcher.contains("served 5 requests, dying; restarted as process"), "{launcher}");
    assert!(launcher.contains("s after the first server started)"), "when it died: {launcher}");
}

/// A server that reaps its processes without writing their `exit` lines is
/// named within seconds, not after the deadline of every wait; the work it
/// cut short is retried exec'd, so the result is a verdict that names it.
#[test]
fn a_server_that_never_reports_exits_is_named_within_the_deadline() {
    let (report, _) = timed_run("tests/adapters/silent_forkserver.py", "3");
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "pass", "{r:#}");
    let details: Vec<&str> = r["details"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let retried = details.iter().find(|d| d.starts_with("retried exec'd")).expect("the retry said");
    assert!(retried.contains("wrote no `exit` line for process"), "{retried}");
    // The whole result, its exec'd retry included, within one of its waits'
    // deadline: none ran out. The deadline the run scaled (on a loaded
    // machine, more than `--deadline`), not a fixed 30 s load can blow.
    let (took, deadline) = (r["duration_ms"].as_u64().unwrap(), r["deadline_ms"].as_u64().unwrap());
    assert!(took < deadline, "{took} ms at a deadline of {deadline} ms");
    assert!(report["launcher"].as_str().unwrap_or_default().contains("restarted as process"), "{report:#}");
}

/// A fork server that is not ready within its wait (scaled from the
/// exec'd start, at least `--deadline`) costs the run its speed, not a
/// verdict: every operation is exec'd, the result is the verdict the
/// exec'd store earns (a pass), never an error, and the report's
/// `launcher` says why, naming the measured start and `--deadline`. The
/// server, asleep, is killed, not waited for.
#[test]
fn a_fork_server_not_ready_in_time_leaves_the_run_execd_with_a_verdict() {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let child = python("tests/adapters/late_forkserver.py").display();
    let args = ["run", "--child", &child, "--cell", "1", "--leg", "delete", "--kill", "timed", "--trials", "2"];
    let rest = ["--seed", "3", "--deadline", "1", "--catalog", catalog.to_str().unwrap()];
    let (code, report) = crate::common::run_json(&[&args[..], &rest[..]].concat(), dir.path());
    let r = &report["results"][0];
    assert_eq!((code, r["verdict"].as_str(), r["children"].as_str()), (0, Some("pass"), Some("exec")), "{r:#}");
    let launcher = report["launcher"].as_str().unwrap_or_default();
    assert!(launcher.starts_with("fork server, not ready in time: every operation was exec'd"), "{launcher}");
    assert!(launcher.contains("exec'd start took") && launcher.contains("raise --deadline"), "{launcher}");
}

/// A server that stops answering mid-run (it ignores every request after
/// its fifth) costs the run its speed, not a result: the request that got
/// no reply within its deadline is exec'd, and so is every later one; the
/// result is the verdict the exec'd store earns (a pass, not an error), and
/// the report's `launcher` says what happened.
#[test]
fn a_server_that_stops_answering_mid_run_leaves_the_run_execd_with_a_verdict() {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let child = python("tests/adapters/stalling_forkserver.py").display();
    let args = ["run", "--child", &child, "--cell", "1", "--leg", "delete", "--kill", "timed", "--trials", "8"];
    let rest = ["--seed", "3", "--deadline", "2", "--catalog", catalog.to_str().unwrap()];
    let (code, report) = crate::common::run_json(&[&args[..], &rest[..]].concat(), dir.path());
    let r = &report["results"][0];
    assert_eq!((code, r["verdict"].as_str()), (0, Some("pass")), "{r:#}");
    let launcher = report["launcher"].as_str().unwrap_or_default();
    assert!(launcher.contains("did not answer in time"), "{launcher}");
    assert!(launcher.contains("that operation and every later one were exec'd"), "{launcher}");
}

/// `child-check` does not take a server that stops answering for one that
/// forks like exec: the rounds its operations ran exec'd prove nothing of
/// it, so its `fork-server` check fails, naming what befell the server.
#[test]
fn child_check_refuses_a_server_that_stops_answering() {
    let dir = scratch();
    let child = python("tests/adapters/stalling_forkserver.py").display();
    let out = crate::common::bin()
        .args(["child-check", "--format", "json", "--only", "fork-server", "--deadline", "2", "--child", &child])
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["check"] == "fork-server").cloned().unwrap();
    assert_eq!(check["ok"], false, "{check}");
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("fell over during the check") && detail.contains("did not answer in time"), "{check}");
}
