//! `Root`: the one door to the file system. Every read (and, in setup, every write) of a system
//! path goes through it, so `--root DIR` runs the whole tool against a fake tree.
//!
//! Paths handed to a `Root` are *in-root* absolute paths ("/sys/class/drm"). Symbolic links are
//! followed inside the root: an absolute target ("/sys/firmware/devicetree/base") is taken
//! relative to the root, and `..` never climbs above it. That is what `chroot` would do, and it is
//! what makes a fixture tree with real kernel-style links behave like the live system.
//!
//! Low in the crate: imports only [`crate::hint`] (for the command line that names a root).
//! Its one error, [`RootError`], is collected by [`crate::error::Error`] as a usage error.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Links followed while resolving one path before giving up (Linux uses 40 too).
const MAX_LINK_HOPS: usize = 40;

/// Why a root cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RootError {
    /// `--root DIR` names something that is not a directory (or nothing).
    #[error("--root {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
}

#[derive(Debug, Clone)]
pub struct Root {
    base: PathBuf,
    live: bool,
}

impl Root {
    pub fn new(base: impl Into<PathBuf>) -> Self {
        let base = base.into();
        let live = fs::canonicalize(&base)
            .map(|p| p == Path::new("/"))
            .unwrap_or(false);
        Root { base, live }
    }

    /// The root `--root DIR` names; a DIR that is not a directory is an error naming it.
    pub fn open_dir(base: impl Into<PathBuf>) -> Result<Self, RootError> {
        let root = Root::new(base);
        if !root.base().is_dir() {
            return Err(RootError::NotADirectory(root.base));
        }
        Ok(root)
    }

    /// The running system ("/").
    pub fn system() -> Self {
        Root::new("/")
    }

    /// The directory this root stands for on the host.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// True when this root is the real "/" (live ioctls, env and user checks make sense).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Whether changing this tree takes root: the running system, or a tree another user
    /// owns, unless rvl runs as root already. A `--root` tree the user owns needs no `sudo`.
    pub fn needs_root_to_change(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let uid = rustix::process::geteuid();
        if uid.is_root() {
            return false;
        }
        self.live || !fs::metadata(&self.base).is_ok_and(|m| m.uid() == uid.as_raw())
    }

    /// How a printed command names this root: `--root DIR` as given, none for "/".
    pub fn invocation(
        &self,
        board: Option<&str>,
        profiles: Option<&Path>,
        manifest: Option<&Path>,
    ) -> crate::hint::Invocation {
        crate::hint::Invocation::new(
            (!self.live).then_some(self.base.as_path()),
            board,
            profiles,
            manifest,
            self.needs_root_to_change(),
        )
    }

    /// Host path of an in-root path, without following any link.
    pub fn join(&self, in_root: impl AsRef<Path>) -> PathBuf {
        let mut out = self.base.clone();
        for c in in_root.as_ref().components() {
            match c {
                Component::Normal(n) => out.push(n),
                // Lexical `..`, never above the base: callers that care about links use `resolve`.
                Component::ParentDir if out != self.base => {
                    out.pop();
                }
                _ => {}
            }
        }
        out
    }

