//! Durable file operations on in-root paths. Every change becomes visible in one `rename`, after
//! its content reached the disk: temp file in the same directory + fsync + rename + fsync of the
//! directory. A crash therefore leaves each file either old or new, never torn; the only debris
//! is a `.NAME.rvl-new` temp file next to the target, which [`remove_debris`] clears.
//!
//! Every operation reaches its directory through [`chase`]: no link on the way is followed, and
//! the final name is never followed either (temp files are created with `O_EXCL|O_NOFOLLOW`), so
//! nothing an image planted can move a change outside the root.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::fault;
use crate::host::chase::{self, Dir};
use crate::host::Root;

/// Setup never sets setuid, setgid or sticky bits, whatever a journal says.
pub const MODE_MASK: u32 = 0o777;
/// The bits of a mode setup records for a file it backs up: no setuid, setgid or sticky, and
/// never world-writable (a file found world-writable is restored without that bit). A state
/// file naming any other bit was not written by setup ([`super::journal_check`]).
pub const RECORDED_MODE_MASK: u32 = 0o775;

/// Mode and owner of a file, kept with its backup so a restore is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Meta {
    /// Mode (permission bits only) and owner of the in-root `path` itself (a link is not followed).
    pub fn of(root: &Root, path: &Path) -> io::Result<Meta> {
        let (dir, name) = chase::parent(root, path)?;
        let st = dir
            .stat(&name)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(Meta::from_stat(&st))
    }

    fn from_stat(st: &rustix::fs::Stat) -> Meta {
        Meta {
            mode: st.st_mode & MODE_MASK,
            uid: st.st_uid,
            gid: st.st_gid,
        }
    }

    /// A new root-owned file (or one owned by the caller when not root).
    pub fn new_file(mode: u32) -> Meta {
        Meta {
            mode,
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
        }
    }
}

/// What an in-root path is now, never following it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Missing,
    File(Meta),
    Dir,
    Link(PathBuf),
    /// A device, FIFO or socket.
    Other,
}

/// What `path` is. A missing parent means a missing path; a link among the parents is an error.
pub fn probe(root: &Root, path: &Path) -> io::Result<Node> {
    if chase::names(path)?.is_empty() {
        return Ok(Node::Dir); // the root itself
    }
    let (dir, name) = match chase::parent(root, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Node::Missing),
        other => other?,
    };
    node_at(&dir, &name)
}

fn node_at(dir: &Dir, name: &OsStr) -> io::Result<Node> {
    let Some(st) = dir.stat(name)? else {
        return Ok(Node::Missing);
    };
    Ok(match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Node::File(Meta::from_stat(&st)),
        FileType::Directory => Node::Dir,
        FileType::Symlink => {
            let t = rustix::fs::readlinkat(dir.fd(), name, Vec::new())?;
            Node::Link(PathBuf::from(OsStr::from_bytes(t.as_bytes())))
        }
        _ => Node::Other,
    })
}

/// Read the regular file at `path` (capped): never through a link, never blocking on a FIFO.
pub fn read(root: &Root, path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let (dir, name) = chase::parent(root, path)?;
    let fd = rustix::fs::openat(
        dir.fd(),
        &name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| named(path, e))?;
    let mut file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let mut buf = Vec::new();
    Read::by_ref(&mut file)
        .take(cap + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::other(format!(
            "{} is larger than {cap} bytes",
            path.display()
        )));
    }
    Ok(buf)
}

fn named(path: &Path, e: Errno) -> io::Error {
    match e {
        Errno::NOENT => io::Error::from(e),
        Errno::LOOP => io::Error::other(format!(
            "{} is a symbolic link; setup does not follow it",
            path.display()
        )),
        _ => io::Error::new(
            io::Error::from(e).kind(),
            format!("{}: {e}", path.display()),
        ),
    }
}

/// The temp name a change to `path` is staged under.
pub fn temp_sibling(path: &Path) -> PathBuf {
    path.with_file_name(temp_name(path.file_name().unwrap_or_default()))
}

fn temp_name(name: &OsStr) -> OsString {
    let mut t = OsString::from(".");
    t.push(name);
    t.push(".rvl-new");
    t
}

/// fsync a directory, so a rename or removal inside it is on disk.
fn sync(dir: &Dir) -> io::Result<()> {
    Ok(rustix::fs::fsync(dir.fd())?)
}

