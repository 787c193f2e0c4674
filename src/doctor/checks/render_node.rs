//! `render-node`: the renderD* node whose device is the panthor GPU (never assumed to be
//! renderD128); on the running system, the driver name DRM_IOCTL_VERSION returns and whether
//! this user may open it.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;

const ID: &str = "render-node";

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let inv = ctx.inv;
    let Some(gpu) = inv
        .gpu
        .panthor_device()
        .filter(|d| d.driver.as_deref() == Some("panthor"))
    else {
        return Finding::skip(ID, "panthor is not bound to the GPU (see gpu-driver)");
    };
    let mut ev: Vec<String> = inv
        .render_nodes
        .iter()
        .map(|n| {
            format!(
                "{} → {} (driver {})",
                n.name,
                n.device.as_deref().unwrap_or("?"),
                n.driver.as_deref().unwrap_or("none")
            )
        })
        .collect();
    let Some(node) = inv
        .render_nodes
        .iter()
        .find(|n| n.device.as_deref() == Some(gpu.path.as_str()))
        .or_else(|| {
            inv.render_nodes
                .iter()
                .find(|n| n.driver.as_deref() == Some("panthor"))
        })
    else {
        return Finding::fail(
            ID,
            format!(
                "panthor drives {} but no renderD node belongs to it",
                gpu.name
            ),
        )
        .evidence(ev)
        .fix("read the probe messages: sudo dmesg | grep -i panthor");
    };
    if !node.dev_exists {
        return Finding::fail(ID, format!("{} exists in sysfs but {} is missing", node.name, node.dev_path))
            .evidence(ev)
            .fix("device nodes come from udev/devtmpfs: check that /dev is devtmpfs and systemd-udevd runs");
    }
    let Some(access) = inv
        .live_facts
        .render
        .iter()
        .find(|a| a.dev_path == node.dev_path)
    else {
        ev.push(format!(
            "open/ioctl/permissions not checked: {}",
            ctx.not_live_reason().unwrap_or("live probe did not run")
        ));
        return Finding::pass(
            ID,
            format!("{} belongs to panthor ({})", node.dev_path, gpu.name),
        )
        .evidence(ev);
    };
    ev.push(format!(
        "{}: mode {}, group {}, ioctl driver {}",
        node.dev_path,
        access
            .mode
            .map(|m| format!("{m:04o}"))
            .unwrap_or_else(|| "?".into()),
        access
            .group
            .clone()
            .or(access.gid.map(|g| g.to_string()))
            .unwrap_or_else(|| "?".into()),
        access
            .ioctl_driver
            .as_deref()
            .or(access.ioctl_error.as_deref())
            .unwrap_or("?")
    ));
    if let (Some(gid), Some(user)) = (access.gid, &ctx.inv.live_facts.user) {
        let member = user.groups.contains(&gid);
        ev.push(format!(
            "this user (uid {}) is {}a member of group {}",
            user.euid,
            if member { "" } else { "not " },
            access.group.clone().unwrap_or_else(|| gid.to_string())
        ));
    }
    if !access.read_write {
        let group = access.group.clone().unwrap_or_else(|| "render".into());
        return Finding::fail(
            ID,
            format!(
                "this user cannot open {} ({})",
                node.dev_path,
                access
                    .access_error
                    .as_deref()
                    .unwrap_or("permission denied")
            ),
        )
        .evidence(ev)
        .fix(format!(
            "sudo usermod -aG {group} \"$USER\", then log out and back in (or {})",
            ctx.setup("access")
        ));
    }
    match access.ioctl_driver.as_deref() {
        Some("panthor") => Finding::pass(
            ID,
            format!("{} is panthor's, read/write for this user", node.dev_path),
        )
        .evidence(ev),
        Some(other) => Finding::fail(
            ID,
            format!("{} answers as {other}, not panthor", node.dev_path),
        )
        .evidence(ev)
        .fix("sysfs and /dev disagree: reboot, then re-run rvl doctor"),
        None => Finding::warn(
            ID,
            format!("{} opened but DRM_IOCTL_VERSION failed", node.dev_path),
        )
        .evidence(ev)
        .fix("read the kernel log: sudo dmesg | grep -i -e drm -e panthor"),
    }
}
