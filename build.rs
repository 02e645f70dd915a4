//! Embeds the cell catalog: every `cells/*.toml`, found here at build time,
//! so that adding a cell's file is all the catalog needs (no list to keep
//! in step). The generated file holds `EMBEDDED`, each file's name and
//! text, sorted by name; `src/catalog.rs` includes it.

use std::fmt::Write;
use std::path::Path;

fn main() {
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
