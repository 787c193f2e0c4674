//! `firmware`: the CSF firmware file panthor requests for this GPU, where the loader finds it
//! (plain, .zst, .xz, updates/), its header, a copy in the wrong arch directory, and the
//! initramfs when panthor is built in.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::firmware::{
    standard_path, FirmwareFacts, FirmwareFile, InitramfsFacts, FIRMWARE_DIR, VENDOR_FLAT_PATH,
};

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
    let mut ev = evidence(fw);
    let right_path = standard_path(&fw.wanted);
    let Some(found) = &fw.found else {
        return missing(ctx, fw, &right_path).evidence(ev);
    };
    if let Some(f) = unloadable(ctx, found, &right_path) {
        return f.evidence(ev);
    }
    if let Some(initrd) = &fw.initramfs {
        ev.push(initramfs_evidence(initrd));
        if !initrd.has_firmware {
            return initramfs_lacks_firmware(ctx, &right_path).evidence(ev);
        }
    }
    judge_release(ctx, found).evidence(ev)
}

fn evidence(fw: &FirmwareFacts) -> Vec<String> {
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
    ev
}

/// Nothing at the wanted name: a copy with a valid header under another arch is the likely
/// mistake, so say where it is.
fn missing(ctx: &Context, fw: &FirmwareFacts, right_path: &str) -> Finding {
    let Some(other) = fw.other_arch.iter().find(|f| f.header.is_some()) else {
        return Finding::fail(ID, format!("{} not found under {FIRMWARE_DIR}", fw.wanted))
            .fix(ctx.setup("firmware"));
    };
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
            "{} (the same blob), or {}",
            ctx.on_board(&format!(
                "sudo install -D -m 0644 {} {right_path}",
                other.path
            )),
            ctx.setup("firmware")
        )
    } else {
        ctx.setup("firmware")
    };
    Finding::fail(
        ID,
        format!("firmware is only in {dir}/; panthor on this GPU loads {right_path}"),
    )
    .fix(fix)
}

/// The file found is one panthor cannot get: unreadable, a bad header, or compressed for a
/// loader built without that decompressor (which then never tries the suffix).
fn unloadable(ctx: &Context, found: &FirmwareFile, right_path: &str) -> Option<Finding> {
    if let Some(err) = &found.error {
        return Some(
            Finding::fail(ID, format!("{}: {err}", found.path)).fix(format!(
                "replace it with a known release: {}",
                ctx.setup("firmware")
            )),
        );
    }
    let opt = found.compression.kernel_option()?;
    let cfg = ctx.inv.kernel.config.as_ref()?;
    (cfg.get(opt) != "y").then(|| {
        Finding::fail(
            ID,
            format!("{} is compressed but the kernel lacks {opt}", found.path),
        )
        .fix(format!(
            "install it uncompressed at {right_path}: {}",
            ctx.setup("firmware")
        ))
    })
}

fn initramfs_evidence(initrd: &InitramfsFacts) -> String {
    format!(
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
    )
}

fn initramfs_lacks_firmware(ctx: &Context, right_path: &str) -> Finding {
    // The release comes from the inspected tree: quoted, so it stays one word of the command.
    let release = match ctx.inv.kernel.release.as_deref() {
        Some(r) => crate::shell::quote(r).into_owned(),
        None => "\"$(uname -r)\"".to_string(),
    };
    let right_path = crate::shell::quote(right_path);
    Finding::fail(ID, "panthor is built in, but the initramfs lacks its firmware (it probes before / is mounted)")
        .fix(ctx.on_board(&format!(
            "add an initramfs-tools hook with `copy_file firmware {right_path}` in /etc/initramfs-tools/hooks/, then sudo update-initramfs -u -k {release}"
        )))
}

/// A loadable file is only as good as the build it is: the manifest knows which are panthor's.
fn judge_release(ctx: &Context, found: &FirmwareFile) -> Finding {
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
            Finding::pass(ID, format!("{}: {}{iface}", found.path, k.version))
        }
        Some(k) => Finding::fail(
            ID,
            format!("{} is {}, not a panthor firmware", found.path, k.version),
        )
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
        .fix(format!(
            "install a known release: {} (the manifest built into rvl pins them)",
            ctx.setup("firmware")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;
    use crate::firmware::{Compression, CsfHeader};
    use crate::inventory::{Inventory, KernelConfigFacts};

    fn file(path: &str, sha256: &str) -> FirmwareFile {
        FirmwareFile {
            path: path.into(),
            compression: Compression::None,
            size: Some(24),
            sha256: Some(sha256.into()),
            header: Some(CsfHeader {
                minor: 3,
                major: 0,
                version_hash: 0x0105_0000,
                size: 24,
            }),
            error: None,
        }
    }

    #[test]
    fn a_copy_under_another_arch_is_only_offered_when_it_is_a_known_build_for_this_path() {
        super::super::with_boltzmann(&Inventory::default(), |ctx| {
            let known = ctx.manifest.recommended_firmware().unwrap();
            let mut fw = FirmwareFacts {
                wanted: known.path.clone(),
                ..Default::default()
            };
            let elsewhere = "/lib/firmware/arm/mali/arch10.10/mali_csffw.bin";
            fw.other_arch = vec![file(elsewhere, &known.sha256)];
            let f = missing(ctx, &fw, &standard_path(&fw.wanted));
            assert!(f
                .summary
                .starts_with("firmware is only in /lib/firmware/arm/mali/arch10.10/"));
            assert!(f.fix.unwrap().starts_with("sudo install -D -m 0644"));
            fw.other_arch = vec![file(elsewhere, &"0".repeat(64))];
            let f = missing(ctx, &fw, &standard_path(&fw.wanted));
            assert_eq!(f.fix, Some(ctx.setup("firmware")), "an unknown blob");
            fw.other_arch[0].header = None;
            let f = missing(ctx, &fw, &standard_path(&fw.wanted));
            assert!(
                f.summary.ends_with("not found under /lib/firmware"),
                "{}",
                f.summary
            );
        });
    }

    #[test]
    fn compressed_firmware_is_unloadable_only_when_the_config_says_so() {
        let mut inv = Inventory::default();
        let mut zst = file(
            "/lib/firmware/updates/arm/mali/arch10.8/mali_csffw.bin.zst",
            "",
        );
        zst.compression = Compression::Zstd;
        let unloadable_with = |inv: &Inventory| {
            super::super::with_boltzmann(inv, |ctx| {
                unloadable(ctx, &zst, "/right").map(|f| f.status)
            })
        };
        assert_eq!(
            unloadable_with(&inv),
            None,
            "no config: cannot tell, so no failure"
        );
        let mut cfg = KernelConfigFacts::default();
        inv.kernel.config = Some(cfg.clone());
        assert_eq!(unloadable_with(&inv), Some(Status::Fail));
        cfg.options
            .insert("CONFIG_FW_LOADER_COMPRESS_ZSTD".into(), "y".into());
        inv.kernel.config = Some(cfg);
        assert_eq!(unloadable_with(&inv), None);
    }
}
