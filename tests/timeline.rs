//! A fire's `timeline.html`, opened as a reader opens it: in a browser
//! (headless Chromium, `--dump-dom`: the page after its script ran), which
//! must have drawn the kill point it marks; one page of each kind (a
//! syscall kill, a timed kill, a race, a power cut), each one seed, one
//! leg, one cell, each with its time axis where the run kept times. Chromium is a test dependency
//! of CI (`.ci/run` installs it): without it this test skips, saying so,
//! except under `CI=true`, where it fails.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

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

/// The browser, or `None` where this test may skip (not under `CI=true`).
fn browser() -> Option<&'static str> {
    let browser = chromium();
    if browser.is_none() {
        crashcells::testskip::skip_or_fail(crashcells::testskip::Need::Chromium, "CI installs it");
    }
    browser
}

/// Runs `args`, which must fire (or skip where tracing is refused), and
/// returns the result, its timeline's DOM as a browser drew it, and the
/// scratch folder that holds its evidence.
fn fired_page(args: &[&str]) -> Option<(Value, String, tempfile::TempDir)> {
    let browser = browser()?;
    let dir = scratch();
    let (code, report) = run_json(&[&["run"][..], args].concat(), dir.path());
    let r = report["results"][0].clone();
    if r["verdict"] == "skip" {
        crate::common::tracing_refused(&r["reason"]);
        return None;
    }
    assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "{report:#}");
    let dom = dump_dom(browser, Path::new(r["timeline"].as_str().unwrap()));
    Some((r, dom, dir))
}

/// The text of the element `id` in a DOM, up to its end tag `end`.
fn element<'a>(dom: &'a str, id: &str, end: &str) -> &'a str {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id} drawn:\n{dom}"));
    &dom[at..at + dom[at..].find(end).unwrap()]
}

/// A timed fire's page marks the kill after the last ack the journal
/// holds, whatever it leaves out, and draws acks against the driver's time.
#[test]
fn a_timed_page_marks_the_kill_after_the_journals_last_ack() {
    let args = ["--cell", "1", "--leg", "delete", "--kill", "timed", "--mutant", "drop-append", "--seed", "7"];
    let Some((r, dom, _dir)) = fired_page(&args) else { return };
    let journal = std::fs::read_to_string(Path::new(r["evidence"].as_str().unwrap()).join("acks.ndjson")).unwrap();
    let last = journal.lines().collect::<Vec<_>>().iter().rposition(|l| l.contains("\"kind\":\"ack\"")).unwrap();
    let acks = journal.lines().filter(|l| l.contains("\"kind\":\"ack\"")).count();
    let mark = dom.find("id=\"kill-point\"").unwrap_or_else(|| panic!("no kill drawn:\n{dom}"));
    // The item before the mark's own `<li`.
    let before = &dom[..dom[..mark].rfind("<li").unwrap()];
    let line = &before[before.rfind("<li ").unwrap()..];
    assert!(line.starts_with(&format!("<li data-ack=\"{last}\" ")), "the kill follows line {last}: {line}");
    assert!(element(&dom, "kill-point", "</li>").contains(&format!("after the journal's last ack: {acks} acks")));
    assert!(dom.contains("acked recovered"), "acked against recovered, by name");
    assert!(dom.contains("id=\"kill-time\"") && dom.contains("class=\"seen\""), "the time axis: acks and the kill");
    assert!(dom.contains(" ms</text>"), "its ticks");
}

