//! The cell catalog: one TOML file per cell in `cells/`, embedded at build
//! time (build.rs finds every `cells/*.toml`: a new cell's file is all it
//! needs) and replaceable with `--catalog DIR`. It drives `list` and the plan.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, toml_message};

// `EMBEDDED`: every file of `cells/`, found at build time (build.rs).
include!(concat!(env!("OUT_DIR"), "/embedded_cells.rs"));

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Live,
    Stub,
}

/// Which legs of a matrix a cell runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Legs {
    /// Every leg of the matrix.
    All,
    /// Only the leg that leaves the journal mode to the resolver.
    Default,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Acknowledged operations before a timed kill.
    pub window: Option<u64>,
    /// Trials per result.
    pub trials: Option<u32>,
    /// Racing processes per race.
    pub racers: Option<u32>,
    /// Races per result.
    pub races: Option<u32>,
    /// Racing processes in each race of a syscall sweep: the killed
    /// claimant and the ones that race for what it left (contention is the
    /// plain races' job, with `racers`). [`DEFAULT_SWEEP_RACERS`] if unset.
    pub sweep_racers: Option<u32>,
    /// Operations of a syscall or power sweep's workload: the child runs
    /// them (`--stop-after`) to its own end, and every crash state on the
    /// way, its close included, is checked.
    pub sweep_ops: Option<u64>,
    /// On a WAL leg, a sweep's workload runs on past `sweep_ops`, doubling,
    /// until it crosses the store's first automatic checkpoint and the WAL's
    /// restart, at most this many operations (at the store's own settings:
    /// the driver never changes its `wal_autocheckpoint`).
    pub checkpoint_ops: Option<u64>,
    /// Appends each writer makes in a timed trial of concurrent writers
    /// (cell 6, `co-append --stop-after`): more than the window and a half,
    /// so that the kill lands while r0 still appends.
    pub appends: Option<u64>,
}

/// Racers in a syscall sweep's race when the catalog does not say: r0, and
/// two that race for what its kill left (two can both win; more add
/// processes, not cases).
pub const DEFAULT_SWEEP_RACERS: u32 = 3;

impl Params {
    /// Racers in a syscall sweep's race: `sweep_racers`, or the default.
    pub fn sweep_racers(&self) -> u32 {
        self.sweep_racers.unwrap_or(DEFAULT_SWEEP_RACERS)
    }
}

/// One cell as the catalog describes it (its TOML file): what it checks,
/// where it runs, its parameters. Its probe is in [`crate::cells`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    pub number: u32,
    pub id: String,
    pub clause: String,
    pub origin: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub legs: Legs,
    #[serde(default)]
    pub params: Params,
    /// The file it was read from, for messages (`1-prefix-durability.toml`
    /// for the embedded catalog, the path given under `--catalog`).
    #[serde(skip)]
    pub file: String,
}

impl CellSpec {
    fn validate(self, file: &str) -> Result<CellSpec> {
        let bad = |message: String| Err(Error::Catalog { file: file.to_string(), message });
        if self.status == Status::Stub && self.reason.is_none() {
            return bad("field `reason`: a stub must say why it is a stub".into());
        }
        if self.id.is_empty() || !self.id.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit()) {
            return bad(format!("field `id`: `{}` is not a lowercase-dashed name", self.id));
        }
        let sweep_ops = self.params.sweep_ops.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        for (name, value) in [
            ("trials", self.params.trials),
            ("racers", self.params.racers),
            ("races", self.params.races),
            ("sweep_racers", self.params.sweep_racers),
            ("sweep_ops", sweep_ops),
        ] {
            if value == Some(0) {
                return bad(format!("field `params.{name}`: must be at least 1"));
            }
        }
        if let (Some(most), Some(ops)) = (self.params.checkpoint_ops, self.params.sweep_ops)
            && most < ops
        {
            return bad(format!("field `params.checkpoint_ops`: {most} is fewer than sweep_ops ({ops})"));
        }
        Ok(self)
    }
}

/// The cells, sorted by number.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub cells: Vec<CellSpec>,
}

impl Catalog {
    /// The catalog embedded in the binary.
    pub fn embedded() -> Result<Catalog> {
        Self::from_files(EMBEDDED.iter().map(|(f, t)| (f.to_string(), t.to_string())))
    }

