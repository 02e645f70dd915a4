//! A file's bytes as the power models change them: one logged effect
//! applied to a durable image, and the sectors a failed sync lost carried
//! back into a write that dirties them again.
//!
//! Crash model: the power model's ([`super::power`]): an image is what a
//! file holds on disk; these say how one call changes it.

use std::collections::BTreeMap;

use super::log::{At, Effect};
use super::sectors::SECTOR;

pub(super) fn write(bytes: &mut Vec<u8>, at: At, data: &[u8]) {
    let offset = match at {
        At::Offset(o) => o as usize,
        At::End => bytes.len(),
    };
    if bytes.len() < offset + data.len() {
        bytes.resize(offset + data.len(), 0);
    }
    bytes[offset..offset + data.len()].copy_from_slice(data);
}

/// The sectors a write at an offset touches (none for an append: where it
/// landed is the live file's end, which a durable image does not know).
pub(super) fn sectors_of(e: &Effect) -> std::ops::Range<u64> {
    match e {
        Effect::Write { at: At::Offset(o), data, .. } if !data.is_empty() => {
            o / SECTOR..(o + data.len() as u64).div_ceil(SECTOR)
        }
        _ => 0..0,
    }
}

/// Before write `e` reaches `bytes`: the sectors it touches whose earlier
/// writes a failed sync lost take their bytes from `lost` (the page the
/// write dirties again holds them), once; `lost` forgets them.
pub(super) fn carry(bytes: &mut Vec<u8>, e: &Effect, lost: &mut BTreeMap<u64, Vec<u8>>) {
    for s in sectors_of(e) {
        if let Some(sector) = lost.remove(&s) {
            write(bytes, At::Offset(s * SECTOR), &sector);
        }
    }
}

pub(super) fn apply_data(bytes: &mut Vec<u8>, e: &Effect) {
    match e {
        Effect::Write { at, data, .. } => write(bytes, *at, data),
        Effect::Truncate { len, .. } => bytes.resize(*len as usize, 0),
        Effect::Open { truncate: true, .. } => bytes.clear(),
        _ => {}
    }
}
