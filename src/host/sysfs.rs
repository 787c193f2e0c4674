//! sysfs: the GPU platform device and its driver, DRM render nodes, loaded modules.
//! Devices are found by their device-tree compatible, never by a fixed name: mainline calls the
//! GPU `fb000000.gpu`, Armbian's BSP `fb000000.gpu-panthor`, Radxa's BSP `fb000000.gpu-mali`.

use std::path::Path;

use super::devicetree::{is_mali_compatible, parse_string_list};
use super::Root;
pub use crate::inventory::{PlatformGpu, RenderNode};

const PLATFORM_DEVICES: &str = "/sys/bus/platform/devices";
const DRM_CLASS: &str = "/sys/class/drm";
const SMALL: u64 = 64 << 10;

/// Modules whose presence in /sys/module tells which GPU stack the kernel carries. Built-in
/// code shows up there too when it has parameters or a MODULE_VERSION (kbase has one).
pub const GPU_MODULES: &[&str] = &[
    "panthor",
    "panfrost",
    "bifrost_kbase",
    "valhall_kbase",
    "mali_kbase",
];

/// The kbase module names among [`GPU_MODULES`].
pub const KBASE_MODULES: &[&str] = &["bifrost_kbase", "valhall_kbase", "mali_kbase"];

/// What a `uevent` file says about a device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uevent {
    pub driver: Option<String>,
    pub of_fullname: Option<String>,
    pub compatible: Vec<String>,
}

/// Parse `KEY=value` lines; `OF_COMPATIBLE_<n>` entries come back in index order.
pub fn parse_uevent(text: &str) -> Uevent {
    let mut out = Uevent::default();
    let mut compat: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key.trim() {
            "DRIVER" if !value.is_empty() => out.driver = Some(value.to_string()),
            "OF_FULLNAME" => out.of_fullname = Some(value.to_string()),
            k => {
                if let Some(n) = k.strip_prefix("OF_COMPATIBLE_") {
                    if let Ok(i) = n.parse::<usize>() {
                        compat.push((i, value.to_string()));
                    }
                }
            }
        }
    }
    compat.sort();
    out.compatible = compat.into_iter().map(|(_, v)| v).collect();
    out
}

fn basename(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The driver bound to a device directory: the basename of its `driver` link.
fn bound_driver(root: &Root, dev: &str) -> Option<String> {
    root.read_link(format!("{dev}/driver"))
        .ok()
        .and_then(|t| basename(&t))
}

/// Platform devices with a Mali compatible, sorted by name.
pub fn platform_gpus(root: &Root) -> Vec<PlatformGpu> {
    let mut out = Vec::new();
    for name in root.list_dir(PLATFORM_DEVICES).unwrap_or_default() {
        let dev = format!("{PLATFORM_DEVICES}/{name}");
        let uevent = root
            .read_capped(format!("{dev}/uevent"), SMALL)
            .map(|b| parse_uevent(&String::from_utf8_lossy(&b)))
            .unwrap_or_default();
        // uevent carries OF_COMPATIBLE_n for DT devices; of_node is the fallback (one read less
        // per device on a board with hundreds of them).
        let compatible = if uevent.compatible.is_empty() {
            root.read_capped(format!("{dev}/of_node/compatible"), SMALL)
                .map(|b| parse_string_list(&b))
                .unwrap_or_default()
        } else {
            uevent.compatible.clone()
        };
        if !compatible.iter().any(|c| is_mali_compatible(c)) {
            continue;
        }
        let path = root
            .canonicalize(&dev)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| dev.clone());
        out.push(PlatformGpu {
            driver: bound_driver(root, &dev).or(uevent.driver),
            gpuinfo: root
                .read_capped(format!("{dev}/gpuinfo"), SMALL)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).trim().to_string()),
            name,
            path,
            compatible,
        });
    }
    out
}

/// Every `renderD*` node with the device and driver behind it.
pub fn render_nodes(root: &Root) -> Vec<RenderNode> {
    root.list_dir(DRM_CLASS)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with("renderD"))
        .map(|name| {
            let dev = format!("{DRM_CLASS}/{name}/device");
            let device = root
                .canonicalize(&dev)
                .ok()
                .filter(|_| root.exists(&dev))
                .map(|p| p.display().to_string());
            let dev_path = format!("/dev/dri/{name}");
            RenderNode {
                driver: bound_driver(root, &dev),
                device,
                dev_exists: root.symlink_metadata(&dev_path).is_ok(),
                dev_path,
                name,
            }
        })
        .collect()
}

/// Which of [`GPU_MODULES`] appear in /sys/module.
pub fn gpu_modules(root: &Root) -> Vec<String> {
    GPU_MODULES
        .iter()
        .filter(|m| root.is_dir(format!("/sys/module/{m}")))
        .map(|m| m.to_string())
        .collect()
}

/// kbase's MODULE_VERSION ("g18p0-01eac0 (UK version 1.36)"), present even when built in.
pub fn kbase_version(root: &Root) -> Option<String> {
    KBASE_MODULES.iter().find_map(|m| {
        root.read_capped(format!("/sys/module/{m}/version"), SMALL)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uevent_of_a_bound_panthor_device() {
        let u = parse_uevent(
            "DRIVER=panthor\nOF_NAME=gpu\nOF_FULLNAME=/gpu@fb000000\n\
             OF_COMPATIBLE_1=arm,mali-valhall-csf\nOF_COMPATIBLE_0=rockchip,rk3588-mali\n\
             OF_COMPATIBLE_N=2\nMODALIAS=of:NgpuT(null)Crockchip,rk3588-maliCarm,mali-valhall-csf\n",
        );
        assert_eq!(u.driver.as_deref(), Some("panthor"));
        assert_eq!(u.of_fullname.as_deref(), Some("/gpu@fb000000"));
        assert_eq!(
            u.compatible,
            vec!["rockchip,rk3588-mali", "arm,mali-valhall-csf"]
        );
    }

    #[test]
    fn uevent_without_driver_and_with_junk_lines() {
        let u =
            parse_uevent("junk\nOF_COMPATIBLE_x=bad\nDRIVER=\n=\nOF_COMPATIBLE_0=arm,mali-bifrost");
        assert_eq!(u.driver, None);
        assert_eq!(u.compatible, vec!["arm,mali-bifrost"]);
    }

    #[test]
    fn panthor_capability_follows_the_binding() {
        let mut g = PlatformGpu {
            compatible: vec!["arm,mali-bifrost".into()],
            ..Default::default()
        };
        assert!(!g.panthor_capable());
        g.compatible = vec!["rockchip,rk3588-mali".into(), "arm,mali-valhall-csf".into()];
        assert!(g.panthor_capable());
    }
}
