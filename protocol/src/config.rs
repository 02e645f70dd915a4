//! The isolated config home: `$CRASHCELLS_HOME/config.toml` (docs/PROTOCOL.md §5).
//!
//! The driver steers each child's journal mode through this file rather than a
//! flag, so that the child's own resolver makes the decision exactly as it would
//! in production. An unknown value is an error, never a silent fallback: a leg
//! that silently ran in another mode would count as evidence for the wrong one.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The environment variable that names the config home.
pub const HOME_ENV: &str = "CRASHCELLS_HOME";

/// A SQLite journal mode, spelled as `PRAGMA journal_mode` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum JournalMode {
    Delete,
    Truncate,
    Persist,
    Memory,
    Wal,
    Off,
}

impl JournalMode {
    pub const ALL: [JournalMode; 6] = [
        JournalMode::Delete,
        JournalMode::Truncate,
        JournalMode::Persist,
        JournalMode::Memory,
        JournalMode::Wal,
        JournalMode::Off,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JournalMode::Delete => "delete",
            JournalMode::Truncate => "truncate",
            JournalMode::Persist => "persist",
            JournalMode::Memory => "memory",
            JournalMode::Wal => "wal",
            JournalMode::Off => "off",
        }
    }
}

/// A `PRAGMA synchronous` level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Off,
    Normal,
    Full,
    Extra,
}

impl Synchronous {
    pub const ALL: [Synchronous; 4] = [Synchronous::Off, Synchronous::Normal, Synchronous::Full, Synchronous::Extra];

    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Off => "off",
            Synchronous::Normal => "normal",
            Synchronous::Full => "full",
            Synchronous::Extra => "extra",
        }
    }

    /// The level from the integer `PRAGMA synchronous` returns.
    pub fn from_level(level: i64) -> Option<Self> {
        Self::ALL.get(usize::try_from(level).ok()?).copied()
    }
}

macro_rules! str_enum {
    ($ty:ty, $what:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let lower = s.to_ascii_lowercase();
                Self::ALL.into_iter().find(|m| m.as_str() == lower).ok_or_else(|| {
                    let known: Vec<_> = Self::ALL.iter().map(|m| m.as_str()).collect();
                    format!("unknown {} `{s}` (expected one of {})", $what, known.join("|"))
                })
            }
        }
    };
}
str_enum!(JournalMode, "journal_mode");
str_enum!(Synchronous, "synchronous");

/// A config home that cannot be read or asks for something unknown. The
/// child reports it on stderr and exits 2 before any ready record.
#[derive(Debug, thiserror::Error)]
#[error("config {}: {message}", path.display())]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// What the config home asks for. `None` means "not set": the resolver decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DatabaseConfig {
    pub journal_mode: Option<JournalMode>,
    pub synchronous: Option<Synchronous>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    database: Option<RawDatabase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDatabase {
    journal_mode: Option<String>,
    synchronous: Option<String>,
}

impl DatabaseConfig {
    /// Reads the config of the home named by `$CRASHCELLS_HOME`; no variable
    /// or no file means the defaults.
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var_os(HOME_ENV) {
            None => Ok(Self::default()),
            Some(home) => Self::from_home(Path::new(&home)),
        }
    }

    /// Reads `<home>/config.toml`. The home must be a folder if it exists.
    pub fn from_home(home: &Path) -> Result<Self, ConfigError> {
        if home.exists() && !home.is_dir() {
            return Err(ConfigError { path: home.to_path_buf(), message: format!("{HOME_ENV} is not a folder") });
        }
        let path = home.join("config.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text).map_err(|message| ConfigError { path, message }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(ConfigError { path, message: e.to_string() }),
        }
    }

    /// Parses the text of a config file.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| e.message().to_string())?;
        let Some(db) = raw.database else { return Ok(Self::default()) };
        Ok(Self {
            journal_mode: db.journal_mode.as_deref().map(str::parse).transpose()?,
            synchronous: db.synchronous.as_deref().map(str::parse).transpose()?,
        })
    }

    /// The text of a config file that asks for this configuration.
    pub fn to_toml(self) -> String {
        let mut out = String::from("[database]\n");
        if let Some(m) = self.journal_mode {
            out.push_str(&format!("journal_mode = \"{m}\"\n"));
        }
        if let Some(s) = self.synchronous {
            out.push_str(&format!("synchronous = \"{s}\"\n"));
        }
        out
    }

    /// Writes the config file into `home`, creating the folder.
    pub fn write_home(self, home: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(home)?;
        let path = home.join("config.toml");
        std::fs::write(&path, self.to_toml())?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_journal_mode_and_level_parses() {
        for m in JournalMode::ALL {
            let c = DatabaseConfig::parse(&format!("[database]\njournal_mode = \"{m}\"\n")).unwrap();
            assert_eq!(c.journal_mode, Some(m));
        }
        for s in Synchronous::ALL {
            let c = DatabaseConfig::parse(&format!("[database]\nsynchronous = \"{s}\"\n")).unwrap();
            assert_eq!(c.synchronous, Some(s));
        }
    }

    #[test]
    fn absent_values_mean_the_resolver_decides() {
        assert_eq!(DatabaseConfig::parse("").unwrap(), DatabaseConfig::default());
        assert_eq!(DatabaseConfig::parse("[database]\n").unwrap(), DatabaseConfig::default());
    }

    #[test]
    fn unknown_values_are_errors_not_fallbacks() {
        let e = DatabaseConfig::parse("[database]\njournal_mode = \"wall\"\n").unwrap_err();
        assert!(e.contains("unknown journal_mode `wall`"), "{e}");
        let e = DatabaseConfig::parse("[database]\nsynchronous = \"fast\"\n").unwrap_err();
        assert!(e.contains("unknown synchronous `fast`"), "{e}");
        let e = DatabaseConfig::parse("[database]\njurnal_mode = \"wal\"\n").unwrap_err();
        assert!(e.contains("jurnal_mode"), "{e}");
    }

    #[test]
    fn round_trips_through_a_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let want = DatabaseConfig { journal_mode: Some(JournalMode::Persist), synchronous: Some(Synchronous::Extra) };
        want.write_home(&home).unwrap();
        assert_eq!(DatabaseConfig::from_home(&home).unwrap(), want);
    }

    #[test]
    fn a_home_that_is_a_file_is_an_error() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let e = DatabaseConfig::from_home(file.path()).unwrap_err().to_string();
        assert!(e.contains("is not a folder"), "{e}");
    }
}
