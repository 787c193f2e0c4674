//! Probes that only mean something on the running system (root "/"): the DRM version ioctl on a
//! render node, `access(2)` for this user, the XDG runtime directory, and the Vulkan devices the
//! loader offers. Under `--root DIR` none of this runs and the checks say so.

use std::os::unix::fs::MetadataExt;

use serde::{Deserialize, Serialize};

use super::sysfs::RenderNode;
use super::Root;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveFacts {
    /// Present only when the live probes ran.
    pub user: Option<UserFacts>,
    pub render: Vec<RenderAccess>,
    pub xdg_runtime_dir: Option<XdgFacts>,
    /// Present only when the Vulkan probe ran.
    pub vulkan: Option<VulkanProbe>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFacts {
    pub euid: u32,
    /// Effective and supplementary group ids.
    pub groups: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderAccess {
    /// "/dev/dri/renderD128".
    pub dev_path: String,
    /// Driver name DRM_IOCTL_VERSION returned.
    pub ioctl_driver: Option<String>,
    pub ioctl_error: Option<String>,
    pub mode: Option<u32>,
    pub gid: Option<u32>,
    /// Group name of `gid` from /etc/group.
    pub group: Option<String>,
    /// `access(R_OK | W_OK)` succeeded for this user.
    pub read_write: bool,
    pub access_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XdgFacts {
    pub path: String,
    pub exists: bool,
    pub is_dir: bool,
    pub owner: Option<u32>,
    pub mode: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VulkanProbe {
    /// Why the loader or an instance could not be used.
    pub error: Option<String>,
    pub devices: Vec<VulkanDevice>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VulkanDevice {
    pub name: String,
    pub api_version: String,
    pub vendor_id: u32,
    /// VkDriverId (MESA_PANVK = 20); none before Vulkan 1.2.
    pub driver_id: Option<i32>,
    pub driver_name: Option<String>,
    /// "Mesa 26.1.6" for Mesa drivers.
    pub driver_info: Option<String>,
    pub shader_float16: Option<bool>,
    pub shader_int8: Option<bool>,
    pub integer_dot_product: Option<bool>,
    pub subgroup_size: Option<u32>,
    pub max_compute_shared_memory: u32,
}

/// VkDriverId of Mesa panvk.
pub const DRIVER_ID_MESA_PANVK: i32 = 20;

/// Run the live probes for the render nodes found in sysfs (and Vulkan when asked).
pub fn probe(root: &Root, nodes: &[RenderNode], env_xdg: Option<&str>, vulkan: bool) -> LiveFacts {
    let groups_file = root.read_string("/etc/group").unwrap_or_default();
    LiveFacts {
        user: Some(user()),
        render: nodes
            .iter()
            .map(|n| render_access(root, &n.dev_path, &groups_file))
            .collect(),
        xdg_runtime_dir: env_xdg.map(|p| xdg(root, p)),
        vulkan: vulkan.then(probe_vulkan),
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

/// Load libvulkan at run time and describe every physical device. Never panics on a missing
/// loader or a broken driver: that becomes `error`.
pub fn probe_vulkan() -> VulkanProbe {
    match probe_vulkan_inner() {
        Ok(devices) => VulkanProbe {
            error: None,
            devices,
        },
        Err(error) => VulkanProbe {
            error: Some(error),
            devices: Vec::new(),
        },
    }
}

fn probe_vulkan_inner() -> Result<Vec<VulkanDevice>, String> {
    use ash::vk;
    // SAFETY: loading the system Vulkan loader runs its initialisers; that is the documented
    // way to use it and nothing else in this process uses Vulkan at the same time.
    let entry = unsafe { ash::Entry::load() }
        .map_err(|e| format!("cannot load the Vulkan loader (libvulkan.so.1): {e}"))?;
    // SAFETY: plain queries/instance lifetime on a loaded entry; the instance is destroyed below
    // and no handle outlives it.
    unsafe {
        let loader_version = entry
            .try_enumerate_instance_version()
            .ok()
            .flatten()
            .unwrap_or(vk::API_VERSION_1_0);
        let api = loader_version.min(vk::API_VERSION_1_3);
        let app = vk::ApplicationInfo::default()
            .application_name(c"rvl doctor")
            .api_version(api);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        let instance = entry
            .create_instance(&info, None)
            .map_err(|e| format!("vkCreateInstance failed: {e}"))?;
        let result = instance
            .enumerate_physical_devices()
            .map_err(|e| format!("vkEnumeratePhysicalDevices failed: {e}"))
            .map(|pds| {
                pds.into_iter()
                    .map(|pd| describe(&instance, pd, api))
                    .collect()
            });
        instance.destroy_instance(None);
        result
    }
}

/// # Safety
/// `pd` must come from `instance`, which must be alive.
unsafe fn describe(
    instance: &ash::Instance,
    pd: ash::vk::PhysicalDevice,
    api: u32,
) -> VulkanDevice {
    use ash::vk;
    let props = instance.get_physical_device_properties(pd);
    let version = |v: u32| {
        format!(
            "{}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        )
    };
    let mut dev = VulkanDevice {
        name: props
            .device_name_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default(),
        api_version: version(props.api_version),
        vendor_id: props.vendor_id,
        max_compute_shared_memory: props.limits.max_compute_shared_memory_size,
        ..Default::default()
    };
    // The *2 queries and 1.2 structs need both the instance and the device at 1.2.
    if api >= vk::API_VERSION_1_2 && props.api_version >= vk::API_VERSION_1_2 {
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut driver)
            .push_next(&mut subgroup);
        instance.get_physical_device_properties2(pd, &mut p2);
        dev.driver_id = Some(driver.driver_id.as_raw());
        dev.driver_name = driver
            .driver_name_as_c_str()
            .ok()
            .map(|c| c.to_string_lossy().into_owned());
        dev.driver_info = driver
            .driver_info_as_c_str()
            .ok()
            .map(|c| c.to_string_lossy().into_owned());
        dev.subgroup_size = Some(subgroup.subgroup_size);

        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut dot = vk::PhysicalDeviceShaderIntegerDotProductFeatures::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f12);
        let has_13 = api >= vk::API_VERSION_1_3 && props.api_version >= vk::API_VERSION_1_3;
        if has_13 {
            f2 = f2.push_next(&mut dot);
        }
        instance.get_physical_device_features2(pd, &mut f2);
        dev.shader_float16 = Some(f12.shader_float16 == vk::TRUE);
        dev.shader_int8 = Some(f12.shader_int8 == vk::TRUE);
        dev.integer_dot_product = has_13.then_some(dot.shader_integer_dot_product == vk::TRUE);
    }
    dev
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
