//! The kill modes, as one table: for each mode its name, its help, what its
//! progress counts, whether it sweeps kill points, the label its seed is
//! derived with, its column in the audit, and the crash source that drives
//! it. How each shape takes a mode is the shape's
//! (`crate::cells::ShapeKind::takes`). The command line's `--kill` values, the
//! dispatch of a job to its driver, the audit's crash columns, the
//! fingerprints a known-findings file may name and `--help` are all read
//! from [`MODES`]; no other file lists the modes.
//!
//! Crash model: each mode's own, said by its driver ([`Source`]): a timed
//! or syscall `SIGKILL` (`crate::kill`), the power-loss models
//! (`crate::crashstate::power`, `crate::crashstate::torn`), or an injection
//! at a trapped call that kills nothing ([`crate::kill::inject`]).
//!
//! Adding a mode is a variant of [`KillMode`], its row in [`MODES`], and its
//! driver: for a new way to change a trapped call, one module implementing
//! [`Injection`] (`crate::kill::fault` is one).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::kill::inject::Injection;

/// How a result's children met their end: a row of [`MODES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KillMode {
    Timed,
    Syscall,
    None,
    Power,
    Torn,
    Fault,
    ShortWrite,
}

/// One kill mode, everything the driver knows of it.
#[derive(Debug)]
pub struct Mode {
    pub kill: KillMode,
    /// As `--kill`, reports and fingerprints name it.
    pub name: &'static str,
    /// `--kill`'s help for it.
    pub help: &'static str,
    /// The mode as a reader says it: `timed kill`, `power loss`.
    pub phrase: &'static str,
    /// What a result's progress bar counts.
    pub unit: &'static str,
    /// What one of a result's trials is, for the report's `ran` column.
    pub trial: &'static str,
    /// Whether its trials are a sweep's kill points (its results plan and
    /// land points, take `--point`, and can prove a known finding gone).
    pub sweeps_points: bool,
    /// What a result's seed is derived with: its name, or another mode's
    /// whose recorded run it shares (torn sweeps power's).
    pub seed_label: &'static str,
    /// Part of `--kill all` (the default), whose contract is the process crash.
    pub in_all: bool,
    /// Its crash column in `crashcells audit`, if it has one.
    pub audit: Option<AuditColumn>,
    /// What drives a workload cell's result under it.
    pub source: Source,
}

/// The crash source that drives a workload cell's result.
#[derive(Clone, Copy)]
pub enum Source {
    /// Nothing: a workload has nothing to show without a kill, so the mode
    /// plans none (a race runs free).
    NoKill,
    /// A kill once a seeded number of acks is reached.
    Timed,
    /// A `SIGKILL` at every file-mutating call: recorded and rebuilt, or re-executed.
    Syscall,
    /// The power-loss states of the recorded run, in order or torn.
    Power { torn: bool },
    /// One run per call the injection changes, the child running on.
    Injected(&'static dyn Injection),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::NoKill => write!(f, "NoKill"),
            Source::Timed => write!(f, "Timed"),
            Source::Syscall => write!(f, "Syscall"),
            Source::Power { torn } => write!(f, "Power {{ torn: {torn} }}"),
            Source::Injected(_) => write!(f, "Injected"),
        }
    }
}

/// A crash column of the audit: its JSON key, its heading, its name in a
/// row's explanation, and what it asks (the legend's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditColumn {
    pub key: &'static str,
    pub heading: &'static str,
    pub long: &'static str,
    pub asks: &'static str,
}

