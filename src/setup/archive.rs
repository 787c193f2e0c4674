//! Unpack a source tarball (`.tar.xz`, `.tar.gz` or plain `.tar`) so that nothing can land
//! outside the target directory. Refused, with the entry named: absolute paths, `..`
//! components, symbolic links that are absolute or point above the target, hard links outside
//! it, entries written through a link the archive made, and device or FIFO entries.
//! Set-id bits are dropped; owners are not restored.

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::AtFlags;
use tar::EntryType;

use super::fsops;
use crate::error::Error;
use crate::host::{chase, Root};

/// What was unpacked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unpacked {
    pub files: usize,
    pub dirs: usize,
    pub links: usize,
}

/// Unpack `archive` into `dest` (created if missing). The compression is chosen by file name.
pub fn unpack(archive: &Path, dest: &Path) -> anyhow::Result<Unpacked> {
    let file = File::open(archive).map_err(|e| Error::io("cannot open", archive, e))?;
    let name = archive.to_string_lossy();
    let reader: Box<dyn Read> = if name.ends_with(".xz") {
        Box::new(xz2::read::XzDecoder::new(BufReader::new(file)))
    } else if name.ends_with(".gz") || name.ends_with(".tgz") {
        Box::new(flate2::read::GzDecoder::new(BufReader::new(file)))
    } else {
        Box::new(BufReader::new(file))
    };
    fs::create_dir_all(dest).map_err(|e| Error::io("cannot create", dest, e))?;
    unpack_reader(reader, dest)
        .map_err(|e| match e {
            UnpackError::Refused(msg) => Error::BadInput(format!(
                "{}: refused: {msg}; nothing from it is used",
                archive.display()
            )),
            UnpackError::Io(err) => Error::io("cannot unpack", archive, err),
        })
        .map_err(anyhow::Error::from)
}

enum UnpackError {
    Refused(String),
    Io(io::Error),
}

impl From<io::Error> for UnpackError {
    fn from(e: io::Error) -> Self {
        UnpackError::Io(e)
    }
}

fn unpack_reader(reader: impl Read, dest: &Path) -> Result<Unpacked, UnpackError> {
    let mut archive = tar::Archive::new(reader);
    let mut done = Unpacked::default();
    // `dest` is a directory setup just made; inside it every write goes through host/chase, as
    // if it were a root: no link on the way is followed, whatever an earlier entry made.
    let at = Target {
        host: dest,
        root: Root::new(dest),
    };
    for entry in archive.entries()? {
        unpack_entry(&mut entry?, &at, &mut done)?;
    }
    Ok(done)
}

/// The directory being unpacked into, as a host path (for the checks) and as a root (for writes).
struct Target<'a> {
    host: &'a Path,
    root: Root,
}

/// The in-root form of a relative entry path.
fn inside(rel: &Path) -> PathBuf {
    Path::new("/").join(rel)
}

/// Check one entry's path, then write it by its kind.
fn unpack_entry<R: Read>(
    entry: &mut tar::Entry<R>,
    at: &Target,
    done: &mut Unpacked,
) -> Result<(), UnpackError> {
    let dest = at.host;
    let raw = entry.path()?.into_owned();
    let kind = entry.header().entry_type();
    if matches!(kind, EntryType::XGlobalHeader | EntryType::XHeader) {
        return Ok(());
    }
    let rel = safe_relative(&raw).ok_or_else(|| {
        UnpackError::Refused(format!("entry `{}` escapes the target", raw.display()))
    })?;
    if rel.as_os_str().is_empty() {
        return Ok(()); // "./" itself
    }
    no_link_on_the_way(dest, &rel).map_err(|p| {
        UnpackError::Refused(format!(
            "entry `{}` would be written through the link `{}`",
            raw.display(),
            p.display()
        ))
    })?;
    let out = inside(&rel);
    match kind {
        EntryType::Directory => {
            fsops::create_dirs(&at.root, &out)?;
            done.dirs += 1;
        }
        EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
            write_file(entry, &at.root, &out)?;
            done.files += 1;
        }
        EntryType::Symlink => {
            write_symlink(entry, &raw, &rel, &at.root, &out)?;
            done.links += 1;
        }
        EntryType::Link => {
            write_hard_link(entry, &raw, at, &out)?;
            done.files += 1;
        }
        other => {
            return Err(UnpackError::Refused(format!(
                "entry `{}` is a {other:?}, not a file, directory or link",
                raw.display()
            )))
        }
    }
    Ok(())
}

