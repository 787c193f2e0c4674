//! Sources published as a Python sdist, fetched with the registry's own client:
//! `python3 -m pip download` of one pinned release. pip decides where it comes from; rvl only
//! trusts the file after the pinned size and sha256 match (`super::verify_file`).
//!
//! pip writes into a fresh directory next to the destination; only a verified file is renamed
//! into place, and the directory is removed whatever happens, so a failure leaves nothing.
//! `--no-build-isolation` keeps pip from installing build tools from the index, but pip still
//! reads the sdist's metadata with its build backend, which must therefore be installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::{sync_parent, verify_file, FetchError, Progress};
use crate::error::Error;
use crate::manifest::PipSource;

/// What to fetch and what it must be.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub pip: &'a PipSource,
    pub sha256: &'a str,
    pub size: u64,
}

/// The arguments after `python3`.
pub fn download_args(requirement: &str, dir: &Path) -> Vec<String> {
    [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--no-build-isolation",
        requirement,
        "-d",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(std::iter::once(dir.to_string_lossy().into_owned()))
    .collect()
}

/// Fetch `req` to `dest` (a host path; its directory must exist). A `dest` that already
/// matches is kept without running pip.
pub fn download(req: &Request, dest: &Path, progress: Progress) -> anyhow::Result<PathBuf> {
    let what = format!("pip download {}", req.pip.requirement);
    if dest.is_file() && verify_file(&what, dest, req.sha256, req.size).is_ok() {
        return Ok(dest.to_path_buf());
    }
    let python = check_pip(req.pip)?;
    let dir = dest.parent().unwrap_or(Path::new("."));
    let work = tempfile::Builder::new()
        .prefix(".pip-")
        .tempdir_in(dir)
        .map_err(|e| {
            failed(format!(
                "cannot create a directory in {}: {e}",
                dir.display()
            ))
        })?;
    if progress.shown() {
        eprintln!("{what} ({} bytes)", req.size);
    }
    let out = run(&python, &download_args(&req.pip.requirement, work.path()))?;
    if !out.status.success() {
        return Err(failed(format!(
            "{what} failed ({}):\n{}",
            out.status,
            last_lines(&out, 8)
        )));
    }
    let got = work.path().join(&req.pip.filename);
    if !got.is_file() {
        let wrote: Vec<String> = std::fs::read_dir(work.path())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        return Err(failed(format!(
            "{what} saved no {} (it saved: {})",
            req.pip.filename,
            if wrote.is_empty() {
                "nothing".into()
            } else {
                wrote.join(", ")
            }
        )));
    }
    verify_file(&what, &got, req.sha256, req.size).map_err(Error::from)?;
    std::fs::rename(&got, dest)
        .and_then(|()| sync_parent(dest))
        .map_err(|e| failed(format!("cannot move {} into place: {e}", dest.display())))?;
    if progress.shown() {
        eprintln!("{what}: {} bytes, sha256 ok", req.size);
    }
    Ok(dest.to_path_buf())
}

/// python3 with pip, and the sdist's build backend when the manifest names one.
fn check_pip(pip: &PipSource) -> anyhow::Result<PathBuf> {
    let missing_pip = || {
        Error::Tool(format!(
            "pip is not installed (`python3 -m pip` fetches {}); install it with: sudo apt install python3-pip",
            pip.filename
        ))
    };
    let python = which::which("python3").map_err(|_| missing_pip())?;
    let has_pip = run(&python, &["-m".into(), "pip".into(), "--version".into()])?;
    if !has_pip.status.success() {
        return Err(missing_pip().into());
    }
    if let Some(backend) = &pip.backend {
        let args = ["-m", "pip", "show", "--quiet", backend.as_str()].map(String::from);
        if !run(&python, &args)?.status.success() {
            return Err(Error::Tool(format!(
                "pip needs {backend} (the build backend of {}) to read its metadata; install it with: sudo apt install python3-{backend} (Debian 12: from bookworm-backports)",
                pip.filename
            ))
            .into());
        }
    }
    Ok(python)
}

fn run(python: &Path, args: &[String]) -> anyhow::Result<Output> {
    Command::new(python)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(format!("cannot run {}: {e}", python.display())))
}

/// A failure of the pip download itself (exit status DOWNLOAD, like any other download).
fn failed(msg: String) -> anyhow::Error {
    Error::from(FetchError::Pip(msg)).into()
}

/// The end of what pip said, indented, for an error message.
fn last_lines(out: &Output, n: usize) -> String {
    let mut said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    crate::output::indented_tail(&said, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_fetches_one_sdist_without_dependencies_or_build_isolation() {
        let args = download_args("a==1", Path::new("/c/.pip-x"));
        assert_eq!(
            args.join(" "),
            "-m pip download --no-deps --no-binary :all: --no-build-isolation a==1 -d /c/.pip-x"
        );
    }
}
