//! The ways the operations pending at a crash instant may have reached the
//! disk, for the torn power-loss model ([`super`]): in order, with the next
//! write torn, or with writes lost out of order; bounded by [`Bound`].
//!
//! Crash model: as [`super`] says; here only which variants exist, never
//! their bytes.

use std::collections::HashMap;

use crate::crashstate::log::{At, Effect};
use crate::crashstate::power::{Disk, Op, Pending};
use crate::crashstate::sectors::SECTOR;
use crate::crashstate::sectors::Write;

/// One way the pending operations may have reached the disk: the first
/// `to` of them, whole, except the `partial` ones.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Variant {
    pub(super) to: usize,
    pub(super) partial: Vec<Partial>,
}

/// A pending write that reached the disk in part, or not at all.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Partial {
    pub(super) at: usize,
    /// Per sector piece, whether it reached the disk.
    pub(super) reached: Vec<bool>,
    /// Whether the file's new length reached the disk.
    pub(super) grown: bool,
    /// Lost while later operations reached the disk (not the last one).
    pub(super) reordered: bool,
}

/// The variants of one instant: its pending operations, their writes
/// placed, and the bound.
pub(super) struct Ways<'a> {
    pub(super) pending: &'a [(Op, Pending)],
    pub(super) writes: &'a [Option<Write>],
    pub(super) bound: Bound,
}

impl Ways<'_> {
    /// Every variant of this instant, in check order: the in-order prefixes,
    /// each prefix with the next write torn, the reordered ones.
    pub(super) fn all(&self) -> Vec<Variant> {
        let m = self.writes.len();
        let mut out: Vec<Variant> = (0..=m).rev().map(|to| Variant { to, partial: Vec::new() }).collect();
        for (r, w) in self.writes.iter().enumerate().rev() {
            let Some(w) = w else { continue };
            for t in tears(w, self.bound).into_iter().rev() {
                let reached = (0..w.pieces(self.bound.sector).len()).map(|p| p < t).collect();
                out.push(Variant {
                    to: r + 1,
                    partial: vec![Partial { at: r, reached, grown: true, reordered: false }],
                });
            }
        }
        out.extend(self.reordered());
        out
    }

    /// The variants where up to `out_of_order` of the last `window` writes
    /// that could be lost were lost or torn while every other pending
    /// operation reached the disk; the writes nearest the crash first.
    fn reordered(&self) -> Vec<Variant> {
        let writes = self.writes;
        let m = writes.len();
        // A write whose every sector a later write rewrote cannot be lost
        // alone: it takes no place in the window.
        let losable = |&j: &usize| writes[j].is_some() && !self.fates(j, &[j]).is_empty();
        let candidates: Vec<usize> = (0..m.saturating_sub(1)).rev().filter(losable).take(self.bound.window).collect();
        let mut out = Vec::new();
        for k in 1..=self.bound.out_of_order.min(candidates.len()) {
            for subset in subsets(&candidates, k) {
                out.extend(self.combine(&subset).into_iter().map(|partial| Variant { to: m, partial }));
            }
        }
        out
    }

    /// Every way the writes of `subset` may each be lost or torn, the others
    /// reaching the disk; none where a write could not lose anything.
    fn combine(&self, subset: &[usize]) -> Vec<Vec<Partial>> {
        let mut ways: Vec<Vec<Partial>> = vec![Vec::new()];
        for &j in subset.iter().rev() {
            let fates = self.fates(j, subset);
            ways = ways.iter().flat_map(|w| fates.iter().map(move |f| [w.clone(), vec![f.clone()]].concat())).collect();
        }
        ways.into_iter().filter(|w| !w.is_empty()).collect()
    }

    /// How write `j` may reach the disk out of order: lost, or torn at each
    /// tear point; its sectors that a later reached write to the same file
    /// touches always reach it.
    fn fates(&self, j: usize, subset: &[usize]) -> Vec<Partial> {
        let writes = self.writes;
        let Some(w) = writes[j] else { return Vec::new() };
        let s = self.bound.sector;
        let shared = |sec: u64| {
            (j + 1..writes.len())
                .filter(|k| !subset.contains(k) && self.same_inode(j, *k))
                .any(|k| writes[k].and_then(|x| x.sectors(s)).is_some_and(|(a, b)| (a..=b).contains(&sec)))
        };
        let first = w.offset / s;
        let forced: Vec<bool> = (0..w.pieces(s).len() as u64).map(|p| shared(first + p)).collect();
        let lost = Partial { at: j, reached: forced.clone(), grown: forced.contains(&true), reordered: true };
        let torn = tears(&w, self.bound).into_iter().map(|t| {
            let reached = forced.iter().enumerate().map(|(p, f)| *f || p < t).collect();
            Partial { at: j, reached, grown: true, reordered: true }
        });
        let mut fates: Vec<Partial> = Vec::new();
        for f in std::iter::once(lost).chain(torn) {
            if f.reached.contains(&false) && !fates.iter().any(|g| (&g.reached, g.grown) == (&f.reached, f.grown)) {
                fates.push(f);
            }
        }
        fates
    }

    fn same_inode(&self, a: usize, b: usize) -> bool {
        let ino = |i: usize| match &self.pending[i].0 {
            Op::Data(ino, _) => Some(*ino),
            Op::Name(..) => None,
        };
        ino(a).is_some() && ino(a) == ino(b)
    }
}

