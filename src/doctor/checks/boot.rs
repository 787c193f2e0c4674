//! `boot-default`: which kernel boots next (extlinux `default` → label → `linux`; u-boot-menu's
//! `U_BOOT_DEFAULT`, which the next `u-boot-update` writes; Armbian's `/boot/Image` link),
//! compared with the running kernel and the profile's mainline kernel.

use super::kernel::{mainline_fix, release_is_mainline};
use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::inventory::{ArmbianFacts, BootEntry, ExtlinuxFacts, UbootMenuFacts};
use crate::profile::Profile;

const ID: &str = "boot-default";

/// Where the next kernel comes from, which release that is, and what was read to tell.
struct Next {
    how: String,
    release: Option<String>,
    evidence: Vec<String>,
    /// u-boot-menu disagreeing with extlinux.conf: only worth saying once the release is right.
    drift: Option<String>,
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let boot = &ctx.inv.boot;
    // U-Boot's distro boot tries extlinux.conf before boot.scr, so it wins over Armbian's files.
    if let (None, Some(e)) = (&boot.extlinux, &boot.extlinux_error) {
        // U-Boot reads it before boot.scr: what it holds decides the next boot, and we cannot tell.
        return Finding::fail(ID, format!("{e}: cannot tell which kernel boots next"))
            .fix("check /boot/extlinux/extlinux.conf: it must be a readable file under 1 MiB");
    }
    let next = if let Some(x) = &boot.extlinux {
        match from_extlinux(ctx, x, boot.uboot_menu.as_ref()) {
            Ok(next) => next,
            Err(f) => return f,
        }
    } else if let Some(a) = &boot.armbian {
        if a.image_missing {
            return Finding::fail(
                ID,
                format!(
                    "/boot/Image points at {}, which is missing; the board will not boot it",
                    a.image.as_deref().unwrap_or("?")
                ),
            )
            .fix(ctx.on_board("reinstall the kernel package (sudo apt install --reinstall linux-image-...), or point /boot/Image at an installed vmlinuz-<release>"));
        }
        from_armbian(a)
    } else {
        return Finding::skip(
            ID,
            "no /boot/extlinux/extlinux.conf or /boot/armbianEnv.txt found",
        );
    };
    judge(ctx, next)
}

/// extlinux.conf's default entry, and what the next u-boot-update would make of it; a
/// `default` naming no label is a failure of its own, since U-Boot then boots nothing.
fn from_extlinux(
    ctx: &Context,
    x: &ExtlinuxFacts,
    menu: Option<&UbootMenuFacts>,
) -> Result<Next, Finding> {
    let mut evidence = vec![format!(
        "{}: default {} ({} entries)",
        x.path,
        x.default_label.as_deref().unwrap_or("(none: first entry)"),
        x.entries.len()
    )];
    let Some(entry) = &x.default_entry else {
        return Err(no_default_entry(ctx, x, menu.is_some()).evidence(evidence));
    };
    evidence.push(format!(
        "label {} (line {}): linux {}",
        entry.label,
        entry.line,
        entry.linux.as_deref().unwrap_or("(none)")
    ));
    if !entry.missing.is_empty() {
        return Err(missing_files(ctx, x, entry, menu.is_some()).evidence(evidence));
    }
    let mut drift = None;
    if let Some(menu) = menu {
        evidence.push(format!(
            "u-boot-menu: U_BOOT_DEFAULT={} ({}), kernels {}",
            menu.default_label,
            menu.default_from
                .as_deref()
                .unwrap_or("u-boot-menu's built-in default"),
            menu.kernels.join(", ")
        ));
        drift = menu_drift(menu, entry);
    }
    Ok(Next {
        how: extlinux_how(entry),
        release: entry.release.clone(),
        evidence,
        drift,
    })
}

fn no_default_entry(ctx: &Context, x: &ExtlinuxFacts, has_uboot_menu: bool) -> Finding {
    let label = x.default_label.clone().unwrap_or_default();
    // With u-boot-menu installed, hand edits are overwritten: regenerate instead.
    let fix = if has_uboot_menu {
        ctx.on_board("sudo u-boot-update (regenerates extlinux.conf)")
    } else {
        format!("set `default` to one of the labels in {}", x.path)
    };
    Finding::fail(
        ID,
        format!(
            "{}: default {label:?} names no label: U-Boot has nothing to boot",
            x.path
        ),
    )
    .fix(fix)
}

