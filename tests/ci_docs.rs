//! docs/CI.md as a team runs it. Every snippet of the page is a fenced
//! block whose info string is `LANG ci-snippet NAME` (NAME: the path the
//! team keeps it at, or a name): the shell scripts run as a CI job runs
//! them, with a stand-in for `gh` on PATH that records its arguments and
//! fails a comment body longer than GitHub takes; the workflows may only
//! call those scripts; the known-findings file must parse as the
//! interface says.
//!
//! The known-findings file's fingerprints are real: a run of the audit
//! matrix's `memory` and `off` legs with it has every fire known.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::{scratch, short_catalog};

/// One marked snippet of docs/CI.md.
struct Snippet {
    lang: String,
    name: String,
    text: String,
}

fn snippets() -> Vec<Snippet> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CI.md")).unwrap();
    let mut out = Vec::new();
    let mut open: Option<Snippet> = None;
    for line in doc.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                let words: Vec<&str> = info.split_whitespace().collect();
                if let [lang, "ci-snippet", name] = words[..] {
                    open = Some(Snippet { lang: lang.into(), name: name.into(), text: String::new() });
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
    assert!(open.is_none(), "a snippet is not closed");
    out
}

/// Every snippet is one the test knows how to run or check, the scripts
/// parse as bash, the gate and the audit judge their fires against the
/// known findings and post only what is new, the workflows only call the
/// scripts, and the known-findings file has the documented shape.
#[test]
fn every_ci_snippet_is_checked_and_parses() {
    let all = snippets();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            ".crashcells/known.toml",
            ".crashcells/gate.sh",
            ".github/workflows/crashcells-gate.yml",
            ".crashcells/share.sh",
            ".crashcells/merge.sh",
            ".github/workflows/crashcells-audit.yml",
            "plain-runner",
            "plain-merge"
        ]
    );
    for name in [".crashcells/gate.sh", ".crashcells/share.sh"] {
        let s = all.iter().find(|s| s.name == name).unwrap();
        assert!(s.text.contains("--known .crashcells/known.toml"), "{name} judges its fires against the file");
    }
    for name in [".crashcells/gate.sh", ".crashcells/merge.sh"] {
        let s = all.iter().find(|s| s.name == name).unwrap();
        assert!(s.text.contains("--new-only --format markdown"), "{name} posts only what is new");
    }
    for s in &all {
        match s.lang.as_str() {
            "sh" => shell_snippet(s),
            "yaml" => workflow(s, &all),
            "toml" => known_findings(s),
            other => panic!("{}: a snippet in {other} is run by no test", s.name),
        }
    }
}

/// A shell snippet: bash parses it.
fn shell_snippet(s: &Snippet) {
    let out = Command::new("bash").arg("-n").arg("-c").arg(&s.text).output().unwrap();
    assert!(out.status.success(), "{}: {}", s.name, String::from_utf8_lossy(&out.stderr));
}

/// A workflow: its steps run the scripts (or install crashcells), with no
/// `${{ }}` expression inside a step's shell: the scripts read variables.
fn workflow(s: &Snippet, all: &[Snippet]) {
    let runs: Vec<&str> = s.text.lines().filter_map(|l| l.trim().strip_prefix("- run: ")).collect();
    assert!(runs.len() >= 2, "{}", s.name);
    for run in runs {
        if run == "cargo install --locked --path ." {
            continue;
        }
        assert!(all.iter().any(|o| o.name == run && o.lang == "sh"), "{}: `{run}` is no script of the page", s.name);
    }
    assert!(!s.text.contains("run: |") && !s.text.contains("run: >"), "{}: shell belongs in the scripts", s.name);
}

/// The known-findings file: `[[finding]]` entries with a `fingerprint` and
/// an `issue`, and an optional `note`, nothing else; each fingerprint one of
/// a cell of the catalog, as `run --known` reads it.
fn known_findings(s: &Snippet) {
    let read = crashcells::report::known::parse(&s.text).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    for f in &read {
        let fp: crashcells::report::Fingerprint = f.fingerprint.parse().unwrap();
        assert!(catalog.find(&fp.cell).is_ok(), "{}: no cell `{}`", s.name, fp.cell);
    }
    // `parse` refuses another key, an unknown field and a missing one.
    assert!(read.len() >= 4, "SQLite's documented losses, cells 1 and 3 on memory and off");
}

