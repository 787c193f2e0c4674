//! Probes that only mean something on the running system (root "/"): the DRM version ioctl on a
//! render node, `access(2)` for this user, the XDG runtime directory, and the Vulkan devices the
//! loader offers (described by [`crate::vulkan`], as smoke-bench describes them). Under
//! `--root DIR` none of this runs and the checks say so. The facts' types live in
//! [`crate::inventory`].

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::sysfs::RenderNode;
use super::Root;
use crate::inventory::{LiveFacts, RenderAccess, UserFacts, XdgFacts};

/// How the live probes load Vulkan, when they do.
#[derive(Debug, Clone, Copy)]
pub struct VulkanLoad<'a> {
    /// Another libvulkan than the system's (`RVL_VULKAN_LIBRARY`).
    pub library: Option<&'a Path>,
}

/// Run the live probes for the render nodes found in sysfs (and Vulkan when asked).
pub fn probe(
    root: &Root,
    nodes: &[RenderNode],
    env_xdg: Option<&str>,
    vulkan: Option<VulkanLoad>,
) -> LiveFacts {
    let groups_file = root.read_string("/etc/group").unwrap_or_default();
    LiveFacts {
        user: Some(user()),
        render: nodes
            .iter()
            .map(|n| render_access(root, &n.dev_path, &groups_file))
            .collect(),
        xdg_runtime_dir: env_xdg.map(|p| xdg(root, p)),
        vulkan: vulkan.map(|v| crate::vulkan::probe(v.library)),
    }
}

fn user() -> UserFacts {
    let mut groups: Vec<u32> = rustix::process::getgroups()
        .unwrap_or_default()
        .into_iter()
        .map(|g| g.as_raw())
        .collect();
    groups.push(rustix::process::getegid().as_raw());
    groups.sort_unstable();
    groups.dedup();
    UserFacts {
        euid: rustix::process::geteuid().as_raw(),
        groups,
    }
}

/// Name of group `gid` in /etc/group text.
pub fn group_name(groups_file: &str, gid: u32) -> Option<String> {
    groups_file.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let _pw = f.next()?;
        (f.next()?.parse::<u32>().ok()? == gid).then(|| name.to_string())
    })
}

fn render_access(root: &Root, dev_path: &str, groups_file: &str) -> RenderAccess {
    let host = root
        .resolve(dev_path)
        .unwrap_or_else(|_| root.join(dev_path));
    let meta = std::fs::metadata(&host).ok();
    let access = rustix::fs::access(
        &host,
        rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK,
    );
    let (ioctl_driver, ioctl_error) = match drm_driver_name(&host) {
        Ok(n) => (Some(n), None),
        Err(e) => (None, Some(e.to_string())),
    };
    RenderAccess {
        dev_path: dev_path.to_string(),
        ioctl_driver,
        ioctl_error,
        mode: meta.as_ref().map(|m| m.mode() & 0o7777),
        gid: meta.as_ref().map(|m| m.gid()),
        group: meta.as_ref().and_then(|m| group_name(groups_file, m.gid())),
        read_write: access.is_ok(),
        access_error: access.err().map(|e| std::io::Error::from(e).to_string()),
    }
}

/// DRM_IOCTL_VERSION's driver name (works on render nodes since Linux 3.13).
fn drm_driver_name(path: &std::path::Path) -> std::io::Result<String> {
    struct Card(std::fs::File);
    impl std::os::fd::AsFd for Card {
        fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
            self.0.as_fd()
        }
    }
    impl drm::Device for Card {}
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .or_else(|_| std::fs::File::open(path))?;
    let driver = drm::Device::get_driver(&Card(file))?;
    Ok(driver.name().to_string_lossy().into_owned())
}

fn xdg(root: &Root, path: &str) -> XdgFacts {
    let meta = root.metadata(path).ok();
    XdgFacts {
        path: path.to_string(),
        exists: meta.is_some(),
        is_dir: meta.as_ref().is_some_and(|m| m.is_dir()),
        owner: meta.as_ref().map(|m| m.uid()),
        mode: meta.as_ref().map(|m| m.mode() & 0o7777),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_from_etc_group() {
        let g = "root:x:0:\nvideo:x:44:u\nrender:x:105:u,v\nbroken line\n";
        assert_eq!(group_name(g, 105).as_deref(), Some("render"));
        assert_eq!(group_name(g, 0).as_deref(), Some("root"));
        assert_eq!(group_name(g, 7), None);
    }
}