/// Make room for `out`: its parent directories, and nothing already at it (a later entry with
/// the same name wins, as with GNU tar, but never by writing through a link).
fn make_room(root: &Root, out: &Path) -> io::Result<()> {
    if let Some(parent) = out.parent() {
        fsops::create_dirs(root, parent)?;
    }
    fsops::remove_all(root, out)
}

fn write_file<R: Read>(
    entry: &mut tar::Entry<R>,
    root: &Root,
    out: &Path,
) -> Result<(), UnpackError> {
    make_room(root, out)?;
    let mut f: File = fsops::create_file(root, out)?;
    io::copy(entry, &mut f)?;
    let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
    f.set_permissions(fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// A symbolic link, relative and staying inside the target.
fn write_symlink<R: Read>(
    entry: &tar::Entry<R>,
    raw: &Path,
    rel: &Path,
    root: &Root,
    out: &Path,
) -> Result<(), UnpackError> {
    let target = entry
        .link_name()?
        .ok_or_else(|| UnpackError::Refused(format!("link `{}` has no target", raw.display())))?
        .into_owned();
    if target.is_absolute() {
        return Err(UnpackError::Refused(format!(
            "link `{}` points to the absolute path `{}`",
            raw.display(),
            target.display()
        )));
    }
    let base = rel.parent().unwrap_or(Path::new(""));
    if safe_relative(&base.join(&target)).is_none() {
        return Err(UnpackError::Refused(format!(
            "link `{}` -> `{}` points outside the target",
            raw.display(),
            target.display()
        )));
    }
    make_room(root, out)?;
    let (dir, name) = chase::parent(root, out)?;
    rustix::fs::symlinkat(&target, dir.fd(), &name).map_err(io::Error::from)?;
    Ok(())
}

/// A hard link to a file already unpacked inside the target, never through or to a link.
fn write_hard_link<R: Read>(
    entry: &tar::Entry<R>,
    raw: &Path,
    at: &Target,
    out: &Path,
) -> Result<(), UnpackError> {
    let dest = at.host;
    let target = entry
        .link_name()?
        .ok_or_else(|| {
            UnpackError::Refused(format!("hard link `{}` has no target", raw.display()))
        })?
        .into_owned();
    let inside = safe_relative(&target).filter(|t| !t.as_os_str().is_empty());
    let Some(inside) = inside else {
        return Err(UnpackError::Refused(format!(
            "hard link `{}` -> `{}` points outside the target",
            raw.display(),
            target.display()
        )));
    };
    no_link_on_the_way(dest, &inside).map_err(|p| {
        UnpackError::Refused(format!(
            "hard link `{}` goes through the link `{}`",
            raw.display(),
            p.display()
        ))
    })?;
    if fs::symlink_metadata(dest.join(&inside)).is_ok_and(|m| m.is_symlink()) {
        return Err(UnpackError::Refused(format!(
            "hard link `{}` names the link `{}`",
            raw.display(),
            inside.display()
        )));
    }
    make_room(&at.root, out)?;
    let (from_dir, from) = chase::parent(&at.root, &self::inside(&inside))?;
    let (dir, name) = chase::parent(&at.root, out)?;
    // linkat without AT_SYMLINK_FOLLOW links the name itself, never what a link points at.
    rustix::fs::linkat(from_dir.fd(), &from, dir.fd(), &name, AtFlags::empty())
        .map_err(io::Error::from)?;
    Ok(())
}

/// The path with `.` removed, or `None` when it is absolute or has a `..` that climbs above the
/// start. Inner `..` that stay inside are folded (`a/../b` is `b`).
fn safe_relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Err(the link) when a parent directory of `rel` under `dest` is a symbolic link.
fn no_link_on_the_way(dest: &Path, rel: &Path) -> Result<(), PathBuf> {
    let mut cur = dest.to_path_buf();
    if let Some(parent) = rel.parent() {
        for c in parent.components() {
            cur.push(c);
            if fs::symlink_metadata(&cur).is_ok_and(|m| m.is_symlink()) {
                return Err(cur.strip_prefix(dest).unwrap_or(&cur).to_path_buf());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Build a tar in memory with raw header names (the `tar` builder refuses `..`, which is
    /// exactly what these tests need to produce).
    fn tar_with(entries: &[(&str, EntryType, &str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, kind, link, data) in entries {
            let mut h = tar::Header::new_gnu();
            {
                let gnu = h.as_gnu_mut().unwrap();
                gnu.name[..name.len()].copy_from_slice(name.as_bytes());
                gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            h.set_entry_type(*kind);
            h.set_mode(0o4755);
            h.set_size(data.len() as u64);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn run(
        entries: &[(&str, EntryType, &str, &[u8])],
    ) -> (tempfile::TempDir, Result<Unpacked, String>) {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("t");
        fs::create_dir(&dest).unwrap();
        let r = unpack_reader(&tar_with(entries)[..], &dest).map_err(|e| match e {
            UnpackError::Refused(m) => m,
            UnpackError::Io(e) => format!("io: {e}"),
        });
        (d, r)
    }

    #[test]
    fn ordinary_tree_unpacks_without_setid_bits() {
        let (d, r) = run(&[
            ("p/", EntryType::Directory, "", b""),
            ("p/a.c", EntryType::Regular, "", b"int x;"),
            ("p/l", EntryType::Symlink, "a.c", b""),
            ("p/sub/../b.c", EntryType::Regular, "", b"b"),
        ]);
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.files, 2);
        let a = d.path().join("t/p/a.c");
        assert_eq!(fs::read(&a).unwrap(), b"int x;");
        assert_eq!(
            fs::metadata(&a).unwrap().permissions().mode() & 0o7777,
            0o755
        );
        assert!(d.path().join("t/p/b.c").exists());
        assert_eq!(r.links, 1);
        assert_eq!(
            fs::read_link(d.path().join("t/p/l")).unwrap(),
            PathBuf::from("a.c")
        );
    }

    #[test]
    fn link_without_target_is_refused() {
        let (_d, r) = run(&[("p/l", EntryType::Symlink, "", b"")]);
        assert!(r.unwrap_err().contains("no target"));
    }

    #[test]
    fn dotdot_entry_is_refused() {
        let (d, r) = run(&[("../evil", EntryType::Regular, "", b"x")]);
        assert!(r.unwrap_err().contains("`../evil` escapes"));
        assert!(!d.path().join("evil").exists());
    }

    #[test]
    fn absolute_entry_is_refused() {
        let (_d, r) = run(&[("/tmp/rvl-evil", EntryType::Regular, "", b"x")]);
        assert!(r.unwrap_err().contains("escapes"));
        assert!(!Path::new("/tmp/rvl-evil").exists());
    }

    #[test]
    fn absolute_symlink_is_refused() {
        let (_d, r) = run(&[("p/etc", EntryType::Symlink, "/etc", b"")]);
        assert!(r.unwrap_err().contains("absolute path `/etc`"));
    }

    #[test]
    fn symlink_climbing_out_is_refused() {
        let (_d, r) = run(&[("p/up", EntryType::Symlink, "../../x", b"")]);
        assert!(r.unwrap_err().contains("points outside"));
        let (_d, r) = run(&[("p/ok", EntryType::Symlink, "../x", b"")]);
        assert!(r.is_ok());
    }

    #[test]
    fn writing_through_an_archive_link_is_refused() {
        let (d, r) = run(&[
            ("p/", EntryType::Directory, "", b""),
            ("p/here", EntryType::Symlink, ".", b""),
            ("p/here/f", EntryType::Regular, "", b"x"),
        ]);
        assert!(r.unwrap_err().contains("through the link `p/here`"));
        assert!(!d.path().join("t/p/f").exists());
    }

    #[test]
    fn hard_link_outside_is_refused_inside_is_fine() {
        let (_d, r) = run(&[("p/h", EntryType::Link, "../../etc/passwd", b"")]);
        assert!(r.unwrap_err().contains("points outside"));
        let (d, r) = run(&[
            ("p/a", EntryType::Regular, "", b"data"),
            ("p/b", EntryType::Link, "p/a", b""),
        ]);
        r.unwrap();
        assert_eq!(fs::read(d.path().join("t/p/b")).unwrap(), b"data");
    }

    #[test]
    fn device_entries_are_refused() {
        let (_d, r) = run(&[("p/dev", EntryType::Char, "", b"")]);
        assert!(r.unwrap_err().contains("not a file"));
    }
}
