//! SQLite's library as a leg: a matrix leg may name the SQLite library its
//! child links (`sqlite = "bundled"` or a path), so that a store behind the
//! system's `libsqlite3` runs on another SQLite without being rebuilt.
//!
//! Crash model: unchanged, the leg's; only the library under the child
//! differs. The library reaches a child that loads `libsqlite3.so.0`
//! dynamically (Python's `sqlite3`, anything linking the system library):
//! its folder goes first on the child's `LD_LIBRARY_PATH`. A child with
//! SQLite compiled in (the `better-sqlite3` module, the reference store)
//! never loads it. Which one ran is the child's own word: its ready record's
//! version and source id against the library's, read from the library
//! itself. A leg whose child ran another SQLite is not honored and skips:
//! it is no evidence for the library it advertises.

use std::ffi::{CStr, CString, OsString};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The name a child linking `libsqlite3` dynamically asks the loader for.
pub const SONAME: &str = "libsqlite3.so.0";

/// The variable that puts a folder's libraries first for the loader.
pub const LOADER_PATH: &str = "LD_LIBRARY_PATH";

/// crashcells' own SQLite (rusqlite's bundled amalgamation, its compile
/// options) as a shared library, linked by build.rs. None in the
/// `system-sqlite` build, which compiles no amalgamation.
#[cfg(bundled_sqlite_library)]
const BUNDLED: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/libsqlite3.so.0")));
#[cfg(not(bundled_sqlite_library))]
const BUNDLED: Option<&[u8]> = None;

/// The SQLite library a leg asks its child to load.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Library {
    /// crashcells' own, the version its reference store reports.
    Bundled,
    /// A library file, relative to the folder the run starts in.
    Path(PathBuf),
}

impl From<String> for Library {
    fn from(s: String) -> Library {
        match s.as_str() {
            "bundled" => Library::Bundled,
            _ => Library::Path(PathBuf::from(s)),
        }
    }
}

impl From<Library> for String {
    fn from(l: Library) -> String {
        l.to_string()
    }
}

impl std::fmt::Display for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Library::Bundled => f.write_str("bundled"),
            Library::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A library put where a child will load it, and who it says it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The folder holding it as [`SONAME`].
    pub dir: PathBuf,
    /// `sqlite3_libversion()` and `sqlite3_sourceid()`.
    pub version: String,
    pub source_id: String,
}

/// What became of a leg's library in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    Placed(Placed),
    /// Why this build has no such library: the leg skips, saying so.
    Unavailable(String),
}

impl Placed {
    /// The loader path a child gets: this folder first, then the driver's own.
    pub fn loader_path(&self) -> OsString {
        let mut path = self.dir.clone().into_os_string();
        if let Some(old) = std::env::var_os(LOADER_PATH).filter(|o| !o.is_empty()) {
            path.push(":");
            path.push(old);
        }
        path
    }
}

/// Puts `lib` in a folder of its own under `root` (named by `key`, a
/// folder-safe word) as [`SONAME`], and reads its version from it. A path
/// that is no SQLite library is bad input; `bundled` in a build without it
/// is [`Placement::Unavailable`].
pub fn place(lib: &Library, root: &Path, key: &str) -> Result<Placement> {
    let dir = root.join(format!("sqlite-{key}"));
    let file = dir.join(SONAME);
    let bad = |why: String| Error::Usage(format!("sqlite library `{lib}`: {why}"));
    match lib {
        Library::Bundled => {
            let Some(bytes) = BUNDLED else {
                let why = "this crashcells was built without its bundled SQLite (the system-sqlite build)";
                return Ok(Placement::Unavailable(why.into()));
            };
            std::fs::create_dir_all(&dir).map_err(Error::io("library folder", &dir))?;
            std::fs::write(&file, bytes).map_err(Error::io("bundled SQLite library", &file))?;
        }
        Library::Path(p) => {
            let real = std::fs::canonicalize(p).map_err(|e| bad(e.to_string()))?;
            std::fs::create_dir_all(&dir).map_err(Error::io("library folder", &dir))?;
            std::os::unix::fs::symlink(&real, &file).map_err(Error::io("library link", &file))?;
        }
    }
    let (version, source_id) = identify(&file).map_err(bad)?;
    Ok(Placement::Placed(Placed { dir, version, source_id }))
}

/// The library's own `sqlite3_libversion()` and `sqlite3_sourceid()`,
/// loaded apart from this process's SQLite (`RTLD_LOCAL`) and unloaded.
fn identify(file: &Path) -> std::result::Result<(String, String), String> {
    let name = CString::new(file.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: dlopen of a file we just placed; the handle is closed below.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!("not a loadable library: {}", dl_error()));
    }
    let got = call(handle, c"sqlite3_libversion").and_then(|v| Ok((v, call(handle, c"sqlite3_sourceid")?)));
    // SAFETY: the handle is dlopen's, closed once; no pointer into it outlives this (the strings were copied).
    unsafe { libc::dlclose(handle) };
    got
}

