//! Judging crash states: whether syscall kill points can run here (census),
//! a crash state to a verdict (verdict), a sweep's recoveries (recover),
//! the one driver of crash states (driver) and the sources every crash source shares with it: trials and
//! points read in (pending), a re-executed sweep's plan (sweep) and what it
//! landed (coverage). Each file imports only files listed before it, the
//! run's machinery and the vocabulary.

pub mod census;
pub mod coverage;
pub mod driver;
pub mod pending;
pub mod recover;
pub mod sweep;
pub mod verdict;
