//! The launcher of each SQLite library a leg places under the run's child
//! (`sqlite = "bundled"` or a path, docs/design/libraries.md): a fork
//! server of its own, started with the library's folder first on its
//! loader path and checked as the run's own is (the same preflight and
//! freshness checks, the same `--fork-server off` and fall-back rules),
//! shared by every job on a leg that places the library, and gone with the
//! run's context. Without one, every operation of such a leg paid a whole
//! start of the child: the run's own server loaded the child's own SQLite.
//!
//! Crash model: unchanged. A forked operation runs the library its server
//! loaded, and each trial's ready record is still checked against the
//! library (`crate::legaudit`); a server whose first fork reports another
//! SQLite than an exec'd child does leaves the library's legs exec'd, and a
//! fire found forked is confirmed exec'd with the loader path, as on every
//! fast path.

use std::path::Path;
use std::sync::Arc;

use crashcells_protocol::Ready;

use crate::error::{Error, Result};
use crate::harness::Launcher;
use crate::options::Replay;
use crate::pipeline::{Context, OnLibrary, scale_deadline};
use crate::plan::Job;
use crate::probe::{Fast, fork_server, preflight};
use crate::sqlitelib::{LOADER_PATH, Library, Placed, Placement, not_loaded};

/// Starts the launcher of every library the legs of `jobs` place, one per
/// library, in the order the legs come, into `ctx.libraries`; nothing for
/// a run interrupted before its preflight (`ready` none).
pub(super) fn start_libraries(ctx: &mut Context, ready: Option<&Ready>, jobs: &[Job]) -> Result<()> {
    let Some(ready) = ready else { return Ok(()) };
    let mut started = Vec::new();
    for (lib, placed) in placed(jobs) {
        if ctx.interrupt.is_set() {
            break;
        }
        started.push(start_one(ctx, ready, &lib, &placed)?);
    }
    ctx.libraries = Arc::new(started);
    Ok(())
}

/// Each library the legs of `jobs` placed, once, in the order they come.
fn placed(jobs: &[Job]) -> Vec<(Library, Placed)> {
    let mut seen: Vec<(Library, Placed)> = Vec::new();
    for leg in jobs.iter().filter_map(|j| j.leg.as_ref()) {
        let (Some(lib), Some(Placement::Placed(p))) = (&leg.sqlite, &leg.placed) else { continue };
        if !seen.iter().any(|(_, s)| s.dir == p.dir) {
            seen.push((lib.clone(), p.clone()));
        }
    }
    seen
}

/// Whether the run gives its libraries fork servers: the child offers one,
/// `--fork-server off` is not asked, and the run's own fast path was not
/// late (a server for a library would be as late: the run execs).
fn serves(ctx: &Context, ready: &Ready) -> bool {
    ctx.options.fork_server != Some(Replay::Off) && crate::harness::serves_forks(ready) && ctx.child.late().is_none()
}

/// The launcher of one library: its fork server, checked fresh by a
/// forked preflight and by the SQLite its first fork reports; else the
/// child exec'd with the library first on its loader path, with a note
/// where a server was offered but not taken.
fn start_one(ctx: &Context, ready: &Ready, lib: &Library, placed: &Placed) -> Result<OnLibrary> {
    let name = format!("SQLite library {lib} ({})", placed.version);
    let child = ctx.child.with_env(LOADER_PATH, placed.loader_path());
    let on = |child: Launcher, start| OnLibrary { dir: placed.dir.clone(), name: name.clone(), child, start };
    if !serves(ctx, ready) {
        return Ok(on(Launcher::exec(child), ctx.execd_start));
    }
    // Its stderr and preflights apart from the run's own server's.
    let folder = placed.dir.file_name().map_or_else(|| "sqlite".into(), |n| n.to_string_lossy().into_owned());
    let work = ctx.work_root.join(format!("fork-server-{folder}"));
    std::fs::create_dir_all(&work).map_err(Error::io("library fork server folder", &work))?;
    // The run's one rule, from the exec'd start: nothing of this server is measured yet.
    let deadline = scale_deadline(ctx.options.deadline(), ctx.execd_start, 1);
    let late = |why: &str| {
        let note = format!(
            "fork server of the {name}, not ready in time: its legs' operations were exec'd ({why}; the \
             child's exec'd start took {:.1}s; raise --deadline to wait longer for it)",
            ctx.execd_start.as_secs_f64()
        );
        on(Launcher::exec_late(child.clone(), note), ctx.execd_start)
    };
    match fork_server(&Launcher::exec(child.clone()), ready, &work, deadline, &ctx.interrupt)? {
        Some(Fast::Ready(forks, start)) => match another_sqlite(ctx, &forks, &child, (lib, placed), &work, deadline) {
            None => Ok(on(forks, start)),
            Some(why) => {
                let note = format!("fork server of the {name}: {why}: its legs' operations were exec'd");
                Ok(on(Launcher::exec_late(child, note), ctx.execd_start))
            }
        },
        Some(Fast::Late(why)) => Ok(late(&why)),
        None => Ok(on(Launcher::exec(child), ctx.execd_start)),
    }
}

/// Why the server's forks are not to be trusted with the library: its
/// first fork reports another SQLite than the library, where an exec'd
/// child (with the same loader path) reports the library. A child that
/// runs another SQLite either way (SQLite compiled in) is no server's
/// fault: its legs skip as not honored on both paths, and the server is
/// kept.
fn another_sqlite(
    ctx: &Context,
    forks: &Launcher,
    child: &crate::harness::ChildCommand,
    (lib, placed): (&Library, &Placed),
    work: &Path,
    deadline: std::time::Duration,
) -> Option<String> {
    let placement = Placement::Placed(placed.clone());
    let ran = |r: &Ready| not_loaded(lib, &placement, &r.sqlite_version, r.sqlite_source_id.as_deref());
    let forked = preflight(forks, work, deadline, &ctx.interrupt).ok()?;
    let why = ran(&forked)?;
    let execd = preflight(&Launcher::exec(child.clone()), work, deadline, &ctx.interrupt).ok()?;
    ran(&execd).is_none().then(|| {
        format!("its first fork ran SQLite {} where an exec'd child ran the library ({why})", forked.sqlite_version)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::killmode::KillMode;
    use crate::matrix::Matrix;
    use crate::plan::{Selection, plan};

    /// The `libraries` matrix's three bundled legs place one library: one
    /// launcher for them all; a leg on the child's own places none.
    #[test]
    fn each_placed_library_is_started_once() {
        let (c, mut m) = (Catalog::embedded().unwrap(), Matrix::load("libraries").unwrap());
        let dir = tempfile::tempdir().unwrap();
        m.place_libraries(dir.path()).unwrap();
        let all = Selection { cells: vec![], legs: vec![], kills: vec![KillMode::Timed] };
        let jobs = plan(&c, &m, &all, 7).unwrap();
        let libs = placed(&jobs);
        match m.legs.iter().find_map(|l| l.placed.clone()) {
            Some(Placement::Placed(p)) => {
                assert_eq!(libs.iter().map(|(l, d)| (l, &d.dir)).collect::<Vec<_>>(), [(&Library::Bundled, &p.dir)])
            }
            // The system-sqlite build has no bundled library to place.
            _ => assert!(libs.is_empty()),
        }
        let own = Selection { legs: vec!["wal".into()], ..all };
        assert!(placed(&plan(&c, &m, &own, 7).unwrap()).is_empty());
    }
}
