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

use super::action::Toolchain;
use super::action::{Action, Verify};
use super::journal::{StateDir, Txn};
use super::patches::{Patch, Series};
use super::plan::Plan;
use super::{archive, builder, buildtools, fault, fsops, patches, paths, steps};
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

/// What [`prefetch`] got: the artifacts by sha256, and the steps it could not download for
/// because no connection could be made (offline): (step, why). Those steps are blocked; the
/// others apply.
#[derive(Debug, Default)]
pub struct Prefetched {
    pub cache: Cache,
    pub offline: Vec<(String, String)>,
}

/// One artifact of a plan: where it comes from and what it must be.
pub struct Artifact {
    pub origin: Origin,
    pub sha256: String,
    pub size: Option<u64>,
}

impl Artifact {
    /// Every artifact an action downloads: a build tool's archives, or what it installs or
    /// builds.
    pub fn all(action: &Action) -> Vec<Artifact> {
        match action {
            Action::BuildTool { archives, .. } => archives
                .iter()
                .map(|a| Artifact {
                    origin: Origin::Url(a.url.clone()),
                    sha256: a.sha256.clone(),
                    size: Some(a.size),
                })
                .collect(),
            _ => Artifact::of(action).into_iter().collect(),
        }
    }

    /// The artifact an action installs or builds, if any.
    pub fn of(action: &Action) -> Option<Artifact> {
        let (origin, sha256, size) = match action {
            Action::InstallArtifact {
                url, sha256, size, ..
            }
            | Action::InstallPrebuilt {
                url, sha256, size, ..
            } => (Origin::Url(url.clone()), sha256, Some(*size)),
            Action::BuildSource {
                origin,
                sha256,
                size,
                ..
            } => (origin.clone(), sha256, *size),
            _ => return None,
        };
        Some(Artifact {
            origin,
            sha256: sha256.clone(),
            size,
        })
    }

    /// Its file name in a cache (`/var/lib/rvl/cache`, `--cache DIR`): the sha256 and the
    /// archive suffix of the URL's (or pip's) file name, never the name itself.
    pub fn name(&self) -> String {
        match &self.origin {
            Origin::Url(url) => cache_name(url, &self.sha256),
            Origin::Pip(pip) => format!("{}{}", self.sha256, archive_suffix(&pip.filename)),
        }
    }

    /// What it is, for messages.
    pub fn what(&self) -> String {
        match &self.origin {
            Origin::Url(url) => url.clone(),
            Origin::Pip(pip) => format!("pip download {}", pip.requirement),
        }
    }

    /// Download it to `dest` (a host path whose directory exists), verified.
    pub fn download(&self, dest: &Path, opts: &fetch::Options) -> anyhow::Result<PathBuf> {
        match &self.origin {
            Origin::Url(url) => {
                let req = fetch::Request {
                    url: url.clone(),
                    sha256: self.sha256.clone(),
                    size: self.size,
                    max_size: self.size.unwrap_or(crate::manifest::SOURCE_MAX_SIZE),
                };
                fetch::download(&req, dest, opts).map_err(Error::from)?;
                Ok(dest.to_path_buf())
            }
            Origin::Pip(pip) => {
                // The manifest refuses a pip source without a size.
                let size = self.size.expect("pip sources pin their size");
                let req = fetch::pip::Request {
                    pip,
                    sha256: &self.sha256,
                    size,
                };
                fetch::pip::download(&req, dest, opts.progress)
            }
        }
    }

    /// Its copy in `--cache DIR`, when there is one: it must match the pinned sha256 (and
    /// size), or setup stops before anything changed.
    pub fn from_local(&self, dir: &Path) -> anyhow::Result<Option<PathBuf>> {
        let path = dir.join(self.name());
        match fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            _ => return Ok(None),
        }
        fetch::verify_pinned(&path.display().to_string(), &path, &self.sha256, self.size).map_err(
            |e| {
                Error::BadInput(format!(
                    "--cache: {e}; remove it and run `rvl setup --download-only --cache {}` again",
                    crate::shell::quote(&dir.display().to_string())
                ))
            },
        )?;
        Ok(Some(path))
    }
}

impl From<&crate::manifest::Source> for Artifact {
    fn from(s: &crate::manifest::Source) -> Self {
        Artifact {
            origin: s.origin.clone(),
            sha256: s.sha256.clone(),
            size: s.size,
        }
    }
}

