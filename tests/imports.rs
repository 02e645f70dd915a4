//! The driver's module order, checked: no import cycle among the modules of
//! `src/`, and the top-level modules import only modules below them in the
//! order docs/design/layout.md draws ("The module order", its picture).
//! Inside `pipeline/`, the same one way at the grain of files: each file
//! imports only files `PIPELINE` lists before it, its folders' files together.
//!
//! How: every file of the library is parsed with `syn` (real paths, not
//! text: comments and strings cannot fool it); its non-test items are
//! walked for every path that names a module of the crate (`use` trees,
//! paths in code such as `crate::harness::interrupted()`, and paths inside
//! macro bodies, read from their tokens, best effort), each resolved to the
//! file module that defines the item, through re-exports (`pub use`, and
//! `pub(crate) use`: a re-export within the crate is one too). A re-export is a
//! dependency of the file that says it, except in a table of contents (a
//! `mod.rs` re-exporting a file of its own folder: `pub use child::Item` is
//! where its items live, not a dependency of its own). Test code
//! (`#[cfg(test)]`) is left out: a unit test may use anything.
//!
//! Besides the order: the library never links the reference store's crate
//! (`crashcells-child` serves `crashcells child` from `main.rs` alone), and
//! every file of `src/` is named in docs/design/layout.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The top-level modules, lowest first: a module may import only modules
/// listed before it. Keep docs/design/layout.md's picture in step with it.
const LAYERS: &[&[&str]] = &[
    &["error", "seed", "journal", "journalmode", "dbfiles", "testskip", "suggest", "times", "scratch"],
    &["sqlitelib"],
    &["catalog", "matrix"],
    &["legaudit", "trialdir", "harness"],
    &["kill", "probe"],
    &["crashstate", "recovery"],
    &["killmode"],
    &["cells"],
    &["plan"],
    &["applied"],
    &["model"],
    &["options"],
    &["pipeline"],
    // Above the pipeline: the pipeline emits events and never calls a renderer.
    &["report"],
    &["run", "childcheck"],
    &["audit"],
    &["cli"],
];

/// The files of `src/pipeline/`, lowest first, by folder (a folder's files
/// together): a file may import only files listed before it. Keep
/// `pipeline/mod.rs` and each folder's `mod.rs` in step with it.
const PIPELINE: &[&str] = &[
    "outcome",
    "trial",
    "run::pool",
    "run::parallel",
    "run::recoveries",
    "run::refire",
    "run::plainfires",
    "run::spent",
    "run::context",
    "judge::census",
    "judge::verdict",
    "judge::recover",
    "judge::driver",
    "judge::pending",
    "judge::sweep",
    "judge::coverage",
    "plain::confirm",
    "plain::decide",
    "workload::job",
    "workload::timed",
    "workload::point",
    "workload::refind",
    "workload::recorded",
    "workload::power_share",
    "workload::power",
    "workload::fault",
    "race::hold",
    "race::preempt",
    "race::job",
    "race::park",
    "race::racers",
    "race::opener",
    "race::schedule",
    "race::sweep",
    "race::writers_sweep",
    "race::recorded",
    "race::compare",
    "race::writers",
    "result::fold",
    "result::dispatch",
];

type Module = Vec<String>;

/// One parsed file: its module path and what it imports.
struct File {
    module: Module,
    /// A `mod.rs`: its folder's table of contents.
    toc: bool,
    syntax: syn::File,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module path of a file of `src/` (`lib.rs` is the crate itself).
fn module_of(rel: &Path) -> Module {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Every file of the library (`main.rs` is the binary's).
fn files() -> Vec<File> {
    let mut out = Vec::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "main.rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let toc = path.file_name().is_some_and(|n| n == "mod.rs");
                out.push(File { module: module_of(path.strip_prefix(src()).unwrap()), toc, syntax });
            }
        }
    }
    out
}

/// Whether an item is compiled for tests only: `#[cfg(test)]`, or a `cfg`
/// that requires `test` among others (`all(test, target_arch = ...)`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let syn::Meta::List(list) = &a.meta else { return false };
        let text = list.tokens.to_string();
        let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
        let required = text.trim() == "test" || (text.starts_with("all") && !words.contains(&"not"));
        a.path().is_ident("cfg") && required && words.contains(&"test")
    })
}

/// Every `use` path of an item list, flattened (`a::{b, c::d}` is `a::b` and
/// `a::c::d`), each with whether it is a public re-export.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.clone();
            full.push(n.ident.to_string());
            out.push((full, Some(n.ident.to_string())));
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push((full, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_paths(t, prefix, out)),
    }
}

