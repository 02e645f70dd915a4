//! Two build steps. The cell catalog: every `cells/*.toml`, found here at
//! build time, so that adding a cell's file is all the catalog needs (no
//! list to keep in step); the generated file holds `EMBEDDED`, each file's
//! name and text, sorted by name; `src/catalog.rs` includes it. And the
//! bundled SQLite as a shared library ([`bundled_library`]), which
//! `src/sqlitelib.rs` embeds for a leg with `sqlite = "bundled"`. And the
//! build's commit ([`build_commit`]), which `--version` and every report name.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The name a child linking `libsqlite3` dynamically asks the loader for.
const SONAME: &str = "libsqlite3.so.0";

fn main() {
    embed_cells();
    bundled_library();
    build_commit();
}

fn embed_cells() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("cells");
    // A directory: cargo reruns this script when any file in it changes.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the cell catalog {}: {e}", dir.display()))
        .map(|e| e.expect("a readable catalog entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut out = String::from("/// Every `cells/*.toml`, by file name, found by `build.rs`.\n");
    writeln!(out, "pub(crate) const EMBEDDED: &[(&str, &str)] = &[").unwrap();
    for path in &files {
        let name = path.file_name().expect("a file").to_string_lossy();
        writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string()).unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("embedded_cells.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}

/// The commit this build is of, as `CRASHCELLS_COMMIT` for `--version` and
/// every report: `git rev-parse --short HEAD`, or `unknown` where there is
/// no git or no checkout (an installed crate). Never a failed build. Cargo
/// reruns it when HEAD moves: HEAD itself (a checkout of another branch)
/// and the ref it points at (a commit on this branch).
fn build_commit() {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CRASHCELLS_COMMIT={commit}");
    // Only files that exist: cargo reruns a script whose watched file is
    // missing on every build (a branch whose ref is packed has no file).
    let watch = |path: Option<String>| {
        if let Some(p) = path.filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    };
    watch(git(&["rev-parse", "--git-path", "HEAD"]));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(git(&["rev-parse", "--git-path", &branch]));
    }
    watch(git(&["rev-parse", "--git-path", "packed-refs"]));
}

/// Links the amalgamation libsqlite3-sys already compiled (its `lib_dir`,
/// the `bundled` feature: rusqlite's own compile options) into a shared
/// library named [`SONAME`], and sets `cfg(bundled_sqlite_library)`. Only a
/// link, under a second: the C compile is the one `cargo build` pays anyway.
/// Without that archive (the `system-sqlite` build) or a linker that takes
/// it, there is no such library, and a `bundled` leg skips saying why.
fn bundled_library() {
    println!("cargo::rustc-check-cfg=cfg(bundled_sqlite_library)");
    println!("cargo:rerun-if-env-changed=DEP_SQLITE3_LIB_DIR");
    let Some(dir) = std::env::var_os("DEP_SQLITE3_LIB_DIR") else { return };
    let archive = Path::new(&dir).join("libsqlite3.a");
    if !archive.is_file() {
        return;
    }
    println!("cargo:rerun-if-changed={}", archive.display());
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join(SONAME);
    match link(&archive, &out) {
        Ok(()) => println!("cargo:rustc-cfg=bundled_sqlite_library"),
        Err(why) => println!("cargo:warning=no bundled SQLite library for `sqlite = \"bundled\"` legs: {why}"),
    }
}

/// `cc -shared` over the whole archive; `-s` drops the static symbols and
/// debug information, never the exported functions a child calls.
fn link(archive: &Path, out: &Path) -> Result<(), String> {
    let compiler = cc::Build::new().cargo_metadata(false).try_get_compiler().map_err(|e| e.to_string())?;
    let mut cmd: Command = compiler.to_command();
    cmd.arg("-shared").arg("-o").arg(out).arg(format!("-Wl,-soname,{SONAME}")).arg("-s");
    cmd.arg("-Wl,--whole-archive").arg(archive).arg("-Wl,--no-whole-archive");
    cmd.args(["-lm", "-lpthread", "-ldl"]);
    let done = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    match done.status.success() && out.is_file() {
        true => Ok(()),
        false => Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&done.stderr).trim())),
    }
}