/// When `e` says no connection could be made (offline), as opposed to a bad download: what.
fn unreachable(e: &anyhow::Error) -> Option<String> {
    match e.downcast_ref::<Error>() {
        Some(Error::Fetch(f)) if f.is_unreachable() => Some(f.to_string()),
        _ => None,
    }
}

/// Get every artifact the plan needs into `/var/lib/rvl/cache`, verified: from `local`
/// (`--cache DIR`) when it has it, else downloaded. Once a connection cannot be made, no
/// further download is tried: the steps that needed one are returned as offline, and the
/// steps that need nothing more apply.
pub fn prefetch(
    root: &Root,
    plan: &Plan,
    opts: &fetch::Options,
    local: Option<&Path>,
) -> anyhow::Result<Prefetched> {
    let state = StateDir::new(root);
    let dir = state.host("cache");
    let mut got = Prefetched::default();
    let mut offline: Option<String> = None;
    for step in &plan.steps {
        // A local archive (--mesa-archive) needs no network: copied in and verified.
        for action in &step.actions {
            if let Action::InstallArchive { archive, .. } = action {
                if got.cache.contains_key(&archive.sha256) {
                    continue;
                }
                state.ensure_dir("cache")?;
                // Named as a download is: its sha256 and the archive suffix.
                let file_name = Path::new(&archive.file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let name = format!("{}{}", archive.sha256, archive_suffix(&file_name));
                clear_non_files(root, &state.path("cache").join(&name))?;
                let dest = dir.join(&name);
                copy_verified(archive, &dest)?;
                got.cache.insert(archive.sha256.clone(), dest);
            }
        }
        for art in step.actions.iter().flat_map(Artifact::all) {
            if got.cache.contains_key(&art.sha256) {
                continue;
            }
            if let Some(path) = local.map(|d| art.from_local(d)).transpose()?.flatten() {
                got.cache.insert(art.sha256.clone(), path);
                continue;
            }
            if let Some(first) = &offline {
                got.offline.push((
                    step.step.clone(),
                    format!("needs {}, not tried: {first}", art.what()),
                ));
                break;
            }
            // No link on the way to the cache, and none planted at a name the download writes.
            state.ensure_dir("cache")?;
            let name = art.name();
            clear_non_files(root, &state.path("cache").join(&name))?;
            match art.download(&dir.join(&name), opts) {
                Ok(dest) => {
                    got.cache.insert(art.sha256.clone(), dest);
                }
                Err(e) if unreachable(&e).is_some() => {
                    let why = unreachable(&e).unwrap_or_default();
                    got.offline
                        .push((step.step.clone(), format!("cannot download {why}")));
                    offline = Some(why);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(got)
}

/// Copy a local archive into the cache through a `.part` file, and keep it only once its size
/// and sha256 are the pinned ones (the same check a download gets).
fn copy_verified(a: &super::action::LocalArchive, dest: &Path) -> anyhow::Result<()> {
    let what = format!("--mesa-archive {}", a.file);
    if fetch::verify_file(&what, dest, &a.sha256, a.size).is_ok() {
        return Ok(());
    }
    let part = fetch::part_path(dest);
    let result = (|| -> anyhow::Result<()> {
        let mut from =
            fs::File::open(&a.file).map_err(|e| Error::BadInput(format!("{what}: {e}")))?;
        let mut to = fs::File::create(&part).map_err(|e| Error::io("cannot create", &part, e))?;
        // Never more than the pinned size plus one byte: a grown file fails the size check.
        std::io::copy(&mut std::io::Read::take(&mut from, a.size + 1), &mut to)?;
        to.sync_all()?;
        fetch::verify_file(&what, &part, &a.sha256, a.size).map_err(Error::from)?;
        fs::rename(&part, dest)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&part);
    }
    result
}

/// Remove anything but a regular file at a cache name and at its `.part` (a link planted there
/// would make the download write through it).
fn clear_non_files(root: &Root, path: &Path) -> anyhow::Result<()> {
    let part = fetch::part_path(path);
    for p in [path, part.as_path()] {
        match fsops::probe(root, p).map_err(|e| Error::io("cannot check", root.join(p), e))? {
            fsops::Node::File(_) | fsops::Node::Missing => {}
            _ => fsops::remove_all(root, p)
                .map_err(|e| Error::io("cannot remove", root.join(p), e))?,
        }
    }
    Ok(())
}

/// The cache file of an artifact: its sha256, and the URL's archive suffix where it has one
/// (the unpacker picks the decompressor by name). Never the URL's own last segment: it may be
/// longer than a file name can be (255 bytes) or hold anything a URL allows.
fn cache_name(url: &str, sha256: &str) -> String {
    let last = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.path_segments()
                .and_then(|mut s| s.next_back().map(str::to_string))
        })
        .unwrap_or_default();
    format!("{sha256}{}", archive_suffix(&last))
}

/// `.tar.xz`, `.tar.gz`, `.tgz`, `.tar`, `.xz` or `.gz` when `name` ends with one, else "".
fn archive_suffix(name: &str) -> &'static str {
    [".tar.xz", ".tar.gz", ".tgz", ".tar", ".xz", ".gz"]
        .into_iter()
        .find(|s| name.ends_with(s))
        .unwrap_or("")
}

/// What an apply did, for the summary and `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub transaction: String,
    pub steps: Vec<String>,
    pub changed: Vec<String>,
    /// What was left for the board to do: a system tool of the image that rvl does not run
    /// outside it (each a sentence with the command).
    pub deferred: Vec<String>,
}

/// How system tools run (`RVL_ROOT_TOOLS`: stand-ins that act on `RVL_ROOT`, for tests).
#[derive(Debug, Clone, Default)]
pub struct Tools {
    pub stand_ins: Option<PathBuf>,
    /// How setup was pointed at the system, for the commands an error names.
    pub hint: crate::hint::Invocation,
}

/// Run every step of `plan` in one transaction.
pub fn apply(
    root: &Root,
    plan: &Plan,
    cache: &Cache,
    patches: &Series,
    progress: Progress,
    tools: &Tools,
) -> anyhow::Result<Outcome> {
    let names = plan.step_names();
    // A journal that cannot be written (no space, a read-only file system) fails the run
    // before any change, as a step would.
    let mut txn = Txn::begin(root, &names).map_err(|e| match crate::error::find(&e) {
        Some(Error::Io { source, .. }) if is_storage_failure(source) => Error::StepFailed(format!(
            "cannot start the run: {}\nNothing was changed.",
            crate::error::one_line(&e)
        ))
        .into(),
        _ => e,
    })?;
    let mut ctx = ActionCtx {
        cache,
        patches,
        progress,
        tools,
        deferred: Vec::new(),
    };
    for step in &plan.steps {
        if progress.shown() {
            eprintln!("== {}: {}", step.step, step.summary);
        }
        let result = step
            .actions
            .iter()
            .try_for_each(|a| run_action(&mut txn, &step.step, a, &mut ctx));
        if let Err(err) = result {
            let id = txn.id().to_string();
            let err = crate::error::one_line(&err);
            return match txn.abort() {
                Ok(()) => Err(Error::StepFailed(format!(
                        "step {} failed: {err}\nEverything this run changed was put back (transaction {id}).",
                        step.step
                    )).into()),
                Err(undo) => Err(Error::RollbackIncomplete(format!("step {} failed: {err}\nand undoing it failed too: {}\n`{}` shows what is left", step.step, crate::error::one_line(&undo), tools.hint.read_only("setup", "--status", false))).into()),
            };
        }
        fault::step_done(&step.step);
    }
    let applied = txn.commit()?;
    Ok(Outcome {
        transaction: applied.id,
        steps: names,
        changed: applied.entries.iter().map(|e| e.path.clone()).collect(),
        deferred: ctx.deferred,
    })
}

/// No space left, a quota reached, a read-only file system, an I/O error: the storage under
/// the root failed, not rvl's input or its permissions.
fn is_storage_failure(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.raw_os_error().is_some_and(|n| {
        [Errno::NOSPC, Errno::ROFS, Errno::DQUOT, Errno::IO]
            .iter()
            .any(|x| x.raw_os_error() == n)
    })
}

/// What every action may need besides the transaction.
struct ActionCtx<'a> {
    cache: &'a Cache,
    patches: &'a Series,
    progress: Progress,
    tools: &'a Tools,
    deferred: Vec<String>,
}

