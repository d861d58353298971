//! Running commands: print each one, run it in the repository, fail with its exit code.
//! A server a benchmark measures runs in the background instead ([`Background`]).

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

/// A command that ran and did not succeed.
#[derive(Debug)]
pub(crate) struct Failed {
    /// The command line as printed.
    pub(crate) line: String,
    /// Its exit code; `None` when a signal ended it.
    pub(crate) code: Option<i32>,
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "`{}` exited with code {code}", self.line),
            None => write!(f, "`{}` was ended by a signal", self.line),
        }
    }
}

impl std::error::Error for Failed {}

/// A command line to run from a directory.
pub(crate) struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    dir: Option<std::path::PathBuf>,
}

impl Cmd {
    /// `program` with no arguments, run from the current directory.
    pub(crate) fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            dir: None,
        }
    }

    /// `cargo` run from the repository root `root`.
    pub(crate) fn cargo(root: &Path) -> Self {
        Self::new("cargo").dir(root)
    }

    /// Runs from `dir`.
    pub(crate) fn dir(mut self, dir: &Path) -> Self {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// Adds arguments.
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The command line as a user would type it.
    pub(crate) fn line(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        if let Some(dir) = &self.dir {
            c.current_dir(dir);
        }
        c
    }

    /// Prints the command, runs it with the terminal's input and output, and fails with
    /// [`Failed`] unless it exits with 0.
    pub(crate) fn run(&self) -> Result<()> {
        let line = self.line();
        println!("$ {line}");
        let status = self
            .command()
            .status()
            .with_context(|| format!("could not start `{line}`: is it installed?"))?;
        if status.success() {
            Ok(())
        } else {
            Err(Failed {
                line,
                code: status.code(),
            }
            .into())
        }
    }

    /// Runs the command quietly for its standard output (standard error still shows),
    /// failing with [`Failed`] unless it exits with 0.
    pub(crate) fn output(&self) -> Result<Vec<u8>> {
        let line = self.line();
        let out = self
            .command()
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("could not start `{line}`: is it installed?"))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(Failed {
                line,
                code: out.status.code(),
            }
            .into())
        }
    }

    /// Prints the command and starts it in the background, its standard output and
    /// error going to the file `log`; it is killed when the value is dropped.
    pub(crate) fn spawn(&self, log: &Path) -> Result<Background> {
        let line = self.line();
        println!("$ {line} > {}", log.display());
        let file = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = self
            .command()
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("could not start `{line}`: is it installed?"))?;
        Ok(Background {
            line,
            child,
            log: log.to_path_buf(),
        })
    }

    /// Whether the command runs and exits with 0, without printing anything (for
    /// probes such as `cargo nextest --version`).
    pub(crate) fn succeeds_quietly(&self) -> bool {
        self.command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// A command running in the background (a server under measurement), killed on drop.
#[derive(Debug)]
pub(crate) struct Background {
    line: String,
    child: Child,
    log: PathBuf,
}

impl Background {
    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails, with the log's tail, when the process has exited.
    pub(crate) fn ensure_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => anyhow::bail!(
                "`{}` exited ({status}); {} ends with:\n{}",
                self.line,
                self.log.display(),
                self.log_tail()
            ),
        }
    }

    /// The last 40 lines of its output.
    pub(crate) fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
