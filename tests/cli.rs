//! The command line as users meet it: exit codes and one-line errors.

use crate::common::{bin, run, scratch};

fn fails_with(args: &[&str], needle: &str) {
    let dir = scratch();
    let out = run(args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: one line expected: {stderr}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    fails_with(&["run", "--cell", "nope"], "unknown cell `nope`");
    fails_with(&["run", "--mutant", "nope"], "unknown mutant `nope`");
    fails_with(&["run", "--matrix", "nope"], "unknown matrix `nope`");
    fails_with(&["run", "--trials", "0"], "--trials");
    fails_with(&["run", "--seed", "abc"], "--seed");
    fails_with(&["run", "--out", "/nonexistent-folder/x.json"], "does not exist");
}

/// Every unknown value is one line that lists the valid ones and, for a
/// typo, names the nearest: format, mutant, cell, matrix, leg, kill mode.
#[test]
fn an_unknown_value_lists_the_valid_ones_and_names_the_nearest() {
    let cases: [(&[&str], &str, &str); 7] = [
        (&["run", "--format", "jsno"], "did you mean `json`?", "(valid: human, json, junit, markdown)"),
        (&["run", "--mutant", "racy-clam"], "did you mean `racy-claim`?", "(known: ack-before-commit, racy-claim,"),
        (&["run", "--cell", "prefx"], "did you mean `prefix-durability`?", "(known: 1 prefix-durability, 2 consume"),
        (&["run", "--matrix", "audt"], "did you mean `audit`?", "(built in: default, audit, libraries;"),
        (&["run", "--leg", "dlete"], "did you mean `delete`?", "(legs: default, delete, wal)"),
        (&["run", "--kill", "sycall"], "did you mean `syscall`?", "(valid: timed, syscall, none,"),
        (&["report", "--format", "mardown", "--from", "r.json"], "did you mean `markdown`?", "(valid: human, json,"),
    ];
    for (args, nearest, listed) in cases {
        fails_with(args, nearest);
        fails_with(args, listed);
    }
    // Near nothing: the list alone.
    fails_with(&["run", "--format", "xml"], "'xml' for '--format <FORMAT>' (valid: human,");
}

/// The mutants are the reference store's: a `--child` that does not
/// implement one refuses it in the preflight, and the run stops there with
/// one line and exit 2, before any cell ran; a name crashcells does not know
/// is refused before any child runs at all.
#[test]
fn a_mutant_a_child_does_not_implement_is_refused_before_any_cell_runs() {
    let tiny = format!("python3 {}/tests/adapters/tiny.py", env!("CARGO_MANIFEST_DIR"));
    let dir = scratch();
    let out = run(&["run", "--child", &tiny, "--mutant", "drop-append", "--cell", "1", "--seed", "1"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
    assert!(stderr.contains("--mutant drop-append: the child `python3 ") && stderr.contains("refused it"), "{stderr}");
    assert!(stderr.contains("the mutants are the reference store's") && stderr.ends_with("tiny: no mutants here\n"));
    assert!(out.stdout.is_empty() && !dir.path().join("evidence").exists(), "no cell ran");
    fails_with(&["run", "--child", "/nonexistent/store", "--mutant", "nope"], "unknown mutant `nope`");
}

/// The reference store refuses the mutants only another store plays, on
/// whatever operation its cell runs (cell 6's `co-append` too), rather than
/// passing as if it played them.
#[test]
fn the_reference_store_refuses_the_examples_mutants() {
    let dir = scratch();
    for (mutant, cell) in [
        ("unsynced-body-file", "1"),
        ("split-position-read", "6"),
        ("late-position-read", "6"),
        ("open-sweeps-orphans", "6"),
        ("split-attached-rotation", "3"),
    ] {
        let out = run(&["run", "--mutant", mutant, "--cell", cell, "--seed", "1", "--trials", "1"], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mutant}: {stderr}");
        assert!(stderr.contains(&format!("does not implement the mutant `{mutant}`")), "{mutant}: {stderr}");
    }
}

/// `list` and `run --help` name every mutant, with the cell it is for and
/// what it breaks.
#[test]
fn list_and_run_help_name_the_mutants() {
    let help = bin().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let list = bin().arg("list").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let width = crashcells_protocol::Mutant::names().iter().map(|n| n.len()).max().unwrap();
    for m in crashcells_protocol::Mutant::ALL {
        let line = format!("{:<width$}  cell {}: {}", m.as_str(), m.cell(), m.breaks());
        // The help wraps at 100 columns: compare its words.
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words(&help).contains(&words(&line)), "run --help lacks {line}:\n{help}");
        assert!(list.contains(&line), "list lacks {line}:\n{list}");
    }
    let json = bin().args(["list", "--format", "json"]).output().unwrap();
    let cells: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let names = |n: usize| -> Vec<String> {
        cells[n]["mutants"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap().to_string()).collect()
    };
    let cell1 = [
        "ack-before-commit",
        "stall",
        "drop-append",
        "ack-despite-io-error",
        "ignore-short-write",
        "dirty-marker",
        "claims-full",
        "unsynced-body-file",
    ];
    assert_eq!(names(0), cell1);
    assert_eq!(names(1), ["racy-claim", "split-claim"]);
    assert!(cells[2]["mutants"][0]["breaks"].as_str().unwrap().contains("two transactions"));
}

#[test]
fn list_shows_every_catalog_cell_as_json() {
    let out = bin().args(["list", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let cells: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<_> = cells.as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect();
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    assert_eq!(ids, catalog.cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>());
    for c in cells.as_array().unwrap() {
        for field in ["number", "clause", "origin", "status", "legs"] {
            assert!(!c[field].is_null(), "{field} missing in {c}");
        }
    }
}

/// A count of zero says what is wrong in words, not as clap's range of
/// machine integers.
#[test]
fn a_count_of_zero_is_refused_in_words() {
    for (flag, value) in [("--jobs", "0"), ("--trials", "0"), ("--deadline", "0"), ("--jobs", "-1")] {
        let dir = scratch();
        let out = run(&["run", flag, value], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
        assert!(stderr.contains(&format!("'{value}' for '{flag} ")) && stderr.contains("from 1 to"), "{stderr}");
        assert!(!stderr.contains("18446744073709551615") && !stderr.contains("4294967295"), "{stderr}");
    }
}

/// Each option of each help page states its default once (clap adds the
/// `[default: ...]` of a default value; a doc comment must not repeat it).
#[test]
fn no_help_page_says_a_default_twice() {
    for command in ["run", "list", "report", "audit", "child-check", "prune"] {
        for flag in ["-h", "--help"] {
            let out = bin().args([command, flag]).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            // An option's text runs from its `-x`/`--name` line to the next one.
            let mut options: Vec<String> = Vec::new();
            for line in text.lines() {
                match options.last_mut() {
                    Some(o) if !line.trim_start().starts_with('-') => o.push_str(line),
                    _ => options.push(line.to_string()),
                }
            }
            for option in options {
                assert!(option.matches("[default:").count() <= 1, "{command} {flag}: {option}");
            }
        }
    }
}

#[test]
fn every_command_has_a_help_page_with_examples() {
    for command in ["run", "list", "report", "audit", "child-check", "prune"] {
        let out = bin().args([command, "--help"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{command}");
        assert!(text.contains("Examples:\n  crashcells "), "{command} --help has no examples:\n{text}");
    }
}

/// Every help page, long and short, fits 100 columns (a CI log, a narrow
/// terminal), and `-h` is a summary: shorter than `--help`.
#[test]
fn no_help_line_is_wider_than_100_columns_and_h_is_a_summary() {
    for command in ["", "run", "list", "report", "audit", "child-check", "prune"] {
        let mut lengths = Vec::new();
        for flag in ["--help", "-h"] {
            let out = bin().args([command, flag].iter().filter(|a| !a.is_empty())).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            for line in text.lines() {
                assert!(line.chars().count() <= 100, "crashcells {command} {flag}: a line over 100 columns: {line}");
            }
            lengths.push(text.lines().count());
        }
        assert!(lengths[1] <= lengths[0], "crashcells {command}: -h is longer than --help");
    }
    let run = bin().args(["run", "-h"]).output().unwrap();
    let warm = String::from_utf8_lossy(&run.stdout).lines().skip_while(|l| !l.contains("--warm-pool")).count();
    let summary = String::from_utf8_lossy(&run.stdout).lines().filter(|l| l.contains("--warm-pool")).count();
    assert!(warm > 0 && summary == 1, "run -h names --warm-pool once");
    let (short, long) = (bin().args(["run", "-h"]).output().unwrap(), bin().args(["run", "--help"]).output().unwrap());
    assert!(short.stdout.len() * 2 < long.stdout.len(), "run -h is a summary of run --help");
}

/// A `child-check` works in a folder that names its process, as a run's
/// does: the child sees it in every path it is given.
#[test]
fn a_child_check_folder_carries_the_pid() {
    let dir = scratch();
    let log = dir.path().join("args.log");
    let script = dir.path().join("child.sh");
    std::fs::write(&script, format!("echo \"$*\" >> {}\nexit 3\n", log.display())).unwrap();
    let child = format!("sh {}", script.display());
    // The driver's pid as the test sees it: inside the run's pid namespace
    // the child's $PPID is 0 (its parent is outside).
    let driver = bin()
        .args(["child-check", "--child", &child, "--workdir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = driver.id();
    let out = driver.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let logged = std::fs::read_to_string(&log).unwrap();
    let first = logged.lines().next().unwrap();
    assert!(first.contains(&format!("/crashcells-child-check-{pid}-")), "{first}");
}

/// `child-check --only` names checks `child-check` knows: another name is
/// bad input, refused before any child runs, with the names it knows.
#[test]
fn child_check_only_refuses_a_check_it_does_not_know() {
    let out = bin().args(["child-check", "--only", "ready,fork-sever"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--only: no check `fork-sever` (the checks: ready, "), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line expected: {stderr}");
}

/// `--version` names the build's commit (build.rs reads it from git), the
/// one this checkout is at when it was built from one.
#[test]
fn version_names_the_builds_commit() {
    let dir = scratch();
    let out = run(&["--version"], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, format!("crashcells {}\n", crashcells::VERSION));
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let want = head.unwrap_or_else(|| "unknown".to_string());
    assert!(text.contains(&format!("{} ({want})", env!("CARGO_PKG_VERSION"))), "{text}");
}
