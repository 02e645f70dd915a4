//! A mistyped word said back to the user: every refusal of an unknown value
//! (a cell, mutant, leg, matrix, format, kill mode, a known finding's word)
//! lists the valid ones, and names the nearest where it is near enough to
//! be a typo, so that one line is enough to fix the command.

/// The valid word nearest to `word`, where it is near enough to be a typo
/// of it (a third of its letters, at least two, may differ), or else the
/// one valid word that begins with a typo of it (`prefx` for
/// `prefix-durability`: a long id is often typed in part).
pub fn nearest<'a>(word: &str, valid: &[&'a str]) -> Option<&'a str> {
    let n = valid.iter().min_by_key(|v| strsim::levenshtein(word, v))?;
    if strsim::levenshtein(word, n) <= (n.len() / 3).max(2) {
        return Some(n);
    }
    let begins = |v: &&&str| {
        let head: String = v.chars().take(word.chars().count()).collect();
        word.chars().count() >= 4 && strsim::levenshtein(word, &head) <= 1
    };
    let mut begun = valid.iter().filter(begins);
    match (begun.next(), begun.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// `: did you mean `x`?` after a refused word where one is near, else nothing.
pub fn did_you_mean(word: &str, valid: &[&str]) -> String {
    nearest(word, valid).map_or_else(String::new, |n| format!(": did you mean `{n}`?"))
}

/// `unknown {what} `word`: did you mean `x`? (known: a, b, c)`.
pub fn unknown(what: &str, word: &str, valid: &[&str]) -> String {
    format!("unknown {what} `{word}`{} (known: {})", did_you_mean(word, valid), valid.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MUTANTS: [&str; 3] = ["racy-claim", "split-claim", "drop-append"];

    #[test]
    fn a_typo_is_named_with_every_valid_word() {
        assert_eq!(
            unknown("mutant", "racy-clam", &MUTANTS),
            "unknown mutant `racy-clam`: did you mean `racy-claim`? (known: racy-claim, split-claim, drop-append)"
        );
    }

    #[test]
    fn a_word_near_nothing_gets_the_list_alone() {
        assert_eq!(
            unknown("mutant", "nope", &MUTANTS),
            "unknown mutant `nope` (known: racy-claim, split-claim, drop-append)"
        );
        assert_eq!(nearest("x", &[]), None);
    }

    #[test]
    fn short_words_allow_two_edits_and_long_ones_a_third() {
        assert_eq!(nearest("jsno", &["human", "json", "markdown", "junit"]), Some("json"));
        assert_eq!(nearest("rcy-clam", &MUTANTS), Some("racy-claim"));
        assert_eq!(nearest("wxyz-claim", &MUTANTS), None);
        assert_eq!(nearest("prefx", &["prefix-durability", "consume-once"]), Some("prefix-durability"));
        assert_eq!(nearest("spli", &["split-claim", "split-rotation"]), None, "two begin so: neither");
    }
}
