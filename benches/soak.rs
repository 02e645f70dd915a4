//! The soak: runs the CI gate (`crashcells run`, whatever its defaults are at
//! the time) N times back to back against the reference store and counts what
//! a trustworthy gate must never show: false fires, harness errors, processes
//! left behind, temp folders left behind, and runs that overstayed.
//!
//! ```sh
//! cargo bench --bench soak                         # 50 gates
//! cargo bench --bench soak -- --runs 10 -- --cell 1 # 10 runs of `crashcells run --cell 1`
//! CRASHCELLS_BIN=/path/to/crashcells cargo bench --bench soak
//! ```
//!
//! Each run gets a fresh work folder and evidence folder; after the driver
//! exits, a process whose command line names the work folder is a leftover
//! process, and anything left in the work folder is a leftover temp folder.
//! It prints figures, not a verdict on timing; it exits 1 if any count is
//! non-zero. The reports and evidence of bad runs are kept and their paths
//! printed; a clean soak removes its folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run that has not ended after this long is a hang; it is killed.
const RUN_LIMIT: Duration = Duration::from_secs(900);

#[derive(Default)]
struct Counts {
    runs: u32,
    false_fires: u64,
    errors: u64,
    leftover_processes: u64,
    leftover_folders: u64,
    hangs: u32,
    bad_exits: u32,
    results: u64,
    skips: u64,
}

impl Counts {
    fn clean(&self) -> bool {
        self.false_fires + self.errors + self.leftover_processes + self.leftover_folders == 0
            && self.hangs + self.bad_exits == 0
    }
}

/// What one run showed.
#[derive(Default)]
struct RunFigures {
    exit: Option<i32>,
    fires: u64,
    errors: u64,
    results: u64,
    skips: u64,
    leftover_processes: u64,
    leftover_folders: u64,
    hung: bool,
    wall: Duration,
    note: String,
}

fn main() {
    let (runs, extra) = parse_args();
    let bin = std::env::var_os("CRASHCELLS_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_crashcells")), PathBuf::from);
    let root = soak_root();
    println!("soak: {runs} runs of `{} run {}` in {}", bin.display(), extra.join(" "), root.display());
    let mut counts = Counts::default();
    let mut walls = Vec::new();
    let mut kept = Vec::new();
    for i in 1..=runs {
        let dir = root.join(format!("run-{i:03}"));
        let f = one_run(&bin, &dir, &extra);
        print_run(i, &f);
        add(&mut counts, &f);
        walls.push(f.wall);
        if f.exit != Some(0) || f.leftover_folders + f.leftover_processes > 0 || f.hung {
            kept.push(dir);
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    print_summary(&counts, &mut walls, &kept);
    if kept.is_empty() {
        let _ = std::fs::remove_dir_all(&root);
    }
    std::process::exit(if counts.clean() { 0 } else { 1 });
}

/// `[--runs N] [-- RUN ARGS...]`; cargo bench's own `--bench` flag is ignored.
fn parse_args() -> (u32, Vec<String>) {
    let mut runs = 50;
    let mut extra = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).expect("--runs takes a number"),
            "--" => extra.extend(args.by_ref()),
            "--bench" => {}
            other => panic!("soak: unknown argument `{other}` (usage: --runs N -- RUN ARGS)"),
        }
    }
    (runs, extra)
}

/// A fresh folder for the soak, memory-backed where there is one (as `run` does).
fn soak_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    tempfile::Builder::new().prefix("crashcells-soak-").tempdir_in(&base).map(|d| d.keep()).unwrap_or_else(|_| {
        tempfile::Builder::new().prefix("crashcells-soak-").tempdir().expect("a temp folder").keep()
    })
}

