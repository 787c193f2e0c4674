//! Everything rvl takes from its surroundings, read once at the edge (`main`) and passed down,
//! as ripgrep turns `LowArgs` into `HiArgs`: the `RVL_*` knobs, the terminal state and the
//! environment the checks look at. Nothing below `main` calls `std::env::var` or asks whether
//! a stream is a terminal; tests build a `Settings` by hand.
//!
//! Imports only `output` and `host::env`. [`Progress`] is defined in `output` and re-exported
//! here, so `fetch` needs nothing from this module.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::host::env::Env;
pub use crate::output::Progress;
use crate::output::Style;

/// The `RVL_*` variables, raw. Each is parsed (and rejected with a clear error) by the code
/// that owns its meaning; this only says where the value came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RvlVars {
    /// `RVL_VULKAN_LIBRARY`: load this libvulkan instead of the system loader.
    pub vulkan_library: Option<PathBuf>,
    /// `RVL_BENCH_TILES`: extra tiled kernels for smoke-bench (tuning).
    pub bench_tiles: Option<String>,
    /// `RVL_BENCH_INJECT_FAILURE`: make chosen Vulkan calls fail (tests).
    pub bench_inject_failure: Option<String>,
    /// `RVL_PATCHES_DIR`: read patch series from here instead of the embedded copy.
    pub patches_dir: Option<PathBuf>,
    /// `RVL_FETCH_STALL_SECS`: seconds without data before a download try is abandoned.
    pub fetch_stall_secs: Option<String>,
    /// `RVL_FETCH_ATTEMPTS`: tries per download.
    pub fetch_attempts: Option<String>,
    /// `RVL_FETCH_MIN_RATE`: slowest average bytes per second a download may keep (0: no floor).
    pub fetch_min_rate: Option<String>,
    /// `RVL_FETCH_GRACE_SECS`: seconds a download may run before the rate floor applies.
    pub fetch_grace_secs: Option<String>,
    /// `RVL_ROOT_TOOLS`: a host directory of tools that act on the tree `RVL_ROOT` names (the
    /// test stand-ins); under `--root`, a system tool is run from here instead of the image's.
    pub root_tools: Option<PathBuf>,
    /// `RVL_FAULT`: crash on purpose at a write point (crash-safety tests).
    pub fault: Option<String>,
    /// `MATMUL_NUM_THREADS`: threads of the CPU GEMM baseline (matrixmultiply's own variable).
    pub matmul_threads: Option<String>,
    /// `SUDO_USER`: the person behind `sudo rvl setup`, who gets GPU access.
    pub sudo_user: Option<String>,
    /// `RVL_DEVFREQ_ROOT`: read and pin the GPU's devfreq node under this tree instead of "/"
    /// (tests of `smoke-bench --max-clock` on a fake sysfs).
    pub devfreq_root: Option<PathBuf>,
    /// `RVL_DTC`: the device-tree compiler setup runs instead of `dtc` from PATH (tests point
    /// it at a missing file to see the blocked step).
    pub dtc: Option<PathBuf>,
    /// `RVL_LAB_MACHINE`: `1` lets setup change the running machine though it is no board (rvl's
    /// x86-64 labs, where a chroot of a board's release stands in for the board).
    pub lab_machine: Option<String>,
}

/// Whether each standard stream is a terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Terminal {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub vars: RvlVars,
    pub terminal: Terminal,
    /// How stdout may be decorated (colour only on a terminal, never with NO_COLOR/TERM=dumb).
    pub style: Style,
    /// The variables doctor's checks look at (XDG_*, VK_*, ...).
    pub env: Env,
    /// The locale names a character set other than UTF-8 (`LANG=C`): human output is
    /// written in ASCII ([`crate::output::to_ascii`]).
    pub ascii: bool,
}

