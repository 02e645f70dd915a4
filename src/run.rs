//! Running a plan: the run's work folder, the jobs spread over `--jobs`
//! threads, progress on stderr, and the report.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::pipeline::Context;
use crate::plan::Job;
use crate::report::{CellResult, Report, SCHEMA, Summary};

/// Where trials run when `--workdir` is not given: a memory-backed folder
/// where there is one. A `SIGKILL` tests the process's contract, not the
/// device, so memory is a fair place and much faster than a disk.
pub fn default_workdir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let writable = tempfile::Builder::new().prefix(".crashcells-probe-").tempdir_in(&shm).is_ok();
    if shm.is_dir() && writable { shm } else { std::env::temp_dir() }
}

/// A run's identity: time and pid, so two runs at once never share a folder.
pub fn run_id() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{secs}-{}", std::process::id())
}

/// Prints progress to stderr as results finish.
pub trait Progress: Sync {
    fn started(&self, total: usize);
    fn finished(&self, done: usize, total: usize, result: &CellResult);
}

/// Runs every job on up to `jobs` threads; results come back in plan order.
pub fn execute(plan: &[Job], ctx: &Context, jobs: usize, progress: &dyn Progress) -> Vec<CellResult> {
    progress.started(plan.len());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<CellResult>>> = Mutex::new(vec![None; plan.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, plan.len().max(1)) {
            s.spawn(|| {
                // An interrupted run starts no further result.
                while crate::harness::interrupted().is_none() {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = plan.get(i) else { break };
                    let result = crate::pipeline::run_job_guarded(job, ctx);
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    progress.finished(n, plan.len(), &result);
                    slots.lock().expect("no thread panics holding the slots")[i] = Some(result);
                }
            });
        }
    });
    slots.into_inner().expect("no thread panicked").into_iter().flatten().collect()
}

/// Builds the report of a finished run.
pub fn report(
    ctx: &Context,
    run_id: &str,
    workdir: &std::path::Path,
    results: Vec<CellResult>,
    started: Instant,
    sqlite_version: String,
) -> Report {
    Report {
        schema: SCHEMA.to_string(),
        crashcells_version: env!("CARGO_PKG_VERSION").to_string(),
        sqlite_version,
        seed: ctx.seed,
        matrix: ctx.options.matrix.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
        run_id: run_id.to_string(),
        workdir: workdir.display().to_string(),
        child: ctx.options.child.clone().unwrap_or_else(|| "reference".into()),
        interrupted: crate::harness::interrupted().is_some(),
        os: os_description(),
        summary: Summary::of(&results),
        results,
    }
}

/// The operating system: name, kernel release where the kernel tells it,
/// and machine, e.g. `linux 6.8.0 x86_64`. Durability depends on the kernel.
pub fn os_description() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|r| r.trim().to_string());
    match release {
        Ok(r) if !r.is_empty() => format!("{} {r} {}", std::env::consts::OS, std::env::consts::ARCH),
        _ => format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    }
}
