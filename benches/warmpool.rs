//! Benchmark of the warm pool: prints figures, asserts nothing.
//!
//! For each child (the tiny Node.js adapter of the tests, the Python
//! example store, and any `--child` line given in `WARM_CHILDREN`, one per
//! line), `ROUNDS` operations `append --stop-after 1`, each in a fresh
//! trial folder, started exec'd and from a warm pool of one, rounds
//! interleaved (exec, warm, exec, ...) so that a change of the machine's
//! load hits both alike. Per operation it times the **start**: from the
//! launcher's call to the ready record in the ack journal (the interpreter
//! and the imports for an exec'd one; taking a waiting process, the request,
//! the freshness check and the `SIGCONT` for a warm one); before each warm
//! operation it waits until the pool holds a warm process, as a run's pool
//! does while its earlier operations run. Prints the medians, the ratio
//! and the load average before and after.
//!
//! Run with `cargo bench --bench warmpool` (`ROUNDS=N` to change 20).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crashcells::harness::{ChildCommand, Exit, Interrupt, Launch, Launcher};
use crashcells_protocol::{Op, OpArgs};

const DEADLINE: Duration = Duration::from_secs(60);

fn main() {
    let rounds = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir_in(crashcells::run::default_workdir()).expect("a work folder");
    let mut children = vec![
        ("tiny.mjs".to_string(), format!("node {}", root.join("tests/adapters/tiny.mjs").display())),
        ("python-store".to_string(), format!("python3 {}", root.join("examples/python-store/store.py").display())),
    ];
    for line in std::env::var("WARM_CHILDREN").unwrap_or_default().lines().filter(|l| !l.trim().is_empty()) {
        children.push((line.to_string(), line.to_string()));
    }
    println!("load average before: {}", load());
    for (name, line) in children {
        let child = ChildCommand::parse(&line).expect("a child command");
        bench(&name, child, &work.path().join(name.replace(['/', ' '], "_")), rounds);
    }
    println!("load average after: {}", load());
}

fn bench(name: &str, child: ChildCommand, dir: &Path, rounds: u32) {
    let exec = Launcher::exec(child.clone());
    let began = Instant::now();
    let warm = match Launcher::with_warm_pool(child, &dir.with_extension("stderr"), 1, DEADLINE, &Interrupt::new()) {
        Ok(w) => w,
        Err(e) => return println!("{name}: left out: {e}"),
    };
    let first_warm = began.elapsed();
    let (mut execd, mut warmed) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        execd.push(start(&exec, &Trial::new(&dir.join("exec"), i)));
        // A run's pool refills while its operations run: here, before each.
        std::thread::sleep(Duration::from_millis(300));
        warmed.push(start(&warm, &Trial::new(&dir.join("warm"), i)));
    }
    let (e, w) = (median(&mut execd), median(&mut warmed));
    println!(
        "{name}: {rounds} x `append --stop-after 1`, start to ready record: exec'd median {:.1} ms \
         (min {:.1}, max {:.1}), warm median {:.1} ms (min {:.1}, max {:.1}): {:.1}x faster; \
         the pool's first process was warm after {:.0} ms",
        ms(e),
        ms(execd[0]),
        ms(*execd.last().unwrap()),
        ms(w),
        ms(warmed[0]),
        ms(*warmed.last().unwrap()),
        e.as_secs_f64() / w.as_secs_f64(),
        ms(first_warm),
    );
}

/// Starts the operation and times it to its ready record; then runs it to
/// its end (it must succeed).
fn start(launcher: &Launcher, t: &Trial) -> Duration {
    let began = Instant::now();
    let mut running = launcher.spawn(&t.launch(), DEADLINE, &Interrupt::new()).expect("the operation starts");
    let acks = t.dir.join("acks.ndjson");
    while !std::fs::read(&acks).is_ok_and(|b| b.contains(&b'\n')) {
        assert!(running.is_alive() && began.elapsed() < DEADLINE, "{}", running.stderr_tail());
        std::thread::sleep(Duration::from_micros(200));
    }
    let took = began.elapsed();
    let exit = running.wait_until(Instant::now() + DEADLINE, &Interrupt::new());
    assert_eq!(exit, Ok(Exit::Code(0)), "{}", running.stderr_tail());
    took
}

fn median(d: &mut [Duration]) -> Duration {
    d.sort();
    d[d.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A fresh trial folder and `append --stop-after 1`'s arguments in it.
struct Trial {
    dir: PathBuf,
    home: PathBuf,
    stderr: PathBuf,
    args: Vec<OsString>,
}

impl Trial {
    fn new(dir: &Path, i: u32) -> Trial {
        let dir = dir.join(format!("t{i}"));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("a trial folder");
        let args = OpArgs::new(Op::Append).db(&dir.join("store.db")).acks(&dir.join("acks.ndjson")).stop_after(1);
        Trial { stderr: dir.join("child.stderr"), args: args.to_args(), dir, home }
    }

    fn launch(&self) -> Launch<'_> {
        Launch { args: &self.args, home: &self.home, trial: &self.dir, stdout: None, stderr: Some(&self.stderr) }
    }
}
