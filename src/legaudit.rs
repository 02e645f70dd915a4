//! The leg audit: did the child really run in the journal mode the leg asked for?
//!
//! Only WAL persists in the file (header bytes 18 and 19 are 2 in WAL, 1 in
//! the rollback modes); DELETE, TRUNCATE, PERSIST, MEMORY and OFF are
//! per-connection, so a fresh connection reports `delete` for all of them.
//! The audit therefore combines what the child's own connection reported
//! with the header and the journal files left beside the database, and never
//! takes a fresh connection's word alone. A leg that ran in another mode is
//! skipped: it never counts as evidence for the mode it advertises. So is
//! a leg whose child did not load the SQLite library the leg put under it
//! (`sqlitelib`), by the version and source id the child reported. A child
//! that runs WAL on a SQLite with the WAL-reset bug is honored (it ran as
//! advertised) and named in the audit's note.

use std::path::Path;

use crashcells_protocol::Decider;
use crashcells_protocol::JournalMode;
use crashcells_protocol::Ready;
use crashcells_protocol::{SqliteVersion, WAL_RESET_RANGE, wal_reset_affected};
use serde::{Deserialize, Serialize};

use crate::dbfiles::{Artefacts, Family, artefacts, header_family};
use crate::journalmode::{EffectiveMode, ReportedMode};
use crate::matrix::Leg;

/// The audit of one trial's database against the leg's request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    pub requested: Option<JournalMode>,
    /// What the child's own connection reported.
    pub reported: ReportedMode,
    pub family: Family,
    pub artefacts: Artefacts,
    /// The mode the trial ran in, as far as the evidence agrees.
    pub effective: EffectiveMode,
    pub honored: bool,
    /// Why not honored (empty when honored).
    pub reason: String,
    /// When honored but the resolver overrode the wish for WAL (the default
    /// leg on an affected library, or a file already in WAL): what ran and
    /// who decided, so that a passing result still says so.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The synchronous level the commits of a recorded run kept, read from
    /// their calls ([`crate::crashstate::level`]); none without a recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// Why an acknowledged commit of a recorded run was not durable against
    /// a power loss at its ack, from the same calls: a note, not a fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_durable: Option<String>,
}

impl Audit {
    /// The mode the trial ran in, typed: none where the evidence
    /// contradicts the child's word (`wal?`), which no check may take for a
    /// mode it ran in.
    pub fn effective_mode(&self) -> Option<JournalMode> {
        self.effective.mode()
    }
}

/// Audits a trial: the child's `ready` record, the header and the artefacts,
/// against what the leg `requested`. Must run after the child is reaped and
/// before any recovery pass opens the database.
pub fn audit(db: &Path, ready: &Ready, requested: Option<JournalMode>) -> Audit {
    let family = header_family(db);
    let artefacts = artefacts(db);
    let reported = ReportedMode::said(&ready.journal_mode);
    let contradiction = contradiction(&reported, family, &artefacts);
    let effective = match contradiction {
        Some(_) => EffectiveMode::Contradicted(reported.clone()),
        None => EffectiveMode::Agreed(reported.clone()),
    };
    let reason = match (requested, contradiction) {
        (_, Some(c)) => c,
        (Some(want), None) if reported.mode() != Some(want) => not_honored(want, &reported, ready),
        _ => String::new(),
    };
    let note = match reason.is_empty() {
        true => [resolver_note(&reported, ready), wal_reset_note(&effective, ready)].join_nonempty("; "),
        false => String::new(),
    };
    let honored = reason.is_empty();
    Audit { requested, reported, family, artefacts, effective, honored, reason, note, kept: None, not_durable: None }
}

