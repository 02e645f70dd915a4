//! The operations a child implements (docs/PROTOCOL.md §2), the typed
//! builder of their command lines, the claim's exit codes, the mutants a
//! driver may ask for, and the rules that make `fork`'s and `rotate`'s
//! workloads functions of their arguments, so that a judge knows what each
//! operation must have written without being told.

use std::ffi::OsString;
use std::path::Path;

/// The session `append` writes to.
pub const APPEND_SESSION: &str = "main";

/// The session `park` creates and the claimants of `claim` race for (cell
/// 2): the driver names it with `--session`.
pub const HANDOFF_SESSION: &str = "handoff";
/// Exit code of a claimant that won the handoff.
pub const EXIT_WON: i32 = 0;
/// Exit code of a claimant that lost the handoff.
pub const EXIT_LOST: i32 = 10;
/// Exit code of a child given an operation it does not implement
/// (docs/PROTOCOL.md §2): the cells that need it are skipped, saying so.
/// A version-1 child has no `operations` list to say it with. 69 is
/// sysexits.h's `EX_UNAVAILABLE`, and no other exit code of the protocol.
pub const EXIT_UNSUPPORTED: i32 = 69;

/// A child operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Append `m0, m1, ...` to session `main` until killed.
    Append,
    /// Rotate sessions by compression until killed.
    Rotate,
    /// Create a session with a pending handoff.
    Park,
    /// Wait at the barrier, then race to claim the parked handoff.
    Claim,
    /// Recover the store and print its canonical state.
    Dump,
    /// Append to session `main` and rewind it at seeded moments, until killed.
    Fork,
    /// Record, send and mark delivered obligations `o0, o1, ...`, until killed.
    Deliver,
    /// The store's restart step: finish every obligation not delivered.
    CatchUp,
    /// One of several writers: wait at the barrier, then append
    /// `<writer>-m0, <writer>-m1, ...` to session `main` (cell 6).
    CoAppend,
}

impl Op {
    pub const ALL: [Op; 9] =
        [Op::Append, Op::Rotate, Op::Park, Op::Claim, Op::Dump, Op::Fork, Op::Deliver, Op::CatchUp, Op::CoAppend];
    /// The operations every version-1 child implements.
    pub const VERSION_1: [Op; 5] = [Op::Append, Op::Rotate, Op::Park, Op::Claim, Op::Dump];

    /// The operation's name on the command line and in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Append => "append",
            Op::Rotate => "rotate",
            Op::Park => "park",
            Op::Claim => "claim",
            Op::Dump => "dump",
            Op::Fork => "fork",
            Op::Deliver => "deliver",
            Op::CatchUp => "catch-up",
            Op::CoAppend => "co-append",
        }
    }

    /// Whether the operation takes `--seed`: its workload is chosen by it.
    pub fn seeded(self) -> bool {
        self == Op::Fork
    }

    /// Whether the operation takes `--transport`: it sends through the
    /// driver's fake provider.
    pub fn uses_transport(self) -> bool {
        matches!(self, Op::Deliver | Op::CatchUp)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The arguments of one operation, as the driver appends them to the
/// child's command: `<op> --flag value ...`, each flag as two arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpArgs {
    op: Op,
    flags: Vec<(&'static str, OsString)>,
}

impl OpArgs {
    pub fn new(op: Op) -> OpArgs {
        OpArgs { op, flags: Vec::new() }
    }

    pub fn op(&self) -> Op {
        self.op
    }

    fn flag(mut self, name: &'static str, value: impl Into<OsString>) -> OpArgs {
        self.flags.push((name, value.into()));
        self
    }

    /// `--db PATH`: the SQLite database file.
    pub fn db(self, path: &Path) -> OpArgs {
        self.flag("--db", path)
    }

    /// `--acks PATH`: the ack journal.
    pub fn acks(self, path: &Path) -> OpArgs {
        self.flag("--acks", path)
    }

    /// `--session ID`: the handoff session of `park` and `claim`.
    pub fn session(self, id: &str) -> OpArgs {
        self.flag("--session", id)
    }

    /// `--barrier PATH`: the lock file claimants wait on.
    pub fn barrier(self, path: &Path) -> OpArgs {
        self.flag("--barrier", path)
    }

    /// `--claimant NAME`: who claims.
    pub fn claimant(self, name: &str) -> OpArgs {
        self.flag("--claimant", name)
    }

    /// `--writer NAME`: which writer of `co-append` this process is.
    pub fn writer(self, name: &str) -> OpArgs {
        self.flag("--writer", name)
    }

    /// `--stop-after N`: end after N operations instead of running until killed.
    pub fn stop_after(self, n: u64) -> OpArgs {
        self.flag("--stop-after", n.to_string())
    }

    /// `--seed N`: what chooses a seeded operation's workload (`fork`).
    pub fn seed(self, seed: u64) -> OpArgs {
        self.flag("--seed", seed.to_string())
    }

    /// `--shapes on`: `rotate` rotates by [`Rotation::of`]'s rule with
    /// shapes. Only for a child that lists `rotate-shapes`.
    pub fn shapes(self) -> OpArgs {
        self.flag("--shapes", "on")
    }

    /// `--transport PATH`: the fake provider's log a child sends through.
    pub fn transport(self, path: &Path) -> OpArgs {
        self.flag("--transport", path)
    }

    /// `--mutant NAME`, when one is asked for.
    pub fn mutant(self, name: Option<&str>) -> OpArgs {
        match name {
            Some(m) => self.flag("--mutant", m),
            None => self,
        }
    }

    /// The arguments: the operation's name, then each flag and its value.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from(self.op.as_str())];
        for (name, value) in &self.flags {
            args.push(name.into());
            args.push(value.clone());
        }
        args
    }
}

