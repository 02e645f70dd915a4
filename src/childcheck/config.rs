//! `child-check`'s config-home checks: a leg asking for DELETE is honoured,
//! or refused by the child's resolver with its reason (docs/PROTOCOL.md §5
//! allows a resolver to refuse a mode; §6 turns that into a skipped leg);
//! an unknown value is an error, never a fallback. A child that runs another
//! mode without a resolver decision saying why would count as evidence for
//! the wrong leg: that fails.

use crashcells_protocol::{JournalMode, Op, Ready};

use super::checker::Checker;
use crate::harness::Exit;
use crate::journal;
use crate::journalmode::ReportedMode;

impl Checker<'_> {
    /// `journal_mode = "delete"` is run or refused with a reason; `"wall"`
    /// is an error before any ready record.
    pub(super) fn config_home(&mut self, default: &Ready) {
        let asked = self
            .ready_with("[database]\njournal_mode = \"delete\"\n", "config-delete")
            .and_then(|(r, _)| r.ok_or_else(|| "with journal_mode = \"delete\" the child wrote no ready record".into()))
            .and_then(|r| delete_honoured_or_refused(&r, default));
        self.note("config-home", asked);
        let bad = self.ready_with("[database]\njournal_mode = \"wall\"\n", "config-bad").and_then(|(r, exit)| {
            match (exit, r) {
                (Exit::Code(c), None) if c != 0 => Ok(format!("journal_mode = \"wall\" is refused (exit code {c})")),
                (exit, ready) => Err(format!(
                    "journal_mode = \"wall\" must be an error before any ready record, but the child ended with {exit}{}",
                    if ready.is_some() { " after writing a ready record" } else { "" }
                )),
            }
        });
        self.note("config-errors", bad);
    }

    /// Runs `append --stop-after 1` with `config` as config.toml.
    pub(super) fn ready_with(&mut self, config: &str, label: &str) -> Result<(Option<Ready>, Exit), String> {
        let s = self.scratch(label, Some(config)).ok_or_else(|| "no scratch folder".to_string())?;
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Append).acks(&acks).stop_after(1);
        let (exit, _) = self.run_op(&s, &args, label)?;
        let journal = journal::parse(&std::fs::read(&acks).unwrap_or_default()).map_err(|e| e.to_string())?;
        Ok((journal.ready, exit))
    }
}

/// The ready record of a run asked for DELETE: it ran DELETE, or its
/// resolver says it was asked for DELETE, what it applied instead (the mode
/// the connection reports) and why.
fn delete_honoured_or_refused(r: &Ready, default: &Ready) -> Result<String, String> {
    let delete = JournalMode::Delete;
    let ran = ReportedMode::said(&r.journal_mode);
    if ran.mode() == Some(delete) {
        return Ok(format!("journal_mode = \"delete\" ran delete (default ran {})", default.journal_mode));
    }
    let asked = format!("journal_mode = \"delete\" was asked but the child ran {ran}");
    let Some(d) = &r.resolver else {
        return Err(format!("{asked} with no resolver decision saying why: a silent fallback (docs/PROTOCOL.md §5)"));
    };
    if d.requested != Some(delete) {
        let said = d.requested.map_or("nothing".into(), |m| m.to_string());
        return Err(format!("{asked}, and its resolver says {said} was requested: the config home was not read"));
    }
    if ran.mode() != Some(d.applied) {
        return Err(format!("{asked}, but its resolver says it applied {}", d.applied));
    }
    if d.reason.trim().is_empty() {
        return Err(format!("{asked}; its resolver refused delete without a reason"));
    }
    Ok(format!(
        "journal_mode = \"delete\" refused by the child's resolver ({}), which ran {ran}: {}",
        d.decided_by.as_str(),
        d.reason
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::{Decider, Decision};

    fn ready(mode: &str, resolver: Option<Decision>) -> Ready {
        Ready {
            protocol: 2,
            pid: 1,
            op: "append".into(),
            sqlite_version: "3.40.1".into(),
            sqlite_source_id: None,
            journal_mode: mode.into(),
            synchronous: None,
            resolver,
            operations: None,
            sidecar: None,
        }
    }

    fn decision(requested: Option<JournalMode>, applied: JournalMode, reason: &str) -> Decision {
        Decision { requested, applied, synchronous: None, decided_by: Decider::Other, reason: reason.into() }
    }

    #[test]
    fn delete_run_as_asked_passes() {
        assert!(delete_honoured_or_refused(&ready("delete", None), &ready("wal", None)).is_ok());
    }

    #[test]
    fn a_refusal_with_its_reason_passes_and_shows_the_reason() {
        let why = "the store applies WAL on open whatever it is asked";
        let r = ready("wal", Some(decision(Some(JournalMode::Delete), JournalMode::Wal, why)));
        let ok = delete_honoured_or_refused(&r, &r).unwrap();
        assert!(ok.contains("refused by the child's resolver") && ok.contains(why), "{ok}");
    }

    #[test]
    fn another_mode_without_a_resolver_or_with_one_that_disagrees_fails() {
        let silent = delete_honoured_or_refused(&ready("wal", None), &ready("wal", None)).unwrap_err();
        assert!(silent.contains("silent fallback"), "{silent}");
        let unread = ready("wal", Some(decision(None, JournalMode::Wal, "default")));
        assert!(delete_honoured_or_refused(&unread, &unread).unwrap_err().contains("config home was not read"));
        let other = ready("wal", Some(decision(Some(JournalMode::Delete), JournalMode::Truncate, "x")));
        assert!(delete_honoured_or_refused(&other, &other).unwrap_err().contains("applied truncate"));
        let mute = ready("wal", Some(decision(Some(JournalMode::Delete), JournalMode::Wal, " ")));
        assert!(delete_honoured_or_refused(&mute, &mute).unwrap_err().contains("without a reason"));
    }
}
