//! `gpu-driver`: find the GPU by compatible, say which driver is bound, report the device-tree
//! status of every GPU node, and name the overlay or kernel that puts panthor in charge.

use super::kernel::{kernel_kind, mainline_fix, KernelKind};
use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::devicetree::DtNode;
use crate::host::sysfs::PlatformGpu;
use crate::inventory::Inventory;
use crate::shell::quote;

const ID: &str = "gpu-driver";

fn panthor_node(n: &DtNode) -> bool {
    n.compatible.iter().any(|c| c == "arm,mali-valhall-csf")
}

fn gpu_nodes(inv: &Inventory) -> &[DtNode] {
    inv.devicetree
        .as_ref()
        .map(|d| d.gpu_nodes.as_slice())
        .unwrap_or_default()
}

/// The fix that hands the GPU from kbase to panthor on a vendor kernel, from the DT layout.
fn vendor_switch_fix(ctx: &Context) -> String {
    let nodes = gpu_nodes(ctx.inv);
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
        Some(f) => format!(
            "{}; or boot mainline: {}",
            ctx.on_board(&f),
            mainline_fix(ctx)
        ),
        None => format!("boot mainline: {}", mainline_fix(ctx)),
    }
}

/// The running system's finding, as a warning when the next boot clears a failure.
pub fn check(ctx: &Context) -> Finding {
    super::pending::after_reboot(ctx, check_running(ctx))
}

fn check_running(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let inv = ctx.inv;
    let finding = if let Some(k) = inv.gpu.kbase_device() {
        Finding::fail(
            ID,
            format!("kbase (vendor driver \"mali\") owns the GPU {}", k.name),
        )
        .fix(vendor_switch_fix(ctx))
    } else if let Some(dev) = inv.gpu.panthor_device() {
        judge_device(ctx, dev)
    } else {
        no_device(ctx)
    };
    finding.evidence(evidence(inv))
}

fn evidence(inv: &Inventory) -> Vec<String> {
    let mut ev: Vec<String> = gpu_nodes(inv)
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
    ev
}

/// The panthor-capable device exists: who, if anyone, has bound it.
fn judge_device(ctx: &Context, dev: &PlatformGpu) -> Finding {
    match dev.driver.as_deref() {
        Some("panthor") if ctx.inv.gpu.dev_mali0 => Finding::warn(
            ID,
            format!("panthor drives {}, but /dev/mali0 exists too", dev.name),
        )
        .fix(vendor_switch_fix(ctx)),
        Some("panthor") => Finding::pass(ID, format!("panthor drives {}", dev.name)),
        Some(other) => Finding::fail(ID, format!("{} is bound to {other}, not panthor", dev.name))
            .fix(ctx.on_board(&format!(
                "echo {} | sudo tee {}, then find why {other} claims it",
                quote(&dev.name),
                quote(&format!("/sys/bus/platform/drivers/{other}/unbind"))
            ))),
        None => {
            let (why, fix) = why_unbound(ctx);
            Finding::fail(ID, format!("{} has no driver: {why}", dev.name)).fix(fix)
        }
    }
}

/// Why panthor has not bound a device it could drive, most specific cause first.
fn why_unbound(ctx: &Context) -> (String, String) {
    let inv = ctx.inv;
    let panthor_module = inv.kernel.modules.iter().any(|m| m == "panthor");
    let as_module = inv
        .kernel
        .config
        .as_ref()
        .map(|c| c.get("CONFIG_DRM_PANTHOR"))
        == Some("m");
    if inv.firmware.found.is_none() {
        (
            format!("probe failed: firmware {} is missing", inv.firmware.wanted),
            format!(
                "{}, then {} (see the firmware check)",
                ctx.setup("firmware"),
                if ctx.hint.is_image() {
                    "boot the board from the image"
                } else {
                    "reboot"
                }
            ),
        )
    } else if as_module && !panthor_module {
        (
            "the panthor module is not loaded".to_string(),
            ctx.on_board("sudo modprobe panthor (then `dmesg | grep -i panthor` if it fails)"),
        )
    } else {
        (
            "its probe failed".to_string(),
            ctx.on_board("read the probe error: sudo dmesg | grep -i -e panthor -e mali"),
        )
    }
}

/// No panthor-capable platform device: a disabled DT node creates none.
fn no_device(ctx: &Context) -> Finding {
    let nodes = gpu_nodes(ctx.inv);
    if let Some(n) = nodes.iter().find(|n| panthor_node(n) && !n.enabled()) {
        let summary = format!("GPU node {} is disabled in the device tree", n.path);
        return Finding::fail(ID, summary).fix(enable_node_fix(ctx, n));
    }
    if !nodes.is_empty() || !ctx.inv.gpu.devices.is_empty() {
        return Finding::fail(ID, "no panthor GPU node: the device tree only has kbase's")
            .fix(vendor_switch_fix(ctx));
    }
    Finding::fail(ID, "no Mali GPU in the device tree or sysfs").fix(format!(
        "boot a device tree with the RK3588 GPU node: {}",
        mainline_fix(ctx)
    ))
}

