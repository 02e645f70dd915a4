//! How a reason line quotes a child's stderr: the store's own last error
//! line first (a Python traceback's final `SomeError: ...`, a Node
//! `Error: ...`, a Go or Rust `panic: ...`, SQLite's `Error: ...`), then
//! the last lines, the whole capped at about [`CAP`] characters. Every
//! site that quotes a child's stderr comes through [`quote`] (the
//! harness's `stderr_tail`), so that one error line is one line a person
//! reads: a child that prints a 131 KB line once made a 131 KB error.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most characters a quote of a child's stderr takes.
pub const CAP: usize = 300;

/// How many of the last non-empty lines the tail keeps.
const TAIL_LINES: usize = 3;

/// How much of the end of a stderr file is read: the end is what is
/// quoted, and a child that wrote megabytes must not cost their reading.
const READ_AT_MOST: u64 = 64 * 1024;

/// The quote of the stderr file at `path` (empty for a missing or empty
/// file), read from its last [`READ_AT_MOST`] bytes.
pub fn quote_file(path: &Path) -> String {
    let Ok(mut file) = std::fs::File::open(path) else { return String::new() };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(len.saturating_sub(READ_AT_MOST))).is_err() || file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    quote(&String::from_utf8_lossy(&bytes))
}

/// `text` (a child's stderr) as one capped line: its last error line,
/// then its last lines (without the error line again), joined by ` | `.
pub fn quote(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let error = lines.iter().rposition(|l| looks_like_error(l));
    let tail_from = lines.len().saturating_sub(TAIL_LINES);
    let tail = (tail_from..lines.len()).filter(|&i| Some(i) != error).map(|i| lines[i]);
    let parts: Vec<&str> = error.map(|i| lines[i]).into_iter().chain(tail).collect();
    cap(&parts.join(" | "), CAP)
}

/// The store's own error line a quote leads with ([`quote`] puts the last
/// one first), if the quote has one: where a reason says what the store
/// said, it says this first (#53: a store failure's own error sat about 300
/// characters in, behind the harness's words and an ORM's text).
pub fn leading_error(quoted: &str) -> Option<&str> {
    let first = quoted.split(" | ").next()?;
    looks_like_error(first).then_some(first)
}

/// Whether a line is a store's own error, as its runtime prints one:
/// `SomeError: why` or `some.module.SomeException: why` (Python, Node,
/// Java), `Error: why`, `panic: why` (Go), `thread '...' panicked at`
/// (Rust), `fatal error: why`.
fn looks_like_error(line: &str) -> bool {
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") || line.contains("' panicked at ") {
        return true;
    }
    let Some((head, _)) = line.split_once(": ") else { return false };
    let name = head.rsplit('.').next().unwrap_or(head);
    let word = !head.is_empty() && head.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    word && (name.ends_with("Error") || name.ends_with("Exception") || name == "Error")
}

/// `s` cut to at most `most` characters, on a character boundary, with an
/// ellipsis where it was cut.
pub fn cap(s: &str, most: usize) -> String {
    if s.chars().count() <= most {
        return s.to_string();
    }
    let kept: String = s.chars().take(most.saturating_sub(1)).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"store.py\", line 40, in append\n    \
        db.execute(sql)\nsqlite3.OperationalError: database or disk is full\n";

    /// A Python traceback's last line is its error: it comes first, and
    /// is not said twice.
    #[test]
    fn a_python_traceback_is_quoted_by_its_error_line() {
        let q = quote(TRACEBACK);
        assert!(q.starts_with("sqlite3.OperationalError: database or disk is full"), "{q}");
        assert_eq!(q.matches("database or disk is full").count(), 1, "{q}");
    }

    /// An error line before noise the store printed after it still comes first.
    #[test]
    fn the_error_line_comes_first_before_later_noise() {
        let text = "starting\nTypeError: cannot read properties of undefined\n    at append (store.js:3:9)\n    \
            at main (store.js:9:1)\n    at node:internal/main:1:1\nexiting\n";
        let q = quote(text);
        assert!(q.starts_with("TypeError: cannot read properties of undefined | "), "{q}");
        assert!(q.ends_with("exiting"), "{q}");
        let go = quote("goroutine 1 [running]:\npanic: runtime error: index out of range\nmain.main()\n\t/x.go:3\n");
        assert!(go.starts_with("panic: runtime error"), "{go}");
        let rust = quote("thread 'main' panicked at src/main.rs:3:5:\nNo space left on device\nnote: run with\n");
        assert!(rust.starts_with("thread 'main' panicked at"), "{rust}");
    }

    /// The error line a quote leads with is found again; a quote without
    /// one has none.
    #[test]
    fn the_leading_error_line_is_the_quotes_first_part_when_it_is_an_error() {
        assert_eq!(leading_error(&quote(TRACEBACK)), Some("sqlite3.OperationalError: database or disk is full"));
        assert_eq!(leading_error("ValueError: bad row"), Some("ValueError: bad row"));
        assert_eq!(leading_error(&quote("a\nb\n")), None);
        assert_eq!(leading_error(""), None);
    }

    /// Without an error line, the last lines; nothing, nothing.
    #[test]
    fn without_an_error_line_the_tail_is_quoted() {
        assert_eq!(quote("a\n\nb\nc\nd\n"), "b | c | d");
        assert_eq!(quote(""), "");
        // Words before a colon are not an error.
        assert_eq!(quote("note: see the docs\nwarning: slow start"), "note: see the docs | warning: slow start");
    }

    /// One enormous line is cut to the cap, the error line kept whole first.
    #[test]
    fn an_enormous_line_is_capped() {
        let text = format!("ValueError: bad row\n{}\n", "x".repeat(131_072));
        let q = quote(&text);
        assert!(q.chars().count() <= CAP, "{}", q.len());
        assert!(q.starts_with("ValueError: bad row | xxx") && q.ends_with('…'), "{q}");
    }

    /// A file is read from its end: a stderr of megabytes costs 64 KiB.
    #[test]
    fn a_file_is_quoted_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("child.stderr");
        std::fs::write(&path, format!("{}\n{TRACEBACK}", "y\n".repeat(1_000_000))).unwrap();
        assert!(quote_file(&path).starts_with("sqlite3.OperationalError"));
        assert_eq!(quote_file(&dir.path().join("none")), "");
    }
}
