//! `child-check`'s clause on the fork server (docs/PROTOCOL.md, "Fork
//! server"), for a child that lists `fork-server`: the server starts and
//! writes its line; a process it forks runs `append --stop-after 3` to the
//! same acks and the same store as an exec'd one (its ready record naming
//! the forked process), and `dump` through the server prints what an exec'd
//! `dump` prints; and every forked process starts as fresh as an exec'd one
//! (a server that leaks a descriptor fails with the one line naming it).

use std::path::Path;
use std::time::Instant;

use crashcells_protocol::{Op, OpArgs, Ready};

use super::checker::Checker;
use crate::harness::Exit;
use crate::harness::{Launch, Launcher, serves_forks};
use crate::probe::Scratch;

/// Appends of the forked and the exec'd run.
pub(super) const APPENDS: u64 = 3;

impl Checker<'_> {
    /// Checks the fork server, if `ready` lists one.
    pub(super) fn fork_server(&mut self, ready: &Ready) {
        if !serves_forks(ready) {
            let why = "the child does not list `fork-server`: every operation is exec'd";
            self.skipped.push(("fork-server", why.into()));
            return;
        }
        let found = self.served_like_exec();
        self.note("fork-server", found);
    }

    fn served_like_exec(&mut self) -> Result<String, String> {
        let s = self.scratch("fork-server", None).ok_or_else(|| "no scratch folder".to_string())?;
        let forks = Launcher::with_fork_server((**self.child).clone(), &s.path("server.stderr"), self.deadline)
            .map_err(|e| e.to_string())?;
        let exec = self.child.clone();
        let (forked, pid) = self.append_in(&forks, &s, "forked")?;
        let (execd, _) = self.append_in(&exec, &s, "exec")?;
        let ready_pid = ready_pid(&s.path("forked/acks.ndjson"));
        if ready_pid != Some(pid) {
            return Err(format!("the forked `append` ran as process {pid}, but its ready record names {ready_pid:?}"));
        }
        if masked_acks(&s.path("forked/acks.ndjson")) != masked_acks(&s.path("exec/acks.ndjson")) {
            return Err(format!("`append --stop-after {APPENDS}` forked wrote other acks than exec'd"));
        }
        let forked_dump = self.dump_with(&forks, &s, &forked, "forked-dump")?;
        if forked_dump != self.dump_with(&exec, &s, &forked, "forked-dump-exec")? {
            return Err("`dump` through the server printed other bytes than `dump` exec'd, of the same store".into());
        }
        if forked_dump != self.dump_with(&exec, &s, &execd, "exec-dump")? {
            return Err(format!("`append --stop-after {APPENDS}` forked left another store than exec'd"));
        }
        Ok(format!(
            "started; a forked `append --stop-after {APPENDS}` and `dump` did what exec'd ones do, each process fresh"
        ))
    }

    /// `append --stop-after 3` in folder `name` of `s`, run to its end: the
    /// folder and the process's pid.
    pub(super) fn append_in(&self, l: &Launcher, s: &Scratch, name: &str) -> Result<(std::path::PathBuf, u32), String> {
        let dir = s.path(name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let args = OpArgs::new(Op::Append).db(&dir.join("store.db")).acks(&dir.join("acks.ndjson")).stop_after(APPENDS);
        let stderr = dir.join("append.stderr");
        let launch = Launch { args: &args.to_args(), home: &s.home, trial: &dir, stdout: None, stderr: Some(&stderr) };
        let mut running = l.spawn(&launch, self.deadline).map_err(|e| e.to_string())?;
        let pid = running.pid();
        match running.wait_until(Instant::now() + self.deadline) {
            Ok(Exit::Code(0)) => Ok((dir, pid)),
            Ok(exit) => Err(format!("`append` ({name}) ended with {exit}: {}", running.stderr_tail())),
            Err(cut) => Err(format!("`append` ({name}) did not end: {cut}")),
        }
    }

    /// `dump` of the store in `dir`, started by `l`: its stdout.
    pub(super) fn dump_with(&self, l: &Launcher, s: &Scratch, dir: &Path, label: &str) -> Result<String, String> {
        let args = OpArgs::new(Op::Dump).db(&dir.join("store.db")).to_args();
        let (stdout, stderr) = (s.path(&format!("{label}.stdout")), s.path(&format!("{label}.stderr")));
        let launch = Launch { args: &args, home: &s.home, trial: dir, stdout: Some(&stdout), stderr: Some(&stderr) };
        match l.run_to_end(&launch, self.deadline).map_err(|e| e.to_string())? {
            (Ok(Exit::Code(0)), _) => std::fs::read_to_string(&stdout).map_err(|e| e.to_string()),
            (Ok(exit), tail) => Err(format!("`dump` ({label}) ended with {exit}: {tail}")),
            (Err(cut), _) => Err(format!("`dump` ({label}) did not end: {cut}")),
        }
    }
}

pub(super) fn ready_pid(acks: &Path) -> Option<u32> {
    let bytes = std::fs::read(acks).ok()?;
    crate::journal::parse(&bytes).ok()?.ready.map(|r| r.pid)
}

/// The ack journal with the ready record's pid left out (it is the process's own).
pub(super) fn masked_acks(acks: &Path) -> Option<String> {
    let bytes = std::fs::read(acks).ok()?;
    let journal = crate::journal::parse(&bytes).ok()?;
    let ready = journal.ready.map(|r| crashcells_protocol::Ready { pid: 0, ..r });
    Some(format!("{ready:?} {:?}", journal.acks))
}
