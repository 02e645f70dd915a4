//! The reference journal-mode resolver (docs/PROTOCOL.md §5): turns what the config home asks for into the
//! mode the store applies, and says why.
//!
//! The WAL-reset bug corrupts or loses commits in WAL with several
//! connections. The resolver refuses WAL on an affected library and resolves
//! to DELETE instead, except for a file that is already in WAL: switching it
//! out of WAL needs exclusive access the store cannot assume, so it stays WAL.
//! It lives here, not in the reference child, so that the protocol corpus
//! (`corpus.rs`) states its decisions for every library to agree with.

use crate::config::{DatabaseConfig, JournalMode};
use crate::records::{Decider, Decision};
use crate::version::{SqliteVersion, WAL_RESET_RANGE, wal_reset_affected};

/// The journal mode when the config does not ask for one.
pub const DEFAULT_MODE: JournalMode = JournalMode::Wal;

/// Resolves the journal mode for a library of version `v` and a file that is
/// (`file_is_wal`) or is not already in WAL.
pub fn resolve(config: DatabaseConfig, v: SqliteVersion, file_is_wal: bool) -> Decision {
    let requested = config.journal_mode;
    let wanted = requested.unwrap_or(DEFAULT_MODE);
    let (applied, decided_by, reason) = if wanted == JournalMode::Wal && wal_reset_affected(v) {
        if file_is_wal {
            let why = format!("SQLite {v} has the WAL-reset bug, but the file is already in WAL and stays WAL");
            (JournalMode::Wal, Decider::AlreadyWal, why)
        } else {
            let why = format!(
                "WAL-reset gate: SQLite {v} is affected ({WAL_RESET_RANGE}), so WAL is refused and DELETE applied"
            );
            (JournalMode::Delete, Decider::WalResetGate, why)
        }
    } else if requested.is_some() {
        (wanted, Decider::Config, format!("config asked for {wanted}"))
    } else {
        (wanted, Decider::Default, format!("nothing asked; resolver default {wanted}"))
    };
    Decision { requested, applied, synchronous: config.synchronous, decided_by, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: u32, b: u32, c: u32) -> SqliteVersion {
        SqliteVersion(a, b, c)
    }

    #[test]
    fn each_config_value_is_applied_on_a_fixed_library() {
        for mode in JournalMode::ALL {
            let config = DatabaseConfig { journal_mode: Some(mode), synchronous: None };
            let d = resolve(config, v(3, 54, 1), false);
            assert_eq!((d.requested, d.applied, d.decided_by), (Some(mode), mode, Decider::Config));
        }
    }

    #[test]
    fn default_is_wal_on_a_fixed_library() {
        let d = resolve(DatabaseConfig::default(), v(3, 54, 1), false);
        assert_eq!((d.requested, d.applied, d.decided_by), (None, JournalMode::Wal, Decider::Default));
    }

    #[test]
    fn gate_refuses_wal_on_an_affected_library() {
        for requested in [None, Some(JournalMode::Wal)] {
            let config = DatabaseConfig { journal_mode: requested, synchronous: None };
            let d = resolve(config, v(3, 40, 1), false);
            assert_eq!(d.applied, JournalMode::Delete);
            assert_eq!(d.decided_by, Decider::WalResetGate);
            assert!(d.reason.contains("3.40.1") && d.reason.contains("WAL-reset"), "{}", d.reason);
        }
    }

    #[test]
    fn a_file_already_in_wal_stays_wal() {
        let d = resolve(DatabaseConfig::default(), v(3, 40, 1), true);
        assert_eq!((d.applied, d.decided_by), (JournalMode::Wal, Decider::AlreadyWal));
    }

    #[test]
    fn gate_leaves_non_wal_requests_alone() {
        let config = DatabaseConfig { journal_mode: Some(JournalMode::Truncate), synchronous: None };
        let d = resolve(config, v(3, 40, 1), false);
        assert_eq!((d.applied, d.decided_by), (JournalMode::Truncate, Decider::Config));
    }
}
