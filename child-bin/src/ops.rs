//! The child operations the driver runs in a separate process and kills:
//! `append`, `rotate`, `park`, `claim`, `fork`, `deliver`, `co-append`
//! (its own module, [`crate::coappend`]), and the recovery steps `catch-up`
//! and `dump`.
//!
//! Crash model: `append`, `rotate`, `fork` and `deliver` run until the
//! driver's `SIGKILL` (or `--stop-after`), writing one ack per operation
//! only after it returned; `claim` races other claimants released together
//! by a file-lock barrier; `catch-up` (the store's restart step) and `dump`
//! (the recovery pass) run in a fresh process after the kill.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use crashcells_protocol::transport::{self, Delivery};
use crashcells_protocol::{
    APPEND_SESSION, Ack, AckWriter, CATCH_UP_BATCH, DUMP_BATCH, DatabaseConfig, EXIT_LOST, EXIT_WON, FORK_SERVER,
    ForkStep, Mutant, Op, PROTOCOL, ROTATE_SHAPES, Ready, Record, Rotation, STALL_AFTER,
};

use crate::ChildError;
use crate::store::{Store, dump};

#[derive(Debug, Subcommand)]
pub enum ChildOp {
    /// Append m0, m1, ... to one session until killed.
    Append(WorkArgs),
    /// Rotate sessions by compression until killed.
    Rotate(RotateArgs),
    /// Create a session with a pending handoff.
    Park(ParkArgs),
    /// Wait at the barrier, then race to claim the parked handoff (exit 0 WON, 10 LOST).
    Claim(ClaimArgs),
    /// Recover the store and print its logical state as canonical JSON.
    Dump(DumpArgs),
    /// Append to session `main` and rewind it at seeded moments, until killed.
    Fork(ForkArgs),
    /// Record, send and mark delivered obligations o0, o1, ..., until killed.
    Deliver(DeliverArgs),
    /// The restart step: finish every obligation not delivered, sending none twice.
    CatchUp(CatchUpArgs),
    /// One of several writers: wait at the barrier, then append to `main` until killed.
    CoAppend(crate::coappend::CoAppendArgs),
    /// Serve forks: one process per operation the driver asks for on stdin
    /// (docs/PROTOCOL.md §9).
    ForkServer,
}

#[derive(Debug, Args)]
pub struct WorkArgs {
    #[arg(long)]
    pub db: PathBuf,
    #[arg(long)]
    pub acks: PathBuf,
    #[arg(long)]
    pub mutant: Option<Mutant>,
    /// Exit 0 after this many operations instead of running until killed.
    #[arg(long)]
    pub stop_after: Option<u64>,
}

#[derive(Debug, Args)]
pub struct RotateArgs {
    #[command(flatten)]
    pub work: WorkArgs,
    /// `on`: rotate by the rule with shapes (docs/PROTOCOL.md, `rotate`):
    /// continuations rotated again, and rotations that carry messages.
    #[arg(long, value_parser = ["on"])]
    pub shapes: Option<String>,
}

#[derive(Debug, Args)]
pub struct ParkArgs {
    #[arg(long)]
    pub db: PathBuf,
    #[arg(long)]
    pub session: String,
}

#[derive(Debug, Args)]
pub struct ClaimArgs {
    #[arg(long)]
    pub db: PathBuf,
    #[arg(long)]
    pub acks: PathBuf,
    #[arg(long)]
    pub session: String,
    /// A lock file the driver holds exclusively; all claimants go when it drops it.
    #[arg(long)]
    pub barrier: PathBuf,
    #[arg(long)]
    pub claimant: String,
    #[arg(long)]
    pub mutant: Option<Mutant>,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The database to recover; repeatable (`dump-batch`): one line per
    /// database, in order, each from a fresh connection.
    #[arg(long, required = true)]
    pub db: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub work: WorkArgs,
    /// Chooses where each rewind cuts (docs/PROTOCOL.md, `fork`).
    #[arg(long)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct DeliverArgs {
    #[command(flatten)]
    pub work: WorkArgs,
    /// The fake provider's log: one line per send.
    #[arg(long)]
    pub transport: PathBuf,
}

