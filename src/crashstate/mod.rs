//! Recorded crash states: the child runs once, traced, and every call that
//! changes (or makes durable) one of the trial's files is logged with its
//! data ([`log`]); any crash state is then rebuilt from the log: a process
//! crash at kill point N is the calls before N applied to the empty folder
//! ([`files`]), and a power loss at N keeps only what was durable, plus the
//! in-order prefixes of what was not ([`power`], a call's effect on a
//! durable image in [`image`]), or also writes torn in
//! sector units and reordered within a sync interval ([`torn`], with
//! [`sectors`]); after a sync that fault injection made fail, the states
//! the failure added ([`failed`]). The states of one recording share the
//! pages of their files that neither changed ([`pages`]). A state is found
//! again in another run of a store whose calls differ from run to run by
//! what two runs can share of it ([`likeness`]). A recorded race keeps its
//! claimant's `-shm` at each stop too, for the racers who outlive it
//! ([`walindex`]).
//!
//! Why a log rather than copies of the folder at each point: the power model
//! needs the log anyway (what was synced, when), a log costs one pass of the
//! child and the bytes it wrote, and a state is built only when it is
//! checked, once per distinct store content.

pub mod failed;
pub mod files;
pub mod image;
pub mod level;
pub mod likeness;
pub mod log;
pub mod pages;
pub mod power;
pub mod record;
pub mod sectors;
pub mod state;
pub mod torn;
pub mod walindex;

pub use files::{Files, Names};
pub use log::{At, Effect, Event, Log};
pub use state::State;
