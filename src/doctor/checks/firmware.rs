//! `firmware`: the CSF firmware file panthor requests for this GPU, where the loader finds it
//! (plain, .zst, .xz, updates/), its header, a copy in the wrong arch directory, and the
//! initramfs when panthor is built in.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::firmware::{standard_path, FirmwareFile, FIRMWARE_DIR, VENDOR_FLAT_PATH};

const ID: &str = "firmware";

fn describe(f: &FirmwareFile) -> String {
    let mut s = f.path.clone();
    if let Some(size) = f.size {
        s.push_str(&format!(", {size} bytes"));
    }
    if let Some(h) = &f.header {
        s.push_str(&format!(
            ", header {}.{}, version hash 0x{:08x}",
            h.major, h.minor, h.version_hash
        ));
    }
    if let Some(sha) = &f.sha256 {
        s.push_str(&format!(", sha256 {sha}"));
    }
    if let Some(e) = &f.error {
        s.push_str(&format!(" ({e})"));
    }
    s
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let fw = &ctx.inv.firmware;
    let mut ev = vec![format!(
        "wanted: {} (search: {})",
        fw.wanted,
        fw.search_dirs.join(", ")
    )];
    ev.extend(fw.found.iter().map(|f| format!("found: {}", describe(f))));
    ev.extend(
        fw.other_arch
            .iter()
            .map(|f| format!("other arch: {}", describe(f))),
    );
    if fw.vendor_flat {
        ev.push(format!(
            "{VENDOR_FLAT_PATH} is kbase's firmware; panthor never loads it"
        ));
    }
    let right_path = standard_path(&fw.wanted);

    let Some(found) = &fw.found else {
        if let Some(other) = fw.other_arch.iter().find(|f| f.header.is_some()) {
            let dir = other
                .path
                .rsplit_once('/')
                .map(|(d, _)| d)
                .unwrap_or(&other.path);
            // Copying is only advice when the blob is a known build for this GPU's path.
            let same_blob = other
                .sha256
                .as_deref()
                .and_then(|sha| ctx.manifest.firmware_by_sha256(sha))
                .is_some_and(|k| k.for_panthor && k.path == fw.wanted);
            let fix = if same_blob {
                format!(
                    "sudo install -D -m 0644 {} {right_path} (the same blob), or {}",
                    other.path,
                    ctx.setup("firmware")
                )
            } else {
                ctx.setup("firmware")
            };
            return Finding::fail(
                ID,
                format!("firmware is only in {dir}/; panthor on this GPU loads {right_path}"),
            )
            .evidence(ev)
            .fix(fix);
        }
        return Finding::fail(ID, format!("{} not found under {FIRMWARE_DIR}", fw.wanted))
            .evidence(ev)
            .fix(ctx.setup("firmware"));
    };
    if let Some(err) = &found.error {
        return Finding::fail(ID, format!("{}: {err}", found.path))
            .evidence(ev)
            .fix(format!(
                "replace it with a known release: {}",
                ctx.setup("firmware")
            ));
    }
    if let (Some(opt), Some(cfg)) = (
        found.compression.kernel_option(),
        ctx.inv.kernel.config.as_ref(),
    ) {
        if cfg.get(opt) != "y" {
            return Finding::fail(
                ID,
                format!("{} is compressed but the kernel lacks {opt}", found.path),
            )
            .evidence(ev)
            .fix(format!(
                "install it uncompressed at {right_path}: {}",
                ctx.setup("firmware")
            ));
        }
    }
    if let Some(initrd) = &fw.initramfs {
        ev.push(format!(
            "panthor is built in; initramfs {}: {}",
            initrd.path.as_deref().unwrap_or("(none)"),
            initrd
                .error
                .clone()
                .unwrap_or_else(|| if initrd.has_firmware {
                    "has the firmware".into()
                } else {
                    "lacks the firmware".into()
                })
        ));
        if !initrd.has_firmware {
            let release = ctx.inv.kernel.release.as_deref().unwrap_or("$(uname -r)");
            return Finding::fail(ID, "panthor is built in, but the initramfs lacks its firmware (it probes before / is mounted)")
                .evidence(ev)
                .fix(format!(
                    "add an initramfs-tools hook with `copy_file firmware {right_path}` in /etc/initramfs-tools/hooks/, then sudo update-initramfs -u -k {release}"
                ));
        }
    }
    let known = found
        .sha256
        .as_deref()
        .and_then(|sha| ctx.manifest.firmware_by_sha256(sha));
    match known {
        Some(k) if k.for_panthor => {
            let iface = k
                .interface
                .as_deref()
                .map(|i| format!(", interface v{i}"))
                .unwrap_or_default();
            Finding::pass(ID, format!("{}: {}{iface}", found.path, k.version)).evidence(ev)
        }
        Some(k) => Finding::fail(
            ID,
            format!("{} is {}, not a panthor firmware", found.path, k.version),
        )
        .evidence(ev)
        .fix(ctx.setup("firmware")),
        None => Finding::warn(
            ID,
            format!(
                "{}: header OK, but not a release rvl knows (sha256 {})",
                found.path,
                found
                    .sha256
                    .as_deref()
                    .map(|s| &s[..12.min(s.len())])
                    .unwrap_or("?")
            ),
        )
        .evidence(ev)
        .fix(format!(
            "install a known release: {} (firmware-manifest/manifest.yaml lists them)",
            ctx.setup("firmware")
        )),
    }
}
