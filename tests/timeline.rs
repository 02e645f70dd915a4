//! A fire's `timeline.html`, opened as a reader opens it: in a browser
//! (headless Chromium, `--dump-dom`: the page after its script ran), which
//! must have drawn the kill point it marks. Chromium is a test dependency
//! of CI (`.ci/run` installs it): without it this test skips, saying so,
//! except under `CI=true`, where it fails.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{run_json, scratch};

/// The browser on PATH, if there is one.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok())
}

/// The page's DOM after its script ran, within a deadline.
fn dump_dom(browser: &str, page: &Path) -> String {
    let profile = scratch();
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--no-first-run", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{browser} did not print the page within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// A syscall fire's timeline, rendered by a browser, marks its kill point:
/// the row the script drew for it names the call, and the killed call
/// itself is marked; the human report links the page beside the evidence.
#[test]
fn a_browser_draws_the_kill_point_of_a_fires_timeline() {
    let Some(browser) = chromium() else {
        return crashcells::testskip::skip_or_fail(crashcells::testskip::Need::Chromium, "CI installs it");
    };
    let dir = scratch();
    let args = ["run", "--cell", "1", "--leg", "wal", "--kill", "syscall", "--mutant", "ack-before-commit"];
    let (code, report) = run_json(&[&args[..], &["--seed", "3"]].concat(), dir.path());
    let r = &report["results"][0];
    if r["verdict"] == "skip" {
        return crate::common::tracing_refused(&r["reason"]);
    }
    assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "{report:#}");
    let page = Path::new(r["timeline"].as_str().unwrap());
    assert_eq!(page.parent().unwrap(), Path::new(r["evidence"].as_str().unwrap()));
    // The human and Markdown reports link it beside the evidence.
    let json = dir.path().join("run.json");
    std::fs::write(&json, report.to_string()).unwrap();
    for (format, line) in [
        ("human", format!("    timeline: {}\n", page.display())),
        ("markdown", format!("- **Timeline:** `{}`", page.display())),
    ] {
        let out = crate::common::bin()
            .args(["report", "--from", json.to_str().unwrap(), "--format", format])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&line),
            "{format}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let text = std::fs::read_to_string(page).unwrap();
    assert!(!text.contains("id=\"kill-point\""), "the page as written has no mark: the script draws it");

    let dom = dump_dom(browser, page);
    let point = r["kill_points"].as_array().unwrap().last().unwrap()["ordinal"].as_u64().unwrap();
    let mark = dom.find("id=\"kill-point\"").unwrap_or_else(|| panic!("no kill point drawn:\n{dom}"));
    let row = &dom[mark..mark + dom[mark..].find("</tr>").unwrap()];
    assert!(row.contains(&format!("KILL at #{point} (kill point {point})")), "{row}");
    assert!(row.contains("SIGKILL at this call's entry"), "{row}");
    assert!(
        dom.contains("<tr class=\"even kill\">") || dom.contains("<tr class=\"odd kill\">"),
        "the killed call's row"
    );
    assert!(dom.contains("<svg"), "the strip of calls by file");
}
