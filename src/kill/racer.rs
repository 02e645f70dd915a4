//! Where a killed racer was in its race (cell 2, issue 40 item 4), so that
//! a kill point says what happened and not only which call it was.
//!
//! Crash model: racer r0 is killed at the entry of one file-mutating call.
//! The protocol orders its calls: it opens the store, writes its ready
//! record, takes its barrier (a lock, no traced call), claims in one
//! transaction, then writes the claim's ack. So the ack journal at the kill
//! and the call killed say where r0 was, whatever the schedule: no ready
//! record yet, or the sync of the ready record, is **before its barrier**
//! (it never claimed); the claim's ack in the journal, or the kill at its
//! write, is **after its claim**; anything else is **in its claim**. The
//! release order (winning or losing claim) says only which path r0 was
//! sent on, not that it took it: one of ADK's sweeps ended at point 1, r0
//! killed writing its ready record, and was labelled a kill on r0's
//! winning claim.
//!
//! Clause: none of its own. A point where r0 never passed its barrier, or
//! left the store as it found it, is one where the kill played no part: a
//! fire there is the other racers' alone, and the label says so.

use serde::{Deserialize, Serialize};

/// Where r0 was in its race when its kill came.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Its ready record not yet written or synced: it never reached its
    /// barrier, so it never claimed.
    BeforeBarrier,
    /// Released, its claim's ack not yet being written.
    InClaim,
    /// Its claim over: the claim's ack being written, or written.
    AfterClaim,
}

/// The call a racer was killed at, as its kill point names it: the
/// syscall's name and the file's kind (`acks`, `database`, ...).
#[derive(Clone, Copy, Debug, Default)]
pub struct Call<'a> {
    pub syscall: Option<&'a str>,
    pub file: Option<&'a str>,
}

/// A racer's kill in its race: who, on which path it was sent, where it
/// was, and whether the kill played any part in what the others did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RacerAt {
    /// The racer killed (r0).
    pub racer: u32,
    /// The path the release order sent it on: `winning-claim` or
    /// `losing-claim`.
    pub path: String,
    pub stage: Stage,
    /// The kill played no part: r0 never passed its barrier, or left the
    /// store's files as it found them, so the other racers alone made the
    /// race's outcome (a fire here is theirs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_part: bool,
}

impl Stage {
    /// Where a racer killed at `call` was, from its ack journal's bytes as
    /// the kill left them (the call killed never ran).
    pub fn of(journal: &[u8], call: Call) -> Stage {
        let parsed = crate::journal::parse(journal).unwrap_or_default();
        let on_journal = call.file == Some("acks");
        let writes = call.syscall.is_some_and(|s| s.contains("write"));
        match (parsed.ready.is_some(), !parsed.acks.is_empty()) {
            (false, _) => Stage::BeforeBarrier,
            (true, true) => Stage::AfterClaim,
            // After the ready record, the journal's only write is the claim's ack.
            (true, false) if on_journal && writes => Stage::AfterClaim,
            // A sync of the journal before any ack is the ready record's.
            (true, false) if on_journal => Stage::BeforeBarrier,
            (true, false) => Stage::InClaim,
        }
    }
}

impl RacerAt {
    /// The racer `r` killed at `call` on `path`, its journal then `journal`;
    /// `untouched` when the store's files were as it found them.
    pub fn of(r: u32, path: &str, journal: &[u8], call: Call, untouched: bool) -> RacerAt {
        let stage = Stage::of(journal, call);
        RacerAt { racer: r, path: path.to_string(), stage, no_part: untouched || stage == Stage::BeforeBarrier }
    }

    /// Where the racer was, for a reader: `r0 before its barrier (sent on
    /// its winning claim)`.
    pub fn whereabouts(&self) -> String {
        let (r, path) = (self.racer, self.path.replace('-', " "));
        match self.stage {
            Stage::BeforeBarrier => format!("r{r} before its barrier (sent on its {path}; it never claimed)"),
            Stage::InClaim => format!("r{r} in its {path}"),
            Stage::AfterClaim => format!("r{r} after its {path} (its claim over, at or past its ack)"),
        }
    }

    /// The whole label: where the racer was and, where it played no part,
    /// that the others alone made the outcome.
    pub fn describe(&self) -> String {
        let mut s = self.whereabouts();
        if self.no_part {
            let why = match self.stage {
                Stage::BeforeBarrier => "it never reached the store's handoff",
                _ => "it left the store as it found it",
            };
            s.push_str(&format!(": the kill played no part ({why}), the other racers alone made the outcome"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READY: &str = concat!(
        r#"{"kind":"ready","protocol":1,"pid":7,"op":"claim","sqlite_version":"3.54.1","journal_mode":"delete"}"#,
        "\n"
    );
    const ACK: &str = "{\"kind\":\"ack\",\"op\":\"claim\",\"i\":0}\n";

    fn at<'a>(syscall: &'a str, file: &'a str) -> Call<'a> {
        Call { syscall: Some(syscall), file: Some(file) }
    }

    #[test]
    fn the_ready_record_and_its_sync_are_before_the_barrier() {
        assert_eq!(Stage::of(b"", at("write", "acks")), Stage::BeforeBarrier, "ADK's point 1");
        assert_eq!(Stage::of(b"", at("pwrite64", "database")), Stage::BeforeBarrier, "opening the store");
        assert_eq!(Stage::of(READY.as_bytes(), at("fsync", "acks")), Stage::BeforeBarrier);
    }

    #[test]
    fn the_store_after_the_ready_record_is_the_claim_and_the_ack_ends_it() {
        assert_eq!(Stage::of(READY.as_bytes(), at("pwrite64", "journal")), Stage::InClaim);
        assert_eq!(Stage::of(READY.as_bytes(), at("unlink", "journal")), Stage::InClaim);
        assert_eq!(Stage::of(READY.as_bytes(), at("write", "acks")), Stage::AfterClaim);
        let acked = format!("{READY}{ACK}");
        assert_eq!(Stage::of(acked.as_bytes(), at("pwrite64", "wal")), Stage::AfterClaim);
    }

    #[test]
    fn a_kill_before_the_barrier_or_one_that_left_the_store_alone_played_no_part() {
        let before = RacerAt::of(0, "winning-claim", b"", at("write", "acks"), false);
        assert!(before.no_part);
        assert_eq!(
            before.describe(),
            "r0 before its barrier (sent on its winning claim; it never claimed): the kill played no part \
             (it never reached the store's handoff), the other racers alone made the outcome"
        );
        let torn = RacerAt::of(0, "winning-claim", READY.as_bytes(), at("pwrite64", "database"), false);
        assert_eq!(torn.describe(), "r0 in its winning claim");
        let lost = RacerAt::of(0, "losing-claim", READY.as_bytes(), at("pwrite64", "journal"), true);
        assert!(
            lost.describe().ends_with("(it left the store as it found it), the other racers alone made the outcome")
        );
    }
}
