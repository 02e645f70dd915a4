//! The protocol corpus: the protocol's rules as data, one JSON file per rule
//! family in `protocol/corpus/`, generated here from this crate's own code
//! and checked in. Each adapter library (sdk/python, sdk/node, sdk/go)
//! loads the files and must agree case by case, naming the case it does
//! not: four implementations of one protocol kept in step by data rather
//! than by hand-copied examples. A rule written once here (the WAL-reset
//! range, the mutants' numbers) has one source the libraries test against.
//!
//! The test below regenerates every file and fails, naming it, when the
//! checked-in copy is stale; `CRASHCELLS_BLESS=1 cargo test -p
//! crashcells-protocol --lib corpus` rewrites them.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::config::{DatabaseConfig, JournalMode, Synchronous};
use crate::dump::{Dump, DumpMessage, DumpObligation, DumpSession};
use crate::op::{DROP_EVERY, ForkStep, Mutant, Op, OpArgs, Rotation, STALL_AFTER};
use crate::records::{Ack, Record};
use crate::resolver::resolve;
use crate::transport::{self, Delivery};
use crate::version::{SqliteVersion, wal_reset_affected};

/// The variable that makes the freshness test rewrite the corpus.
pub const BLESS_ENV: &str = "CRASHCELLS_BLESS";

/// The command that refreshes the corpus, for a stale file's message.
pub const BLESS_COMMAND: &str = "CRASHCELLS_BLESS=1 cargo test -p crashcells-protocol --lib corpus";

/// One file of the corpus: a rule family and its cases, each with a `name`
/// a library's failure quotes.
pub struct Family {
    pub name: &'static str,
    pub about: &'static str,
    pub cases: Vec<Value>,
}

impl Family {
    /// The file's bytes: pretty JSON, one trailing newline.
    pub fn render(&self) -> String {
        let body = json!({ "family": self.name, "about": self.about, "cases": self.cases });
        let mut text = serde_json::to_string_pretty(&body).expect("the corpus is plain JSON");
        text.push('\n');
        text
    }
}

/// Where the corpus is checked in: `protocol/corpus/`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Every family of the corpus, in file-name order.
pub fn families() -> Vec<Family> {
    vec![acks(), args(), config(), dumps(), mutants(), outbox(), resolver(), version(), workload()]
}

/// Versions on both sides of each boundary of the WAL-reset range.
const VERSIONS: [(u32, u32, u32); 15] = [
    (3, 6, 23),
    (3, 7, 0),
    (3, 40, 1),
    (3, 44, 5),
    (3, 44, 6),
    (3, 44, 99),
    (3, 45, 0),
    (3, 45, 1),
    (3, 50, 6),
    (3, 50, 7),
    (3, 50, 99),
    (3, 51, 0),
    (3, 51, 2),
    (3, 51, 3),
    (3, 54, 1),
];

fn version() -> Family {
    let cases = VERSIONS
        .iter()
        .map(|&(a, b, c)| {
            let v = SqliteVersion(a, b, c);
            json!({ "name": format!("version: {v}"), "version": v.to_string(), "affected": wal_reset_affected(v) })
        })
        .collect();
    Family { name: "version", about: "whether a SQLite version has the WAL-reset bug (docs/PROTOCOL.md §5)", cases }
}

fn resolver() -> Family {
    let configs = [
        DatabaseConfig::default(),
        DatabaseConfig { journal_mode: Some(JournalMode::Wal), synchronous: None },
        DatabaseConfig { journal_mode: Some(JournalMode::Delete), synchronous: Some(Synchronous::Full) },
    ];
    let mut cases = Vec::new();
    for &(a, b, c) in &VERSIONS {
        let v = SqliteVersion(a, b, c);
        for config in configs {
            for file_is_wal in [false, true] {
                let d = resolve(config, v, file_is_wal);
                let asked = config.journal_mode.map_or("nothing".to_string(), |m| m.to_string());
                let file = if file_is_wal { "a WAL file" } else { "a new file" };
                cases.push(json!({
                    "name": format!("resolver: {v}, {asked} asked, {file}"),
                    "sqlite_version": v.to_string(),
                    "config": config_json(config),
                    "file_is_wal": file_is_wal,
                    "decision": d,
                }));
            }
        }
    }
    Family { name: "resolver", about: "the reference resolver's decision (docs/PROTOCOL.md §5)", cases }
}

fn config_json(c: DatabaseConfig) -> Value {
    json!({ "journal_mode": c.journal_mode, "synchronous": c.synchronous })
}

