//! The plain-path decision: a fire found through a forked child run again
//! exec'd (confirm), and a recorded state's fire against a real kill at its
//! point or where a run reaches it again (decide).

pub mod confirm;
pub mod decide;
