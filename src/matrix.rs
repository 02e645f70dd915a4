//! Journal-mode matrices: named lists of legs, each a journal mode and a
//! synchronous level to ask the child's resolver for, and the SQLite
//! library to put under the child (`sqlitelib`). Built-in matrices are
//! embedded; `--matrix PATH` reads a user's file.

use std::path::Path;

use crashcells_protocol::{DatabaseConfig, JournalMode, Synchronous};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sqlitelib::{Library, Placement};

const BUILT_IN: [(&str, &str); 3] = [
    ("default", include_str!("../matrices/default.toml")),
    ("audit", include_str!("../matrices/audit.toml")),
    ("libraries", include_str!("../matrices/libraries.toml")),
];

/// One leg: what the isolated config home asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leg {
    pub name: String,
    pub journal_mode: Option<JournalMode>,
    pub synchronous: Option<Synchronous>,
    /// The SQLite library the child is to load; `None`: whatever it links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlite: Option<Library>,
    /// Where this run put that library, and its version: set once per run
    /// ([`Matrix::place_libraries`]), read by the launcher and the leg audit.
    #[serde(skip)]
    pub placed: Option<Placement>,
}

impl Leg {
    /// A leg asking for a mode and a level, on the child's own library.
    pub fn new(name: &str, journal_mode: Option<JournalMode>, synchronous: Option<Synchronous>) -> Leg {
        Leg { name: name.into(), journal_mode, synchronous, sqlite: None, placed: None }
    }

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
    sqlite: Option<String>,
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
            if leg.sqlite.as_deref().is_some_and(|s| s.trim().is_empty()) {
                return Err(value_error("`sqlite` is `bundled` or the path of a library file, not empty".into()));
            }
            let sqlite = leg.sqlite.map(Library::from);
            legs.push(Leg { sqlite, ..Leg::new(&leg.name, journal_mode, synchronous) });
        }
        let name = raw.name.unwrap_or_else(|| fallback_name.to_string());
        Ok(Matrix { name, description: raw.description, legs })
    }

    /// Puts every library a leg asks for where its children load it from
    /// ([`place_libraries`]).
    pub fn place_libraries(&mut self, root: &Path) -> Result<()> {
        place_libraries(self.legs.iter_mut(), root)
    }

    /// The built-in matrices' names.
    pub fn built_in_names() -> impl Iterator<Item = &'static str> {
        BUILT_IN.iter().map(|(n, _)| *n)
    }
}

/// Puts every library the `legs` ask for in a folder of its own under
/// `root` (once per library), where a run's children load it from; each
/// such leg learns its [`Placement`]. A path that is no SQLite library is
/// bad input.
pub fn place_libraries<'a>(legs: impl IntoIterator<Item = &'a mut Leg>, root: &Path) -> Result<()> {
    let mut done: Vec<(Library, Placement)> = Vec::new();
    for leg in legs {
        let Some(lib) = &leg.sqlite else { continue };
        if let Some((_, p)) = done.iter().find(|(l, _)| l == lib) {
            leg.placed = Some(p.clone());
            continue;
        }
        let key = match lib {
            Library::Bundled => "bundled".to_string(),
            Library::Path(_) => done.len().to_string(),
        };
        let placed = crate::sqlitelib::place(lib, root, &key)?;
        done.push((lib.clone(), placed.clone()));
        leg.placed = Some(placed);
    }
    Ok(())
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

    #[test]
    fn the_libraries_matrix_runs_the_default_legs_on_both_libraries() {
        let m = Matrix::load("libraries").unwrap();
        let default = Matrix::load("default").unwrap();
        let own: Vec<_> = m.legs.iter().filter(|l| l.sqlite.is_none()).collect();
        let bundled: Vec<_> = m.legs.iter().filter(|l| l.sqlite == Some(Library::Bundled)).collect();
        assert_eq!(own.len(), default.legs.len());
        for (d, (o, b)) in default.legs.iter().zip(own.iter().zip(&bundled)) {
            assert_eq!((&o.name, o.journal_mode, o.synchronous), (&d.name, d.journal_mode, d.synchronous));
            assert_eq!((b.name.clone(), b.journal_mode), (format!("bundled-{}", d.name), d.journal_mode));
        }
        let e = error("[[legs]]\nname = \"x\"\nsqlite = \" \"\n");
        assert!(e.contains("leg `x`") && e.contains("`sqlite` is `bundled` or the path"), "{e}");
        let p = Matrix::parse("m.toml", "[[legs]]\nname = \"x\"\nsqlite = \"lib/s.so\"\n", "m").unwrap();
        assert_eq!(p.legs[0].sqlite, Some(Library::Path("lib/s.so".into())));
    }

    #[test]
    fn each_library_is_placed_once_and_a_leg_on_its_own_gets_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Matrix::load("libraries").unwrap();
        m.place_libraries(dir.path()).unwrap();
        let placed: Vec<_> = m.legs.iter().filter_map(|l| l.placed.clone()).collect();
        assert_eq!(placed.len(), 3);
        assert!(placed.iter().all(|p| p == &placed[0]), "one placement shared");
        assert!(m.legs.iter().filter(|l| l.sqlite.is_none()).all(|l| l.placed.is_none()));
        // None in the system-sqlite build, which has no bundled library.
        let folders = usize::from(matches!(placed[0], Placement::Placed(_)));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), folders, "one folder for the one library");
    }
}