/// Operation `i` of a `fork` run rewinds when `i % FORK_EVERY == FORK_EVERY - 1`
/// (and the live transcript has at least two messages).
pub const FORK_EVERY: u64 = 4;

/// One operation of a `fork` run (docs/PROTOCOL.md §2, `fork`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkStep {
    /// Append `m<i>` to the live transcript.
    Append,
    /// Cut the live transcript back to its first `k` messages.
    Rewind { k: u64 },
}

impl ForkStep {
    /// Operation `i` of a `fork` run with `--seed seed`, when the live
    /// transcript of `main` holds `len` messages. A rewind keeps
    /// `k = (seed + i) mod (len - 1)` messages, so it always cuts at least
    /// two: a cut of one message is a single-row change that even a store
    /// that tears its rewinds makes in one step, and a crash could not show
    /// the tear. The sum is exact (no wrap-around at 2^64), as in a
    /// language whose integers do not overflow.
    pub fn of(seed: u64, i: u64, len: u64) -> ForkStep {
        if i % FORK_EVERY == FORK_EVERY - 1 && len >= 2 {
            let k = (u128::from(seed) + u128::from(i)) % u128::from(len - 1);
            ForkStep::Rewind { k: k as u64 }
        } else {
            ForkStep::Append
        }
    }
}

/// How many messages a carrying rotation carries: the parent's last two,
/// the `user` message `work <k>` and the `assistant` message `reply <k>` its
/// work ended with (docs/PROTOCOL.md §2, `rotate`). Two, not one, so that a
/// store that copies them one transaction each shows it.
pub const CARRIED: u64 = 2;

/// Rotation `k` of a `rotate` run (docs/PROTOCOL.md §2, `rotate`): the
/// session it ends by compression, the continuation it creates, and how
/// many messages it carries into the continuation after its `system`
/// message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotation {
    pub k: u64,
    pub parent: String,
    pub child: String,
    pub carried: u64,
}

impl Rotation {
    /// Rotation `k`. Without shapes (version 1's `rotate`, and every child
    /// not given `--shapes on`): a new session `p<k>` rotated into `c<k>`,
    /// nothing carried. With shapes, every four rotations take the four
    /// shapes a rotation has:
    ///
    /// | k mod 4 | parent | carried |
    /// |---|---|---|
    /// | 0 | `p<k>`, new: a session's first rotation | 0 |
    /// | 1 | `c<k-1>`: the continuation rotated again | 2 |
    /// | 2 | `p<k>`, new | 2 |
    /// | 3 | `c<k-1>` | 0 |
    ///
    /// so that a sweep of four rotations shows each, whatever the seed.
    pub fn of(k: u64, shapes: bool) -> Rotation {
        let continues = shapes && k % 2 == 1;
        let parent = if continues { format!("c{}", k - 1) } else { format!("p{k}") };
        let carried = if shapes && matches!(k % 4, 1 | 2) { CARRIED } else { 0 };
        Rotation { k, parent, child: format!("c{k}"), carried }
    }

