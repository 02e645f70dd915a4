//! What every trial of a run needs from it ([`Context`]: the options, the
//! child, the folders, the deadline, the run's interrupt token), the events
//! its work emits ([`Events`]), and what its jobs may share ([`Shared`]).

use std::any::Any;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crashcells_protocol::Ready;

use crate::applied::Applied;
use crate::cells::Cell;
use crate::harness::{Interrupt, Launcher};
use crate::matrix::Leg;
use crate::model::{Children, Events};
use crate::options::RunOptions;
use crate::pipeline::outcome::Failure;
use crate::pipeline::run::plainfires::PlainFires;
use crate::pipeline::run::pool::Pool;
use crate::pipeline::run::recoveries::{Configured, Recoveries};
use crate::plan::Job;
use crate::recovery::{Batching, Recovered, RecoveryError};
use crate::sqlitelib::{LOADER_PATH, Placement};
use crate::trialdir::TrialEnv;

/// How much longer than the measured start a readiness wait allows: a
/// preflight ran alone, a loaded machine runs everything slower.
const SLACK: u32 = 3;

/// The one rule every deadline of a child follows (`run`'s trials, the
/// preflight, the fork server's start, `child-check`): `asked` (`--deadline`),
/// or `start` (how long the child took to write its ready record, alone)
/// times the children that may start at once times [`SLACK`], if that is
/// more. A slow but healthy child gets verdicts, not deadline errors; a
/// stalled one is still caught. A scaled deadline is rounded up to a tenth
/// of a second: messages print it, and a measured start's nanoseconds
/// would say `33.333333333s`.
pub fn scale_deadline(asked: Duration, start: Duration, at_once: u32) -> Duration {
    let scaled = start.saturating_mul(at_once.max(1)).saturating_mul(SLACK);
    let tenths = scaled.as_millis().div_ceil(100);
    asked.max(Duration::from_millis(u64::try_from(tenths * 100).unwrap_or(u64::MAX)))
}

/// How many times `--deadline` (at least the default) the very first start
/// may take: nothing is known of the child yet, and a framework's imports
/// on a loaded runner took 208 s (LangGraph at load 50). Every later wait
/// scales from the start this one measures. A child that hangs before its
/// first ready record costs this once, and its error says to raise
/// `--deadline`.
pub const FIRST_START: u32 = 10;

/// The preflight's wait (`run`'s and `audit`'s): before any start is
/// measured, a generous bound, [`FIRST_START`] times `asked` (at least the
/// default deadline): 300 s by default.
pub fn preflight_deadline(asked: Duration) -> Duration {
    let assumed = asked.max(Duration::from_secs(crate::options::DEFAULT_DEADLINE_SECS));
    assumed.saturating_mul(FIRST_START)
}

/// What every trial of a run needs from it.
#[derive(Clone, Debug)]
pub struct Context {
    /// The run's options as given, its seed resolved: every repro derives
    /// from them.
    pub options: RunOptions,
    pub seed: u64,
    /// The child, exec'd for each operation or forked by its fork server.
    pub child: Launcher,
    /// The run's own work folder; trials make theirs inside it.
    pub work_root: PathBuf,
    /// Where fires and errors keep their evidence (created on first use).
    pub evidence_root: PathBuf,
    /// The bound on every wait of a trial.
    pub deadline: Duration,
    /// The run's interrupt: every wait of its trials is given it and gives
    /// up once it is raised (the CLI's is the process's, which `SIGINT` and
    /// `SIGTERM` raise; a caller may raise its own by hand). Clones of the
    /// context share it.
    pub interrupt: Interrupt,
    /// Threads a syscall sweep spreads its trials over.
    pub jobs: usize,
    /// What the child said of itself in the preflight (its protocol and the
    /// operations it implements); none when the run was interrupted first.
    pub child_ready: Option<Ready>,
    /// Where this job's trials and kill points say how they go.
    pub events: Events,
    /// The run's one pool of child work, shared by every result.
    pub pool: Pool,
    /// How long the child took to write its ready record in the preflight
    /// (through its fork server, if it has one): what the deadline scales
    /// with ([`Context::scaled_deadline`]).
    pub start: Duration,
    /// How long the child took to write its ready record exec'd, in the
    /// run's own preflight (which is exec'd): what the plain path's waits
    /// scale with ([`Context::plain`]). The same as `start` for a run
    /// without a fork server.
    pub execd_start: Duration,
    /// The most children one unit of the pool starts at once in this run
    /// (a race's claimants; 1 without a race).
    pub crowd: u32,
    /// What this run's jobs share (nothing, unless the caller asks).
    pub shared: Shared,
    /// How many times each fire's repro is rerun to measure its refire
    /// rate ([`crate::pipeline::run::refire`]); 0 measures none.
    pub refires: u32,
    /// The fingerprints `--known` lists: a fire that is one of them is not
    /// refired ([`Context::refires_for`]).
    pub known: Arc<[String]>,
    /// The run's recoveries by store bytes: each distinct crash state
    /// recovered once per run.
    pub recoveries: Recoveries,
    /// The run's syscall results' fires on the plain path, by cell and leg:
    /// what confirms a timed fire of the same cell and leg.
    pub plain_fires: PlainFires,
    /// The configuration each leg applied, by leg name, as its probe
    /// before any cell heard it ([`crate::applied`]); empty when not
    /// probed (`--every-leg`, one leg, the audit).
    pub applied: Arc<HashMap<String, Applied>>,
    /// The launcher of each SQLite library a leg places under the child,
    /// by its folder: its own fork server, or exec'd with the library first
    /// on the loader path ([`Context::on_library`]); empty until the run
    /// starts them (`crate::cli`), and for a run with no such leg.
    pub libraries: Arc<Vec<OnLibrary>>,
}