fn config() -> Family {
    let good = [
        ("no file content".to_string(), String::new()),
        ("an empty table".to_string(), "[database]\n".to_string()),
        ("both values".to_string(), "[database]\njournal_mode = \"persist\"\nsynchronous = \"extra\"\n".to_string()),
        ("upper case".to_string(), "[database]\njournal_mode = \"WAL\"\n".to_string()),
        ("comments".to_string(), "# the leg's config\n[database]\nsynchronous = \"normal\" # level 1\n".to_string()),
    ];
    let mut cases: Vec<Value> = good
        .into_iter()
        .chain(JournalMode::ALL.map(|m| {
            (format!("journal_mode {m}"), DatabaseConfig { journal_mode: Some(m), synchronous: None }.to_toml())
        }))
        .chain(Synchronous::ALL.map(|s| {
            (format!("synchronous {s}"), DatabaseConfig { journal_mode: None, synchronous: Some(s) }.to_toml())
        }))
        .map(|(name, text)| {
            let parsed = DatabaseConfig::parse(&text).expect("a good config parses");
            json!({ "name": format!("config: {name}"), "text": text, "config": config_json(parsed) })
        })
        .collect();
    let bad = [
        ("an unknown journal mode", "[database]\njournal_mode = \"wall\"\n", "wall"),
        ("an unknown level", "[database]\nsynchronous = \"fast\"\n", "fast"),
        ("a misspelt key", "[database]\njurnal_mode = \"wal\"\n", "jurnal_mode"),
        ("an unknown table", "[server]\nport = \"1\"\n", "server"),
    ];
    for (name, text, token) in bad {
        let e = DatabaseConfig::parse(text).expect_err("a bad config is an error");
        assert!(e.contains(token), "the reference's error `{e}` names `{token}`");
        cases.push(json!({ "name": format!("config: {name}"), "text": text, "error_names": token }));
    }
    Family {
        name: "config",
        about: "config.toml texts and what they ask for, or the word an error must name (docs/PROTOCOL.md §5)",
        cases,
    }
}

fn words(a: &OpArgs) -> Vec<String> {
    a.to_args().iter().map(|w| w.to_string_lossy().into_owned()).collect()
}

/// A command line the driver builds, and its flags as lists of values.
fn parsed(name: &str, a: OpArgs) -> Value {
    let argv = words(&a);
    let mut flags = serde_json::Map::new();
    for pair in argv[1..].chunks(2) {
        let list = flags.entry(pair[0].trim_start_matches("--")).or_insert_with(|| json!([]));
        list.as_array_mut().expect("a list").push(json!(pair[1]));
    }
    json!({ "name": format!("args: {name}"), "argv": argv, "op": a.op().as_str(), "flags": flags })
}

fn args() -> Family {
    use std::path::Path;
    let (db, acks, bar, tr) = (Path::new("/d/s.db"), Path::new("/d/acks"), Path::new("/d/bar"), Path::new("/d/t"));
    let mut cases = vec![
        parsed("append", OpArgs::new(Op::Append).db(db).acks(acks)),
        parsed(
            "append, stopped, mutant",
            OpArgs::new(Op::Append).db(db).acks(acks).stop_after(3).mutant(Some("stall")),
        ),
        parsed("rotate with shapes", OpArgs::new(Op::Rotate).db(db).acks(acks).shapes().stop_after(8)),
        parsed("park", OpArgs::new(Op::Park).db(db).session("handoff")),
        parsed("claim", OpArgs::new(Op::Claim).db(db).acks(acks).session("handoff").barrier(bar).claimant("r1")),
        parsed("fork, the largest seed", OpArgs::new(Op::Fork).db(db).acks(acks).seed(u64::MAX).stop_after(12)),
        parsed("deliver", OpArgs::new(Op::Deliver).db(db).acks(acks).transport(tr)),
        parsed("catch-up", OpArgs::new(Op::CatchUp).db(db).transport(tr)),
        parsed(
            "catch-up batch",
            OpArgs::new(Op::CatchUp).db(db).transport(tr).db(Path::new("/e/s.db")).transport(Path::new("/e/t")),
        ),
        parsed("co-append", OpArgs::new(Op::CoAppend).db(db).acks(acks).writer("r1").barrier(bar).stop_after(5)),
        parsed("dump", OpArgs::new(Op::Dump).db(db)),
        parsed("dump batch", OpArgs::new(Op::Dump).db(db).db(Path::new("/e/s.db"))),
    ];
    let bad: [(&str, &[&str], &str); 7] = [
        ("an unknown operation", &["bogus", "--db", "/d/s.db"], "bogus"),
        ("an unknown flag", &["append", "--db", "/d/s.db", "--acks", "/d/a", "--bogus", "1"], "--bogus"),
        ("a flag without its value", &["append", "--acks", "/d/a", "--db"], "--db"),
        ("a required flag missing", &["append", "--db", "/d/s.db"], "--acks"),
        (
            "a count that is not one",
            &["append", "--db", "/d/s.db", "--acks", "/d/a", "--stop-after", "x"],
            "--stop-after",
        ),
        ("shapes other than on", &["rotate", "--db", "/d/s.db", "--acks", "/d/a", "--shapes", "off"], "shapes"),
        (
            "catch-up's unpaired stores",
            &["catch-up", "--db", "/d/s.db", "--db", "/e/s.db", "--transport", "/d/t"],
            "pairs",
        ),
    ];
    for (name, argv, token) in bad {
        cases.push(json!({ "name": format!("args: {name}"), "argv": argv, "error_names": token }));
    }
    Family {
        name: "args",
        about: "command lines as the driver builds them and the flags they carry, or the word a usage error must name \
                (docs/PROTOCOL.md §2)",
        cases,
    }
}

