//! A job's result: the dispatch of a job to its shape's crash source, and
//! the fold of its trials into a result.

pub mod dispatch;