fn run_action(
    txn: &mut Txn,
    step: &str,
    action: &Action,
    ctx: &mut ActionCtx,
) -> anyhow::Result<()> {
    let (cache, patches, progress) = (ctx.cache, ctx.patches, ctx.progress);
    match action {
        Action::WriteFile {
            path,
            mode,
            content,
            ..
        } => txn.write_file(path, content.as_bytes(), *mode, step),
        Action::InstallOverlay { path, dtb, .. } => txn.write_file(path, dtb, 0o644, step),
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
            on_board,
            ..
        } => {
            for c in changes {
                txn.record(c, step)?;
            }
            // The plan said where the tool runs; apply does just that (and still fails a
            // tool the image does not have).
            match (how_to_run(txn.root(), tool, ctx.tools)?, on_board) {
                (ToolRun::Program(program), false) => {
                    run_tool_program(txn.root(), tool, &program, args)?
                }
                (ToolRun::NotRun(why), true) => {
                    let cmd = shell_line(tool, args);
                    ctx.deferred.push(format!(
                        "{step}: `{cmd}` was not run ({why}); run `sudo {cmd}` on the board once it is booted from this image"
                    ));
                    return Ok(());
                }
                (_, on_board) => {
                    return Err(Error::Internal(format!(
                        "the plan has `{tool}` run {}, apply found otherwise",
                        if *on_board { "on the board" } else { "here" }
                    ))
                    .into())
                }
            }
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
            toolchain,
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
                toolchain,
            };
            build_source(txn, step, &spec, &tarball, patches.get(project), progress)
        }
        Action::InstallPackages { packages, .. } => {
            if let Some(deferred) =
                buildtools::install_packages(txn.root(), packages, ctx.tools, progress)?
            {
                ctx.deferred.push(deferred);
            }
            Ok(())
        }
        Action::BuildTool {
            tool,
            version,
            dir,
            archives,
        } => buildtools::build_tool(txn.root(), *tool, version, dir, archives, cache, progress),
        Action::InstallPrebuilt {
            url,
            sha256,
            prefix,
            ..
        } => {
            let archive_path = cached(cache, sha256)?.clone();
            install_prefix_archive(txn, step, &archive_path, sha256, prefix, None, url)
        }
        Action::InstallArchive {
            archive,
            version,
            prefix,
        } => {
            let archive_path = cached(cache, &archive.sha256)?.clone();
            install_prefix_archive(
                txn,
                step,
                &archive_path,
                &archive.sha256,
                prefix,
                Some(version),
                &archive.file,
            )
        }
    }
}

