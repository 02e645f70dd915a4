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

use crashcells_protocol::{JournalMode, Op, Synchronous};

use super::CellResult;
use crate::catalog::Catalog;
use crate::cells::{Cell, fire_kinds};
use crate::killmode::Source;
use crate::plan::KillMode;

/// The level a child did not report: whatever its store leaves to SQLite.
pub const DEFAULT_LEVEL: &str = "default";
/// The mode of a result no leg audit reached (no fire has none).
const UNAUDITED: &str = "unaudited";

/// A fingerprint, word by word: each word that names a typed thing as
/// that thing, printed and compared as the word it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub cell: String,
    /// The journal mode; `None` for a result no leg audit reached (`unaudited`).
    pub mode: Option<Word<JournalMode>>,
    /// The synchronous level; `None` for a child that reported none (`default`).
    pub synchronous: Option<Word<Synchronous>>,
    pub kill: KillMode,
    pub violation: String,
}

/// A fingerprint's word for a typed value: the value, or a word that names
/// none (a known-findings file's misspelling, a mode of a child's own),
/// kept as written so that it prints, compares and is named as it was.
/// Read exactly: `WAL` is not `wal`, as a known finding's word never was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Word<T> {
    Is(T),
    Other(String),
}

/// A value a fingerprint's word can name: its every value and their words.
pub trait Named: Copy + 'static {
    const ALL: &'static [Self];
    fn as_str(self) -> &'static str;
}

impl Named for JournalMode {
    const ALL: &'static [Self] = &JournalMode::ALL;
    fn as_str(self) -> &'static str {
        JournalMode::as_str(self)
    }
}

impl Named for Synchronous {
    const ALL: &'static [Self] = &Synchronous::ALL;
    fn as_str(self) -> &'static str {
        Synchronous::as_str(self)
    }
}

impl<T: Named> Word<T> {
    /// The value `word` names, if any, else the word.
    fn read(word: &str) -> Word<T> {
        match T::ALL.iter().find(|v| v.as_str() == word) {
            Some(v) => Word::Is(*v),
            None => Word::Other(word.to_string()),
        }
    }

    /// The word `none` stands for when absent, else this word's value or
    /// text: how a fingerprint writes it.
    fn written<'a>(word: Option<&'a Word<T>>, none: &'a str) -> &'a str {
        match word {
            None => none,
            Some(Word::Is(v)) => v.as_str(),
            Some(Word::Other(w)) => w,
        }
    }

    /// The word as a fingerprint holds it: `none`'s word is no value.
    fn read_or(word: &str, none: &str) -> Option<Word<T>> {
        (word != none).then(|| Word::read(word))
    }
}

impl Fingerprint {
    /// The fingerprint of a result that fired (known or not) with a kind of
    /// violation; `None` for any other result, and for a fire read from a
    /// report written before the kind was recorded.
    pub fn of(r: &CellResult) -> Option<Fingerprint> {
        if !r.verdict.is_fire() {
            return None;
        }
        let violation = r.finding.violation.as_deref()?;
        let (mode, synchronous) = site(r);
        Some(Fingerprint { cell: word(&r.cell), mode, synchronous, kill: r.kill, violation: word(violation) })
    }

    /// Whether `r` ran where this fingerprint points: its cell, mode,
    /// level and kill mode, whatever its verdict.
    pub fn is_site_of(&self, r: &CellResult) -> bool {
        let (mode, synchronous) = site(r);
        word(&r.cell) == self.cell && mode == self.mode && synchronous == self.synchronous && r.kill == self.kill
    }

    /// The site as a reader says it: `rotation-atomicity in wal/full under
    /// syscall kills`.
    pub fn site_phrase(&self) -> String {
        format!("{} in {}/{} under {} kills", self.cell, self.mode_word(), self.level_word(), self.kill.as_str())
    }

    /// The mode as the fingerprint writes it (`wal`, `unaudited`).
    fn mode_word(&self) -> &str {
        Word::written(self.mode.as_ref(), UNAUDITED)
    }

    /// The level as the fingerprint writes it (`full`, `default`).
    fn level_word(&self) -> &str {
        Word::written(self.synchronous.as_ref(), DEFAULT_LEVEL)
    }
}