/// The default entry names a kernel, initrd or device tree that is not there: U-Boot stops
/// at that entry, so the board does not boot.
fn missing_files(
    ctx: &Context,
    x: &ExtlinuxFacts,
    entry: &BootEntry,
    has_uboot_menu: bool,
) -> Finding {
    let fix = if has_uboot_menu {
        ctx.on_board("reinstall the kernel package, or remove it (sudo apt remove linux-image-...) and run sudo u-boot-update")
    } else {
        format!(
            "point label {} in {} at files that exist, or set `default` to a label that boots",
            entry.label, x.path
        )
    };
    Finding::fail(
        ID,
        format!(
            "{}: the default label {} names what is missing: {}; the board will not boot it",
            x.path,
            entry.label,
            entry.missing.join(", ")
        ),
    )
    .fix(fix)
}

fn extlinux_how(entry: &BootEntry) -> String {
    if entry.label.is_empty() {
        "an extlinux entry with an empty label".to_string()
    } else {
        format!("extlinux label {}", entry.label)
    }
}

/// Why the default may change under the user: u-boot-update rewrites extlinux.conf on every
/// kernel install, with `U_BOOT_DEFAULT` as its default.
fn menu_drift(menu: &UbootMenuFacts, entry: &BootEntry) -> Option<String> {
    if !menu.default_known {
        Some(format!(
            "U_BOOT_DEFAULT is computed at run time ({}); rvl cannot tell what u-boot-update will write",
            menu.default_from.as_deref().unwrap_or("?")
        ))
    } else if menu.default_label != entry.label {
        Some(format!(
            "extlinux.conf boots {}, but the next u-boot-update switches the default to {} ({})",
            entry.label,
            menu.default_label,
            menu_kernel(menu)
        ))
    } else {
        None
    }
}

/// The kernel behind a u-boot-menu label: `lN` is the N-th kernel, highest first.
fn menu_kernel(menu: &UbootMenuFacts) -> &str {
    menu.default_label
        .strip_prefix('l')
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| menu.kernels.get(n))
        .map(String::as_str)
        .unwrap_or("?")
}

fn from_armbian(a: &ArmbianFacts) -> Next {
    Next {
        how: "/boot/Image".to_string(),
        release: a.image_release.clone(),
        evidence: vec![
            format!(
                "/boot/armbianEnv.txt: overlays {:?}, fdtfile {}",
                a.overlays.join(" "),
                a.fdtfile.as_deref().unwrap_or("(unset)")
            ),
            format!(
                "/boot/Image -> {}",
                a.image.as_deref().unwrap_or("(missing)")
            ),
        ],
        drift: None,
    }
}

/// The next release against the running one and the board's mainline kernel.
fn judge(ctx: &Context, next: Next) -> Finding {
    let Next {
        how,
        release,
        evidence: ev,
        drift,
    } = next;
    let Some(release) = release else {
        return Finding::warn(ID, format!("cannot tell which kernel {how} boots"))
            .evidence(ev)
            .fix("name the kernel as /boot/vmlinuz-<release> so the boot entry says which kernel it is");
    };
    let running = ctx.inv.kernel.release.as_deref();
    let summary = format!(
        "next boot: {release} ({how}), {}",
        release_kind(&release, ctx.profile)
    );
    if !release_is_mainline(&release, ctx.profile) {
        // Leaving a working mainline kernel is a failure of its own; staying on the vendor
        // kernel is the `kernel` check's finding, repeated here as a warning only.
        let finding = if running.is_some_and(|r| release_is_mainline(r, ctx.profile)) {
            Finding::fail(
                ID,
                format!("{summary}: the next reboot leaves panthor's kernel"),
            )
        } else {
            Finding::warn(ID, summary)
        };
        return finding.evidence(ev).fix(mainline_fix(ctx));
    }
    if let (None, Some(e)) = (running, &ctx.inv.kernel.release_error) {
        // No reboot advice when the running kernel is unknown: it may be this one already.
        return Finding::warn(
            ID,
            format!("{summary}; the running kernel is unknown ({e})"),
        )
        .evidence(ev)
        .fix("see the kernel check: /proc/sys/kernel/osrelease must be readable to compare");
    }
    if running != Some(release.as_str()) {
        let running = running.unwrap_or("?");
        return Finding::warn(
            ID,
            format!("{summary}; running {running}: reboot to use it"),
        )
        .evidence(ev)
        .fix(ctx.on_board("sudo reboot"));
    }
    match drift {
        Some(w) => Finding::warn(ID, w).evidence(ev).fix(ctx.setup("kernel")),
        None => Finding::pass(ID, format!("{summary}, as running")).evidence(ev),
    }
}

