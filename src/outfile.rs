//! Files the user names for output (`report -o`, `smoke-bench --save`): what rvl does with
//! what is already there.
//!
//! rvl often runs as root, so an output path can be anything: a regular file, a link, a FIFO,
//! a device node. It never replaces what is not a regular file:
//! - nothing there, or a regular file (also through a link): a temporary file next to it,
//!   renamed over it when complete, so a crash never leaves half a file and a link stays a
//!   link;
//! - a FIFO or a character device (`/dev/stdout`, `/dev/null`, a pipe): written through, as
//!   `tar -f` does; not atomic, since there is nothing to rename;
//! - a directory, a block device, a socket, or a link to nothing: refused (exit 2) before any
//!   work is done.
//!
//! Errors name the target the user gave, never the temporary file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// How a target will be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Written to a temporary file in this path's directory, then renamed to this path (the
    /// target itself, or the regular file a link to it resolves to).
    Replace(PathBuf),
    /// Opened and written in place: a FIFO or a character device.
    WriteThrough,
}

/// Decide how `path` (given with `flag`) will be written, or refuse it. Call it before any
/// long work, so a bad target is an error at once, not after minutes of benchmarking.
pub fn check(flag: &str, path: &Path) -> Result<Target, Error> {
    let refuse = |what: &str| {
        Error::Usage(format!(
            "{flag} {} {what}; rvl writes only regular files (replaced whole), FIFOs and character devices such as /dev/stdout",
            shown(path)
        ))
    };
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let dir = dir_of(path);
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "{flag} {}: the directory {} does not exist",
                    shown(path),
                    shown(dir)
                )));
            }
            return Ok(Target::Replace(path.to_path_buf()));
        }
        Err(e) => return Err(Error::io(flag, path, plain(e))),
    };
    let (kind, real) = if meta.file_type().is_symlink() {
        let followed = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(refuse("is a link to a file that does not exist"))
            }
            Err(e) => return Err(Error::io(flag, path, plain(e))),
        };
        let real = fs::canonicalize(path).map_err(|e| Error::io(flag, path, plain(e)))?;
        (followed.file_type(), real)
    } else {
        (meta.file_type(), path.to_path_buf())
    };
    if kind.is_file() {
        Ok(Target::Replace(real))
    } else if kind.is_fifo() || kind.is_char_device() {
        Ok(Target::WriteThrough)
    } else if kind.is_dir() {
        Err(refuse("is a directory"))
    } else if kind.is_block_device() {
        Err(refuse("is a block device"))
    } else if kind.is_socket() {
        Err(refuse("is a socket"))
    } else {
        Err(refuse("is not a regular file"))
    }
}

/// Before long work: [`check`], and for a file to replace, that its directory takes a new
/// file (the same temporary file [`write`] makes, removed at once).
pub fn check_writable(flag: &str, path: &Path) -> Result<Target, Error> {
    let target = check(flag, path)?;
    if let Target::Replace(real) = &target {
        tempfile::Builder::new()
            .prefix(".rvl-")
            .tempfile_in(dir_of(real))
            .map_err(|e| Error::io(flag, path, plain(e)))?;
    }
    Ok(target)
}

