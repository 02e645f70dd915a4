//! The design's pages read once: no sentence of docs/DESIGN.md (the index)
//! or of a page of docs/design/ runs over 60 words. A newcomer's budget is
//! about 25; past 60 a sentence lists, and a list or a table says it better.
//!
//! How a sentence is found, so that a reader can count as the test does:
//! - fenced code blocks, table rows (`|`), headings (`#`) and HTML comments
//!   are not prose and are left out;
//! - a blank line, a heading, a table row or a list item's marker (`- `,
//!   `* `, `1. `) ends a paragraph;
//! - an inline code span (`` `...` ``) counts as one word, whatever it holds;
//! - a sentence ends at `.`, `!` or `?` (a closing quote or parenthesis may
//!   follow) before white space and a capital, a digit, a quote, an opening
//!   parenthesis, `*` or `_`. So "e.g. the" does not end one, and a
//!   sentence is never counted shorter than it reads;
//! - a word is what white space separates.
//!
//! And the docs' names resolve (below, "Names that resolve"): every path,
//! Rust file and `a::b` item that a page of docs/ names exists, and a page
//! that says how many cells there are says how many `cells/` holds.

use std::path::{Path, PathBuf};

/// The most words a sentence of the design may have.
const MOST_WORDS: usize = 60;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The design's pages: the index and every page of docs/design/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("docs/DESIGN.md")];
    let dir = repo().join("docs/design");
    let mut more: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    pages.extend(more);
    pages
}

/// The paragraphs of prose of a Markdown text, each as one line.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let s = line.trim();
        if s.starts_with("```") {
            fenced = !fenced;
        }
        let not_prose =
            fenced || s.starts_with("```") || s.starts_with('|') || s.starts_with('#') || s.starts_with("<!--");
        let item = s.starts_with("- ") || s.starts_with("* ") || numbered(s);
        if (s.is_empty() || not_prose || item) && !para.is_empty() {
            out.push(para.join(" "));
            para.clear();
        }
        if !s.is_empty() && !not_prose {
            para.push(s);
        }
    }
    if !para.is_empty() {
        out.push(para.join(" "));
    }
    out
}

/// Whether a line opens a numbered list item (`12. `).
fn numbered(s: &str) -> bool {
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && s[digits..].starts_with(". ")
}

/// A paragraph's sentences, each as its words (a code span is one word).
fn sentences(paragraph: &str) -> Vec<Vec<String>> {
    let mut words: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for word in code_spans_as_words(paragraph) {
        let ends = ends_sentence(&word);
        words.push(word);
        if ends {
            out.push(std::mem::take(&mut words));
        }
    }
    // A sentence ends only where the next word opens one: join back those
    // that the next word does not.
    let mut joined: Vec<Vec<String>> = Vec::new();
    for s in out.into_iter().chain((!words.is_empty()).then_some(words)) {
        match joined.last_mut() {
            Some(last) if !opens_sentence(&s[0]) => last.extend(s),
            _ => joined.push(s),
        }
    }
    joined
}

/// The words of a paragraph, an inline code span one word.
fn code_spans_as_words(paragraph: &str) -> Vec<String> {
    let mut text = String::new();
    for (i, piece) in paragraph.split('`').enumerate() {
        // Odd pieces are inside a code span (a `` `` `` pair counts as two
        // spans around nothing, which is still one word each side at most).
        text.push_str(if i % 2 == 1 { "CODE" } else { piece });
    }
    text.split_whitespace().map(str::to_string).collect()
}

/// Whether a word ends with a sentence's last mark.
fn ends_sentence(word: &str) -> bool {
    let w = word.trim_end_matches(['"', ')', '*']);
    w.ends_with('.') || w.ends_with('!') || w.ends_with('?')
}

/// Whether a word may open a sentence.
fn opens_sentence(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || "\"(*_".contains(c))
}

/// The sentences over the budget in a text: their word count and opening.
fn too_long(text: &str) -> Vec<(usize, String)> {
    paragraphs(text)
        .iter()
        .flat_map(|p| sentences(p))
        .filter(|s| s.len() > MOST_WORDS)
        .map(|s| (s.len(), s.iter().take(12).cloned().collect::<Vec<_>>().join(" ")))
        .collect()
}

fn relative(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap_or(p).display().to_string()
}

#[test]
fn no_sentence_of_the_design_runs_over_60_words() {
    let mut found = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        for (n, opening) in too_long(&text) {
            found.push(format!("{}: {n} words: {opening} ...", relative(&page)));
        }
    }
    assert!(pages().len() > 1, "docs/design/ holds the design's pages");
    assert!(found.is_empty(), "sentences over {MOST_WORDS} words (split them, or make a list):\n{}", found.join("\n"));
}

