//! docs/CI.md and the CI files it shows, as a team runs them. The files
//! are the repository's (`.crashcells/`: the known findings, the scripts,
//! the workflows); the page shows each in a fenced block whose info string
//! is `LANG ci-file PATH`, unchanged (`scripts/ci-doc-sync` copies them in),
//! so that page and files cannot drift. The scripts run from a copy of the
//! folder made as the page says (`cp -rp`, modes kept), each executed as a
//! CI step executes it, with a stand-in for `gh` on PATH that records its
//! arguments and fails a comment body longer than GitHub takes; the
//! workflows may only call those scripts; the known-findings file must
//! parse as the interface says.
//!
//! The known-findings file's fingerprints are real: a run of the audit
//! matrix's `memory` and `off` legs with it has every fire known.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{scratch, short_catalog};

/// A path of the repository.
fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// One block of docs/CI.md that shows a file.
struct Shown {
    lang: String,
    path: String,
    text: String,
}

fn shown() -> Vec<Shown> {
    let doc = std::fs::read_to_string(repo("docs/CI.md")).unwrap();
    let mut out = Vec::new();
    let mut open: Option<Shown> = None;
    for line in doc.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                let words: Vec<&str> = info.split_whitespace().collect();
                if let [lang, "ci-file", path] = words[..] {
                    open = Some(Shown { lang: lang.into(), path: path.into(), text: String::new() });
                }
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(s), _) => {
                s.text.push_str(line);
                s.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a block of docs/CI.md is not closed");
    out
}

