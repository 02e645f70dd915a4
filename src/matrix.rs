//! Journal-mode matrices: named lists of legs, each a journal mode and a
//! synchronous level to ask the child's resolver for. Built-in matrices are
//! embedded; `--matrix PATH` reads a user's file.

use std::path::Path;

use crashcells_protocol::{DatabaseConfig, JournalMode, Synchronous};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const BUILT_IN: [(&str, &str); 2] =
    [("default", include_str!("../matrices/default.toml")), ("audit", include_str!("../matrices/audit.toml"))];

/// One leg: what the isolated config home asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leg {
    pub name: String,
    pub journal_mode: Option<JournalMode>,
    pub synchronous: Option<Synchronous>,
}

impl Leg {
    pub fn config(&self) -> DatabaseConfig {
        DatabaseConfig { journal_mode: self.journal_mode, synchronous: self.synchronous }
    }

    /// True for the leg that leaves the journal mode to the resolver.
    pub fn is_resolver_default(&self) -> bool {
        self.journal_mode.is_none()
    }
}

#[derive(Clone, Debug)]
pub struct Matrix {
    /// The name a report shows: the built-in name, or the path given.
    pub name: String,
    pub description: String,
    pub legs: Vec<Leg>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    legs: Vec<RawLeg>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLeg {
    name: String,
    journal_mode: Option<String>,
    synchronous: Option<String>,
}

/// Letters, digits, `.`, `_` and `-`, not starting with `-` or `.`.
fn valid_leg_name(name: &str) -> bool {
    name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) && !name.starts_with(['-', '.'])
}

impl Matrix {
    /// A built-in matrix by name, or a file by path (anything with a `/` or
    /// ending in `.toml`).
    pub fn load(key: &str) -> Result<Matrix> {
        if let Some((_, text)) = BUILT_IN.iter().find(|(name, _)| *name == key) {
            return Self::parse(key, text, key);
        }
        if key.contains('/') || key.ends_with(".toml") || Path::new(key).is_file() {
            let text = std::fs::read_to_string(key).map_err(Error::io("matrix file", key))?;
            return Self::parse(key, &text, key);
        }
        let known: Vec<_> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        Err(Error::Usage(format!(
            "unknown matrix `{key}`{} (built in: {}; or give a path to a .toml file)",
            crate::suggest::did_you_mean(key, &known),
            known.join(", ")
        )))
    }

    fn parse(file: &str, text: &str, fallback_name: &str) -> Result<Matrix> {
        let bad = |message: String| Error::Matrix { file: file.to_string(), message };
        let raw: RawMatrix = toml::from_str(text).map_err(|e| bad(crate::error::toml_message(&e)))?;
        if raw.legs.is_empty() {
            return Err(bad("no legs: a matrix needs at least one [[legs]] entry".into()));
        }
        let mut legs: Vec<Leg> = Vec::new();
        for leg in raw.legs {
            let value_error = |m: String| bad(format!("leg `{}`: {m}", leg.name));
            if leg.name.trim().is_empty() {
                return Err(bad("a leg has an empty name".into()));
            }
            // Leg names become folder names and repro words: two names that
            // map to one folder, or a `/`, would mix trials of different legs.
            if !valid_leg_name(&leg.name) {
                return Err(bad(format!(
                    "leg `{}`: a leg name is letters, digits, `.`, `_` and `-`, not starting with `-` or `.`",
                    leg.name
                )));
            }
            if legs.iter().any(|l| l.name == leg.name) {
                return Err(bad(format!("duplicate leg name `{}`", leg.name)));
            }
            let journal_mode = leg.journal_mode.as_deref().map(str::parse).transpose().map_err(value_error)?;
            let synchronous = leg.synchronous.as_deref().map(str::parse).transpose().map_err(value_error)?;
            legs.push(Leg { name: leg.name, journal_mode, synchronous });
        }
        let name = raw.name.unwrap_or_else(|| fallback_name.to_string());
        Ok(Matrix { name, description: raw.description, legs })
    }

    /// The built-in matrices' names.
    pub fn built_in_names() -> impl Iterator<Item = &'static str> {
        BUILT_IN.iter().map(|(n, _)| *n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matrix_is_the_ci_gate() {
        let m = Matrix::load("default").unwrap();
        let legs: Vec<_> = m.legs.iter().map(|l| (l.name.as_str(), l.journal_mode)).collect();
        assert_eq!(legs, [("default", None), ("delete", Some(JournalMode::Delete)), ("wal", Some(JournalMode::Wal))]);
    }

    #[test]
    fn audit_matrix_covers_every_mode() {
        let m = Matrix::load("audit").unwrap();
        for mode in JournalMode::ALL {
            assert!(m.legs.iter().any(|l| l.journal_mode == Some(mode)), "{mode}");
        }
    }

    fn error(text: &str) -> String {
        Matrix::parse("m.toml", text, "m").unwrap_err().to_string()
    }

    #[test]
    fn malformed_matrices_name_file_leg_and_value() {
        assert!(error("legs = [").starts_with("matrix m.toml:"));
        let e = error("[[legs]]\nname = \"x\"\njournal_mode = \"wall\"\n");
        assert!(e.contains("leg `x`") && e.contains("`wall`"), "{e}");
        let e = error("[[legs]]\nname = \"x\"\nsynchronous = \"fast\"\n");
        assert!(e.contains("leg `x`") && e.contains("`fast`"), "{e}");
        let e = error("[[legs]]\nname = \"x\"\n[[legs]]\nname = \"x\"\n");
        assert!(e.contains("duplicate leg name `x`"), "{e}");
        assert!(error("name = \"e\"\n").contains("no legs"));
        for bad in ["a/b", "x y", "-", "..", "wal\u{e9}"] {
            let e = error(&format!("[[legs]]\nname = \"{bad}\"\n"));
            assert!(e.contains("a leg name is letters"), "{bad}: {e}");
        }
        assert!(Matrix::load("nonesuch").unwrap_err().to_string().contains("unknown matrix `nonesuch`"));
    }
}
