//! The mesa step's build dependencies, carried out: release packages through the image's apt,
//! and the build-only tools rvl builds from pinned archives into `/opt/rvl/build/` (meson's
//! wheel in a venv; SPIRV-Tools static, with SPIRV-Headers).
//!
//! A tool directory is a cache, not part of the transaction: it survives a failed or interrupted
//! Mesa build, so the next run goes on from it. It is complete only once its stamp
//! ([`TOOL_STAMP`]) is written, last; a directory without one is removed and made again.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::action::{BuildToolKind, ToolArchive};
use super::apply::{how_to_run, Cache, ToolRun, Tools};
use super::builder::{self, Build, Tuning};
use super::journal::StateDir;
use super::paths::{BUILD_TOOLS_DIR, TOOL_STAMP};
use super::{archive, fsops};
use crate::error::Error;
use crate::host::Root;
use crate::manifest::BuildSystem;
use crate::settings::Progress;

/// SPIRV-Tools' targets Mesa links (static), and the pkg-config file that names them.
pub const SPIRV_TARGETS: &[&str] = &[
    "SPIRV-Tools-static",
    "SPIRV-Tools-opt",
    "SPIRV-Tools-link",
    "spirv-tools-pkg-config",
];
/// What is copied out of SPIRV-Tools' build (from, relative to the build directory, or the
/// source tree for headers; to, relative to the tool directory).
const SPIRV_FILES: &[(&str, &str, &str)] = &[
    ("build", "source/libSPIRV-Tools.a", "lib/libSPIRV-Tools.a"),
    (
        "build",
        "source/opt/libSPIRV-Tools-opt.a",
        "lib/libSPIRV-Tools-opt.a",
    ),
    (
        "build",
        "source/link/libSPIRV-Tools-link.a",
        "lib/libSPIRV-Tools-link.a",
    ),
    ("build", "SPIRV-Tools.pc", "lib/pkgconfig/SPIRV-Tools.pc"),
    (
        "source",
        "include/spirv-tools/libspirv.h",
        "include/spirv-tools/libspirv.h",
    ),
    (
        "source",
        "include/spirv-tools/libspirv.hpp",
        "include/spirv-tools/libspirv.hpp",
    ),
    (
        "source",
        "include/spirv-tools/optimizer.hpp",
        "include/spirv-tools/optimizer.hpp",
    ),
    (
        "source",
        "include/spirv-tools/linker.hpp",
        "include/spirv-tools/linker.hpp",
    ),
];

/// `apt-get install` the packages, then `apt-mark auto` them. Under `--root` without a
/// stand-in, the image's apt is not run: the command is returned for the board instead.
pub fn install_packages(
    root: &Root,
    packages: &[String],
    tools: &Tools,
    progress: Progress,
) -> anyhow::Result<Option<String>> {
    let state = StateDir::new(root);
    state.ensure_dir("logs")?;
    let log_at = state.path("logs/apt-build-deps.log");
    let log_path = root.join(&log_at);
    let mut install = vec![
        "install".to_string(),
        "-y".into(),
        "--no-install-recommends".into(),
        "-o".into(),
        "Dpkg::Use-Pty=0".into(),
    ];
    install.extend(packages.iter().cloned());
    let program = match how_to_run(root, "apt-get", tools)? {
        ToolRun::Program(p) => p,
        ToolRun::NotRun(why) => {
            return Ok(Some(format!(
                "mesa: `apt-get install --no-install-recommends {}` was not run ({why}); run it with sudo on the board first",
                packages.join(" ")
            )))
        }
    };
    if progress.shown() {
        eprintln!(
            "mesa: installing {} build package{} with apt-get (log: {})",
            packages.len(),
            if packages.len() == 1 { "" } else { "s" },
            log_path.display()
        );
    }
    fsops::create_file(root, &log_at).map_err(|e| Error::io("cannot create", &log_path, e))?;
    let mut env = vec![
        ("DEBIAN_FRONTEND".to_string(), "noninteractive".to_string()),
        ("LC_ALL".into(), "C".into()),
    ];
    if !root.is_live() {
        // Only a stand-in runs under --root (`how_to_run`); it acts on RVL_ROOT.
        let base = fs::canonicalize(root.base()).unwrap_or_else(|_| root.base().to_path_buf());
        env.push(("RVL_ROOT".into(), base.to_string_lossy().into_owned()));
    }
    let b = runner(root, &log_path, progress, env);
    let apt = program.to_string_lossy().into_owned();
    b.run_command("mesa", "apt-get install", &[vec![apt.clone()], install].concat())
        .map_err(|e| {
            e.context("installing the build packages failed (if apt could not fetch a package, run `sudo apt-get update` and setup again)")
        })?;
    // apt-mark sits next to apt-get; marking is worth a try but not worth failing the build.
    let mark = program.with_file_name("apt-mark");
    if mark.is_file() {
        let mut args = vec![mark.to_string_lossy().into_owned(), "auto".into()];
        args.extend(packages.iter().cloned());
        let _ = b.run_command("mesa", "apt-mark auto", &args);
    }
    Ok(None)
}

