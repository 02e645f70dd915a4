//! `child-check`'s `journal-policy`: does the store run the journal mode a
//! leg asks for, or does a resolver it copied decide for it? A store that
//! calls the reference resolver (`adapter.resolve`) without a policy of its
//! own gets the WAL-reset gate's DELETE where a leg asks for WAL: `run`
//! skips that leg, and any fire it would have found stays hidden (#53).
//!
//! One `append --stop-after 1` asks for `journal_mode = "wal"`. Where the
//! ready record says another mode ran and that the gate (or a resolver's
//! default) decided it, not the config, the check warns, naming the legs of
//! the default matrix the store will skip. A warning, not a failure: the
//! gate may be the store's own policy (the reference store's is), which
//! only its author can tell. A store that imposes its mode (`store`) or
//! decides by a word of its own has a policy of its own, and is not warned.

use crashcells_protocol::{Decider, JournalMode, Ready};

use super::checker::Checker;
use crate::journalmode::ReportedMode;
use crate::matrix::Matrix;

/// The check's name.
pub(super) const JOURNAL_POLICY: &str = "journal-policy";

/// The config the check asks with.
const ASK_WAL: &str = "[database]\njournal_mode = \"wal\"\n";

/// What the check found: a pass, or a warning.
#[derive(Debug, PartialEq, Eq)]
enum Policy {
    Runs(String),
    Hides(String),
}

impl Checker<'_> {
    /// `journal-policy`: asks for WAL and reads who decided the mode that ran.
    pub(super) fn journal_policy(&mut self) {
        let asked = self.ready_with(ASK_WAL, "journal-policy").and_then(|(r, _)| {
            r.ok_or_else(|| "with journal_mode = \"wal\" the child wrote no ready record".to_string())
        });
        match asked.map(|r| judged(&r, &legs_asking(JournalMode::Wal))) {
            Ok(Policy::Runs(ok)) => drop(self.note(JOURNAL_POLICY, Ok(ok))),
            Ok(Policy::Hides(why)) => self.warn(JOURNAL_POLICY, why),
            Err(e) => drop(self.note(JOURNAL_POLICY, Err(e))),
        }
    }
}

/// The legs of the default matrix that ask for `mode`.
fn legs_asking(mode: JournalMode) -> Vec<String> {
    let legs = Matrix::load("default").map(|m| m.legs).unwrap_or_default();
    legs.into_iter().filter(|l| l.journal_mode == Some(mode)).map(|l| l.name).collect()
}

/// The ready record of a run asked for WAL, judged: WAL ran, or a policy of
/// the store's own refused it (a pass, saying so); or the gate, a
/// resolver's default or nothing said decided (a warning naming `legs`,
/// those the store will skip).
fn judged(r: &Ready, legs: &[String]) -> Policy {
    let ran = ReportedMode::said(&r.journal_mode);
    let by = r.resolver.as_ref().map(|d| d.decided_by);
    let said = r.resolver.as_ref().map_or("no resolver decision".to_string(), |d| {
        format!("decided by {} ({})", d.decided_by.as_str(), d.reason.trim_end_matches('.'))
    });
    if ran.mode() == Some(JournalMode::Wal) {
        return Policy::Runs("journal_mode = \"wal\" ran wal: every leg it is given runs".to_string());
    }
    if matches!(by, Some(Decider::Store | Decider::Other)) {
        return Policy::Runs(format!(
            "journal_mode = \"wal\" ran {ran}, {said}: the store's own policy, so a leg asking for wal is skipped"
        ));
    }
    let named = match legs {
        [] => "a leg asking for wal".to_string(),
        [one] => format!("leg {one}"),
        many => format!("legs {}", many.join(", ")),
    };
    Policy::Hides(format!(
        "hides {named}: asked for journal_mode = \"wal\", the store ran {ran}, {said}, not by its config, so \
         `run` skips {named} of the default matrix; a store with no journal policy of its own applies the mode it \
         is asked and reports decided_by \"config\" (the first store of each page of docs/adapters/), and calls \
         `resolve` only if the WAL-reset gate is its policy"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::Decision;

    fn ready(ran: &str, decided_by: Option<Decider>) -> Ready {
        let resolver = decided_by.map(|decided_by| Decision {
            requested: Some(JournalMode::Wal),
            applied: ran.parse().unwrap(),
            synchronous: None,
            decided_by,
            reason: "why".into(),
        });
        Ready {
            protocol: 2,
            pid: 1,
            op: "append".into(),
            sqlite_version: "3.40.1".into(),
            sqlite_source_id: None,
            journal_mode: ran.into(),
            synchronous: None,
            resolver,
            operations: None,
            sidecar: None,
        }
    }

    #[test]
    fn the_default_matrix_has_one_leg_asking_for_wal() {
        assert_eq!(legs_asking(JournalMode::Wal), ["wal"]);
    }

    /// The gate, a resolver's default, or no word at all where WAL was
    /// asked: a warning naming the legs. WAL run, or another mode by the
    /// store's own policy: a pass.
    #[test]
    fn only_a_mode_the_config_did_not_decide_hides_legs() {
        let legs = ["wal".to_string()];
        for by in [Some(Decider::WalResetGate), Some(Decider::Default), None] {
            let Policy::Hides(why) = judged(&ready("delete", by), &legs) else { panic!("{by:?} hides no leg") };
            assert!(
                why.starts_with("hides leg wal: asked for journal_mode = \"wal\", the store ran delete, "),
                "{why}"
            );
            assert!(why.contains("decided_by \"config\""), "{why}");
        }
        let gate = judged(&ready("delete", Some(Decider::WalResetGate)), &legs);
        assert!(matches!(&gate, Policy::Hides(w) if w.contains("decided by wal-reset-gate (why)")), "{gate:?}");
        for by in [Some(Decider::Config), Some(Decider::AlreadyWal), None] {
            assert!(matches!(judged(&ready("wal", by), &legs), Policy::Runs(_)), "{by:?}");
        }
        for by in [Decider::Store, Decider::Other] {
            let own = judged(&ready("delete", Some(by)), &legs);
            assert!(matches!(&own, Policy::Runs(w) if w.contains("the store's own policy")), "{own:?}");
        }
        let two = judged(&ready("delete", None), &["wal".into(), "wal-sync-off".into()]);
        assert!(matches!(&two, Policy::Hides(w) if w.starts_with("hides legs wal, wal-sync-off: ")), "{two:?}");
    }
}
