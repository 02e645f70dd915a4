//! A modelled file's bytes as shared pages: the states of one recording
//! share every page neither wrote since the other, so a state costs the
//! pages its calls changed, not a copy of every file. A WAL sweep that
//! crosses a checkpoint holds hundreds of states of a multi-megabyte WAL;
//! as whole copies they took 314 MB, and a third of that sweep's time went
//! to copying them (cell 3's WAL result: 1.27 s, 0.83 s with pages).
//!
//! Crash model: none of its own; the bytes are exactly those of a `Vec<u8>`
//! written the same way ([`super::files`] says what the calls do). The one
//! invariant: bytes past the length, in the last page, are zero, so that a
//! file that grows again reads zeros there, as a file extended past its end
//! does.

use std::collections::HashMap;
use std::io::{IoSlice, Write};
use std::sync::Arc;

/// The unit of sharing: SQLite's default page size, so that a page write
/// touches one page here.
const PAGE: usize = 4096;

pub type Page = Arc<[u8; PAGE]>;

/// A file's bytes: a length and the pages that hold them.
#[derive(Clone, Default)]
pub struct Pages {
    len: usize,
    pages: Vec<Page>,
}

impl Pages {
    pub fn from_slice(bytes: &[u8]) -> Pages {
        let mut p = Pages::default();
        p.write(0, bytes);
        p
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pages that hold the bytes (bytes past the length, in the last,
    /// are zero), each shared with the states that did not write it since:
    /// what a digest of many states need read once per page.
    pub fn shared(&self) -> &[Page] {
        &self.pages[..self.len.div_ceil(PAGE).min(self.pages.len())]
    }

    /// The bytes in order, each page's share of the length.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> {
        let len = self.len;
        self.pages.iter().enumerate().map(move |(i, p)| &p[..(len - i * PAGE).min(PAGE)])
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len);
        self.slices().for_each(|s| v.extend_from_slice(s));
        v
    }

    /// Writes `data` at `offset`, growing the file (with zeros up to
    /// `offset`) if it ends before; only the pages written are copied.
    pub fn write(&mut self, offset: usize, data: &[u8]) {
        let end = offset + data.len();
        if end > self.len {
            self.resize(end);
        }
        let mut at = offset;
        for chunk in chunks(offset, data) {
            let (page, within) = (at / PAGE, at % PAGE);
            Arc::make_mut(&mut self.pages[page])[within..within + chunk.len()].copy_from_slice(chunk);
            at += chunk.len();
        }
    }

    /// Sets the length: cut (the rest of the last page zeroed) or extended
    /// with zeros, as `ftruncate` does.
    pub fn resize(&mut self, len: usize) {
        if len < self.len {
            self.pages.truncate(len.div_ceil(PAGE));
            if let Some(last) = self.pages.last_mut().filter(|_| !len.is_multiple_of(PAGE)) {
                Arc::make_mut(last)[len % PAGE..].fill(0);
            }
        } else {
            let zero = Arc::new([0u8; PAGE]);
            self.pages.resize(len.div_ceil(PAGE), zero);
        }
        self.len = len;
    }

    /// Whether `needle` is among the bytes, within a page or across two.
    pub fn contains(&self, needle: &[u8]) -> bool {
        if needle.is_empty() {
            return true;
        }
        let mut seam: Vec<u8> = Vec::with_capacity(2 * needle.len());
        for slice in self.slices() {
            // The seam: the last bytes of the page before and the first of this one.
            seam.extend_from_slice(&slice[..slice.len().min(needle.len() - 1)]);
            if find(&seam, needle) || find(slice, needle) {
                return true;
            }
            seam.clear();
            seam.extend_from_slice(&slice[slice.len().saturating_sub(needle.len() - 1)..]);
        }
        false
    }

    /// [`Pages::contains`] for `sought`'s needle, each page's answer
    /// (within its share of the length, or across the seam from the page
    /// before) taken from `sought` when an earlier search met the same two
    /// pages and the same share: the states of one recording share most of
    /// their pages, and a sweep's hundreds of states are not hundreds of
    /// times its megabytes to scan.
    pub fn contains_sought(&self, sought: &mut Sought) -> bool {
        let Sought { needle, pages } = sought;
        if needle.is_empty() {
            return true;
        }
        let mut before: Option<&Page> = None;
        for (page, slice) in self.pages.iter().zip(self.slices()) {
            // A last page's share of the length is part of the key.
            let key = (before.map_or(0, address), address(page), slice.len());
            let answer = || (before.cloned(), Arc::clone(page), reaches(before, slice, needle));
            if pages.entry(key).or_insert_with(answer).2 {
                return true;
            }
            before = Some(page);
        }
        false
    }