/// What one file says: its imports and code paths (dependencies), and its
/// public re-exports (name → path), which are dependencies too outside a
/// table of contents.
#[derive(Default)]
struct Said {
    paths: Vec<Vec<String>>,
    reexports: BTreeMap<String, Vec<String>>,
}

impl Said {
    /// The paths a file depends on: its own, and its re-exports unless it
    /// is a table of contents (`toc`) re-exporting from its own folder.
    fn deps(&self, toc: bool) -> impl Iterator<Item = &Vec<String>> {
        let outside = |p: &&Vec<String>| matches!(p.first().map(String::as_str), Some("crate" | "super"));
        self.paths.iter().chain(self.reexports.values().filter(move |p| !toc || outside(p)))
    }
}

struct Walker<'a>(&'a mut Said);

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test(attrs) {
            return;
        }
        if let syn::Item::Use(u) = item {
            let mut found = Vec::new();
            use_paths(&u.tree, &mut Vec::new(), &mut found);
            // `pub(crate) use` re-exports as `pub use` does, within the crate.
            let public = matches!(u.vis, syn::Visibility::Public(_) | syn::Visibility::Restricted(_));
            for (path, name) in found {
                match (public, name) {
                    (true, Some(name)) => {
                        self.0.reexports.insert(name, path);
                    }
                    _ => self.0.paths.push(path),
                }
            }
            return;
        }
        syn::visit::visit_item(self, item);
    }

    /// `pub(crate)` and `pub(super)` name no dependency.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.0.paths.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    /// A macro's body is tokens, not syntax: its paths are read from them.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.0.paths.extend(token_paths(mac.tokens.clone()));
    }
}

/// The paths in a macro's tokens, best effort: each run of identifiers
/// joined by `::` (`crate::plan::KillMode::Timed` inside `format!(..)`), in
/// groups too. A metavariable (`$module::$probe`) is no path, and neither
/// is a lone identifier (a variable as often as a module).
fn token_paths(tokens: proc_macro2::TokenStream) -> Vec<Vec<String>> {
    use proc_macro2::TokenTree;
    fn flush(run: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if run.len() > 1 {
            out.push(run.clone());
        }
        run.clear();
    }
    let (mut out, mut run) = (Vec::new(), Vec::new());
    // The `:` seen since the run's last identifier; whether a `$` came just before.
    let (mut colons, mut after_dollar) = (0, false);
    for tree in tokens {
        match &tree {
            TokenTree::Ident(_) if after_dollar => flush(&mut run, &mut out),
            TokenTree::Ident(i) if colons == 2 => run.push(i.to_string()),
            TokenTree::Ident(i) => {
                flush(&mut run, &mut out);
                run.push(i.to_string());
            }
            TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => colons += 1,
            TokenTree::Group(g) => {
                flush(&mut run, &mut out);
                out.extend(token_paths(g.stream()));
            }
            _ => flush(&mut run, &mut out),
        }
        if !matches!(&tree, TokenTree::Punct(p) if p.as_char() == ':') {
            colons = 0;
        }
        after_dollar = matches!(&tree, TokenTree::Punct(p) if p.as_char() == '$');
    }
    flush(&mut run, &mut out);
    out
}

/// The module graph of the library: each file module → the file modules it
/// depends on.
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    graph_of(&files())
}

fn graph_of(files: &[File]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    let said: BTreeMap<Module, Said> = files
        .iter()
        .map(|f| {
            let mut s = Said::default();
            Walker(&mut s).visit_file(&f.syntax);
            (f.module.clone(), s)
        })
        .collect();
    let tocs: BTreeSet<&Module> = files.iter().filter(|f| f.toc).map(|f| &f.module).collect();
    let mut graph = BTreeMap::new();
    for (module, s) in &said {
        let deps: BTreeSet<Module> = s
            .deps(tocs.contains(module))
            .filter_map(|p| absolute(module, p, &modules))
            .filter_map(|p| resolve(&p, &modules, &said, 0))
            .filter(|d| d != module)
            .collect();
        graph.insert(module.clone(), deps);
    }
    graph
}

