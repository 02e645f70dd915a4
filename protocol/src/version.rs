//! A SQLite library's version and the WAL-reset bug's range (docs/PROTOCOL.md
//! §5): the reference resolver refuses WAL inside it, and the driver's leg
//! audit names a child that runs WAL inside it anyway. One rule, here, so
//! that the two never disagree on a boundary.

/// A SQLite library version, as `major.minor.patch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SqliteVersion(pub u32, pub u32, pub u32);

impl SqliteVersion {
    /// From `sqlite3_libversion_number()`: `X*1_000_000 + Y*1_000 + Z`.
    pub fn from_number(n: i32) -> Self {
        let n = n.max(0) as u32;
        Self(n / 1_000_000, (n / 1_000) % 1_000, n % 1_000)
    }

    /// From a ready record's `sqlite_version` (`3.45.1`); `None` for
    /// anything that is not three numbers.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('.').map(|p| p.parse::<u32>().ok());
        let v = Self(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for SqliteVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The WAL-reset bug's range in words, for a reason or a note.
pub const WAL_RESET_RANGE: &str = "3.7.0 <= v < 3.51.3 without the 3.44.6/3.50.7 backports";

/// Whether this SQLite version has the WAL-reset bug. Affected: 3.7.0 up to
/// but not including 3.51.3, except the backports 3.44.6 ≤ v < 3.45.0 and
/// 3.50.7 ≤ v < 3.51.0.
pub fn wal_reset_affected(v: SqliteVersion) -> bool {
    let within = |lo: SqliteVersion, hi: SqliteVersion| lo <= v && v < hi;
    within(SqliteVersion(3, 7, 0), SqliteVersion(3, 51, 3))
        && !within(SqliteVersion(3, 44, 6), SqliteVersion(3, 45, 0))
        && !within(SqliteVersion(3, 50, 7), SqliteVersion(3, 51, 0))
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
            (v(3, 45, 1), true),
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
    fn version_number_decodes_and_text_parses() {
        assert_eq!(SqliteVersion::from_number(3_040_001), v(3, 40, 1));
        assert_eq!(SqliteVersion::from_number(3_051_003).to_string(), "3.51.3");
        assert_eq!(SqliteVersion::parse("3.45.1"), Some(v(3, 45, 1)));
        for bad in ["", "3.45", "3.45.1.2", "3.x.1", "unknown"] {
            assert_eq!(SqliteVersion::parse(bad), None, "{bad}");
        }
    }
}
