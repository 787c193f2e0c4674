//! Configure, build and install a source tree with meson + ninja or cmake + ninja found on PATH,
//! into `DESTDIR=<stage>` with the final prefix baked in, so the staged tree can be renamed
//! into place in one step. Everything the tools print goes to a log file; the terminal gets a
//! progress bar (ninja's `[n/m]`) or one line a phase. A failure names the phase, the log and
//! its last lines.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::Error;
use crate::manifest::BuildSystem;
use crate::settings::Progress;

/// One build.
#[derive(Debug, Clone)]
pub struct Build {
    pub system: BuildSystem,
    /// Host path of the unpacked, patched source tree.
    pub source: PathBuf,
    /// Host path of the (scratch) build directory.
    pub build_dir: PathBuf,
    /// Install prefix as the target system sees it (`/opt/rvl/mesa-26.1.6-rvl1`).
    pub prefix: String,
    /// Host path that receives `<prefix>/…` (DESTDIR).
    pub destdir: PathBuf,
    /// Extra configure arguments (`-Dvulkan-drivers=panfrost`, `-DGGML_VULKAN=ON`).
    pub options: Vec<String>,
    pub log: PathBuf,
    pub progress: Progress,
    /// Shown when configure fails: what the project needs installed.
    pub deps_hint: String,
    /// Where the tools come from besides PATH, and what the build may skip.
    pub tuning: Tuning,
}

/// The parts of a build that differ from "tools on PATH, build everything, install".
#[derive(Debug, Clone, Default)]
pub struct Tuning {
    /// The meson program (a venv's `bin/meson`) instead of `meson` from PATH.
    pub meson: Option<PathBuf>,
    /// A meson native file (`[binaries] llvm-config = …`).
    pub native_file: Option<PathBuf>,
    /// Environment for every phase (`PKG_CONFIG_PATH`).
    pub env: Vec<(String, String)>,
    /// Ninja targets to build (empty: the default, everything).
    pub targets: Vec<String>,
    /// No install phase (the caller copies what it needs out of the build directory).
    pub no_install: bool,
    /// The build directory is configured already (an interrupted run's): skip configure.
    pub resume: bool,
}

/// Tools every build of this kind needs, with the Debian package that provides each. Project
/// specific dependencies (a C++ compiler, Mesa's python modules) are named by the caller's
/// hint when configure fails, since they cannot all be probed by a program name.
pub fn tools_for(system: BuildSystem) -> &'static [(&'static str, &'static str)] {
    match system {
        BuildSystem::Meson => &[
            ("meson", "meson"),
            ("ninja", "ninja-build"),
            ("cc", "gcc"),
            ("pkg-config", "pkg-config"),
            ("patch", "patch"),
        ],
        BuildSystem::Cmake => &[
            ("cmake", "cmake"),
            ("ninja", "ninja-build"),
            ("cc", "gcc"),
            ("patch", "patch"),
        ],
    }
}

/// One error listing every missing tool and the apt packages that bring them.
pub fn check_tools(systems: &[BuildSystem]) -> anyhow::Result<()> {
    check_tools_except(systems, &[])
}