/// Set mode and owner on an open file. Changing the owner needs root; without it an owner that
/// already matches is fine and a different one is left as is (a user-owned test root).
fn apply_meta(file: &File, meta: Meta) -> io::Result<()> {
    rustix::fs::fchmod(file, Mode::from_raw_mode(meta.mode & MODE_MASK))?;
    let st = rustix::fs::fstat(file)?;
    if st.st_uid != meta.uid || st.st_gid != meta.gid {
        let owner = rustix::fs::fchown(
            file,
            Some(rustix::process::Uid::from_raw(meta.uid)),
            Some(rustix::process::Gid::from_raw(meta.gid)),
        );
        match owner {
            Err(Errno::PERM) if !is_root() => {}
            other => other?,
        }
    }
    Ok(())
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Create `name` in `dir` as a new, empty file: `O_CREAT|O_EXCL|O_NOFOLLOW`, so a file or a
/// link planted at that name is never opened. A planted one is removed (the link itself, never
/// what it points at) and the create retried once.
fn create_new(dir: &Dir, name: &OsStr) -> io::Result<File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for attempt in 0..2 {
        match rustix::fs::openat(dir.fd(), name, flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(Errno::EXIST) if attempt == 0 => remove_any(dir, name)?,
            Err(e) => return Err(named(&dir.child_path(name), e)),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// Create (or replace) a plain file at `path` for writing, never through a link: for logs.
pub fn create_file(root: &Root, path: &Path) -> io::Result<File> {
    let (dir, name) = chase::parent(root, path)?;
    create_new(&dir, &name)
}

/// Replace (or create) `path` with `data`, atomically and durably. A symlink at `path` is
/// replaced, not followed.
pub fn write_atomic(root: &Root, path: &Path, data: &[u8], meta: Meta) -> io::Result<()> {
    let (dir, name) = chase::parent(root, path)?;
    let tmp = temp_name(&name);
    let result = (|| {
        let mut file = create_new(&dir, &tmp)?;
        fault::file_write()?;
        file.write_all(data)?;
        apply_meta(&file, meta)?;
        file.sync_all()?;
        drop(file);
        fault::write_point(path);
        rustix::fs::renameat(dir.fd(), &tmp, dir.fd(), &name)?;
        sync(&dir)
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(dir.fd(), &tmp, AtFlags::empty());
    }
    result
}

/// Point `path` at `target` atomically (a new link renamed over the old one).
pub fn symlink_atomic(root: &Root, path: &Path, target: &Path) -> io::Result<()> {
    let (dir, name) = chase::parent(root, path)?;
    let tmp = temp_name(&name);
    remove_any(&dir, &tmp)?;
    rustix::fs::symlinkat(target, dir.fd(), &tmp)?;
    fault::write_point(path);
    if let Err(e) = rustix::fs::renameat(dir.fd(), &tmp, dir.fd(), &name) {
        let _ = rustix::fs::unlinkat(dir.fd(), &tmp, AtFlags::empty());
        return Err(e.into());
    }
    sync(&dir)
}

/// Remove a file or link durably; a missing one is not an error.
pub fn remove_file(root: &Root, path: &Path) -> io::Result<()> {
    let (dir, name) = match chase::parent(root, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    if dir.stat(&name)?.is_none() {
        return Ok(());
    }
    fault::write_point(path);
    rustix::fs::unlinkat(dir.fd(), &name, AtFlags::empty())?;
    sync(&dir)
}

/// Remove a directory tree setup created (an install prefix); a missing one is fine.
pub fn remove_tree(root: &Root, path: &Path) -> io::Result<()> {
    let (dir, name) = match chase::parent(root, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    if dir.stat(&name)?.is_none() {
        return Ok(());
    }
    fault::write_point(path);
    // Rename first, so a crash never leaves a half-deleted prefix under its real name.
    let doomed = temp_name(&name);
    remove_any(&dir, &doomed)?;
    rustix::fs::renameat(dir.fd(), &name, dir.fd(), &doomed)?;
    sync(&dir)?;
    remove_any(&dir, &doomed)
}

/// Remove a tree at once (work and staging directories: no crash safety needed).
pub fn remove_all(root: &Root, path: &Path) -> io::Result<()> {
    match chase::parent(root, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok((dir, name)) => remove_any(&dir, &name),
    }
}

/// Remove whatever is at `name` in `dir`: a link or a file is unlinked, a directory emptied
/// depth first through descriptors that never follow a link. Missing is fine.
fn remove_any(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let Some(st) = dir.stat(name)? else {
        return Ok(());
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return match rustix::fs::unlinkat(dir.fd(), name, AtFlags::empty()) {
            Err(Errno::NOENT) => Ok(()),
            other => Ok(other?),
        };
    }
    let sub = dir.open(name)?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(sub.fd())? {
        let entry = entry?;
        let n = OsStr::from_bytes(entry.file_name().to_bytes());
        if n != "." && n != ".." {
            names.push(n.to_os_string());
        }
    }
    for n in names {
        remove_any(&sub, &n)?;
    }
    drop(sub);
    match rustix::fs::unlinkat(dir.fd(), name, AtFlags::REMOVEDIR) {
        Err(Errno::NOENT) => Ok(()),
        other => Ok(other?),
    }
}

/// Remove a directory only if it is empty (one setup created and may since have been used).
pub fn remove_dir_if_empty(root: &Root, path: &Path) -> io::Result<bool> {
    let (dir, name) = match chase::parent(root, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        other => other?,
    };
    match dir.stat(&name)? {
        None => return Ok(false),
        Some(st) if FileType::from_raw_mode(st.st_mode) != FileType::Directory => {
            return Err(io::Error::other(format!(
                "{} is no longer a directory",
                path.display()
            )))
        }
        Some(_) => {}
    }
    fault::write_point(path);
    match rustix::fs::unlinkat(dir.fd(), &name, AtFlags::REMOVEDIR) {
        Ok(()) => {
            sync(&dir)?;
            Ok(true)
        }
        Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Move `from` to `path` in one rename (both in-root; a staged tree or a renamed file).
pub fn rename_into_place(root: &Root, from: &Path, path: &Path) -> io::Result<()> {
    let (src_dir, src) = chase::parent(root, from)?;
    let (dst_dir, dst) = chase::parent(root, path)?;
    fault::write_point(path);
    rustix::fs::renameat(src_dir.fd(), &src, dst_dir.fd(), &dst)?;
    sync(&dst_dir)?;
    sync(&src_dir)
}

/// Create `dir` and its missing parents, fsyncing each parent. Returns the directories that
/// were created, outermost first, so they can be journaled and removed on rollback.
pub fn create_dirs(root: &Root, dir: &Path) -> io::Result<Vec<PathBuf>> {
    Ok(chase::make_dirs(root, dir)?.1)
}

/// Create one directory whose parent exists (journaled first by the caller).
pub fn create_dir(root: &Root, path: &Path) -> io::Result<()> {
    let (dir, name) = chase::parent(root, path)?;
    rustix::fs::mkdirat(dir.fd(), &name, Mode::from_raw_mode(0o755))?;
    sync(&dir)
}

/// Clear the temp file a crash may have left next to `path`.
pub fn remove_debris(root: &Root, path: &Path) -> io::Result<()> {
    match chase::parent(root, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok((dir, name)) => remove_any(&dir, &temp_name(&name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn root() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        let r = Root::new(d.path());
        (d, r)
    }

    #[test]
    fn write_atomic_replaces_content_mode_and_leaves_no_temp() {
        let (d, r) = root();
        let p = d.path().join("f.conf");
        fs::write(&p, b"old").unwrap();
        write_atomic(&r, Path::new("/f.conf"), b"new", Meta::new_file(0o640)).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(Meta::of(&r, Path::new("/f.conf")).unwrap().mode, 0o640);
        assert!(!temp_sibling(&p).exists());
    }

    #[test]
    fn write_atomic_replaces_a_symlink_instead_of_following_it() {
        let (d, r) = root();
        let target = d.path().join("target");
        fs::write(&target, b"t").unwrap();
        symlink(&target, d.path().join("link")).unwrap();
        write_atomic(&r, Path::new("/link"), b"x", Meta::new_file(0o644)).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"t");
        assert!(!fs::symlink_metadata(d.path().join("link"))
            .unwrap()
            .is_symlink());
    }

    #[test]
    fn a_planted_link_at_the_temp_name_is_never_followed() {
        let (d, r) = root();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        symlink(&victim, d.path().join(".f.conf.rvl-new")).unwrap();
        write_atomic(&r, Path::new("/f.conf"), b"new", Meta::new_file(0o4755)).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        assert_eq!(fs::read(d.path().join("f.conf")).unwrap(), b"new");
        // setuid is never set, whatever the caller asked for.
        assert_eq!(Meta::of(&r, Path::new("/f.conf")).unwrap().mode, 0o755);
    }

    #[test]
    fn failed_write_leaves_no_temp() {
        let (d, r) = root();
        // Renaming a file over a non-empty directory fails after the temp was written.
        let p = d.path().join("dir");
        fs::create_dir_all(p.join("inside")).unwrap();
        assert!(write_atomic(&r, Path::new("/dir"), b"x", Meta::new_file(0o644)).is_err());
        assert!(!temp_sibling(&p).exists());
    }

    #[test]
    fn symlink_atomic_repoints() {
        let (d, r) = root();
        let l = d.path().join("Image");
        symlink("vmlinuz-a", &l).unwrap();
        symlink_atomic(&r, Path::new("/Image"), Path::new("vmlinuz-b")).unwrap();
        assert_eq!(fs::read_link(&l).unwrap(), PathBuf::from("vmlinuz-b"));
        assert_eq!(
            probe(&r, Path::new("/Image")).unwrap(),
            Node::Link(PathBuf::from("vmlinuz-b"))
        );
    }

    #[test]
    fn create_dirs_reports_only_what_it_created() {
        let (d, r) = root();
        fs::create_dir(d.path().join("etc")).unwrap();
        let made = create_dirs(&r, Path::new("/etc/a/b")).unwrap();
        assert_eq!(
            made,
            vec![PathBuf::from("/etc/a"), PathBuf::from("/etc/a/b")]
        );
        assert!(create_dirs(&r, Path::new("/etc/a/b")).unwrap().is_empty());
    }

    #[test]
    fn remove_dir_if_empty_keeps_used_dirs() {
        let (d, r) = root();
        let a = d.path().join("a");
        fs::create_dir_all(&a).unwrap();
        fs::write(a.join("user-file"), b"x").unwrap();
        assert!(!remove_dir_if_empty(&r, Path::new("/a")).unwrap());
        fs::remove_file(a.join("user-file")).unwrap();
        assert!(remove_dir_if_empty(&r, Path::new("/a")).unwrap());
        assert!(!a.exists());
    }

    #[test]
    fn remove_tree_and_debris() {
        let (d, r) = root();
        let t = d.path().join("prefix");
        fs::create_dir_all(t.join("lib")).unwrap();
        fs::write(t.join("lib/x.so"), b"x").unwrap();
        remove_tree(&r, Path::new("/prefix")).unwrap();
        assert!(!t.exists() && !temp_sibling(&t).exists());
        let f = d.path().join("f");
        fs::write(temp_sibling(&f), b"half").unwrap();
        remove_debris(&r, Path::new("/f")).unwrap();
        assert!(!temp_sibling(&f).exists());
    }

    #[test]
    fn removing_a_tree_never_descends_into_a_link() {
        let (d, r) = root();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep"), b"k").unwrap();
        fs::create_dir_all(d.path().join("prefix")).unwrap();
        symlink(outside.path(), d.path().join("prefix/lib")).unwrap();
        remove_tree(&r, Path::new("/prefix")).unwrap();
        assert!(outside.path().join("keep").exists());
        assert!(!d.path().join("prefix").exists());
    }

    #[test]
    fn a_link_in_a_parent_stops_every_change() {
        let (d, r) = root();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("rvl.conf"), b"k").unwrap();
        symlink(outside.path(), d.path().join("conf.d")).unwrap();
        let p = Path::new("/conf.d/rvl.conf");
        assert!(remove_file(&r, p).is_err());
        assert!(remove_tree(&r, p).is_err());
        assert!(write_atomic(&r, p, b"x", Meta::new_file(0o644)).is_err());
        assert!(read(&r, p, 100).is_err());
        assert_eq!(fs::read(outside.path().join("rvl.conf")).unwrap(), b"k");
    }
}