/// The counter itself: a long sentence is found, in a paragraph or a list
/// item; code blocks, tables and headings are not prose; a code span is one
/// word; "e.g. the" does not end a sentence, ". The" does.
#[test]
fn the_counter_finds_a_long_sentence_and_only_in_prose() {
    let long = vec!["word"; 61].join(" ");
    let short = vec!["word"; 60].join(" ");
    assert_eq!(too_long(&format!("{long}.")).len(), 1);
    assert_eq!(too_long(&format!("Intro.\n\n- {long}\n- short.")).len(), 1);
    assert!(too_long(&format!("{short}.")).is_empty());
    assert!(too_long(&format!("```\n{long}\n```\n\n| {long} |\n\n# {long}")).is_empty());
    // Two sentences of 40 words: split at ". A", not at "e.g. the".
    let forty = vec!["word"; 39].join(" ");
    assert!(too_long(&format!("{forty} e.g. the. A {forty}.")).is_empty());
    assert_eq!(too_long(&format!("{forty} e.g. the {forty}.")).len(), 1);
    // A code span of many words is one word.
    let span = format!("`{}`", vec!["x"; 30].join(" "));
    assert!(too_long(&format!("{} {span}.", vec!["word"; 59].join(" "))).is_empty());
}

// ---------------------------------------------------------------------------
// Names that resolve. Every page of docs/ names files and Rust items; a name
// that no longer resolves sends a reader to nothing. The rule, practical
// rather than complete:
// - a path that starts at a top folder of the repository (`src/`, `tests/`,
//   `docs/`, `protocol/`, `child-bin/`, `sdk/`, `examples/`, `cells/`,
//   `matrices/`, `scripts/`, `benches/`, `.ci/`, `.crashcells/`) exists,
//   from the root or from `src/` (the design's pages name `cells/cell.rs`
//   for `src/cells/cell.rs`), or is a build output `.gitignore` names;
//   a placeholder (`cells/<N>-<id>.toml`) or a glob (`cells/*.toml`) is
//   not a path;
// - a bare Rust file name (`fold.rs`) is the name of a `.rs` file of the
//   workspace;
// - an `a::b` name (not of an outside crate: `std::`, `serde::`, ...) ends
//   in an item the workspace's Rust defines: a `fn`, `struct`, `enum`,
//   `mod`, `const`, `static`, `trait` or `type`, an enum variant or a
//   field, found by its definition's line;
// - "the N cells" (or "all N cells") says as many as `cells/` holds.

/// The top folders a path in the docs starts at.
const TOPS: &str = r"\.ci|\.crashcells|src|tests|docs|protocol|child-bin|sdk|examples|cells|matrices|scripts|benches";

/// The paths the docs name in a team's repository, not in this one: the
/// file where a team's CI finds its store's command (docs/CI.md).
const A_TEAMS: [&str; 1] = [".crashcells/child"];

/// The outside crates and types a doc's `a::b` may name, unresolved here.
const OUTSIDE: [&str; 27] = [
    "std",
    "core",
    "alloc",
    "serde",
    "serde_json",
    "libc",
    "nix",
    "clap",
    "rusqlite",
    "insta",
    "toml",
    "tempfile",
    "syn",
    "regex",
    "seccompiler",
    "indicatif",
    "quick_junit",
    "thiserror",
    "signal_hook",
    "libsqlite3_sys",
    "proc_macro2",
    "File",
    "Command",
    "Instant",
    "Duration",
    "OpenOptions",
    "io",
];

/// What the workspace holds, for resolving names.
struct Tree {
    root: PathBuf,
    /// Paths `.gitignore` names from the root (`/examples/go-store/go-store`).
    ignored: Vec<String>,
    /// The file name of every `.rs` file.
    rust_files: std::collections::HashSet<String>,
    /// Every item, variant and field name the Rust defines.
    items: std::collections::HashSet<String>,
    /// How many cells `cells/` holds.
    cells: usize,
}

impl Tree {
    fn load(root: &Path) -> Tree {
        let mut files = Vec::new();
        for dir in ["src", "tests", "protocol", "child-bin", "benches"] {
            rust_files_under(&root.join(dir), &mut files);
        }
        files.push(root.join("build.rs"));
        let mut items = std::collections::HashSet::new();
        let def = regex::Regex::new(
            r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern)\s+)*(?:fn|struct|enum|mod|const|static|trait|type|union|macro_rules!)\s*([A-Za-z_][A-Za-z0-9_]*)",
        )
        .unwrap();
        let variant = regex::Regex::new(r"(?m)^\s*([A-Z][A-Za-z0-9_]*)\s*(?:[,({=]|$)").unwrap();
        let field = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?([a-z_][a-z0-9_]*)\s*:[^:]").unwrap();
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            for re in [&def, &variant, &field] {
                items.extend(re.captures_iter(&text).map(|c| c[1].to_string()));
            }
        }
        let rust_files = files.iter().filter_map(|f| Some(f.file_name()?.to_string_lossy().into_owned())).collect();
        let gitignore = std::fs::read_to_string(root.join(".gitignore")).unwrap_or_default();
        let ignored = gitignore.lines().filter_map(|l| l.strip_prefix('/')).map(String::from).collect();
        let cells = std::fs::read_dir(root.join("cells"))
            .map(|d| d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))).count())
            .unwrap_or(0);
        Tree { root: root.to_path_buf(), ignored, rust_files, items, cells }
    }

    fn path_resolves(&self, path: &str) -> bool {
        self.root.join(path).exists()
            || self.root.join("src").join(path).exists()
            || self.ignored.iter().any(|i| i == path)
            || A_TEAMS.contains(&path)
    }

    /// Whether an `a::b` name resolves: an outside crate's, or one whose
    /// last part the workspace defines.
    fn name_resolves(&self, name: &str) -> bool {
        let parts: Vec<&str> = name.split("::").collect();
        let ours = ["crate", "self", "super", "crashcells", "crashcells_protocol", "crashcells_child"];
        let first = parts.iter().find(|p| !ours.contains(p)).copied().unwrap_or("");
        OUTSIDE.contains(&first) || parts.last().is_some_and(|last| self.items.contains(*last))
    }
}

