//! `child-check`'s `own-group`: no process the child started left its
//! process group and outlived its operation (docs/PROTOCOL.md §1, "do not
//! daemonize, do not start processes in other groups").
//!
//! Crash model: the driver's `SIGKILL` reaches a child's whole group and
//! nothing else. A process in another group (a daemon, a `setsid`
//! grandchild) survives its operation's kill, and may write the store
//! after the crash the driver judges. The run's container
//! ([`crate::harness::contain`]) names each such process as the driver
//! reaps its operation; this check reports them, after every other
//! check's operations have run.

use super::checker::Checker;

/// The check's name.
pub(super) const OWN_GROUP: &str = "own-group";

/// The check of files made outside the store's folder.
pub(super) const OWN_FOLDER: &str = "own-folder";

impl Checker<'_> {
    /// `own-folder`: every file the traced recordings (`syscall-determinism`)
    /// created outside the folder the child was given and outside its
    /// declared sidecar, named; a warning, since a cache a runtime keeps is
    /// no fault of the adapter's, but state no crash state holds.
    pub(super) fn own_folder(&mut self, ready: &crashcells_protocol::Ready) {
        if !crate::kill::outside::looked() {
            self.skip(&[OWN_FOLDER], "a traced recording (`syscall-determinism`)");
            return;
        }
        let sidecar = ready.sidecar.as_deref().map(std::path::Path::new);
        match crate::kill::outside::named(sidecar).as_slice() {
            [] => drop(self.note(OWN_FOLDER, Ok("every file it created is in the folder it was given".into()))),
            all => self.warn(
                OWN_FOLDER,
                format!(
                    "{}: no crash state holds it and the run leaves it behind; keep every file in the folder \
                     given (beside `--db`), or declare the folder in the ready record's `sidecar` \
                     (docs/PROTOCOL.md §3)",
                    all.join("; ")
                ),
            ),
        }
    }

    /// `own-group`: every process the check's operations left behind in
    /// another group, named; ok, saying what contained the processes, when
    /// there is none.
    pub(super) fn own_group(&mut self) {
        let escaped = crate::harness::escaped();
        let contained = crate::harness::contain::in_force().describe();
        let result = match escaped.as_slice() {
            [] => Ok(format!("no process left its operation's group; contained by {contained}")),
            all => Err(format!(
                "{} (docs/PROTOCOL.md §1: do not daemonize, do not start processes in other groups: a \
                 kill of the group does not reach them)",
                all.join("; ")
            )),
        };
        self.note(OWN_GROUP, result);
    }
}
