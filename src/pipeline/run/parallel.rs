//! Work spread over `--jobs` threads, written once for every loop of the
//! pipeline: an ordered loop ([`parallel`]), and the loop that stops at
//! the first item that does not pass ([`until_first_bad`]) which sweeps,
//! batches of crash states and waves of trials all are.
//!
//! Why the lowest bad item decides: a result's verdict must not depend on
//! the scheduler. Items are started in ascending order; once one is bad, no
//! item above it starts, and whatever above it finished anyway is dropped,
//! so the outcome is the lowest bad item's whichever thread got there
//! first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::harness::Interrupt;

/// Runs `work` for items 0..n on up to `jobs` threads, in ascending order,
/// skipping any item `skip` says to; the outputs in order of items.
pub fn parallel<T: Send>(
    n: usize,
    jobs: usize,
    skip: &(dyn Fn(usize) -> bool + Sync),
    work: &(dyn Fn(usize) -> T + Sync),
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        break;
                    }
                    if skip(i) {
                        continue;
                    }
                    let out = work(i);
                    done.lock().expect("no worker panics holding the list").push((i, out));
                }
            });
        }
    });
    let mut done = done.into_inner().expect("no worker panicked");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, out)| out).collect()
}

/// What [`until_first_bad`] ran: each item's output, in order, up to the
/// item that holds the lowest bad key, and that key.
pub struct UpToBad<T> {
    pub outputs: Vec<T>,
    pub lowest_bad: Option<u64>,
}

/// Runs `work` for items 0..n on up to `jobs` threads, in ascending order of
/// their keys (`first_key(i)`: the lowest key item `i` covers, ascending in
/// `i`); `work` returns the item's output and the lowest key in it that is
/// bad, if any. Once a key is bad, no item whose first key is above it
/// starts, and outputs of such items that finished anyway are dropped; an
/// interrupted run (`interrupt` raised) starts nothing more. A caller whose items hold several
/// keys (a batch of crash states) drops the keys above the lowest bad one
/// inside the last item itself.
pub fn until_first_bad<T: Send>(
    n: usize,
    jobs: usize,
    interrupt: &Interrupt,
    first_key: &(dyn Fn(usize) -> u64 + Sync),
    work: &(dyn Fn(usize) -> (T, Option<u64>) + Sync),
) -> UpToBad<T> {
    let lowest = AtomicU64::new(u64::MAX);
    let skip = |i| first_key(i) > lowest.load(Ordering::SeqCst) || interrupt.is_set();
    let ran = parallel(n, jobs, &skip, &|i| {
        let (out, bad) = work(i);
        if let Some(key) = bad {
            lowest.fetch_min(key, Ordering::SeqCst);
        }
        (first_key(i), out)
    });
    let bad = lowest.into_inner();
    let outputs = ran.into_iter().filter(|(key, _)| *key <= bad).map(|(_, out)| out).collect();
    UpToBad { outputs, lowest_bad: (bad != u64::MAX).then_some(bad) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_come_back_in_order_and_skipped_items_do_not_run() {
        let out = parallel(6, 3, &|i| i == 4, &|i| i * 10);
        assert_eq!(out, [0, 10, 20, 30, 50]);
    }

    #[test]
    fn items_up_to_the_lowest_bad_one_are_kept_whatever_the_threads() {
        for jobs in [1, 3, 8] {
            let got = until_first_bad(20, jobs, &Interrupt::new(), &|i| i as u64 + 1, &|i| {
                let key = i as u64 + 1;
                (key, key.is_multiple_of(7).then_some(key))
            });
            assert_eq!(got.outputs, (1..=7).collect::<Vec<u64>>(), "{jobs} jobs");
            assert_eq!(got.lowest_bad, Some(7));
        }
        let clean = until_first_bad(5, 2, &Interrupt::new(), &|i| i as u64, &|i| (i, None));
        assert_eq!((clean.outputs.len(), clean.lowest_bad), (5, None));
    }
}
