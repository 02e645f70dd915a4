//! The reference store's resolver, at the version of SQLite this process is
//! linked against: the rule itself is the protocol's
//! (`crashcells_protocol::resolver`), shared with the libraries' corpus.

pub use crashcells_protocol::resolver::{DEFAULT_MODE, resolve};
pub use crashcells_protocol::{SqliteVersion, wal_reset_affected};

/// The version of the library this process is linked against.
pub fn linked() -> SqliteVersion {
    SqliteVersion::from_number(rusqlite::version_number())
}
