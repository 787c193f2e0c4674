//! `kernel`: the running release, mainline (panthor-capable) or vendor BSP, and the kernel
//! configuration against `kernel/panthor.config` when it can be read.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::sysfs::KBASE_MODULES;
use crate::inventory::Inventory;
use crate::kernelcfg::{self, KernelConfig, KernelVersion};
use crate::profile::Profile;

const ID: &str = "kernel";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    /// Mainline at or above the profile's minimum.
    Mainline,
    /// A Rockchip BSP kernel (kbase present, or a vendor release string).
    Vendor,
    /// Mainline-looking but older than panthor.
    TooOld,
    /// No readable release.
    Unknown,
}

pub fn kernel_kind(inv: &Inventory, profile: Option<&Profile>) -> KernelKind {
    let Some(release) = inv.kernel.release.as_deref() else {
        return KernelKind::Unknown;
    };
    let kbase = inv.kernel.kbase_version.is_some()
        || inv
            .kernel
            .modules
            .iter()
            .any(|m| KBASE_MODULES.contains(&m.as_str()));
    let vendor_release = is_known_vendor_release(release, profile);
    let version = KernelVersion::parse(release);
    let old = version.is_some_and(|v| v < min_mainline(profile));
    // Vendor markers only count below the panthor cut-off: Armbian names its mainline kernels
    // "6.16.8-edge-rockchip64", while every Rockchip BSP is 5.10 or 6.1.
    if kbase || vendor_release || (old && kernelcfg::looks_like_vendor_release(release)) {
        return KernelKind::Vendor;
    }
    match version {
        Some(_) if old => KernelKind::TooOld,
        Some(_) => KernelKind::Mainline,
        None => KernelKind::Unknown,
    }
}

/// How to get onto the right kernel for this board.
pub fn mainline_fix(ctx: &Context) -> String {
    match ctx.profile.and_then(|p| p.kernel.mainline.as_ref()) {
        Some(m) => format!("{} (boots {})", ctx.setup("kernel"), m.release),
        None => format!(
            "install a mainline kernel ≥ {} with CONFIG_DRM_PANTHOR (kernel/panthor.config lists what it needs)",
            ctx.profile.map(|p| p.kernel.min_mainline.as_str()).unwrap_or("6.10")
        ),
    }
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let inv = ctx.inv;
    let k = &inv.kernel;
    let mut ev = Vec::new();
    ev.push(format!(
        "release: {}",
        k.release
            .as_deref()
            .unwrap_or("(proc/sys/kernel/osrelease unreadable)")
    ));
    if !k.modules.is_empty() {
        ev.push(format!("/sys/module: {}", k.modules.join(", ")));
    }
    if let Some(v) = &k.kbase_version {
        ev.push(format!("kbase version: {v}"));
    }
    if let Some(m) = ctx.profile.and_then(|p| p.kernel.mainline.as_ref()) {
        ev.push(format!(
            "pinned mainline kernel for this board: {}",
            m.release
        ));
    }
    let config_unmet = k.config.as_ref().map(|c| {
        ev.push(format!(
            "config: {} (CONFIG_DRM_PANTHOR={})",
            c.source,
            c.get("CONFIG_DRM_PANTHOR")
        ));
        let cfg = KernelConfig {
            options: c.options.clone(),
        };
        kernelcfg::unmet(&KernelConfig::parse(kernelcfg::PANTHOR_FRAGMENT), &cfg)
    });
    if k.config.is_none() {
        ev.push("config: not readable (no /proc/config.gz or /boot/config-<release>)".into());
    }
    let release = k.release.clone().unwrap_or_default();
    let panthor_bound = inv
        .gpu
        .panthor_device()
        .is_some_and(|d| d.driver.as_deref() == Some("panthor"));

    match kernel_kind(inv, ctx.profile) {
        KernelKind::Unknown => {
            return Finding::warn(
                ID,
                "cannot tell which kernel runs (release unreadable or not a version)",
            )
            .evidence(ev)
            .fix("check that /proc is mounted; `uname -r` shows the release")
        }
        KernelKind::Vendor if panthor_bound => {
            return Finding::warn(
                ID,
                format!(
                "vendor BSP kernel {release} with panthor bound; rvl supports the mainline kernel"
            ),
            )
            .evidence(ev)
            .fix(mainline_fix(ctx))
        }
        KernelKind::Vendor => {
            return Finding::fail(
                ID,
                format!("vendor BSP kernel {release}: kbase, not panthor"),
            )
            .evidence(ev)
            .fix(mainline_fix(ctx))
        }
        KernelKind::TooOld => {
            return Finding::fail(
                ID,
                format!(
                    "kernel {release} is older than panthor (mainline ≥ {})",
                    ctx.profile
                        .map(|p| p.kernel.min_mainline.as_str())
                        .unwrap_or("6.10")
                ),
            )
            .evidence(ev)
            .fix(mainline_fix(ctx))
        }
        KernelKind::Mainline => {}
    }
    let unmet = config_unmet.unwrap_or_default();
    let detail: Vec<String> = unmet
        .iter()
        .map(|u| {
            format!(
                "{}={} (needs {})",
                u.option,
                u.actual,
                if u.wanted == "m" { "m or y" } else { &u.wanted }
            )
        })
        .collect();
    ev.extend(detail.iter().map(|d| format!("unmet: {d}")));
    if unmet.iter().any(|u| u.option == "CONFIG_DRM_PANTHOR") {
        return Finding::fail(
            ID,
            format!("kernel {release} is built without panthor (CONFIG_DRM_PANTHOR not set)"),
        )
        .evidence(ev)
        .fix(mainline_fix(ctx));
    }
    if !unmet.is_empty() {
        return Finding::warn(ID, format!("mainline {release}, but its config misses {}", detail.join(", ")))
            .evidence(ev)
            .fix("rebuild the kernel with kernel/panthor.config merged (scripts/kconfig/merge_config.sh)");
    }
    if k.config.as_ref().map(|c| c.get("CONFIG_DRM_PANTHOR")) == Some("y") {
        ev.push("panthor is built in: it probes before / is mounted, so its firmware must be in the initramfs (see firmware)".into());
    }
    let how = match k.config.as_ref().map(|c| c.get("CONFIG_DRM_PANTHOR")) {
        Some("y") => ", panthor built in",
        Some("m") => ", panthor as a module",
        _ => "",
    };
    Finding::pass(ID, format!("mainline {release}{how}")).evidence(ev)
}

/// Whether a kernel release (not necessarily the running one) is a panthor-capable mainline
/// kernel for this board: at least the profile's minimum and not its known vendor kernel.
pub fn release_is_mainline(release: &str, profile: Option<&Profile>) -> bool {
    !is_known_vendor_release(release, profile)
        && KernelVersion::parse(release).is_some_and(|v| v >= min_mainline(profile))
}

/// The oldest mainline version with panthor: the profile's, else 6.10 (panthor's first).
fn min_mainline(profile: Option<&Profile>) -> KernelVersion {
    profile
        .and_then(|p| KernelVersion::parse(&p.kernel.min_mainline))
        .unwrap_or(KernelVersion {
            major: 6,
            minor: 10,
            patch: 0,
        })
}

/// The vendor kernel the profile knows for this board.
fn is_known_vendor_release(release: &str, profile: Option<&Profile>) -> bool {
    profile
        .and_then(|p| p.kernel.vendor.as_ref())
        .is_some_and(|v| v.release == release)
}
