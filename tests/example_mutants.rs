//! The examples' READMEs list what their stores implement: the mutants a
//! README names are exactly the ones its store accepts (any other `--mutant`
//! is refused with exit 2 by the adapter library, which checks the name
//! against the store's own list). A README that named four of eight
//! mutants told a reader the other four did not exist.
//!
//! Both sides are read as text, so that the test takes no interpreter and
//! no toolchain: the README's passage on mutants (a `Mutants:` paragraph, a
//! `**mutants**` list item, or an `## Its mutant` section), of which every
//! code span that is a mutant's name counts; and the store's list (Python's
//! `mutants = (…)`, JavaScript's `static mutants = […]`, Go's
//! `Mutants() []string { return []string{…} }`), none when it has no list.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn example(name: &str, file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(name).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The README's passage on mutants: from its first line to a blank line or
/// the next list item, or for a section to the next heading.
fn passage(readme: &str) -> Option<String> {
    let lines: Vec<&str> = readme.lines().collect();
    let opens = |l: &str| {
        let l = l.trim_start().to_lowercase();
        l.starts_with("mutants:") || l.starts_with("- **mutants**") || l.starts_with("## its mutant")
    };
    let start = lines.iter().position(|l| opens(l))?;
    let section = lines[start].starts_with("##");
    let ends = |l: &&str| if section { l.starts_with('#') } else { l.trim().is_empty() || l.starts_with("- ") };
    let rest = lines[start + 1..].iter().take_while(|l| !ends(l));
    Some(std::iter::once(&lines[start]).chain(rest).copied().collect::<Vec<_>>().join("\n"))
}

/// The mutants a README names: its passage's code spans that are mutants.
fn named(readme: &str) -> BTreeSet<String> {
    let known = crashcells_protocol::Mutant::names();
    let text = passage(readme).unwrap_or_default();
    text.split('`').skip(1).step_by(2).filter(|s| known.contains(s)).map(String::from).collect()
}

/// The names in a store's list of mutants: the quoted strings from where
/// the list opens to its closing bracket.
fn accepted(source: &str) -> BTreeSet<String> {
    // Go's list opens in the method's body, after its signature.
    let opens = [("mutants = (", ""), ("static mutants = [", ""), ("Mutants() []string {", "[]string{")];
    let Some(start) = opens.iter().find_map(|(o, list)| {
        let at = source.find(o)? + o.len();
        Some(at + source[at..].find(list)? + list.len())
    }) else {
        return BTreeSet::new();
    };
    let body = &source[start..];
    let end = body.find([')', ']', '}']).expect("the store's list of mutants closes");
    body[..end].split('"').skip(1).step_by(2).map(String::from).collect()
}

#[test]
fn each_examples_readme_lists_exactly_the_mutants_its_store_accepts() {
    let examples = [
        ("python-store", "store.py"),
        ("hermes-store", "adapter.py"),
        ("langgraph-store", "adapter.mjs"),
        ("go-store", "main.go"),
    ];
    for (name, source) in examples {
        let readme = example(name, "README.md");
        assert!(passage(&readme).is_some(), "examples/{name}/README.md has no passage on its mutants");
        let (said, takes) = (named(&readme), accepted(&example(name, source)));
        assert_eq!(said, takes, "examples/{name}/README.md lists {said:?}; examples/{name}/{source} accepts {takes:?}");
    }
}

#[test]
fn a_readme_that_leaves_out_a_mutant_is_caught() {
    let readme = "Mutants: `ack-before-commit` (cell 1), `split-rotation` (cell 3) and `append`.\n\n## Next\n";
    let store =
        "    mutants = (\n        \"ack-before-commit\",\n        \"split-rotation\",\n        \"torn-fork\",\n    )\n";
    assert_eq!(named(readme), ["ack-before-commit", "split-rotation"].map(String::from).into());
    assert_ne!(named(readme), accepted(store));
    let go = "func (t *Threads) Mutants() []string {\n\treturn []string{\"racy-claim\"}\n}";
    assert_eq!(accepted(go), ["racy-claim".to_string()].into());
}
