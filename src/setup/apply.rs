//! Carry out a plan inside one transaction. Downloads happen first, into a cache under the
//! state directory, so nothing is installed before every artifact passed its sha256 check.
//! Each action journals what it touches before touching it; a failing step aborts the
//! transaction, which puts every changed path back.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use super::action::{Action, Verify};
use super::journal::{StateDir, Txn};
use super::patches::{Patch, Series};
use super::plan::Plan;
use super::{archive, builder, fault, patches, paths, steps};
use crate::bootcfg::extlinux::Extlinux;
use crate::error::Error;
use crate::fetch;
use crate::host::Root;
use crate::manifest::Origin;
use crate::settings::Progress;

/// Where a tool is looked for inside a non-live root (as PATH would find it there).
const ROOT_PATH: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Downloaded artifacts by sha256.
pub type Cache = BTreeMap<String, PathBuf>;

/// Download every artifact the plan needs into `/var/lib/rvl/cache`, verified.
pub fn prefetch(root: &Root, plan: &Plan, opts: &fetch::Options) -> anyhow::Result<Cache> {
    let dir = StateDir::new(root).host("cache");
    let mut cache = Cache::new();
    for step in &plan.steps {
        for action in &step.actions {
            let (origin, sha256, size) = match action {
                Action::InstallArtifact {
                    url, sha256, size, ..
                }
                | Action::InstallPrebuilt {
                    url, sha256, size, ..
                } => (Origin::Url(url.clone()), sha256, *size),
                Action::BuildSource {
                    origin,
                    sha256,
                    size,
                    ..
                } => (origin.clone(), sha256, *size),
                _ => continue,
            };
            if cache.contains_key(sha256) {
                continue;
            }
            fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create", &dir, e))?;
            let dest = match &origin {
                Origin::Url(url) => {
                    let dest = dir.join(cache_name(url, sha256));
                    let req = fetch::Request {
                        url: url.clone(),
                        sha256: sha256.clone(),
                        size: Some(size),
                        max_size: size,
                    };
                    fetch::download(&req, &dest, opts).map_err(Error::from)?;
                    dest
                }
                Origin::Pip(pip) => {
                    let dest = dir.join(format!("{}-{}", short(sha256), pip.filename));
                    let req = fetch::pip::Request { pip, sha256, size };
                    fetch::pip::download(&req, &dest, opts.progress)?
                }
            };
            cache.insert(sha256.clone(), dest);
        }
    }
    Ok(cache)
}

/// `<first 16 hex of sha256>-<file name of the URL path>`.
fn cache_name(url: &str, sha256: &str) -> String {
    let name = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.path_segments()
                .and_then(|mut s| s.next_back().map(str::to_string))
        })
        .filter(|n| !n.is_empty() && n != "." && n != "..")
        .unwrap_or_else(|| "download".into());
    format!("{}-{name}", short(sha256))
}

fn short(sha256: &str) -> &str {
    &sha256[..16.min(sha256.len())]
}

/// What an apply did, for the summary and `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub transaction: String,
    pub steps: Vec<String>,
    pub changed: Vec<String>,
}

/// Run every step of `plan` in one transaction.
pub fn apply(
    root: &Root,
    plan: &Plan,
    cache: &Cache,
    patches: &Series,
    progress: Progress,
) -> anyhow::Result<Outcome> {
    let names = plan.step_names();
    let mut txn = Txn::begin(root, &names)?;
    for step in &plan.steps {
        if progress.shown() {
            eprintln!("== {}: {}", step.step, step.summary);
        }
        let result = step
            .actions
            .iter()
            .try_for_each(|a| run_action(&mut txn, &step.step, a, cache, patches, progress));
        if let Err(err) = result {
            let id = txn.id().to_string();
            return match txn.abort() {
                Ok(()) => Err(Error::StepFailed(format!(
                        "step {} failed: {err:#}\nEverything this run changed was put back (transaction {id}).",
                        step.step
                    )).into()),
                Err(undo) => Err(Error::RollbackIncomplete(format!("step {} failed: {err:#}\nand undoing it failed too: {undo:#}\n`rvl setup --status` shows what is left", step.step)).into()),
            };
        }
        fault::step_done(&step.step);
    }
    let applied = txn.commit()?;
    Ok(Outcome {
        transaction: applied.id,
        steps: names,
        changed: applied.entries.iter().map(|e| e.path.clone()).collect(),
    })
}