/// The page's known findings are what the audit matrix's `memory` and
/// `off` legs fire on the reference store: with the file, every fire of a
/// sweep there is known, and the run passes.
#[test]
fn the_known_findings_of_the_page_are_what_the_audit_matrix_fires() {
    let all = snippets();
    let dir = scratch();
    let known = dir.path().join("known.toml");
    std::fs::write(&known, &all.iter().find(|s| s.lang == "toml").unwrap().text).unwrap();
    let mut args = vec!["run", "--matrix", "audit", "--leg", "memory", "--leg", "off", "--kill", "syscall"];
    args.extend(["--seed", "4", "--known", known.to_str().unwrap()]);
    let (code, report) = crate::common::run_json(&args, dir.path());
    let verdicts: Vec<(&str, &str)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["cell"].as_str().unwrap(), r["verdict"].as_str().unwrap()))
        .collect();
    let writers = ["prefix-durability", "rotation-atomicity", "fork-determinism", "outbox-exactly-once"];
    assert_eq!(verdicts.len(), 2 * writers.len(), "{report:#}");
    if verdicts.iter().all(|(_, v)| *v == "skip") {
        return crate::common::tracing_refused(&report["results"][0]["reason"]);
    }
    assert!(verdicts.iter().all(|(_, v)| *v == "known"), "{verdicts:?}");
    assert_eq!(code, 0, "{report:#}");
}

/// A job's folder: the repository's `.crashcells/` from the page, and PATH
/// with `crashcells` (this build, each `run` narrowed to keep the test
/// short: one cell, timed, short trials) and the stand-in `gh`.
struct Job {
    dir: tempfile::TempDir,
    path: String,
}

impl Job {
    fn new(all: &[Snippet]) -> Job {
        let dir = scratch();
        let bin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        for s in all.iter().filter(|s| s.lang != "yaml") {
            let path = dir.path().join(&s.name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &s.text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
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

    /// Runs `script` (a path in the job's folder) as a CI step: in the job's
    /// folder, with `env` and the CI's variables GitHub would set.
    fn step(&self, script: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(self.dir.path().join(script)).current_dir(self.dir.path()).env("PATH", &self.path);
        for var in ["GITHUB_SHA", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "EXTRA", "TRIALS"] {
            cmd.env_remove(var);
        }
        cmd.env("GITHUB_STEP_SUMMARY", self.dir.path().join("summary.md"));
        cmd.env("GH_LOG", self.dir.path().join("gh.log")).env("TRACKING_ISSUE", "15").env("NO_COLOR", "1");
        cmd.envs(env.iter().copied()).output().unwrap()
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
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
    let all = snippets();
    let job = Job::new(&all);
    write_script(&job.dir.path().join("post.sh"), "gh issue comment \"$TRACKING_ISSUE\" --body-file body.md\n");
    std::fs::write(job.dir.path().join("body.md"), "a".repeat(65_536)).unwrap();
    assert_eq!(job.step("post.sh", &[]).status.code(), Some(0));
    std::fs::write(job.dir.path().join("body.md"), "a".repeat(65_537)).unwrap();
    let out = job.step("post.sh", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too long (65537 characters)"));
    assert_eq!(job.file("gh.log").lines().collect::<Vec<_>>(), ["issue comment 15 --body-file body.md"; 2]);
}

/// Every script of the page, run as the workflows and the plain shell CI
/// run them: the push gate clean and with a fire (posted once, under the
/// size limit), the audit's shares and their merge (each run once on a job
/// page), a share whose budget runs out (130, not 124), the plain runner
/// and merge.
#[test]
fn ci_snippets_run_as_a_team_runs_them() {
    let all = snippets();

    // The push gate: the reference store passes; nothing is posted.
    let job = Job::new(&all);
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
    let job = Job::new(&all);
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

    // A share whose budget runs out ends itself with a partial report: 130.
    let job = Job::new(&all);
    let env = [("K", "1"), ("N", "1"), ("SEED", "9"), ("BUDGET", "1s"), ("TRIALS", "100")];
    let cut = job.step(".crashcells/share.sh", &env);
    assert_eq!(cut.status.code(), Some(130), "{}", String::from_utf8_lossy(&cut.stderr));
    assert!(job.file("part-1.json").contains("\"interrupted\": true"));

    // The plain shell CI: a runner's share copied to the shared folder, then the merge there.
    let job = Job::new(&all);
    let shared = job.dir.path().join("shared");
    let shared = shared.to_str().unwrap();
    let runner = job.step("plain-runner", &[("K", "1"), ("N", "1"), ("SEED", "9"), ("SHARED", shared)]);
    assert_eq!(runner.status.code(), Some(0), "{}", String::from_utf8_lossy(&runner.stderr));
    let merge = job.step("plain-merge", &[("N", "1"), ("SEED", "9"), ("SHARED", shared)]);
    assert_eq!(merge.status.code(), Some(0), "{}", String::from_utf8_lossy(&merge.stderr));
    assert!(Path::new(shared).join("9/crashcells.xml").is_file());
}
