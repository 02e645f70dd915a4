//! The suite's one skip policy (`crashcells::testskip`), checked on the
//! source: a test that stops early because something is missing goes through
//! `skip_or_fail` (or `common::tracing_refused`, which calls it), which
//! fails under CI; a test that prints its own skip line, or returns quietly
//! on a missing prerequisite, passes in CI without having tested anything.
//! The tests that trace a child themselves are also run with ptrace refused:
//! each must skip saying why, and fail under CI.

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

/// The tests that trace a child themselves (not through `run`), where a
/// guard that checked only the architecture let them fail on the refusal
/// instead of skipping: each must skip, saying why, where ptrace is refused.
const TRACING_THEMSELVES: [&str; 5] = [
    "forkserver::a_traced_forked_process_meets_the_kill_points_of_an_exec_one",
    "forkserver::a_recorded_forked_run_rebuilds_its_files",
    "forkserver::a_traced_forked_process_killed_at_a_point_ends_by_sigkill_and_leaves_nothing",
    "forkserver::the_processes_a_traced_forked_process_starts_are_traced_too",
    "syscall::a_call_made_to_fail_is_reported_by_sqlite_and_nothing_is_acknowledged",
];

/// This test binary, run again on `tests` with ptrace refused (EPERM, as a
/// container's seccomp profile refuses it), and `CI=true` where `ci`.
fn under_refused_tracing(tests: &[&str], ci: bool) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).expect("an architecture seccomp knows");
    let rules = [(libc::SYS_ptrace, vec![])].into_iter().collect();
    let (allow, refuse) = (seccompiler::SeccompAction::Allow, seccompiler::SeccompAction::Errno(libc::EPERM as u32));
    let filter = seccompiler::SeccompFilter::new(rules, allow, refuse, arch).expect("a filter");
    let program: seccompiler::BpfProgram = filter.try_into().expect("a program");
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args(["--exact", "--nocapture", "--test-threads", "2"]).args(tests);
    cmd.env_remove(crashcells::testskip::CI).env_remove(crashcells::testskip::REQUIRE_TRACING);
    if ci {
        cmd.env(crashcells::testskip::CI, "true");
    }
    // SAFETY: between fork and exec only prctl and seccomp run, on a
    // program built before the fork; nothing is allocated unless it fails.
    unsafe {
        cmd.pre_exec(move || seccompiler::apply_filter(&program).map_err(|e| std::io::Error::other(e.to_string())));
    }
    cmd.output().expect("the test binary runs")
}

/// With ptrace refused, a test that traces a child skips saying why; under
/// CI it fails, naming itself and the refusal.
#[test]
fn refused_tracing_skips_each_traced_test_and_fails_it_under_ci() {
    let out = under_refused_tracing(&TRACING_THEMSELVES, false);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "outside CI a refused trace is a skip, not a failure:\n{said}");
    for test in TRACING_THEMSELVES {
        assert!(said.contains(&format!("{test}: skipped: tracing")), "{test} said no skip:\n{said}");
    }
    let out = under_refused_tracing(&TRACING_THEMSELVES, true);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "under CI a refused trace fails:\n{said}");
    for test in TRACING_THEMSELVES {
        let failed = format!("{test} could not run and CI or {} is set", crashcells::testskip::REQUIRE_TRACING);
        assert!(said.contains(&failed), "{test} did not fail naming itself:\n{said}");
    }
}
