//! The points a syscall sweep visits: one asked for, a seeded sample of
//! the candidates, or every candidate.
//!
//! Crash model: a sample leaves crash states unvisited, and says which by
//! the seed: the same seed draws the same points, in order, so a fire's
//! repro visits its point again.
//!
//! Clause: none of its own; the cells judge the states these points leave.

/// The points a sweep visits: `only` if given; else `sample` of the
/// `candidates` (every point of the workload, or the ones its census
/// chose) drawn with `seed` (in order); else every candidate.
pub fn sweep_points(candidates: Vec<u64>, only: Option<u64>, sample: Option<u32>, seed: u64) -> Vec<u64> {
    if let Some(n) = only {
        return vec![n];
    }
    let mut all = candidates;
    if let Some(k) = sample.filter(|&k| (k as usize) < all.len()) {
        fastrand::Rng::with_seed(seed).shuffle(&mut all);
        all.truncate(k as usize);
        all.sort_unstable();
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_points_are_seeded_sorted_and_within_range() {
        let a = sweep_points((1..=100).collect(), None, Some(10), 7);
        assert_eq!(a, sweep_points((1..=100).collect(), None, Some(10), 7));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|&p| (1..=100).contains(&p)));
        assert_eq!(sweep_points(vec![1, 2, 3], None, Some(10), 7), [1, 2, 3]);
        assert_eq!(sweep_points(vec![1, 2, 3], Some(9), None, 7), [9]);
    }
}
