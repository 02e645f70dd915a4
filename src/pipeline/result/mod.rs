//! A job's result: the fold of its trials into a result (fold), and the
//! dispatch of a job to its shape's crash source (dispatch), which folds.

pub mod dispatch;
pub mod fold;
