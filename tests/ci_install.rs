//! `.crashcells/install.sh` and `scripts/release-build`, run in a copy of
//! the repository's sources with a stand-in `cargo` on PATH (it logs each
//! call and makes the binary a build would, in no time): the second
//! install of one key restores the cached binary and compiles nothing; a
//! changed lock file or source is a new key; a release file is built with
//! its sha256, downloaded, checked and cached, and a file whose sum does
//! not match is refused with nothing cached.

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

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// Runs a script of the checkout, in it, with the stand-in first on PATH.
    fn run(&self, script: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let path = format!("{}:{}", self.path("bin").display(), std::env::var("PATH").unwrap_or_default());
        let mut cmd = Command::new(self.path(script));
        cmd.args(args).current_dir(self.dir.path()).env("PATH", path).env("CARGO_LOG", self.path("cargo.log"));
        for var in ["GITHUB_OUTPUT", "GITHUB_PATH", "CRASHCELLS_RELEASE", "CRASHCELLS_CACHE", "CARGO_TARGET_DIR"] {
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

/// The second job with one key compiles nothing; a changed lock file or
/// source is a new key and compiles again. On GitHub the key goes to the
/// step's outputs and the binary's folder to PATH.
#[test]
fn a_second_install_of_one_key_restores_the_binary_and_compiles_nothing() {
    let c = Checkout::new();
    let outputs = c.path("github-output");
    let key = c.run(".crashcells/install.sh", &["key"], &[("GITHUB_OUTPUT", outputs.to_str().unwrap())]);
    let (key, _) = text(&key);
    assert!(key.starts_with("crashcells-0.") && key.contains("-lock-") && key.contains("-src-"), "{key}");
    assert_eq!(std::fs::read_to_string(&outputs).unwrap(), format!("key={key}\n"));

    let github_path = c.path("github-path");
    let first = c.run(".crashcells/install.sh", &[], &[("GITHUB_PATH", github_path.to_str().unwrap())]);
    let (bin, err) = text(&first);
    assert!(first.status.success(), "{err}");
    assert_eq!(bin, c.path("cache").join(&key).join("bin").display().to_string());
    assert_eq!(std::fs::read_to_string(&github_path).unwrap(), format!("{bin}\n"));
    assert_eq!(c.cargo_calls(), 1, "a miss compiles");
    assert!(Path::new(&bin).join("crashcells").is_file());

    let second = c.run(".crashcells/install.sh", &[], &[]);
    assert_eq!(text(&second).0, bin);
    assert!(text(&second).1.contains(&format!("cached ({key})")), "{}", text(&second).1);
    assert_eq!(c.cargo_calls(), 1, "a hit compiles nothing");

    // A changed lock file, then a changed source: each a new key, a new build.
    std::fs::write(c.path("Cargo.lock"), std::fs::read_to_string(c.path("Cargo.lock")).unwrap() + "\n").unwrap();
    let relocked = text(&c.run(".crashcells/install.sh", &["key"], &[])).0;
    assert_ne!(relocked, key);
    c.run(".crashcells/install.sh", &[], &[]);
    assert_eq!(c.cargo_calls(), 2);
    std::fs::write(c.path("src/lib.rs"), std::fs::read_to_string(c.path("src/lib.rs")).unwrap() + "\n").unwrap();
    assert_ne!(text(&c.run(".crashcells/install.sh", &["key"], &[])).0, relocked);
    c.run(".crashcells/install.sh", &[], &[]);
    assert_eq!(c.cargo_calls(), 3);
}

/// A release: built and packed with its sha256 under the version its tag
/// must name; downloaded, checked and cached without compiling; a file
/// whose sum does not match stops the install with nothing cached.
#[test]
fn a_release_is_downloaded_checked_and_cached_and_a_bad_sum_is_refused() {
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

    let release = format!("file://{}", c.path("dist").display());
    let calls = c.cargo_calls();
    let installed = c.run(".crashcells/install.sh", &[], &[("CRASHCELLS_RELEASE", &release)]);
    let (bin, err) = text(&installed);
    assert!(installed.status.success(), "{err}");
    assert!(bin.ends_with(&format!("-{arch}-linux-release/bin")), "{bin}");
    let ran = Command::new(Path::new(&bin).join("crashcells")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "crashcells release\n");
    assert_eq!(c.cargo_calls(), calls, "a release compiles nothing");

    // The file changed on the way: refused, and no cached binary left behind.
    let mut bytes = std::fs::read(c.path(&file)).unwrap();
    bytes.push(0);
    std::fs::write(c.path(&file), bytes).unwrap();
    let other_cache = c.path("cache-2");
    let env = [("CRASHCELLS_RELEASE", release.as_str()), ("CRASHCELLS_CACHE", other_cache.to_str().unwrap())];
    let refused = c.run(".crashcells/install.sh", &[], &env);
    assert!(!refused.status.success());
    assert!(text(&refused).1.contains("FAILED"), "{}", text(&refused).1);
    assert!(!other_cache.exists() || std::fs::read_dir(&other_cache).unwrap().next().is_none());
}
