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

/// The environment variables the live probes depend on.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeEnv<'a> {
    pub xdg_runtime_dir: Option<&'a str>,
    pub sudo_user: Option<&'a str>,
}

/// Run the live probes for the render nodes found in sysfs (and Vulkan when asked).
pub fn probe(
    root: &Root,
    nodes: &[RenderNode],
    env: ProbeEnv,
    vulkan: Option<VulkanLoad>,
) -> LiveFacts {
    let groups_file = root.read_string("/etc/group").unwrap_or_default();
    let me = process_user();
    // As root, access(2) passes for every node; what matters is the user who ran sudo.
    let invoker = env.sudo_user.filter(|_| me.euid == 0).and_then(|name| {
        let passwd = root.read_string("/etc/passwd").unwrap_or_default();
        sudo_user(name, &passwd, &groups_file)
    });
    LiveFacts {
        render: nodes
            .iter()
            .map(|n| {
                let mut a = render_access(root, &n.dev_path, &groups_file);
                if let Some(u) = &invoker {
                    a.read_write = mode_allows_read_write(&a, u);
                    a.access_error = (!a.read_write).then(|| {
                        format!(
                            "permission denied for {} (judged from the node's mode, as rvl runs under sudo)",
                            u.sudo_user.as_deref().unwrap_or("?")
                        )
                    });
                }
                a
            })
            .collect(),
        user: Some(invoker.unwrap_or(me)),
        xdg_runtime_dir: env.xdg_runtime_dir.map(|p| xdg(root, p)),
        vulkan: vulkan.map(|v| crate::vulkan::probe(v.library)),
    }
}

/// The invoking user of `sudo` from the system's passwd and group files: uid, primary group
/// and every group listing the name. None for root or a name passwd does not have.
pub fn sudo_user(name: &str, passwd: &str, groups_file: &str) -> Option<UserFacts> {
    if name == "root" {
        return None;
    }
    let (uid, gid) = passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 4 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })?;
    let mut groups: Vec<u32> = groups_file
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            let member = f.len() >= 4 && f[3].split(',').any(|m| m.trim() == name);
            member.then(|| f[2].parse().ok()).flatten()
        })
        .collect();
    groups.push(gid);
    groups.sort_unstable();
    groups.dedup();
    Some(UserFacts {
        euid: uid,
        groups,
        sudo_user: Some(name.to_string()),
    })
}

/// Whether the mode bits let `user` read and write the node: the owner's bits for its owner,
/// the group's for a member, the others' otherwise (as the kernel checks, ACLs aside).
pub fn mode_allows_read_write(node: &RenderAccess, user: &UserFacts) -> bool {
    let Some(mode) = node.mode else {
        return false;
    };
    let bits = if node.uid == Some(user.euid) {
        mode >> 6
    } else if node.gid.is_some_and(|g| user.groups.contains(&g)) {
        mode >> 3
    } else {
        mode
    };
    bits & 0o6 == 0o6
}

fn process_user() -> UserFacts {
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
        sudo_user: None,
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
        uid: meta.as_ref().map(|m| m.uid()),
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

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/home/alice:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/sh\n";
    const GROUP: &str = "root:x:0:\nvideo:x:44:alice\nrender:x:105:bob,carol\nalice:x:1000:\n";

    fn node(mode: u32, uid: u32, gid: u32) -> RenderAccess {
        RenderAccess {
            dev_path: "/dev/dri/renderD128".into(),
            ioctl_driver: Some("panthor".into()),
            ioctl_error: None,
            mode: Some(mode),
            gid: Some(gid),
            group: None,
            uid: Some(uid),
            read_write: true,
            access_error: None,
        }
    }

    #[test]
    fn the_sudo_user_is_read_from_passwd_and_group() {
        let alice = sudo_user("alice", PASSWD, GROUP).unwrap();
        assert_eq!((alice.euid, alice.groups.clone()), (1000, vec![44, 1000]));
        assert_eq!(alice.sudo_user.as_deref(), Some("alice"));
        let bob = sudo_user("bob", PASSWD, GROUP).unwrap();
        assert_eq!(bob.groups, vec![105, 1001]);
        assert!(sudo_user("root", PASSWD, GROUP).is_none());
        assert!(sudo_user("mallory", PASSWD, GROUP).is_none());
    }

    #[test]
    fn render_access_under_sudo_is_judged_for_the_invoking_user_not_root() {
        let render_0660 = node(0o660, 0, 105);
        let alice = sudo_user("alice", PASSWD, GROUP).unwrap();
        let bob = sudo_user("bob", PASSWD, GROUP).unwrap();
        assert!(
            !mode_allows_read_write(&render_0660, &alice),
            "alice is not in render"
        );
        assert!(mode_allows_read_write(&render_0660, &bob), "bob is");
        assert!(
            mode_allows_read_write(&node(0o666, 0, 105), &alice),
            "world rw"
        );
        assert!(
            mode_allows_read_write(&node(0o600, 1000, 105), &alice),
            "owner"
        );
        assert!(
            !mode_allows_read_write(&node(0o460, 1000, 44), &alice),
            "owner bits win"
        );
    }

    #[test]
    fn group_names_from_etc_group() {
        let g = "root:x:0:\nvideo:x:44:u\nrender:x:105:u,v\nbroken line\n";
        assert_eq!(group_name(g, 105).as_deref(), Some("render"));
        assert_eq!(group_name(g, 0).as_deref(), Some("root"));
        assert_eq!(group_name(g, 7), None);
    }
}