/// A [`Build`] used only to run commands into `log` with progress.
fn runner(root: &Root, log: &Path, progress: Progress, env: Vec<(String, String)>) -> Build {
    Build {
        system: BuildSystem::Meson,
        source: PathBuf::new(),
        build_dir: PathBuf::new(),
        prefix: String::new(),
        destdir: root.join("/"),
        options: Vec::new(),
        log: log.to_path_buf(),
        progress,
        deps_hint: String::new(),
        tuning: Tuning {
            env,
            ..Tuning::default()
        },
    }
}

/// The file in the cache for an archive.
fn archive_file<'a>(cache: &'a Cache, a: &ToolArchive) -> anyhow::Result<&'a PathBuf> {
    cache
        .get(&a.sha256)
        .ok_or_else(|| Error::Internal(format!("{} was not downloaded", a.id)).into())
}

/// Build one tool into `dir` (an in-root path under [`BUILD_TOOLS_DIR`]).
pub fn build_tool(
    root: &Root,
    kind: BuildToolKind,
    version: &str,
    dir: &str,
    archives: &[ToolArchive],
    cache: &Cache,
    progress: Progress,
) -> anyhow::Result<()> {
    if !dir.starts_with(&format!("{BUILD_TOOLS_DIR}/")) {
        return Err(Error::Internal(format!(
            "build tool directory {dir} is not under {BUILD_TOOLS_DIR}"
        ))
        .into());
    }
    let name = dir.rsplit('/').next().unwrap_or(dir).to_string();
    let state = StateDir::new(root);
    state.ensure_dir("logs")?;
    state.ensure_dir("work")?;
    let log_at = state.path(&format!("logs/{name}.log"));
    let work_at = state.path(&format!("work/{name}"));
    fsops::create_dirs(root, Path::new(BUILD_TOOLS_DIR))
        .map_err(|e| Error::io("cannot create", root.join(BUILD_TOOLS_DIR), e))?;
    let label = name.clone();
    match kind {
        BuildToolKind::MesonVenv => {
            let wheel = archives
                .first()
                .ok_or_else(|| Error::Internal("meson: no wheel".into()))?;
            meson_venv(
                root, dir, version, wheel, cache, &log_at, &work_at, progress,
            )
        }
        BuildToolKind::SpirvTools => spirv_tools(
            root, dir, &label, archives, cache, &log_at, &work_at, progress,
        ),
    }
    .map_err(|e| {
        if e.chain().any(|c| c.is::<builder::Interrupted>()) {
            e.context(format!(
                "the next `rvl setup` goes on from {}",
                root.join(&work_at).display()
            ))
        } else {
            let _ = fsops::remove_all(root, &work_at);
            e
        }
    })
}