    /// Whether the parent is the previous rotation's continuation (it
    /// exists already), rather than a session the rotation creates.
    pub fn continues(&self) -> bool {
        self.parent.starts_with('c')
    }

    /// The messages the rotation's work adds to its parent last, as
    /// `(role, content)`: with shapes, `user` `work <k>` then `assistant`
    /// `reply <k>`; without, `user` `work <k>` alone (what version 1's
    /// reference writes; the driver does not check it).
    pub fn work(&self, shapes: bool) -> Vec<(&'static str, String)> {
        let mut w = vec![("user", format!("work {}", self.k))];
        if shapes {
            w.push(("assistant", format!("reply {}", self.k)));
        }
        w
    }

    /// The messages the continuation carries after its `system` message, as
    /// `(role, content)`: copies of the last `carried` messages of the work.
    pub fn carried_messages(&self) -> Vec<(&'static str, String)> {
        let w = self.work(true);
        w[w.len() - self.carried as usize..].to_vec()
    }
}

/// How many appends the `stall` mutant acknowledges before it blocks: it
/// blocks at append `STALL_AFTER` (the sixth), having acked m0..m4.
pub const STALL_AFTER: u64 = 5;
/// The `drop-append` mutant acknowledges without writing one append in this
/// many, starting with the second (m1, m65, m129, ...): a lost acknowledged
/// write that needs no crash to show. Every workload acks m1 (a timed kill
/// waits for hundreds of acks; a syscall sweep covers two appends), so cell
/// 1 fires on every timed trial and at the sweep's last kill point (the one
/// after m1's ack), and its repro fires again.
pub const DROP_EVERY: u64 = 64;
/// The first append the `drop-append` mutant drops.
pub const DROP_FIRST: u64 = 1;

