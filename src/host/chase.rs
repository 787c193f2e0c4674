//! Confined changes under a root, in the spirit of systemd's `chase()` and
//! `openat2(RESOLVE_IN_ROOT)`: the directory a change happens in is reached from the root's own
//! file descriptor one component at a time, each opened with `O_NOFOLLOW | O_DIRECTORY`. A
//! symbolic link on the way is refused, not followed, so a link an image planted (or swapped in
//! after setup ran) can never move a write, rename, chmod or delete outside `--root`.
//!
//! Paths given here are *canonical* in-root paths: their parents were resolved by
//! `Root::canonicalize_parent` (links inside the root followed on the read side) or were recorded
//! that way in the journal. A link that is still on the way when a change is made is therefore
//! one that appeared since, and that is exactly what must not be followed.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::Root;

/// A directory inside the root, reached without following any link.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    /// Its in-root path, for messages.
    path: PathBuf,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// The root itself. The base is the caller's own argument, so links in it are fine.
    pub fn root(root: &Root) -> io::Result<Dir> {
        let fd = rustix::fs::open(
            root.base(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            fd,
            path: PathBuf::from("/"),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// In-root path of this directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// In-root path of `name` in this directory.
    pub fn child_path(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// The existing subdirectory `name`; a link or a non-directory there is refused.
    pub fn open(&self, name: &OsStr) -> io::Result<Dir> {
        match rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Dir {
                fd,
                path: self.child_path(name),
            }),
            Err(Errno::NOENT) => Err(io::Error::from(Errno::NOENT)),
            Err(e) => Err(self.refusal(name, e)),
        }
    }

    /// The subdirectory `name`, created (and its creation made durable) when missing. Returns
    /// whether it was created.
    pub fn open_or_create(&self, name: &OsStr) -> io::Result<(Dir, bool)> {
        match self.open(name) {
            Ok(d) => return Ok((d, false)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => {
                rustix::fs::fsync(&self.fd)?;
                Ok((self.open(name)?, true))
            }
            // Someone made it in between: use it if it is a plain directory.
            Err(Errno::EXIST) => Ok((self.open(name)?, false)),
            Err(e) => Err(e.into()),
        }
    }

    /// What `name` is, without following it. `None` when it does not exist.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<rustix::fs::Stat>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Why `name` could not be opened as a directory, in words.
    fn refusal(&self, name: &OsStr, e: Errno) -> io::Error {
        let what = match self.stat(name) {
            Ok(Some(st)) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                "is a symbolic link; setup does not follow links there (it could lead outside the root)"
            }
            Ok(Some(st)) if FileType::from_raw_mode(st.st_mode) != FileType::Directory => {
                "is not a directory"
            }
            _ => return io::Error::new(io::Error::from(e).kind(), format!("{}: {e}", self.child_path(name).display())),
        };
        io::Error::other(format!("{} {what}", self.child_path(name).display()))
    }
}

/// The names of a canonical in-root path. `..` is refused: a canonical path has none, and a
/// journal entry that carries one was not written by setup.
pub fn names(path: &Path) -> io::Result<Vec<OsString>> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n.to_os_string()),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: `..` in a path setup changes", path.display()),
                ))
            }
        }
    }
    Ok(out)
}

/// Open the existing directory `dir` (canonical in-root path).
pub fn open_dir(root: &Root, dir: &Path) -> io::Result<Dir> {
    let mut cur = Dir::root(root)?;
    for n in names(dir)? {
        cur = cur.open(&n)?;
    }
    Ok(cur)
}

/// Open `dir`, creating what is missing; returns the directories created, outermost first.
pub fn make_dirs(root: &Root, dir: &Path) -> io::Result<(Dir, Vec<PathBuf>)> {
    let mut cur = Dir::root(root)?;
    let mut made = Vec::new();
    for n in names(dir)? {
        let (next, created) = cur.open_or_create(&n)?;
        if created {
            made.push(next.path.clone());
        }
        cur = next;
    }
    Ok((cur, made))
}

/// The directory holding `path` and the final name in it. The parent must exist.
pub fn parent(root: &Root, path: &Path) -> io::Result<(Dir, OsString)> {
    let mut names = names(path)?;
    let Some(name) = names.pop() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "setup never changes the root directory itself",
        ));
    };
    let mut cur = Dir::root(root)?;
    for n in names {
        cur = cur.open(&n)?;
    }
    Ok((cur, name))
}

/// True when `name` is a plain file name (no `/`, not `.` or `..`, not empty, no NUL).
pub fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !OsStr::new(name)
            .as_bytes()
            .iter()
            .any(|b| *b == b'/' || *b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_on_the_way_is_refused_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("etc")).unwrap();
        symlink(outside.path(), d.path().join("etc/conf.d")).unwrap();
        let root = Root::new(d.path());
        let err = parent(&root, Path::new("/etc/conf.d/x")).unwrap_err();
        assert!(
            err.to_string().contains("/etc/conf.d is a symbolic link"),
            "{err}"
        );
        assert!(make_dirs(&root, Path::new("/etc/conf.d/sub")).is_err());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn make_dirs_reports_what_it_created_and_dotdot_is_refused() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("etc")).unwrap();
        let root = Root::new(d.path());
        let (dir, made) = make_dirs(&root, Path::new("/etc/a/b")).unwrap();
        assert_eq!(dir.path(), Path::new("/etc/a/b"));
        assert_eq!(
            made,
            vec![PathBuf::from("/etc/a"), PathBuf::from("/etc/a/b")]
        );
        assert!(make_dirs(&root, Path::new("/etc/a/b"))
            .unwrap()
            .1
            .is_empty());
        assert!(parent(&root, Path::new("/etc/../../x")).is_err());
        assert!(parent(&root, Path::new("/")).is_err());
    }

    #[test]
    fn file_names_are_single_components() {
        assert!(is_file_name("rk3588-panthor.dtbo"));
        for bad in ["", ".", "..", "a/b", "a\0b"] {
            assert!(!is_file_name(bad), "{bad:?}");
        }
    }
}
