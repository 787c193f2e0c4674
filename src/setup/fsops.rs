//! Durable file operations on host paths. Every change becomes visible in one `rename`, after
//! its content reached the disk: temp file in the same directory + fsync + rename + fsync of the
//! directory. A crash therefore leaves each file either old or new, never torn; the only debris
//! is a `.NAME.rvl-new` temp file next to the target, which [`remove_debris`] clears.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fault;

/// Mode and owner of a file, kept with its backup so a restore is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Meta {
    pub fn of(path: &Path) -> io::Result<Meta> {
        let m = fs::symlink_metadata(path)?;
        Ok(Meta {
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        })
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

/// The temp name a change to `path` is staged under.
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.rvl-new"))
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// fsync a directory, so a rename or removal inside it is on disk.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Set mode and owner on an open file. Changing the owner needs root; without it an owner that
/// already matches is fine and a different one is left as is (a user-owned test root).
fn apply_meta(file: &File, meta: Meta) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(meta.mode))?;
    let m = file.metadata()?;
    if m.uid() != meta.uid || m.gid() != meta.gid {
        match std::os::unix::fs::fchown(file, Some(meta.uid), Some(meta.gid)) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && !is_root() => {}
            other => other?,
        }
    }
    Ok(())
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Replace (or create) `path` with `data`, atomically and durably. A symlink at `path` is
/// replaced, not followed.
pub fn write_atomic(path: &Path, data: &[u8], meta: Meta) -> io::Result<()> {
    let tmp = temp_sibling(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(data)?;
        apply_meta(&file, meta)?;
        file.sync_all()?;
        drop(file);
        fault::write_point(path);
        fs::rename(&tmp, path)?;
        sync_dir(parent_of(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Copy `src` to `dst` durably (used for backups and for installing a downloaded file).
pub fn copy_atomic(src: &Path, dst: &Path, meta: Meta) -> io::Result<()> {
    let data = fs::read(src)?;
    write_atomic(dst, &data, meta)
}

/// Point `path` at `target` atomically (a new link renamed over the old one).
pub fn symlink_atomic(path: &Path, target: &Path) -> io::Result<()> {
    let tmp = temp_sibling(path);
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    fault::write_point(path);
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(parent_of(path))
}

/// Remove a file or link durably; a missing one is not an error.
pub fn remove_file(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    fault::write_point(path);
    fs::remove_file(path)?;
    sync_dir(parent_of(path))
}

/// Remove a directory tree setup created (an install prefix); a missing one is fine.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    fault::write_point(path);
    // Rename first, so a crash never leaves a half-deleted prefix under its real name.
    let doomed = temp_sibling(path);
    let _ = fs::remove_dir_all(&doomed);
    fs::rename(path, &doomed)?;
    sync_dir(parent_of(path))?;
    fs::remove_dir_all(&doomed)
}

/// Remove a directory only if it is empty (one setup created and may since have been used).
pub fn remove_dir_if_empty(path: &Path) -> io::Result<bool> {
    match fs::read_dir(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
        Ok(mut it) => {
            if it.next().is_some() {
                return Ok(false);
            }
            fault::write_point(path);
            fs::remove_dir(path)?;
            sync_dir(parent_of(path))?;
            Ok(true)
        }
    }
}

/// Move a finished directory tree (staged next to it) into place in one rename.
pub fn rename_into_place(staged: &Path, path: &Path) -> io::Result<()> {
    fault::write_point(path);
    fs::rename(staged, path)?;
    sync_dir(parent_of(path))
}

/// Create `dir` and its missing parents, fsyncing each parent. Returns the directories that
/// were created, outermost first, so they can be journaled and removed on rollback.
pub fn create_dirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut cur = dir;
    while fs::symlink_metadata(cur).is_err() {
        missing.push(cur.to_path_buf());
        match cur.parent() {
            Some(p) if !p.as_os_str().is_empty() => cur = p,
            _ => break,
        }
    }
    missing.reverse();
    for d in &missing {
        fs::create_dir(d)?;
        sync_dir(parent_of(d))?;
    }
    Ok(missing)
}

/// Clear the temp file a crash may have left next to `path`.
pub fn remove_debris(path: &Path) -> io::Result<()> {
    let tmp = temp_sibling(path);
    match fs::symlink_metadata(&tmp) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(&tmp),
        Ok(_) => fs::remove_file(&tmp),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_content_mode_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.conf");
        fs::write(&p, b"old").unwrap();
        write_atomic(&p, b"new", Meta::new_file(0o640)).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(Meta::of(&p).unwrap().mode, 0o640);
        assert!(!temp_sibling(&p).exists());
    }

    #[test]
    fn write_atomic_replaces_a_symlink_instead_of_following_it() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        fs::write(&target, b"t").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"x", Meta::new_file(0o644)).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"t");
        assert!(!fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn failed_write_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        // Renaming a file over a non-empty directory fails after the temp was written.
        let p = d.path().join("dir");
        fs::create_dir_all(p.join("inside")).unwrap();
        assert!(write_atomic(&p, b"x", Meta::new_file(0o644)).is_err());
        assert!(!temp_sibling(&p).exists());
    }

    #[test]
    fn symlink_atomic_repoints() {
        let d = tempfile::tempdir().unwrap();
        let l = d.path().join("Image");
        std::os::unix::fs::symlink("vmlinuz-a", &l).unwrap();
        symlink_atomic(&l, Path::new("vmlinuz-b")).unwrap();
        assert_eq!(fs::read_link(&l).unwrap(), PathBuf::from("vmlinuz-b"));
    }

    #[test]
    fn create_dirs_reports_only_what_it_created() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("etc")).unwrap();
        let made = create_dirs(&d.path().join("etc/a/b")).unwrap();
        assert_eq!(made, vec![d.path().join("etc/a"), d.path().join("etc/a/b")]);
        assert!(create_dirs(&d.path().join("etc/a/b")).unwrap().is_empty());
    }

    #[test]
    fn remove_dir_if_empty_keeps_used_dirs() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        fs::create_dir_all(&a).unwrap();
        fs::write(a.join("user-file"), b"x").unwrap();
        assert!(!remove_dir_if_empty(&a).unwrap());
        fs::remove_file(a.join("user-file")).unwrap();
        assert!(remove_dir_if_empty(&a).unwrap());
        assert!(!a.exists());
    }

    #[test]
    fn remove_tree_and_debris() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("prefix");
        fs::create_dir_all(t.join("lib")).unwrap();
        fs::write(t.join("lib/x.so"), b"x").unwrap();
        remove_tree(&t).unwrap();
        assert!(!t.exists() && !temp_sibling(&t).exists());
        let f = d.path().join("f");
        fs::write(temp_sibling(&f), b"half").unwrap();
        remove_debris(&f).unwrap();
        assert!(!temp_sibling(&f).exists());
    }
}