/// The mutants crashcells knows: deliberately broken variants of a store
/// that prove each cell can fire. A child that does not know a name it is
/// given must refuse it rather than ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutant {
    /// `append` writes each ack inside its transaction, before the commit (cell 1 fires).
    AckBeforeCommit,
    /// `claim` reads the state, then updates without the `pending` predicate (cell 2 fires).
    RacyClaim,
    /// `rotate` ends the parent and creates the continuation in two transactions (cell 3 fires).
    SplitRotation,
    /// `claim`'s winner records its claim in a second transaction after the
    /// predicated update (cell 2 fires under syscall kills, on r0's winning claim).
    SplitClaim,
    /// `append` acks a few, then blocks forever (the driver's deadline fires).
    Stall,
    /// `append` acks every append but never writes every 64th one: a lost
    /// acknowledged write that needs no crash to show (cell 1 fires).
    DropAppend,
    /// `fork` rewinds in several transactions, one message of the tail at a
    /// time (cell 4 fires).
    TornFork,
    /// `catch-up` resends every obligation not marked delivered without
    /// asking the transport whether it arrived (cell 5 fires).
    ResendOnCatchUp,
    /// `rotate` creates the continuation and ends the parent in one
    /// transaction, then writes what the continuation holds (its `system`
    /// message and carried messages) in a second (cell 3 fires).
    SplitContinuation,
    /// `fork` rebuilds the kept prefix one transaction per message: the
    /// reference archives the live transcript, then copies each kept message
    /// back; the Python example commits the branch, then copies each kept
    /// turn. A rewind that keeps nothing is then one transaction, so only a
    /// sweep that covers rewinds which keep some catches it (cell 4 fires).
    TornBranch,
    /// `append` acknowledges an append whose commit failed with an I/O
    /// error (`SQLITE_IOERR` or `SQLITE_FULL`) and goes on (cell 1 fires
    /// under `--kill fault`).
    AckDespiteIoError,
    /// `append`, after its first ack, compacts the store: it vacuums the
    /// database into a copy and copies it back over the database with one
    /// `write(2)` whose count it ignores (cell 1 fires under `--kill
    /// short-write`, which cuts that write short; a kill at it fires too:
    /// the copy is not crash-safe).
    IgnoreShortWrite,
    /// `append` writes a dirty marker beside its database before each
    /// append and removes it after the ack; a dump's open, finding the
    /// marker, "repairs" by deleting the session's last message (cell 1
    /// fires under `--kill syscall`: a kill after the ack, before the
    /// marker's removal, loses an acknowledged append).
    DirtyMarker,
    /// `append` runs with `synchronous=OFF` and reports FULL in its ready
    /// record (cell 1 fires on every leg whose calls show the level: the
    /// recorded commits sync nothing).
    ClaimsFull,
    /// `co-append` reads the session's next position (`max(position) + 1`)
    /// before its write transaction, then inserts at it: two writers can
    /// read the same one (cell 6 fires: a duplicate position).
    PositionReadOutsideTxn,
    /// `co-append` reads the session's next position in one `BEGIN
    /// IMMEDIATE` transaction and inserts at it with `INSERT OR IGNORE` in a
    /// second: a collision silently drops an acked append (the Python
    /// example's; cell 6 fires under the between-transactions schedule).
    SplitPositionRead,
    /// `co-append` commits a first transaction that touches the session,
    /// then reads the next position in a second and inserts at it with
    /// `INSERT OR IGNORE` in a third: a collision drops an acked append,
    /// but only a writer held between its second and third transactions
    /// makes one (the Python example's; cell 6 fires under a
    /// `preemptions` schedule of `--kill syscall`, on some seeds).
    LatePositionRead,
    /// `append` keeps each message's body in a file beside the database
    /// (written to a temporary name, then renamed), never fsync'd nor its
    /// folder, and only the file's name in the database; `dump` reads the
    /// file (cell 1 fires under `--kill power`: the commit is durable, the
    /// file's name is not, and `dump` fails). The Python example's; the
    /// reference refuses it.
    UnsyncedBodyFile,
    /// `append` inserts its message in one transaction and creates the
    /// session row in a second; `open` deletes the messages of a session
    /// whose row does not exist (the Python example's; cell 6 fires under
    /// its opener schedule).
    OpenSweepsOrphans,
    /// `rotate`, in a store that keeps a rotation's parts in two files (the
    /// parent's end in an `ATTACH`ed file, the continuation in the
    /// database), commits them in two transactions, one per file (cell 3
    /// fires). The Python example's; the reference store keeps one file and
    /// refuses it.
    SplitAttachedRotation,
}

