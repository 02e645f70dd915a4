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
