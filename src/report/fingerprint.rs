//! A fire's fingerprint: what was violated, in words that stay the same
//! across seeds, kill points, machines and SQLite patch versions, so that
//! two runs of one finding name it alike and a file of known findings
//! (`known.rs`) can list it.
//!
//! Five words joined by `/`: the cell's id, the journal mode and the
//! synchronous level the leg effectively ran (as the leg audit found them;
//! a level the child did not report is the store's `default`), the kill
//! mode, and the kind of the violation the result reports (its first, as
//! the cell's judge names it: `lost-ack`, `orphan`, `double-delivery`,
//! `corrupt`, `nondeterministic-recovery`, ...):
//! `rotation-atomicity/wal/full/syscall/orphan`.
//!
//! Left out on purpose: the leg's name (the resolver's default and `wal`
//! run the same mode and level: one site, one finding), the kill point and
//! every number of the violation (which append, how many orphans: they
//! move with the seed and the kill point), and the SQLite version.

use std::fmt;

use super::CellResult;
use crate::plan::KillMode;

/// The level a child did not report: whatever its store leaves to SQLite.
pub const DEFAULT_LEVEL: &str = "default";
/// The mode of a result no leg audit reached (no fire has none).
const UNAUDITED: &str = "unaudited";

/// A fingerprint, word by word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub cell: String,
    pub mode: String,
    pub synchronous: String,
    pub kill: String,
    pub violation: String,
}

impl Fingerprint {
    /// The fingerprint of a result that fired (known or not) with a kind of
    /// violation; `None` for any other result, and for a fire read from a
    /// report written before the kind was recorded.
    pub fn of(r: &CellResult) -> Option<Fingerprint> {
        if !r.verdict.is_fire() {
            return None;
        }
        let violation = r.violation.as_deref()?;
        let (mode, synchronous) = site(r);
        Some(Fingerprint {
            cell: word(&r.cell),
            mode,
            synchronous,
            kill: r.kill.as_str().into(),
            violation: word(violation),
        })
    }

    /// Whether `r` ran where this fingerprint points: its cell, mode,
    /// level and kill mode, whatever its verdict.
    pub fn is_site_of(&self, r: &CellResult) -> bool {
        let (mode, synchronous) = site(r);
        word(&r.cell) == self.cell
            && mode == self.mode
            && synchronous == self.synchronous
            && r.kill.as_str() == self.kill
    }

    /// The site as a reader says it: `rotation-atomicity in wal/full under
    /// syscall kills`.
    pub fn site_phrase(&self) -> String {
        format!("{} in {}/{} under {} kills", self.cell, self.mode, self.synchronous, self.kill)
    }
}

/// The mode and level `r` effectively ran, as fingerprint words.
fn site(r: &CellResult) -> (String, String) {
    let mode = r.effective_mode.as_deref().map_or(UNAUDITED.into(), word);
    let synchronous = r.synchronous.as_deref().map_or(DEFAULT_LEVEL.into(), word);
    (mode, synchronous)
}

/// A value as one word of a fingerprint: lowercase, no separator inside.
fn word(s: &str) -> String {
    s.trim().to_lowercase().replace(['/', ' '], "-")
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}/{}/{}", self.cell, self.mode, self.synchronous, self.kill, self.violation)
    }
}

impl std::str::FromStr for Fingerprint {
    type Err = String;

    fn from_str(s: &str) -> Result<Fingerprint, String> {
        let words: Vec<&str> = s.split('/').collect();
        let [cell, mode, synchronous, kill, violation] = words[..] else {
            return Err(format!(
                "has {} words, not the 5 of cell/mode/synchronous/kill/violation (e.g. \
                 rotation-atomicity/wal/full/syscall/orphan)",
                words.len()
            ));
        };
        if let Some(empty) = ["cell", "mode", "synchronous", "kill", "violation"]
            .iter()
            .zip(&words)
            .find_map(|(name, w)| w.trim().is_empty().then_some(name))
        {
            return Err(format!("its {empty} is empty"));
        }
        // Any kill mode a result can have, so that every fire can be listed.
        if KillMode::named(kill).is_none() {
            let all: Vec<&str> = KillMode::all().map(|k| k.as_str()).collect();
            return Err(format!("its kill `{kill}` is not one of {}", all.join(", ")));
        }
        let [cell, mode, synchronous, kill, violation] = [cell, mode, synchronous, kill, violation].map(String::from);
        Ok(Fingerprint { cell, mode, synchronous, kill, violation })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::KillMode;
    use crate::report::Verdict;
    use crate::report::tests::fire;

    #[test]
    fn a_fire_is_its_cell_mode_level_kill_and_kind_and_nothing_that_moves() {
        let mut r = fire(KillMode::Syscall, "wal");
        (r.cell, r.violation, r.synchronous) =
            ("rotation-atomicity".into(), Some("orphan".into()), Some("FULL".into()));
        let fp = Fingerprint::of(&r).unwrap();
        assert_eq!(fp.to_string(), "rotation-atomicity/wal/full/syscall/orphan");
        // Another leg of the same mode, another kill point, other numbers: the same finding.
        let mut other = r.clone();
        (other.leg, other.reason, other.acked) = ("default".into(), "trial 95: 3 orphans".into(), 7);
        assert_eq!(Fingerprint::of(&other), Some(fp.clone()));
        assert!(fp.is_site_of(&other));
        r.synchronous = None;
        assert_eq!(Fingerprint::of(&r).unwrap().to_string(), "rotation-atomicity/wal/default/syscall/orphan");
        assert!(!fp.is_site_of(&r), "another level is another site");
        assert_eq!(fp.to_string().parse::<Fingerprint>(), Ok(fp));
    }

    #[test]
    fn only_a_fire_with_a_kind_has_one() {
        let mut r = fire(KillMode::Timed, "wal");
        assert_eq!(Fingerprint::of(&r), None, "a fire from a report written before kinds were kept");
        r.violation = Some("lost-ack".into());
        r.verdict = Verdict::Error;
        assert_eq!(Fingerprint::of(&r), None, "an error is no finding");
        r.verdict = Verdict::Known;
        assert_eq!(Fingerprint::of(&r).unwrap().to_string(), "c/wal/default/timed/lost-ack");
    }

    #[test]
    fn a_malformed_fingerprint_says_what_is_wrong() {
        let e = |s: &str| s.parse::<Fingerprint>().unwrap_err();
        assert!(e("a/b/c").starts_with("has 3 words, not the 5"), "{}", e("a/b/c"));
        assert_eq!(e("a//full/syscall/x"), "its mode is empty");
        let all: Vec<&str> = KillMode::all().map(|k| k.as_str()).collect();
        assert_eq!(e("a/wal/full/kill/x"), format!("its kill `kill` is not one of {}", all.join(", ")));
        assert!(all.starts_with(&["timed", "syscall", "none", "power", "torn", "fault"]), "{all:?}");
        assert!("c/wal/full/torn/lost-ack".parse::<Fingerprint>().is_ok(), "a torn fire can be listed");
        assert!("c/wal/full/fault/acked-despite-io-error".parse::<Fingerprint>().is_ok(), "so can a fault fire");
    }
}