    /// The in-root absolute path that `in_root` names once every link is followed inside the
    /// root. Components that do not exist are kept as written (so a dangling link resolves to
    /// where it points, and reading it then fails with NotFound).
    pub fn canonicalize(&self, in_root: impl AsRef<Path>) -> io::Result<PathBuf> {
        let mut resolved: Vec<OsString> = Vec::new();
        let mut pending: VecDeque<OsString> = VecDeque::new();
        push_components(&mut pending, in_root.as_ref(), &mut resolved, false);
        let mut hops = 0usize;
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                resolved.pop();
                continue;
            }
            resolved.push(name);
            let host = self.host_path(&resolved);
            let is_link = fs::symlink_metadata(&host)
                .map(|m| m.file_type().is_symlink())
                .unwrap_or(false);
            if !is_link {
                continue;
            }
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(io::Error::other(format!(
                    "too many levels of symbolic links under {}",
                    in_root.as_ref().display()
                )));
            }
            let target = fs::read_link(&host)?;
            resolved.pop();
            // The target's components go first, then whatever was still pending.
            let mut front = VecDeque::new();
            push_components(&mut front, &target, &mut resolved, true);
            front.append(&mut pending);
            pending = front;
        }
        let mut out = PathBuf::from("/");
        out.extend(resolved);
        Ok(out)
    }

    /// Host path of an in-root path after following links inside the root.
    pub fn resolve(&self, in_root: impl AsRef<Path>) -> io::Result<PathBuf> {
        Ok(self.join(self.canonicalize(in_root)?))
    }

    pub fn exists(&self, in_root: impl AsRef<Path>) -> bool {
        self.resolve(in_root)
            .map(|p| fs::metadata(p).is_ok())
            .unwrap_or(false)
    }

    pub fn is_dir(&self, in_root: impl AsRef<Path>) -> bool {
        self.resolve(in_root).map(|p| p.is_dir()).unwrap_or(false)
    }

    /// Metadata of the file a path names, links followed inside the root.
    pub fn metadata(&self, in_root: impl AsRef<Path>) -> io::Result<fs::Metadata> {
        fs::metadata(self.resolve(in_root)?)
    }

    /// Metadata of the path itself (a link is not followed), its parents resolved.
    pub fn symlink_metadata(&self, in_root: impl AsRef<Path>) -> io::Result<fs::Metadata> {
        fs::symlink_metadata(self.resolve_parent(in_root.as_ref())?)
    }

    /// The raw target of a link, as `readlink` prints it. Parents are resolved first.
    pub fn read_link(&self, in_root: impl AsRef<Path>) -> io::Result<PathBuf> {
        fs::read_link(self.resolve_parent(in_root.as_ref())?)
    }

    /// Whole file, at most `cap` bytes (larger files are an error, not a truncation).
    pub fn read_capped(&self, in_root: impl AsRef<Path>, cap: u64) -> io::Result<Vec<u8>> {
        let in_root = in_root.as_ref();
        let path = self.resolve(in_root)?;
        read_regular(&path, cap).map_err(|e| named(e, in_root))
    }

    /// Whole file (capped at 16 MiB: sysfs, config and JSON files are tiny).
    pub fn read(&self, in_root: impl AsRef<Path>) -> io::Result<Vec<u8>> {
        self.read_capped(in_root, 16 << 20)
    }

    /// Whole file as text; invalid UTF-8 is replaced, never an error.
    pub fn read_string(&self, in_root: impl AsRef<Path>) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.read(in_root)?).into_owned())
    }

    /// Names in a directory, sorted, so output and checks are deterministic.
    pub fn list_dir(&self, in_root: impl AsRef<Path>) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = fs::read_dir(self.resolve(in_root)?)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn host_path(&self, resolved: &[OsString]) -> PathBuf {
        let mut p = self.base.clone();
        p.extend(resolved);
        p
    }

    /// The in-root path with its parent directories resolved (links followed inside the root)
    /// and the last component kept as written: the path a write or a rename must use, so that
    /// a link in a parent (`/lib -> usr/lib`) is honoured and a link at the end is replaced.
    pub fn canonicalize_parent(&self, in_root: impl AsRef<Path>) -> io::Result<PathBuf> {
        let in_root = in_root.as_ref();
        match (in_root.parent(), in_root.file_name()) {
            (Some(parent), Some(name)) => Ok(self.canonicalize(parent)?.join(name)),
            _ => Ok(PathBuf::from("/")),
        }
    }

    fn resolve_parent(&self, in_root: &Path) -> io::Result<PathBuf> {
        match (in_root.parent(), in_root.file_name()) {
            (Some(parent), Some(name)) => Ok(self.resolve(parent)?.join(name)),
            _ => Ok(self.join(in_root)),
        }
    }
}

/// Cap for the files rvl is handed by name rather than reads from a system tree (`--manifest`,
/// `--profiles`, `--compare`, setup's journal and state): each is a few KiB of YAML or JSON.
pub const INPUT_CAP: u64 = 16 << 20;

/// Whole regular file at a host path, at most `cap` bytes: the one read for every file, in a
/// root or named on the command line. The open is O_NONBLOCK so a FIFO planted where a file
/// belongs cannot hang it; anything but a regular file (FIFO, `/dev/zero`, a directory) is
/// refused after an fstat of the open file (no race with a swap); a larger file is an error,
/// not a truncation, and at most `cap + 1` bytes are ever read.
pub fn read_regular(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let (mut file, meta) = open_regular(path)?;
    if meta.len() > cap {
        return Err(too_large(path, cap));
    }
    let mut buf = Vec::new();
    file.by_ref().take(cap + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(too_large(path, cap));
    }
    Ok(buf)
}

