//! The kernel as files show it: the running release (`/proc/sys/kernel/osrelease`, what
//! `uname -r` prints) and the build configuration a release installs next to its image
//! (`/boot/config-<release>`).

use super::Root;

const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
/// Biggest kernel config read, compressed or not (real ones are ~300 KiB).
pub const CONFIG_CAP: u64 = 8 << 20;

/// The running kernel's release, or None when the root has none (or an empty one).
pub fn running_release(root: &Root) -> Option<String> {
    read_release(root).ok().flatten()
}

/// [`running_release`], with a file that is there but cannot be read (permission, too large,
/// not a regular file) told apart from one that is not there: the error says which.
pub fn read_release(root: &Root) -> Result<Option<String>, String> {
    match root.read_capped(OSRELEASE, 4096) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).trim().to_string()).filter(|r| !r.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cannot read {OSRELEASE}: {}",
            crate::host::root::describe(&e)
        )),
    }
}

/// `/boot/config-<release>` and its text, when that file is there. A release that could name
/// another directory is refused.
pub fn boot_config(root: &Root, release: &str) -> Option<(String, String)> {
    if release.is_empty() || release.contains('/') {
        return None;
    }
    let path = format!("/boot/config-{release}");
    let text = root.read_capped(&path, CONFIG_CAP).ok()?;
    Some((path, String::from_utf8_lossy(&text).into_owned()))
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

    #[test]
    fn boot_config_is_read_by_release_and_never_outside_boot() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("boot")).unwrap();
        std::fs::write(d.path().join("boot/config-7.1.0"), "CONFIG_DRM_PANTHOR=y\n").unwrap();
        let root = Root::new(d.path());
        assert_eq!(
            boot_config(&root, "7.1.0"),
            Some((
                "/boot/config-7.1.0".to_string(),
                "CONFIG_DRM_PANTHOR=y\n".to_string()
            ))
        );
        assert_eq!(boot_config(&root, "6.1.75"), None);
        assert_eq!(boot_config(&root, "../boot/config-7.1.0"), None);
        assert_eq!(boot_config(&root, ""), None);
    }
}