fn ack_case(name: &str, ack: Ack) -> Value {
    // The fields in the line's order (a JSON object here would sort them).
    let mut fields = vec![json!(["kind", "ack"]), json!(["op", ack.op]), json!(["i", ack.i])];
    let more = [
        ("parent", ack.parent.clone().map(Value::from)),
        ("child", ack.child.clone().map(Value::from)),
        ("k", ack.k.map(Value::from)),
        ("key", ack.key.clone().map(Value::from)),
        ("carried", ack.carried.map(Value::from)),
    ];
    fields.extend(more.into_iter().filter_map(|(k, v)| v.map(|v| json!([k, v]))));
    let line = serde_json::to_string(&Record::Ack(ack)).expect("a record serializes");
    let joined: Vec<String> = fields.iter().map(|p| format!("{}:{}", p[0], p[1])).collect();
    assert_eq!(format!("{{{}}}", joined.join(",")), line, "the fields are in the line's order");
    json!({ "name": format!("ack: {name}"), "fields": fields, "line": format!("{line}\n") })
}

fn acks() -> Family {
    let r1 = Rotation::of(1, true);
    let cases = vec![
        ack_case("append", Ack::of("append", 0)),
        ack_case("rotate", Ack::rotate(3, "p3", "c3")),
        ack_case("rotate with shapes", Ack::rotation(1, &r1)),
        ack_case("rewind", Ack::rewind(7, 2)),
        ack_case("deliver", Ack::deliver(1, "o1")),
        ack_case("claim", Ack::of("claim", 0)),
        ack_case("co-append", Ack::of("co-append", 41)),
    ];
    Family {
        name: "acks",
        about: "ack-journal records as ordered fields, and the line each is (docs/PROTOCOL.md §3)",
        cases,
    }
}

/// A dump's plain data as a store's `state()` returns it (sdk/API.md), with
/// its sessions in reverse order: the library sorts them.
fn state_of(d: &Dump) -> Value {
    let sessions: Vec<Value> = d
        .sessions
        .iter()
        .rev()
        .map(|s| {
            json!({ "id": s.id, "parent_session_id": s.parent_session_id, "ended": s.ended,
                    "end_reason": s.end_reason, "message_count": s.message_count,
                    "handoff_state": s.handoff_state, "branch_of": s.branch_of })
        })
        .collect();
    let messages: Vec<Value> = d
        .messages
        .iter()
        .map(|m| {
            json!({ "session_id": m.session_id, "role": m.role, "content": m.content,
                    "position": m.position, "active": m.active })
        })
        .collect();
    let obligations: Vec<Value> = d.outbox.iter().rev().map(|o| json!({ "key": o.key, "state": o.state })).collect();
    json!({ "sessions": sessions, "messages": messages, "obligations": obligations, "integrity": d.integrity })
}

fn dump_case(name: &str, d: &Dump) -> Value {
    // The canonical order (docs/PROTOCOL.md §4): sessions by id, obligations
    // by key, bytewise; the state handed to a library is in another order.
    let mut d = d.clone();
    d.sessions.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    d.outbox.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
    let d = &d;
    let live = d.live_transcript("main").map(|t| t.len()).expect("the corpus's stores have one live branch");
    json!({
        "name": format!("dump: {name}"),
        "state": state_of(d),
        "line": d.to_canonical_line(),
        "integrity_ok": d.integrity == "ok",
        "live_main": live,
    })
}