impl Fingerprint {
    /// What this fingerprint names that no fire can have, said with the
    /// nearest word that is valid: a cell this driver has no probe for, a
    /// journal mode or synchronous level SQLite does not have, or a kind of
    /// violation no fire of that cell has under that kill (the cell's
    /// check's, the pipeline's, the store's own failure in an operation of
    /// the cell). A known finding misspelt would otherwise be "not run"
    /// for ever, and its gate green.
    pub fn unknown_word(&self) -> Option<String> {
        let cells: Vec<&str> = crate::cells::CELLS.iter().map(|c| c.id()).collect();
        let Some(cell) = crate::cells::find(&self.cell) else { return Some(unknown("cell", &self.cell, &cells)) };
        // Every fire's leg was audited: `unaudited` is no mode a fire has.
        if !matches!(self.mode, Some(Word::Is(_))) {
            let modes = JournalMode::ALL.map(JournalMode::as_str);
            return Some(unknown("journal mode", self.mode_word(), &modes));
        }
        if let Some(Word::Other(level)) = &self.synchronous {
            let levels = [Synchronous::ALL.map(Synchronous::as_str).as_slice(), &[DEFAULT_LEVEL]].concat();
            return Some(unknown("synchronous level", level, &levels));
        }
        // An injected failure (a failed write or sync) adds its clause (a).
        let injected = matches!(self.kill.mode().source, Source::Injected(_));
        let kinds = fire_kinds(cell, &operations(cell), injected);
        if !kinds.contains(&self.violation.as_str()) {
            let context = format!("for {} under {} kills", self.cell, self.kill.as_str());
            return Some(unknown_in("violation", &self.violation, &context, &kinds));
        }
        None
    }
}

/// The operations `cell` runs (whose failure is a fire of its own), from
/// its shape in the built-in catalog (the parameters change no operation);
/// every operation if that cannot be read.
fn operations(cell: &dyn Cell) -> Vec<Op> {
    let shape = Catalog::embedded()
        .ok()
        .and_then(|c| c.cells.into_iter().find(|s| s.id == cell.id()))
        .and_then(|spec| cell.shape(&spec.params).ok());
    shape.map_or_else(|| Op::ALL.to_vec(), |s| s.kind().operations())
}

/// `an unknown cell `x` (did you mean `y`?)`: the nearest valid word when
/// one is near (a typo), else every valid word.
pub fn unknown(what: &str, word: &str, valid: &[&str]) -> String {
    unknown_in(what, word, "", valid)
}

/// [`unknown`] of a word valid only in `context` (`for rotation-atomicity
/// under syscall kills`), said after the word.
fn unknown_in(what: &str, word: &str, context: &str, valid: &[&str]) -> String {
    let named = if context.is_empty() { format!("`{word}`") } else { format!("`{word}` {context}") };
    match crate::suggest::nearest(word, valid) {
        Some(n) => format!("an unknown {what} {named} (did you mean `{n}`?)"),
        None => format!("an unknown {what} {named} (not one of {})", valid.join(", ")),
    }
}

/// The mode and level `r` effectively ran, as a fingerprint holds them:
/// read from their words, so that a result's site is the site a
/// known-findings file names with the same words.
fn site(r: &CellResult) -> (Option<Word<JournalMode>>, Option<Word<Synchronous>>) {
    let mode = r.effective_mode.as_ref().map_or(UNAUDITED.into(), |m| word(&m.to_string()));
    let synchronous = r.synchronous.as_deref().map_or(DEFAULT_LEVEL.into(), word);
    (Word::read_or(&mode, UNAUDITED), Word::read_or(&synchronous, DEFAULT_LEVEL))
}