fn cached<'a>(cache: &'a Cache, sha256: &str) -> anyhow::Result<&'a PathBuf> {
    cache
        .get(sha256)
        .ok_or_else(|| Error::Internal(format!("artifact {sha256} was not downloaded")).into())
}

/// Where a system tool comes from, or why it is not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRun {
    /// A host program: from PATH on the live system, or a stand-in from `RVL_ROOT_TOOLS`.
    Program(PathBuf),
    /// The tool belongs to the image and cannot run inside it from here.
    NotRun(String),
}

/// How `tool` runs for `root`. On the live system it comes from PATH. Under `--root`, the
/// image's own program is never executed on this machine: it would run as root with this
/// machine's /boot (and may be anything the image's author put there). Only stand-ins the caller
/// named (`RVL_ROOT_TOOLS`) run, with `RVL_ROOT`; otherwise the tool is left for the board.
pub fn how_to_run(root: &Root, tool: &str, tools: &Tools) -> anyhow::Result<ToolRun> {
    if root.is_live() {
        return which::which(tool).map(ToolRun::Program).map_err(|_| {
            Error::Unsupported(format!("`{tool}` is not installed (not found on PATH)")).into()
        });
    }
    if let Some(dir) = &tools.stand_ins {
        let p = dir.join(tool);
        if p.is_file() {
            return Ok(ToolRun::Program(p));
        }
    }
    let in_image = ROOT_PATH
        .iter()
        .map(|d| format!("{d}/{tool}"))
        .find(|p| !root.is_dir(p) && root.exists(p));
    let Some(in_image) = in_image else {
        return Err(Error::Unsupported(format!(
            "`{tool}` is not installed in {} (looked in {})",
            root.base().display(),
            ROOT_PATH.join(", ")
        ))
        .into());
    };
    Ok(ToolRun::NotRun(format!(
        "{in_image} is the image's own program, and rvl never runs an image's programs on this machine"
    )))
}

/// Most bytes of `apt-cache policy` output read (rvl asks about fewer than 60 packages).
const APT_POLICY_CAP: usize = 1 << 20;