/// A race's page: a lane per racer with its outcome, the barrier's
/// releases, every racer's acks counted, and no claim that nothing was
/// traced where r0 was killed at its call.
#[test]
fn a_race_page_has_a_lane_per_racer_with_its_outcome() {
    let args = ["--cell", "consume-once", "--mutant", "split-claim", "--kill", "syscall", "--seed", "3"];
    let Some((r, dom, _dir)) = fired_page(&args) else { return };
    let racers = element(&dom, "racers", "</table>");
    let rows: Vec<&str> = racers.split("<tr class=\"lane-row\"").skip(1).collect();
    assert_eq!(rows.len(), 8, "{racers}");
    let outcomes: Vec<&str> = rows
        .iter()
        .map(|row| {
            ["won", "lost", "killed"].into_iter().find(|o| row.contains(&format!("<td class=\"{o}\">"))).unwrap_or("?")
        })
        .collect();
    assert!(!outcomes.contains(&"?"), "{racers}");
    let call = r["kill_points"].as_array().unwrap().last().unwrap()["syscall"].as_str().unwrap().to_string();
    assert!(rows[0].contains("killed at syscall #") && rows[0].contains(&call), "r0 killed at its call: {}", rows[0]);
    assert_eq!(dom.matches("<g class=\"lane\"").count(), 8, "eight lanes drawn");
    assert!(dom.contains("class=\"release\">barrier released: r"), "the barrier's releases");
    let evidence = Path::new(r["evidence"].as_str().unwrap());
    let acks: usize = (0..8)
        .map(|n| std::fs::read_to_string(evidence.join(format!("acks-r{n}.ndjson"))).unwrap())
        .map(|j| j.lines().filter(|l| l.contains("\"kind\":\"ack\"")).count())
        .sum();
    assert!(acks > 0 && dom.contains(&format!("<h3>Acked: {acks} (the racers' ack journals")), "{acks} acks");
    assert!(!element(&dom, "how", "</p>").contains("No call trace was taken"), "the header gives a syscall kill point");
}

/// A power cut's page marks the cut among its calls; nothing in its run
/// was timed, and the page says so rather than draw an axis.
#[test]
fn a_power_page_marks_its_cut_among_the_calls() {
    let args = ["--cell", "1", "--leg", "delete", "--kill", "power", "--point", "94", "--seed", "1"];
    let Some((_, dom, _dir)) = fired_page(&args) else { return };
    assert!(element(&dom, "kill-point", "</tr>").contains("POWER CUT at #"), "the cut's row");
    assert!(element(&dom, "time-how", "</p>").contains("No time axis"));
    assert!(dom.contains("<g class=\"op\">"), "the operations labelled on the strip");
}

/// A syscall fire's timeline, rendered by a browser, marks its kill point:
/// the row the script drew for it names the call, and the killed call
/// itself is marked; the human report links the page beside the evidence.
#[test]
fn a_browser_draws_the_kill_point_of_a_fires_timeline() {
    let Some(browser) = browser() else { return };
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
    assert!(dom.contains("append 0: m0</text>") || dom.contains("<title>append 0: m0</title>"), "its operations");
    assert!(element(&dom, "time-how", "</p>").contains("No time axis"), "a trace counts calls, it does not time them");
}

/// A preemptions fire's page draws each of r0's holds as a box over its
/// lane, as many as its schedule's details say it reached. The draw is the
/// seed's: seeds 4 and 7 fired by a preemptions schedule when written.
#[test]
fn a_preemptions_page_draws_every_hold_over_r0s_lane() {
    let Some(browser) = browser() else { return };
    let dir = scratch();
    let child = format!("python3 {}/examples/python-store/store.py", env!("CARGO_MANIFEST_DIR"));
    for seed in ["4", "7", "1", "2", "3", "5", "6", "8"] {
        let args = ["run", "--child", &child, "--cell", "6", "--kill", "syscall", "--mutant", "late-position-read"];
        let (_, report) = run_json(&[&args[..], &["--seed", seed]].concat(), dir.path());
        let r = &report["results"][0];
        if r["verdict"] == "skip" {
            crate::common::tracing_refused(&r["reason"]);
            return;
        }
        let Some(said) = r["details"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|d| d.starts_with("schedule preemptions-"))
        else {
            continue;
        };
        let holds = said.matches(" while ").count();
        let dom = dump_dom(browser, Path::new(r["timeline"].as_str().unwrap()));
        assert!(holds > 0 && dom.matches("<rect class=\"hold\"").count() == holds, "{holds} holds: {said}\n{dom}");
        assert!(dom.contains("held by its schedule (hold 1)"), "{dom}");
        return;
    }
    panic!("no preemptions schedule fired on late-position-read on seeds 1 to 8");
}