#[derive(Debug, Args)]
pub struct CatchUpArgs {
    /// One store, or several (`catch-up-batch`): paired in order with `--transport`.
    #[arg(long, required = true)]
    pub db: Vec<PathBuf>,
    #[arg(long, required = true)]
    pub transport: Vec<PathBuf>,
    #[arg(long)]
    pub mutant: Option<Mutant>,
}

/// The mutant an operation was asked to play, if any.
fn mutant_of(op: &ChildOp) -> Option<Mutant> {
    match op {
        ChildOp::Append(a) => a.mutant,
        ChildOp::Rotate(a) => a.work.mutant,
        ChildOp::Fork(a) => a.work.mutant,
        ChildOp::Deliver(a) => a.work.mutant,
        ChildOp::Claim(a) => a.mutant,
        ChildOp::CatchUp(a) => a.mutant,
        ChildOp::CoAppend(a) => a.mutant,
        ChildOp::Park(_) | ChildOp::Dump(_) | ChildOp::ForkServer => None,
    }
}

/// Why this store does not play mutant `m`, where it does not. Every
/// mutant is named (the match is exhaustive), so a new one is decided here
/// when it is added, never silently passed as a store that plays it.
fn not_here(m: Mutant) -> Option<&'static str> {
    match m {
        Mutant::UnsyncedBodyFile | Mutant::SplitPositionRead | Mutant::LatePositionRead | Mutant::OpenSweepsOrphans => {
            Some("it is the Python example's (examples/python-store)")
        }
        Mutant::SplitAttachedRotation => {
            Some("a two-file store's (examples/python-store's two-file layout); this store keeps one file")
        }
        Mutant::AckBeforeCommit
        | Mutant::RacyClaim
        | Mutant::SplitRotation
        | Mutant::SplitClaim
        | Mutant::Stall
        | Mutant::DropAppend
        | Mutant::TornFork
        | Mutant::ResendOnCatchUp
        | Mutant::SplitContinuation
        | Mutant::TornBranch
        | Mutant::AckDespiteIoError
        | Mutant::IgnoreShortWrite
        | Mutant::DirtyMarker
        | Mutant::ClaimsFull
        | Mutant::PositionReadOutsideTxn => None,
    }
}

/// Runs one operation and returns the process's exit code.
pub fn run(op: ChildOp) -> Result<i32, ChildError> {
    if let Some((m, why)) = mutant_of(&op).and_then(|m| not_here(m).map(|why| (m, why))) {
        // Refused, a usage error (the preflight's append asks first),
        // rather than passed as if the reference were broken so.
        return Err(ChildError::Usage(format!("the reference store does not implement the mutant `{m}`: {why}")));
    }
    match op {
        ChildOp::Append(a) => append(a).map(|()| 0),
        ChildOp::Rotate(a) => rotate(a).map(|()| 0),
        ChildOp::Park(a) => park(a).map(|()| 0),
        ChildOp::Claim(a) => claim(a),
        ChildOp::Dump(a) => print_dump(a).map(|()| 0),
        ChildOp::Fork(a) => fork(a).map(|()| 0),
        ChildOp::Deliver(a) => deliver(a).map(|()| 0),
        ChildOp::CatchUp(a) => catch_up(a).map(|()| 0),
        ChildOp::CoAppend(a) => crate::coappend::co_append(a).map(|()| 0),
        ChildOp::ForkServer => Ok(crate::forkserver::serve()),
    }
}

pub(crate) fn ready(store: &Store, op: &str) -> Record {
    Record::Ready(Ready {
        protocol: PROTOCOL,
        pid: std::process::id(),
        op: op.to_string(),
        sqlite_version: rusqlite::version().to_string(),
        sqlite_source_id: Some(crate::sqlite_source_id()),
        journal_mode: store.journal_mode.clone(),
        synchronous: store.synchronous.map(|s| s.to_string()),
        resolver: Some(store.decision.clone()),
        sidecar: None,
        operations: Some(
            Op::ALL
                .iter()
                .map(|o| o.as_str())
                .chain([DUMP_BATCH, CATCH_UP_BATCH, FORK_SERVER, ROTATE_SHAPES])
                .map(String::from)
                .collect(),
        ),
    })
}

pub(crate) fn ack(op: &str, i: u64) -> Record {
    Record::Ack(Ack::of(op, i))
}

pub(crate) fn open(db: &std::path::Path) -> Result<Store, ChildError> {
    Ok(Store::open(db, DatabaseConfig::from_env()?)?)
}