/// The CI files of the repository: every file under `.crashcells/`.
fn ci_files() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![repo(".crashcells")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(repo("")).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// The page shows every CI file once, as it is in the repository: a file
/// edited without the page (or the page without the file) fails here.
#[test]
fn the_page_shows_every_ci_file_as_it_is() {
    let all = shown();
    let mut paths: Vec<String> = all.iter().map(|s| s.path.clone()).collect();
    paths.sort();
    assert_eq!(paths, ci_files(), "docs/CI.md shows each file of .crashcells/ once");
    for s in &all {
        let file = std::fs::read_to_string(repo(&s.path)).unwrap();
        assert!(s.text == file, "docs/CI.md shows {} otherwise than the file: run scripts/ci-doc-sync", s.path);
    }
}

/// The scripts are executable where a team copies them from: in the
/// folder, and in git's index (a fresh clone takes the mode from there).
#[test]
fn the_ci_scripts_are_executable_in_the_repository() {
    for path in ci_files().iter().filter(|p| p.ends_with(".sh")) {
        let mode = std::fs::metadata(repo(path)).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{path} is not executable ({mode:o})");
        let git = Command::new("git").args(["ls-files", "-s", path]).current_dir(repo("")).output();
        match git {
            Ok(out) if out.status.success() && !out.stdout.is_empty() => {
                let index = String::from_utf8_lossy(&out.stdout);
                assert!(index.starts_with("100755 "), "{path} is not executable in git's index: {index}");
            }
            // Not a git checkout (a source archive), or not committed yet: the folder's mode is all there is.
            _ => eprintln!("{path}: git's index not checked here"),
        }
    }
}

/// Every CI file is one the test knows how to check: the scripts parse as
/// bash, the gate and the audit judge their fires against the known
/// findings and post only what is new, the workflows only call the
/// scripts and compile crashcells in one job at most, and the
/// known-findings file has the documented shape.
#[test]
fn every_ci_file_is_checked_and_parses() {
    for name in [".crashcells/gate.sh", ".crashcells/share.sh"] {
        let text = std::fs::read_to_string(repo(name)).unwrap();
        assert!(text.contains("--known .crashcells/known.toml"), "{name} judges its fires against the file");
    }
    for name in [".crashcells/gate.sh", ".crashcells/merge.sh"] {
        let text = std::fs::read_to_string(repo(name)).unwrap();
        assert!(text.contains("--new-only --format markdown"), "{name} posts only what is new");
    }
    for s in shown() {
        match s.lang.as_str() {
            "sh" => shell_script(&s.path),
            "yaml" => workflow(&s),
            "toml" => known_findings(&s),
            other => panic!("{}: a file in {other} is run by no test", s.path),
        }
    }
}

/// A shell script: bash parses it.
fn shell_script(path: &str) {
    let out = Command::new("bash").arg("-n").arg(repo(path)).output().unwrap();
    assert!(out.status.success(), "{path}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A workflow: its steps run the scripts of `.crashcells/` (no shell of
/// their own, so no `${{ }}` expression inside a step's shell: the scripts
/// read variables), crashcells is installed by `install.sh` before any
/// script uses it, and only a job that saves the cache may compile: every
/// other one restores it and fails on a miss rather than compile again.
fn workflow(s: &Shown) {
    let runs: Vec<&str> =
        s.text.lines().filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("run: ")).collect();
    assert!(runs.len() >= 2, "{}", s.path);
    for run in &runs {
        let script = run.split_whitespace().next().unwrap();
        assert!(script.starts_with(".crashcells/") && repo(script).is_file(), "{}: `{run}` is no CI script", s.path);
    }
    assert!(!s.text.contains("run: |") && !s.text.contains("run: >"), "{}: shell belongs in the scripts", s.path);
    let installs = runs.iter().filter(|r| **r == ".crashcells/install.sh").count();
    let saves = s.text.matches("uses: actions/cache/save@").count();
    let restores_only = s.text.matches("fail-on-cache-miss: true").count();
    assert_eq!(saves, 1, "{}: one job compiles on a miss and saves the binary", s.path);
    assert_eq!(installs, saves + restores_only, "{}: every other job restores it or fails", s.path);
    let first_install = runs.iter().position(|r| *r == ".crashcells/install.sh").unwrap();
    assert_eq!(runs[first_install - 1], ".crashcells/install.sh key", "{}: the key before the cache", s.path);
}

/// The known-findings file: `[[finding]]` entries with a `fingerprint` and
/// an `issue`, and an optional `note`, nothing else; each fingerprint one of
/// a cell of the catalog, as `run --known` reads it.
fn known_findings(s: &Shown) {
    let read = crashcells::model::known::parse(&s.text).unwrap_or_else(|e| panic!("{}: {e}", s.path));
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    for f in &read {
        let fp: crashcells::model::Fingerprint = f.fingerprint.parse().unwrap();
        assert!(catalog.find(&fp.cell).is_ok(), "{}: no cell `{}`", s.path, fp.cell);
    }
    // `parse` refuses another key, an unknown field and a missing one.
    assert!(read.len() >= 4, "SQLite's documented losses, cells 1 and 3 on memory and off");
}

/// The repository's known findings are what the audit matrix's `memory`
/// and `off` legs fire on the reference store: with the file, every fire
/// of a sweep there is known, and the run passes.
#[test]
fn the_known_findings_of_the_repository_are_what_the_audit_matrix_fires() {
    let dir = scratch();
    let known = repo(".crashcells/known.toml");
    let mut args = vec!["run", "--matrix", "audit", "--leg", "memory", "--leg", "off", "--kill", "syscall"];
    args.extend(["--seed", "4", "--known", known.to_str().unwrap()]);
    let (code, report) = crate::common::run_json(&args, dir.path());
    let verdicts: Vec<(&str, &str)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["cell"].as_str().unwrap(), r["verdict"].as_str().unwrap()))
        .collect();
    // Every workload cell of the registry (a race has no syscall sweep on these legs' kill).
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    let workload = |c: &&crashcells::catalog::CellSpec| {
        crashcells::plan::shape_of(c).is_ok_and(|s| matches!(s, crashcells::cells::Shape::Workload(_)))
    };
    let writers = catalog.cells.iter().filter(workload).count();
    assert_eq!(verdicts.len(), 2 * writers, "{report:#}");
    if verdicts.iter().all(|(_, v)| *v == "skip") {
        return crate::common::tracing_refused(&report["results"][0]["reason"]);
    }
    assert!(verdicts.iter().all(|(_, v)| *v == "known"), "{verdicts:?}");
    assert_eq!(code, 0, "{report:#}");
}

/// A job's folder: the repository's `.crashcells/` copied as the page
/// says (`cp -rp`), and PATH with `crashcells` (this build, each `run`
/// narrowed to keep the test short: one cell, timed, short trials) and the
/// stand-in `gh`.
struct Job {
    dir: tempfile::TempDir,
    path: String,
}

impl Job {
    fn new() -> Job {
        let dir = scratch();
        let copied = Command::new("cp").arg("-rp").arg(repo(".crashcells")).arg(dir.path()).status().unwrap();
        assert!(copied.success(), "cp -rp .crashcells");
        let bin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        let catalog = short_catalog(dir.path());
        let narrowed = format!(
            "#!/bin/sh\n# The real binary; each run narrowed to cell 1, timed, ${{TRIALS:-1}} short trials.\n\
             if [ \"$1\" = run ]; then shift; exec {bin} run \"$@\" --cell 1 --kill timed --trials \"${{TRIALS:-1}}\" \
             --catalog {catalog} --workdir {work} $EXTRA; fi\nexec {bin} \"$@\"\n",
            bin = env!("CARGO_BIN_EXE_crashcells"),
            catalog = catalog.display(),
            work = dir.path().display(),
        );
        write_script(&bin_dir.join("crashcells"), &narrowed);
        write_script(&bin_dir.join("gh"), GH);
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        Job { dir, path }
    }

