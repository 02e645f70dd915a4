//! `timeline.html`, one page per kept fire (or error): the store's calls on
//! its files in order, grouped by the syncs that end them, every ack of the
//! ack journal, the crash marked where it was put (a kill, a power cut, torn
//! writes, a failed call: [`crate::model::trace`]), and what was acked against what
//! was recovered. Self-contained: inline CSS, a script and the data it draws
//! from, no network; small: at most [`SHOWN`] calls, saying how many were
//! left out. Where no call trace was taken (a timed kill, a race) the page
//! says so and marks the kill among the acks, after the last one the
//! journal holds. A race gets a lane per racer ([`crate::times`]), and a
//! page whose trial has the driver's times gets a time axis.

mod acks;
mod recovered;

use std::fmt::Write as _;

use serde::Serialize;

use crate::model::trace::{Call, Crash, Trace};
use crate::model::{CellResult, Event, Listener, TIMELINE};
use crate::plan::KillMode;
use crate::times::Times;

/// At most this many calls are shown: those before the crash, and after a
/// failed call up to [`AFTER`] more.
const SHOWN: usize = 400;
const AFTER: usize = 40;

const TEMPLATE: &str = include_str!("timeline.html");

/// What a timeline is drawn from: the result, the calls if a trace was
/// taken, and the files the crash left in the evidence folder.
pub struct Page<'a> {
    pub result: &'a CellResult,
    pub trace: Option<&'a Trace>,
    /// The ack journal, as the crash left it.
    pub acks: &'a str,
    /// The first recovery pass's dump (`dump-1.json`), if recovery ran.
    pub recovered: Option<&'a str>,
    /// A race: each racer's ack journal (`acks-rN.ndjson`), r0 first.
    pub racers: &'a [(u32, String)],
    /// What the driver's clock saw, if the trial kept it.
    pub times: Option<&'a Times>,
}

/// The consumer of the run's events that writes a kept fire's page: when
/// its evidence is staged, the page is drawn from the result, its trace
/// and the files the crash left there (the ack journal, the first
/// recovery's dump, each racer's journal, the driver's times).
pub struct Writer;

impl Listener for Writer {
    fn on(&self, event: &Event) -> Result<(), String> {
        let Event::Staged { result, trace, stage, .. } = *event else { return Ok(()) };
        let read = |name: &str| std::fs::read_to_string(stage.join(name)).ok();
        let acks = read("acks.ndjson").unwrap_or_default();
        let recovered = read("dump-1.json");
        // A race's racers each keep a journal of their own (acks-rN.ndjson).
        let racers: Vec<(u32, String)> = (0..).map_while(|r| Some((r, read(&format!("acks-r{r}.ndjson"))?))).collect();
        let times = Times::read(stage);
        let page = Page {
            result,
            trace,
            acks: &acks,
            recovered: recovered.as_deref(),
            racers: &racers,
            times: times.as_ref(),
        };
        std::fs::write(stage.join(TIMELINE), render(&page)).map_err(|e| format!("could not write {TIMELINE}: {e}"))
    }
}

/// One racer's lane: its acks, for a reader.
#[derive(Serialize)]
struct Lane {
    racer: u32,
    acks: Vec<String>,
}

/// The data the page's script draws.
#[derive(Serialize)]
struct Data<'a> {
    crash: Option<Crash>,
    label: &'static str,
    meaning: &'static str,
    source: &'static str,
    /// Why there is no trace, when there is none.
    no_trace: Option<String>,
    calls: Vec<Shown<'a>>,
    /// The index in `calls` of the marked call (`calls.len()`: after the last).
    mark: usize,
    left_before: usize,
    left_after: usize,
    total: usize,
    /// Acks seen when the kill was sent (for a page without calls).
    acked_at_kill: u64,
    /// The journal line the kill came after, for a page without calls: its
    /// last ack (`None`: before every ack).
    kill_line: Option<usize>,
    /// Acks the journal holds.
    journal_acks: usize,
    /// What each shown call's operation was: `ops[call.op]`, by the ack
    /// that ended it (the last: the one the crash cut).
    ops: Vec<String>,
    times: Option<&'a Times>,
    lanes: Vec<Lane>,
    /// Where the deciding kill landed, for a reader (a race's r0 lane).
    kill_point: Option<String>,
}