fn run_action(
    txn: &mut Txn,
    step: &str,
    action: &Action,
    cache: &Cache,
    patches: &Series,
    progress: Progress,
) -> anyhow::Result<()> {
    match action {
        Action::WriteFile {
            path,
            mode,
            content,
            ..
        } => txn.write_file(path, content.as_bytes(), *mode, step),
        Action::RenameFile { from, to } => txn.rename(from, to, step),
        Action::Symlink { path, target, .. } => txn.symlink(path, target, step),
        Action::InstallArtifact {
            path, sha256, mode, ..
        } => {
            let data = fs::read(cached(cache, sha256)?)?;
            // The cache is ours, but check again: what is installed must be what was pinned.
            let actual = crate::digest::sha256_hex(&data);
            if actual != *sha256 {
                return Err(Error::from(fetch::FetchError::Checksum {
                    url: format!("the cached copy of {path} changed since it was verified"),
                    expected: sha256.clone(),
                    actual,
                })
                .into());
            }
            txn.write_file(path, &data, *mode, step)
        }
        Action::RunTool {
            tool,
            args,
            changes,
            verify,
            ..
        } => {
            for c in changes {
                txn.record(c, step)?;
            }
            run_tool(txn.root(), tool, args)?;
            if let Some(v) = verify {
                check(txn.root(), v)?;
            }
            Ok(())
        }
        Action::BuildSource {
            project,
            version,
            sha256,
            tree,
            system,
            prefix,
            options,
            ..
        } => {
            let tarball = cached(cache, sha256)?.clone();
            let spec = SourceSpec {
                project,
                version,
                sha256,
                tree,
                system: *system,
                prefix,
                options,
            };
            build_source(txn, step, &spec, &tarball, patches.get(project), progress)
        }
        Action::InstallPrebuilt { sha256, prefix, .. } => {
            let archive_path = cached(cache, sha256)?.clone();
            let stage = stage_dir(txn.root(), prefix);
            txn.ensure_parent(prefix, step)?;
            let result = (|| {
                let staged = stage.join("prefix");
                archive::unpack(&archive_path, &staged)?;
                write_stamp(&staged, &serde_json::json!({"prebuilt": sha256}))?;
                txn.install_tree(&staged, prefix, step)
            })();
            let _ = fs::remove_dir_all(&stage);
            result
        }
    }
}

fn cached<'a>(cache: &'a Cache, sha256: &str) -> anyhow::Result<&'a PathBuf> {
    cache
        .get(sha256)
        .ok_or_else(|| Error::Internal(format!("artifact {sha256} was not downloaded")).into())
}

/// Run a system tool: from PATH on the live system, from the root's own bin directories when
/// `--root` names another tree (with `RVL_ROOT` set, so a stand-in can find the tree).
pub fn run_tool(root: &Root, tool: &str, args: &[String]) -> anyhow::Result<()> {
    let program = if root.is_live() {
        which::which(tool).map_err(|_| {
            Error::Unsupported(format!("`{tool}` is not installed (not found on PATH)"))
        })?
    } else {
        ROOT_PATH
            .iter()
            .map(|d| format!("{d}/{tool}"))
            .find(|p| !root.is_dir(p) && root.exists(p))
            .and_then(|p| root.resolve(&p).ok())
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "`{tool}` is not installed in {} (looked in {})",
                    root.base().display(),
                    ROOT_PATH.join(", ")
                ))
            })?
    };
    // The real u-boot-update or update-initramfs acts on this machine's /boot whatever root we
    // were given; only a tool written for a root (it reads RVL_ROOT) may run against one.
    if !root.is_live() {
        let text = fs::read(&program).unwrap_or_default();
        if !text.windows(8).any(|w| w == b"RVL_ROOT") {
            return Err(Error::Unsupported(format!(
                    "`{tool}` in {} would change this machine, not that tree; run rvl setup inside it (chroot) instead",
                    root.base().display()
                )).into());
        }
    }
    // Absolute paths: the tool runs in the root's directory, where a relative --root is wrong.
    let program = fs::canonicalize(&program).unwrap_or(program);
    let mut cmd = Command::new(&program);
    cmd.args(args);
    if !root.is_live() {
        let base = fs::canonicalize(root.base()).unwrap_or_else(|_| root.base().to_path_buf());
        cmd.env("RVL_ROOT", &base).current_dir(&base);
    }
    let out = cmd
        .output()
        .map_err(|e| Error::Tool(format!("cannot run {}: {e}", program.display())))?;
    if out.status.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&out.stderr).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stdout));
    let said: Vec<&str> = said
        .lines()
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(Error::Tool(format!(
        "`{tool} {}` failed ({}):\n    {}",
        args.join(" "),
        out.status,
        said.join("\n    ")
    ))
    .into())
}

fn check(root: &Root, v: &Verify) -> anyhow::Result<()> {
    match v {
        Verify::ExtlinuxDefaultBoots { path, release } => {
            let text = root
                .read_string(path)
                .map_err(|e| Error::io("cannot read", path, e))?;
            let e = Extlinux::parse(&text);
            let booted = e.default_entry().and_then(|d| d.kernel_release());
            if booted.as_deref() == Some(release.as_str()) {
                return Ok(());
            }
            Err(Error::StepFailed(format!(
                "{path} was regenerated but `default {}` boots {}, not {release}",
                e.default_label().unwrap_or("(none)"),
                booted.as_deref().unwrap_or("nothing")
            ))
            .into())
        }
    }
}

struct SourceSpec<'a> {
    project: &'a str,
    version: &'a str,
    sha256: &'a str,
    tree: &'a str,
    system: crate::manifest::BuildSystem,
    prefix: &'a str,
    options: &'a [String],
}