/// `python3 -m venv DIR`, then its pip installs the cached wheel offline. Made in place (a venv
/// records its own path), stamp last; an unstamped directory is removed first.
#[allow(clippy::too_many_arguments)]
fn meson_venv(
    root: &Root,
    dir: &str,
    version: &str,
    wheel: &ToolArchive,
    cache: &Cache,
    log_at: &Path,
    work_at: &Path,
    progress: Progress,
) -> anyhow::Result<()> {
    let log_path = root.join(log_at);
    fsops::remove_all(root, Path::new(dir))
        .map_err(|e| Error::io("cannot clear", root.join(dir), e))?;
    fsops::remove_all(root, work_at)
        .map_err(|e| Error::io("cannot clear", root.join(work_at), e))?;
    fsops::create_dirs(root, work_at)
        .map_err(|e| Error::io("cannot create", root.join(work_at), e))?;
    fsops::create_file(root, log_at).map_err(|e| Error::io("cannot create", &log_path, e))?;
    // pip reads the project and version from the wheel's own file name.
    let file = wheel
        .url
        .rsplit('/')
        .next()
        .filter(|n| n.ends_with(".whl") && crate::validate::file_name(n).is_ok())
        .ok_or_else(|| {
            Error::Manifest(format!(
                "build tool meson: `{}` does not end in a wheel's file name",
                wheel.url
            ))
        })?;
    let named = work_at.join(file);
    let data = fs::read(archive_file(cache, wheel)?)?;
    let mut f = fsops::create_file(root, &named)
        .map_err(|e| Error::io("cannot create", root.join(&named), e))?;
    f.write_all(&data)?;
    drop(f);
    let host = root.join(dir);
    let b = runner(
        root,
        &log_path,
        progress,
        vec![("PIP_NO_INDEX".into(), "1".into())],
    );
    let label = format!("meson-{version}");
    let venv = host.to_string_lossy().into_owned();
    b.run_command(
        &label,
        "venv",
        &["python3".into(), "-m".into(), "venv".into(), venv.clone()],
    )
    .map_err(|e| e.context("creating meson's venv failed (does the image have python3-venv?)"))?;
    b.run_command(
        &label,
        "pip install",
        &[
            format!("{venv}/bin/python3"),
            "-m".into(),
            "pip".into(),
            "install".into(),
            "--no-index".into(),
            "--no-deps".into(),
            "--disable-pip-version-check".into(),
            root.join(&named).to_string_lossy().into_owned(),
        ],
    )?;
    let meson = host.join("bin/meson");
    let out = std::process::Command::new(&meson)
        .arg("--version")
        .output()
        .map_err(|e| Error::Tool(format!("{label}: cannot run {}: {e}", meson.display())))?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || said != version {
        return Err(Error::Tool(format!(
            "{label}: {} --version says `{said}`, expected {version} (log: {})",
            meson.display(),
            log_path.display()
        ))
        .into());
    }
    stamp(
        root,
        dir,
        &serde_json::json!({"tool": "meson", "version": version, "wheel_sha256": wheel.sha256}),
    )?;
    let _ = fsops::remove_all(root, work_at);
    Ok(())
}