/// A call as shown: its place in the whole trace, its sync group, and the
/// ack-journal line it completed, if it did.
#[derive(Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    call: &'a Call,
    index: usize,
    group: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    ack: Option<String>,
    /// Its operation, an index into the data's `ops`.
    op: usize,
}

/// The whole page.
pub fn render(page: &Page) -> String {
    let r = page.result;
    let title = format!("crashcells timeline: {} {} {}", r.cell, r.leg, r.kill.as_str());
    let acks: Vec<String> = page.acks.lines().map(acks::text).collect();
    let data = serde_json::to_string(&data(page, &acks)).unwrap_or_else(|_| "{}".into());
    // A string of the data cannot end the script element it is in.
    let data = data.replace("</", "<\\/");
    fill(&[("{{TITLE}}", &escape(&title)), ("{{HEAD}}", &head(page, &title, &acks)), ("{{DATA}}", &data)])
}

/// The template with each marker, in the order they appear, replaced by
/// its text once: nothing inserted is read for a marker again.
fn fill(parts: &[(&str, &str)]) -> String {
    let (mut out, mut rest) = (String::new(), TEMPLATE);
    for (marker, text) in parts {
        let (before, after) = rest.split_once(marker).expect("the template has each marker, in order");
        out.push_str(before);
        out.push_str(text);
        rest = after;
    }
    out.push_str(rest);
    out
}

fn data<'a>(page: &'a Page, acks: &[String]) -> Data<'a> {
    let acked_at_kill = page.result.deciding_kill().map_or(0, |k| k.after_acks);
    let lines: Vec<&str> = page.acks.lines().collect();
    let mut ops: Vec<String> = lines.iter().map(|l| acks::operation(l)).collect();
    ops.push(acks::in_flight(&lines));
    let lanes =
        page.racers.iter().map(|(r, j)| Lane { racer: *r, acks: j.lines().map(acks::text).collect() }).collect();
    let Some(t) = page.trace else {
        return Data {
            crash: None,
            label: "KILL",
            meaning: "",
            source: "",
            no_trace: Some(no_trace(page.result)),
            calls: Vec::new(),
            mark: 0,
            left_before: 0,
            left_after: 0,
            total: 0,
            acked_at_kill,
            kill_line: acks::last_ack(&lines),
            journal_acks: lines.iter().filter(|l| acks::is_ack(l)).count(),
            ops,
            times: page.times,
            lanes,
            kill_point: page.result.deciding_kill().map(|k| k.describe()),
        };
    };
    let end = (t.at + 1 + if t.crash == Crash::Failed { AFTER } else { 0 }).min(t.calls.len());
    let start = end.saturating_sub(SHOWN).min(t.at);
    let groups = groups(&t.calls);
    let completed = ack_lines(&t.calls, page.acks, acks);
    let op_of = operations(&completed);
    let calls = (start..end)
        .map(|i| Shown { call: &t.calls[i], index: i + 1, group: groups[i], ack: completed[i].clone(), op: op_of[i] })
        .collect();
    Data {
        crash: Some(t.crash),
        label: label(t.crash),
        meaning: t.crash.meaning(),
        source: t.source,
        no_trace: None,
        calls,
        mark: t.at - start,
        left_before: start,
        left_after: t.calls.len() - end,
        total: t.calls.len(),
        acked_at_kill,
        kill_line: None,
        journal_acks: lines.iter().filter(|l| acks::is_ack(l)).count(),
        ops,
        times: page.times,
        lanes,
        kill_point: page.result.deciding_kill().map(|k| k.describe()),
    }
}

/// Each call's operation: the journal line it leads up to (the calls
/// after one ack and up to the write that completes the next are that
/// next line's operation).
fn operations(completed: &[Option<String>]) -> Vec<usize> {
    let mut line = 0;
    completed
        .iter()
        .map(|done| {
            let op = line;
            if done.is_some() {
                line += 1;
            }
            op
        })
        .collect()
}

