//! Every check `child-check` knows, in the order it reports them
//! (docs/PROTOCOL.md §7), and what each needs before it can run. A report
//! lists every one of them, as `ok`, `FAIL` or `not run` with the reason, so
//! that a check an earlier failure kept from running is never silently
//! missing. A check for a new operation is a line here and its code in a
//! file of its own beside this one.

/// A check, and what it needs (the reason of a `not run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    pub name: &'static str,
    pub needs: &'static str,
}

const fn known(name: &'static str, needs: &'static str) -> Known {
    Known { name, needs }
}

const READY: &str = "a ready record from `append`";

/// The checks, in report order.
pub const KNOWN: &[Known] = &[
    known("ready", "`append` to start"),
    known("protocol-version", READY),
    known("ready-fields", READY),
    known("stop-after", READY),
    known("acks", READY),
    known("append-state", "a finished `append` and a `dump` of its store"),
    known("ack-after-effect", READY),
    known("rotate", READY),
    known("rotate-state", "a successful `rotate`"),
    known("rotate-shapes", "a child that lists `rotate-shapes`"),
    known("dump-canonical", "a store left by an operation that succeeded"),
    known("dump-deterministic", "a store left by an operation that succeeded"),
    known("dump-batch", "a child that lists `dump-batch` in its ready record"),
    known("park", READY),
    known("claim-barrier", "a successful `park`"),
    known("claim-exit-codes", "a successful `park` and a claimant that waited at the barrier"),
    known("claim-state", "claimants that ended WON and LOST"),
    known("config-home", READY),
    known("config-errors", READY),
    known("journal-policy", READY),
    known("fork", "a child that lists `fork`"),
    known("fork-state", "a successful `fork`"),
    known("deliver", "a child that lists `deliver`"),
    known("deliver-state", "a successful `deliver`"),
    known("catch-up-arrived", "a child that lists `deliver` and `catch-up`"),
    known("catch-up-missing", "a child that lists `deliver` and `catch-up`"),
    known("co-append", "a child that lists `co-append`"),
    known("co-append-state", "a successful `co-append` of each writer"),
    known("syscall-determinism", "tracing, on x86_64 or aarch64"),
    known("fork-server", "a child that lists `fork-server`"),
    known("warm-pool", "a child that lists `warm-pool`"),
    known("own-group", READY),
    known("own-folder", "a traced recording (`syscall-determinism`)"),
];

/// The check called `name`, if it is known.
pub fn find(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_match_the_protocols_list() {
        let names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let doc = include_str!("../../docs/PROTOCOL.md");
        let section = &doc[doc.find("## 7.").expect("§7")..];
        for name in names {
            assert!(section.contains(&format!("`{name}`")), "docs/PROTOCOL.md §7 does not name `{name}`");
        }
    }
}
