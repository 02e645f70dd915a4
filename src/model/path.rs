//! Which path judged a result, in the report's words: how its children
//! were started ([`Children`]: forked by the child's fork server, taken
//! from its warm pool, or exec'd), how its crash states were made
//! ([`States`]: rebuilt from a recording, or real runs), the deadline its
//! waits ran under, and how often its fire's repro fired again in the run
//! ([`Refire`]). A fast path must never change a verdict (issue 29); a
//! reader can only check that if every result says which path it took, and
//! its repro reruns that path.

use serde::{Deserialize, Serialize};

/// How a result's children were started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Children {
    /// Forked by the child's fork server (docs/PROTOCOL.md §9); every fire
    /// found so was run again exec'd before it was reported.
    Forked,
    /// Taken from the child's warm pool (docs/PROTOCOL.md §10), one
    /// process per operation, each used once.
    Warm,
    /// Exec'd one by one: a child without a fork server or warm pool, or
    /// a run with `--fork-server off --warm-pool off`.
    Exec,
}

impl Children {
    /// One word, for a table's column.
    pub fn as_str(self) -> &'static str {
        match self {
            Children::Forked => "forked",
            Children::Warm => "warm",
            Children::Exec => "exec",
        }
    }

    /// As a reader says it.
    pub fn phrase(self) -> &'static str {
        match self {
            Children::Forked => "forked by the child's fork server (a fire is confirmed exec'd)",
            Children::Warm => "from the child's warm pool (a fire is confirmed exec'd)",
            Children::Exec => "exec'd",
        }
    }
}

/// How a result's crash states were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum States {
    /// Rebuilt from one recorded run of the workload (docs/DESIGN.md,
    /// "Recorded crash states"), a fire confirmed by a real kill.
    Recorded,
    /// A real run of the child for each trial or point (timed kills, races,
    /// `--replay off`, `--point`, or a recording that disagreed with the disk).
    ReExecuted,
}

impl States {
    /// One word, for a table's column.
    pub fn as_str(self) -> &'static str {
        match self {
            States::Recorded => "recorded",
            States::ReExecuted => "re-executed",
        }
    }

    /// As a reader says it.
    pub fn phrase(self) -> &'static str {
        match self {
            States::Recorded => "replayed from a recording",
            States::ReExecuted => "re-executed (a real run of the child for each trial or point)",
        }
    }
}

/// How often a fire's repro fired again when the run reran it: a measure,
/// not a promise (a race's or a timed kill's lands where the scheduler
/// lets it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refire {
    /// How many times the repro was rerun.
    pub runs: u32,
    /// How many of those runs fired.
    pub fired: u32,
}

impl Refire {
    /// `refired 3 of 5`.
    pub fn phrase(self) -> String {
        format!("refired {} of {}", self.fired, self.runs)
    }
}

/// Where a result's time went besides finding its verdict: what making
/// sure of a fire cost, in the run's own clock (issue 42). JSON only: a
/// bench reads it, a reader of a verdict does not need it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spent {
    /// A recorded fire's real kill at its point, on the run's path, and
    /// the runs that sought its state again where that passed.
    #[serde(default)]
    pub real_kill_ms: u64,
    /// The exec'd runs that confirmed a fire found forked, and how many.
    #[serde(default)]
    pub confirm_ms: u64,
    #[serde(default)]
    pub confirm_runs: u32,
    /// A timed fire the exec'd trials missed: the exec'd syscall sweep
    /// that confirmed it or not.
    #[serde(default)]
    pub sweep_confirm_ms: u64,
    /// The repro's reruns (`refire`), beside one another.
    #[serde(default)]
    pub refire_ms: u64,
}

impl Spent {
    /// Whether nothing was spent: a result that did not fire.
    pub fn is_none(&self) -> bool {
        *self == Spent::default()
    }
}

/// A deadline as a reader reads it: `30s`, `41.7s`.
pub fn seconds(ms: u64) -> String {
    let s = format!("{:.1}", ms as f64 / 1000.0);
    format!("{}s", s.strip_suffix(".0").unwrap_or(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_reads_in_one_word_and_a_deadline_without_a_useless_decimal() {
        assert_eq!((Children::Forked.as_str(), States::ReExecuted.as_str()), ("forked", "re-executed"));
        assert_eq!(serde_json::to_string(&Children::Warm).unwrap(), "\"warm\"");
        assert_eq!((seconds(30_000), seconds(41_730)), ("30s".to_string(), "41.7s".to_string()));
        assert_eq!(Refire { runs: 5, fired: 2 }.phrase(), "refired 2 of 5");
    }
}