/// Each pending operation's write, placed, if it is one (`At::End` at the
/// live end of the file, where the run put it).
pub(super) fn placed(disk: &Disk) -> Vec<Option<Write>> {
    let mut live: HashMap<usize, u64> = HashMap::new();
    let place = |(op, _): &(Op, Pending)| {
        let Op::Data(ino, e) = op else { return None };
        let len = live.entry(*ino).or_insert_with(|| disk.inodes[*ino].synced.len() as u64);
        let live_before = *len;
        match e {
            Effect::Write { at, data, .. } => {
                let offset = if let At::Offset(o) = at { *o } else { live_before };
                let w = Write { offset, len: data.len() as u64, live_before };
                *len = live_before.max(w.end());
                (w.len > 0).then_some(w)
            }
            Effect::Truncate { len: l, .. } => {
                *len = *l;
                None
            }
            _ => {
                *len = 0; // only an O_TRUNC open is a data operation besides
                None
            }
        }
    };
    disk.pending.iter().map(place).collect()
}

/// The tear points of `w`: how many of its sectors reach the disk when it
/// is torn, fewer than all; none counts only if it grew the file (its new
/// length reached the disk alone). At most `bound.tears` of them, in this
/// order of preference: its first sector alone (the classic torn write:
/// some data, the rest old bytes or garbage), all but its last, sectors
/// between, then its new length alone.
pub(super) fn tears(w: &Write, bound: Bound) -> Vec<usize> {
    let n = w.pieces(bound.sector).len();
    let middles = n.saturating_sub(3);
    let spread = (0..bound.tears).map(|i| 2 + i * middles / bound.tears.max(1));
    let preferred = [1, n.saturating_sub(1)].into_iter().chain(spread).filter(|&t| t >= 1 && t < n);
    let mut kept: Vec<usize> = Vec::new();
    for t in preferred.chain(w.grows().then_some(0)) {
        if kept.len() < bound.tears && !kept.contains(&t) {
            kept.push(t);
        }
    }
    kept.sort_unstable();
    kept
}

/// Every subset of `items` of size `k`, in order.
fn subsets(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        for mut rest in subsets(&items[i + 1..], k - 1) {
            rest.insert(0, first);
            out.push(rest);
        }
    }
    out
}

/// How far the torn model explores. Every field caps one factor of the
/// number of states per kill point (see [`model`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The unit a write tears at, in bytes: [`SECTOR`] by default.
    pub sector: u64,
    /// At most this many unsynced writes lost (or torn) at once while a
    /// later operation reached the disk (the "k" of bounded reordering).
    pub out_of_order: usize,
    /// Only the last `window` unsynced writes before the crash that could be
    /// lost (not every sector of them rewritten since) may be lost out of
    /// order.
    pub window: usize,
    /// At most this many tear points per write: its first sector alone
    /// first, then all but its last, sectors between, its new length alone.
    pub tears: usize,
}

impl Default for Bound {
    /// One write out of order, the losable one nearest the last (an
    /// adjacent pair swapped, at every instant); a write torn once, after
    /// its first sector (or, if it is one sector that grew the file, with
    /// its new length alone). Why: docs/DESIGN.md, "Torn and reordered
    /// writes": about 2.4 times the in-order model's stores on the audit.
    fn default() -> Bound {
        Bound { sector: SECTOR, out_of_order: 1, window: 1, tears: 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bound = Bound { sector: 4, out_of_order: 1, window: 8, tears: 4 };

    #[test]
    fn the_bound_caps_the_tear_points_of_a_write_preferring_its_first_sector() {
        let ten = Write { offset: 0, len: 40, live_before: 40 };
        let tear = |write: &Write, n: usize| tears(write, Bound { tears: n, ..SMALL });
        assert_eq!(tear(&ten, 1), [1]);
        assert_eq!(tear(&ten, 2), [1, 9]);
        assert_eq!(tear(&ten, 4).len(), 4);
        assert_eq!(tear(&ten, 20), (1..10).collect::<Vec<_>>());
        let grows = Write { offset: 0, len: 4, live_before: 0 };
        assert_eq!(tear(&grows, 1), [0], "one sector that grew the file: its new length alone");
        assert_eq!(tear(&Write { offset: 0, len: 8, live_before: 0 }, 1), [1]);
        assert_eq!(tear(&Write { offset: 0, len: 8, live_before: 0 }, 2), [0, 1]);
        assert!(tear(&ten, 0).is_empty());
    }

    #[test]
    fn subsets_of_each_size_in_order() {
        assert_eq!(subsets(&[1, 2, 3], 2), [vec![1, 2], vec![1, 3], vec![2, 3]]);
        assert_eq!(subsets(&[1, 2], 0), [Vec::<usize>::new()]);
    }
}
