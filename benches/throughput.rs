//! Append throughput of the reference store against bare rusqlite, per
//! journal mode, printed as ratios measured side by side in one run.
//!
//! `cargo bench --bench throughput [-- APPENDS]` prints, for each leg of the
//! default matrix and for a memory-backed and a disk-backed folder: bare
//! rusqlite inserts (the same two statements in one `BEGIN IMMEDIATE`), the
//! store's `append` alone, and `append` plus the ack journal, which is what
//! the child does. The ack journal should cost under 10%.

use std::path::Path;
use std::time::{Duration, Instant};

use crashcells_child::resolver::DEFAULT_MODE;
use crashcells_child::store::Store;
use crashcells_protocol::{Ack, AckWriter, Record};
use crashcells_protocol::{DatabaseConfig, JournalMode};
use rusqlite::{Connection, TransactionBehavior, params};

const ROUNDS: usize = 5;

fn bare(dir: &Path, leg: Option<JournalMode>, n: u64) -> Duration {
    let mode = leg.unwrap_or(DEFAULT_MODE);
    let mut conn = Connection::open(dir.join("bare.db")).unwrap();
    conn.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get::<_, String>(0)).unwrap();
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, message_count INTEGER NOT NULL DEFAULT 0);
         CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT,
             content TEXT, timestamp REAL);
         INSERT OR IGNORE INTO sessions (id) VALUES ('main');",
    )
    .unwrap();
    let start = Instant::now();
    for i in 0..n {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
        tx.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('main', 'user', ?1, 0.0)",
            params![format!("m{i}")],
        )
        .unwrap();
        tx.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id='main'", []).unwrap();
        tx.commit().unwrap();
    }
    start.elapsed()
}

fn store(dir: &Path, leg: Option<JournalMode>, n: u64, with_acks: bool) -> Duration {
    let config = DatabaseConfig { journal_mode: leg, synchronous: None };
    let name = if with_acks { "acked" } else { "store" };
    let mut s = Store::open(&dir.join(format!("{name}.db")), config).unwrap();
    s.create_session("main", None).unwrap();
    let mut acks = AckWriter::create(&dir.join(format!("{name}.ndjson"))).unwrap();
    let start = Instant::now();
    for i in 0..n {
        s.append("main", "user", &format!("m{i}"), &mut || ()).unwrap();
        if with_acks {
            acks.record(&Record::Ack(Ack::of("append", i))).unwrap();
        }
    }
    start.elapsed()
}

/// The median of `ROUNDS` runs of `f`, each in a fresh folder under `root`;
/// the three variants interleave so that noise hits them alike.
fn measure(root: &Path, mode: Option<JournalMode>, n: u64) -> [Duration; 3] {
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..ROUNDS {
        let dir = tempfile::tempdir_in(root).unwrap();
        samples[0].push(bare(dir.path(), mode, n));
        samples[1].push(store(dir.path(), mode, n, false));
        samples[2].push(store(dir.path(), mode, n, true));
    }
    samples.map(|mut s| {
        s.sort();
        s[s.len() / 2]
    })
}

fn rate(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; a number among the arguments sets the appends per round.
    let n: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(2000);
    let mut places = vec![("memory", std::path::PathBuf::from("/dev/shm"))];
    places.push(("disk", std::env::current_dir().unwrap().join("target")));
    println!("appends per round: {n}, median of {ROUNDS} rounds; rates in appends/s");
    println!(
        "{:<7} {:<7} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "place", "leg", "bare", "store", "child", "child/bare", "acks cost"
    );
    let legs = [("default", None), ("delete", Some(JournalMode::Delete)), ("wal", Some(JournalMode::Wal))];
    for (place, root) in places.into_iter().filter(|(_, p)| p.is_dir()) {
        for (leg, mode) in legs {
            let [b, s, c] = measure(&root, mode, n);
            println!(
                "{place:<7} {leg:<7} {:>10.0} {:>10.0} {:>10.0} {:>11.2}x {:>11.1}%",
                rate(n, b),
                rate(n, s),
                rate(n, c),
                rate(n, c) / rate(n, b),
                (c.as_secs_f64() / s.as_secs_f64() - 1.0) * 100.0
            );
        }
    }
}