/// A value as one word of a fingerprint: lowercase, no separator inside.
fn word(s: &str) -> String {
    s.trim().to_lowercase().replace(['/', ' '], "-")
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (mode, level) = (self.mode_word(), self.level_word());
        write!(f, "{}/{mode}/{level}/{}/{}", self.cell, self.kill.as_str(), self.violation)
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
        let Some(kill) = KillMode::named(kill) else {
            let all: Vec<&str> = KillMode::all().map(|k| k.as_str()).collect();
            return Err(format!("names {}", unknown("kill", kill, &all)));
        };
        Ok(Fingerprint {
            cell: cell.into(),
            mode: Word::read_or(mode, UNAUDITED),
            synchronous: Word::read_or(synchronous, DEFAULT_LEVEL),
            kill,
            violation: violation.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;
    use crate::model::tests::fire;
    use crate::plan::KillMode;

    #[test]
    fn a_fire_is_its_cell_mode_level_kill_and_kind_and_nothing_that_moves() {
        let mut r = fire(KillMode::Syscall, "wal");
        (r.cell, r.finding.violation, r.synchronous) =
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
    fn its_words_are_typed_and_print_as_they_were_written() {
        let fp: Fingerprint = "c/wal/default/none/lost-ack".parse().unwrap();
        assert_eq!((&fp.mode, &fp.synchronous, fp.kill), (&Some(Word::Is(JournalMode::Wal)), &None, KillMode::None));
        for s in ["c/WAL/Full/timed/x", "c/unaudited/default/syscall/x", "c/wal2/extra/power/x"] {
            assert_eq!(s.parse::<Fingerprint>().unwrap().to_string(), s);
        }
        let upper: Fingerprint = "c/WAL/full/timed/x".parse().unwrap();
        assert_eq!(upper.mode, Some(Word::Other("WAL".into())), "read exactly, as the words were compared");
        assert_eq!(upper.synchronous, Some(Word::Is(Synchronous::Full)));
    }

    #[test]
    fn only_a_fire_with_a_kind_has_one() {
        let mut r = fire(KillMode::Timed, "wal");
        assert_eq!(Fingerprint::of(&r), None, "a fire from a report written before kinds were kept");
        r.finding.violation = Some("lost-ack".into());
        r.verdict = Verdict::Error;
        assert_eq!(Fingerprint::of(&r), None, "an error is no finding");
        r.verdict = Verdict::Known;
        assert_eq!(Fingerprint::of(&r).unwrap().to_string(), "c/wal/default/timed/lost-ack");
    }

    #[test]
    fn a_word_that_no_fire_can_have_is_named_with_the_nearest_valid_one() {
        let e = |s: &str| s.parse::<Fingerprint>().unwrap().unknown_word();
        assert_eq!(e("rotation-atomicity/wal/full/syscall/orphan"), None);
        assert_eq!(
            e("rotation-atomicty/wal/full/syscall/orphan").unwrap(),
            "an unknown cell `rotation-atomicty` (did you mean `rotation-atomicity`?)"
        );
        assert!(
            e("cell-nine/wal/full/syscall/orphan").unwrap().contains("(not one of prefix-durability, consume-once")
        );
        assert_eq!(
            e("rotation-atomicity/wall/full/syscall/orphan").unwrap(),
            "an unknown journal mode `wall` (did you mean `wal`?)"
        );
        assert_eq!(
            e("rotation-atomicity/wal/ful/syscall/orphan").unwrap(),
            "an unknown synchronous level `ful` (did you mean `full`?)"
        );
        assert_eq!(
            e("rotation-atomicity/wal/full/syscall/orphans").unwrap(),
            "an unknown violation `orphans` for rotation-atomicity under syscall kills (did you mean `orphan`?)"
        );
        assert!(e("rotation-atomicity/wal/full/syscall/lost-ack").is_some(), "another cell's kind");
        // The pipeline's kinds, for every cell; a store's failure in an operation the cell runs.
        assert_eq!(e("consume-once/wal/default/none/corrupt"), None);
        assert_eq!(e("consume-once/wal/default/none/store-failed-claim"), None);
        assert!(e("consume-once/wal/default/none/store-failed-append").is_some());
        // Clause (a) of fault injection, under fault kills only.
        assert_eq!(e("prefix-durability/wal/full/fault/acked-despite-io-error"), None);
        assert!(e("prefix-durability/wal/full/syscall/acked-despite-io-error").is_some());
    }

    #[test]
    fn a_malformed_fingerprint_says_what_is_wrong() {
        let e = |s: &str| s.parse::<Fingerprint>().unwrap_err();
        assert!(e("a/b/c").starts_with("has 3 words, not the 5"), "{}", e("a/b/c"));
        assert_eq!(e("a//full/syscall/x"), "its mode is empty");
        let all: Vec<&str> = KillMode::all().map(|k| k.as_str()).collect();
        assert_eq!(e("a/wal/full/kill/x"), format!("names an unknown kill `kill` (not one of {})", all.join(", ")));
        assert!(all.starts_with(&["timed", "syscall", "none", "power", "torn", "fault"]), "{all:?}");
        assert_eq!(e("a/wal/full/sycall/x"), "names an unknown kill `sycall` (did you mean `syscall`?)");
        assert!("c/wal/full/torn/lost-ack".parse::<Fingerprint>().is_ok(), "a torn fire can be listed");
        assert!("c/wal/full/fault/acked-despite-io-error".parse::<Fingerprint>().is_ok(), "so can a fault fire");
    }
}
