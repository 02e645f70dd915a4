//! How one write reaches the disk when the power goes while it is in
//! flight, in sector units: the byte-level half of the torn power-loss
//! model ([`super::torn`]).
//!
//! Crash model, SQLite's stated hardware assumptions (atomiccommit.html,
//! "Hardware Assumptions"; psow.html):
//! - a sector write is not atomic but *linear*, and with powersafe
//!   overwrite (SQLite's default) a sector once started is finished, so a
//!   write that spans several sectors reaches the disk as a prefix of its
//!   sectors ([`Write::pieces`]);
//! - "when a file grows in length ... the new file space originally
//!   contains garbage": space the file grew into that no reached byte
//!   filled holds [`GARBAGE`], not zeros;
//! - powersafe overwrite: bytes outside a written range never change, so a
//!   torn overwrite leaves the old bytes where its lost sectors were.

/// The sector a write tears at by default: SQLite's default sector size
/// (`SQLITE_DEFAULT_SECTOR_SIZE`, 4096, what the unix VFS reports), also
/// the page cache's unit of writeback on Linux and the physical sector of
/// current drives.
pub const SECTOR: u64 = 4096;

/// What grown space that nothing filled holds. Not zeros: a zeroed page or
/// journal header is a valid "empty" structure to SQLite, so zeros could
/// hide the very loss the model is there to show. Eight bytes, repeated by
/// file offset (the same garbage at the same place in every state, so
/// identical states stay identical), readable in a hex dump of evidence,
/// with a 0xFF so that no text format takes it for a line.
pub const GARBAGE: &[u8; 8] = b"GARBAGE\xff";

/// The garbage byte at file offset `pos`.
pub fn garbage_at(pos: u64) -> u8 {
    GARBAGE[(pos % GARBAGE.len() as u64) as usize]
}

/// One unsynced write, placed: where it lands and how long the file was
/// just before it in the run (the live file, not any crash state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub offset: u64,
    pub len: u64,
    pub live_before: u64,
}

impl Write {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }

    /// Whether it made the file longer.
    pub fn grows(&self) -> bool {
        self.end() > self.live_before
    }

    /// Its pieces, one per sector it touches, as absolute byte ranges.
    pub fn pieces(&self, sector: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = self.offset;
        while at < self.end() {
            let next = ((at / sector + 1) * sector).min(self.end());
            out.push((at, next));
            at = next;
        }
        out
    }

    /// The sectors it touches, first and last (inclusive); `None` if empty.
    pub fn sectors(&self, sector: u64) -> Option<(u64, u64)> {
        (self.len > 0).then(|| (self.offset / sector, (self.end() - 1) / sector))
    }

    /// Puts it into `file` (a crash state's bytes): only the pieces in
    /// `reached` (all of them when `None`). `grown`: the file's new length
    /// reached the disk (SQLite assumes the size is updated before the
    /// content), so the whole range it grew into exists, garbage where no
    /// reached piece filled it.
    pub fn put(&self, file: &mut Vec<u8>, data: &[u8], reached: Option<&[bool]>, grown: bool, sector: u64) {
        let pieces = self.pieces(sector);
        let reaches = |p: usize| reached.is_none_or(|r| r.get(p).copied().unwrap_or(false));
        let filled = pieces.iter().enumerate().filter(|(p, _)| reaches(*p)).map(|(_, r)| r.1).max();
        let new_len = if grown { self.end() } else { filled.unwrap_or(0) };
        self.extend(file, new_len);
        for (a, b) in pieces.iter().enumerate().filter(|(p, _)| reaches(*p)).map(|(_, r)| r) {
            let from = (a - self.offset) as usize..(b - self.offset) as usize;
            file[*a as usize..*b as usize].copy_from_slice(&data[from]);
        }
    }

    /// Grows `file` to `len` if it is shorter. The new space is garbage,
    /// except a hole the run itself left (between the live end before this
    /// write and its offset), which reads as zeros as it did in the run.
    fn extend(&self, file: &mut Vec<u8>, len: u64) {
        let hole = self.live_before..self.offset;
        let from = file.len() as u64;
        file.extend((from..len.max(from)).map(|pos| if hole.contains(&pos) { 0 } else { garbage_at(pos) }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(offset: u64, len: u64, live_before: u64) -> Write {
        Write { offset, len, live_before }
    }

    #[test]
    fn a_write_splits_at_sector_boundaries() {
        // A WAL frame's page after its 24-byte header: 4096 bytes at 56.
        assert_eq!(w(56, 4096, 56).pieces(4096), [(56, 4096), (4096, 4152)]);
        assert_eq!(w(4096, 4096, 0).pieces(4096), [(4096, 8192)], "an aligned page is one sector");
        assert_eq!(w(4096, 4096, 0).pieces(512).len(), 8);
        assert_eq!(w(10, 0, 0).pieces(4096), []);
        assert_eq!(w(4000, 200, 0).sectors(4096), Some((0, 1)));
    }

    #[test]
    fn a_torn_overwrite_leaves_each_sector_prefix_and_the_old_bytes_after_it() {
        let old = vec![b'o'; 12];
        let data = [b'n'; 8];
        let write = w(2, 8, 12); // sectors of 4: pieces [2,4) [4,8) [8,10)
        let states: Vec<Vec<u8>> = (0..=3)
            .map(|t| {
                let mut f = old.clone();
                let reached: Vec<bool> = (0..3).map(|p| p < t).collect();
                write.put(&mut f, &data, Some(&reached), true, 4);
                f
            })
            .collect();
        assert_eq!(states[0], b"oooooooooooo");
        assert_eq!(states[1], b"oonnoooooooo");
        assert_eq!(states[2], b"oonnnnnnoooo");
        assert_eq!(states[3], b"oonnnnnnnnoo", "bytes outside the write never change (powersafe overwrite)");
    }

    #[test]
    fn garbage_fills_grown_space_that_no_reached_sector_filled() {
        let mut f = b"head".to_vec();
        w(4, 8, 4).put(&mut f, &[b'n'; 8], Some(&[true, false]), true, 8);
        assert_eq!(&f[..8], b"headnnnn");
        assert_eq!(&f[8..], &[garbage_at(8), garbage_at(9), garbage_at(10), garbage_at(11)]);
        assert!(f[8..].iter().all(|&b| b != 0), "garbage is not zeros");
        let mut size_only = b"head".to_vec();
        w(4, 8, 4).put(&mut size_only, &[b'n'; 8], Some(&[]), true, 8);
        assert_eq!(size_only.len(), 12, "the size reached the disk, none of the data");
        let mut lost = b"head".to_vec();
        w(4, 8, 4).put(&mut lost, &[b'n'; 8], Some(&[]), false, 8);
        assert_eq!(lost, b"head", "neither size nor data");
    }

    #[test]
    fn a_hole_the_run_left_reads_as_zeros_and_space_a_lost_write_grew_into_is_garbage() {
        // The run wrote 4 bytes at 4 of a file 2 bytes long: [2,4) is its hole.
        let mut f = b"ab".to_vec();
        w(4, 4, 2).put(&mut f, b"data", None, true, 4);
        assert_eq!(f, b"ab\0\0data");
        // In a state where an earlier write that had grown the file to 4 was
        // lost, the same write leaves [2,4) as garbage, not zeros.
        let mut g = b"ab".to_vec();
        w(4, 4, 4).put(&mut g, b"data", None, true, 4);
        assert_eq!(g, [b'a', b'b', garbage_at(2), garbage_at(3), b'd', b'a', b't', b'a']);
    }
}
