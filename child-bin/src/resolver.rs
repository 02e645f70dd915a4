//! The journal-mode resolver: turns what the config home asks for into the
//! mode the store applies, and says why.
//!
//! The WAL-reset bug corrupts or loses commits in WAL with several
//! connections. The resolver refuses WAL on an affected library and resolves
//! to DELETE instead, except for a file that is already in WAL: switching it
//! out of WAL needs exclusive access the store cannot assume, so it stays WAL.

use crashcells_protocol::{DatabaseConfig, Decider, Decision, JournalMode};

/// The journal mode when the config does not ask for one.
pub const DEFAULT_MODE: JournalMode = JournalMode::Wal;

/// A SQLite library version, as `major.minor.patch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SqliteVersion(pub u32, pub u32, pub u32);

impl SqliteVersion {
    /// From `sqlite3_libversion_number()`: `X*1_000_000 + Y*1_000 + Z`.
    pub fn from_number(n: i32) -> Self {
        let n = n.max(0) as u32;
        Self(n / 1_000_000, (n / 1_000) % 1_000, n % 1_000)
    }

    /// The version of the library this process is linked against.
    pub fn linked() -> Self {
        Self::from_number(rusqlite::version_number())
    }
}

impl std::fmt::Display for SqliteVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// Whether this SQLite version has the WAL-reset bug. Affected: 3.7.0 up to
/// but not including 3.51.3, except the backports 3.44.6 ≤ v < 3.45.0 and
/// 3.50.7 ≤ v < 3.51.0.
pub fn wal_reset_affected(v: SqliteVersion) -> bool {
    let within = |lo: SqliteVersion, hi: SqliteVersion| lo <= v && v < hi;
    within(SqliteVersion(3, 7, 0), SqliteVersion(3, 51, 3))
        && !within(SqliteVersion(3, 44, 6), SqliteVersion(3, 45, 0))
        && !within(SqliteVersion(3, 50, 7), SqliteVersion(3, 51, 0))
}

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
                "WAL-reset gate: SQLite {v} is affected (3.7.0 <= v < 3.51.3 without the 3.44.6/3.50.7 backports), so WAL is refused and DELETE applied"
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
    fn version_gate_on_both_sides_of_each_boundary() {
        let cases = [
            (v(3, 6, 23), false),
            (v(3, 7, 0), true),
            (v(3, 40, 1), true),
            (v(3, 44, 5), true),
            (v(3, 44, 6), false),
            (v(3, 44, 99), false),
            (v(3, 45, 0), true),
            (v(3, 50, 6), true),
            (v(3, 50, 7), false),
            (v(3, 50, 99), false),
            (v(3, 51, 0), true),
            (v(3, 51, 2), true),
            (v(3, 51, 3), false),
            (v(3, 54, 1), false),
        ];
        for (version, affected) in cases {
            assert_eq!(wal_reset_affected(version), affected, "{version}");
        }
    }

    #[test]
    fn version_number_decodes() {
        assert_eq!(SqliteVersion::from_number(3_040_001), v(3, 40, 1));
        assert_eq!(SqliteVersion::from_number(3_051_003).to_string(), "3.51.3");
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
