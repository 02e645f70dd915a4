//! The run's scratch folders, and their reclaiming. Every folder a command
//! makes for its trials (`run`'s work folder, `child-check`'s, the
//! audit's) is made here, and records its owner: the driver's pid, the
//! start time the kernel gives that pid (`/proc/<pid>/stat`, field 22, so
//! that a pid reused by another process is not taken for the owner), the
//! boot it started in and its pid namespace. A driver killed by `SIGKILL`
//! removes nothing; its folders (in `/dev/shm`, memory, by default) are
//! found by the next run at its start, and by `crashcells prune`, and
//! removed once their owner is dead.
//!
//! A folder is removed only when its owner is known to be dead: a folder
//! without an owner file (one being made, or one of another program), or
//! whose owner lives in another pid namespace (another container sharing
//! the folder) is left alone. Two reclaimers at once take turns by a lock
//! on the owner file, which goes last.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The owner file's name, in every scratch folder.
pub const OWNER: &str = ".crashcells-owner";

/// The prefix every scratch folder's name starts with: what a reclaim
/// looks at, and nothing else.
pub const PREFIX: &str = "crashcells-";

/// The process that made a scratch folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Clock ticks since boot when the process started.
    pub start: u64,
    /// `/proc/sys/kernel/random/boot_id`: a folder of an earlier boot has a dead owner.
    pub boot: String,
    /// `/proc/self/ns/pid`'s link: a pid means something only in its namespace.
    pub pidns: String,
}

/// Whether a folder's owner still runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Dead,
    /// Another pid namespace's process: this one cannot tell.
    Unknown,
}

impl Owner {
    /// This process, or `None` where `/proc` does not say (then folders
    /// record no owner and are never reclaimed).
    pub fn me() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner { pid, start: start_time(pid)?, boot: boot_id()?, pidns: pid_namespace()? })
    }

    /// The owner file's text: one line, `pid start boot pidns`.
    pub fn render(&self) -> String {
        format!("{} {} {} {}\n", self.pid, self.start, self.boot, self.pidns)
    }

    fn parse(text: &str) -> Option<Owner> {
        let mut w = text.split_whitespace();
        let owner = Owner {
            pid: w.next()?.parse().ok()?,
            start: w.next()?.parse().ok()?,
            boot: w.next()?.to_string(),
            pidns: w.next()?.to_string(),
        };
        w.next().is_none().then_some(owner)
    }

    /// Whether this owner still runs, as seen from this process.
    pub fn liveness(&self) -> Liveness {
        if boot_id().is_some_and(|b| b != self.boot) {
            return Liveness::Dead;
        }
        if pid_namespace().is_none_or(|ns| ns != self.pidns) {
            return Liveness::Unknown;
        }
        match start_time(self.pid) {
            Some(start) if start == self.start => Liveness::Alive,
            _ => Liveness::Dead,
        }
    }
}

/// The start time of process `pid` in clock ticks since boot: field 22 of
/// `/proc/<pid>/stat`, counted after the command's closing parenthesis
/// (a command may hold spaces and parentheses).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_start_time(&stat)
}

fn stat_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the command; 22 is 19 further.
    after.split_whitespace().nth(19)?.parse().ok()
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|s| !s.is_empty())
}

fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(link.to_string_lossy().replace(' ', "_"))
}

/// Makes a scratch folder in `root`, named `crashcells-<rest>XXXXXX`, its
/// owner (this process) recorded in it; removed when dropped.
pub fn folder(root: &Path, rest: &str) -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix(&format!("{PREFIX}{rest}")).tempdir_in(root)?;
    if let Some(me) = Owner::me() {
        std::fs::write(dir.path().join(OWNER), me.render())?;
    }
    Ok(dir)
}

/// What a reclaim removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    pub folders: usize,
    /// What they held on their disk (allocated blocks, not file lengths).
    pub bytes: u64,
}

impl Reclaimed {
    /// The one line a reclaim says, or none when it removed nothing.
    pub fn line(&self, root: &Path) -> Option<String> {
        (self.folders > 0).then(|| self.said(&root.display().to_string()))
    }

    /// The one line a reclaim in `places` says, whatever it removed.
    pub fn said(&self, places: &str) -> String {
        let folders = if self.folders == 1 { "1 folder".into() } else { format!("{} folders", self.folders) };
        format!("reclaimed {folders} of dead runs in {places}: {} freed", human_bytes(self.bytes))
    }
}

impl std::ops::Add for Reclaimed {
    type Output = Reclaimed;

    fn add(self, o: Reclaimed) -> Reclaimed {
        Reclaimed { folders: self.folders + o.folders, bytes: self.bytes + o.bytes }
    }
}

/// Removes the scratch folders in `root` whose owner is dead. A folder
/// that cannot be read or removed is left as it is: a reclaim never stops
/// the command that makes it.
pub fn reclaim(root: &Path) -> Reclaimed {
    let mut done = Reclaimed::default();
    let Ok(entries) = std::fs::read_dir(root) else { return done };
    for entry in entries.flatten() {
        let named = entry.file_name().to_str().is_some_and(|n| n.starts_with(PREFIX));
        if !named || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Some(bytes) = reclaim_one(&entry.path()) {
            done.folders += 1;
            done.bytes += bytes;
        }
    }
    done
}