/// The image's `apt-cache policy NAMES` (C locale), or None when its apt cannot be asked here:
/// not a Debian-family system, or under `--root` without a stand-in (the image's own apt-cache
/// is never run on this machine).
pub fn apt_policy(root: &Root, tools: &Tools, names: &[String]) -> Option<String> {
    let ToolRun::Program(program) = how_to_run(root, "apt-cache", tools).ok()? else {
        return None;
    };
    let mut cmd = Command::new(program);
    cmd.arg("policy")
        .args(names)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null());
    if !root.is_live() {
        let base = fs::canonicalize(root.base()).unwrap_or_else(|_| root.base().to_path_buf());
        cmd.env("RVL_ROOT", base);
    }
    let out = cmd.output().ok()?;
    if !out.status.success() || out.stdout.len() > APT_POLICY_CAP {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

/// `tool args`, each word shell-quoted when it needs it (for the command a person runs).
fn shell_line(tool: &str, args: &[String]) -> String {
    std::iter::once(tool)
        .chain(args.iter().map(String::as_str))
        .map(crate::shell::quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `tool` (live or a stand-in for a root), failing with what it said.
pub fn run_tool(root: &Root, tool: &str, args: &[String], tools: &Tools) -> anyhow::Result<()> {
    match how_to_run(root, tool, tools)? {
        ToolRun::Program(p) => run_tool_program(root, tool, &p, args),
        ToolRun::NotRun(why) => Err(Error::Unsupported(format!(
            "`{tool}` was not run: {why}; run it on the board"
        ))
        .into()),
    }
}

fn run_tool_program(
    root: &Root,
    tool: &str,
    program: &Path,
    args: &[String],
) -> anyhow::Result<()> {
    // Absolute paths: the tool runs in the root's directory, where a relative --root is wrong.
    let program = fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
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
    toolchain: &'a Toolchain,
}

/// Name of the file in a kept work directory that says what it was made from.
const WORK_KEY: &str = ".rvl-key";

/// Whether `work_at` holds a configured build of exactly `key` (an interrupted run's), which
/// the next run resumes instead of unpacking and configuring again.
pub fn resumable(root: &Root, work_at: &Path, key: &str) -> bool {
    let stored = fsops::read(root, &work_at.join(WORK_KEY), 4096).ok();
    stored.as_deref() == Some(key.as_bytes())
        && matches!(
            fsops::probe(root, &work_at.join("build/build.ninja")),
            Ok(fsops::Node::File(_))
        )
}

/// Say, in the log and on stderr, that a build goes on in the kept `work` directory.
pub fn note_resume(log: &Path, work: &Path, label: &str, progress: Progress) -> anyhow::Result<()> {
    let mut f = fs::OpenOptions::new().append(true).create(true).open(log)?;
    writeln!(
        f,
        "== resuming the build in {} (an earlier run was interrupted)",
        work.display()
    )?;
    if progress.shown() {
        eprintln!(
            "{label}: resuming the interrupted build in {}",
            work.display()
        );
    }
    Ok(())
}

/// Record what `work_at` is made from (after unpacking and patching, before configure).
pub fn write_key(root: &Root, work_at: &Path, key: &str) -> anyhow::Result<()> {
    let path = work_at.join(WORK_KEY);
    let mut f = fsops::create_file(root, &path)
        .map_err(|e| Error::io("cannot create", root.join(&path), e))?;
    f.write_all(key.as_bytes())?;
    Ok(())
}

/// What a build's work directory is made from: the archive, the series, the options and the
/// toolchain (a change to any of them starts over).
fn work_key(s: &SourceSpec, series: &[Patch]) -> String {
    let text = serde_json::json!({
        "source": s.sha256,
        "patches": series.iter().map(|p| crate::digest::sha256_hex(&p.data)).collect::<Vec<_>>(),
        "options": s.options,
        "toolchain": s.toolchain,
    });
    crate::digest::sha256_hex(text.to_string().as_bytes())
}

/// The staging directory for a prefix (in-root): next to it, so moving it into place is one
/// rename. Made fresh, with no link on the way (the prefix's parents resolved as the journal
/// records them), so unpacking and `DESTDIR` installs stay inside the root.
fn make_stage(txn: &Txn, prefix: &str) -> anyhow::Result<PathBuf> {
    let p = PathBuf::from(txn.canonical(prefix)?);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stage = p
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!(".stage-{name}"));
    let host = txn.root().join(&stage);
    fsops::remove_all(txn.root(), &stage).map_err(|e| Error::io("cannot clear", &host, e))?;
    fsops::create_dirs(txn.root(), &stage).map_err(|e| Error::io("cannot create", &host, e))?;
    Ok(stage)
}

/// Unpack a prebuilt panvk prefix (`lib/libvulkan_panfrost.so`, and the build stamp the build
/// script wrote) into a stage, check it, record where it came from in its stamp, and rename it
/// into place. `version`: the Mesa the archive's own stamp must name (a `--mesa-archive`
/// must carry one; the manifest's archives are pinned and may not).
fn install_prefix_archive(
    txn: &mut Txn,
    step: &str,
    archive_path: &Path,
    sha256: &str,
    prefix: &str,
    version: Option<&str>,
    from: &str,
) -> anyhow::Result<()> {
    txn.ensure_parent(prefix, step)?;
    let stage = make_stage(txn, prefix)?;
    let result = (|| {
        let staged = stage.join("prefix");
        let host = txn.root().join(&staged);
        archive::unpack(archive_path, &host)?;
        let _ = &host;
        let lib = staged.join("lib").join(crate::icd::PANVK_LIBRARY);
        if !matches!(fsops::probe(txn.root(), &lib), Ok(fsops::Node::File(_))) {
            return Err(Error::BadInput(format!(
                "{from}: not a panvk prefix (no lib/{} at its top)",
                crate::icd::PANVK_LIBRARY
            ))
            .into());
        }
        let stamp_at = staged.join(paths::BUILD_STAMP);
        let own = fsops::read(txn.root(), &stamp_at, 1 << 20).ok();
        let mut stamp = match own.as_deref().map(serde_json::from_slice::<serde_json::Value>) {
            Some(Ok(v @ serde_json::Value::Object(_))) => v,
            Some(_) => {
                return Err(Error::BadInput(format!(
                    "{from}: {} is not a JSON object",
                    paths::BUILD_STAMP
                ))
                .into())
            }
            None if version.is_some() => {
                return Err(Error::BadInput(format!(
                    "{from}: has no {} (scripts/build-panvk-deb.sh writes it: which Mesa, which patches)",
                    paths::BUILD_STAMP
                ))
                .into())
            }
            None => serde_json::json!({"project": "mesa"}),
        };
        if let Some(want) = version {
            let (project, got) = (&stamp["project"], &stamp["version"]);
            if project != "mesa" || got != want {
                return Err(Error::BadInput(format!(
                    "{from}: its {} names {} {}, not mesa {want} (the manifest's Mesa)",
                    paths::BUILD_STAMP,
                    project
                        .as_str()
                        .map(crate::output::escape_control)
                        .unwrap_or_else(|| "no project".into()),
                    got.as_str()
                        .map(crate::output::escape_control)
                        .unwrap_or_else(|| "no version".into()),
                ))
                .into());
            }
        }
        stamp["prebuilt"] = serde_json::json!({"sha256": sha256, "from": from});
        // Through the root's no-link rules: the archive's own stamp may have been a link.
        fsops::remove_all(txn.root(), &stamp_at)
            .map_err(|e| Error::io("cannot replace", txn.root().join(&stamp_at), e))?;
        if let Some(dir) = stamp_at.parent() {
            fsops::create_dirs(txn.root(), dir)
                .map_err(|e| Error::io("cannot create", txn.root().join(dir), e))?;
        }
        let mut f = fsops::create_file(txn.root(), &stamp_at)
            .map_err(|e| Error::io("cannot create", txn.root().join(&stamp_at), e))?;
        f.write_all(&serde_json::to_vec_pretty(&stamp)?)?;
        drop(f);
        txn.install_tree(&staged, prefix, step)
    })();
    let _ = fsops::remove_all(txn.root(), &stage);
    result
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
    let root = txn.root().clone();
    let label = format!("{}-{}", s.project, s.version);
    let work_at = state.path(&format!("work/{label}"));
    let work = root.join(&work_at);
    state.ensure_dir("logs")?;
    state.ensure_dir("work")?;
    let log_at = state.path(&format!("logs/{label}.log"));
    let log_path = root.join(&log_at);
    let key = work_key(s, series);
    let resume = resumable(&root, &work_at, &key);
    if !resume {
        fsops::remove_all(&root, &work_at).map_err(|e| Error::io("cannot clear", &work, e))?;
    }
    txn.ensure_parent(s.prefix, step)?;
    let stage_at = make_stage(txn, s.prefix)?;
    let stage = root.join(&stage_at);
    let result = (|| {
        let brought: &[&str] = if s.toolchain.meson.is_some() {
            &["meson"]
        } else {
            &[]
        };
        builder::check_tools_except(&[s.system], brought)?;
        let tree = work.join("src").join(s.tree);
        if resume {
            note_resume(&log_path, &work, &label, progress)?;
        } else {
            if progress.shown() {
                eprintln!("{label}: unpacking {}", tarball.display());
            }
            archive::unpack(tarball, &work.join("src"))?;
            if !tree.is_dir() {
                return Err(Error::Manifest(format!(
                    "{}: has no top directory `{}` (manifest `tree`)",
                    tarball.display(),
                    s.tree
                ))
                .into());
            }
            let mut log = fsops::create_file(&root, &log_at)
                .map_err(|e| Error::io("cannot create", &log_path, e))?;
            writeln!(log, "rvl setup: {label} from {}", tarball.display())?;
            patches::apply(&tree, series, &mut log)?;
            drop(log);
            write_key(&root, &work_at, &key)?;
        }
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
            tuning: tuning(&root, &work, s.toolchain, resume)?,
        };
        b.run(&label)?;
        let staged_at = stage_at.join(s.prefix.trim_start_matches('/'));
        let staged = root.join(&staged_at);
        if !staged.is_dir() {
            return Err(Error::Tool(format!(
                "{label}: the install step put nothing into {} (log: {})",
                s.prefix,
                log_path.display()
            ))
            .into());
        }
        let mut stamp = serde_json::json!({
            "project": s.project,
            "version": s.version,
            "source_sha256": s.sha256,
            "patches": series.iter().map(|p| serde_json::json!({
                "name": p.name,
                "sha256": crate::digest::sha256_hex(&p.data),
            })).collect::<Vec<_>>(),
            "options": s.options,
        });
        if s.project == "llama.cpp" {
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            if let Some(int_dot) = crate::llama::int_dot_from_log(&log) {
                stamp["int_dot_matmul"] = serde_json::json!(int_dot);
            }
        }
        install_build_only(
            &root,
            &work_at.join("build/bin"),
            &staged_at.join("bin"),
            s.project,
        )
        .map_err(|e| Error::Tool(format!("{label}: {e} (log: {})", log_path.display())))?;
        for bin in steps::required_binaries(s.project) {
            if !staged.join("bin").join(bin).is_file() {
                return Err(Error::Tool(format!(
                    "{label}: the build installed no bin/{bin} into {} (log: {})",
                    s.prefix,
                    log_path.display()
                ))
                .into());
            }
        }
        write_stamp(&staged, &stamp)?;
        txn.install_tree(&staged_at, s.prefix, step)
    })();
    let _ = fsops::remove_all(&root, &stage_at);
    match &result {
        // A tool killed by a signal (Ctrl-C): keep the configured build for the next run.
        Err(e) if e.chain().any(|c| c.is::<builder::Interrupted>()) => {
            return result.map_err(|e| {
                e.context(format!(
                    "the next `rvl setup` resumes the build in {}",
                    work.display()
                ))
            })
        }
        _ => {
            let _ = fsops::remove_all(&root, &work_at);
        }
    }
    result
}

/// The builder's tuning for a toolchain: the venv's meson, a native file naming the chosen
/// llvm-config, and SPIRV-Tools' pkg-config directory first on `PKG_CONFIG_PATH`. Tool paths
/// are the target's, read through the root (the same paths on the board itself).
fn tuning(
    root: &Root,
    work: &Path,
    tc: &Toolchain,
    resume: bool,
) -> anyhow::Result<builder::Tuning> {
    let mut t = builder::Tuning {
        resume,
        ..builder::Tuning::default()
    };
    t.meson = tc.meson.as_ref().map(|m| root.join(m));
    if let Some(llvm) = &tc.llvm_config {
        let native = work.join("native.ini");
        let text = format!(
            "# Written by rvl setup: the LLVM the release's packages provide.\n[binaries]\nllvm-config = '{}'\n",
            root.join(llvm).display()
        );
        fs::write(&native, text).map_err(|e| Error::io("cannot write", &native, e))?;
        t.native_file = Some(native);
    }
    if !tc.pkg_config_path.is_empty() {
        let mut dirs: Vec<String> = tc
            .pkg_config_path
            .iter()
            .map(|d| root.join(d).to_string_lossy().into_owned())
            .collect();
        if let Ok(old) = std::env::var("PKG_CONFIG_PATH") {
            dirs.push(old);
        }
        t.env.push(("PKG_CONFIG_PATH".into(), dirs.join(":")));
    }
    Ok(t)
}

/// Copy what the build made but `cmake --install` leaves out (llama.cpp's test-backend-ops)
/// from the build's `bin/` into the staged prefix's `bin/`, 0755. Both are in-root paths in
/// setup's own work and stage directories; a link at either name is refused, not followed.
fn install_build_only(
    root: &Root,
    from_dir: &Path,
    to_dir: &Path,
    project: &str,
) -> Result<(), String> {
    let names = steps::build_only_binaries(project);
    if names.is_empty() {
        return Ok(());
    }
    fsops::create_dirs(root, to_dir)
        .map_err(|e| format!("cannot create {}: {e}", root.join(to_dir).display()))?;
    for name in names {
        let host = root.join(from_dir.join(name));
        if !fs::symlink_metadata(&host).is_ok_and(|m| m.is_file()) {
            return Err(format!(
                "the build made no {name} (looked for {})",
                host.display()
            ));
        }
        let data = fs::read(&host).map_err(|e| format!("cannot read {}: {e}", host.display()))?;
        let dest = to_dir.join(name);
        let shown = root.join(&dest);
        if fs::symlink_metadata(&shown).is_ok_and(|m| m.is_file()) {
            continue; // a newer release installs it itself
        }
        let mut file = fsops::create_file(root, &dest)
            .map_err(|e| format!("cannot create {}: {e}", shown.display()))?;
        file.write_all(&data)
            .and_then(|()| {
                file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
            })
            .map_err(|e| format!("cannot write {}: {e}", shown.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};

    #[test]
    fn cache_names_are_the_sha256_and_the_archive_suffix_only() {
        let sha = "a".repeat(64);
        assert_eq!(
            cache_name("https://git.kernel.org/x/mali_csffw.bin?id=930e", &sha),
            sha
        );
        assert_eq!(cache_name("https://h/", &sha), sha);
        assert_eq!(
            cache_name("https://h/mesa-26.1.6.tar.xz", &sha),
            format!("{sha}.tar.xz")
        );
        let long = format!("https://h/{}.tar.gz", "x".repeat(300));
        assert_eq!(cache_name(&long, &sha), format!("{sha}.tar.gz"));
        assert!(cache_name(&long, &sha).len() <= 255);
    }

    #[test]
    fn an_image_tool_is_never_run_on_this_machine_but_a_named_stand_in_is() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let none = Tools::default();
        let err = run_tool(&root, "u-boot-update", &[], &none).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::UNSUPPORTED);
        fs::create_dir_all(d.path().join("usr/sbin")).unwrap();
        let marker = d.path().join("ran");
        let script = d.path().join("usr/sbin/u-boot-update");
        // It even says RVL_ROOT: that no longer makes it trusted.
        fs::write(
            &script,
            format!("#!/bin/sh\n: \"$RVL_ROOT\"\ntouch {}\n", marker.display()),
        )
        .unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(
            how_to_run(&root, "u-boot-update", &none).unwrap(),
            ToolRun::NotRun(_)
        ));
        assert!(run_tool(&root, "u-boot-update", &[], &none).is_err());
        assert!(!marker.exists());
        // A stand-in the caller named runs, with RVL_ROOT, and what it says on failure is kept.
        let bin = tempfile::tempdir().unwrap();
        let stand_in = bin.path().join("u-boot-update");
        fs::write(
            &stand_in,
            "#!/bin/sh\necho \"$RVL_ROOT\" > \"$RVL_ROOT/ran\"\necho 'E: need root privileges' >&2\nexit 1\n",
        )
        .unwrap();
        fs::set_permissions(&stand_in, fs::Permissions::from_mode(0o755)).unwrap();
        let tools = Tools {
            stand_ins: Some(bin.path().to_path_buf()),
            hint: Default::default(),
        };
        let err = run_tool(&root, "u-boot-update", &[], &tools)
            .unwrap_err()
            .to_string();
        assert!(err.contains("need root privileges"), "{err}");
        assert_eq!(
            fs::read_to_string(&marker).unwrap().trim(),
            fs::canonicalize(d.path()).unwrap().to_string_lossy()
        );
    }

    #[test]
    fn commands_for_people_are_shell_quoted() {
        assert_eq!(
            shell_line(
                "update-initramfs",
                &["-u".into(), "-k".into(), "7.0".into()]
            ),
            "update-initramfs -u -k 7.0"
        );
        assert_eq!(
            shell_line("t", &["x;reboot;#".into(), "it's".into()]),
            "t 'x;reboot;#' 'it'\\''s'"
        );
    }
}