    /// Writes the bytes to `out`, as few calls as the pages allow.
    pub fn write_into(&self, out: &mut impl Write) -> std::io::Result<()> {
        let slices: Vec<&[u8]> = self.slices().collect();
        // At most 1,024 buffers a call (the system's IOV_MAX).
        for group in slices.chunks(1024) {
            let mut io: Vec<IoSlice> = group.iter().map(|s| IoSlice::new(s)).collect();
            let mut io = &mut io[..];
            while !io.is_empty() {
                match out.write_vectored(io) {
                    Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                    Ok(n) => IoSlice::advance_slices(&mut io, n),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

/// One needle searched for in many states' pages
/// ([`Pages::contains_sought`]): whether each page met so far holds it
/// within its share of the length, or the seam from the page before it
/// does, by the two pages' addresses and the share. Each entry holds its
/// pages, so that no address it knows can be another page's, and a page
/// written since is a copy at another address (a write copies a page that
/// is shared).
pub struct Sought {
    needle: Vec<u8>,
    pages: HashMap<Met, Answer>,
}

/// A page as a search met it: the address of the page before it (0 for
/// the first), its own, and its share of the length.
type Met = (usize, usize, usize);

/// A page's answer, with the two pages it is about, held.
type Answer = (Option<Page>, Page, bool);

impl Sought {
    pub fn new(needle: &[u8]) -> Sought {
        Sought { needle: needle.to_vec(), pages: HashMap::new() }
    }

    pub fn needle(&self) -> &[u8] {
        &self.needle
    }
}

/// Whether `needle` (not empty) is within `slice`, or across the seam
/// from the page `before` it: its last bytes and the slice's first, as
/// [`Pages::contains`] builds the seam.
fn reaches(before: Option<&Page>, slice: &[u8], needle: &[u8]) -> bool {
    let k = needle.len() - 1;
    let seam = |b: &Page| [&b[PAGE.saturating_sub(k)..], &slice[..slice.len().min(k)]].concat();
    before.is_some_and(|b| find(&seam(b), needle)) || find(slice, needle)
}

/// A page's address, which it keeps while it is held.
fn address(page: &Page) -> usize {
    Arc::as_ptr(page) as *const u8 as usize
}

/// Whether `needle` (not empty) occurs in `hay`: the C library's `memmem`,
/// which scans gigabytes a second, so that a sweep may ask it of every
/// store it recovers.
fn find(hay: &[u8], needle: &[u8]) -> bool {
    // SAFETY: both pointers and lengths come from live slices; memmem only reads them.
    !unsafe { libc::memmem(hay.as_ptr().cast(), hay.len(), needle.as_ptr().cast(), needle.len()) }.is_null()
}

/// `data` cut where it crosses a page boundary, written from `offset`.
fn chunks(offset: usize, data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    let mut at = offset;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let n = (PAGE - at % PAGE).min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        (rest, at) = (tail, at + n);
        Some(chunk)
    })
}

impl PartialEq for Pages {
    fn eq(&self, other: &Pages) -> bool {
        // The bytes past the length are zero in both: whole pages compare.
        self.len == other.len && self.pages.iter().zip(&other.pages).all(|(a, b)| Arc::ptr_eq(a, b) || a[..] == b[..])
    }
}

impl Eq for Pages {}

impl std::hash::Hash for Pages {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.len.hash(state);
        self.slices().for_each(|s| state.write(s));
    }
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let head: Vec<u8> = self.slices().flatten().take(16).copied().collect();
        write!(f, "Pages({} bytes, starting {head:?})", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same calls on a `Vec<u8>`, the model the pages must equal.
    fn vec_write(v: &mut Vec<u8>, offset: usize, data: &[u8]) {
        if v.len() < offset + data.len() {
            v.resize(offset + data.len(), 0);
        }
        v[offset..offset + data.len()].copy_from_slice(data);
    }

    #[test]
    fn a_name_is_found_within_a_page_across_two_and_not_past_the_length() {
        let name = b"/runs/census-x1/store.db-mj0123";
        let mut p = Pages::default();
        p.write(10, name);
        assert!(p.contains(name) && p.contains(b"census-x1"));
        let mut across = Pages::default();
        across.write(PAGE - 7, name);
        assert!(across.contains(name), "across the seam of two pages");
        across.resize(PAGE + 3);
        assert!(!across.contains(name), "cut: only its first bytes are left");
        assert!(!Pages::from_slice(&[0u8; 3 * PAGE]).contains(b"/runs"));
    }

    /// The memoised search answers as the plain scan does, state after
    /// state of one recording: a needle within a page, across a seam, cut
    /// by the length, and a page rewritten in a later state.
    #[test]
    fn a_sought_needle_is_found_as_the_plain_scan_finds_it() {
        let name = b"/runs/census-x1";
        let mut sought = Sought::new(name);
        let mut state = Pages::from_slice(&[1u8; 3 * PAGE]);
        let mut states = vec![state.clone()];
        let steps: [(usize, &[u8]); 8] = [
            (100, b"/runs/census-x"),
            (PAGE - 7, name),
            // The page before the seam alone rewritten, then back.
            (PAGE - 7, b"x"),
            (PAGE - 7, b"/"),
            (PAGE - 7, b"xxxxxxxxxxxxxxx"),
            (2 * PAGE + 10, name),
            (2 * PAGE + 10, b"/runs/census-y1"),
            (5 * PAGE - 3, name),
        ];
        for (at, data) in steps {
            state.write(at, data);
            states.push(state.clone());
        }
        state.resize(5 * PAGE + 2);
        states.push(state.clone());
        let plain: Vec<bool> = states.iter().map(|s| s.contains(name)).collect();
        assert_eq!(plain, [false, false, true, false, true, false, true, false, true, false]);
        for _ in 0..2 {
            let memo: Vec<bool> = states.iter().map(|s| s.contains_sought(&mut sought)).collect();
            assert_eq!(memo, plain, "the memo's answers, asked again: the same");
        }
        assert!(sought.pages.len() >= 3, "whole pages met are kept, with the page before each");
        let mut shared = Pages::from_slice(&[0u8; 2 * PAGE]);
        shared.write(PAGE + 40, name);
        let mut fresh = Sought::new(name);
        assert!(shared.contains_sought(&mut fresh));
        shared.write(PAGE + 40, b"/runs/census-z1");
        assert!(!shared.contains_sought(&mut fresh), "a page rewritten since is not taken for the old one");
        assert!(Pages::default().contains_sought(&mut Sought::new(b"")), "the empty needle, as contains");
    }

    /// Many states of one recording, by seeded writes of the needle, of
    /// its pieces and of other bytes, and resizes: the memo answers each as
    /// the plain scan does.
    #[test]
    fn a_sought_needle_agrees_with_the_plain_scan_over_a_seeded_recording() {
        let name: &[u8] = b"/dev/shm/crashcells-7/t1";
        let mut seed = 11u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        let (mut state, mut sought, mut found) = (Pages::default(), Sought::new(name), 0);
        for _ in 0..2000 {
            let at = next(6 * PAGE);
            match next(10) {
                0..=2 => state.write(at, name),
                3 => state.write(at, &name[..next(name.len())]),
                4 => state.write(at, &name[next(name.len())..]),
                5 => state.resize(at),
                _ => state.write(at, &vec![b'x'; next(3 * PAGE)]),
            }
            let plain = state.contains(name);
            found += usize::from(plain);
            assert_eq!(state.contains_sought(&mut sought), plain, "{state:?}");
        }
        assert!(found > 100 && found < 1900, "both answers met: {found} of 2000");
    }

    #[test]
    fn writes_and_resizes_give_the_bytes_a_vec_would() {
        let (mut p, mut v) = (Pages::default(), Vec::new());
        let steps: [(usize, usize, u8); 6] =
            [(0, 10, 1), (4090, 20, 2), (9000, 5000, 3), (100, 8192, 4), (20_000, 1, 5), (4096, 4096, 6)];
        for (offset, len, byte) in steps {
            let data = vec![byte; len];
            p.write(offset, &data);
            vec_write(&mut v, offset, &data);
            assert_eq!(p.to_vec(), v, "after writing {len} bytes at {offset}");
        }
        for len in [20_001, 5000, 4096, 4097, 100, 13_000, 0, 3] {
            p.resize(len);
            v.resize(len, 0);
            assert_eq!(p.to_vec(), v, "after resizing to {len}: the cut bytes come back as zeros");
        }
    }

    #[test]
    fn a_clone_shares_its_pages_until_one_side_writes() {
        let mut a = Pages::from_slice(&vec![7u8; 3 * PAGE]);
        let b = a.clone();
        a.write(PAGE + 1, b"x");
        assert!(Arc::ptr_eq(&a.pages[0], &b.pages[0]) && Arc::ptr_eq(&a.pages[2], &b.pages[2]));
        assert!(!Arc::ptr_eq(&a.pages[1], &b.pages[1]), "the written page is copied");
        assert_eq!(b.to_vec(), vec![7u8; 3 * PAGE], "the clone keeps its bytes");
        assert_ne!(a, b);
        a.write(PAGE + 1, &[7]);
        assert_eq!(a, b, "equal by content, shared or not");
    }

    #[test]
    fn equal_bytes_hash_alike_and_write_out_whole() {
        use std::hash::{BuildHasher, RandomState};
        let s = RandomState::new();
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let (mut a, b) = (Pages::from_slice(&data), Pages::from_slice(&data));
        assert_eq!(s.hash_one(&a), s.hash_one(&b));
        let mut out = Vec::new();
        a.write_into(&mut out).unwrap();
        assert_eq!(out, data);
        a.resize(5);
        assert_ne!(s.hash_one(&a), s.hash_one(&b));
    }
}