/// The first `n` bytes (fewer when the file is shorter) of a regular file at a host path and
/// the file's size, with [`read_regular`]'s guards: a file's magic, without reading a model of
/// gigabytes.
pub fn read_head(path: &Path, n: usize) -> io::Result<(Vec<u8>, u64)> {
    let (file, meta) = open_regular(path)?;
    let mut buf = Vec::with_capacity(n);
    file.take(n as u64).read_to_end(&mut buf)?;
    Ok((buf, meta.len()))
}

/// A regular file at a host path, opened for reading without blocking (a FIFO planted there
/// neither hangs the open nor is read), with its metadata; anything else is an error naming it.
pub fn open_regular(path: &Path) -> io::Result<(fs::File, fs::Metadata)> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok((file, meta))
}

/// [`read_regular`] as text; invalid UTF-8 is an error naming the file (YAML and JSON inputs).
pub fn read_regular_string(path: &Path, cap: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, cap)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not valid UTF-8", path.display()),
        )
    })
}

fn too_large(path: &Path, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("{} is larger than {} bytes", path.display(), cap),
    )
}

/// An IO error in words for a finding: "permission denied", "too large (…)", the rest as is.
pub fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        io::ErrorKind::FileTooLarge => {
            let msg = e.to_string();
            match msg.rsplit_once(" is larger than ") {
                Some((_, cap)) => format!("too large (more than {cap})"),
                None => format!("too large ({msg})"),
            }
        }
        io::ErrorKind::InvalidInput if e.to_string().ends_with("is not a regular file") => {
            "not a regular file".to_string()
        }
        _ => e.to_string(),
    }
}

/// The same error, the host path in its message replaced by the in-root one.
fn named(e: io::Error, in_root: &Path) -> io::Error {
    match e.kind() {
        io::ErrorKind::InvalidInput => io::Error::new(
            e.kind(),
            format!("{} is not a regular file", in_root.display()),
        ),
        io::ErrorKind::FileTooLarge => {
            let msg = e.to_string();
            let cap = msg.rsplit(" than ").next().unwrap_or("");
            io::Error::new(
                e.kind(),
                format!("{} is larger than {cap}", in_root.display()),
            )
        }
        _ => e,
    }
}