/// Blocks for good, saying so on stderr first: the line is what the driver's
/// deadline error shows as the child's stderr tail.
fn stall_forever() -> ! {
    eprintln!("crashcells child: stall mutant: blocking forever after {STALL_AFTER} acks");
    loop {
        std::thread::park();
    }
}

fn append(a: WorkArgs) -> Result<(), ChildError> {
    let mut store = open(&a.db)?;
    if a.mutant == Some(Mutant::ClaimsFull) {
        store.claim_full_unsynced()?;
    }
    store.create_session(APPEND_SESSION, None)?;
    let mut acks = AckWriter::create(&a.acks).map_err(ChildError::io("ack journal"))?;
    acks.record(&ready(&store, "append")).map_err(ChildError::io("ack journal"))?;
    for i in 0..a.stop_after.unwrap_or(u64::MAX) {
        if a.mutant.is_some_and(|m| m.stalls_at(i)) {
            stall_forever();
        }
        let content = format!("m{i}");
        let marked = a.mutant == Some(Mutant::DirtyMarker);
        if marked {
            std::fs::write(dirty_marker(&a.db), b"dirty\n").map_err(ChildError::io("dirty marker"))?;
        }
        if a.mutant.is_some_and(|m| m.drops_append(i)) {
            acks.record(&ack("append", i)).map_err(ChildError::io("ack journal"))?;
        } else if a.mutant == Some(Mutant::AckBeforeCommit) {
            let mut early = Ok(());
            store.append(APPEND_SESSION, "user", &content, &mut || early = acks.record(&ack("append", i)))?;
            early.map_err(ChildError::io("ack journal"))?;
        } else {
            match store.append(APPEND_SESSION, "user", &content, &mut || ()) {
                Err(e) if a.mutant == Some(Mutant::AckDespiteIoError) && is_io_error(&e) => {
                    eprintln!(
                        "crashcells child: ack-despite-io-error mutant: acknowledging m{i}, whose commit failed: {e}"
                    );
                }
                other => drop(other?),
            }
            acks.record(&ack("append", i)).map_err(ChildError::io("ack journal"))?;
        }
        if marked {
            std::fs::remove_file(dirty_marker(&a.db)).map_err(ChildError::io("dirty marker"))?;
        }
        if a.mutant == Some(Mutant::IgnoreShortWrite) && i == 0 {
            store = compact(store, &a.db)?;
        }
    }
    Ok(())
}

/// The dirty-marker mutant's marker: a file beside the database
/// (`store.db.dirty`), present from before an append until after its ack.
fn dirty_marker(db: &std::path::Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".dirty");
    name.into()
}

/// The dirty-marker mutant's repair, at a dump's open: a marker beside the
/// database is taken to mean the last append did not finish, so the
/// session's last message is deleted and the marker removed. Its fault: the
/// marker outlives the ack, so the message it deletes may be acknowledged.
/// Only that mutant ever writes a marker; without one this does nothing.
fn repair_if_dirty(db: &std::path::Path) -> Result<(), ChildError> {
    let marker = dirty_marker(db);
    if !marker.exists() {
        return Ok(());
    }
    let mut conn = rusqlite::Connection::open(db)?;
    let tx = conn.transaction()?;
    let last = "SELECT MAX(id) FROM messages WHERE session_id=?1";
    let gone = tx.execute(&format!("DELETE FROM messages WHERE id = ({last})"), [APPEND_SESSION])?;
    let count = "UPDATE sessions SET message_count = message_count - ?2 WHERE id=?1";
    tx.execute(count, rusqlite::params![APPEND_SESSION, gone as i64])?;
    tx.commit()?;
    std::fs::remove_file(&marker).map_err(ChildError::io("dirty marker"))
}

/// The ignore-short-write mutant's compaction: the store vacuums itself
/// into a copy, closes, copies the copy over its database with one
/// `write(2)`, ignoring how many bytes it wrote, and opens again. A short
/// count leaves the database short of its last pages.
fn compact(store: Store, db: &std::path::Path) -> Result<Store, ChildError> {
    let copy = db.with_extension("compact");
    let _ = std::fs::remove_file(&copy);
    store.vacuum_into(&copy)?;
    drop(store);
    let bytes = std::fs::read(&copy).map_err(ChildError::io("compacted copy"))?;
    let mut file = File::create(db).map_err(ChildError::io("database"))?;
    // The mutant's fault: one write, its count ignored.
    #[allow(clippy::unused_io_amount)]
    file.write(&bytes).map_err(ChildError::io("database"))?;
    drop(file);
    let _ = std::fs::remove_file(&copy);
    open(db)
}