/// A placed SQLite library's launcher, shared by every job on a leg that
/// places it: a fork server started with the library first on its loader
/// path (its forks inherit the library it loaded), or the exec'd child with
/// that path, when the server was not taken.
#[derive(Clone, Debug)]
pub struct OnLibrary {
    /// The library's folder ([`crate::sqlitelib::Placed::dir`]): how a
    /// leg finds its launcher.
    pub dir: PathBuf,
    /// The library in the report's words: `SQLite library bundled (3.54.1)`.
    pub name: String,
    pub child: Launcher,
    /// How long its first operation took to write its ready record (forked
    /// through its server; the run's exec'd start when exec'd): what the
    /// leg's waits scale with.
    pub start: Duration,
}

impl Context {
    /// A run's context before its preflight: nothing heard from the child
    /// yet (its ready record, its start time), no race seen (a crowd of
    /// one), nothing shared, a pool of `jobs` units, an interrupt token of
    /// its own, not raised. Callers set the rest with struct update syntax.
    pub fn new(
        options: RunOptions,
        seed: u64,
        child: Launcher,
        work_root: PathBuf,
        evidence_root: PathBuf,
        deadline: Duration,
        jobs: usize,
    ) -> Context {
        Context {
            options,
            seed,
            child,
            work_root,
            evidence_root,
            deadline,
            interrupt: Interrupt::new(),
            jobs,
            child_ready: None,
            events: Events::default(),
            pool: Pool::new(jobs),
            start: Duration::ZERO,
            execd_start: Duration::ZERO,
            crowd: 1,
            shared: Shared::default(),
            refires: crate::pipeline::run::refire::RUNS,
            known: Arc::from([]),
            recoveries: Recoveries::default(),
            plain_fires: PlainFires::default(),
            applied: Arc::default(),
            libraries: Arc::default(),
        }
    }
}

/// What the jobs of one run may share, by key: each value is made once, by
/// the first job that asks for it (a second job asking meanwhile waits for
/// it), and is of the type the module that makes it says. The audit's power
/// and torn sweeps of one cell and leg share a recording and the
/// recoveries of its stores this way ([`crate::pipeline::workload::power`]): their states are
/// the same bytes only when they come from the same recording. Off (the
/// default, every `run`): each job makes its own.
#[derive(Clone, Default)]
pub struct Shared(Option<Arc<Mutex<Slots>>>);

type Slots = HashMap<String, Arc<OnceLock<Arc<dyn Any + Send + Sync>>>>;

impl Shared {
    /// A store of shared values, for the jobs of one caller.
    pub fn on() -> Shared {
        Shared(Some(Arc::default()))
    }

    /// The value under `key`, made by `make` if no job made it yet; `None`
    /// when sharing is off, or when the value under `key` is of another type.
    pub fn get<T: Any + Send + Sync>(&self, key: &str, make: impl FnOnce() -> T) -> Option<Arc<T>> {
        let slots = self.0.as_ref()?;
        let slot =
            Arc::clone(slots.lock().expect("no job panics holding the slots").entry(key.to_string()).or_default());
        let value = slot.get_or_init(|| Arc::new(make()) as Arc<dyn Any + Send + Sync>);
        Arc::clone(value).downcast::<T>().ok()
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Shared(on)" } else { "Shared(off)" })
    }
}

