//! The suite's one skip policy (`crashcells::testskip`), checked on the
//! source: a test that stops early because something is missing goes through
//! `skip_or_fail` (or `common::tracing_refused`, which calls it), which
//! fails under CI; a test that prints its own skip line, or returns quietly
//! on a missing prerequisite, passes in CI without having tested anything.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Words in an `if`'s condition that say it tests for a prerequisite.
const PREREQUISITES: [&str; 8] =
    ["skip", "unsupported_arch", "allowed", "fetched", "python3", "chromium", "is_file", "affected"];

/// The helpers that implement the policy: a skip through them is the policy.
const HELPERS: [&str; 2] = ["skip_or_fail", "tracing_refused"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The functions of `text` whose body calls a helper: a condition that
/// calls one of them (from any file) has said why already.
fn wrappers(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("fn ").or_else(|| line.trim_start().strip_prefix("pub fn "))
        {
            current = rest.split('(').next().map(str::to_string);
        }
        if let Some(name) = &current
            && HELPERS.iter().any(|h| line.contains(h))
            && !names.contains(name)
        {
            names.push(name.clone());
        }
    }
    names
}

/// Where `text` skips outside the policy: a skip line printed by hand, a
/// refused trace ignored, or an `if` on a prerequisite whose body only returns.
fn violations(file: &str, text: &str, wrapped: &[String]) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let at = format!("{file}:{}: {}", i + 1, line.trim());
        let lower = line.to_lowercase();
        if lower.contains("eprintln!") && (lower.contains("skip") || lower.contains("refused here")) {
            found.push(at.clone());
        }
        if line.contains("NotPermitted(_)) => return") {
            found.push(at.clone());
        }
        let next = lines.get(i + 1).map(|l| l.trim());
        let quiet = matches!(next, Some("return;" | "return None;"));
        let condition = line.trim_start().starts_with("if ") && line.trim_end().ends_with('{');
        let prerequisite = PREREQUISITES.iter().any(|w| line.contains(w));
        let said = HELPERS.iter().copied().chain(wrapped.iter().map(String::as_str)).any(|h| line.contains(h));
        if condition && quiet && prerequisite && !said {
            found.push(at);
        }
    }
    found
}

#[test]
fn no_test_skips_but_through_the_one_policy() {
    let mut files = Vec::new();
    for dir in ["src", "tests", "child-bin"] {
        let dir = Path::new(ROOT).join(dir);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|p| (p.strip_prefix(ROOT).unwrap().display().to_string(), std::fs::read_to_string(p).unwrap()))
        .filter(|(file, _)| file != "src/testskip.rs" && file != "tests/skips.rs")
        .collect();
    let wrapped: Vec<String> = texts.iter().flat_map(|(_, text)| wrappers(text)).collect();
    let found: Vec<String> = texts.iter().flat_map(|(file, text)| violations(file, text, &wrapped)).collect();
    assert!(found.is_empty(), "tests that skip outside crashcells::testskip::skip_or_fail:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_each_kind_of_quiet_skip() {
    let printed = "    if !there {\n        eprintln!(\"{test}: skipped: no wheel\");\n    }\n";
    let ignored = "        Err(TraceError::NotPermitted(_)) => return,\n";
    let quiet = "    if r[\"verdict\"] == \"skip\" {\n        return;\n    }\n";
    for text in [printed, ignored, quiet] {
        assert_eq!(violations("x.rs", text, &[]).len(), 1, "{text}");
    }
    let said = "fn fetched() -> bool {\n    skip_or_fail(Need::HermesWheel, \"x\");\n    true\n}\n\
                fn t() {\n    if !fetched() {\n        return;\n    }\n}\n";
    assert_eq!(violations("x.rs", said, &wrappers(said)), Vec::<String>::new());
}
