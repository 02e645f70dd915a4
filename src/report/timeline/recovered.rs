//! What was recovered, set against what was acked, as a timeline's reader
//! needs it: a session's messages as runs (`m0–m62, m64–m126`), so that a
//! hole shows where a range (`m0 … m395`) would hide it, and the acked
//! appends that are missing or recovered twice, named.

use std::collections::{BTreeMap, HashSet};

/// At most this many runs, or names in a list, are written out.
const SHOWN: usize = 24;

/// Messages as runs of consecutive `m<i>`: `m0–m62, m64, m66–m70`; other
/// contents as they are; a repeat breaks a run, so it shows.
pub fn runs(contents: &[&str]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    let close = |parts: &mut Vec<String>, run: Option<(u64, u64)>| match run {
        Some((a, b)) if a == b => parts.push(format!("m{a}")),
        Some((a, b)) => parts.push(format!("m{a}–m{b}")),
        None => {}
    };
    for c in contents {
        match (number(c), run) {
            (Some(n), Some((a, b))) if n == b + 1 => run = Some((a, n)),
            (Some(n), _) => {
                close(&mut parts, run);
                run = Some((n, n));
            }
            (None, _) => {
                close(&mut parts, run.take());
                parts.push((*c).to_string());
            }
        }
    }
    close(&mut parts, run);
    list(&parts)
}

fn number(content: &str) -> Option<u64> {
    content.strip_prefix('m')?.parse().ok()
}

/// Names, the first [`SHOWN`] of them, saying how many more.
fn list(names: &[String]) -> String {
    let mut s = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(", … ({} more)", names.len() - SHOWN));
    }
    s
}

/// Acked against recovered, in one line: how many acked messages were
/// recovered, which are missing, which were recovered more than once, and
/// how many recovered were never acked (the write in flight, which may or
/// may not survive). `None` when nothing acked is a message.
pub fn against(acked: &[String], recovered: &[&str]) -> Option<String> {
    if acked.is_empty() {
        return None;
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for c in recovered {
        *count.entry(c).or_default() += 1;
    }
    let missing: Vec<String> = acked.iter().filter(|a| !count.contains_key(a.as_str())).cloned().collect();
    let mut twice: Vec<&str> = count.iter().filter(|(_, n)| **n > 1).map(|(c, _)| *c).collect();
    twice.sort_by_key(|c| number(c));
    let promised: HashSet<&str> = acked.iter().map(String::as_str).collect();
    let unacked = count.keys().filter(|c| !promised.contains(*c)).count();
    let mut s = format!("{} of {} acked recovered", acked.len() - missing.len(), acked.len());
    if !missing.is_empty() {
        s.push_str(&format!("; missing: {}", list(&missing)));
    }
    if !twice.is_empty() {
        let twice: Vec<String> = twice.into_iter().map(String::from).collect();
        s.push_str(&format!("; recovered more than once: {}", list(&twice)));
    }
    if unacked > 0 {
        s.push_str(&format!("; {unacked} recovered never acked (the write in flight)"));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ns: impl IntoIterator<Item = u64>) -> Vec<String> {
        ns.into_iter().map(|n| format!("m{n}")).collect()
    }

    #[test]
    fn runs_show_the_holes_a_range_would_hide() {
        let got = ms((0..63).chain(64..127).chain([128, 130]));
        let got: Vec<&str> = got.iter().map(String::as_str).collect();
        assert_eq!(runs(&got), "m0–m62, m64–m126, m128, m130");
        assert_eq!(runs(&["m0", "m1", "m1", "m2", "system"]), "m0–m1, m1–m2, system", "a repeat breaks its run");
        assert_eq!(runs(&[]), "");
    }

    #[test]
    fn acked_against_recovered_names_the_missing_and_the_repeated() {
        let acked = ms(0..396);
        let recovered = ms((0..396).filter(|n| n % 64 != 63).chain([5, 396]));
        let recovered: Vec<&str> = recovered.iter().map(String::as_str).collect();
        assert_eq!(
            against(&acked, &recovered).unwrap(),
            "390 of 396 acked recovered; missing: m63, m127, m191, m255, m319, m383; \
             recovered more than once: m5; 1 recovered never acked (the write in flight)"
        );
        let all: Vec<&str> = acked.iter().map(String::as_str).collect();
        assert_eq!(against(&acked, &all).unwrap(), "396 of 396 acked recovered");
        assert_eq!(against(&[], &all), None);
        let many = ms(0..100);
        assert!(against(&many, &[]).unwrap().ends_with("m23, … (76 more)"));
    }
}