fn release_kind(release: &str, profile: Option<&Profile>) -> &'static str {
    let pinned = profile
        .and_then(|p| p.kernel.mainline.as_ref())
        .is_some_and(|m| m.release == release);
    if pinned {
        "rvl's pinned mainline kernel"
    } else if release_is_mainline(release, profile) {
        "a mainline kernel"
    } else {
        "a vendor kernel"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;
    use crate::inventory::Inventory;

    fn menu(default_label: &str) -> UbootMenuFacts {
        UbootMenuFacts {
            default_label: default_label.into(),
            default_from: Some("/etc/default/u-boot:3".into()),
            default_known: true,
            kernels: vec!["7.0.0-rc3-marfrit-A1".into(), "6.1.75-npu-port".into()],
            fdt_overlays: None,
        }
    }

    #[test]
    fn u_boot_menu_labels_name_kernels_highest_first() {
        assert_eq!(menu_kernel(&menu("l1")), "6.1.75-npu-port");
        assert_eq!(menu_kernel(&menu("l2")), "?", "past the last kernel");
        assert_eq!(menu_kernel(&menu("rescue")), "?", "not an lN label");
    }

    #[test]
    fn drift_is_only_a_label_mismatch_or_an_unknowable_default() {
        let entry = BootEntry {
            label: "l0".into(),
            ..Default::default()
        };
        assert_eq!(menu_drift(&menu("l0"), &entry), None);
        assert!(menu_drift(&menu("l1"), &entry)
            .unwrap()
            .contains("switches the default to l1 (6.1.75-npu-port)"));
        let computed = UbootMenuFacts {
            default_known: false,
            ..menu("l0")
        };
        assert!(menu_drift(&computed, &entry)
            .unwrap()
            .contains("computed at run time (/etc/default/u-boot:3)"));
    }

    #[test]
    fn releases_are_told_pinned_mainline_or_vendor() {
        super::super::with_boltzmann(&Inventory::default(), |ctx| {
            let kind = |r| release_kind(r, ctx.profile);
            assert_eq!(kind("7.0.0-rc3-marfrit-A1"), "rvl's pinned mainline kernel");
            assert_eq!(kind("6.16.8-edge-rockchip64"), "a mainline kernel");
            assert_eq!(kind("6.1.75-npu-port"), "a vendor kernel");
        });
    }

    #[test]
    fn drift_waits_for_the_right_release_and_a_nameless_kernel_is_a_warning() {
        let mut inv = Inventory::default();
        inv.kernel.release = Some("7.0.0-rc3-marfrit-A1".into());
        let next = |release: Option<&str>| Next {
            how: extlinux_how(&BootEntry::default()),
            release: release.map(String::from),
            evidence: vec![],
            drift: Some("u-boot-menu drifts".into()),
        };
        super::super::with_boltzmann(&inv, |ctx| {
            let f = judge(ctx, next(Some("7.0.0-rc3-marfrit-A1")));
            assert_eq!(
                (f.status, f.summary.as_str()),
                (Status::Warn, "u-boot-menu drifts")
            );
            let f = judge(ctx, next(Some("7.1.0")));
            assert_eq!(
                f.fix.as_deref(),
                Some("sudo reboot"),
                "a reboot comes first"
            );
            let f = judge(ctx, next(None));
            assert_eq!(f.status, Status::Warn);
            assert_eq!(
                f.summary,
                "cannot tell which kernel an extlinux entry with an empty label boots"
            );
        });
    }
}