/// A job where it runs: the job, its leg and cell, and the run's context.
/// The fields every shape of job carries (a workload, a race, the plain
/// path's copy of either) and the driver of its crash states, held once;
/// each derefs to it.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub job: &'a Job,
    pub leg: &'a Leg,
    pub cell: &'a dyn Cell,
    pub ctx: &'a Context,
}

impl<'a> Scope<'a> {
    /// This job run by `ctx` (another launcher: the plain path that
    /// confirms a fire).
    pub fn on<'b>(&self, ctx: &'b Context) -> Scope<'b>
    where
        'a: 'b,
    {
        Scope { ctx, ..*self }
    }

    /// A name for this job's folders: `{cell}-{leg}-{label}`.
    pub fn label(&self, label: &str) -> String {
        format!("{}-{}-{label}", self.job.cell.id, self.leg.name)
    }

    /// A private folder of this job, named by [`Scope::label`].
    pub fn folder(&self, label: &str) -> Result<TrialEnv, Failure> {
        let made = TrialEnv::new(&self.ctx.work_root, self.leg, &self.label(label));
        crate::harness::disk::checked(&self.ctx.work_root, made).map_err(|e| Failure::TrialFolder(e.to_string()))
    }
}

#[cfg(test)]
impl Context {
    /// A context for unit tests that start no child: default options, seed
    /// 1, a one-second deadline, `jobs` threads and what the child said.
    pub(crate) fn for_tests(jobs: usize, child_ready: Option<Ready>) -> Context {
        let child = Launcher::exec(crate::harness::ChildCommand {
            program: "child".into(),
            prefix: vec![],
            cwd: None,
            env: Vec::new(),
        });
        let (work, deadline) = (std::env::temp_dir(), Duration::from_secs(1));
        let ctx = Context::new(RunOptions::default(), 1, child, work.clone(), work, deadline, jobs);
        Context { child_ready, ..ctx }
    }
}

impl Context {
    /// Which recovery steps the child takes for many states in one process
    /// (`dump-batch`, `catch-up-batch` in its ready record); unknown means none.
    pub fn batching(&self) -> Batching {
        let ready = self.child_ready.as_ref();
        Batching {
            dumps: ready.is_some_and(Ready::dumps_in_batches),
            steps: ready.is_some_and(Ready::catches_up_in_batches),
        }
    }

    /// How many children may start at once across the run: the most a unit
    /// starts together (a race's claimants), in every unit of the pool.
    pub fn at_once(&self) -> u32 {
        self.crowd.max(1).saturating_mul(self.pool.size() as u32)
    }

    /// The bound on every wait of a child, given `--deadline` (`asked`):
    /// that, or more when the child's measured start times the children
    /// that may start at once would not fit in it, with room for a loaded
    /// machine. A slow but healthy child gets verdicts, not deadline errors;
    /// a stalled one is still caught.
    pub fn scaled_deadline(&self, asked: Duration) -> Duration {
        scale_deadline(asked, self.start, self.at_once())
    }

    /// Recovers the crash state in `env` alone, in its own folder, as one
    /// unit of the run's pool: the one way a single store is recovered (a
    /// fire's confirming kill, a batch's bad state again, evidence).
    pub fn recover_alone(&self, env: &TrialEnv) -> Result<Recovered, RecoveryError> {
        self.pool.unit(&self.interrupt, || crate::recovery::recover(&self.child, self.deadline, &self.interrupt, env))
    }

    /// The configuration `leg`'s recoveries are keyed by: the one it
    /// applied, where its probe heard it (two legs that apply one share
    /// their recoveries), else the one it asked for (`--every-leg`: a
    /// store whose recovery reads the requested leg).
    pub fn configured(&self, leg: &Leg) -> Configured {
        match self.applied.get(&leg.name) {
            Some(applied) if !self.options.every_leg => Configured::Applied(applied.clone()),
            _ => Configured::Requested(leg.config()),
        }
    }

    /// The mutant the run asked for, if any.
    pub fn mutant(&self) -> Option<&str> {
        self.options.mutant.as_deref()
    }

    /// Whether the child's operations start on a fast path, forked by its
    /// fork server or taken from its warm pool (whose fires the plain path
    /// confirms, [`crate::pipeline::plain::confirm`]).
    pub fn fast(&self) -> bool {
        self.child.server_pid().is_some() || self.child.warm_pool().is_some()
    }

    /// How this context starts its children, in the report's words.
    pub fn children(&self) -> Children {
        match (self.child.server_pid(), self.child.warm_pool()) {
            (Some(_), _) => Children::Forked,
            (None, Some(_)) => Children::Warm,
            (None, None) => Children::Exec,
        }
    }

