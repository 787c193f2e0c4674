//! One setup at a time per root: an exclusive `flock` on `/var/lib/rvl/lock`. The kernel drops
//! it when the process ends, however it ends, so a crash never leaves a stale lock.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use rustix::fs::{flock, FlockOperation, Mode, OFlags};

use super::journal::StateDir;
use crate::error::Error;
use crate::host::{chase, Root};

/// Held for as long as the value lives.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Take the lock or fail at once with exit status LOCKED, naming the holder's pid.
    pub fn acquire(root: &Root) -> anyhow::Result<Lock> {
        let state = StateDir::new(root);
        let path = state.host("lock");
        let denied = |e: io::Error| Error::io("cannot open the lock", &path, e);
        // The state directory is reached with no link on the way and the lock file is never a
        // link: a planted `var/lib/rvl` link must not put the lock (or anything) outside the root.
        let (dir, made) = chase::make_dirs(root, &state.path("")).map_err(denied)?;
        let _ = made;
        let fd = rustix::fs::openat(
            dir.fd(),
            "lock",
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| denied(e.into()))?;
        let mut file = File::from(fd);
        if !file.metadata().map_err(denied)?.is_file() {
            return Err(denied(io::Error::other("not a regular file")).into());
        }
        if let Err(e) = flock(&file, FlockOperation::NonBlockingLockExclusive) {
            if e == rustix::io::Errno::WOULDBLOCK {
                let mut holder = String::new();
                let _ = Read::by_ref(&mut file).take(32).read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {holder})")
                };
                return Err(Error::Locked(format!(
                    "another rvl setup is running on this root{who}; wait for it to finish (lock: {})",
                    path.display()
                ))
                .into());
            }
            return Err(denied(e.into()).into());
        }
        // Record who holds it, for the message above.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        Ok(Lock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};

    #[test]
    fn second_lock_on_the_same_root_is_refused_until_the_first_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let first = Lock::acquire(&root).unwrap();
        let err = Lock::acquire(&root).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::LOCKED);
        assert!(err
            .to_string()
            .contains(&format!("pid {}", std::process::id())));
        drop(first);
        // Another test thread spawning a process at that moment shares the lock's open file
        // until its child execs (close-on-exec): give such a child a moment, then insist.
        let mut again = Lock::acquire(&root);
        for _ in 0..50 {
            if again.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            again = Lock::acquire(&root);
        }
        again.unwrap();
    }
}
