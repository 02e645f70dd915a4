//! The cell registry: one table of the live cells, and the trait each one
//! implements ([`cell`]). A cell says what its child runs (its [`Shape`],
//! from the catalog's parameters: [`shape`]) and how to judge what a crash left (its
//! [`Cell::check`]); everything between the two (spawning, killing,
//! auditing the leg, recovering twice, keeping evidence) is the trial
//! pipeline's, written once in `crate::pipeline`.
//!
//! Adding a cell is its TOML in `cells/` (found at build time), a module
//! here, one line in the [`registry!`] below, and the child operation it
//! needs (docs/DESIGN.md, "Adding a cell").

mod cell;
pub mod positions;
mod shape;

#[cfg(test)]
pub use cell::declared;
pub use cell::{
    ACKED_DESPITE_IO_ERROR, CLAIMED_LEVEL, CORRUPT, Cell, End, NONDETERMINISTIC, Process, Seen, Violation, Violations,
    fire_kinds, plural, store_failed,
};
pub use shape::{MissingParam, RaceShape, Shape, ShapeKind, Taking, Unsupported, WorkloadShape, WritersShape, need};

/// Declares each cell's module and lists its probe in [`CELLS`], in catalog
/// order: a cell is one line, `module => Probe`.
macro_rules! registry {
    ($($module:ident => $probe:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every live cell's probe. Each names its own id ([`Cell::id`]);
        /// a test checks that the catalog and this table name the same cells.
        pub static CELLS: &[&dyn Cell] = &[$(&$module::$probe),*];
    };
}

registry! {
    prefix => PrefixDurability,
    consume => ConsumeOnce,
    rotation => RotationAtomicity,
    fork => ForkDeterminism,
    outbox => OutboxExactlyOnce,
    writers => ConcurrentAppends,
}

/// The probe of the cell with catalog id `id`, if this driver has one.
pub fn find(id: &str) -> Option<&'static dyn Cell> {
    CELLS.iter().copied().find(|c| c.id() == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Catalog, Status};
    use crashcells_protocol::Op;

    /// The registry and the catalog name the same cells, in the same order:
    /// a catalog file without a probe, or a probe without a catalog file,
    /// fails here with its name.
    #[test]
    fn the_registry_and_the_catalog_name_the_same_cells_in_order() {
        let catalog = Catalog::embedded().unwrap();
        let live: Vec<&str> =
            catalog.cells.iter().filter(|c| c.status == Status::Live).map(|c| c.id.as_str()).collect();
        for id in &live {
            assert!(find(id).is_some(), "cells/*.toml has live cell `{id}` but src/cells/ has no probe for it");
        }
        for cell in CELLS {
            assert!(catalog.cells.iter().any(|c| c.id == cell.id()), "probe `{}` has no cells/*.toml file", cell.id());
        }
        let registered: Vec<&str> = CELLS.iter().map(|c| c.id()).collect();
        assert_eq!(registered, live, "the registry lists the cells in catalog order");
    }

    /// Every live cell's shape is made from its catalog file alone.
    #[test]
    fn every_live_cell_takes_its_parameters_from_its_catalog_file() {
        let catalog = Catalog::embedded().unwrap();
        for spec in catalog.cells.iter().filter(|c| c.status == Status::Live) {
            let cell = find(&spec.id).unwrap();
            assert!(cell.shape(&spec.params).is_ok(), "{}: {:?}", spec.file, cell.shape(&spec.params));
            let mut bare = spec.params.clone();
            (bare.window, bare.racers) = (None, None);
            assert!(cell.shape(&bare).is_err(), "{}: a shape with no parameters needs none", spec.id);
        }
    }

    /// A cell's kinds are fingerprint words, each once, none the pipeline's
    /// own (which every cell has).
    #[test]
    fn every_cell_declares_its_kinds_as_words_each_once() {
        let word = is_word;
        for cell in CELLS {
            let kinds = cell.kinds();
            assert!(!kinds.is_empty(), "{}", cell.id());
            for (i, k) in kinds.iter().enumerate() {
                assert!(word(k), "{}: `{k}` is no fingerprint word", cell.id());
                assert!(!kinds[..i].contains(k), "{}: `{k}` twice", cell.id());
                assert!(![CORRUPT, NONDETERMINISTIC, ACKED_DESPITE_IO_ERROR].contains(k), "{}: `{k}`", cell.id());
            }
        }
        let kinds = fire_kinds(find("outbox-exactly-once").unwrap(), &[Op::Deliver, Op::CatchUp, Op::Dump], true);
        for k in ["double-delivery", "corrupt", "store-failed-catch-up", "acked-despite-io-error"] {
            assert!(kinds.contains(&k), "{k}: {kinds:?}");
        }
    }

    /// Lowercase words joined by `-`.
    fn is_word(k: &str) -> bool {
        !k.is_empty() && k.split('-').all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()))
    }

    #[test]
    fn a_missing_parameter_is_named() {
        let e = Shape::workload(Op::Append, &crate::catalog::Params::default(), None).unwrap_err();
        assert_eq!(e.to_string(), "field `params.window`: the cell's shape needs it");
    }
}
