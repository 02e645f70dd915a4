//! A race's parked handoff (cell 2): `park` runs once per result, in a
//! folder of its own, and every race starts from a copy of what it left,
//! checked byte for byte.
//!
//! Crash model: none here: the park runs to its end, unkilled; a park
//! that fails, or a copy that differs, ends every race of the result on
//! that, the harness's error (or the store's, by the park's exit).

use crashcells_protocol::{HANDOFF_SESSION as HANDOFF, Op, OpArgs};

use super::job::Race;
use crate::crashstate::{Files, Names};
use crate::dbfiles::{DB_FILES, sibling};
use crate::harness::{Cut, Exit, Launch};
use crate::pipeline::outcome::{Failure, Interruption, Outcome};
use crate::trialdir::TrialEnv;

impl Race<'_> {
    /// The race's store with the handoff parked: `park` runs once per
    /// result, and each race starts from a copy of what it left, checked
    /// byte for byte (a store's park is the same whichever race it is for;
    /// running it again for every race and every kill point only paid for
    /// process starts).
    pub(super) fn park(&self, env: &TrialEnv) -> Result<(), Outcome> {
        let parked = self.parked.get_or_init(|| self.park_once());
        let parked = parked.as_ref().map_err(Clone::clone)?;
        copy_parked(&parked.db, &env.db).map_err(|why| Outcome::Error(Failure::ParkCopy(why)))
    }

    /// The parked store's files, as every race starts from them: where a
    /// recorded r0's log begins.
    pub(super) fn parked_store(&self) -> Result<Files, Outcome> {
        let parked = self.parked.get_or_init(|| self.park_once());
        let parked = parked.as_ref().map_err(Clone::clone)?;
        Files::read_store(parked.dir(), &Names::store(&parked.db))
            .map_err(|e| Outcome::Error(Failure::ParkCopy(format!("{}: {e}", parked.db.display()))))
    }

    /// Parks the handoff in a folder of its own, for every race of the result.
    fn park_once(&self) -> Result<TrialEnv, Outcome> {
        let env = self.env("park").map_err(Outcome::Error)?;
        self.ctx.pool.unit(&self.ctx.interrupt, || self.park_in(&env)).map(|()| env)
    }

    fn park_in(&self, env: &TrialEnv) -> Result<(), Outcome> {
        let args = OpArgs::new(Op::Park).db(&env.db).session(HANDOFF).to_args();
        let stdout = env.path("park.stdout");
        let launch =
            Launch { args: &args, home: &env.home, trial: env.dir(), stdout: Some(&stdout), stderr: Some(&env.stderr) };
        let (exit, tail) =
            self.ctx.child.run_to_end(&launch, self.ctx.deadline, &self.ctx.interrupt).map_err(|e| {
                Outcome::Error(Failure::ChildStart { child: self.ctx.child.display(), why: e.to_string() })
            })?;
        match exit {
            Ok(Exit::Code(0)) => Ok(()),
            Ok(exit) => Err(Outcome::Error(Failure::Park { exit, stderr: tail })),
            Err(Cut::Deadline) => Err(Outcome::Error(Failure::ParkDeadline)),
            Err(Cut::Interrupted) => Err(Outcome::Interrupted(Interruption::Park)),
        }
    }
}

/// Copies the parked store's files (the database and any journal beside it)
/// to `to`, and checks the copy byte for byte: every race must start from
/// exactly what `park` left.
fn copy_parked(from: &std::path::Path, to: &std::path::Path) -> Result<(), String> {
    for suffix in DB_FILES {
        let (src, dst) = (sibling(from, suffix), sibling(to, suffix));
        let Ok(bytes) = std::fs::read(&src) else { continue };
        std::fs::write(&dst, &bytes).map_err(|e| format!("{}: {e}", dst.display()))?;
        if std::fs::read(&dst).map_err(|e| format!("{}: {e}", dst.display()))? != bytes {
            return Err(format!("{} differs from the parked {}", dst.display(), src.display()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every race starts from the parked store, copied whole; a file park
    /// did not leave is not made.
    #[test]
    fn the_parked_store_is_copied_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("park.db"), dir.path().join("race.db"));
        std::fs::write(&from, b"pages").unwrap();
        std::fs::write(sibling(&from, "-wal"), b"frames").unwrap();
        copy_parked(&from, &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"pages");
        assert_eq!(std::fs::read(sibling(&to, "-wal")).unwrap(), b"frames");
        assert!(!sibling(&to, "-journal").exists());
        let nowhere = dir.path().join("gone/race.db");
        assert!(copy_parked(&from, &nowhere).unwrap_err().contains("gone/race.db"));
    }
}
