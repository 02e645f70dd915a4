//! `scripts/release-build`, run in a copy of the repository's sources with
//! a stand-in `cargo` on PATH (it logs each call and makes the binary a
//! build would, in no time), and `.crashcells/install.sh` in a team's
//! repository that holds only the copied kit: a release file is built with
//! its sha256, downloaded, checked and cached without a checkout of
//! crashcells, and a file whose sum does not match is refused with nothing
//! cached.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::scratch;

/// The stand-in `cargo`: `install --root R` makes `R/bin/crashcells`,
/// `build --release` makes `target/release/crashcells`; every call is
/// logged to `$CARGO_LOG`.
const CARGO: &str = r#"#!/bin/sh
echo "$*" >> "$CARGO_LOG"
case "$1" in
install)
    while [ "$1" != --root ]; do shift; done
    mkdir -p "$2/bin" && printf '#!/bin/sh\necho crashcells stand-in\n' > "$2/bin/crashcells"
    chmod +x "$2/bin/crashcells" ;;
build)
    mkdir -p target/release && printf '#!/bin/sh\necho crashcells release\n' > target/release/crashcells
    chmod +x target/release/crashcells ;;
esac
"#;

/// A checkout: what `install.sh` keys on, the scripts, and `bin/cargo`.
struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    fn new() -> Checkout {
        let dir = scratch();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for part in ["Cargo.toml", "Cargo.lock", "build.rs", "src", "cells", "matrices", ".crashcells", "scripts"] {
            copy(&root.join(part), &dir.path().join(part));
        }
        for package in ["child-bin", "protocol"] {
            std::fs::create_dir_all(dir.path().join(package)).unwrap();
            copy(&root.join(package).join("Cargo.toml"), &dir.path().join(package).join("Cargo.toml"));
            copy(&root.join(package).join("src"), &dir.path().join(package).join("src"));
        }
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/cargo"), CARGO).unwrap();
        copy_mode(&dir.path().join("bin/cargo"));
        Checkout { dir }
    }

    /// A team's repository: the kit copied as docs/CI.md says, nothing else.
    fn team() -> Checkout {
        let dir = scratch();
        copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".crashcells"), &dir.path().join(".crashcells"));
        Checkout { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// Runs a script of the checkout, in it, with the stand-in first on PATH.
    fn run(&self, script: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let path = format!("{}:{}", self.path("bin").display(), std::env::var("PATH").unwrap_or_default());
        let mut cmd = Command::new(self.path(script));
        cmd.args(args).current_dir(self.dir.path()).env("PATH", path).env("CARGO_LOG", self.path("cargo.log"));
        for var in [
            "GITHUB_OUTPUT",
            "GITHUB_PATH",
            "CRASHCELLS_RELEASE",
            "CRASHCELLS_FROM",
            "CRASHCELLS_CACHE",
            "CARGO_TARGET_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("CRASHCELLS_CACHE", self.path("cache")).envs(env.iter().copied()).output().unwrap()
    }

    /// How many times the stand-in `cargo` was called.
    fn cargo_calls(&self) -> usize {
        std::fs::read_to_string(self.path("cargo.log")).unwrap_or_default().lines().count()
    }
}

fn copy(from: &Path, to: &Path) {
    assert!(Command::new("cp").arg("-rp").arg(from).arg(to).status().unwrap().success(), "{}", from.display());
}

fn copy_mode(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).trim().to_string(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A release: built and packed with its sha256 under the version its tag
/// must name; installed in a team's repository that holds only the copied
/// `.crashcells/` (no checkout of crashcells): downloaded, checked and
/// cached, a second install downloading nothing; a file whose sum does not
/// match is refused with nothing cached.
#[test]
fn a_release_is_installed_without_a_checkout_checked_and_cached() {
    let c = Checkout::new();
    let wrong = c.run("scripts/release-build", &["v0.0.0-wrong"], &[]);
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong).1);
    assert!(text(&wrong).1.contains("is not Cargo.toml's version"), "{}", text(&wrong).1);
    let built = c.run("scripts/release-build", &[], &[]);
    let (file, err) = text(&built);
    assert!(built.status.success(), "{err}");
    let arch = std::env::consts::ARCH;
    assert!(file.starts_with("dist/crashcells-") && file.ends_with(&format!("-{arch}-linux.tar.gz")), "{file}");
    assert!(c.path(&format!("{file}.sha256")).is_file());

    let team = Checkout::team();
    assert!(!team.path("Cargo.toml").exists(), "the team's repository is no checkout");
    let release = format!("file://{}", c.path("dist").display());
    let github_path = team.path("github-path");
    let env = [("CRASHCELLS_RELEASE", release.as_str()), ("GITHUB_PATH", github_path.to_str().unwrap())];
    let installed = team.run(".crashcells/install.sh", &[], &env);
    let (bin, err) = text(&installed);
    assert!(installed.status.success(), "{err}");
    let key = text(&team.run(".crashcells/install.sh", &["key"], &env)).0;
    assert!(key.contains(&format!("-{arch}-linux-release-")), "{key}");
    assert_eq!(bin, team.path("cache").join(&key).join("bin").display().to_string());
    assert_eq!(std::fs::read_to_string(&github_path).unwrap(), format!("{bin}\n"), "on PATH by itself");
    let ran = Command::new(Path::new(&bin).join("crashcells")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "crashcells release\n");
    assert_eq!(c.cargo_calls(), 1, "the release build only: an install compiles nothing");

    // The second job: the cached binary, nothing downloaded (the release is gone).
    let dist = c.path("dist.moved");
    std::fs::rename(c.path("dist"), &dist).unwrap();
    let second = team.run(".crashcells/install.sh", &[], &env);
    assert!(second.status.success() && text(&second).1.contains(&format!("cached ({key})")), "{}", text(&second).1);
    std::fs::rename(&dist, c.path("dist")).unwrap();

    // The file changed on the way: refused, and no cached binary left behind.
    let mut bytes = std::fs::read(c.path(&file)).unwrap();
    bytes.push(0);
    std::fs::write(c.path(&file), bytes).unwrap();
    let other_cache = team.path("cache-2");
    let env = [("CRASHCELLS_RELEASE", release.as_str()), ("CRASHCELLS_CACHE", other_cache.to_str().unwrap())];
    let refused = team.run(".crashcells/install.sh", &[], &env);
    assert!(!refused.status.success());
    assert!(text(&refused).1.contains("FAILED"), "{}", text(&refused).1);
    let left = std::fs::read_dir(&other_cache).map(|d| d.flatten().filter(|e| e.path().join("done").exists()).count());
    assert_eq!(left.unwrap_or(0), 0, "nothing cached as a hit");
}

/// The kit installs the version it was copied from by default: the pin in
/// `install.sh` is this repository's version, and an unknown way is refused
/// with one line and exit 2.
#[test]
fn install_pins_this_version_and_refuses_an_unknown_way() {
    let script = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".crashcells/install.sh")).unwrap();
    let pin = format!("version=${{CRASHCELLS_VERSION:-{}}}", env!("CARGO_PKG_VERSION"));
    assert!(script.contains(&pin), "install.sh pins another version than {}", env!("CARGO_PKG_VERSION"));
    let team = Checkout::team();
    let out = team.run(".crashcells/install.sh", &[], &[("CRASHCELLS_FROM", "cargo")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out).1, "CRASHCELLS_FROM=cargo: not one of pip, npm, release\n");
}