/// A BSP's gpu-panthor@ node is switched by its overlay; mainline's &gpu needs one of rvl's.
fn enable_node_fix(ctx: &Context, n: &DtNode) -> String {
    if n.path.starts_with("/gpu-panthor@")
        || kernel_kind(ctx.inv, ctx.profile) == KernelKind::Vendor
    {
        vendor_switch_fix(ctx)
    } else if crate::setup::overlays::for_board(ctx.board_id()).is_some() {
        format!(
            "this board's mainline device tree leaves &gpu disabled; rvl ships the overlay that enables it (mali-supply, status = \"okay\"): {}",
            ctx.setup("gpu-overlay")
        )
    } else {
        // Setup has no overlay for this board, so the fix is the manual one, with the
        // regulator's label when the profile knows it.
        let supply = match ctx.profile.and_then(|p| p.gpu.supply.as_deref()) {
            Some(label) => format!("mali-supply = <&{label}>"),
            None => "mali-supply (the board's GPU regulator)".to_string(),
        };
        // On a kernel older than the board's first mainline with &gpu, that kernel is the fix.
        let newer = match ctx.profile {
            Some(p)
                if p.mainline_enables_gpu == Some(true)
                    && kernel_kind(ctx.inv, ctx.profile) == KernelKind::TooOld =>
            {
                format!(
                    "boot mainline ≥ {}, whose device tree for this board enables it, or ",
                    p.kernel.min_mainline
                )
            }
            _ => String::new(),
        };
        format!("{newer}enable &gpu with a device-tree overlay that sets {supply} and status = \"okay\", add it to the boot configuration and reboot")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;
    use crate::firmware::{Compression, FirmwareFile};
    use crate::inventory::KernelConfigFacts;

    fn mainline_with_firmware() -> Inventory {
        let mut inv = Inventory::default();
        inv.kernel.release = Some("7.0.0-rc3-marfrit-A1".into());
        inv.firmware.found = Some(FirmwareFile {
            path: "/lib/firmware/arm/mali/arch10.8/mali_csffw.bin".into(),
            compression: Compression::None,
            size: None,
            sha256: None,
            header: None,
            error: None,
        });
        inv
    }

    #[test]
    fn an_unbound_gpu_names_the_most_specific_cause() {
        let mut inv = mainline_with_firmware();
        let mut cfg = KernelConfigFacts::default();
        cfg.options.insert("CONFIG_DRM_PANTHOR".into(), "m".into());
        inv.kernel.config = Some(cfg);
        let why = |inv: &Inventory| super::super::with_boltzmann(inv, |ctx| why_unbound(ctx).0);
        assert_eq!(why(&inv), "the panthor module is not loaded");
        inv.kernel.modules = vec!["panthor".into()];
        assert_eq!(why(&inv), "its probe failed");
        inv.firmware.found = None;
        assert!(why(&inv).contains("is missing"), "firmware first");
    }

    #[test]
    fn a_gpu_bound_to_another_driver_fails_with_its_unbind() {
        let dev = PlatformGpu {
            name: "fb000000.gpu".into(),
            path: "/sys/devices/platform/fb000000.gpu".into(),
            compatible: vec!["arm,mali-valhall-csf".into()],
            driver: Some("simple-pm-bus".into()),
            gpuinfo: None,
        };
        let f = super::super::with_boltzmann(&Inventory::default(), |ctx| judge_device(ctx, &dev));
        assert_eq!(f.status, Status::Fail);
        assert!(f.fix.unwrap().starts_with(
            "echo fb000000.gpu | sudo tee /sys/bus/platform/drivers/simple-pm-bus/unbind"
        ));
    }

    #[test]
    fn a_disabled_node_is_enabled_by_the_overlay_its_kernel_expects() {
        let node = |path: &str| DtNode {
            path: path.into(),
            compatible: vec!["arm,mali-valhall-csf".into()],
            status: Some("disabled".into()),
        };
        super::super::with_boltzmann(&mainline_with_firmware(), |ctx| {
            // boltzmann's mainline DT enables &gpu, so rvl ships no overlay for it: the
            // fix is the manual one, never a setup step that would do nothing.
            let mainline = enable_node_fix(ctx, &node("/gpu@fb000000"));
            assert!(mainline.starts_with("enable &gpu"), "{mainline}");
            assert!(!mainline.contains("rvl setup"), "{mainline}");
            let bsp = enable_node_fix(ctx, &node("/gpu-panthor@fb000000"));
            assert_eq!(bsp, vendor_switch_fix(ctx));
        });
    }
}
