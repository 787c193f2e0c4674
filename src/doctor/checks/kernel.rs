//! `kernel`: the running release, mainline (panthor-capable) or vendor BSP, and the kernel
//! configuration against `kernel/panthor.config` when it can be read.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::sysfs::KBASE_MODULES;
use crate::inventory::{Inventory, KernelFacts};
use crate::kernelcfg::{self, KernelConfig, KernelVersion, Unmet};
use crate::profile::Profile;

const ID: &str = "kernel";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    /// Mainline at or above the profile's minimum.
    Mainline,
    /// A Rockchip BSP kernel (kbase present, or a vendor release string).
    Vendor,
    /// Mainline-looking but older than the first mainline that drives this board's GPU.
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
            "install a mainline kernel ≥ {} with CONFIG_DRM_PANTHOR (`rvl generate kernel-config` prints the options it needs)",
            ctx.profile.map(|p| p.kernel.min_mainline.as_str()).unwrap_or("6.10")
        ),
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
    let k = &ctx.inv.kernel;
    let mut ev = evidence(ctx);
    let release = k.release.clone().unwrap_or_default();
    if let Some(f) = not_mainline(ctx, &release) {
        return f.evidence(ev);
    }
    let unmet = unmet_options(k);
    ev.extend(
        unmet
            .iter()
            .map(|u| format!("unmet: {}", describe_unmet(u))),
    );
    if let Some(f) = config_misses(ctx, &release, &unmet) {
        return f.evidence(ev);
    }
    let panthor = k.config.as_ref().map(|c| c.get("CONFIG_DRM_PANTHOR"));
    if panthor == Some("y") {
        ev.push("panthor is built in: it probes before / is mounted, so its firmware must be in the initramfs (see firmware)".into());
    }
    let how = match panthor {
        Some("y") => ", panthor built in",
        Some("m") => ", panthor as a module",
        _ => "",
    };
    Finding::pass(ID, format!("mainline {release}{how}")).evidence(ev)
}

fn evidence(ctx: &Context) -> Vec<String> {
    let k = &ctx.inv.kernel;
    let mut ev = vec![format!(
        "release: {}",
        match (&k.release, &k.release_error) {
            (Some(r), _) => r.clone(),
            (None, Some(e)) => format!("({e})"),
            (None, None) => "(no proc/sys/kernel/osrelease)".to_string(),
        }
    )];
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
    ev.push(match &k.config {
        Some(c) => format!(
            "config: {} (CONFIG_DRM_PANTHOR={})",
            c.source,
            c.get("CONFIG_DRM_PANTHOR")
        ),
        None => "config: not readable (no /proc/config.gz or /boot/config-<release>)".into(),
    });
    ev
}

/// Every kernel that is not a panthor-capable mainline one, judged by its kind.
fn not_mainline(ctx: &Context, release: &str) -> Option<Finding> {
    let inv = ctx.inv;
    let finding = match kernel_kind(inv, ctx.profile) {
        KernelKind::Mainline => return None,
        KernelKind::Unknown if inv.kernel.release_error.is_some() => {
            let e = inv.kernel.release_error.as_deref().unwrap_or("");
            return Some(
                Finding::warn(ID, format!("cannot tell which kernel runs: {e}"))
                    .fix("make /proc/sys/kernel/osrelease a readable file (`uname -r` prints the release), then re-run rvl doctor"),
            );
        }
        KernelKind::Unknown => {
            return Some(
                Finding::warn(
                    ID,
                    "cannot tell which kernel runs (release unreadable or not a version)",
                )
                .fix("check that /proc is mounted; `uname -r` shows the release"),
            )
        }
        // A BSP kernel with panthor backported can drive the GPU: a warning, not a failure.
        KernelKind::Vendor if panthor_bound(inv) => Finding::warn(
            ID,
            format!(
                "vendor BSP kernel {release} with panthor bound; rvl supports the mainline kernel"
            ),
        ),
        KernelKind::Vendor => Finding::fail(
            ID,
            format!("vendor BSP kernel {release}: kbase, not panthor"),
        ),
        KernelKind::TooOld => Finding::fail(
            ID,
            format!(
                "kernel {release} is older than mainline {}, the first that drives this board's GPU with panthor",
                ctx.profile
                    .map(|p| p.kernel.min_mainline.as_str())
                    .unwrap_or("6.10")
            ),
        ),
    };
    Some(finding.fix(mainline_fix(ctx)))
}

