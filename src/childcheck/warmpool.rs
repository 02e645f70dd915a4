//! `child-check`'s clause on the warm pool (docs/PROTOCOL.md §10), for a
//! child that lists `warm-pool`: its processes get warm; two requests, each
//! `append --stop-after 3` in a folder of its own, run each in the process
//! the driver started for it (its ready record naming that process, not
//! one that served another request: a warm process is used once, never
//! reused) and leave the same acks and store as an exec'd one; and `dump`
//! through the pool prints what an exec'd `dump` prints. Every process is
//! confirmed as fresh as an exec'd one before it runs (a descriptor held
//! fails with the one line naming it).

use crashcells_protocol::Ready;

use super::checker::Checker;
use super::forkserver::{APPENDS, masked_acks, ready_pid};
use crate::harness::{Launcher, serves_warm};

impl Checker<'_> {
    /// Checks the warm pool, if `ready` lists one.
    pub(super) fn warm_pool(&mut self, ready: &Ready) {
        if !serves_warm(ready) {
            let why = "the child does not list `warm-pool`: every operation is exec'd";
            self.skipped.push(("warm-pool", why.into()));
            return;
        }
        let found = self.warm_like_exec();
        self.note("warm-pool", found);
    }

    fn warm_like_exec(&mut self) -> Result<String, String> {
        let s = self.scratch("warm-pool", None).ok_or_else(|| "no scratch folder".to_string())?;
        // Two processes: both requests find one warm.
        let pool =
            Launcher::with_warm_pool((**self.child).clone(), &s.path("warm.stderr"), 2, self.deadline, &self.interrupt)
                .map_err(|e| e.to_string())?;
        let exec = self.child.clone();
        let (first, first_pid) = self.append_in(&pool, &s, "warm-1")?;
        let (second, second_pid) = self.append_in(&pool, &s, "warm-2")?;
        let (execd, _) = self.append_in(&exec, &s, "exec")?;
        let named = [ready_pid(&first.join("acks.ndjson")), ready_pid(&second.join("acks.ndjson"))];
        used_once([first_pid, second_pid], named)?;
        let exec_acks = masked_acks(&s.path("exec/acks.ndjson"));
        if [&first, &second].iter().any(|dir| masked_acks(&dir.join("acks.ndjson")) != exec_acks) {
            return Err(format!("`append --stop-after {APPENDS}` in a warm process wrote other acks than exec'd"));
        }
        let warm_dump = self.dump_with(&pool, &s, &first, "warm-dump")?;
        if warm_dump != self.dump_with(&exec, &s, &first, "warm-dump-exec")? {
            return Err("`dump` in a warm process printed other bytes than `dump` exec'd, of the same store".into());
        }
        if warm_dump != self.dump_with(&exec, &s, &execd, "exec-dump")? {
            return Err(format!("`append --stop-after {APPENDS}` in a warm process left another store than exec'd"));
        }
        Ok(format!(
            "warm; two `append --stop-after {APPENDS}` and a `dump` each ran in a fresh process of its own and \
             did what exec'd ones do"
        ))
    }
}

/// Each request ran in the process started for it: its ready record names
/// that process. A record that names the process of the other request is a
/// process reused; one that names neither, an operation run elsewhere (in a
/// worker the warm processes hand their requests to, say).
fn used_once(started: [u32; 2], named: [Option<u32>; 2]) -> Result<(), String> {
    for (i, (pid, said)) in started.iter().zip(named).enumerate() {
        let other = started[1 - i];
        match said {
            Some(said) if said == *pid => {}
            Some(said) if said == other || Some(said) == named[1 - i] => {
                return Err(format!(
                    "request {} ran in process {said}, which served the other request too (the driver started \
                     process {pid} for it): a warm process is used once, never reused",
                    i + 1
                ));
            }
            said => {
                let said = said.map_or("no process".into(), |p| format!("process {p}"));
                return Err(format!(
                    "request {} ran in process {pid}, but its ready record names {said}: the operation must run \
                     in the warm process the driver started for it",
                    i + 1
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_must_run_in_its_own_process() {
        assert!(used_once([10, 11], [Some(10), Some(11)]).is_ok());
        // Both requests served by one worker elsewhere: reused.
        let e = used_once([10, 11], [Some(99), Some(99)]).unwrap_err();
        assert!(e.contains("request 1 ran in process 99, which served the other request too"), "{e}");
        assert!(e.contains("never reused"), "{e}");
        // The first process served the second request as well.
        let e = used_once([10, 11], [Some(10), Some(10)]).unwrap_err();
        assert!(e.starts_with("request 2 ran in process 10, which served the other request too"), "{e}");
        let e = used_once([10, 11], [Some(10), Some(42)]).unwrap_err();
        assert!(e.contains("its ready record names process 42"), "{e}");
        assert!(used_once([10, 11], [Some(10), None]).unwrap_err().contains("names no process"));
    }
}
