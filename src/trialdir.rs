//! One trial's world: a private folder with the database, the ack journal,
//! the fake transport (for a child that sends), the child's stderr and an
//! isolated config home, and what the workload was given that its judge
//! needs (its seed, the recovery step). A passing trial's folder is
//! removed; a fire's or an error's is kept as evidence. Low in the module
//! order: the pipeline makes trial folders, recovery reads them.

use std::path::{Path, PathBuf};

use crashcells_protocol::OpArgs;

use crate::matrix::Leg;

/// The child's stderr's name in its trial's folder: the one file beside the
/// store that is not the store's (the tracer leaves its writes out).
pub const STDERR: &str = "child.stderr";

/// Whether a file directly in a trial's folder is the harness's own and
/// not the store's: the child's and racers' stderr and stdout, ack
/// journals, a race's barrier locks and the notes evidence carries. Every
/// other file there is the store's (a crash state holds it; the tracer
/// counts its calls); the config home is a folder below, never the store's.
pub fn is_harness_file(name: &str) -> bool {
    const NOTES: [&str; 4] = ["kill-point.json", "fault.txt", "recorded-state.txt", "times.json"];
    let ends = |suffix| name.ends_with(suffix);
    ends(".stderr") || ends(".stdout") || ends(".lock") || name.starts_with("acks") || NOTES.contains(&name)
}

/// A trial's private folder.
#[derive(Debug)]
pub struct TrialEnv {
    dir: tempfile::TempDir,
    pub db: PathBuf,
    pub acks: PathBuf,
    pub home: PathBuf,
    pub stderr: PathBuf,
    /// The fake provider's log (`--transport`): the driver names it, the
    /// child appends a line per send, the judge reads it as the deliveries.
    pub transport: PathBuf,
    /// The workload's `--seed`, for an operation that takes one (`fork`):
    /// its judge replays the workload from it. 0 otherwise.
    pub seed: u64,
    /// The step each recovery pass runs to its end on its own copy of the
    /// crash state before `dump` (`catch-up`), with the flags it takes
    /// beyond `--db` and `--transport`; none for most cells.
    pub recovery_step: Option<OpArgs>,
}

impl TrialEnv {
    /// Makes the folder inside `root` and writes the leg's config into its home.
    pub fn new(root: &Path, leg: &Leg, label: &str) -> std::io::Result<TrialEnv> {
        let dir = tempfile::Builder::new().prefix(&format!("{label}-")).tempdir_in(root)?;
        let home = dir.path().join("home");
        leg.config().write_home(&home)?;
        Ok(TrialEnv {
            db: dir.path().join("store.db"),
            acks: dir.path().join("acks.ndjson"),
            stderr: dir.path().join(STDERR),
            transport: dir.path().join("transport.ndjson"),
            seed: 0,
            recovery_step: None,
            home,
            dir,
        })
    }

    /// The trial's folder: what a forked process may not hold open when it
    /// starts its operation.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Copies everything the trial left into `dest`, with what `add`
    /// writes beside it, then removes the folder. Evidence is kept whole or
    /// not at all: the copy is made in a hidden folder beside `dest` and
    /// renamed into place once complete, so that a full disk leaves no
    /// partial copy (the hidden folder goes with the error). `dest` must not
    /// exist yet: evidence is never merged into, or written over, another
    /// trial's or another run's.
    pub fn keep(self, dest: &Path, add: impl FnOnce(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
        let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        if dest.exists() {
            return Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "evidence already there"));
        }
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stage = tempfile::Builder::new().prefix(&format!(".{name}.partial-")).tempdir_in(parent)?;
        copy_tree(self.dir.path(), stage.path())?;
        add(stage.path())?;
        // Renamed away, the stage's own removal finds nothing to remove.
        std::fs::rename(stage.path(), dest)
    }
}

/// Copies the folder `from` into `to` (made if missing), files and
/// subfolders alike.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