fn label(crash: Crash) -> &'static str {
    match crash {
        Crash::Kill => "KILL",
        Crash::PowerCut => "POWER CUT",
        Crash::Torn => "POWER CUT, TORN WRITES",
        Crash::Failed => "FAILED CALL",
        Crash::End => "END",
    }
}

/// Why a result has no call trace, by how it killed: a race (kill mode
/// `none`, or a syscall sweep with paths) is several processes at once.
fn no_trace(r: &CellResult) -> String {
    let race = r.kill == KillMode::None || (r.kill == KillMode::Syscall && !r.sweep.points_by_path.is_empty());
    if race && r.kill == KillMode::Syscall {
        let at = r.deciding_kill().map_or_else(|| "its kill point".to_string(), |k| k.describe());
        return format!(
            "Racer r0 was traced and killed at its call ({at}); the calls it made before were counted, not \
             kept for this page. The racers' lanes above show each one's claim, its end and its acks."
        );
    }
    if r.kill == KillMode::None {
        return "No call trace was taken: a free race kills nothing; its racers run side by side, untraced. \
                Their lanes above show each one's claim, its end and its acks."
            .into();
    }
    let why = match r.kill {
        KillMode::Timed => {
            "a timed kill lands where the scheduler lets it, after a seeded number of acks; its run was not \
             traced (tracing would move the kill). The syscall result of the same cell and leg has a trace"
        }
        _ => "the result ended before a traced run of its workload reached its crash",
    };
    format!("No call trace was taken: {why}. The kill is marked among the acks above, beside what was recovered.")
}

/// Each call's sync group: a group ends with a sync of a store file (the
/// database, its journal or WAL) or of the folder, which is where SQLite
/// makes a transaction durable.
fn groups(calls: &[Call]) -> Vec<usize> {
    let mut group = 1;
    calls
        .iter()
        .map(|c| {
            let g = group;
            if c.sync && !matches!(c.file.as_str(), "acks" | "transport") {
                group += 1;
            }
            g
        })
        .collect()
}

/// For each call, the ack-journal line it completed, if it wrote the
/// journal's end of a line: the writes to it, in order, add up to its lines.
fn ack_lines(calls: &[Call], journal: &str, texts: &[String]) -> Vec<Option<String>> {
    let mut ends = journal.split_inclusive('\n').scan(0u64, |at, line| {
        *at += line.len() as u64;
        Some(*at)
    });
    let (mut written, mut line, mut next) = (0u64, 0usize, ends.next());
    calls
        .iter()
        .map(|c| {
            // A failed call never wrote; only writes add to the journal.
            if c.file != "acks" || !c.call.contains("write") || c.note.contains("made to fail") {
                return None;
            }
            written += c.len.unwrap_or(0);
            let mut done = None;
            while next.is_some_and(|end| end <= written) {
                line += 1;
                done = Some(format!("ack journal line {line}: {}", texts.get(line - 1).map_or("", String::as_str)));
                next = ends.next();
            }
            done
        })
        .collect()
}

