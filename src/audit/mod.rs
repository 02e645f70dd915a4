//! Journal-mode audits: [`leg`] checks after each trial that the child ran
//! the mode and level its leg asked for (a leg that did not is skipped, never
//! counted); [`command`] is `crashcells audit`, one short killed run per leg
//! of a matrix and a row for each.

pub mod command;
pub mod crash;
pub mod leg;

pub use leg::{Artefacts, Audit, Family, audit, audit_leg, refused_at_ready, sibling};