/// [`check_tools`], less the tools the build brings itself (a venv's meson).
pub fn check_tools_except(systems: &[BuildSystem], brought: &[&str]) -> anyhow::Result<()> {
    let mut missing: Vec<(&str, &str)> = Vec::new();
    for s in systems {
        for (tool, pkg) in tools_for(*s) {
            if brought.contains(tool) {
                continue;
            }
            if which::which(tool).is_err() && !missing.iter().any(|(t, _)| t == tool) {
                missing.push((tool, pkg));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let tools: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
    let mut pkgs: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    pkgs.dedup();
    Err(Error::Tool(format!(
        "build tools missing: {}; install them with: sudo apt install {}",
        tools.join(", "),
        pkgs.join(" ")
    ))
    .into())
}

impl Build {
    /// The commands, in order, with the phase each belongs to.
    pub fn commands(&self) -> Vec<(&'static str, Vec<String>)> {
        let src = self.source.to_string_lossy().into_owned();
        let bld = self.build_dir.to_string_lossy().into_owned();
        let mut build = vec!["ninja".to_string(), "-C".into(), bld.clone()];
        build.extend(self.tuning.targets.iter().cloned());
        let mut phases = match self.system {
            BuildSystem::Meson => {
                let meson = self
                    .tuning
                    .meson
                    .as_ref()
                    .map_or("meson".to_string(), |m| m.to_string_lossy().into_owned());
                let mut configure = vec![
                    meson.clone(),
                    "setup".into(),
                    bld.clone(),
                    src,
                    format!("--prefix={}", self.prefix),
                    "--libdir=lib".into(),
                    "--buildtype=release".into(),
                    "--wrap-mode=nodownload".into(),
                ];
                if let Some(native) = &self.tuning.native_file {
                    configure.push(format!("--native-file={}", native.display()));
                }
                configure.extend(self.options.iter().cloned());
                vec![
                    ("configure", configure),
                    ("build", build),
                    (
                        "install",
                        vec![
                            meson,
                            "install".into(),
                            "-C".into(),
                            bld,
                            "--no-rebuild".into(),
                        ],
                    ),
                ]
            }
            BuildSystem::Cmake => {
                let mut configure = vec![
                    "cmake".into(),
                    "-S".into(),
                    src,
                    "-B".into(),
                    bld.clone(),
                    "-G".into(),
                    "Ninja".into(),
                    "-DCMAKE_BUILD_TYPE=Release".into(),
                    format!("-DCMAKE_INSTALL_PREFIX={}", self.prefix),
                    "-DCMAKE_INSTALL_LIBDIR=lib".into(),
                ];
                configure.extend(self.options.iter().cloned());
                vec![
                    ("configure", configure),
                    ("build", build),
                    ("install", vec!["cmake".into(), "--install".into(), bld]),
                ]
            }
        };
        if self.tuning.resume {
            phases.retain(|(p, _)| *p != "configure");
        }
        if self.tuning.no_install {
            phases.retain(|(p, _)| *p != "install");
        }
        phases
    }

    /// Run every phase; stop at the first that fails. A phase whose tool was killed by a signal
    /// (Ctrl-C, the OOM killer) fails with [`Interrupted`] in the chain, so the caller keeps
    /// what the next run resumes from.
    pub fn run(&self, label: &str) -> anyhow::Result<()> {
        // Appended to: the caller may have logged the patch series into it already.
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| Error::io("cannot create the build log", &self.log, e))?;
        for (phase, argv) in self.commands() {
            self.run_phase(label, phase, &argv, &mut log)?;
        }
        Ok(())
    }

    /// Run one command as a phase of its own, logged and shown like the build's phases.
    pub fn run_command(&self, label: &str, phase: &str, argv: &[String]) -> anyhow::Result<()> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| Error::io("cannot create the build log", &self.log, e))?;
        self.run_phase(label, phase, argv, &mut log)
    }

    fn run_phase(
        &self,
        label: &str,
        phase: &str,
        argv: &[String],
        log: &mut File,
    ) -> anyhow::Result<()> {
        let _ = writeln!(log, "== {phase}: {}", argv.join(" "));
        let started = std::time::Instant::now();
        if self.progress.shown() {
            eprintln!("{label}: {phase} (log: {})", self.log.display());
        }
        let bar = (self.progress == Progress::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} {elapsed_precise}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(format!("{label}: {phase}"));
            bar.enable_steady_tick(std::time::Duration::from_secs(1));
            bar
        });
        // Without a terminal (ssh into a log, CI), one line a minute instead of the bar.
        let mut last_line = started;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        for (k, v) in &self.tuning.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .env("DESTDIR", &self.destdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::Tool(format!("{label}: cannot run `{}`: {e}", argv[0])))?;
        // stderr is copied by a thread so neither pipe can fill up and block the tool.
        let stderr = child.stderr.take().expect("piped");
        let mut log_err = log.try_clone()?;
        let err_thread = std::thread::spawn(move || {
            let _ = io::copy(&mut BufReader::new(stderr), &mut log_err);
        });
        let stdout = child.stdout.take().expect("piped");
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap_or_default();
            let _ = writeln!(log, "{line}");
            let Some((n, m)) = ninja_progress(&line) else {
                continue;
            };
            if let Some(bar) = &bar {
                bar.set_length(m);
                bar.set_position(n);
            } else if self.progress.shown() && last_line.elapsed().as_secs() >= LINE_EVERY_SECS {
                last_line = std::time::Instant::now();
                eprintln!(
                    "{label}: {phase} {n}/{m} ({}%), {} elapsed",
                    n * 100 / m.max(1),
                    clock(started.elapsed().as_secs())
                );
            }
        }
        let _ = err_thread.join();
        let status = child.wait()?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let _ = log.flush();
        let took = clock(started.elapsed().as_secs());
        let _ = writeln!(log, "== {phase}: {status} after {took}");
        if status.success() {
            if self.progress.shown() {
                eprintln!("{label}: {phase} done in {took}");
            }
            super::fault::phase_done(label, phase);
            return Ok(());
        }
        if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
            return Err(anyhow::Error::new(Interrupted {
                what: format!("{label}: {phase} was stopped by signal {sig} after {took}"),
            }));
        }
        let hint = if phase == "configure" && !self.deps_hint.is_empty() {
            format!("\n{label} needs: {}", self.deps_hint)
        } else {
            String::new()
        };
        Err(Error::Tool(format!(
            "{label}: {phase} failed ({status}); full log: {}\n{}{hint}",
            self.log.display(),
            tail(&self.log, 12)
        ))
        .into())
    }
}