fn dumps() -> Family {
    let mut cases = vec![dump_case("an empty store", &Dump::empty(2, "ok".into()))];
    let mut appended = Dump::empty(2, "ok".into());
    appended.sessions = vec![DumpSession::new("main", 2)];
    appended.messages =
        vec![DumpMessage::new("main", "user", "m0"), DumpMessage::new("main", "user", "é/\"<&>\u{2028}")];
    cases.push(dump_case("appends, escaped content", &appended));

    let mut rotated = Dump::empty(2, "ok".into());
    let ended =
        |id: &str, n| DumpSession { ended: true, end_reason: Some("compression".into()), ..DumpSession::new(id, n) };
    rotated.sessions = vec![
        ended("p0", 1),
        DumpSession { parent_session_id: Some("p0".into()), ..ended("c0", 1) },
        DumpSession { parent_session_id: Some("c0".into()), ..DumpSession::new("c1", 3) },
        DumpSession::new("main", 0),
    ];
    rotated.messages = vec![
        DumpMessage::new("p0", "user", "work 0"),
        DumpMessage::new("c0", "system", "continued from p0"),
        DumpMessage::new("c1", "system", "continued from c0"),
        DumpMessage::new("c1", "user", "work 1"),
        DumpMessage::new("c1", "assistant", "reply 1"),
    ];
    cases.push(dump_case("a rotation that carried two", &rotated));

    let mut forked = Dump::empty(2, "ok".into());
    forked.sessions = vec![
        DumpSession::new("main", 3),
        DumpSession { branch_of: Some("main".into()), ..DumpSession::new("main.3", 2) },
    ];
    let at = |m: DumpMessage, p| DumpMessage { position: Some(p), ..m };
    forked.messages = vec![
        at(DumpMessage::new("main", "user", "m0"), 0),
        at(DumpMessage::new("main", "user", "m1"), 1),
        DumpMessage { active: false, ..at(DumpMessage::new("main", "user", "m2"), 2) },
        at(DumpMessage::new("main.3", "user", "m0"), 0),
        at(DumpMessage::new("main.3", "user", "m4"), 1),
    ];
    cases.push(dump_case("a rewind that branched and soft-deleted", &forked));

    let mut outbox = Dump::empty(2, "ok".into());
    outbox.outbox = ["delivered", "attempting", "recorded"]
        .iter()
        .enumerate()
        .map(|(j, s)| DumpObligation { key: format!("o{j}"), state: s.to_string() })
        .collect();
    cases.push(dump_case("an outbox", &outbox));

    let mut handoff = Dump::empty(2, "*** in database main ***; Page 3 is never used".into());
    handoff.sessions = vec![DumpSession { handoff_state: Some("running".into()), ..DumpSession::new("handoff", 1) }];
    handoff.messages = vec![DumpMessage::new("handoff", "system", "claimed by r1")];
    cases.push(dump_case("a claimed handoff, integrity failing", &handoff));
    Family {
        name: "dumps",
        about: "stores as `state()` returns them, their canonical line, integrity verdict and the live length of \
                `main` (docs/PROTOCOL.md §4)",
        cases,
    }
}

fn outbox() -> Family {
    let sends: Vec<Value> = [("o0", "effect of o0"), ("o12", "quote \" and é")]
        .iter()
        .map(|(key, payload)| {
            let d = Delivery { key: key.to_string(), payload: payload.to_string() };
            let mut line = serde_json::to_string(&d).expect("a delivery serializes");
            line.push('\n');
            json!({ "name": format!("outbox: send {key}"), "key": key, "payload": payload, "line": line })
        })
        .collect();
    let logs = [
        ("an empty log", ""),
        ("two deliveries", "{\"key\":\"o0\",\"payload\":\"a\"}\n{\"key\":\"o1\",\"payload\":\"b\"}\n"),
        ("a torn final send", "{\"key\":\"o0\",\"payload\":\"a\"}\n{\"key\":\"o1\",\"pay"),
        ("a key sent twice", "{\"key\":\"o0\",\"payload\":\"a\"}\n{\"key\":\"o0\",\"payload\":\"a\"}\n"),
    ];
    let arrivals = logs.iter().map(|(name, log)| {
        let mut keys: Vec<String> = transport::parse(log.as_bytes())
            .expect("the corpus's logs are deliveries")
            .into_iter()
            .map(|d| d.key)
            .collect();
        keys.sort();
        keys.dedup();
        json!({ "name": format!("outbox: {name}"), "log": log, "arrived": keys })
    });
    Family {
        name: "outbox",
        about: "the fake provider's transport: the line a send writes, and the keys a log says arrived (sorted) \
                (docs/PROTOCOL.md §2, `deliver`)",
        cases: sends.into_iter().chain(arrivals).collect(),
    }
}

