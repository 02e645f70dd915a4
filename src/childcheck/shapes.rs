//! `child-check`'s clause on `rotate-shapes` (docs/PROTOCOL.md §2, `rotate`):
//! a child that lists it must take `--shapes on` and rotate by the rule with
//! shapes, so that cell 3's judge, which reads what each rotation must hold
//! from the rule, judges what the child really wrote. Four rotations are one
//! of each shape: `rotate --shapes on --stop-after 4` must ack them as the
//! rule gives them (parent, continuation, `carried`), and leave every
//! continuation holding its `system` message and the messages it carried.
//! A child that does not list the word rotates as version 1 does: the
//! check is `not run`.

use crashcells_protocol::{Op, Ready};

use super::checker::{Checker, State};
use super::clauses::{ack_sequence, canonical, expect_exit, parse_dump};
use crate::cells::rotation;
use crate::journal;

/// Rotations of the run: the four shapes, once each.
const SHAPED: u64 = 4;

impl Checker<'_> {
    /// Checks `rotate --shapes on`, if `ready` lists `rotate-shapes`.
    pub(super) fn rotate_shapes(&mut self, ready: &Ready) {
        let why = if !ready.implements(Op::Rotate) {
            "the child does not implement `rotate` (its ready record does not list it)"
        } else if !ready.rotates_in_shapes() {
            "the child does not list `rotate-shapes`: its rotations are judged by version 1's rule"
        } else {
            let found = self.shaped_rotations();
            self.note("rotate-shapes", found);
            return;
        };
        self.skip(&["rotate-shapes"], why);
    }

    fn shaped_rotations(&mut self) -> Result<String, String> {
        let s = self.scratch("rotate-shapes", None).ok_or_else(|| "no scratch folder".to_string())?;
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Rotate).acks(&acks).stop_after(SHAPED).shapes();
        let (exit, tail) = self.run_op(&s, &args, "rotate-shapes")?;
        expect_exit(exit, 0, &tail, "rotate --shapes on --stop-after 4")?;
        let j = journal::parse(&std::fs::read(&acks).unwrap_or_default()).map_err(|e| e.to_string())?;
        ack_sequence(&j, "rotate", SHAPED)?;
        if !rotation::with_shapes(&j.acks)? {
            return Err("rotate --shapes on acked its rotations without `carried`: it rotated without shapes".into());
        }
        let text = self.dump(&s, "rotate-shapes-dump")?;
        canonical(&text)?;
        let v = rotation::check(&parse_dump(&text)?, &j.acks);
        self.states.push(State { op: "rotate --shapes on", scratch: s, first: Ok(text) });
        if !v.found.is_empty() {
            return Err(v.texts().join("; "));
        }
        Ok(format!(
            "{SHAPED} rotations by the rule with shapes, each continuation holding what it carried; {}",
            v.details.join("; ")
        ))
    }
}