/// Queue the components of `path`. An absolute path restarts from the root (`resolved` is
/// cleared when `rebase` is set, i.e. for link targets).
fn push_components(
    queue: &mut VecDeque<OsString>,
    path: &Path,
    resolved: &mut Vec<OsString>,
    rebase: bool,
) {
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                if rebase {
                    resolved.clear();
                }
            }
            Component::CurDir => {}
            Component::ParentDir => queue.push_back(OsString::from("..")),
            Component::Normal(n) => queue.push_back(n.to_os_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        fs::create_dir_all(b.join("sys/firmware/devicetree/base")).unwrap();
        fs::write(b.join("sys/firmware/devicetree/base/model"), b"Board\0").unwrap();
        fs::create_dir_all(b.join("proc")).unwrap();
        symlink("/sys/firmware/devicetree/base", b.join("proc/device-tree")).unwrap();
        fs::create_dir_all(b.join("sys/devices/platform/fb000000.gpu")).unwrap();
        fs::create_dir_all(b.join("sys/bus/platform/devices")).unwrap();
        fs::create_dir_all(b.join("sys/bus/platform/drivers/panthor")).unwrap();
        symlink(
            "../../../devices/platform/fb000000.gpu",
            b.join("sys/bus/platform/devices/fb000000.gpu"),
        )
        .unwrap();
        symlink(
            "../../../bus/platform/drivers/panthor",
            b.join("sys/devices/platform/fb000000.gpu/driver"),
        )
        .unwrap();
        let root = Root::new(b);
        (dir, root)
    }

    #[test]
    fn absolute_link_targets_stay_inside_the_root() {
        let (_d, root) = tree();
        assert_eq!(
            root.canonicalize("/proc/device-tree/model").unwrap(),
            PathBuf::from("/sys/firmware/devicetree/base/model")
        );
        assert_eq!(root.read("/proc/device-tree/model").unwrap(), b"Board\0");
    }

    #[test]
    fn relative_links_chain_through_parents() {
        let (_d, root) = tree();
        assert_eq!(
            root.canonicalize("/sys/bus/platform/devices/fb000000.gpu/driver")
                .unwrap(),
            PathBuf::from("/sys/bus/platform/drivers/panthor")
        );
        assert_eq!(
            root.read_link("/sys/bus/platform/devices/fb000000.gpu/driver")
                .unwrap(),
            PathBuf::from("../../../bus/platform/drivers/panthor")
        );
    }

    #[test]
    fn dotdot_never_climbs_above_the_root() {
        let (d, root) = tree();
        symlink("../../../../../../etc", d.path().join("proc/escape")).unwrap();
        assert_eq!(
            root.canonicalize("/proc/escape/passwd").unwrap(),
            PathBuf::from("/etc/passwd")
        );
        assert!(root.resolve("/proc/escape").unwrap().starts_with(d.path()));
    }

    #[test]
    fn link_loops_are_an_error_not_a_hang() {
        let (d, root) = tree();
        symlink("b", d.path().join("a")).unwrap();
        symlink("a", d.path().join("b")).unwrap();
        assert!(root.canonicalize("/a").is_err());
        assert!(root.read("/a").is_err());
    }

    #[test]
    fn dangling_links_resolve_and_then_fail_to_read() {
        let (d, root) = tree();
        symlink("/nowhere/file", d.path().join("dangling")).unwrap();
        assert_eq!(
            root.canonicalize("/dangling").unwrap(),
            PathBuf::from("/nowhere/file")
        );
        assert!(!root.exists("/dangling"));
        assert_eq!(
            root.read("/dangling").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn read_capped_refuses_larger_files() {
        let (d, root) = tree();
        fs::write(d.path().join("big"), vec![0u8; 100]).unwrap();
        assert!(root.read_capped("/big", 99).is_err());
        assert_eq!(root.read_capped("/big", 100).unwrap().len(), 100);
    }

    #[test]
    fn canonicalize_parent_keeps_the_last_link() {
        let (d, root) = tree();
        symlink("/sys/firmware", d.path().join("fw")).unwrap();
        symlink("devicetree", d.path().join("sys/firmware/dt")).unwrap();
        assert_eq!(
            root.canonicalize_parent("/fw/dt").unwrap(),
            PathBuf::from("/sys/firmware/dt")
        );
    }

    #[test]
    fn fifos_and_directories_are_refused_without_blocking() {
        let (d, root) = tree();
        let status = std::process::Command::new("mkfifo")
            .arg(d.path().join("fifo"))
            .status()
            .unwrap();
        assert!(status.success());
        assert!(root.read("/fifo").is_err());
        assert!(root.read("/sys").is_err());
    }

    #[test]
    fn read_regular_refuses_a_fifo_and_dev_zero_without_blocking_or_filling_memory() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = read_regular(&fifo, 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let err = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        fs::write(d.path().join("big"), vec![b'a'; 11]).unwrap();
        let err = read_regular(&d.path().join("big"), 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("larger than 10 bytes"), "{err}");
        assert_eq!(read_regular(&d.path().join("big"), 11).unwrap().len(), 11);
    }

    #[test]
    fn open_dir_refuses_a_file_or_nothing_with_a_usage_error() {
        let d = tempfile::tempdir().unwrap();
        assert!(Root::open_dir(d.path()).is_ok());
        let file = d.path().join("f");
        fs::write(&file, b"").unwrap();
        for bad in [file, d.path().join("missing")] {
            let err = crate::error::Error::from(Root::open_dir(&bad).unwrap_err());
            assert_eq!(err.exit_code(), crate::exit::USAGE);
            assert_eq!(
                err.to_string(),
                format!("--root {}: not a directory", bad.display())
            );
        }
    }

    #[test]
    fn list_dir_is_sorted() {
        let (_d, root) = tree();
        assert_eq!(
            root.list_dir("/sys").unwrap(),
            vec!["bus", "devices", "firmware"]
        );
    }
}
