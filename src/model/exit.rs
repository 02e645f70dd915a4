//! The exit codes of `crashcells`, one type: what every command ends with,
//! as `crashcells --help` lists them (docs/design/interfaces.md). Only
//! [`ExitCode::code`] says their numbers. A child's exit codes are the
//! protocol's (`crashcells_protocol`), not these.

/// What a command ends with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: nothing fired, or every fire is known; a child that conforms; a
    /// command that did its work (`list`, `audit`, `prune`, `--help`).
    Pass,
    /// 1: a fire that is not known, or a known finding gone (the file is
    /// wrong); a child that does not conform (`child-check`).
    Fire,
    /// 2: bad input, a harness error, or a result that errored (part of
    /// the run did not run).
    Error,
    /// 3: nothing ran: every planned leg skipped, no known fire.
    NothingRan,
    /// 128 + the signal that interrupted the run (the shell's convention).
    Interrupted { signal: i32 },
}

impl ExitCode {
    /// The number the process exits with.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Pass => 0,
            ExitCode::Fire => 1,
            ExitCode::Error => 2,
            ExitCode::NothingRan => 3,
            ExitCode::Interrupted { signal } => 128 + signal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_those_the_help_lists() {
        let codes = [ExitCode::Pass, ExitCode::Fire, ExitCode::Error, ExitCode::NothingRan];
        assert_eq!(codes.map(ExitCode::code), [0, 1, 2, 3]);
        assert_eq!(ExitCode::Interrupted { signal: libc::SIGTERM }.code(), 143);
    }
}