/// The staging directory for a prefix: next to it, so moving it into place is one rename.
fn stage_dir(root: &Root, prefix: &str) -> PathBuf {
    let p = Path::new(prefix);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    root.join(p.parent().unwrap_or(Path::new("/")))
        .join(format!(".stage-{name}"))
}

fn write_stamp(prefix_dir: &Path, stamp: &serde_json::Value) -> anyhow::Result<()> {
    let path = prefix_dir.join(paths::BUILD_STAMP);
    if let Some(d) = path.parent() {
        fs::create_dir_all(d)?;
    }
    fs::write(&path, serde_json::to_vec_pretty(stamp)?)?;
    Ok(())
}

fn build_source(
    txn: &mut Txn,
    step: &str,
    s: &SourceSpec,
    tarball: &Path,
    series: &[Patch],
    progress: Progress,
) -> anyhow::Result<()> {
    let state = StateDir::new(txn.root());
    let label = format!("{}-{}", s.project, s.version);
    let work = state.host(&format!("work/{label}"));
    let logs = state.host("logs");
    fs::create_dir_all(&logs)?;
    let log_path = logs.join(format!("{label}.log"));
    let stage = stage_dir(txn.root(), s.prefix);
    let _ = fs::remove_dir_all(&work);
    let _ = fs::remove_dir_all(&stage);
    txn.ensure_parent(s.prefix, step)?;
    let result = (|| {
        builder::check_tools(&[s.system])?;
        if progress.shown() {
            eprintln!("{label}: unpacking {}", tarball.display());
        }
        archive::unpack(tarball, &work.join("src"))?;
        let tree = work.join("src").join(s.tree);
        if !tree.is_dir() {
            return Err(Error::Manifest(format!(
                "{}: has no top directory `{}` (manifest `tree`)",
                tarball.display(),
                s.tree
            ))
            .into());
        }
        let mut log = fs::File::create(&log_path)?;
        writeln!(log, "rvl setup: {label} from {}", tarball.display())?;
        patches::apply(&tree, series, &mut log)?;
        drop(log);
        let b = builder::Build {
            system: s.system,
            source: tree,
            build_dir: work.join("build"),
            prefix: s.prefix.to_string(),
            destdir: stage.clone(),
            options: s.options.to_vec(),
            log: log_path.clone(),
            progress,
            deps_hint: steps::build_deps(s.project).to_string(),
        };
        b.run(&label)?;
        let staged = stage.join(s.prefix.trim_start_matches('/'));
        if !staged.is_dir() {
            return Err(Error::Tool(format!(
                "{label}: the install step put nothing into {} (log: {})",
                s.prefix,
                log_path.display()
            ))
            .into());
        }
        let stamp = serde_json::json!({
            "project": s.project,
            "version": s.version,
            "source_sha256": s.sha256,
            "patches": series.iter().map(|p| serde_json::json!({
                "name": p.name,
                "sha256": crate::digest::sha256_hex(&p.data),
            })).collect::<Vec<_>>(),
            "options": s.options,
        });
        write_stamp(&staged, &stamp)?;
        txn.install_tree(&staged, s.prefix, step)
    })();
    let _ = fs::remove_dir_all(&stage);
    let _ = fs::remove_dir_all(&work);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};

    #[test]
    fn cache_names_drop_queries_and_keep_the_file_name() {
        let sha = "a".repeat(64);
        assert_eq!(
            cache_name("https://git.kernel.org/x/mali_csffw.bin?id=930e", &sha),
            format!("{}-mali_csffw.bin", "a".repeat(16))
        );
        assert_eq!(
            cache_name("https://h/", &sha),
            format!("{}-download", "a".repeat(16))
        );
    }

    #[test]
    fn tools_in_a_fake_root_come_from_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let err = run_tool(&root, "u-boot-update", &[]).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::UNSUPPORTED);
        fs::create_dir_all(d.path().join("usr/sbin")).unwrap();
        let script = d.path().join("usr/sbin/u-boot-update");
        fs::write(
            &script,
            "#!/bin/sh\necho \"$RVL_ROOT\" > \"$RVL_ROOT/ran\"\nexit 0\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        run_tool(&root, "u-boot-update", &[]).unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("ran")).unwrap().trim(),
            d.path().to_string_lossy()
        );
        fs::write(
            &script,
            "#!/bin/sh\n: \"$RVL_ROOT\"\necho 'E: need root privileges' >&2\nexit 1\n",
        )
        .unwrap();
        let err = run_tool(&root, "u-boot-update", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("need root privileges"), "{err}");
        // A system tool that does not know about roots would change the host: refused.
        fs::write(&script, "#!/bin/sh\ntouch /tmp/rvl-should-not-run\n").unwrap();
        let err = run_tool(&root, "u-boot-update", &[]).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::UNSUPPORTED);
        assert!(err.to_string().contains("inside it (chroot)"), "{err}");
        assert!(!Path::new("/tmp/rvl-should-not-run").exists());
    }
}