fn panthor_bound(inv: &Inventory) -> bool {
    inv.gpu
        .panthor_device()
        .is_some_and(|d| d.driver.as_deref() == Some("panthor"))
}

/// What the running config lacks from kernel/panthor.config; nothing when it is unreadable.
fn unmet_options(k: &KernelFacts) -> Vec<Unmet> {
    let Some(c) = &k.config else {
        return Vec::new();
    };
    let cfg = KernelConfig {
        options: c.options.clone(),
    };
    kernelcfg::unmet(&KernelConfig::parse(kernelcfg::PANTHOR_FRAGMENT), &cfg)
}

fn describe_unmet(u: &Unmet) -> String {
    let needs = if u.wanted == "m" { "m or y" } else { &u.wanted };
    format!("{}={} (needs {needs})", u.option, u.actual)
}

/// Without CONFIG_DRM_PANTHOR there is no driver at all; any other missing option only
/// degrades it, so that is a warning.
fn config_misses(ctx: &Context, release: &str, unmet: &[Unmet]) -> Option<Finding> {
    if unmet.iter().any(|u| u.option == "CONFIG_DRM_PANTHOR") {
        return Some(
            Finding::fail(
                ID,
                format!("kernel {release} is built without panthor (CONFIG_DRM_PANTHOR not set)"),
            )
            .fix(mainline_fix(ctx)),
        );
    }
    if unmet.is_empty() {
        return None;
    }
    let detail: Vec<String> = unmet.iter().map(describe_unmet).collect();
    Some(
        Finding::warn(ID, format!("mainline {release}, but its config misses {}", detail.join(", ")))
            .fix("rebuild the kernel with the fragment `rvl generate kernel-config` prints merged in (the kernel tree's scripts/kconfig/merge_config.sh)"),
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;

    fn unmet(option: &str, wanted: &str) -> Unmet {
        Unmet {
            option: option.into(),
            wanted: wanted.into(),
            actual: "n".into(),
        }
    }

    #[test]
    fn a_module_option_is_also_met_built_in() {
        assert_eq!(
            describe_unmet(&unmet("CONFIG_DRM", "m")),
            "CONFIG_DRM=n (needs m or y)"
        );
        assert_eq!(
            describe_unmet(&unmet("CONFIG_PM_DEVFREQ", "y")),
            "CONFIG_PM_DEVFREQ=n (needs y)"
        );
    }

    #[test]
    fn only_a_missing_panthor_option_fails_the_config() {
        super::super::with_boltzmann(&Inventory::default(), |ctx| {
            assert_eq!(config_misses(ctx, "7.0.0", &[]), None);
            let f = config_misses(ctx, "7.0.0", &[unmet("CONFIG_PM_DEVFREQ", "y")]).unwrap();
            assert_eq!(f.status, Status::Warn);
            assert!(f.summary.ends_with("misses CONFIG_PM_DEVFREQ=n (needs y)"));
            let both = [
                unmet("CONFIG_PM_DEVFREQ", "y"),
                unmet("CONFIG_DRM_PANTHOR", "m"),
            ];
            assert_eq!(
                config_misses(ctx, "7.0.0", &both).unwrap().status,
                Status::Fail
            );
        });
    }

    #[test]
    fn old_and_unreadable_kernels_are_not_mainline() {
        let mut inv = Inventory::default();
        let judged = |inv: &Inventory| {
            let release = inv.kernel.release.clone().unwrap_or_default();
            super::super::with_boltzmann(inv, |ctx| not_mainline(ctx, &release))
                .map(|f| (f.status, f.summary))
        };
        assert_eq!(judged(&inv).unwrap().0, Status::Warn, "no release");
        inv.kernel.release = Some("6.6.30".into());
        assert_eq!(
            judged(&inv),
            Some((
                Status::Fail,
                "kernel 6.6.30 is older than mainline 6.10, the first that drives this board's GPU with panthor".into()
            ))
        );
        inv.kernel.release = Some("6.12.0".into());
        assert_eq!(judged(&inv), None);
    }
}
