//! `render-node`: the renderD* node whose device is the panthor GPU (never assumed to be
//! renderD128); on the running system, the driver name DRM_IOCTL_VERSION returns and whether
//! this user may open it.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::sysfs::{PlatformGpu, RenderNode};
use crate::inventory::Inventory;
use crate::inventory::RenderAccess;

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
    let mut ev = node_evidence(inv);
    let node = match locate(inv, gpu) {
        Ok(node) => node,
        Err(f) => return f.evidence(ev),
    };
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
    ev.extend(access_evidence(ctx, node, access));
    judge_access(ctx, node, access).evidence(ev)
}

fn node_evidence(inv: &Inventory) -> Vec<String> {
    inv.render_nodes
        .iter()
        .map(|n| {
            format!(
                "{} → {} (driver {})",
                n.name,
                n.device.as_deref().unwrap_or("?"),
                n.driver.as_deref().unwrap_or("none")
            )
        })
        .collect()
}

/// The GPU's render node and its /dev file. Numbers depend on probe order (the display
/// controller often takes renderD128), so the node is matched by its device, then by driver.
fn locate<'a>(inv: &'a Inventory, gpu: &PlatformGpu) -> Result<&'a RenderNode, Finding> {
    let by_device = || {
        inv.render_nodes
            .iter()
            .find(|n| n.device.as_deref() == Some(gpu.path.as_str()))
    };
    let by_driver = || {
        inv.render_nodes
            .iter()
            .find(|n| n.driver.as_deref() == Some("panthor"))
    };
    let Some(node) = by_device().or_else(by_driver) else {
        return Err(Finding::fail(
            ID,
            format!(
                "panthor drives {} but no renderD node belongs to it",
                gpu.name
            ),
        )
        .fix("read the probe messages: sudo dmesg | grep -i panthor"));
    };
    if !node.dev_exists {
        return Err(Finding::fail(ID, format!("{} exists in sysfs but {} is missing", node.name, node.dev_path))
            .fix("device nodes come from udev/devtmpfs: check that /dev is devtmpfs and systemd-udevd runs"));
    }
    Ok(node)
}

fn access_evidence(ctx: &Context, node: &RenderNode, access: &RenderAccess) -> Vec<String> {
    let mut ev = vec![format!(
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
    )];
    if let (Some(gid), Some(user)) = (access.gid, &ctx.inv.live_facts.user) {
        let member = user.groups.contains(&gid);
        let who = match &user.sudo_user {
            Some(name) => format!("{name} (uid {}, who ran sudo)", user.euid),
            None => format!("this user (uid {})", user.euid),
        };
        ev.push(format!(
            "{who} is {}a member of group {}",
            if member { "" } else { "not " },
            access.group.clone().unwrap_or_else(|| gid.to_string())
        ));
    }
    ev
}

/// The user a usermod fix names: the one who ran sudo, else whoever copies the command.
fn invoker_word(ctx: &Context) -> String {
    ctx.inv
        .live_facts
        .user
        .as_ref()
        .and_then(|u| u.sudo_user.as_deref())
        .map(|n| crate::shell::quote(n).into_owned())
        .unwrap_or_else(|| "\"$USER\"".into())
}

/// The live probe's answer: may this user open the node, and does panthor answer on it.
fn judge_access(ctx: &Context, node: &RenderNode, access: &RenderAccess) -> Finding {
    if !access.read_write {
        let group = access.group.clone().unwrap_or_else(|| "render".into());
        let why = access
            .access_error
            .as_deref()
            .unwrap_or("permission denied");
        let who = ctx
            .inv
            .live_facts
            .user
            .as_ref()
            .and_then(|u| u.sudo_user.clone())
            .unwrap_or_else(|| "this user".into());
        return Finding::fail(ID, format!("{who} cannot open {} ({why})", node.dev_path)).fix(
            format!(
                "sudo usermod -aG {} {}, then log out and back in (or {})",
                crate::shell::quote(&group),
                invoker_word(ctx),
                ctx.setup("access")
            ),
        );
    }
    match access.ioctl_driver.as_deref() {
        Some("panthor") => Finding::pass(
            ID,
            format!("{} is panthor's, read/write for this user", node.dev_path),
        ),
        Some(other) => Finding::fail(
            ID,
            format!("{} answers as {other}, not panthor", node.dev_path),
        )
        .fix("sysfs and /dev disagree: reboot, then re-run rvl doctor"),
        None => Finding::warn(
            ID,
            format!("{} opened but DRM_IOCTL_VERSION failed", node.dev_path),
        )
        .fix("read the kernel log: sudo dmesg | grep -i -e drm -e panthor"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;

    fn gpu() -> PlatformGpu {
        PlatformGpu {
            name: "fb000000.gpu".into(),
            path: "/sys/devices/platform/fb000000.gpu".into(),
            compatible: vec!["arm,mali-valhall-csf".into()],
            driver: Some("panthor".into()),
            gpuinfo: None,
        }
    }

    fn node(name: &str, device: &str, driver: &str) -> RenderNode {
        RenderNode {
            name: name.into(),
            device: Some(device.into()),
            driver: Some(driver.into()),
            dev_path: format!("/dev/dri/{name}"),
            dev_exists: true,
        }
    }

    #[test]
    fn the_node_is_matched_by_device_then_by_driver_and_needs_its_dev_file() {
        let mut inv = Inventory {
            render_nodes: vec![
                node(
                    "renderD128",
                    "/sys/devices/platform/fdd90000.vop",
                    "rockchip",
                ),
                node("renderD129", "/sys/devices/platform/other", "panthor"),
            ],
            ..Default::default()
        };
        assert_eq!(
            locate(&inv, &gpu()).unwrap().name,
            "renderD129",
            "by driver"
        );
        inv.render_nodes.push(node(
            "renderD130",
            "/sys/devices/platform/fb000000.gpu",
            "panthor",
        ));
        assert_eq!(
            locate(&inv, &gpu()).unwrap().name,
            "renderD130",
            "device first"
        );
        inv.render_nodes[2].dev_exists = false;
        let f = locate(&inv, &gpu()).unwrap_err();
        assert_eq!(
            f.summary,
            "renderD130 exists in sysfs but /dev/dri/renderD130 is missing"
        );
        inv.render_nodes.drain(1..);
        assert!(locate(&inv, &gpu())
            .unwrap_err()
            .summary
            .contains("no renderD node belongs to it"));
    }

    #[test]
    fn a_node_that_opens_but_fails_the_version_ioctl_warns() {
        let n = node(
            "renderD128",
            "/sys/devices/platform/fb000000.gpu",
            "panthor",
        );
        let access = RenderAccess {
            dev_path: n.dev_path.clone(),
            ioctl_driver: None,
            ioctl_error: Some("Inappropriate ioctl for device (os error 25)".into()),
            mode: Some(0o660),
            gid: Some(105),
            uid: Some(0),
            group: Some("render".into()),
            read_write: true,
            access_error: None,
        };
        let f = super::super::with_boltzmann(&Inventory::default(), |ctx| {
            judge_access(ctx, &n, &access)
        });
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.ends_with("DRM_IOCTL_VERSION failed"));
    }
}