/// Calls one of SQLite's `const char *f(void)` functions and copies its answer.
fn call(handle: *mut libc::c_void, symbol: &CStr) -> std::result::Result<String, String> {
    // SAFETY: dlsym on a live handle.
    let f = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
    if f.is_null() {
        return Err(format!("not a SQLite library: no `{}`", symbol.to_string_lossy()));
    }
    // SAFETY: SQLite's API gives these two functions this signature; they
    // return a static NUL-terminated string.
    let text = unsafe {
        let f: extern "C" fn() -> *const libc::c_char = std::mem::transmute(f);
        CStr::from_ptr(f()).to_string_lossy().into_owned()
    };
    Ok(text)
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call.
    let e = unsafe { libc::dlerror() };
    if e.is_null() { "unknown error".into() } else { unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned() }
}

/// Why a child that reported SQLite `version` (and `source_id`, if it
/// says) did not run the library the leg asked for; `None` when it did.
pub fn not_loaded(lib: &Library, placement: &Placement, version: &str, source_id: Option<&str>) -> Option<String> {
    let placed = match placement {
        Placement::Unavailable(why) => return Some(format!("requested SQLite library {lib}, but {why}")),
        Placement::Placed(p) => p,
    };
    let same = version == placed.version && source_id.is_none_or(|s| s == placed.source_id);
    let ran = match source_id {
        Some(id) if version == placed.version => format!("SQLite {version} ({id})"),
        _ => format!("SQLite {version}"),
    };
    (!same).then(|| {
        format!(
            "requested SQLite library {lib} ({}), child ran {ran}: it did not load the library \
             (SQLite compiled in, or a loader that ignores {LOADER_PATH})",
            placed.version
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(version: &str, id: &str) -> Placement {
        Placement::Placed(Placed { dir: "/l".into(), version: version.into(), source_id: id.into() })
    }

    #[test]
    fn a_library_is_bundled_or_a_path_and_reads_back_as_written() {
        assert_eq!(Library::from("bundled".to_string()), Library::Bundled);
        assert_eq!(Library::from("lib/x.so".to_string()), Library::Path("lib/x.so".into()));
        assert_eq!(Library::Path("lib/x.so".into()).to_string(), "lib/x.so");
    }

    #[test]
    fn a_child_that_ran_another_sqlite_did_not_load_the_library() {
        let lib = Library::Bundled;
        assert_eq!(not_loaded(&lib, &placed("3.54.1", "id1"), "3.54.1", Some("id1")), None);
        assert_eq!(not_loaded(&lib, &placed("3.54.1", "id1"), "3.54.1", None), None, "no source id: the version");
        let why = not_loaded(&lib, &placed("3.54.1", "id1"), "3.40.1", Some("id0")).unwrap();
        assert_eq!(
            why,
            "requested SQLite library bundled (3.54.1), child ran SQLite 3.40.1: it did not load the library \
             (SQLite compiled in, or a loader that ignores LD_LIBRARY_PATH)"
        );
        let why = not_loaded(&lib, &placed("3.54.1", "id1"), "3.54.1", Some("id2")).unwrap();
        assert!(why.contains("child ran SQLite 3.54.1 (id2)"), "{why}");
        let why = not_loaded(&lib, &Placement::Unavailable("no build".into()), "3.54.1", None).unwrap();
        assert_eq!(why, "requested SQLite library bundled, but no build");
    }

    #[test]
    fn the_bundled_library_is_placed_and_says_its_version() {
        let dir = tempfile::tempdir().unwrap();
        match place(&Library::Bundled, dir.path(), "bundled").unwrap() {
            Placement::Placed(p) => {
                assert!(p.dir.join(SONAME).is_file());
                assert!(crashcells_protocol::SqliteVersion::parse(&p.version).is_some(), "{}", p.version);
                assert!(p.source_id.len() > 20, "{}", p.source_id);
                assert!(p.loader_path().to_string_lossy().starts_with(&*p.dir.to_string_lossy()));
            }
            Placement::Unavailable(why) => assert!(BUNDLED.is_none(), "{why}"),
        }
    }

    #[test]
    fn a_path_that_is_no_sqlite_library_is_bad_input_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = place(&Library::Path("no/such.so".into()), dir.path(), "0").unwrap_err().to_string();
        assert!(e.starts_with("sqlite library `no/such.so`:"), "{e}");
        let text = dir.path().join("text.so");
        std::fs::write(&text, "not a library").unwrap();
        let e = place(&Library::Path(text), dir.path(), "1").unwrap_err().to_string();
        assert!(e.contains("not a loadable library"), "{e}");
    }
}