fn rust_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && !p.ends_with("target") {
            rust_files_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every Markdown page under docs/.
fn doc_pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo().join("docs"), &mut out);
    out.sort();
    out
}

const NUMBERS: [&str; 11] = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];

/// What a page's text names that does not resolve, one line each with its
/// line number.
fn unresolved(text: &str, tree: &Tree) -> Vec<String> {
    // A path ends in a letter, digit or `_`, and is not part of a longer
    // word, a `$variable/…` or a URL.
    let path = regex::Regex::new(&format!(r"(^|[^A-Za-z0-9_$/.:-])((?:{TOPS})/[A-Za-z0-9_./-]*[A-Za-z0-9_])")).unwrap();
    let rust_file = regex::Regex::new(r"(^|[^A-Za-z0-9_$/.-])([A-Za-z0-9_-]+\.rs)\b").unwrap();
    let name = regex::Regex::new(r"\b([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)").unwrap();
    let cells = regex::Regex::new(r"(?i)\b(?:the|all) ([a-z]+|\d+) cells\b").unwrap();
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = n + 1;
        for c in path.captures_iter(line) {
            let p = &c[2];
            // A placeholder or glob continues past the match: `cells/<N>`, `cells/*.toml`.
            let next = line[c.get(2).unwrap().end()..].chars().next();
            if !matches!(next, Some('<' | '*' | '{')) && !tree.path_resolves(p) {
                found.push(format!("line {at}: no file or folder `{p}`"));
            }
        }
        for c in rust_file.captures_iter(line) {
            if !tree.rust_files.contains(&c[2]) {
                found.push(format!("line {at}: no Rust file named `{}`", &c[2]));
            }
        }
        for c in name.captures_iter(line) {
            if !tree.name_resolves(&c[1]) {
                found.push(format!("line {at}: no item `{}` in the workspace's Rust", &c[1]));
            }
        }
        for c in cells.captures_iter(line) {
            let word = c[1].to_lowercase();
            let Some(said) = NUMBERS.iter().position(|w| *w == word).or_else(|| word.parse().ok()) else { continue };
            if said != tree.cells {
                found.push(format!("line {at}: \"{}\", but cells/ holds {}", &c[0], tree.cells));
            }
        }
    }
    found
}

#[test]
fn every_path_and_name_in_the_docs_resolves_and_the_cells_are_counted_right() {
    let tree = Tree::load(&repo());
    assert!(tree.cells >= 6 && tree.items.contains("Verdict"), "the tree loads");
    let mut found = Vec::new();
    for page in doc_pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        found.extend(unresolved(&text, &tree).into_iter().map(|f| format!("{}: {f}", relative(&page))));
    }
    assert!(found.is_empty(), "names in docs/ that resolve to nothing:\n{}", found.join("\n"));
}

/// The resolver itself, on a scratch page: a file that does not exist, a
/// Rust file and an item that do not, and a wrong count of cells are each
/// found; names that resolve, placeholders, globs and outside crates are not.
#[test]
fn a_scratch_page_naming_what_does_not_exist_fails() {
    let tree = Tree::load(&repo());
    let page = "The judge is in `src/pipeline/judge/nope.rs` (see `gone.rs`), \
                `report::Verdict::Nope`.\nThe five cells.\n";
    let found = unresolved(page, &tree);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("src/pipeline/judge/nope.rs") && found[0].starts_with("line 1"), "{found:?}");
    let fine = format!(
        "`src/catalog.rs`, `cells/cell.rs`, `catalog.rs`, `cells/<N>-<id>.toml`, `cells/*.toml`, \
         `crashcells_protocol::Mutant::DropAppend`, `std::fs::File::lock`, `$dir/x.rs` and the {} cells.",
        NUMBERS[tree.cells]
    );
    assert_eq!(unresolved(&fine, &tree), Vec::<String>::new());
}