fn workload() -> Family {
    let mut cases = Vec::new();
    for shapes in [false, true] {
        for k in 0..8 {
            let r = Rotation::of(k, shapes);
            cases.push(json!({
                "name": format!("rotation {k}{}", if shapes { " with shapes" } else { "" }),
                "rotation": { "k": k, "shapes": shapes, "parent": r.parent, "child": r.child,
                              "carried": r.carried, "new_parent": !r.continues() },
            }));
        }
    }
    for seed in [0, 3, u64::MAX] {
        for (i, len) in [(0, 5), (3, 0), (3, 1), (3, 2), (3, 5), (7, 10), (11, 6), (15, 3)] {
            let keep = match ForkStep::of(seed, i, len) {
                ForkStep::Append => Value::Null,
                ForkStep::Rewind { k } => json!(k),
            };
            cases.push(json!({
                "name": format!("fork step {i} of seed {seed} on {len} messages"),
                // The seed as text: a JSON number loses u64's top bits in JavaScript.
                "fork": { "seed": seed.to_string(), "i": i, "length": len, "keep": keep },
            }));
        }
    }
    Family {
        name: "workload",
        about: "rotation k's shape and fork step i's rewind (keep: null for an append) (docs/PROTOCOL.md §2)",
        cases,
    }
}

fn mutants() -> Family {
    const THROUGH: u64 = 200;
    let dropped: Vec<u64> = (0..THROUGH).filter(|&i| Mutant::DropAppend.drops_append(i)).collect();
    let stall = (0..THROUGH).find(|&i| Mutant::Stall.stalls_at(i)).expect("stall stalls");
    assert_eq!(stall, STALL_AFTER);
    assert_eq!(dropped.len() as u64, THROUGH.div_ceil(DROP_EVERY));
    let cases = vec![
        json!({ "name": "mutant: drop-append", "mutant": "drop-append", "appends": THROUGH, "dropped": dropped }),
        json!({ "name": "mutant: stall", "mutant": "stall", "appends": THROUGH, "stalls_at": stall }),
    ];
    Family {
        name: "mutants",
        about: "the mutants a library plays itself: which of the first `appends` appends `drop-append` acks without \
                writing, and at which append `stall` blocks having acked those before it (sdk/API.md)",
        cases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family regenerated equals its checked-in file, and no file is
    /// left over from a family that is gone.
    #[test]
    fn corpus_is_fresh() {
        let bless = std::env::var_os(BLESS_ENV).is_some();
        let fams = families();
        let mut stale = Vec::new();
        for f in &fams {
            let path = dir().join(format!("{}.json", f.name));
            let want = f.render();
            if std::fs::read_to_string(&path).ok().as_deref() == Some(want.as_str()) {
                continue;
            }
            if bless {
                std::fs::create_dir_all(dir()).unwrap();
                std::fs::write(&path, want).unwrap();
            } else {
                stale.push(format!("protocol/corpus/{}.json", f.name));
            }
        }
        for entry in std::fs::read_dir(dir()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let known = fams.iter().any(|f| format!("{}.json", f.name) == name);
            if !known {
                stale.push(format!("protocol/corpus/{name} (no family generates it)"));
            }
        }
        assert!(stale.is_empty(), "stale corpus: {}; refresh with `{BLESS_COMMAND}`", stale.join(", "));
    }

    #[test]
    fn every_case_has_a_unique_name() {
        let mut names = std::collections::HashSet::new();
        for f in families() {
            for c in &f.cases {
                let name = c["name"].as_str().expect("a case has a name").to_string();
                assert!(names.insert(name.clone()), "{}: two cases named {name}", f.name);
            }
        }
    }

    #[test]
    fn the_mutants_play_reference_numbers() {
        let dropped: Vec<u64> = (0..130).filter(|&i| Mutant::DropAppend.drops_append(i)).collect();
        assert_eq!(dropped, [1, 65, 129]);
        assert!(!Mutant::Stall.stalls_at(4) && Mutant::Stall.stalls_at(5));
        assert!(!Mutant::TornFork.drops_append(1) && !Mutant::TornFork.stalls_at(9));
    }
}
