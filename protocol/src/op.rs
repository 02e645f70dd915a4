//! The operations a child implements (docs/PROTOCOL.md §2), the typed
//! builder of their command lines, the claim's exit codes, and the mutants a
//! driver may ask for.

use std::ffi::OsString;
use std::path::Path;

/// The session `append` writes to.
pub const APPEND_SESSION: &str = "main";
/// Exit code of a claimant that won the handoff.
pub const EXIT_WON: i32 = 0;
/// Exit code of a claimant that lost the handoff.
pub const EXIT_LOST: i32 = 10;

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
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Append, Op::Rotate, Op::Park, Op::Claim, Op::Dump];
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
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The arguments of one operation, as the driver appends them to the
/// child's command: `<op> --flag value ...`, each flag as two arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
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

    /// `--stop-after N`: end after N operations instead of running until killed.
    pub fn stop_after(self, n: u64) -> OpArgs {
        self.flag("--stop-after", n.to_string())
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
}

impl Mutant {
    pub const ALL: [Mutant; 6] = [
        Mutant::AckBeforeCommit,
        Mutant::RacyClaim,
        Mutant::SplitRotation,
        Mutant::SplitClaim,
        Mutant::Stall,
        Mutant::DropAppend,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mutant::AckBeforeCommit => "ack-before-commit",
            Mutant::RacyClaim => "racy-claim",
            Mutant::SplitRotation => "split-rotation",
            Mutant::SplitClaim => "split-claim",
            Mutant::Stall => "stall",
            Mutant::DropAppend => "drop-append",
        }
    }

    /// The names, for a message that lists them.
    pub fn names() -> Vec<&'static str> {
        Mutant::ALL.iter().map(|m| m.as_str()).collect()
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
    fn mutant_names_round_trip_and_an_unknown_one_lists_the_known() {
        for m in Mutant::ALL {
            assert_eq!(m.as_str().parse::<Mutant>().unwrap(), m);
        }
        let e = "nope".parse::<Mutant>().unwrap_err();
        assert!(e.starts_with("unknown mutant `nope` (known: ack-before-commit,"), "{e}");
    }
}