    /// Runs `script` (a path in the job's folder) as a CI step does: the
    /// file itself (its mode decides whether it runs), in the job's folder,
    /// with `env` and the CI's variables GitHub would set.
    fn step(&self, script: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(self.dir.path().join(script));
        cmd.current_dir(self.dir.path()).env("PATH", &self.path);
        for var in ["GITHUB_SHA", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "EXTRA", "TRIALS"] {
            cmd.env_remove(var);
        }
        cmd.env("GITHUB_STEP_SUMMARY", self.dir.path().join("summary.md"));
        cmd.env("GH_LOG", self.dir.path().join("gh.log")).env("TRACKING_ISSUE", "15").env("NO_COLOR", "1");
        // As `common::bin()`: a fire's repro rerun once, not five times.
        cmd.env("CRASHCELLS_REFIRE", "1");
        // The reference store, asked for by name (a test may name another, or none).
        cmd.env("CRASHCELLS_CHILD", "builtin");
        cmd.envs(env.iter().copied()).output().unwrap()
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// What a failed step's assertion shows: its stderr, and each result of
    /// the share's report `part` that did not pass (which cell, leg and
    /// kill, and why): an exit code alone does not say which result moved.
    fn why(&self, out: &Output, part: &str) -> String {
        let report: serde_json::Value = serde_json::from_str(&self.file(part)).unwrap_or_default();
        let results = report["results"].as_array().cloned().unwrap_or_default();
        let moved = results
            .iter()
            .filter(|r| r["verdict"] != "pass" && r["verdict"] != "skip")
            .map(|r| format!("{}/{}/{}: {} {}", r["cell"], r["leg"], r["kill"], r["verdict"], r["reason"]));
        let moved: Vec<String> = moved.collect();
        format!("{}\nnot passed in {part}: {moved:#?}", String::from_utf8_lossy(&out.stderr))
    }
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The stand-in for `gh`: records its arguments, and refuses a body file
/// longer than a GitHub comment takes (65,536 characters), as GitHub does.
const GH: &str = r#"#!/bin/sh
echo "$*" >> "$GH_LOG"
while [ $# -gt 0 ]; do
    if [ "$1" = --body-file ]; then
        n=$(wc -m < "$2")
        if [ "$n" -gt 65536 ]; then echo "gh: body is too long ($n characters)" >&2; exit 1; fi
    fi
    shift
done
"#;

/// The stand-in itself: it records a comment and refuses one too long.
#[test]
fn the_stand_in_for_gh_refuses_a_body_github_would() {
    let job = Job::new();
    write_script(
        &job.dir.path().join("post.sh"),
        "#!/bin/sh\ngh issue comment \"$TRACKING_ISSUE\" --body-file body.md\n",
    );
    std::fs::write(job.dir.path().join("body.md"), "a".repeat(65_536)).unwrap();
    assert_eq!(job.step("post.sh", &[]).status.code(), Some(0));
    std::fs::write(job.dir.path().join("body.md"), "a".repeat(65_537)).unwrap();
    let out = job.step("post.sh", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too long (65537 characters)"));
    assert_eq!(job.file("gh.log").lines().collect::<Vec<_>>(), ["issue comment 15 --body-file body.md"; 2]);
}

/// Every script of the repository, run as the workflows and the plain shell CI
/// run them: the push gate clean and with a fire (posted once, under the
/// size limit), the audit's shares and their merge (each run once on a job
/// page), a share whose budget runs out (130, not 124), the plain runner
/// and merge.
#[test]
fn ci_scripts_run_as_a_team_runs_them() {
    // The push gate: the reference store passes; nothing is posted.
    let job = Job::new();
    let gate = job.step(".crashcells/gate.sh", &[("GITHUB_RUN_ID", "7")]);
    assert_eq!(gate.status.code(), Some(0), "{}", String::from_utf8_lossy(&gate.stderr));
    assert!(job.file("crashcells.xml").contains("<testsuite"), "the JUnit");
    assert_eq!(job.file("gh.log"), "", "nothing new, nothing posted");
    // A new fire: the gate fails and posts it once, within a comment's size.
    let fire = job.step(".crashcells/gate.sh", &[("GITHUB_RUN_ID", "8"), ("EXTRA", "--mutant drop-append")]);
    assert_eq!(fire.status.code(), Some(1), "{}", String::from_utf8_lossy(&fire.stderr));
    assert_eq!(job.file("gh.log"), "issue comment 15 --body-file new.md\n");
    assert_eq!(job.file("summary.md").matches("## crashcells:").count(), 2, "each gate run once");

    // The audit: two shares and their merge, in one folder as the merge
    // job's downloaded artifacts are.
    let job = Job::new();
    for k in ["1", "2"] {
        let share =
            job.step(".crashcells/share.sh", &[("K", k), ("N", "2"), ("SEED", "9"), ("EXTRA", "--mutant drop-append")]);
        assert_eq!(share.status.code(), Some(1), "share {k}: {}", String::from_utf8_lossy(&share.stderr));
        assert!(job.file(&format!("junit-{k}.xml")).contains("<testsuite"));
    }
    let merge = job.step(".crashcells/merge.sh", &[("N", "2")]);
    assert_eq!(merge.status.code(), Some(1), "{}", String::from_utf8_lossy(&merge.stderr));
    assert!(job.file("crashcells.xml").contains("<testsuite") && job.file("crashcells.md").contains("<details>"));
    assert_eq!(job.file("summary.md").matches("## crashcells:").count(), 3, "two shares and the merge, once each");
    assert_eq!(job.file("gh.log"), "issue comment 15 --body-file new.md\n");
    // A share missing: the merge says so once, as the page does.
    std::fs::remove_file(job.dir.path().join("part-2.json")).unwrap();
    let missing = job.step(".crashcells/merge.sh", &[("N", "2")]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    let said = "1 of 2 partitions given: part-2.json not found";
    assert!(
        std::fs::read_to_string(repo("docs/CI.md"))
            .unwrap()
            .contains("N-1 of N partitions given: part-K.json not found")
    );
    assert_eq!((stderr.matches(said).count(), stderr.lines().count()), (1, 1), "{stderr}");

    // A share whose budget runs out ends itself with a partial report: 130.
    let job = Job::new();
    let env = [("K", "1"), ("N", "1"), ("SEED", "9"), ("BUDGET", "1s"), ("TRIALS", "100")];
    let cut = job.step(".crashcells/share.sh", &env);
    assert_eq!(cut.status.code(), Some(130), "{}", String::from_utf8_lossy(&cut.stderr));
    assert!(job.file("part-1.json").contains("\"interrupted\": true"));

    // The plain shell CI: a runner's share copied to the shared folder, then the merge there.
    let job = Job::new();
    let shared = job.dir.path().join("shared");
    let shared = shared.to_str().unwrap();
    let runner = job.step(".crashcells/plain-runner.sh", &[("K", "1"), ("N", "1"), ("SEED", "9"), ("SHARED", shared)]);
    assert_eq!(runner.status.code(), Some(0), "{}", job.why(&runner, "part-1.json"));
    let merge = job.step(".crashcells/plain-merge.sh", &[("N", "1"), ("SEED", "9"), ("SHARED", shared)]);
    let stderr = String::from_utf8_lossy(&merge.stderr);
    assert_eq!(merge.status.code(), Some(0), "{stderr}");
    assert!(Path::new(shared).join("9/crashcells.xml").is_file());
    // It logs what the merged run held, as the page says.
    assert!(stderr.contains("report written to crashcells.xml (") && stderr.contains(" pass, "), "{stderr}");
}

/// A team's own store, named in `.crashcells/child` as docs/CI.md says: the
/// gate runs it (the report's `store:` line names it, not the reference
/// store); with no store named, the gate and a share refuse with the one
/// line the page quotes, exit 2, before any child ran.
#[test]
fn the_gate_runs_the_store_the_team_names_and_refuses_none() {
    let job = Job::new();
    let team = job.dir.path();
    std::fs::copy(repo("examples/python-store/store.py"), team.join("store.py")).unwrap();
    let doc = std::fs::read_to_string(repo("docs/CI.md")).unwrap();
    let unnamed = [("CRASHCELLS_CHILD", ""), ("K", "1"), ("N", "1"), ("SEED", "9")];
    for script in [".crashcells/gate.sh", ".crashcells/share.sh"] {
        let refused = job.step(script, &unnamed);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{script}: {err}");
        assert_eq!(err.lines().count(), 1, "{script}: {err}");
        assert!(doc.contains(&format!("\n{}\n", err.trim_end())), "docs/CI.md quotes {err}");
    }
    assert!(!team.join("crashcells.json").exists() && !team.join("part-1.json").exists(), "no child ran");

    std::fs::write(team.join(".crashcells/child"), "# the store under test\npython3 store.py\n").unwrap();
    let python = repo("sdk/python");
    let gate = job.step(".crashcells/gate.sh", &[("CRASHCELLS_CHILD", ""), ("PYTHONPATH", python.to_str().unwrap())]);
    assert_eq!(gate.status.code(), Some(0), "{}", job.why(&gate, "crashcells.json"));
    let human = Command::new(env!("CARGO_BIN_EXE_crashcells"))
        .args(["report", "--from", "crashcells.json"])
        .current_dir(team)
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("\nstore: `python3 store.py`\n"), "{human}");
}