/// A path as seen from `module`, made absolute (without `crate`), if it
/// names something of this crate: `crate::`, `super::`, `self::`, or a
/// child module of `module`.
fn absolute(module: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.clone(),
        "super" => {
            let mut b = module.clone();
            b.pop();
            let mut rest = rest;
            while rest.first().is_some_and(|s| s == "super") {
                b.pop();
                rest = &rest[1..];
            }
            return Some([b, rest.to_vec()].concat());
        }
        child if modules.contains(&[module.clone(), vec![child.to_string()]].concat()) => {
            return Some([module.clone(), path.to_vec()].concat());
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The file module that defines what `path` names: its longest module
/// prefix, or, when the next segment is that module's re-export, where the
/// re-export points.
fn resolve(path: &[String], modules: &BTreeSet<Module>, said: &BTreeMap<Module, Said>, depth: u32) -> Option<Module> {
    let len = (0..=path.len()).rev().find(|&n| modules.contains(&path[..n].to_vec()))?;
    let module = path[..len].to_vec();
    if depth < 8
        && let Some(next) = path.get(len)
        && let Some(target) = said.get(&module).and_then(|s| s.reexports.get(next))
        && let Some(abs) = absolute(&module, target, modules)
    {
        let mut abs = abs;
        abs.extend(path[len + 1..].iter().cloned());
        return resolve(&abs, modules, said, depth + 1);
    }
    Some(module)
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'g> {
        graph: &'g BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'g Module, usize>,
        low: BTreeMap<&'g Module, usize>,
        stack: Vec<&'g Module>,
        on: BTreeSet<&'g Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Module) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let Some((w, _)) = s.graph.get_key_value(w) else { continue };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.on.contains(w) {
                let iw = s.index[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: vec![],
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn name(m: &Module) -> String {
    if m.is_empty() { "crate".into() } else { m.join("::") }
}

#[test]
fn no_module_of_the_driver_imports_one_that_imports_it_back() {
    let found = cycles(&graph());
    let shown: Vec<String> = found.iter().map(|c| c.iter().map(name).collect::<Vec<_>>().join(" <-> ")).collect();
    assert!(shown.is_empty(), "import cycles among src/ modules:\n  {}", shown.join("\n  "));
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let layer = |m: &Module| m.first().and_then(|top| LAYERS.iter().position(|l| l.contains(&top.as_str())));
    let graph = graph();
    let mut wrong = Vec::new();
    for (from, deps) in &graph {
        let Some(top) = from.first() else { continue };
        let Some(lf) = layer(from) else {
            wrong.push(format!("{top} is in no layer of tests/imports.rs's LAYERS"));
            continue;
        };
        for to in deps.iter().filter(|to| to.first() != Some(top)) {
            if layer(to).is_none_or(|lt| lt >= lf) {
                wrong.push(format!("{} imports {} (not a lower layer)", name(from), name(to)));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "imports against the module order:\n  {}", wrong.join("\n  "));
}

/// Inside `pipeline/`: every file is in `PIPELINE`, a folder's files
/// stand together there, and each file imports only files before it.
#[test]
fn pipeline_files_import_only_files_listed_before_them() {
    let graph = graph();
    let tocs: BTreeSet<Module> = files().into_iter().filter(|f| f.toc).map(|f| f.module).collect();
    let wrong = pipeline_order_wrongs(&graph, &tocs, PIPELINE);
    assert!(wrong.is_empty(), "pipeline/ against its order (tests/imports.rs's PIPELINE):\n  {}", wrong.join("\n  "));
}

/// What breaks `order` in the graph's `pipeline` modules (tables of
/// contents aside): a file it does not list or lists without a file, a
/// folder split, an import of a file listed later.
fn pipeline_order_wrongs(
    graph: &BTreeMap<Module, BTreeSet<Module>>,
    tocs: &BTreeSet<Module>,
    order: &[&str],
) -> Vec<String> {
    let of = |m: &str| -> Module { ["pipeline"].into_iter().chain(m.split("::")).map(String::from).collect() };
    let listed: Vec<Module> = order.iter().map(|m| of(m)).collect();
    let rank = |m: &Module| listed.iter().position(|l| l == m);
    let mut wrong = Vec::new();
    let inside = |m: &Module| m.first().is_some_and(|t| t == "pipeline") && !tocs.contains(m);
    for m in graph.keys().filter(|m| inside(m)) {
        if rank(m).is_none() {
            wrong.push(format!("{} is not in PIPELINE", name(m)));
        }
    }
    for l in listed.iter().filter(|l| !graph.contains_key(*l)) {
        wrong.push(format!("PIPELINE lists {}, which is no file", name(l)));
    }
    let folders: Vec<&[String]> = listed.iter().map(|l| &l[..l.len() - 1]).collect();
    for (i, f) in folders.iter().enumerate() {
        if folders[..i].contains(f) && folders[i - 1] != *f {
            wrong.push(format!("PIPELINE splits the folder {}", name(&f.to_vec())));
        }
    }
    for (from, deps) in graph.iter().filter(|(m, _)| inside(m)) {
        let Some(rf) = rank(from) else { continue };
        for to in deps.iter().filter(|d| inside(d)) {
            if rank(to).is_none_or(|rt| rt >= rf) {
                wrong.push(format!("{} imports {} (not listed before it)", name(from), name(to)));
            }
        }
    }
    wrong
}

/// The order check fails on a wrong-way import: a made-up pipeline whose
/// lower file imports a higher one, and one whose folder is split.
#[test]
fn a_wrong_way_import_inside_the_pipeline_is_found() {
    let files = [
        file("pipeline", true, "pub mod outcome; pub mod run; pub mod judge;"),
        file("pipeline::outcome", false, "pub struct Outcome;"),
        file("pipeline::run", true, "pub mod pool; pub mod context;"),
        file("pipeline::run::pool", false, "pub fn p() { crate::pipeline::judge::driver::d(); }"),
        file("pipeline::run::context", false, "use crate::pipeline::outcome::Outcome;"),
        file("pipeline::judge", true, "pub mod driver;"),
        file("pipeline::judge::driver", false, "pub fn d() { super::super::run::pool::p(); }"),
    ];
    let graph = graph_of(&files);
    let tocs = files.iter().filter(|f| f.toc).map(|f| f.module.clone()).collect();
    let wrong = pipeline_order_wrongs(&graph, &tocs, &["outcome", "run::pool", "run::context", "judge::driver"]);
    assert_eq!(wrong, ["pipeline::run::pool imports pipeline::judge::driver (not listed before it)"]);
    let split = pipeline_order_wrongs(&graph, &tocs, &["outcome", "run::pool", "judge::driver", "run::context"]);
    assert!(split.iter().any(|w| w == "PIPELINE splits the folder pipeline::run"), "{split:?}");
    assert!(split.iter().any(|w| w.starts_with("pipeline::run::pool imports")), "{split:?}");
}

#[test]
fn the_checker_sees_paths_through_re_exports_and_skips_test_code() {
    let graph = graph();
    let of = |m: &str| graph.get(&m.split("::").map(String::from).collect::<Module>()).cloned().unwrap_or_default();
    // A path in code (not a `use`) is seen.
    assert!(of("pipeline::result::fold").iter().any(|d| d.first().is_some_and(|t| t == "harness")));
    // The lowest modules depend on nothing of the crate outside tests.
    assert!(of("seed").is_empty(), "{:?}", of("seed"));
}

/// A file of a made-up crate, for the checker's own tests.
fn file(module: &str, toc: bool, text: &str) -> File {
    let module = if module.is_empty() { vec![] } else { module.split("::").map(String::from).collect() };
    File { module, toc, syntax: syn::parse_file(text).unwrap() }
}

/// Each hole the checker once had, shown on a made-up crate: a `pub use`
/// outside a table of contents, and a path inside a macro's body, are
/// dependencies; a table of contents' re-export of its own file is not,
/// `pub(crate) use` as `pub use`, and a path through it names the file.
#[test]
fn a_re_export_and_a_path_in_a_macro_are_dependencies() {
    let files = [
        file("", true, "pub mod seed; pub mod cli; pub mod pipeline;"),
        file("seed", false, "pub use crate::cli::main;"),
        file("cli", false, "pub fn main() { crate::pipeline::inner(); }"),
        file("pipeline", true, "pub mod result; pub use result::run; pub(crate) use result::inner;"),
        file(
            "pipeline::result",
            false,
            r#"pub fn run() { println!("{}", crate::seed::derive(1)); } pub(crate) fn inner() {}"#,
        ),
    ];
    let graph = graph_of(&files);
    let of = |m: &str| graph[&m.split("::").map(String::from).collect::<Module>()].clone();
    assert_eq!(of("seed"), BTreeSet::from([vec!["cli".to_string()]]));
    assert_eq!(of("pipeline::result"), BTreeSet::from([vec!["seed".to_string()]]));
    assert_eq!(of("cli"), BTreeSet::from([vec!["pipeline".to_string(), "result".to_string()]]));
    assert!(of("pipeline").is_empty(), "{:?}", of("pipeline"));
    let paths = token_paths("$module::$probe, a: b::c, format!(\"{}\", x)".parse().unwrap());
    assert_eq!(paths, [vec!["b".to_string(), "c".to_string()]]);
}

/// The library never links the reference store: it reaches every store,
/// ours included, through the protocol. `main.rs` alone serves `crashcells
/// child` from the store's crate (the binary and the library share
/// Cargo.toml's dependencies, so the line is drawn here).
#[test]
fn only_main_uses_the_reference_stores_crate() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    assert!(manifest.contains("crashcells-child = { path = \"child-bin\""), "the binary needs the store's crate");
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    assert!(main.contains("crashcells_child::main_from("), "main.rs serves `crashcells child`");
    let mut users = Vec::new();
    for f in files().iter().filter(|f| uses_child(f)) {
        users.push(name(&f.module));
    }
    assert!(users.is_empty(), "the library uses the reference store's crate in: {}", users.join(", "));
    assert!(uses_child(&file(
        "cli",
        false,
        "fn f() { let _ = format!(\"{}\", crashcells_child::main_from(vec![])); }"
    )));
}

/// The reference store's crate, as Rust names it.
const CHILD: &str = "crashcells_child";

/// Whether a file names the reference store's crate: in a path, a `use`,
/// a macro's body or an `extern crate`.
fn uses_child(f: &File) -> bool {
    let mut s = Said::default();
    Walker(&mut s).visit_file(&f.syntax);
    let externs = f.syntax.items.iter().any(|i| matches!(i, syn::Item::ExternCrate(e) if e.ident == CHILD));
    externs || s.deps(false).any(|p| p.first().is_some_and(|f| f == CHILD))
}

/// Every file of `src/` is named in docs/design/layout.md: as its path
/// (`audit/crash.rs`), or as its name in the entry of its folder
/// (`pipeline/` ... `pool`). A folder's `mod.rs` is named by its folder.
#[test]
fn every_file_of_src_is_named_in_the_designs_layout() {
    let design = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design/layout.md")).unwrap();
    let layout = layout_block(&design);
    let mut missing = Vec::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !named(&layout, &rel) && !a_cell(&rel) {
                missing.push(rel);
            }
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "docs/design/layout.md does not name: {}", missing.join(", "));
    assert!(!named(&layout, "pipeline/nowhere.rs"), "a file the layout does not name is found missing");
    assert!(a_cell("cells/prefix.rs") && !a_cell("cells/nowhere.rs") && !a_cell("pipeline/prefix.rs"));
}

/// Whether `rel` is a live cell's module, which the layout names as "one
/// module per live cell" and the registry lists (`registry!` in
/// `cells/mod.rs`): a cell added by docs/design/adding.md's recipe needs no line here.
fn a_cell(rel: &str) -> bool {
    let Some(stem) = rel.strip_prefix("cells/").and_then(|f| f.strip_suffix(".rs")) else { return false };
    let registry = std::fs::read_to_string(src().join("cells/mod.rs")).unwrap();
    let table = registry.split("registry! {").nth(1).and_then(|t| t.split('}').next()).unwrap_or("");
    table.lines().any(|l| l.trim().split(" =>").next() == Some(stem))
}

/// The first code block under the `# Layout` heading.
fn layout_block(design: &str) -> String {
    let after = design.split("# Layout").nth(1).expect("a Layout section");
    after.split("```").nth(1).expect("the layout's code block").to_string()
}

/// Whether the layout names the file at `rel` (relative to `src/`).
fn named(layout: &str, rel: &str) -> bool {
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '/'))
            .map(|w| w.trim_end_matches('.').to_string())
            .collect()
    };
    let (folder, file) = rel.rsplit_once('/').unwrap_or(("", rel));
    let stem = file.trim_end_matches(".rs");
    if words(layout).contains(&format!("src/{rel}")) || words(layout).contains(rel) {
        return true;
    }
    if folder.is_empty() {
        return words(layout).contains(file);
    }
    // Within the entry of the folder (`  folder/   ...` up to the next entry).
    let entry = folder_entry(layout, folder);
    stem == "mod" && !entry.is_empty() || words(&entry).contains(stem) || words(&entry).contains(file)
}

/// The text of the layout's entry for `folder` (its first line starts with
/// `folder/`, indented by two; its text runs until the next entry). A
/// folder inside another is read in its parent's entry.
fn folder_entry(layout: &str, folder: &str) -> String {
    let top = folder.split('/').next().unwrap_or(folder);
    let mut text = String::new();
    let mut inside = false;
    for line in layout.lines() {
        let entry_start = line.starts_with("  ") && !line.starts_with("   ");
        if entry_start {
            inside = line.trim_start().starts_with(&format!("{top}/"))
                || line.trim_start().starts_with(&format!("{top}.rs"));
        }
        if inside {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}