    /// Which path the start this context's waits scale with was measured
    /// on, as a wait that ends names it: `forked` through the fork server,
    /// else `exec'd` (a warm pool keeps the exec'd start: an operation may
    /// wait for a process to get warm).
    pub fn start_path(&self) -> &'static str {
        match self.children() {
            Children::Forked => "forked",
            Children::Warm | Children::Exec => "exec'd",
        }
    }

    /// This context on the plain path: every operation exec'd, its progress
    /// drawn nowhere (a confirmation is no trial the bar planned), its waits
    /// scaled from the exec'd start ([`Context::execd`]).
    pub fn plain(&self) -> Context {
        Context { events: Events::default(), ..self.execd() }
    }

    /// This context with every operation exec'd and its waits scaled from
    /// the exec'd start, not the fork server's: a store whose imports take
    /// a second exec'd starts in milliseconds forked, and a deadline
    /// borrowed from the fast path would cut every exec'd child short.
    pub fn execd(&self) -> Context {
        let child = Launcher::exec((*self.child).clone());
        // The larger: an exec'd start never measured (zero) keeps the run's.
        let start = self.execd_start.max(self.start);
        let execd = Context { child, start, ..self.clone() };
        Context { deadline: execd.scaled_deadline(self.options.deadline()), ..execd }
    }

    /// How many times a fire with `fingerprint` is refired: none for a
    /// known finding. Its rate tells a reader what a repro is worth before
    /// pasting it; a listed finding is already tracked, its verdict is the
    /// same without it, and a gate on every push paid its reruns again.
    pub fn refires_for(&self, fingerprint: Option<&str>) -> u32 {
        match fingerprint.is_some_and(|fp| self.known.iter().any(|k| k == fp)) {
            true => 0,
            false => self.refires,
        }
    }

    /// This context for a leg that puts a SQLite library under its child:
    /// every operation through the library's own launcher (its fork
    /// server, whose forks loaded that library; the run's server or warm
    /// processes loaded the child's own), its waits scaled from that
    /// launcher's start; exec'd with the library's folder first on the
    /// loader path, scaled as [`Context::execd`]'s, where the run started
    /// none for it. Its [`Context::plain`] and [`Context::execd`] exec with
    /// the loader path: the library's launcher carries it. `None` for a leg
    /// on the child's own library.
    pub fn on_library(&self, leg: &Leg) -> Option<Context> {
        let Some(Placement::Placed(placed)) = &leg.placed else { return None };
        if let Some(lib) = self.libraries.iter().find(|l| l.dir == placed.dir) {
            let on = Context { child: lib.child.clone(), start: lib.start, ..self.clone() };
            return Some(Context { deadline: on.scaled_deadline(self.options.deadline()), ..on });
        }
        let execd = self.execd();
        let child = execd.child.with_env(LOADER_PATH, placed.loader_path());
        Some(Context { child: Launcher::exec(child), ..execd })
    }

    /// This context as its launcher now runs: exec'd, its waits scaled
    /// from the exec'd start, once its fork server ended for good (the
    /// launcher then execs every operation); `None` while it runs as it
    /// began.
    pub fn as_it_runs(&self) -> Option<Context> {
        (self.child.falls() > 0 && !self.fast()).then(|| self.execd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_scales_with_the_start_and_the_crowd_never_below_the_asked() {
        let s = Duration::from_secs;
        assert_eq!(scale_deadline(s(30), s(1), 8), s(30));
        assert_eq!(scale_deadline(s(30), s(2), 8), s(48));
        let measured = Duration::from_nanos(1_388_888_889);
        assert_eq!(format!("{:?}", scale_deadline(s(30), measured, 8)), "33.4s", "to a tenth, up");
        assert_eq!(scale_deadline(s(30), s(20), 0), s(60), "no crowd is a crowd of one");
        let mut ctx = Context::for_tests(2, None);
        (ctx.start, ctx.crowd) = (s(3), 4);
        assert_eq!(ctx.scaled_deadline(s(1)), scale_deadline(s(1), s(3), 8));
    }

    /// A known finding's fire is not refired; any other fire is, as often
    /// as the run asks; a fire with no fingerprint too.
    #[test]
    fn a_known_fire_is_not_refired() {
        let ctx = Context { known: Arc::from(["c/wal/full/timed/orphan".to_string()]), ..Context::for_tests(2, None) };
        assert_eq!(ctx.refires_for(Some("c/wal/full/timed/orphan")), 0);
        assert_eq!(ctx.refires_for(Some("c/wal/full/syscall/orphan")), ctx.refires);
        assert_eq!(ctx.refires_for(None), ctx.refires);
        assert!(ctx.refires > 0);
    }

    /// The plain path's waits scale from the exec'd start, whatever the
    /// fast path's: 190 ms forked, 1.5 s exec'd (ADK's adapter), eight at
    /// once.
    #[test]
    fn the_plain_path_scales_its_deadline_from_the_execd_start() {
        let ms = Duration::from_millis;
        let mut ctx = Context::for_tests(2, None);
        (ctx.start, ctx.execd_start, ctx.crowd, ctx.deadline) = (ms(190), ms(1500), 4, ms(30_000));
        let plain = ctx.plain();
        assert_eq!((plain.start, plain.start_path()), (ms(1500), "exec'd"));
        assert_eq!(plain.deadline, scale_deadline(ctx.options.deadline(), ms(1500), 8));
        assert!(plain.deadline > ctx.deadline, "{:?} against {:?}", plain.deadline, ctx.deadline);
        assert!(ctx.as_it_runs().is_none(), "a launcher that never fell runs as it began");
        // A context whose exec'd start was never measured keeps its own.
        ctx.execd_start = Duration::ZERO;
        assert_eq!(ctx.plain().start, ms(190));
    }

    /// A context's token is its own and not raised; raised by hand (no
    /// signal), every copy the run's trials get sees it (a clone, the plain
    /// path's, a library leg's), and another run's context does not.
    #[test]
    fn a_runs_token_is_shared_by_its_copies_and_no_other_run() {
        let (ctx, other) = (Context::for_tests(2, None), Context::for_tests(2, None));
        assert!(!ctx.interrupt.is_set(), "a fresh run is not interrupted");
        let copies = [ctx.clone(), ctx.plain(), ctx.execd()];
        ctx.interrupt.raise(libc::SIGTERM);
        for copy in &copies {
            assert_eq!(copy.interrupt.signal(), Some(libc::SIGTERM));
        }
        assert!(!other.interrupt.is_set());
    }

    /// A leg on a placed library: the library's launcher where the run
    /// started one, its waits scaled from that launcher's start; its plain
    /// path execs with the library first on the loader path either way.
    #[test]
    fn a_leg_on_a_library_runs_on_its_launcher_and_its_plain_path_execs_with_the_loader_path() {
        use crate::sqlitelib::Placed;
        let ms = Duration::from_millis;
        let placed = Placed { dir: "/lib/sqlite-bundled".into(), version: "3.54.1".into(), source_id: "id".into() };
        let leg = Leg { placed: Some(Placement::Placed(placed.clone())), ..Leg::new("bundled-wal", None, None) };
        let mut ctx = Context::for_tests(2, None);
        (ctx.start, ctx.execd_start, ctx.crowd) = (ms(20), ms(1500), 4);
        let loader = |c: &Context| c.child.env.iter().find(|(k, _)| k == LOADER_PATH).map(|(_, v)| v.clone());
        assert_eq!(ctx.on_library(&Leg::new("wal", None, None)).map(|c| c.start), None, "the child's own library");
        // No launcher of its own: exec'd with the loader path, as before.
        let execd = ctx.on_library(&leg).unwrap();
        assert_eq!((execd.fast(), execd.start, loader(&execd)), (false, ms(1500), Some(placed.loader_path())));
        // The library's own launcher (here one whose server was late).
        let child = ctx.child.with_env(LOADER_PATH, placed.loader_path());
        let lib = Launcher::exec_late(child, "late".into());
        let on = OnLibrary { dir: placed.dir.clone(), name: "bundled".into(), child: lib, start: ms(300) };
        ctx.libraries = Arc::new(vec![on]);
        let on = ctx.on_library(&leg).unwrap();
        assert_eq!((on.child.late(), on.start), (Some("late"), ms(300)));
        assert_eq!(on.deadline, scale_deadline(ctx.options.deadline(), ms(300), 8));
        for plain in [on.plain(), on.execd()] {
            assert_eq!((plain.fast(), plain.start, loader(&plain)), (false, ms(1500), Some(placed.loader_path())));
        }
    }

    #[test]
    fn a_shared_value_is_made_once_and_nothing_is_shared_when_off() {
        let on = Shared::on();
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = || made.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 7;
        let (a, b) = (on.get("k", make), on.clone().get("k", make));
        assert_eq!((a.as_deref(), b.as_deref()), (Some(&7), Some(&7)));
        assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1, "made by the first that asked");
        assert_eq!(on.get("k", || "another type"), None);
        assert_eq!(Shared::default().get("k", make), None);
    }
}