/// Removes one folder if its owner is dead, holding its owner file's
/// lock so that a second reclaimer passes it by; returns what it held.
fn reclaim_one(dir: &Path) -> Option<u64> {
    let owner_path = dir.join(OWNER);
    let mut file = std::fs::File::open(&owner_path).ok()?;
    file.try_lock().ok()?;
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    if Owner::parse(&text)?.liveness() != Liveness::Dead {
        return None;
    }
    let bytes = disk_usage(dir);
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        if entry.file_name() == OWNER {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        gone.ok()?;
    }
    // The owner file last: a reclaimer killed before it leaves a folder
    // the next one still knows to be reclaimable.
    std::fs::remove_file(&owner_path).ok()?;
    std::fs::remove_dir(dir).ok()?;
    Some(bytes)
}

/// The blocks a folder's files take, in bytes, without following links.
fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    let own = meta.blocks() * 512;
    if !meta.is_dir() {
        return own;
    }
    let inside = std::fs::read_dir(path).map_or(0, |d| d.flatten().map(|e| disk_usage(&e.path())).sum());
    own + inside
}

/// A byte count as a person reads it: `512 B`, `4.0 KiB`, `63.2 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dead process's pid and start time: a child that ran and was reaped.
    fn dead_owner() -> Owner {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let me = Owner::me().expect("/proc says who this process is");
        child.wait().unwrap();
        Owner { pid, start: me.start, ..me }
    }

    #[test]
    fn a_stat_line_gives_its_start_time_whatever_the_command() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(stat_start_time(stat), Some(987_654));
        assert_eq!(stat_start_time("42 (x"), None);
    }

    #[test]
    fn an_owner_file_reads_back_and_refuses_anything_else() {
        let me = Owner::me().unwrap();
        assert_eq!(Owner::parse(&me.render()), Some(me));
        assert_eq!(Owner::parse("12 34"), None);
        assert_eq!(Owner::parse("12 34 b p extra"), None);
    }

    /// This process is alive; its pid with another start time (a reused
    /// pid) is not; a process of another boot is dead; one of another pid
    /// namespace cannot be told.
    #[test]
    fn liveness_is_told_by_pid_start_time_boot_and_namespace() {
        let me = Owner::me().unwrap();
        assert_eq!(me.liveness(), Liveness::Alive);
        assert_eq!(Owner { start: me.start + 1, ..me.clone() }.liveness(), Liveness::Dead);
        assert_eq!(Owner { boot: "another-boot".into(), ..me.clone() }.liveness(), Liveness::Dead);
        assert_eq!(Owner { pidns: "pid:[1]".into(), ..me.clone() }.liveness(), Liveness::Unknown);
        assert_eq!(dead_owner().liveness(), Liveness::Dead);
    }

    /// A reclaim removes the folders of dead owners only: never a live
    /// one's, one without an owner, one another namespace owns, or a
    /// folder not named as ours; it says what it freed.
    #[test]
    fn a_reclaim_removes_only_the_folders_of_dead_owners() {
        let root = tempfile::tempdir().unwrap();
        let live = folder(root.path(), "live-").unwrap();
        let make = |name: &str, owner: Option<Owner>| {
            let dir = root.path().join(name);
            std::fs::create_dir_all(dir.join("trial-1/home")).unwrap();
            std::fs::write(dir.join("trial-1/store.db"), vec![7u8; 100_000]).unwrap();
            if let Some(o) = owner {
                std::fs::write(dir.join(OWNER), o.render()).unwrap();
            }
        };
        let me = Owner::me().unwrap();
        make("crashcells-dead-1", Some(dead_owner()));
        make("crashcells-dead-2", Some(Owner { start: me.start + 1, ..me.clone() }));
        make("crashcells-unowned", None);
        make("crashcells-elsewhere", Some(Owner { pidns: "pid:[1]".into(), ..dead_owner() }));
        make("someone-else", Some(dead_owner()));
        let done = reclaim(root.path());
        assert_eq!(done.folders, 2);
        assert!(done.bytes >= 200_000, "{}", done.bytes);
        let line = done.line(root.path()).unwrap();
        assert!(line.starts_with("reclaimed 2 folders of dead runs in ") && line.ends_with(" KiB freed"), "{line}");
        let mut left: Vec<String> =
            std::fs::read_dir(root.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
        left.sort();
        let live_name = live.path().file_name().unwrap().to_string_lossy().to_string();
        let mut want =
            vec!["crashcells-elsewhere".to_string(), "crashcells-unowned".into(), "someone-else".into(), live_name];
        want.sort();
        assert_eq!(left, want);
        assert_eq!(reclaim(root.path()).line(root.path()), None, "nothing more to reclaim");
    }

    #[test]
    fn bytes_read_as_a_person_reads_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(4096), "4.0 KiB");
        assert_eq!(human_bytes(66_270_000), "63.2 MiB");
    }
}
