//! The Node.js adapter library (`sdk/node`): its own `node --test` suite,
//! run with the crashcells built here, so that `cargo test` covers it, a
//! test per file so that they run side by side: the library's rules unit
//! by unit (`rules`), the protocol corpus (protocol/corpus/*.json) case
//! by case (`corpus`), the one-line errors and exit codes of an adapter that
//! breaks a rule (`errors`), `child-check` and `run` on a store written on
//! the library (`childcheck`: conforming, failing with the adapter's line
//! for each broken rule; `mutant`: the library's `drop-append` firing cell
//! 1 where the store passes, `resend-on-catch-up` and `stall` doing what
//! they name), `co-append` on that store without the driver (`coappend`:
//! two writers wait at a held barrier, then each acks its own messages,
//! recovered once at contiguous positions),
//! and the small store of docs/adapters/node.md as the page shows it
//! (`doc`); and the npm package's `crashcells` command, the launcher of
//! the platform package's binary (`launcher`).
//!
//! It needs Node.js 20 and the `sqlite3` shell (the suite's store runs on
//! it: Node.js 20 has no SQLite of its own); without them the tests skip
//! through the suite's one policy (a failure under CI). The page's store runs on the better-sqlite3 that
//! `examples/langgraph-store/fetch` installs: without it, `doc` skips
//! through the same policy.

use crashcells::testskip::{Need, skip_or_fail};
use std::path::Path;
use std::process::Command;

const SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sdk/node");

/// Whether `program --version` runs.
fn available(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Runs `sdk/node/test/NAME.test.mjs`; asserts it passed and skipped
/// `skips` tests (a skipped test would pass without checking anything).
fn suite(name: &str, skips: u32) {
    if let Some(missing) = ["node", "sqlite3"].into_iter().find(|p| !available(p)) {
        return skip_or_fail(Need::NodeAndSqliteShell, format_args!("`{missing} --version` did not run"));
    }
    // The suites' scratch folders (os.tmpdir()) go in one folder removed
    // after the run, whatever a test left behind.
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new("node")
        .args(["--test", &format!("test/{name}.test.mjs")])
        .current_dir(SDK)
        .env("TMPDIR", scratch.path())
        .env("CRASHCELLS", env!("CARGO_BIN_EXE_crashcells"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node --test {name} failed:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("# fail 0"), "{text}");
    assert!(text.contains(&format!("# skipped {skips}")), "expected {skips} skipped:\n{text}");
    assert!(skips > 0 || !text.contains("# pass 0"), "nothing ran:\n{text}");
}

#[test]
fn the_librarys_rules_hold_unit_by_unit() {
    suite("rules", 0);
}

#[test]
fn the_library_agrees_with_the_protocol_corpus_case_by_case() {
    suite("corpus", 0);
}

#[test]
fn an_adapter_that_breaks_a_rule_gets_one_line_and_its_exit_code() {
    suite("errors", 0);
}

#[test]
fn a_store_on_the_library_conforms_and_its_broken_rules_fail_child_check() {
    suite("childcheck", 0);
}

#[test]
fn the_librarys_own_mutants_break_what_they_name_and_drop_append_fires_cell_1() {
    suite("mutant", 0);
}

#[test]
fn co_append_writers_wait_at_the_barrier_then_each_append_their_own_messages() {
    suite("coappend", 0);
}

#[test]
fn the_npm_launcher_passes_arguments_exit_codes_and_signals_through() {
    suite("launcher", 0);
}

#[test]
fn the_pages_small_store_conforms_as_the_page_shows_it() {
    let fetched =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/langgraph-store/node_modules/.crashcells-fetched");
    if !fetched.is_file() {
        return skip_or_fail(Need::LangGraphPackages, "the page's store runs on better-sqlite3");
    }
    suite("doc", 0);
}

#[test]
fn an_async_store_is_awaited_and_one_whose_append_writes_nothing_fires() {
    suite("async", 0);
}