/// The page's head, drawn here: the result, then what was acked against
/// what was recovered, and the findings.
fn head(page: &Page, title: &str, acks: &[String]) -> String {
    let r = page.result;
    let mut s = String::new();
    let _ = writeln!(s, "<h1>{}</h1>", escape(title));
    let mode = r.effective_mode.as_ref().map_or("?".into(), ToString::to_string);
    let sync = r.synchronous.as_deref().unwrap_or("default");
    let _ = writeln!(
        s,
        "<p><span class=\"verdict\">{}</span> cell <b>{}</b> ({}), leg <b>{}</b> (journal_mode {}, synchronous {}), kill <b>{}</b></p>",
        r.verdict.as_str(),
        escape(&r.cell),
        escape(&r.clause),
        escape(&r.leg),
        escape(&mode),
        escape(sync),
        r.kill.as_str()
    );
    if let Some(fp) = &r.finding.fingerprint {
        let _ = writeln!(s, "<p>fingerprint <code>{}</code></p>", escape(fp));
    }
    let _ = writeln!(s, "<p class=\"reason\">{}</p>", escape(&r.reason));
    if let Some(k) = r.deciding_kill() {
        let _ = writeln!(s, "<p>kill point: {}</p>", escape(&k.describe()));
    }
    let _ = writeln!(s, "<h2>Acked against recovered</h2>\n<div class=\"cols\">");
    let lines: Vec<&str> = page.acks.lines().collect();
    if page.racers.is_empty() || !lines.is_empty() {
        acked(&mut s, &lines, acks, page.trace.is_none());
    } else {
        racers_acked(&mut s, page.racers);
    }
    recovered(&mut s, page.recovered, &acks::appended(&lines));
    let _ = writeln!(s, "</div>");
    if !r.details.is_empty() {
        let _ = writeln!(s, "<h2>Findings</h2>\n<ul>");
        for d in &r.details {
            let _ = writeln!(s, "<li>{}</li>", escape(d));
        }
        let _ = writeln!(s, "</ul>");
    }
    let _ = writeln!(s, "<p class=\"note\">repro: <code>{}</code></p>", escape(&r.repro));
    s
}

/// The ack journal's lines: all of a short one; of a long one its head,
/// its tail and, on a page without calls, the lines around its last ack,
/// where the kill is drawn (the middle is left out, saying how much).
fn acked(s: &mut String, lines: &[&str], texts: &[String], untraced: bool) {
    let count = lines.iter().filter(|l| acks::is_ack(l)).count();
    let _ = writeln!(s, "<div class=\"box\"><h3>Acked: {count} (the ack journal the evidence keeps)</h3>");
    let _ = writeln!(s, "<ol id=\"ack-list\">");
    let kill = if untraced { acks::last_ack(lines) } else { None };
    let mut next = 0;
    for range in acks::shown(texts.len(), kill) {
        if range.start > next {
            left_out(s, range.start - next);
        }
        for i in range.clone() {
            let _ = writeln!(s, "<li data-ack=\"{i}\" value=\"{}\">{}</li>", i + 1, escape(&texts[i]));
        }
        next = range.end;
    }
    if texts.len() > next {
        left_out(s, texts.len() - next);
    }
    let _ = writeln!(s, "</ol>\n</div>");
}

fn left_out(s: &mut String, n: usize) {
    let _ = writeln!(s, "<li class=\"gap\">… {n} lines left out</li>");
}

/// A race's acks: each racer's journal, under its name.
fn racers_acked(s: &mut String, racers: &[(u32, String)]) {
    let count: usize = racers.iter().map(|(_, j)| j.lines().filter(|l| acks::is_ack(l)).count()).sum();
    let _ = writeln!(s, "<div class=\"box\"><h3>Acked: {count} (the racers' ack journals, acks-rN.ndjson)</h3>");
    let _ = writeln!(s, "<ol id=\"ack-list\">");
    for (r, journal) in racers {
        for line in journal.lines() {
            let _ = writeln!(s, "<li data-racer=\"{r}\">r{r}: {}</li>", escape(&acks::text(line)));
        }
    }
    let _ = writeln!(s, "</ol>\n</div>");
}