fn one_run(bin: &Path, dir: &Path, extra: &[String]) -> RunFigures {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).expect("the run's work folder");
    let out = dir.join("run.json");
    let mut cmd = Command::new(bin);
    cmd.arg("run").args(extra).args(["--format", "json", "--out"]).arg(&out);
    cmd.arg("--workdir").arg(&work).arg("--evidence").arg(dir.join("evidence"));
    cmd.stdout(Stdio::null()).stderr(std::fs::File::create(dir.join("stderr.txt")).expect("stderr file"));
    let start = Instant::now();
    let mut child = cmd.spawn().expect("crashcells runs");
    let mut f = RunFigures::default();
    loop {
        if let Some(status) = child.try_wait().expect("wait for crashcells") {
            f.exit = status.code();
            break;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            f.hung = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f.wall = start.elapsed();
    // Counted the moment the driver is gone: it must have reaped everything.
    f.leftover_processes = processes_mentioning(&work) as u64;
    f.leftover_folders = std::fs::read_dir(&work).map_or(0, |d| d.count() as u64);
    read_report(&out, &mut f);
    f
}

fn read_report(out: &Path, f: &mut RunFigures) {
    let text = match std::fs::read_to_string(out) {
        Ok(t) => t,
        Err(e) => return f.note = format!("no report: {e}"),
    };
    let report: serde_json::Value = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => return f.note = format!("report is not JSON: {e}"),
    };
    let n = |k: &str| report["summary"][k].as_u64().unwrap_or(0);
    (f.fires, f.errors, f.skips) = (n("fire"), n("error"), n("skip"));
    f.results = report["results"].as_array().map_or(0, |r| r.len() as u64);
    let bad: Vec<String> = report["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["verdict"] == "fire" || r["verdict"] == "error")
        .map(|r| format!("{} {} {}: {}", r["verdict"], r["cell"], r["leg"], r["reason"]))
        .collect();
    f.note = bad.join("; ");
}

/// Live processes whose command line names `needle` (zombies have none).
fn processes_mentioning(needle: &Path) -> usize {
    let needle = needle.to_string_lossy().into_owned();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|s| s.parse::<u32>().is_ok()))
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(&needle)
        })
        .count()
}

fn add(c: &mut Counts, f: &RunFigures) {
    c.runs += 1;
    c.false_fires += f.fires;
    c.errors += f.errors;
    c.leftover_processes += f.leftover_processes;
    c.leftover_folders += f.leftover_folders;
    c.hangs += u32::from(f.hung);
    c.bad_exits += u32::from(!f.hung && f.exit != Some(0));
    c.results += f.results;
    c.skips += f.skips;
}

fn print_run(i: u32, f: &RunFigures) {
    let exit = f.exit.map_or("none".to_string(), |c| c.to_string());
    println!(
        "run {i:>3}: exit {exit:>4}  {:>2} results  {} fire  {} error  {} skip  {} procs  {} folders{}  {:.1}s  {}",
        f.results,
        f.fires,
        f.errors,
        f.skips,
        f.leftover_processes,
        f.leftover_folders,
        if f.hung { "  HUNG" } else { "" },
        f.wall.as_secs_f64(),
        f.note
    );
}

fn print_summary(c: &Counts, walls: &mut [Duration], kept: &[PathBuf]) {
    walls.sort();
    let secs = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64());
    println!("\nsoak: {} runs, {} results ({} skipped legs)", c.runs, c.results, c.skips);
    println!("  false fires        {}", c.false_fires);
    println!("  errors             {}", c.errors);
    println!("  leftover processes {}", c.leftover_processes);
    println!("  leftover folders   {}", c.leftover_folders);
    println!("  hangs              {} (a run over {RUN_LIMIT:?})", c.hangs);
    println!("  exits other than 0 {}", c.bad_exits);
    println!(
        "  wall per run       min {:.1}s  median {:.1}s  max {:.1}s",
        secs(walls.first()),
        secs(walls.get(walls.len() / 2)),
        secs(walls.last())
    );
    for dir in kept {
        println!("  kept: {}", dir.display());
    }
}