/// SPIRV-Tools' static libraries, built with the pinned SPIRV-Headers, copied with their headers
/// and pkg-config file into a stage next to `dir`, stamped, then renamed into place. An
/// interrupted build leaves its work directory (and its key), and the next run resumes ninja.
#[allow(clippy::too_many_arguments)]
fn spirv_tools(
    root: &Root,
    dir: &str,
    label: &str,
    archives: &[ToolArchive],
    cache: &Cache,
    log_at: &Path,
    work_at: &Path,
    progress: Progress,
) -> anyhow::Result<()> {
    let log_path = root.join(log_at);
    let (Some(tools), Some(headers)) = (
        archives.iter().find(|a| a.id == "spirv-tools"),
        archives.iter().find(|a| a.id == "spirv-headers"),
    ) else {
        return Err(
            Error::Internal("spirv-tools: needs its source and SPIRV-Headers".into()).into(),
        );
    };
    let key = format!("{} {}", tools.sha256, headers.sha256);
    let work = root.join(work_at);
    let resume = super::apply::resumable(root, work_at, &key);
    if resume {
        super::apply::note_resume(&log_path, &work, label, progress)?;
    } else {
        fsops::remove_all(root, work_at).map_err(|e| Error::io("cannot clear", &work, e))?;
        fsops::create_dirs(root, work_at).map_err(|e| Error::io("cannot create", &work, e))?;
        fsops::create_file(root, log_at).map_err(|e| Error::io("cannot create", &log_path, e))?;
        if progress.shown() {
            eprintln!("{label}: unpacking");
        }
        archive::unpack(archive_file(cache, tools)?, &work.join("src"))?;
        archive::unpack(archive_file(cache, headers)?, &work.join("headers"))?;
    }
    let tree = |a: &ToolArchive, sub: &str| -> anyhow::Result<PathBuf> {
        let t = work.join(sub).join(a.tree.as_deref().unwrap_or(""));
        if t.is_dir() {
            Ok(t)
        } else {
            Err(Error::Manifest(format!(
                "build tool {}: the archive has no top directory `{}`",
                a.id,
                a.tree.as_deref().unwrap_or("")
            ))
            .into())
        }
    };
    let source = tree(tools, "src")?;
    let headers_tree = tree(headers, "headers")?;
    let host_dir = root.join(dir);
    let b = Build {
        system: BuildSystem::Cmake,
        source: source.clone(),
        build_dir: work.join("build"),
        prefix: host_dir.to_string_lossy().into_owned(),
        destdir: work.join("unused-destdir"),
        options: vec![
            format!("-DSPIRV-Headers_SOURCE_DIR={}", headers_tree.display()),
            "-DSPIRV_SKIP_TESTS=ON".into(),
            "-DSPIRV_SKIP_EXECUTABLES=ON".into(),
            "-DSPIRV_WERROR=OFF".into(),
            "-DBUILD_SHARED_LIBS=OFF".into(),
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON".into(),
        ],
        log: log_path.clone(),
        progress,
        deps_hint: "sudo apt install cmake ninja-build g++ python3".into(),
        tuning: Tuning {
            targets: SPIRV_TARGETS.iter().map(|t| t.to_string()).collect(),
            no_install: true,
            resume,
            ..Tuning::default()
        },
    };
    builder::check_tools(&[BuildSystem::Cmake])?;
    if !resume {
        super::apply::write_key(root, work_at, &key)?;
    }
    b.run(label)?;
    // Stage next to the directory, stamp, then one rename.
    let name = dir.rsplit('/').next().unwrap_or(dir);
    let stage = PathBuf::from(format!("{BUILD_TOOLS_DIR}/.stage-{name}"));
    fsops::remove_all(root, &stage).map_err(|e| Error::io("cannot clear", root.join(&stage), e))?;
    for (from, rel, to) in SPIRV_FILES {
        let src = match *from {
            "build" => work.join("build").join(rel),
            _ => source.join(rel),
        };
        let data = fs::read(&src).map_err(|e| {
            Error::Tool(format!(
                "{label}: the build made no {} ({e}; log: {})",
                src.display(),
                log_path.display()
            ))
        })?;
        let dest = stage.join(to);
        if let Some(parent) = dest.parent() {
            fsops::create_dirs(root, parent)
                .map_err(|e| Error::io("cannot create", root.join(parent), e))?;
        }
        let mut f = fsops::create_file(root, &dest)
            .map_err(|e| Error::io("cannot create", root.join(&dest), e))?;
        f.write_all(&data)?;
    }
    stamp(
        root,
        &stage.to_string_lossy(),
        &serde_json::json!({
            "tool": "spirv-tools", "source_sha256": tools.sha256, "headers_sha256": headers.sha256,
        }),
    )?;
    fsops::remove_all(root, Path::new(dir)).map_err(|e| Error::io("cannot clear", &host_dir, e))?;
    fsops::rename_into_place(root, &stage, Path::new(dir))
        .map_err(|e| Error::io("cannot move into place", &host_dir, e))?;
    let _ = fsops::remove_all(root, work_at);
    Ok(())
}

fn stamp(root: &Root, dir: &str, value: &serde_json::Value) -> anyhow::Result<()> {
    let path = Path::new(dir).join(TOOL_STAMP);
    let mut f = fsops::create_file(root, &path)
        .map_err(|e| Error::io("cannot create", root.join(&path), e))?;
    f.write_all(&serde_json::to_vec_pretty(value)?)?;
    f.sync_all()?;
    Ok(())
}
