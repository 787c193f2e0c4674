//! `boot-default`: which kernel boots next (extlinux `default` → label → `linux`; u-boot-menu's
//! `U_BOOT_DEFAULT`, which the next `u-boot-update` writes; Armbian's `/boot/Image` link),
//! compared with the running kernel and the profile's mainline kernel.

use super::kernel::{mainline_fix, release_is_mainline};
use crate::doctor::context::Context;
use crate::doctor::finding::Finding;

const ID: &str = "boot-default";

/// Where the next kernel comes from, and which release that is.
struct Next {
    how: String,
    release: Option<String>,
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let boot = &ctx.inv.boot;
    let running = ctx.inv.kernel.release.as_deref();
    let mut ev = Vec::new();
    let mut warnings: Vec<(String, String)> = Vec::new();

    let next = if let Some(x) = &boot.extlinux {
        ev.push(format!(
            "{}: default {} ({} entries)",
            x.path,
            x.default_label.as_deref().unwrap_or("(none: first entry)"),
            x.entries.len()
        ));
        let Some(entry) = &x.default_entry else {
            let label = x.default_label.clone().unwrap_or_default();
            let fix = if boot.uboot_menu.is_some() {
                "sudo u-boot-update (regenerates extlinux.conf)".to_string()
            } else {
                format!("set `default` to one of the labels in {}", x.path)
            };
            return Finding::fail(
                ID,
                format!(
                    "{}: default {label:?} names no label: U-Boot has nothing to boot",
                    x.path
                ),
            )
            .evidence(ev)
            .fix(fix);
        };
        ev.push(format!(
            "label {} (line {}): linux {}",
            entry.label,
            entry.line,
            entry.linux.as_deref().unwrap_or("(none)")
        ));
        if let Some(menu) = &boot.uboot_menu {
            ev.push(format!(
                "u-boot-menu: U_BOOT_DEFAULT={} ({}), kernels {}",
                menu.default_label,
                menu.default_from
                    .as_deref()
                    .unwrap_or("u-boot-menu's built-in default"),
                menu.kernels.join(", ")
            ));
            if !menu.default_known {
                warnings.push((
                    format!("U_BOOT_DEFAULT is computed at run time ({}); rvl cannot tell what u-boot-update will write",
                        menu.default_from.as_deref().unwrap_or("?")),
                    ctx.setup("kernel"),
                ));
            } else if menu.default_label != entry.label {
                let will = menu
                    .default_label
                    .strip_prefix('l')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| menu.kernels.get(n))
                    .map(String::as_str)
                    .unwrap_or("?");
                warnings.push((
                    format!("extlinux.conf boots {}, but the next u-boot-update switches the default to {} ({will})",
                        entry.label, menu.default_label),
                    ctx.setup("kernel"),
                ));
            }
        }
        Next {
            how: if entry.label.is_empty() {
                "an extlinux entry with an empty label".to_string()
            } else {
                format!("extlinux label {}", entry.label)
            },
            release: entry.release.clone(),
        }
    } else if let Some(a) = &boot.armbian {
        ev.push(format!(
            "/boot/armbianEnv.txt: overlays {:?}, fdtfile {}",
            a.overlays.join(" "),
            a.fdtfile.as_deref().unwrap_or("(unset)")
        ));
        ev.push(format!(
            "/boot/Image -> {}",
            a.image.as_deref().unwrap_or("(missing)")
        ));
        Next {
            how: "/boot/Image".to_string(),
            release: a.image_release.clone(),
        }
    } else {
        return Finding::skip(
            ID,
            "no /boot/extlinux/extlinux.conf or /boot/armbianEnv.txt found",
        );
    };

    let Some(release) = next.release else {
        return Finding::warn(ID, format!("cannot tell which kernel {} boots", next.how))
            .evidence(ev)
            .fix("name the kernel as /boot/vmlinuz-<release> so the boot entry says which kernel it is");
    };
    let pinned = ctx
        .profile
        .and_then(|p| p.kernel.mainline.as_ref())
        .map(|m| m.release.as_str());
    let next_mainline = release_is_mainline(&release, ctx.profile);
    let running_mainline = running.is_some_and(|r| release_is_mainline(r, ctx.profile));
    let what = if pinned == Some(release.as_str()) {
        "rvl's pinned mainline kernel"
    } else if next_mainline {
        "a mainline kernel"
    } else {
        "a vendor kernel"
    };
    let summary = format!("next boot: {release} ({}), {what}", next.how);

    if !next_mainline {
        let summary = if running_mainline {
            format!("{summary}: the next reboot leaves panthor's kernel")
        } else {
            summary
        };
        return Finding::fail(ID, summary)
            .evidence(ev)
            .fix(mainline_fix(ctx));
    }
    if running != Some(release.as_str()) {
        return Finding::warn(
            ID,
            format!(
                "{summary}; running {}: reboot to use it",
                running.unwrap_or("?")
            ),
        )
        .evidence(ev)
        .fix("sudo reboot");
    }
    if let Some((w, fix)) = warnings.into_iter().next() {
        return Finding::warn(ID, w).evidence(ev).fix(fix);
    }
    Finding::pass(ID, format!("{summary}, as running")).evidence(ev)
}
