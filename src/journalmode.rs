//! The journal mode a child ran in, typed: as its own connection reported
//! it ([`ReportedMode`]) and as the leg audit found it ([`EffectiveMode`]).
//!
//! A leg asks for a [`JournalMode`], one SQLite has. What a child reports
//! is its word (`PRAGMA journal_mode`, lowercased), which may name no mode
//! SQLite has (a build's own `wal2`), and the audit may find it
//! contradicted by the files (`wal?`). Both are kept as said, so that a
//! report names what the child said, while every check compares the mode
//! ([`ReportedMode::mode`], [`EffectiveMode::mode`]), never the word. Each
//! reads and writes as its word, so reports and evidence keep their JSON.

use std::fmt;

use crashcells_protocol::JournalMode;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A journal mode as a child's connection reported it, lowercased.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReportedMode {
    /// A mode SQLite has.
    Known(JournalMode),
    /// A word that names none of SQLite's modes, as the child said it.
    Other(String),
}

impl ReportedMode {
    /// The mode `word` names, as written (a report's words are lowercase
    /// already: `WAL` is a word of a child's own, as it was before typing).
    pub fn of(word: &str) -> ReportedMode {
        match JournalMode::ALL.into_iter().find(|m| m.as_str() == word) {
            Some(m) => ReportedMode::Known(m),
            None => ReportedMode::Other(word.to_string()),
        }
    }

    /// What a child's ready record says it runs (its `journal_mode`,
    /// lowercased: SQLite answers `wal`, a store may echo `WAL`).
    pub fn said(journal_mode: &str) -> ReportedMode {
        ReportedMode::of(&journal_mode.to_ascii_lowercase())
    }

    /// The mode, when the word names one SQLite has.
    pub fn mode(&self) -> Option<JournalMode> {
        match self {
            ReportedMode::Known(m) => Some(*m),
            ReportedMode::Other(_) => None,
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ReportedMode::Known(m) => m.as_str(),
            ReportedMode::Other(w) => w,
        }
    }
}

impl From<JournalMode> for ReportedMode {
    fn from(m: JournalMode) -> ReportedMode {
        ReportedMode::Known(m)
    }
}

impl From<&str> for ReportedMode {
    fn from(word: &str) -> ReportedMode {
        ReportedMode::of(word)
    }
}

/// The mode a trial ran in, as far as the evidence agrees: the child's
/// word, or that word contradicted by the files beside the database.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EffectiveMode {
    /// The child's word, which the header and the journal files agree with.
    Agreed(ReportedMode),
    /// The child's word, which the files contradict: written `wal?`, and
    /// no mode any check may take for one the trial ran in.
    Contradicted(ReportedMode),
}

impl EffectiveMode {
    /// The mode the trial ran in: none where the evidence contradicts the
    /// child, or its word names no mode SQLite has.
    pub fn mode(&self) -> Option<JournalMode> {
        match self {
            EffectiveMode::Agreed(r) => r.mode(),
            EffectiveMode::Contradicted(_) => None,
        }
    }

    /// The child's word, whatever the files said of it.
    pub fn reported(&self) -> &ReportedMode {
        match self {
            EffectiveMode::Agreed(r) | EffectiveMode::Contradicted(r) => r,
        }
    }
}

impl From<JournalMode> for EffectiveMode {
    fn from(m: JournalMode) -> EffectiveMode {
        EffectiveMode::Agreed(m.into())
    }
}

/// A report's word read back: `wal?` is `wal` contradicted. Every word
/// reads back to the one written.
impl From<&str> for EffectiveMode {
    fn from(word: &str) -> EffectiveMode {
        match word.strip_suffix('?') {
            Some(said) => EffectiveMode::Contradicted(said.into()),
            None => EffectiveMode::Agreed(word.into()),
        }
    }
}

impl fmt::Display for ReportedMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for EffectiveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EffectiveMode::Agreed(r) => write!(f, "{r}"),
            EffectiveMode::Contradicted(r) => write!(f, "{r}?"),
        }
    }
}

/// Both serialize as their word, and read any word back.
macro_rules! as_word {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                Ok(<$ty>::from(String::deserialize(d)?.as_str()))
            }
        }
    };
}
as_word!(ReportedMode);
as_word!(EffectiveMode);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_a_mode_sqlite_has_or_the_childs_own() {
        assert_eq!(ReportedMode::said("WAL"), ReportedMode::Known(JournalMode::Wal));
        assert_eq!(ReportedMode::of("wal2").mode(), None);
        assert_eq!(ReportedMode::of("WAL"), ReportedMode::Other("WAL".into()), "a word is read as written");
        let contradicted = EffectiveMode::from("delete?");
        assert_eq!(contradicted, EffectiveMode::Contradicted(JournalMode::Delete.into()));
        assert_eq!((contradicted.mode(), contradicted.reported().mode()), (None, Some(JournalMode::Delete)));
        assert_eq!(EffectiveMode::from(JournalMode::Wal).mode(), Some(JournalMode::Wal));
    }

    #[test]
    fn every_word_reads_back_as_written() {
        for word in ["wal", "delete?", "wal2", "", "?", "x??", "Memory"] {
            let json = serde_json::to_string(word).unwrap();
            let effective: EffectiveMode = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&effective).unwrap(), json, "{word}");
            let reported: ReportedMode = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&reported).unwrap(), json, "{word}");
        }
    }
}
