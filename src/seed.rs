//! Seeds: every run has one, and every result and trial derives its own from
//! it by name, not by position, so that rerunning one result with `--cell`,
//! `--leg` and `--trial` filters reproduces exactly its kills.

/// FNV-1a over `parts`, separated so that ("ab","c") and ("a","bc") differ,
/// then SplitMix64's finaliser. Stable across platforms and Rust versions,
/// unlike `DefaultHasher`.
///
/// The finaliser is there because FNV-1a alone does not mix its input into
/// the low bits: its last step multiplies by an odd prime, which keeps the
/// parity of what came before, so every derived seed had the run seed's low
/// bit. A workload whose rule reads the seed's low bit (`fork`'s rewinds:
/// with an odd seed every rewind keeps nothing) then did the same thing for
/// every even run seed, and a verdict followed the run seed's parity.
pub fn derive(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for part in parts {
        for &b in part.as_bytes().iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    mix(h)
}

/// SplitMix64's finaliser (Steele, Lea and Flood, 2014): every input bit
/// reaches every output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fresh seed for a run that was not given one.
pub fn fresh() -> u64 {
    // Ten decimal digits: easy to read, type and paste into `--seed`.
    fastrand::u64(1_000_000_000..10_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivation_is_stable_and_separates_parts() {
        assert_eq!(derive(1, &["a", "b"]), derive(1, &["a", "b"]));
        assert_ne!(derive(1, &["ab", "c"]), derive(1, &["a", "bc"]));
        assert_ne!(derive(1, &["a"]), derive(2, &["a"]));
        // Pinned: a change here breaks every published repro command.
        assert_eq!(derive(42, &["a-cell", "wal", "timed"]), 0x569c_852b_7138_3361);
    }

    /// The run seed's low bit does not decide the derived seed's: over many
    /// run seeds of each parity, derived seeds of both parities appear, in
    /// about equal numbers. Without the finaliser every derived seed had
    /// its run seed's parity and this fails.
    #[test]
    fn a_derived_seed_does_not_keep_the_run_seeds_low_bit() {
        for parity in [0, 1] {
            let odd = (0..200u64)
                .map(|n| derive(2 * n + parity, &["fork-determinism", "default", "syscall", "workload"]))
                .filter(|s| s & 1 == 1)
                .count();
            assert!((60..=140).contains(&odd), "run seeds of parity {parity}: {odd} of 200 derived seeds odd");
        }
    }
}