/// How often a progress line is printed without a terminal.
const LINE_EVERY_SECS: u64 = 60;

/// A build tool was killed by a signal: the caller keeps its work for the next run.
#[derive(Debug)]
pub struct Interrupted {
    pub what: String,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for Interrupted {}

/// `754` → `12m34s`; `3700` → `1h01m40s`.
pub fn clock(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}s")
    } else {
        format!("{m}m{s:02}s")
    }
}

/// `[12/345] Compiling …` → (12, 345).
fn ninja_progress(line: &str) -> Option<(u64, u64)> {
    let inner = line.strip_prefix('[')?.split(']').next()?;
    let (n, m) = inner.split_once('/')?;
    Some((n.trim().parse().ok()?, m.trim().parse().ok()?))
}

/// The last `n` lines of a file, indented, for an error message.
fn tail(path: &Path, n: usize) -> String {
    crate::output::indented_tail(&std::fs::read_to_string(path).unwrap_or_default(), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_as_minutes_and_hours() {
        assert_eq!(clock(0), "0m00s");
        assert_eq!(clock(754), "12m34s");
        assert_eq!(clock(3700), "1h01m40s");
    }

    #[test]
    fn a_tuned_build_uses_the_venv_meson_native_file_and_targets_and_skips_what_it_says() {
        let mut b = Build {
            system: BuildSystem::Meson,
            source: "/s".into(),
            build_dir: "/b".into(),
            prefix: "/p".into(),
            destdir: "/d".into(),
            options: vec![],
            log: "/l".into(),
            progress: Progress::Quiet,
            deps_hint: String::new(),
            tuning: Tuning {
                meson: Some("/opt/rvl/build/meson-1.7.0/bin/meson".into()),
                native_file: Some("/w/native.ini".into()),
                ..Tuning::default()
            },
        };
        let cmds = b.commands();
        assert_eq!(cmds[0].1[0], "/opt/rvl/build/meson-1.7.0/bin/meson");
        assert!(cmds[0]
            .1
            .contains(&"--native-file=/w/native.ini".to_string()));
        assert_eq!(cmds[2].1[0], "/opt/rvl/build/meson-1.7.0/bin/meson");
        b.tuning.resume = true;
        assert_eq!(b.commands()[0].0, "build");
        b.system = BuildSystem::Cmake;
        b.tuning = Tuning {
            targets: vec!["SPIRV-Tools-static".into()],
            no_install: true,
            ..Tuning::default()
        };
        let cmds = b.commands();
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[1].1, ["ninja", "-C", "/b", "SPIRV-Tools-static"]);
    }

    #[test]
    fn ninja_progress_lines() {
        assert_eq!(
            ninja_progress("[3/120] Compiling C object x.o"),
            Some((3, 120))
        );
        assert_eq!(ninja_progress("ninja: no work to do."), None);
        assert_eq!(ninja_progress("[a/b]"), None);
    }

    #[test]
    fn meson_commands_bake_in_the_prefix_and_options() {
        let b = Build {
            system: BuildSystem::Meson,
            source: "/s".into(),
            build_dir: "/b".into(),
            prefix: "/opt/rvl/mesa-1-rvl1".into(),
            destdir: "/d".into(),
            options: vec!["-Dvulkan-drivers=panfrost".into()],
            log: "/l".into(),
            progress: Progress::Quiet,
            deps_hint: String::new(),
            tuning: Tuning::default(),
        };
        let cmds = b.commands();
        assert_eq!(cmds[0].0, "configure");
        assert!(cmds[0]
            .1
            .contains(&"--prefix=/opt/rvl/mesa-1-rvl1".to_string()));
        assert!(cmds[0].1.contains(&"-Dvulkan-drivers=panfrost".to_string()));
        assert_eq!(cmds[2].1[..2], ["meson".to_string(), "install".to_string()]);
    }

    #[test]
    fn failing_phase_names_phase_and_log_tail() {
        let d = tempfile::tempdir().unwrap();
        let b = Build {
            system: BuildSystem::Meson,
            source: d.path().join("no-such-source"),
            build_dir: d.path().join("build"),
            prefix: "/opt/x".into(),
            destdir: d.path().join("dest"),
            options: vec![],
            log: d.path().join("build.log"),
            progress: Progress::Quiet,
            deps_hint: "sudo apt install x".into(),
            tuning: Tuning::default(),
        };
        if which::which("meson").is_err() {
            return; // CI installs meson; the end-to-end test in tests/ covers this path too
        }
        let err = b.run("x").unwrap_err().to_string();
        assert!(err.contains("x: configure failed"), "{err}");
        assert!(err.contains("build.log"), "{err}");
        assert!(err.contains("x needs: sudo apt install x"), "{err}");
    }
}