/// Write `path` with what `fill` writes, as [`check`] decides (checked again here: the path
/// may have changed since). `flag` and `path` name the target in errors.
pub fn write(
    flag: &str,
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Error> {
    let io_err = |e: io::Error| Error::io(flag, path, plain(e));
    match check(flag, path)? {
        Target::WriteThrough => {
            let mut f = OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
                .open(path)
                .map_err(io_err)?;
            // Opened by name: make sure it is still what check() saw, never a regular file
            // written over without the rename.
            let t = f.metadata().map_err(io_err)?.file_type();
            if !(t.is_fifo() || t.is_char_device()) {
                return Err(Error::Usage(format!(
                    "{flag} {}: changed while rvl ran; run again",
                    shown(path)
                )));
            }
            fill(&mut f).map_err(io_err)?;
            f.flush().map_err(io_err)
        }
        Target::Replace(real) => {
            let mut tmp = tempfile::Builder::new()
                .prefix(".rvl-")
                .tempfile_in(dir_of(&real))
                .map_err(io_err)?;
            fill(tmp.as_file_mut() as &mut File).map_err(io_err)?;
            tmp.as_file_mut().flush().map_err(io_err)?;
            tmp.as_file().sync_all().map_err(io_err)?;
            // The rename replaces whatever is there: refuse if a device node, FIFO or
            // directory took the target's place since check().
            if let Ok(m) = fs::symlink_metadata(&real) {
                if !m.file_type().is_file() {
                    return Err(Error::Usage(format!(
                        "{flag} {}: no longer a regular file; nothing was written",
                        shown(path)
                    )));
                }
            }
            tmp.persist(&real).map_err(|e| io_err(e.error))?;
            // The rename is durable once the directory is.
            if let Ok(d) = File::open(dir_of(&real)) {
                let _ = d.sync_all();
            }
            Ok(())
        }
    }
}

/// The error without the path tempfile adds to its messages (the temporary file's name means
/// nothing to the user, and the target is named by the caller).
fn plain(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.kind().to_string()),
    }
}

/// A path for a message, control bytes escaped.
fn shown(path: &Path) -> String {
    crate::output::escape_line(&path.display().to_string())
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write_text(path: &Path, text: &str) -> Result<(), Error> {
        write("--save", path, |w| w.write_all(text.as_bytes()))
    }

    #[test]
    fn a_new_file_and_a_regular_file_are_written_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.json");
        write_text(&p, "one").unwrap();
        write_text(&p, "two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "a temporary file was left"
        );
    }

    #[test]
    fn a_link_to_a_regular_file_stays_a_link_and_its_target_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.json");
        fs::write(&real, "old").unwrap();
        let link = d.path().join("link.json");
        symlink(&real, &link).unwrap();
        write_text(&link, "new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn a_fifo_is_written_through_and_stays_a_fifo() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        write_text(&fifo, "through").unwrap();
        assert_eq!(reader.join().unwrap(), "through");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    /// A character device node in a temporary directory (root only: mknod needs it), so a
    /// regression replaces a node of the test's own, never the machine's /dev/null.
    fn char_node(dir: &Path, name: &str, minor: u32) -> Option<PathBuf> {
        let p = dir.join(name);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, minor),
        )
        .ok()
        .map(|()| p)
    }

    #[test]
    fn a_character_device_is_written_through_and_not_replaced() {
        assert_eq!(
            check("--save", Path::new("/dev/null")).unwrap(),
            Target::WriteThrough
        );
        let d = tempfile::tempdir().unwrap();
        let Some(null) = char_node(d.path(), "null", 3) else {
            eprintln!("skipped: mknod needs root");
            return;
        };
        write_text(&null, "gone").unwrap();
        assert!(fs::metadata(&null).unwrap().file_type().is_char_device());
        let full = char_node(d.path(), "full", 7).unwrap();
        let e = write_text(&full, "x").unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "--save {}: No space left on device (os error 28)",
                full.display()
            )
        );
        assert!(fs::metadata(&full).unwrap().file_type().is_char_device());
    }

    #[test]
    fn a_directory_a_dangling_link_and_a_missing_directory_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = check("-o", d.path()).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::USAGE);
        assert!(e.to_string().contains("a directory"), "{e}");
        let dangling = d.path().join("dangling");
        symlink(d.path().join("nowhere"), &dangling).unwrap();
        let e = check("-o", &dangling).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = check("-o", &d.path().join("no/such/dir/file")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn errors_never_name_the_temporary_file() {
        let e = plain(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "Permission denied (os error 13) at path \"/x/.tmpn8h5Bp\"",
        ));
        assert!(!e.to_string().contains(".tmp"), "{e}");
    }
}