/// Audits a trial against everything its leg asked for: the journal mode as
/// [`audit`] does, then the synchronous level the child's connection
/// reported. A leg that advertises a level it did not run at is no evidence
/// for that level either.
pub fn audit_leg(db: &Path, ready: &Ready, leg: &Leg) -> Audit {
    let mut a = audit(db, ready, leg.journal_mode);
    let ran = ready.synchronous.as_deref().unwrap_or("unreported");
    if let Some(want) = leg.synchronous.filter(|w| a.honored && w.as_str() != ran) {
        a.honored = false;
        a.note.clear();
        a.reason = format!("requested synchronous={want}, child ran synchronous={ran}");
    }
    // First: on another library, the mode and the level say nothing of this one.
    if let Some(why) = library_refused(leg, ready) {
        a.honored = false;
        a.note.clear();
        a.reason = why;
    }
    // A passing result on a library says which SQLite it passed on: the
    // run's summary names only the child's own.
    if let Some(lib) = leg.sqlite.as_ref().filter(|_| a.honored) {
        let on = format!("on SQLite {} ({lib})", ready.sqlite_version);
        a.note = [on, std::mem::take(&mut a.note)].join_nonempty("; ");
    }
    a
}

/// Why the child did not run the SQLite library the leg put under it;
/// `None` for a leg that names none, or a child that ran it.
fn library_refused(leg: &Leg, ready: &Ready) -> Option<String> {
    let (lib, placed) = (leg.sqlite.as_ref()?, leg.placed.as_ref()?);
    crate::sqlitelib::not_loaded(lib, placed, &ready.sqlite_version, ready.sqlite_source_id.as_deref())
}

/// A child that ran WAL on a SQLite with the WAL-reset bug: honored, and
/// said, since a careful resolver would have refused WAL there.
pub fn wal_reset_note(effective: &EffectiveMode, ready: &Ready) -> String {
    let affected = SqliteVersion::parse(&ready.sqlite_version).is_some_and(wal_reset_affected);
    let said = ready.resolver.as_ref().is_some_and(|d| d.decided_by == Decider::AlreadyWal);
    match effective.mode() == Some(JournalMode::Wal) && affected && !said {
        true => format!(
            "ran wal on SQLite {}, which has the WAL-reset bug ({WAL_RESET_RANGE}): \
             WAL with several connections may lose or corrupt commits",
            ready.sqlite_version
        ),
        false => String::new(),
    }
}

/// Joins the parts that are not empty.
trait JoinNonEmpty {
    fn join_nonempty(&self, sep: &str) -> String;
}

impl JoinNonEmpty for [String] {
    fn join_nonempty(&self, sep: &str) -> String {
        self.iter().filter(|s| !s.is_empty()).cloned().collect::<Vec<_>>().join(sep)
    }
}

/// The leg audit at the moment the child wrote its ready record, when that
/// record already shows the leg was not honored: the child's own connection
/// runs another journal mode or synchronous level than the leg asked for.
/// Such a leg is skipped at once rather than after its window: nothing the
/// child does later can make it evidence for the leg. The disk's word is
/// added once there is a database file; before the first write there is no
/// header yet, and the child's word stands alone. `None` while the child's
/// word agrees with the leg: only the audit after the kill can tell then.
pub fn refused_at_ready(db: &Path, ready: &Ready, leg: &Leg) -> Option<Audit> {
    let reported = ReportedMode::said(&ready.journal_mode);
    let mode_refused = leg.journal_mode.filter(|&m| reported.mode() != Some(m));
    let level_refused = leg.synchronous.filter(|s| ready.synchronous.as_deref() != Some(s.as_str()));
    if mode_refused.is_none() && level_refused.is_none() && library_refused(leg, ready).is_none() {
        return None;
    }
    let mut a = audit_leg(db, ready, leg);
    if a.family == Family::Unknown {
        a.effective = EffectiveMode::Agreed(reported.clone());
        let ran = ready.synchronous.as_deref().unwrap_or("unreported");
        a.reason = match (library_refused(leg, ready), mode_refused, level_refused) {
            (Some(why), _, _) => why,
            (None, Some(want), _) => not_honored(want, &reported, ready),
            (None, None, Some(want)) => format!("requested synchronous={want}, child ran synchronous={ran}"),
            (None, None, None) => a.reason,
        };
    }
    (!a.honored).then_some(a)
}

