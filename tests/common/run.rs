//! Run the built `rvl` binary: `rvl(&["doctor", "--json"]).root(&fx).env(k, v).run()` gives an
//! [`Output`] whose `expect_*` assertions print the command line, stdout and stderr when they
//! fail. The child starts from an empty environment (only PATH and LD_LIBRARY_PATH are kept),
//! so nothing from the developer's shell (VK_*, XDG_*, RVL_*, SUDO_USER, HOME) leaks in.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::fmt;
use std::path::Path;
use std::process::Command;

/// `rvl ARGS...`, not started yet.
pub fn rvl(args: &[&str]) -> Rvl {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rvl"));
    cmd.env_clear();
    for keep in ["PATH", "LD_LIBRARY_PATH"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    Rvl {
        cmd,
        line: vec!["rvl".into()],
    }
    .args(args)
}

pub struct Rvl {
    cmd: Command,
    line: Vec<String>,
}

impl Rvl {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.line.push(arg.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(arg);
        self
    }

    pub fn args(self, args: &[&str]) -> Self {
        args.iter().fold(self, |c, a| c.arg(a))
    }

    /// `--root ROOT` (a [`super::roots::Fixture`] or any path).
    pub fn root(self, root: impl AsRef<Path>) -> Self {
        self.arg("--root").arg(root.as_ref())
    }

    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.line
            .insert(0, format!("{key}={}", value.as_ref().to_string_lossy()));
        self.cmd.env(key, value);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// [`Rvl::run`], killed at `deadline`: then the test fails naming the command, instead of
    /// waiting for a run that would take hours.
    pub fn run_within(mut self, deadline: std::time::Duration) -> Output {
        use std::io::Read;
        use std::process::Stdio;
        let line = self.line.join(" ");
        let mut child = self
            .cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("`{line}` did not start: {e}"));
        let drain = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = r.read_to_end(&mut v);
                v
            })
        };
        let out = drain(Box::new(child.stdout.take().unwrap()));
        let err = drain(Box::new(child.stderr.take().unwrap()));
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
                panic!("`{line}` still running after {deadline:?}\n--- stderr ---\n{stderr}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let stdout = String::from_utf8(out.join().unwrap())
            .unwrap_or_else(|e| panic!("`{line}`: stdout is not UTF-8 ({e})"));
        Output {
            line,
            code: status.code(),
            stdout,
            stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        }
    }

    /// Run to the end; stdin is closed (never a terminal), stdout and stderr are captured.
    pub fn run(mut self) -> Output {
        let line = self.line.join(" ");
        let out = self
            .cmd
            .output()
            .unwrap_or_else(|e| panic!("`{line}` did not start: {e}"));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8(out.stdout)
            .unwrap_or_else(|e| panic!("`{line}`: stdout is not UTF-8 ({e})\n{stderr}"));
        Output {
            line,
            code: out.status.code(),
            stdout,
            stderr,
        }
    }
}

/// What a finished run printed and how it exited. `{out}` shows all of it.
pub struct Output {
    line: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Output {
    /// The exit status (`rvl::exit::*`); a run killed by a signal fails the test.
    pub fn code(&self) -> i32 {
        self.code
            .unwrap_or_else(|| panic!("killed by a signal: {self}"))
    }

    pub fn stdout(&self) -> &str {
        &self.stdout
    }

    pub fn stderr(&self) -> &str {
        &self.stderr
    }

    /// Stdout parsed as one JSON document (and nothing else).
    pub fn stdout_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not only JSON ({e}): {self}"))
    }

    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(self.code, Some(code), "wrong exit status: {self}");
        self
    }

    pub fn expect_stdout(self, needle: &str) -> Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}: {self}"
        );
        self
    }

    pub fn expect_stderr(self, needle: &str) -> Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {self}"
        );
        self
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = self
            .code
            .map_or_else(|| "a signal".to_string(), |c| c.to_string());
        write!(
            f,
            "`{}` exited with {code}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.line, self.stdout, self.stderr
        )
    }
}