    /// The catalog of `--catalog DIR` if given, else the embedded one.
    pub fn load(dir: Option<&Path>) -> Result<Catalog> {
        dir.map_or_else(Catalog::embedded, Catalog::from_dir)
    }

    /// Every `*.toml` in `dir`.
    pub fn from_dir(dir: &Path) -> Result<Catalog> {
        let entries = std::fs::read_dir(dir).map_err(Error::io("catalog folder", dir))?;
        let mut files = Vec::new();
        for entry in entries {
            let path = entry.map_err(Error::io("catalog folder", dir))?.path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).map_err(Error::io("catalog file", &path))?;
                files.push((path.display().to_string(), text));
            }
        }
        if files.is_empty() {
            return Err(Error::Catalog { file: dir.display().to_string(), message: "no *.toml cell files".into() });
        }
        Self::from_files(files.into_iter())
    }

    pub(crate) fn from_files(files: impl Iterator<Item = (String, String)>) -> Result<Catalog> {
        let mut cells: Vec<CellSpec> = Vec::new();
        for (file, text) in files {
            let cell: CellSpec =
                toml::from_str(&text).map_err(|e| Error::Catalog { file: file.clone(), message: toml_message(&e) })?;
            let mut cell = cell.validate(&file)?;
            cell.file = file.clone();
            if let Some(twin) = cells.iter().find(|c| c.id == cell.id || c.number == cell.number) {
                let message =
                    format!("cell {} `{}` clashes with cell {} `{}`", cell.number, cell.id, twin.number, twin.id);
                return Err(Error::Catalog { file, message });
            }
            cells.push(cell);
        }
        cells.sort_by_key(|c| c.number);
        Ok(Catalog { cells })
    }

    /// Finds a cell by id or number.
    pub fn find(&self, key: &str) -> Result<&CellSpec> {
        self.cells.iter().find(|c| c.id == key || c.number.to_string() == key).ok_or_else(|| {
            // Numbers are accepted as well as ids, so both are listed.
            let known: Vec<_> = self.cells.iter().map(|c| format!("{} {}", c.number, c.id)).collect();
            let ids: Vec<&str> = self.cells.iter().map(|c| c.id.as_str()).collect();
            let near = crate::suggest::did_you_mean(key, &ids);
            Error::Usage(format!("unknown cell `{key}`{near} (known: {})", known.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_catalog_is_sorted_by_number_and_finds_each_cell_by_id_or_number() {
        let c = Catalog::embedded().unwrap();
        assert!(!c.cells.is_empty(), "build.rs found no cells/*.toml");
        assert!(c.cells.windows(2).all(|w| w[0].number < w[1].number), "sorted by number, each once");
        for cell in &c.cells {
            assert_eq!(c.find(&cell.number.to_string()).unwrap(), cell);
            assert_eq!(c.find(&cell.id).unwrap(), cell);
            assert_eq!(cell.file, format!("{}-{}.toml", cell.number, cell.id), "a cell's file is cells/N-ID.toml");
        }
        assert!(c.find("nope").unwrap_err().to_string().contains("unknown cell `nope`"));
        let e = c.find("999").unwrap_err().to_string();
        let first = &c.cells[0];
        let listed = format!("(known: {} {}", first.number, first.id);
        assert!(e.contains("unknown cell `999`") && e.contains(&listed), "numbers are listed too: {e}");
    }

    fn parse_one(text: &str) -> String {
        Catalog::from_files([("x.toml".to_string(), text.to_string())].into_iter()).unwrap_err().to_string()
    }

    #[test]
    fn malformed_files_name_the_file_and_field() {
        let e = parse_one("number = 1\nid = \"a\"\n");
        assert!(e.starts_with("catalog x.toml:") && e.contains("clause"), "{e}");
        let base = "number = 1\nid = \"a\"\nclause = \"c\"\norigin = \"o\"\nlegs = \"all\"\n";
        let e = parse_one(&format!("{base}status = \"stub\"\n"));
        assert!(e.contains("field `reason`"), "{e}");
        let e = parse_one(&format!("{base}status = \"live\"\n[params]\ntrials = 0\n"));
        assert!(e.contains("params.trials"), "{e}");
        let e = parse_one(&format!("{base}status = \"alive\"\n"));
        assert!(e.contains("alive"), "{e}");
    }
}