/// The resolver's word when it chose something other than what was asked
/// (or than its own default) and the result still counts for the leg.
fn resolver_note(ran: &ReportedMode, ready: &Ready) -> String {
    match &ready.resolver {
        Some(d) if matches!(d.decided_by, Decider::WalResetGate | Decider::AlreadyWal) => {
            format!("ran {ran}: {}", d.reason)
        }
        _ => String::new(),
    }
}

fn not_honored(want: JournalMode, ran: &ReportedMode, ready: &Ready) -> String {
    match &ready.resolver {
        Some(d) => format!("requested {want}, child ran {ran}: {} (decided by {})", d.reason, d.decided_by.as_str()),
        None => format!("requested {want}, child ran {ran} (the child reported no resolver decision)"),
    }
}

/// What on disk contradicts the child's own report, if anything.
fn contradiction(reported: &ReportedMode, family: Family, a: &Artefacts) -> Option<String> {
    let wal = reported.mode() == Some(JournalMode::Wal);
    match family {
        Family::Unknown => Some("the database header shows no journal family (no file, or not SQLite)".into()),
        Family::Wal if !wal => Some(format!("child reported {reported} but the header says WAL")),
        Family::Rollback if wal => Some("child reported wal but the header says rollback".into()),
        _ if !wal && a.wal.is_some() => Some(format!("child reported {reported} but a -wal file was left")),
        _ if matches!(reported.mode(), Some(JournalMode::Memory | JournalMode::Off)) && a.journal.is_some() => {
            Some(format!("child reported {reported} but a -journal file was left"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::dbfiles::sibling;
    use crashcells_protocol::Decision;

    /// A library with the WAL-reset bug, and one without.
    const AFFECTED: &str = "3.40.1";
    const FIXED: &str = "3.54.1";

    /// A ready record as a resolver like the reference one writes it: the
    /// WAL-reset gate refuses WAL on an affected library.
    fn ready(mode: &str, requested: Option<JournalMode>, version: &str) -> Ready {
        let gated = version == AFFECTED && requested.is_none_or(|m| m == JournalMode::Wal);
        let (applied, decided_by, reason) = match requested {
            _ if gated => (
                JournalMode::Delete,
                Decider::WalResetGate,
                format!("WAL-reset gate: SQLite {version} is affected, so WAL is refused and DELETE applied"),
            ),
            Some(m) => (m, Decider::Config, format!("config asked for {m}")),
            None => (JournalMode::Wal, Decider::Default, "nothing asked; resolver default wal".into()),
        };
        let decision = Decision { requested, applied, synchronous: None, decided_by, reason };
        Ready {
            protocol: 1,
            pid: 1,
            op: "append".into(),
            sqlite_version: version.to_string(),
            sqlite_source_id: None,
            journal_mode: mode.into(),
            synchronous: None,
            resolver: Some(decision),
            operations: None,
            sidecar: None,
        }
    }

    /// A database file with only a header whose bytes 18 and 19 are `byte`,
    /// in a folder that lives as long as the returned guard.
    fn db_with_header(byte: u8) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let mut header = vec![0u8; 100];
        header[18] = byte;
        header[19] = byte;
        std::fs::write(&db, header).unwrap();
        (dir, db)
    }

    #[test]
    fn honored_when_report_and_header_agree() {
        let (_dir, db) = db_with_header(2);
        let a = audit(&db, &ready("wal", Some(JournalMode::Wal), FIXED), Some(JournalMode::Wal));
        assert!(a.honored, "{}", a.reason);
        assert_eq!((a.family, a.effective.to_string().as_str()), (Family::Wal, "wal"));
        assert_eq!(a.effective_mode(), Some(JournalMode::Wal));
    }

    #[test]
    fn gate_downgrade_is_not_honored_and_says_who_decided() {
        let (_dir, db) = db_with_header(1);
        let a = audit(&db, &ready("delete", Some(JournalMode::Wal), AFFECTED), Some(JournalMode::Wal));
        assert!(!a.honored);
        assert!(a.reason.contains("requested wal, child ran delete"), "{}", a.reason);
        assert!(a.reason.contains("WAL-reset") && a.reason.contains("3.40.1"), "{}", a.reason);
    }

    #[test]
    fn header_contradicting_the_report_is_not_honored() {
        let (_dir, db) = db_with_header(2);
        let a = audit(&db, &ready("delete", Some(JournalMode::Delete), FIXED), Some(JournalMode::Delete));
        assert!(!a.honored);
        assert!(a.reason.contains("header says WAL"), "{}", a.reason);
        assert_eq!((a.effective.to_string().as_str(), a.effective_mode()), ("delete?", None));
    }

    #[test]
    fn stray_journal_contradicts_memory_and_off() {
        let (_dir, db) = db_with_header(1);
        std::fs::write(sibling(&db, "-journal"), [1u8; 512]).unwrap();
        let a = audit(&db, &ready("off", Some(JournalMode::Off), FIXED), Some(JournalMode::Off));
        assert!(!a.honored && a.reason.contains("-journal"), "{}", a.reason);
        let a = audit(&db, &ready("delete", Some(JournalMode::Delete), FIXED), Some(JournalMode::Delete));
        assert!(a.honored, "a hot journal after a kill is DELETE's own: {}", a.reason);
    }

    #[test]
    fn default_leg_is_honored_in_whatever_mode_the_resolver_chose() {
        let (_dir, db) = db_with_header(1);
        let a = audit(&db, &ready("delete", None, AFFECTED), None);
        assert!(a.honored);
        assert_eq!(a.effective, EffectiveMode::from(JournalMode::Delete));
        assert!(a.note.contains("ran delete: WAL-reset gate") && a.note.contains("3.40.1"), "{}", a.note);
    }

    #[test]
    fn a_store_that_imposes_its_mode_skips_another_leg_saying_so() {
        let (_dir, db) = db_with_header(2);
        let mut r = ready("wal", Some(JournalMode::Delete), FIXED);
        r.resolver = Some(Decision {
            requested: Some(JournalMode::Delete),
            applied: JournalMode::Wal,
            synchronous: None,
            decided_by: Decider::Store,
            reason: "the saver sets journal_mode=WAL in its setup, whatever is asked".into(),
        });
        let a = audit(&db, &r, Some(JournalMode::Delete));
        assert!(!a.honored);
        let want = "requested delete, child ran wal: the saver sets journal_mode=WAL in its setup, whatever is asked \
                    (decided by store)";
        assert_eq!(a.reason, want);
    }

    #[test]
    fn a_level_the_child_did_not_run_at_is_not_honored() {
        use crashcells_protocol::Synchronous;
        let (_dir, db) = db_with_header(1);
        let mut r = ready("delete", Some(JournalMode::Delete), FIXED);
        r.synchronous = Some("full".into());
        let leg = |s| Leg::new("x", Some(JournalMode::Delete), Some(s));
        assert!(audit_leg(&db, &r, &leg(Synchronous::Full)).honored);
        let a = audit_leg(&db, &r, &leg(Synchronous::Off));
        assert!(!a.honored);
        assert_eq!(a.reason, "requested synchronous=off, child ran synchronous=full");
    }

    #[test]
    fn a_ready_record_that_refuses_the_leg_skips_it_before_any_kill() {
        let leg = |m| Leg::new("x", Some(m), None);
        let (_dir, db) = db_with_header(1);
        let refused = ready("delete", Some(JournalMode::Wal), AFFECTED);
        let a = refused_at_ready(&db, &refused, &leg(JournalMode::Wal)).expect("refused");
        assert!(a.reason.contains("WAL-reset gate"), "{}", a.reason);
        // No file yet: the child's word stands alone, with its resolver's reason.
        let none = db.with_file_name("never-written.db");
        let a = refused_at_ready(&none, &refused, &leg(JournalMode::Wal)).expect("refused");
        assert_eq!(a.effective, EffectiveMode::from(JournalMode::Delete));
        assert!(a.reason.starts_with("requested wal, child ran delete: WAL-reset gate"), "{}", a.reason);
        // A word that agrees with the leg waits for the audit after the kill,
        // whatever a header not yet final says now.
        let (_d2, wal_db) = db_with_header(1);
        assert_eq!(
            refused_at_ready(&wal_db, &ready("wal", Some(JournalMode::Wal), FIXED), &leg(JournalMode::Wal)),
            None
        );
    }

    /// A leg on a library: the bundled 3.54.1, placed.
    fn on_library(mode: JournalMode) -> Leg {
        use crate::sqlitelib::{Library, Placed, Placement};
        let placed = Placed { dir: "/l".into(), version: FIXED.into(), source_id: "id-fixed".into() };
        Leg {
            sqlite: Some(Library::Bundled),
            placed: Some(Placement::Placed(placed)),
            ..Leg::new("b", Some(mode), None)
        }
    }

    #[test]
    fn a_leg_whose_child_did_not_load_its_library_is_not_honored_at_ready() {
        let (_dir, db) = db_with_header(2);
        let mut loaded = ready("wal", Some(JournalMode::Wal), FIXED);
        loaded.sqlite_source_id = Some("id-fixed".into());
        let leg = on_library(JournalMode::Wal);
        let a = audit_leg(&db, &loaded, &leg);
        assert!(a.honored, "{}", a.reason);
        assert_eq!(a.note, "on SQLite 3.54.1 (bundled)");
        assert_eq!(refused_at_ready(&db, &loaded, &leg), None);
        // Its own 3.40.1 instead: the library is the reason, not the gate's refusal it led to.
        let own = ready("delete", Some(JournalMode::Wal), AFFECTED);
        let a = audit_leg(&db, &own, &leg);
        assert!(!a.honored);
        assert!(
            a.reason.starts_with("requested SQLite library bundled (3.54.1), child ran SQLite 3.40.1"),
            "{}",
            a.reason
        );
        let none = db.with_file_name("never-written.db");
        let a = refused_at_ready(&none, &own, &leg).expect("refused");
        assert!(a.reason.starts_with("requested SQLite library bundled"), "{}", a.reason);
        // The same version with another source id is another library too.
        loaded.sqlite_source_id = Some("id-other".into());
        assert!(!audit_leg(&db, &loaded, &leg).honored);
    }

    #[test]
    fn wal_on_a_library_with_the_wal_reset_bug_is_honored_and_named() {
        let (_dir, db) = db_with_header(2);
        let mut r = ready("wal", Some(JournalMode::Wal), "3.45.1");
        r.resolver = None;
        let a = audit(&db, &r, Some(JournalMode::Wal));
        assert!(a.honored, "{}", a.reason);
        assert!(
            a.note.starts_with("ran wal on SQLite 3.45.1, which has the WAL-reset bug (3.7.0 <= v < 3.51.3"),
            "{}",
            a.note
        );
        assert_eq!(a.note.matches("WAL-reset").count(), 1, "{}", a.note);
        // A fixed library, or DELETE on an affected one, says nothing.
        assert_eq!(audit(&db, &ready("wal", Some(JournalMode::Wal), FIXED), Some(JournalMode::Wal)).note, "");
        let (_d2, rollback) = db_with_header(1);
        assert_eq!(
            wal_reset_note(&JournalMode::Delete.into(), &ready("delete", Some(JournalMode::Delete), "3.45.1")),
            ""
        );
        assert!(
            audit(&rollback, &ready("delete", Some(JournalMode::Delete), "3.45.1"), Some(JournalMode::Delete))
                .note
                .is_empty()
        );
    }
}
