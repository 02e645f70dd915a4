//! The command a child is started with: a program and the arguments that
//! come before the operation, given the config home and nothing on stdin or
//! stdout (docs/PROTOCOL.md §1).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crashcells_protocol::HOME_ENV;

/// come before the operation (for the reference child, our own binary and
/// `child`).
#[derive(Clone, Debug)]
pub struct ChildCommand {
    pub program: OsString,
    pub prefix: Vec<OsString>,
    /// The folder the child runs in (`run --cwd`); `None`: the driver's.
    pub cwd: Option<PathBuf>,
    /// Variables set for the child on top of the driver's environment: a
    /// leg's SQLite library (`LD_LIBRARY_PATH`); empty for most.
    pub env: Vec<(OsString, OsString)>,
}

impl ChildCommand {
    /// The reference child: this very binary, re-executed as `crashcells child`.
    pub fn reference() -> std::io::Result<ChildCommand> {
        Ok(ChildCommand {
            program: std::env::current_exe()?.into(),
            prefix: vec!["child".into()],
            cwd: None,
            env: Vec::new(),
        })
    }

    /// A child given as one shell-like string, split on whitespace.
    pub fn parse(line: &str) -> Option<ChildCommand> {
        let mut words = line.split_whitespace().map(OsString::from);
        let program = words.next()?;
        Some(ChildCommand { program, prefix: words.collect(), cwd: None, env: Vec::new() })
    }

    /// Why this command's program cannot be started, if it cannot: a path
    /// that names no file or a file that is not executable, or a bare name
    /// that no folder of `PATH` holds. Checked before any child runs, so
    /// that a misspelled `--child` says so rather than "no ready record".
    pub fn unstartable(&self) -> Option<String> {
        use std::os::unix::fs::PermissionsExt;
        let program = Path::new(&self.program);
        let shown = program.display();
        let executable =
            |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if program.as_os_str().as_encoded_bytes().contains(&b'/') {
            let path = match &self.cwd {
                Some(dir) => dir.join(program),
                None => program.to_path_buf(),
            };
            let place = self.cwd.as_ref().filter(|_| program.is_relative()).map(|d| format!(" (in {})", d.display()));
            return match std::fs::metadata(&path) {
                Err(e) => Some(format!("{shown}: not found{}: {e}", place.unwrap_or_default())),
                Ok(m) if m.is_dir() => Some(format!("{shown}: is a folder, not a program")),
                Ok(_) if !executable(&path) => Some(format!(
                    "{shown}: not executable (chmod +x it, or start it through its interpreter, e.g. 'python3 {shown}')"
                )),
                Ok(_) => None,
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        match std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
            true => None,
            false => Some(format!("{shown}: no such program on PATH")),
        }
    }

    /// A `Command` for operation `args`, with `home` as its config home.
    pub fn command(&self, args: &[OsString], home: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.prefix).args(args).envs(self.env.iter().map(|(k, v)| (k, v))).env(HOME_ENV, home);
        // A relative program or script in `--child` is relative to this
        // folder: the one the run started in, or the one its repro names.
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        // The protocol says a child's stdout is captured and ignored: left
        // inherited, a chatty child would corrupt `--format json` on ours.
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        cmd
    }

    /// This command with `key` set to `value` in its children's
    /// environment, replacing what it set there before.
    pub fn with_env(&self, key: &str, value: OsString) -> ChildCommand {
        let mut env: Vec<_> = self.env.iter().filter(|(k, _)| k != key).cloned().collect();
        env.push((key.into(), value));
        ChildCommand { env, ..self.clone() }
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        std::iter::once(&self.program).chain(&self.prefix).map(|s| s.to_string_lossy()).collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that is missing, a folder, or not executable is named
    /// before it is run; one that runs is not.
    #[test]
    fn a_program_that_cannot_start_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let at = |line: &str| {
            let mut c = ChildCommand::parse(line).unwrap();
            c.cwd = Some(dir.path().to_path_buf());
            c.unstartable()
        };
        std::fs::write(dir.path().join("plain"), "").unwrap();
        assert!(at("./missing").unwrap().contains("not found (in "));
        assert!(at("./plain arg").unwrap().contains("not executable"));
        assert!(at("./").unwrap().contains("is a folder"));
        assert!(at("crashcells-no-such-program").unwrap().contains("no such program on PATH"));
        assert_eq!(at("/bin/sh -c true"), None);
        assert_eq!(at("sh"), None);
    }
}
