//! Syscall kill points: stop the child at the entry of its Nth file-mutating
//! system call on the store's files or the ack journal, and kill it there.
//!
//! Crash model: a seccomp filter traps only the calls that can change a file
//! (`write`, `pwrite64`, `writev`, `pwritev`, `pwritev2`, `fsync`,
//! `fdatasync`, `ftruncate`, `unlink`, `unlinkat`, `rename`, `renameat`,
//! `renameat2`); the driver counts those that touch the database, its
//! `-journal`, `-wal` or `-shm`, the ack journal, a file the workload
//! adds (the transport a child sends through), or any other file directly
//! in the store's folder (a marker, a manifest, a blob: the store's own,
//! [`FileKind::Other`]; the child's stderr aside), and at the Nth sends
//! `SIGKILL` to the group while the call has not run. The files then hold
//! exactly what calls 1..N-1 left, so a sweep over N visits every crash state
//! of a short workload, where a timed kill rarely lands inside a commit.
//!
//! A census first runs the workload until K acks and counts its points M;
//! the point after the Kth ack is M+1, so a sweep runs N = 1..=M+1 (a
//! workload run to its own end with `--stop-after` counts them all).
//!
//! The filter also traps what a recording ([`super::record`]) needs and no
//! kill point is made of: `open`/`openat`/`creat` with `O_CREAT` or
//! `O_TRUNC` (the filter looks at the flags, so the many plain opens of an
//! interpreter's start never stop the child), and `fsync` of the trial's
//! folder. They are never counted, so every kill point keeps its number.
//!
//! An injecting mode (`--kill fault`, issue 24) drives the same points with
//! `Goal::InjectAt`: the Nth call is not killed but changed as its
//! injection says ([`super::inject`]; [`super::fault`] makes it fail without
//! running), and the child runs on to its own end.
//!
//! A kill may also be placed by what the caller saw rather than by an
//! ordinal (`Goal::Asked`, [`drive_asking`]): a recorded fire sought again
//! in a run whose calls differ from the recording's.
//!
//! One concept a file:
//!
//! - `filter.rs`: the seccomp filter, the calls it traps, and its test for
//!   a tracee that runs under no filter of ours;
//! - `files.rs`: the file classes, which of the trial's files a call
//!   touched ([`FileKind`], [`Targets`]), read from the stopped child;
//! - `point.rs`: a kill point ([`Point`], [`Call`]), what a trapped call is;
//! - `drive.rs`: the drive loop, resuming the child at every trapped call
//!   until its goal ([`Goal`], [`Driven`]);
//! - `sample.rs`: the points a sweep visits, sampled with its seed.

mod drive;
mod files;
mod filter;
mod point;
mod sample;

pub use drive::{
    Asker, Driven, Goal, Halted, Injected, Observer, drive, drive_asking, drive_observed, drive_until, short_count,
};
pub use files::{FileKind, Sidecar, Targets, is_index_name};
pub(crate) use files::{fd_kind, fd_path, read_path};
pub(crate) use filter::syscall_name;
pub use filter::{filter, lock_trap_set, trap_set, unsupported_arch};
pub use point::{Call, Point};
pub use sample::sweep_points;
