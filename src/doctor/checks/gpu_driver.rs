//! `gpu-driver`: find the GPU by compatible, say which driver is bound, report the device-tree
//! status of every GPU node, and name the overlay or kernel that puts panthor in charge.

use super::kernel::{kernel_kind, mainline_fix, KernelKind};
use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::devicetree::DtNode;

const ID: &str = "gpu-driver";

fn panthor_node(n: &DtNode) -> bool {
    n.compatible.iter().any(|c| c == "arm,mali-valhall-csf")
}

/// The fix that hands the GPU from kbase to panthor on a vendor kernel, from the DT layout.
fn vendor_switch_fix(ctx: &Context) -> String {
    let nodes = ctx
        .inv
        .devicetree
        .as_ref()
        .map(|d| d.gpu_nodes.as_slice())
        .unwrap_or_default();
    let overlays = ctx.profile.map(|p| &p.overlays);
    // Radxa BSP: kbase lives in gpu-mali@…, enabled by the rk3588-mali-enable overlay.
    let radxa_kbase_on = nodes
        .iter()
        .any(|n| n.path.starts_with("/gpu-mali@") && n.enabled());
    // Armbian BSP: panthor lives in gpu-panthor@…, enabled by the panthor-gpu overlay.
    let armbian_panthor_off = nodes
        .iter()
        .any(|n| n.path.starts_with("/gpu-panthor@") && !n.enabled());
    let boot = &ctx.inv.boot;
    let overlay_fix = if radxa_kbase_on {
        let name = overlays
            .and_then(|o| o.radxa_kbase.as_deref())
            .unwrap_or("rk3588-mali-enable");
        Some(format!(
            "disable the {name} overlay (rsetup → Overlays, which runs u-boot-update) and reboot"
        ))
    } else if armbian_panthor_off {
        let name = overlays
            .and_then(|o| o.armbian_panthor.as_deref())
            .unwrap_or("panthor-gpu");
        // Where the overlay is switched on depends on who writes the boot configuration.
        Some(if boot.armbian.is_some() {
            format!("add {name} to overlays= in /boot/armbianEnv.txt and reboot")
        } else if boot.uboot_menu.is_some() {
            format!(
                "add the rockchip-rk3588-{name}.dtbo overlay to U_BOOT_FDT_OVERLAYS in /etc/u-boot-menu/conf.d/, run sudo u-boot-update and reboot"
            )
        } else if boot.extlinux.is_some() {
            format!(
                "add `fdtoverlays <overlay dir>/rockchip-rk3588-{name}.dtbo` to the default entry of /boot/extlinux/extlinux.conf and reboot"
            )
        } else {
            format!("enable the {name} device-tree overlay and reboot")
        })
    } else {
        None
    };
    match overlay_fix {
        Some(f) => format!("{f}; or boot mainline: {}", mainline_fix(ctx)),
        None => format!("boot mainline: {}", mainline_fix(ctx)),
    }
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let inv = ctx.inv;
    let nodes = inv
        .devicetree
        .as_ref()
        .map(|d| d.gpu_nodes.as_slice())
        .unwrap_or_default();
    let mut ev: Vec<String> = nodes
        .iter()
        .map(|n| {
            format!(
                "DT {}: {} (compatible {})",
                n.path,
                n.status.as_deref().unwrap_or("no status = enabled"),
                n.compatible.join(", ")
            )
        })
        .collect();
    for d in &inv.gpu.devices {
        ev.push(format!(
            "device {}: driver {} (compatible {})",
            d.name,
            d.driver.as_deref().unwrap_or("none"),
            d.compatible.join(", ")
        ));
        if let Some(info) = &d.gpuinfo {
            ev.push(format!("{} gpuinfo: {info}", d.name));
        }
    }
    if inv.gpu.dev_mali0 {
        ev.push("/dev/mali0 exists (kbase's device)".into());
    }

    if let Some(k) = inv.gpu.kbase_device() {
        return Finding::fail(
            ID,
            format!("kbase (vendor driver \"mali\") owns the GPU {}", k.name),
        )
        .evidence(ev)
        .fix(vendor_switch_fix(ctx));
    }
    if let Some(dev) = inv.gpu.panthor_device() {
        if dev.driver.as_deref() == Some("panthor") {
            if inv.gpu.dev_mali0 {
                return Finding::warn(
                    ID,
                    format!("panthor drives {}, but /dev/mali0 exists too", dev.name),
                )
                .evidence(ev)
                .fix(vendor_switch_fix(ctx));
            }
            return Finding::pass(ID, format!("panthor drives {}", dev.name)).evidence(ev);
        }
        if let Some(other) = dev.driver.as_deref() {
            return Finding::fail(ID, format!("{} is bound to {other}, not panthor", dev.name))
                .evidence(ev)
                .fix(format!("echo {0} | sudo tee /sys/bus/platform/drivers/{other}/unbind, then find why {other} claims it", dev.name));
        }
        let panthor_module = inv.kernel.modules.iter().any(|m| m == "panthor");
        let as_module = inv
            .kernel
            .config
            .as_ref()
            .map(|c| c.get("CONFIG_DRM_PANTHOR"))
            == Some("m");
        let (why, fix) = if inv.firmware.found.is_none() {
            (
                format!("probe failed: firmware {} is missing", inv.firmware.wanted),
                format!(
                    "{}, then reboot (see the firmware check)",
                    ctx.setup("firmware")
                ),
            )
        } else if as_module && !panthor_module {
            (
                "the panthor module is not loaded".to_string(),
                "sudo modprobe panthor (then `dmesg | grep -i panthor` if it fails)".to_string(),
            )
        } else {
            (
                "its probe failed".to_string(),
                "read the probe error: sudo dmesg | grep -i -e panthor -e mali".to_string(),
            )
        };
        return Finding::fail(ID, format!("{} has no driver: {why}", dev.name))
            .evidence(ev)
            .fix(fix);
    }
    // No panthor-capable platform device: a disabled DT node creates none.
    if let Some(n) = nodes.iter().find(|n| panthor_node(n) && !n.enabled()) {
        let summary = format!("GPU node {} is disabled in the device tree", n.path);
        let fix = if n.path.starts_with("/gpu-panthor@")
            || kernel_kind(inv, ctx.profile) == KernelKind::Vendor
        {
            vendor_switch_fix(ctx)
        } else if ctx.profile.and_then(|p| p.mainline_enables_gpu) == Some(false) {
            format!(
                "this board's mainline device tree leaves &gpu disabled: {} (overlay with mali-supply and status = \"okay\")",
                ctx.setup("gpu-overlay")
            )
        } else {
            format!(
                "enable &gpu (mali-supply, status = \"okay\") with a device-tree overlay: {}",
                ctx.setup("gpu-overlay")
            )
        };
        return Finding::fail(ID, summary).evidence(ev).fix(fix);
    }
    if !nodes.is_empty() || !inv.gpu.devices.is_empty() {
        return Finding::fail(ID, "no panthor GPU node: the device tree only has kbase's")
            .evidence(ev)
            .fix(vendor_switch_fix(ctx));
    }
    Finding::fail(ID, "no Mali GPU in the device tree or sysfs")
        .evidence(ev)
        .fix(format!(
            "boot a device tree with the RK3588 GPU node: {}",
            mainline_fix(ctx)
        ))
}