/// The recovered state, from the first recovery pass's dump: the integrity
/// check, each session with its messages (first and last), the outbox.
fn recovered(s: &mut String, dump: Option<&str>, acked: &[String]) {
    let _ = writeln!(s, "<div class=\"box\"><h3>Recovered (the first recovery pass's dump)</h3>");
    match dump.map(serde_json::from_str::<crashcells_protocol::Dump>) {
        None => {
            let _ = writeln!(s, "<p>No recovery ran.</p>");
        }
        Some(Err(e)) => {
            let _ = writeln!(s, "<p>The dump could not be read: {}</p>", escape(&e.to_string()));
        }
        Some(Ok(d)) => {
            let _ = writeln!(s, "<p>integrity_check: <code>{}</code></p>", escape(&d.integrity));
            let all: Vec<&str> = d.messages.iter().map(|m| m.content.as_str()).collect();
            if let Some(line) = recovered::against(acked, &all) {
                let _ = writeln!(s, "<p id=\"against\"><b>{}</b></p>", escape(&line));
            }
            let _ = writeln!(s, "<ul>");
            for session in &d.sessions {
                let messages: Vec<&str> =
                    d.messages.iter().filter(|m| m.session_id == session.id).map(|m| m.content.as_str()).collect();
                let ended = session.end_reason.as_deref().map(|r| format!(", ended: {r}")).unwrap_or_default();
                let handoff = session.handoff_state.as_deref().map(|h| format!(", handoff {h}")).unwrap_or_default();
                let ended = format!("{ended}{handoff}");
                let shown =
                    if messages.is_empty() { String::new() } else { format!(": {}", recovered::runs(&messages)) };
                let n = messages.len();
                let _ = writeln!(
                    s,
                    "<li>session {}: {n} messages{}{}</li>",
                    escape(&session.id),
                    escape(&shown),
                    escape(&ended)
                );
            }
            if !d.outbox.is_empty() {
                let _ = writeln!(s, "<li>outbox: {} obligations</li>", d.outbox.len());
            }
            let _ = writeln!(s, "</ul>");
        }
    }
    let _ = writeln!(s, "</div>");
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::KillPoint;
    use crate::model::tests::fire;

    fn call(file: &str, name: &str, len: u64, sync: bool) -> Call {
        let (call, file, note) = (name.to_string(), file.to_string(), String::new());
        Call { point: None, call, file, offset: None, len: Some(len), sync, note }
    }

    const JOURNAL: &str = "{\"kind\":\"ready\",\"op\":\"append\",\"journal_mode\":\"wal\"}\n{\"kind\":\"ack\",\"op\":\"append\",\"i\":0}\n";

    /// The data the page's script draws, as JSON.
    fn data_of(html: &str) -> serde_json::Value {
        let start = html.find("type=\"application/json\">").unwrap() + "type=\"application/json\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        serde_json::from_str(&html[start..end].replace("<\\/", "</")).unwrap()
    }

    fn killed(n: usize, at: usize) -> Trace {
        let mut calls: Vec<Call> = (0..n).map(|_| call("wal", "pwrite64", 4096, false)).collect();
        calls[1].sync = true;
        Trace { calls, at, crash: Crash::Kill, source: "test" }
    }

    #[test]
    fn the_page_carries_the_calls_and_the_crash_and_its_script_draws_the_mark() {
        let r = fire(KillMode::Syscall, "wal");
        let trace = killed(5, 4);
        let html =
            render(&Page { result: &r, trace: Some(&trace), acks: JOURNAL, recovered: None, racers: &[], times: None });
        let d = data_of(&html);
        assert_eq!(
            (d["crash"].as_str(), d["label"].as_str(), d["mark"].as_u64()),
            (Some("kill"), Some("KILL"), Some(4))
        );
        assert_eq!(d["calls"].as_array().unwrap().len(), 5);
        assert_eq!(
            (d["calls"][1]["group"].as_u64(), d["calls"][2]["group"].as_u64()),
            (Some(1), Some(2)),
            "a sync ends a group"
        );
        assert!(!html.contains("id=\"kill-point\""), "the mark is the script's to draw");
        assert!(html.contains("<li data-ack=\"1\" value=\"2\">ack append i=0</li>"), "{html}");
        let svg_namespace = html.matches("http://www.w3.org/2000/svg").count();
        assert_eq!(html.matches("http").count(), svg_namespace, "no address but the SVG namespace's name");
        assert!(!html.contains("src=") && !html.contains("href="), "nothing loaded: no network");
    }

    #[test]
    fn a_long_trace_is_cut_to_the_calls_before_its_crash_saying_how_many_were_left_out() {
        let r = fire(KillMode::Syscall, "wal");
        let trace = killed(1000, 900);
        let d = data_of(&render(&Page {
            result: &r,
            trace: Some(&trace),
            acks: "",
            recovered: None,
            racers: &[],
            times: None,
        }));
        assert_eq!(d["calls"].as_array().unwrap().len(), SHOWN);
        assert_eq!((d["left_before"].as_u64(), d["left_after"].as_u64()), (Some(501), Some(99)));
        assert_eq!(d["mark"].as_u64(), Some(SHOWN as u64 - 1), "the crash's call is the last shown");
        assert_eq!(d["calls"][0]["index"].as_u64(), Some(502), "calls keep their place in the whole trace");
        let failed = Trace { crash: Crash::Failed, ..killed(1000, 900) };
        let d = data_of(&render(&Page {
            result: &r,
            trace: Some(&failed),
            acks: "",
            recovered: None,
            racers: &[],
            times: None,
        }));
        assert_eq!(d["left_after"].as_u64(), Some(1000 - 901 - AFTER as u64), "a failed call's run goes on");
    }

    #[test]
    fn without_a_trace_the_page_says_why_and_where_the_kill_came_among_the_acks() {
        let mut r = fire(KillMode::Timed, "wal");
        r.kill_points = vec![KillPoint { after_acks: 1, ..KillPoint::default() }];
        let dump = r#"{"protocol":2,"integrity":"ok","sessions":[{"id":"main","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],"messages":[]}"#;
        let html =
            render(&Page { result: &r, trace: None, acks: JOURNAL, recovered: Some(dump), racers: &[], times: None });
        let d = data_of(&html);
        assert!(d["crash"].is_null());
        assert!(d["no_trace"].as_str().unwrap().starts_with("No call trace was taken: a timed kill"), "{d}");
        assert_eq!(d["acked_at_kill"].as_u64(), Some(1));
        assert_eq!((d["kill_line"].as_u64(), d["journal_acks"].as_u64()), (Some(1), Some(1)), "after its last ack");
        let race = fire(KillMode::None, "wal");
        assert!(no_trace(&race).contains("a free race kills nothing"));
        let mut swept_race = fire(KillMode::Syscall, "wal");
        assert!(no_trace(&swept_race).contains("before a traced run"), "a workload's sweep that ended early");
        swept_race.sweep.points_by_path =
            vec![crate::model::PathPoints { path: "winning-claim".into(), planned: 1, landed: 1 }];
        swept_race.kill_points =
            vec![KillPoint { ordinal: Some(16), syscall: Some("pwrite64".into()), ..KillPoint::default() }];
        let said = no_trace(&swept_race);
        assert!(
            said.starts_with(
                "Racer r0 was traced and killed at its call (trial 0, after 0 acks, at syscall #16 pwrite64"
            ),
            "{said}"
        );
        assert!(
            html.contains("integrity_check: <code>ok</code>") && html.contains("session main: 0 messages"),
            "{html}"
        );
    }

    /// A journal of `n` appends, the ready line first.
    fn appends(n: u64) -> String {
        let mut j = "{\"kind\":\"ready\",\"op\":\"append\",\"journal_mode\":\"delete\"}\n".to_string();
        for i in 0..n {
            j.push_str(&format!("{{\"kind\":\"ack\",\"op\":\"append\",\"i\":{i}}}\n"));
        }
        j
    }

    /// The issue's timed fire: 396 acks, the kill after the last; the list
    /// keeps the acks before the kill and leaves out the middle, and the
    /// recovered box names the holes.
    #[test]
    fn a_timed_page_lists_the_acks_before_its_kill_and_names_what_was_lost() {
        let mut r = fire(KillMode::Timed, "delete");
        r.kill_points = vec![KillPoint { after_acks: 396, ..KillPoint::default() }];
        let journal = appends(396);
        let messages: Vec<String> = (0..396)
            .filter(|i| i % 64 != 63)
            .map(|i| format!("{{\"session_id\":\"main\",\"seq\":{i},\"role\":\"user\",\"content\":\"m{i}\"}}"))
            .collect();
        let dump = format!(
            "{{\"protocol\":2,\"integrity\":\"ok\",\"sessions\":[{{\"id\":\"main\",\"parent_session_id\":null,\"ended\":false,\"end_reason\":null,\"message_count\":390,\"handoff_state\":null}}],\"messages\":[{}]}}",
            messages.join(",")
        );
        let html =
            render(&Page { result: &r, trace: None, acks: &journal, recovered: Some(&dump), racers: &[], times: None });
        let d = data_of(&html);
        assert_eq!((d["kill_line"].as_u64(), d["journal_acks"].as_u64()), (Some(396), Some(396)));
        for kept in [395, 396, 340] {
            assert!(html.contains(&format!("<li data-ack=\"{kept}\" ")), "line {kept} listed");
        }
        assert!(!html.contains("<li data-ack=\"200\" "), "the middle is left out");
        assert!(html.contains("<li class=\"gap\">… "), "saying so");
        assert!(html.contains("390 of 396 acked recovered; missing: m63, m127, m191, m255, m319, m383"), "{html}");
        assert!(html.contains("session main: 390 messages: m0–m62, m64–m126, "), "runs, not a range");
    }

    /// A race's page counts every racer's acks and carries their lanes.
    #[test]
    fn a_race_page_counts_the_racers_acks() {
        let r = fire(KillMode::Syscall, "wal");
        let claim = "{\"kind\":\"ready\",\"op\":\"claim\",\"journal_mode\":\"wal\"}\n{\"kind\":\"ack\",\"op\":\"claim\",\"i\":0}\n";
        let racers: Vec<(u32, String)> =
            (0..8).map(|n| (n, if n == 0 { String::new() } else { claim.to_string() })).collect();
        let times = Times::default();
        let html =
            render(&Page { result: &r, trace: None, acks: "", recovered: None, racers: &racers, times: Some(&times) });
        assert!(html.contains("<h3>Acked: 7 (the racers' ack journals"), "{html}");
        assert!(html.contains("<li data-racer=\"3\">r3: ack claim i=0</li>"));
        assert_eq!(data_of(&html)["lanes"].as_array().unwrap().len(), 8);
    }

    #[test]
    fn each_ack_is_the_write_that_completed_its_line_of_the_journal() {
        let texts: Vec<String> = JOURNAL.lines().map(acks::text).collect();
        assert_eq!(texts, ["ready: op append, journal_mode wal", "ack append i=0"]);
        let first = JOURNAL.find('\n').unwrap() as u64 + 1;
        let calls = [
            call("acks", "write", first, false),
            call("wal", "pwrite64", 10, false),
            call("acks", "write", 5, false),
            call("acks", "fsync", 0, true),
            call("acks", "write", JOURNAL.len() as u64 - first - 5, false),
        ];
        let done = ack_lines(&calls, JOURNAL, &texts);
        assert_eq!(done[0].as_deref(), Some("ack journal line 1: ready: op append, journal_mode wal"));
        assert_eq!((done[1].as_deref(), done[2].as_deref(), done[3].as_deref()), (None, None, None), "half a line");
        assert_eq!(done[4].as_deref(), Some("ack journal line 2: ack append i=0"));
        assert_eq!(groups(&calls), [1, 1, 1, 1, 1], "a sync of the ack journal ends no transaction");
    }

    #[test]
    fn text_from_the_run_cannot_break_out_of_the_page() {
        let mut r = fire(KillMode::Syscall, "wal");
        r.reason = "</script><b>{{DATA}}".into();
        let mut trace = killed(2, 1);
        trace.calls[0].note = "</script><img>".into();
        let html =
            render(&Page { result: &r, trace: Some(&trace), acks: "", recovered: None, racers: &[], times: None });
        assert!(html.contains("&lt;/script&gt;&lt;b&gt;{{DATA}}"), "the head escapes, and no marker is filled twice");
        assert_eq!(html.matches("</script>").count(), 2, "the data's and the script's own");
        assert_eq!(data_of(&html)["calls"][0]["note"].as_str(), Some("</script><img>"));
    }
}
