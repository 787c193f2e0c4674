//! The kernel as files show it: the running release (`/proc/sys/kernel/osrelease`, what
//! `uname -r` prints).

use super::Root;

const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// The running kernel's release, or None when the root has none (or an empty one).
pub fn running_release(root: &Root) -> Option<String> {
    root.read_capped(OSRELEASE, 4096)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|r| !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_is_trimmed_and_empty_means_none() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        assert_eq!(running_release(&root), None);
        std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(d.path().join("proc/sys/kernel/osrelease"), " \n").unwrap();
        assert_eq!(running_release(&root), None);
        std::fs::write(
            d.path().join("proc/sys/kernel/osrelease"),
            "7.0.0-rc3-marfrit-A1\n",
        )
        .unwrap();
        assert_eq!(
            running_release(&root).as_deref(),
            Some("7.0.0-rc3-marfrit-A1")
        );
    }
}
