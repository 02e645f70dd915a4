//! `child-check`'s clause on `dump-batch` (docs/PROTOCOL.md §2), kept apart
//! from the other clauses so that it merges as one file and one call: a
//! child that lists `dump-batch` must print, for `dump --db A --db B`, A's
//! line then B's, each what `dump --db` of that file alone prints; and a
//! batch with a missing file must print nothing and fail. A child that does
//! not list it is recovered one state per process: the check is `not run`.

use crashcells_protocol::{Op, Ready};

use super::checker::{APPENDS, Checker};
use crate::harness::Exit;

impl Checker<'_> {
    /// Checks the batched `dump`, if `ready` claims it.
    pub(super) fn dump_batch(&mut self, ready: &Ready) {
        if !ready.dumps_in_batches() {
            let why = "the child does not list `dump-batch`: its states are recovered one per process";
            self.skipped.push(("dump-batch", why.into()));
            return;
        }
        let found = self.batch_of_two();
        self.note("dump-batch", found);
    }

    fn batch_of_two(&mut self) -> Result<String, String> {
        let s = self.scratch("dump-batch", None).ok_or_else(|| "no scratch folder".to_string())?;
        let (a, b) = (s.path("a.db"), s.path("b.db"));
        for (db, n, label) in [(&a, APPENDS, "batch-a"), (&b, APPENDS + 1, "batch-b")] {
            let args =
                crashcells_protocol::OpArgs::new(Op::Append).db(db).acks(&db.with_extension("acks")).stop_after(n);
            let (exit, tail) = self.run_op(&s, &args, label)?;
            if exit != Exit::Code(0) {
                return Err(format!("append --stop-after {n} ended with {exit}: {tail}"));
            }
        }
        let alone_a = self.dump_of(&s, &[&a], "batch-dump-a")?;
        let alone_b = self.dump_of(&s, &[&b], "batch-dump-b")?;
        let both = self.dump_of(&s, &[&a, &b], "batch-dump-ab")?;
        if both != format!("{alone_a}{alone_b}") {
            return Err(format!(
                "`dump --db A --db B` printed {} lines that are not A's line then B's (each as `dump --db` alone prints it)",
                both.lines().count()
            ));
        }
        let missing = s.path("missing.db");
        let args = crashcells_protocol::OpArgs::new(Op::Dump).db(&a).db(&missing);
        let (exit, _) = self.run_op(&s, &args, "batch-dump-missing")?;
        let printed = std::fs::read(s.path("batch-dump-missing.stdout")).unwrap_or_default();
        match exit {
            Exit::Code(c) if c != 0 && printed.is_empty() => {
                Ok("two databases print two lines in order, each as alone; a missing one fails the batch".into())
            }
            other => Err(format!(
                "`dump` of a batch with a missing file must fail before printing, but it ended with {other} \
                 after printing {} bytes",
                printed.len()
            )),
        }
    }

    /// `dump` of `dbs` in one process: its stdout.
    fn dump_of(&self, s: &crate::probe::Scratch, dbs: &[&std::path::Path], label: &str) -> Result<String, String> {
        let args = dbs.iter().fold(crashcells_protocol::OpArgs::new(Op::Dump), |a, db| a.db(db));
        match self.run_op(s, &args, label)? {
            (Exit::Code(0), _) => {
                std::fs::read_to_string(s.path(&format!("{label}.stdout"))).map_err(|e| e.to_string())
            }
            (exit, tail) => Err(format!("`dump` of {} databases ended with {exit}: {tail}", dbs.len())),
        }
    }
}