/// Whether SQLite failed for the disk's sake: an I/O error (a failed write
/// or sync, `SQLITE_IOERR_*`) or a full disk (`SQLITE_FULL`).
fn is_io_error(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DiskFull, SystemIoFailure};
    matches!(e.sqlite_error_code(), Some(SystemIoFailure | DiskFull))
}

/// Rotation k of the rule (`Rotation::of`): ready its parent (create it
/// unless it rotates the last continuation again, give it its work, take
/// the lease), then publish the continuation, its messages and the parent's
/// end in one transaction, and ack.
fn rotate(a: RotateArgs) -> Result<(), ChildError> {
    let (w, shapes) = (a.work, a.shapes.is_some());
    let mut store = open(&w.db)?;
    let mut acks = AckWriter::create(&w.acks).map_err(ChildError::io("ack journal"))?;
    acks.record(&ready(&store, "rotate")).map_err(ChildError::io("ack journal"))?;
    for k in 0..w.stop_after.unwrap_or(u64::MAX) {
        let r = Rotation::of(k, shapes);
        if shapes {
            store.prepare_rotation(&r.parent, !r.continues(), &r.work(shapes))?;
        } else {
            store.create_session(&r.parent, None)?;
            store.append(&r.parent, "user", &format!("work {k}"), &mut || ())?;
            store.take_lease(&r.parent)?;
        }
        let carried = r.carried_messages();
        match w.mutant {
            Some(Mutant::SplitRotation) => store.publish_rotation_split(&r.parent, &r.child, &carried)?,
            Some(Mutant::SplitContinuation) => {
                store.publish_rotation_split_continuation(&r.parent, &r.child, &carried)?
            }
            _ => store.publish_rotation(&r.parent, &r.child, &carried)?,
        }
        let ack = if shapes { Ack::rotation(k, &r) } else { Ack::rotate(k, &r.parent, &r.child) };
        acks.record(&Record::Ack(ack)).map_err(ChildError::io("ack journal"))?;
    }
    Ok(())
}

fn park(a: ParkArgs) -> Result<(), ChildError> {
    open(&a.db)?.park(&a.session)?;
    Ok(())
}

fn claim(a: ClaimArgs) -> Result<i32, ChildError> {
    let barrier = File::open(&a.barrier).map_err(ChildError::io("barrier"))?;
    // The store is opened before the barrier so that released claimants race
    // on the claim itself, not on opening files.
    let mut store = open(&a.db)?;
    let mut acks = AckWriter::create(&a.acks).map_err(ChildError::io("ack journal"))?;
    acks.record(&ready(&store, "claim")).map_err(ChildError::io("ack journal"))?;
    // Blocks until the driver drops its exclusive lock; the driver's deadline
    // bounds this wait by killing the group.
    barrier.lock_shared().map_err(ChildError::io("barrier"))?;
    let won = match a.mutant {
        Some(Mutant::RacyClaim) => store.claim_racy(&a.session, &a.claimant)?,
        Some(Mutant::SplitClaim) => store.claim_split(&a.session, &a.claimant)?,
        _ => store.claim(&a.session, &a.claimant)?,
    };
    acks.record(&ack("claim", 0)).map_err(ChildError::io("ack journal"))?;
    Ok(if won { EXIT_WON } else { EXIT_LOST })
}