/// Whether the locale asks for a character set other than UTF-8: the first of `LC_ALL`,
/// `LC_CTYPE`, `LANG` that is set decides, as for any C program. With none set, UTF-8.
pub fn locale_is_ascii(var: impl Fn(&str) -> Option<String>) -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|n| var(n))
        .is_some_and(|l| {
            let l = l.to_ascii_lowercase();
            !(l.contains("utf-8") || l.contains("utf8"))
        })
}

impl Settings {
    /// Read the process environment and the terminal state. Called once, by `main`.
    pub fn from_process() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let terminal = Terminal {
            stdin: std::io::stdin().is_terminal(),
            stdout: std::io::stdout().is_terminal(),
            stderr: std::io::stderr().is_terminal(),
        };
        let no_color = var("NO_COLOR").is_some();
        let dumb = var("TERM").is_some_and(|t| t == "dumb");
        Settings {
            vars: RvlVars {
                vulkan_library: var("RVL_VULKAN_LIBRARY").map(PathBuf::from),
                bench_tiles: var("RVL_BENCH_TILES"),
                bench_inject_failure: var("RVL_BENCH_INJECT_FAILURE"),
                patches_dir: var("RVL_PATCHES_DIR").map(PathBuf::from),
                fetch_stall_secs: var("RVL_FETCH_STALL_SECS"),
                fetch_attempts: var("RVL_FETCH_ATTEMPTS"),
                fetch_min_rate: var("RVL_FETCH_MIN_RATE"),
                fetch_grace_secs: var("RVL_FETCH_GRACE_SECS"),
                fault: var("RVL_FAULT"),
                root_tools: var("RVL_ROOT_TOOLS").map(PathBuf::from),
                matmul_threads: var("MATMUL_NUM_THREADS"),
                sudo_user: var("SUDO_USER"),
                dtc: var("RVL_DTC").map(PathBuf::from),
                devfreq_root: var("RVL_DEVFREQ_ROOT").map(PathBuf::from),
                lab_machine: var("RVL_LAB_MACHINE"),
            },
            terminal,
            style: Style {
                color: terminal.stdout && !no_color && !dumb,
            },
            env: Env::from_process(),
            ascii: locale_is_ascii(var),
        }
    }

    /// Print human output on stdout, in ASCII when the locale is not UTF-8.
    pub fn print(&self, text: &str) {
        if self.ascii {
            crate::output::print_text(&crate::output::to_ascii(text));
        } else {
            crate::output::print_text(text);
        }
    }

    /// A person can answer a prompt: stdin and stderr are terminals.
    pub fn can_prompt(&self) -> bool {
        self.terminal.stdin && self.terminal.stderr
    }

    /// Progress lines on stderr: on a terminal always; otherwise only in human mode, where a
    /// log of a long run is wanted, and not under `--json`, where a script reads the output
    /// and stderr is usually captured alongside it.
    pub fn progress(&self, json: bool) -> bool {
        self.terminal.stderr || !json
    }

    /// How long work (downloads, builds) reports on stderr: a redrawn bar only on a terminal,
    /// where it cannot garble a log; plain lines where [`Settings::progress`] allows them.
    pub fn progress_style(&self, json: bool) -> Progress {
        match (self.terminal.stderr, self.progress(json)) {
            (true, _) => Progress::Bar,
            (false, true) => Progress::Lines,
            (false, false) => Progress::Quiet,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_off_under_json_only_without_a_terminal() {
        let mut s = Settings::default();
        assert!(s.progress(false));
        assert!(!s.progress(true));
        s.terminal.stderr = true;
        assert!(s.progress(true));
        assert_eq!(s.progress_style(true), Progress::Bar);
        s.terminal.stderr = false;
        assert_eq!(s.progress_style(false), Progress::Lines);
        assert_eq!(s.progress_style(true), Progress::Quiet);
    }

    #[test]
    fn prompting_needs_stdin_and_stderr_terminals() {
        let mut s = Settings::default();
        s.terminal.stdin = true;
        assert!(!s.can_prompt());
        s.terminal.stderr = true;
        assert!(s.can_prompt());
    }
}
