//! What the next boot changes. Setup fixes the kernel and the device tree for the *next* boot;
//! until then the running system still shows the problem. A `kernel` or `gpu-driver` failure
//! that the next boot clears is a warning whose fix is `sudo reboot`, not a failure whose fix is
//! a setup step that would now say "nothing to do".

use super::kernel::release_is_mainline;
use crate::doctor::context::Context;
use crate::doctor::finding::{Finding, Status};

/// The release the next boot starts, read as `boot-default` reads it (extlinux.conf first, as
/// U-Boot's distro boot does, then Armbian's `/boot/Image`).
pub fn next_release<'a>(ctx: &Context<'a>) -> Option<&'a str> {
    let boot = &ctx.inv.boot;
    match &boot.extlinux {
        Some(x) => x.default_entry.as_ref()?.release.as_deref(),
        None => boot.armbian.as_ref()?.image_release.as_deref(),
    }
}

/// rvl's overlay for this board when the next boot loads it: on the default extlinux entry's
/// `fdtoverlays`, or in Armbian's `user_overlays`.
pub fn rvl_overlay_next_boot(ctx: &Context) -> Option<&'static str> {
    let name = crate::setup::overlays::for_board(ctx.board_id())?.name;
    let boot = &ctx.inv.boot;
    let file = format!("/{name}.dtbo");
    let loaded = match &boot.extlinux {
        Some(x) => x
            .default_entry
            .as_ref()
            .and_then(|e| e.fdtoverlays.as_deref())
            .is_some_and(|v| v.split_whitespace().any(|p| p.ends_with(&file))),
        None => boot
            .armbian
            .as_ref()
            .is_some_and(|a| a.user_overlays.iter().any(|o| o == name)),
    };
    loaded.then_some(name)
}

/// Why the next boot clears a failure of the running system, if it does.
fn cleared_by_reboot(ctx: &Context, id: &str) -> Option<String> {
    let running = ctx.inv.kernel.release.as_deref();
    let next = next_release(ctx)?;
    let gpu_off_in_mainline = ctx.profile.and_then(|p| p.mainline_enables_gpu) == Some(false);
    let overlay = rvl_overlay_next_boot(ctx);
    if running != Some(next) && release_is_mainline(next, ctx.profile) {
        // On a board whose mainline DT keeps the GPU off, mainline alone does not fix it.
        if id == "gpu-driver" && gpu_off_in_mainline && overlay.is_none() {
            return None;
        }
        return Some(format!("the next boot starts the mainline kernel {next}"));
    }
    let disabled_node = ctx.inv.devicetree.as_ref().is_some_and(|d| {
        d.gpu_nodes
            .iter()
            .any(|n| !n.enabled() && n.compatible.iter().any(|c| c == "arm,mali-valhall-csf"))
    });
    if id == "gpu-driver" && running == Some(next) && disabled_node {
        return overlay.map(|o| format!("rvl's overlay {o} enables &gpu on the next boot"));
    }
    None
}

/// A failure the next boot clears, as a warning that says so; any other finding as it is.
pub fn after_reboot(ctx: &Context, finding: Finding) -> Finding {
    if finding.status != Status::Fail {
        return finding;
    }
    match cleared_by_reboot(ctx, &finding.id) {
        Some(why) => Finding {
            status: Status::Warn,
            summary: format!("{}; {why}: reboot", finding.summary),
            fix: Some(ctx.on_board("sudo reboot")),
            ..finding
        },
        None => finding,
    }
}