/// Every kill mode, in the order results are planned and `--kill` lists them.
pub static MODES: &[Mode] = &[
    Mode {
        kill: KillMode::Timed,
        name: "timed",
        help: "kill once a seeded number of acks is reached",
        phrase: "timed kill",
        unit: "trials",
        trial: "trial",
        sweeps_points: false,
        seed_label: "timed",
        in_all: true,
        audit: None,
        source: Source::Timed,
    },
    Mode {
        kill: KillMode::Syscall,
        name: "syscall",
        help: "kill at every file-mutating system call of a short workload",
        phrase: "syscall kill",
        unit: "points",
        trial: "point",
        sweeps_points: true,
        seed_label: "syscall",
        in_all: true,
        audit: Some(AuditColumn {
            key: "process_crash",
            heading: "process",
            long: "process crash",
            asks: "a process crash (SIGKILL)",
        }),
        source: Source::Syscall,
    },
    Mode {
        kill: KillMode::None,
        name: "none",
        help: "only the results that kill nothing (cell 2's race): what the repro of such a result names",
        phrase: "no kill: a race",
        unit: "races",
        trial: "race",
        sweeps_points: false,
        seed_label: "none",
        in_all: false,
        audit: None,
        source: Source::NoKill,
    },
    Mode {
        kill: KillMode::Power,
        name: "power",
        help: "power loss at every kill point of the recorded workload (opt-in, not in `all`)",
        phrase: "power loss",
        unit: "stores",
        trial: "point",
        sweeps_points: true,
        seed_label: "power",
        in_all: false,
        audit: Some(AuditColumn { key: "power_loss", heading: "power", long: "power loss", asks: "a power loss" }),
        source: Source::Power { torn: false },
    },
    Mode {
        kill: KillMode::Torn,
        name: "torn",
        help: "power loss with torn and reordered writes, bounded (opt-in)",
        phrase: "torn power loss",
        unit: "stores",
        trial: "point",
        sweeps_points: true,
        // The torn model sweeps the in-order one's recorded run: they share
        // a workload, sampled points and, where the caller shares, one recording.
        seed_label: "power",
        in_all: false,
        audit: Some(AuditColumn {
            key: "torn_power_loss",
            heading: "torn",
            long: "torn power loss",
            asks: "a power loss with torn and reordered writes",
        }),
        source: Source::Power { torn: true },
    },
    Mode {
        kill: KillMode::Fault,
        name: "fault",
        help: "at every write (ENOSPC) or sync (EIO) of the store's files, the call fails and the child runs on \
               (opt-in)",
        phrase: "fault injection",
        unit: "points",
        trial: "point",
        sweeps_points: true,
        seed_label: "fault",
        in_all: false,
        audit: Some(AuditColumn {
            key: "fault_injection",
            heading: "fault",
            long: "fault injection",
            asks: "a failed write or sync",
        }),
        source: Source::Injected(&crate::kill::fault::FAULT),
    },
    Mode {
        kill: KillMode::ShortWrite,
        name: "short-write",
        help: "at every write of the store's files, the write writes only half its bytes, returns that short count \
               and the child runs on (opt-in)",
        phrase: "short writes",
        unit: "points",
        trial: "point",
        sweeps_points: true,
        seed_label: "short-write",
        in_all: false,
        // SQLite completes a short write itself, whatever the journal mode:
        // a column would say `keeps` on every leg and nothing about one.
        audit: None,
        source: Source::Injected(&crate::kill::short_write::SHORT_WRITE),
    },
];

impl KillMode {
    /// Its row of [`MODES`].
    pub fn mode(self) -> &'static Mode {
        MODES.iter().find(|m| m.kill == self).expect("every kill mode has its row")
    }

    /// Every kill mode, as reports and known-findings files name them.
    pub fn all() -> impl Iterator<Item = KillMode> {
        MODES.iter().map(|m| m.kill)
    }

    /// The modes of `--kill all`, the default, in plan order.
    pub fn default_set() -> Vec<KillMode> {
        MODES.iter().filter(|m| m.in_all).map(|m| m.kill).collect()
    }

    /// The mode named `name`, if there is one.
    pub fn named(name: &str) -> Option<KillMode> {
        MODES.iter().find(|m| m.name == name).map(|m| m.kill)
    }

    /// The mode a race that kills nothing reports.
    pub fn free_race() -> KillMode {
        MODES.iter().find(|m| matches!(m.source, Source::NoKill)).expect("a mode that kills nothing").kill
    }

    pub fn as_str(self) -> &'static str {
        self.mode().name
    }

    pub fn seed_label(self) -> &'static str {
        self.mode().seed_label
    }

    pub fn sweeps_points(self) -> bool {
        self.mode().sweeps_points
    }

    pub fn phrase(self) -> &'static str {
        self.mode().phrase
    }

    /// Whether it kills (or injects into) a workload at all: not the mode
    /// of a race without a kill.
    pub fn kills(self) -> bool {
        !matches!(self.mode().source, Source::NoKill)
    }

    /// Whether it is a timed kill, which lands where the scheduler lets it.
    pub fn is_timed(self) -> bool {
        matches!(self.mode().source, Source::Timed)
    }

    /// Whether it is the syscall kill (a real `SIGKILL` at each point).
    pub fn is_syscall(self) -> bool {
        matches!(self.mode().source, Source::Syscall)
    }
}

impl Serialize for KillMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for KillMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KillMode, D::Error> {
        let name = String::deserialize(d)?;
        KillMode::named(&name).ok_or_else(|| {
            let all: Vec<&str> = MODES.iter().map(|m| m.name).collect();
            serde::de::Error::custom(format!("unknown kill mode `{name}` (kill modes: {})", all.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_one_row_and_a_name_of_its_own() {
        for m in MODES {
            assert_eq!(m.kill.mode().name, m.name);
            assert_eq!(KillMode::named(m.name), Some(m.kill));
            assert_eq!(serde_json::to_string(&m.kill).unwrap(), format!("\"{}\"", m.name));
            assert_eq!(serde_json::from_str::<KillMode>(&format!("\"{}\"", m.name)).unwrap(), m.kill);
        }
        let names: std::collections::HashSet<_> = MODES.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), MODES.len());
        assert!(serde_json::from_str::<KillMode>("\"gentle\"").unwrap_err().to_string().contains("kill modes: timed"));
    }

    #[test]
    fn a_mode_shares_a_seed_only_with_a_mode_that_exists() {
        for m in MODES {
            assert!(KillMode::named(m.seed_label).is_some(), "{}", m.name);
        }
        assert_eq!(KillMode::free_race().as_str(), "none");
        assert_eq!(KillMode::default_set().iter().map(|k| k.as_str()).collect::<Vec<_>>(), ["timed", "syscall"]);
    }
}