impl Mutant {
    pub const ALL: [Mutant; 20] = [
        Mutant::AckBeforeCommit,
        Mutant::RacyClaim,
        Mutant::SplitRotation,
        Mutant::SplitClaim,
        Mutant::Stall,
        Mutant::DropAppend,
        Mutant::TornFork,
        Mutant::ResendOnCatchUp,
        Mutant::SplitContinuation,
        Mutant::TornBranch,
        Mutant::AckDespiteIoError,
        Mutant::IgnoreShortWrite,
        Mutant::DirtyMarker,
        Mutant::ClaimsFull,
        Mutant::PositionReadOutsideTxn,
        Mutant::SplitPositionRead,
        Mutant::LatePositionRead,
        Mutant::UnsyncedBodyFile,
        Mutant::OpenSweepsOrphans,
        Mutant::SplitAttachedRotation,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mutant::AckBeforeCommit => "ack-before-commit",
            Mutant::RacyClaim => "racy-claim",
            Mutant::SplitRotation => "split-rotation",
            Mutant::SplitClaim => "split-claim",
            Mutant::Stall => "stall",
            Mutant::DropAppend => "drop-append",
            Mutant::TornFork => "torn-fork",
            Mutant::ResendOnCatchUp => "resend-on-catch-up",
            Mutant::SplitContinuation => "split-continuation",
            Mutant::TornBranch => "torn-branch",
            Mutant::AckDespiteIoError => "ack-despite-io-error",
            Mutant::IgnoreShortWrite => "ignore-short-write",
            Mutant::DirtyMarker => "dirty-marker",
            Mutant::ClaimsFull => "claims-full",
            Mutant::PositionReadOutsideTxn => "position-read-outside-txn",
            Mutant::SplitPositionRead => "split-position-read",
            Mutant::LatePositionRead => "late-position-read",
            Mutant::UnsyncedBodyFile => "unsynced-body-file",
            Mutant::OpenSweepsOrphans => "open-sweeps-orphans",
            Mutant::SplitAttachedRotation => "split-attached-rotation",
        }
    }

    /// The names, for a message that lists them.
    pub fn names() -> Vec<&'static str> {
        Mutant::ALL.iter().map(|m| m.as_str()).collect()
    }

    /// What the mutant breaks, in one line (for `list` and `run --help`;
    /// docs/PROTOCOL.md has the same table).
    pub fn breaks(self) -> &'static str {
        match self {
            Mutant::AckBeforeCommit => "`append` writes each ack inside its transaction, before the commit",
            Mutant::RacyClaim => "`claim` reads the state, then updates without the `pending` predicate",
            Mutant::SplitRotation => "`rotate` ends the parent and creates the continuation in two transactions",
            Mutant::SplitClaim => {
                "`claim`'s winner records its claim in a second transaction (fires under --kill syscall only)"
            }
            Mutant::Stall => "`append` acks a few, then blocks forever (the driver's deadline: an error, not a fire)",
            Mutant::DropAppend => "`append` acks every append but never writes every 64th",
            Mutant::TornFork => "`fork` rewinds in several transactions, one message of the tail at a time",
            Mutant::ResendOnCatchUp => "`catch-up` resends every obligation not marked delivered, without asking",
            Mutant::SplitContinuation => {
                "`rotate` links the continuation and ends the parent, then writes the continuation's messages in a \
                 second transaction"
            }
            Mutant::TornBranch => "`fork` rebuilds the kept prefix of a rewind one transaction per message",
            Mutant::AckDespiteIoError => {
                "`append` acks an append whose commit failed with an I/O error (fires under --kill fault only)"
            }
            Mutant::IgnoreShortWrite => {
                "`append` copies a vacuumed image over its database with one write whose count it ignores (found by \
                 --kill short-write)"
            }
            Mutant::DirtyMarker => {
                "`append` keeps a dirty marker beside its database until each ack; an open that finds it deletes the \
                 last message (found by --kill syscall)"
            }
            Mutant::ClaimsFull => "`append` syncs nothing (synchronous=OFF) and reports synchronous=full",
            Mutant::PositionReadOutsideTxn => {
                "`co-append` reads the next position before its write transaction, then inserts at it"
            }
            Mutant::SplitPositionRead => {
                "`co-append` reads the next position in one transaction, inserts at it with INSERT OR IGNORE in a \
                 second (the Python example's)"
            }
            Mutant::LatePositionRead => {
                "`co-append` touches the session, then reads the next position in a second transaction and inserts \
                 at it with INSERT OR IGNORE in a third (the Python example's)"
            }
            Mutant::UnsyncedBodyFile => {
                "`append` keeps each body in a file beside the database, renamed into place and never fsync'd (found \
                 by --kill power; the Python example's)"
            }
            Mutant::OpenSweepsOrphans => {
                "`append` creates the session row after its message; `open` deletes messages without one (the Python \
                 example's)"
            }
            Mutant::SplitAttachedRotation => {
                "`rotate` ends the parent in an attached file and writes the continuation in the database, in two \
                 transactions (a two-file store's; the reference store refuses it)"
            }
        }
    }

    /// Whether this mutant, played by a library or the reference, acks
    /// append `i` without writing it (`drop-append`).
    pub fn drops_append(self, i: u64) -> bool {
        self == Mutant::DropAppend && i % DROP_EVERY == DROP_FIRST
    }

    /// Whether this mutant blocks for good at append `i` (`stall`), before
    /// writing or acking it.
    pub fn stalls_at(self, i: u64) -> bool {
        self == Mutant::Stall && i >= STALL_AFTER
    }

    /// The number of the cell the mutant is for: the one it makes fire (for
    /// `stall`, the one whose run it stalls).
    pub fn cell(self) -> u32 {
        match self {
            Mutant::AckBeforeCommit
            | Mutant::Stall
            | Mutant::DropAppend
            | Mutant::AckDespiteIoError
            | Mutant::IgnoreShortWrite
            | Mutant::DirtyMarker
            | Mutant::ClaimsFull
            | Mutant::UnsyncedBodyFile => 1,
            Mutant::RacyClaim | Mutant::SplitClaim => 2,
            Mutant::SplitRotation | Mutant::SplitContinuation | Mutant::SplitAttachedRotation => 3,
            Mutant::TornFork | Mutant::TornBranch => 4,
            Mutant::ResendOnCatchUp => 5,
            Mutant::PositionReadOutsideTxn
            | Mutant::SplitPositionRead
            | Mutant::LatePositionRead
            | Mutant::OpenSweepsOrphans => 6,
        }
    }
}

