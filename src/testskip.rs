//! The test suite's one skip policy, for the unit tests and the integration
//! binary alike: a test that cannot run on this machine says which
//! prerequisite is missing and why, and where the suite must check
//! everything (`CI=true`, which `.ci/run` sets; for tracing also
//! `CRASHCELLS_REQUIRE_TRACING`) the same test fails instead of passing
//! without having tested anything. [`Need`] is the whole list of reasons a
//! test may skip; a test that returns early on anything else is a defect
//! (tests/skips.rs looks for one).

/// A prerequisite a test may find missing: the only reasons a test skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// ptrace and seccomp, for syscall kills, recordings and injected faults.
    Tracing,
    /// `python3`, for the Python stores and adapters.
    Python,
    /// The Hermes wheel that `examples/hermes-store/fetch` installs.
    HermesWheel,
    /// LangGraph.js's packages that `examples/langgraph-store/fetch` installs.
    LangGraphPackages,
    /// Chromium, the headless browser that renders a timeline page.
    Chromium,
    /// A system SQLite the WAL-reset gate refuses, for the system build's tests.
    AffectedSystemSqlite,
    /// Node.js and the `sqlite3` shell, for the Node.js library's own suite.
    NodeAndSqliteShell,
    /// A Python with pytest (`CRASHCELLS_TEST_PYTHON`), for the pytest plugin's test.
    Pytest,
    /// The Go toolchain (1.19 or later), for the Go library's own tests.
    Go,
    /// A Python with SQLAlchemy, for the ORM example store (examples/sqlalchemy-store).
    SqlAlchemy,
    /// A mount namespace with a bind mount, where a recorded state is
    /// recovered laid over the folder its files name.
    Mounts,
}

impl Need {
    /// Every reason a test may skip.
    pub const ALL: [Need; 11] = [
        Need::Tracing,
        Need::Python,
        Need::HermesWheel,
        Need::LangGraphPackages,
        Need::Chromium,
        Need::AffectedSystemSqlite,
        Need::NodeAndSqliteShell,
        Need::Pytest,
        Need::Go,
        Need::SqlAlchemy,
        Need::Mounts,
    ];

    /// What is missing, and what provides it (`.ci/run` does each).
    pub fn describe(self) -> &'static str {
        match self {
            Need::Tracing => "tracing (ptrace and seccomp) is refused on this machine",
            Need::Python => "python3 is not installed",
            Need::HermesWheel => "the Hermes wheel is not fetched (run examples/hermes-store/fetch)",
            Need::LangGraphPackages => "LangGraph.js's packages are not installed (run examples/langgraph-store/fetch)",
            Need::Chromium => "chromium is not on PATH",
            Need::AffectedSystemSqlite => "the system SQLite is not one the WAL-reset gate refuses",
            Need::NodeAndSqliteShell => "node or the sqlite3 shell is not installed",
            Need::Pytest => "no Python with pytest (CRASHCELLS_TEST_PYTHON names one; .ci/run makes it)",
            Need::Go => "go is not installed (Go 1.19 or later)",
            Need::SqlAlchemy => {
                "no Python with SQLAlchemy (CRASHCELLS_SQLALCHEMY_PYTHON names one; .ci/run makes target/ci-sqlalchemy)"
            }
            Need::Mounts => "a mount namespace with a bind mount is refused on this machine",
        }
    }

    /// Whether the variables of this run make the missing prerequisite a
    /// failure: `CI` for every need, `CRASHCELLS_REQUIRE_TRACING` for tracing.
    fn required(self, var: &dyn Fn(&str) -> Option<String>) -> bool {
        let set = |name: &str| var(name).is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
        set(CI) || (self == Need::Tracing && set(REQUIRE_TRACING))
    }
}

/// The variable `.ci/run` sets: every skip is a failure where it is set.
pub const CI: &str = "CI";

/// The older, tracing-only form of [`CI`], kept because the README names it.
pub const REQUIRE_TRACING: &str = "CRASHCELLS_REQUIRE_TRACING";

/// Whether this run of the tests must have `need` (see [`Need::required`]).
pub fn required(need: Need) -> bool {
    need.required(&|name| std::env::var(name).ok())
}

/// A test that cannot run here because `need` is missing: says so, naming
/// the test and `why`, and returns so that the caller can return; panics
/// (failing the test) where the run requires `need`.
pub fn skip_or_fail(need: Need, why: impl std::fmt::Display) {
    let line = verdict(need, &why.to_string(), required(need));
    if let Err(failure) = line {
        panic!("{failure}");
    }
}

/// The line a skip prints (`Ok`) or the failure it is (`Err`), naming the
/// test by its thread, which the test harness names after the test.
fn verdict(need: Need, why: &str, required: bool) -> Result<(), String> {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let what = need.describe();
    if required {
        let by = if need == Need::Tracing { format!("{CI} or {REQUIRE_TRACING}") } else { CI.to_string() };
        return Err(format!("{test} could not run and {by} is set, so it fails: {what}: {why}"));
    }
    eprintln!("{test}: skipped: {what}: {why}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_to_skip_fails_under_ci() {
        let ci = |name: &str| (name == CI).then(|| "true".to_string());
        for need in Need::ALL {
            assert!(need.required(&ci), "{need:?}");
            let failure = verdict(need, "here", need.required(&ci)).unwrap_err();
            assert!(failure.contains(need.describe()) && failure.contains("every_reason_to_skip"), "{failure}");
        }
    }

    #[test]
    fn outside_ci_a_missing_need_only_says_so() {
        let nothing = |_: &str| None;
        for need in Need::ALL {
            assert!(!need.required(&nothing), "{need:?}");
            assert_eq!(verdict(need, "here", false), Ok(()));
        }
        for off in ["", "0", "false"] {
            assert!(!Need::Chromium.required(&|_: &str| Some(off.to_string())), "CI={off:?}");
        }
    }

    #[test]
    fn require_tracing_makes_only_tracing_a_failure() {
        let var = |name: &str| (name == REQUIRE_TRACING).then(|| "1".to_string());
        for need in Need::ALL {
            assert_eq!(need.required(&var), need == Need::Tracing, "{need:?}");
        }
    }

    #[test]
    #[should_panic(expected = "could not run and CI or CRASHCELLS_REQUIRE_TRACING is set, so it fails")]
    fn a_required_need_that_is_missing_panics() {
        // The variable is read through `required`; set nothing, so call
        // the panicking branch as skip_or_fail does.
        if let Err(failure) = verdict(Need::Tracing, "PTRACE_TRACEME is not permitted", true) {
            panic!("{failure}");
        }
    }
}