/// Appends `m<i>` to `main`, or rewinds it where the seeded rule says
/// (`ForkStep::of`), one transaction per operation, each acked after it.
fn fork(a: ForkArgs) -> Result<(), ChildError> {
    let w = a.work;
    let mut store = open(&w.db)?;
    store.create_session(APPEND_SESSION, None)?;
    let mut acks = AckWriter::create(&w.acks).map_err(ChildError::io("ack journal"))?;
    acks.record(&ready(&store, "fork")).map_err(ChildError::io("ack journal"))?;
    for i in 0..w.stop_after.unwrap_or(u64::MAX) {
        let ack = match ForkStep::of(a.seed, i, store.live_len(APPEND_SESSION)?) {
            ForkStep::Append => {
                store.append(APPEND_SESSION, "user", &format!("m{i}"), &mut || ())?;
                Ack::of("append", i)
            }
            ForkStep::Rewind { k } => {
                match w.mutant {
                    Some(Mutant::TornFork) => store.rewind_torn(APPEND_SESSION, k)?,
                    Some(Mutant::TornBranch) => store.rewind_torn_branch(APPEND_SESSION, k)?,
                    _ => store.rewind(APPEND_SESSION, k)?,
                }
                Ack::rewind(i, k)
            }
        };
        acks.record(&Record::Ack(ack)).map_err(ChildError::io("ack journal"))?;
    }
    Ok(())
}

/// The payload the reference sends for obligation `key`.
fn payload(key: &str) -> String {
    format!("effect of {key}")
}

/// For each obligation `o<j>`: record it, mark it attempting, send it, mark
/// it delivered (each step its own transaction, the send one `write(2)`),
/// then ack it.
fn deliver(a: DeliverArgs) -> Result<(), ChildError> {
    let w = a.work;
    let mut store = open(&w.db)?;
    store.open_outbox()?;
    let mut acks = AckWriter::create(&w.acks).map_err(ChildError::io("ack journal"))?;
    acks.record(&ready(&store, "deliver")).map_err(ChildError::io("ack journal"))?;
    for j in 0..w.stop_after.unwrap_or(u64::MAX) {
        let key = format!("o{j}");
        store.record_obligation(&key, &payload(&key))?;
        store.mark(&key, "recorded", "attempting")?;
        transport::send(&a.transport, &Delivery { key: key.clone(), payload: payload(&key) })
            .map_err(ChildError::io("transport"))?;
        store.mark(&key, "attempting", "delivered")?;
        acks.record(&Record::Ack(Ack::deliver(j, &key))).map_err(ChildError::io("ack journal"))?;
    }
    Ok(())
}

/// Finishes every obligation a crash left recorded or attempting. One left
/// attempting may have reached the provider: the transport is asked, and it
/// is sent only if it did not arrive (the mutant `resend-on-catch-up` sends
/// it regardless).
fn catch_up(a: CatchUpArgs) -> Result<(), ChildError> {
    if a.db.len() != a.transport.len() {
        let why = format!("{} --db but {} --transport: they come in pairs", a.db.len(), a.transport.len());
        return Err(ChildError::Usage(why));
    }
    a.db.iter().zip(&a.transport).try_for_each(|(db, t)| catch_up_one(db, t, a.mutant))
}

/// `catch-up` of one store and its transport.
fn catch_up_one(
    db: &std::path::Path,
    transport_path: &std::path::Path,
    mutant: Option<Mutant>,
) -> Result<(), ChildError> {
    let mut store = open(db)?;
    store.open_outbox()?;
    let arrived = transport::read(transport_path).map_err(ChildError::io("transport"))?;
    let ask = mutant != Some(Mutant::ResendOnCatchUp);
    for p in store.pending()? {
        if !p.attempting {
            store.mark(&p.key, "recorded", "attempting")?;
        }
        let sent = ask && p.attempting && arrived.iter().any(|d| d.key == p.key);
        if !sent {
            transport::send(transport_path, &Delivery { key: p.key.clone(), payload: p.payload })
                .map_err(ChildError::io("transport"))?;
        }
        store.mark(&p.key, "attempting", "delivered")?;
    }
    Ok(())
}

/// One canonical line per database, in the order given. Every file is
/// checked first, so that a batch with a missing file prints nothing and a
/// caller never reads lines that belong to other states than it thinks.
fn print_dump(a: DumpArgs) -> Result<(), ChildError> {
    if let Some(missing) = a.db.iter().find(|db| !db.is_file()) {
        return Err(ChildError::Missing(missing.clone()));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for db in &a.db {
        repair_if_dirty(db)?;
        let state = dump(db)?;
        let text = serde_json::to_string(&state).map_err(|e| ChildError::Io("dump".into(), e.into()))?;
        writeln!(out, "{text}").map_err(ChildError::io("stdout"))?;
    }
    out.flush().map_err(ChildError::io("stdout"))
}