impl std::str::FromStr for Mutant {
    type Err = String;

    fn from_str(s: &str) -> Result<Mutant, String> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown mutant `{s}` (known: {})", Mutant::names().join(", ")))
    }
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_come_as_the_op_then_flag_value_pairs() {
        let args = OpArgs::new(Op::Append).db(Path::new("/t/s.db")).acks(Path::new("/t/a")).stop_after(3).mutant(None);
        let words: Vec<_> = args.to_args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(words, ["append", "--db", "/t/s.db", "--acks", "/t/a", "--stop-after", "3"]);
        let claim = OpArgs::new(Op::Claim).claimant("r1").mutant(Some("racy-claim"));
        assert_eq!(claim.to_args().len(), 5);
    }

    #[test]
    fn a_fork_rewinds_every_fourth_operation_and_cuts_at_least_two() {
        assert_eq!(ForkStep::of(0, 0, 0), ForkStep::Append);
        assert_eq!(ForkStep::of(0, 3, 1), ForkStep::Append, "nothing to cut two of");
        assert_eq!(ForkStep::of(7, 3, 3), ForkStep::Rewind { k: 0 });
        assert_eq!(ForkStep::of(8, 3, 3), ForkStep::Rewind { k: 1 });
        for seed in 0..50 {
            for len in 2..20 {
                let ForkStep::Rewind { k } = ForkStep::of(seed, 7, len) else { panic!("op 7 rewinds") };
                assert!(k + 2 <= len, "seed {seed} len {len}: k {k}");
            }
        }
        // (2^64 - 1) + 3 = 2^64 + 2, which 3 divides; wrapped, it would be 2.
        assert_eq!(ForkStep::of(u64::MAX, 3, 4), ForkStep::Rewind { k: 0 });
    }

    #[test]
    fn rotations_take_the_four_shapes_every_four_and_none_without_shapes() {
        let shapes: Vec<(String, u64)> = (0..8).map(|k| Rotation::of(k, true)).map(|r| (r.parent, r.carried)).collect();
        let want = [("p0", 0), ("c0", 2), ("p2", 2), ("c2", 0), ("p4", 0), ("c4", 2), ("p6", 2), ("c6", 0)];
        assert_eq!(shapes, want.map(|(p, n)| (p.to_string(), n)));
        for k in 0..8 {
            let r = Rotation::of(k, false);
            assert_eq!((r.parent, r.child, r.carried), (format!("p{k}"), format!("c{k}"), 0));
        }
        let r = Rotation::of(1, true);
        assert!(r.continues() && !Rotation::of(2, true).continues());
        assert_eq!(r.carried_messages(), [("user", "work 1".to_string()), ("assistant", "reply 1".to_string())]);
        assert!(Rotation::of(3, true).carried_messages().is_empty());
        assert_eq!(Rotation::of(3, false).work(false), [("user", "work 3".to_string())]);
    }

    #[test]
    fn seeded_and_transport_flags_belong_to_their_operations() {
        assert!(Op::Fork.seeded() && !Op::Append.seeded());
        assert!(Op::Deliver.uses_transport() && Op::CatchUp.uses_transport() && !Op::Fork.uses_transport());
        let args = OpArgs::new(Op::CatchUp).transport(Path::new("/t/p")).seed(3);
        let words: Vec<_> = args.to_args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(words, ["catch-up", "--transport", "/t/p", "--seed", "3"]);
    }

    #[test]
    fn mutant_names_round_trip_and_an_unknown_one_lists_the_known() {
        for m in Mutant::ALL {
            assert_eq!(m.as_str().parse::<Mutant>().unwrap(), m);
        }
        let e = "nope".parse::<Mutant>().unwrap_err();
        assert!(e.starts_with("unknown mutant `nope` (known: ack-before-commit,"), "{e}");
    }
}
