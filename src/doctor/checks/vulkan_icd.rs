//! `vulkan-icd`: manifests in the loader's search order whose library is panvk, that the
//! library exists, duplicates, and manifests the loader will skip as malformed.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::env::Env;
use crate::icd::{self, IcdFacts, ManifestFile, SearchMode, DRIVER_FILES_VAR, PANVK_LIBRARY};

const ID: &str = "vulkan-icd";

/// panvk's manifests, as the loader will treat them.
struct Panvk<'a> {
    all: Vec<&'a ManifestFile>,
    /// Manifest path and the loader filter that hides it.
    hidden: Vec<(&'a str, String)>,
    /// Not hidden, and the library exists: each one is a device the loader enumerates.
    usable: Vec<&'a ManifestFile>,
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let icd = &ctx.inv.vulkan_icd;
    let panvk = sort_panvk(icd, &ctx.inv.env);
    let mut ev = evidence(icd);
    if !ctx.inv.live {
        ev.insert(
            0,
            format!(
                "environment: the image's ({}), not this shell's",
                crate::host::env::IMAGE_FILES
            ),
        );
    }
    ev.extend(
        panvk
            .hidden
            .iter()
            .map(|(p, why)| format!("{p}: hidden by the loader ({why})")),
    );
    let finding = match panvk.usable.as_slice() {
        [] => no_usable_panvk(ctx, icd, &panvk),
        [one] => match icd.manifests.iter().find(|m| m.error.is_some()) {
            Some(broken) => skipped(broken),
            None => {
                let mut summary = format!(
                    "{} → {}",
                    one.path,
                    one.library_found.as_deref().unwrap_or("")
                );
                if let Some(rvl) = crate::mesa::active(ctx.inv) {
                    summary.push_str(&format!(": {}", rvl.describe()));
                    ev.extend(rvl.level.iter().flat_map(|l| l.lines.iter().cloned()));
                }
                Finding::pass(ID, summary)
            }
        },
        many => duplicates(ctx, many),
    };
    finding.evidence(ev)
}

fn evidence(icd: &IcdFacts) -> Vec<String> {
    let mut ev = Vec::new();
    if let Some(s) = &icd.search {
        match &s.variable {
            Some(v) => ev.push(format!("search ({v} set): {}", s.entries.join(":"))),
            None => ev.push(format!("search: {}", s.entries.join(", "))),
        }
    }
    for m in &icd.manifests {
        ev.push(match (&m.manifest, &m.error) {
            (Some(man), _) => format!(
                "{} → {}{}",
                m.path,
                man.library_path,
                if m.library_found.is_some() {
                    ""
                } else {
                    " (library missing)"
                }
            ),
            (None, Some(e)) => format!("{}: {e}", m.path),
            (None, None) => m.path.clone(),
        });
    }
    ev
}

fn sort_panvk<'a>(icd: &'a IcdFacts, env: &Env) -> Panvk<'a> {
    Panvk {
        all: icd.manifests.iter().filter(|m| m.panvk()).collect(),
        hidden: icd::hidden_panvk(icd, env),
        usable: icd::usable_panvk(icd, env),
    }
}

/// The loader will not find panvk: say which of its inputs stands in the way, the user's
/// override or filter first, since those are one `unset` away.
fn no_usable_panvk(ctx: &Context, icd: &IcdFacts, panvk: &Panvk) -> Finding {
    let override_var = icd
        .search
        .as_ref()
        .filter(|s| s.mode == SearchMode::Override)
        .and_then(|s| s.variable.as_deref());
    let Some(m) = panvk.all.first() else {
        return match override_var {
            Some(v) => Finding::fail(ID, format!("{v} is set and names no panvk manifest")).fix(
                format!("unset {v}, or point it at panfrost_icd.aarch64.json"),
            ),
            None => Finding::fail(ID, format!("no Vulkan ICD manifest names {PANVK_LIBRARY}"))
                .fix(ctx.setup_panvk()),
        };
    };
    if let Some((_, why)) = panvk.hidden.first() {
        let var = why.split('=').next().unwrap_or("VK_LOADER_DRIVERS_SELECT");
        return Finding::fail(ID, format!("panvk's ICD is hidden: {why}"))
            .fix(format!("unset {var}, or make it name panfrost_icd.*.json"));
    }
    let lib = m
        .manifest
        .as_ref()
        .map(|x| x.library_path.as_str())
        .unwrap_or(PANVK_LIBRARY);
    Finding::fail(ID, format!("{} names {lib}, which does not exist", m.path)).fix(format!(
        "reinstall panvk, or remove the stale manifest: {}",
        ctx.setup_panvk()
    ))
}

/// Every usable manifest is one more VkPhysicalDevice for the same GPU.
fn duplicates(ctx: &Context, usable: &[&ManifestFile]) -> Finding {
    let paths: Vec<_> = usable.iter().map(|m| m.path.as_str()).collect();
    Finding::warn(
        ID,
        format!(
            "{} panvk ICDs: the GPU shows up {} times ({})",
            usable.len(),
            usable.len(),
            paths.join(", ")
        ),
    )
    .fix(format!(
        "keep one: export {DRIVER_FILES_VAR}={} or remove the others; or use rvl's panvk: {}",
        crate::shell::quote(paths[0]),
        ctx.setup_icd()
    ))
}

/// Only a warning: the loader skips a malformed manifest and still loads panvk's.
fn skipped(broken: &ManifestFile) -> Finding {
    Finding::warn(
        ID,
        format!(
            "{}: {} (the loader skips it)",
            broken.path,
            broken.error.as_deref().unwrap_or("")
        ),
    )
    .fix(format!("fix or delete {}", broken.path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;
    use crate::icd::Manifest;
    use crate::inventory::Inventory;

    const LIB: &str = "/usr/lib/aarch64-linux-gnu/libvulkan_panfrost.so";

    fn manifest(path: &str, library_found: bool) -> ManifestFile {
        ManifestFile {
            path: path.into(),
            manifest: Some(Manifest {
                library_path: LIB.into(),
                api_version: None,
                library_arch: None,
            }),
            library_found: library_found.then(|| LIB.into()),
            error: None,
        }
    }

    fn judged(inv: &Inventory) -> Finding {
        super::super::with_boltzmann(inv, check)
    }

    #[test]
    fn a_panvk_manifest_without_its_library_fails() {
        let mut inv = Inventory::default();
        let path = "/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json";
        inv.vulkan_icd.manifests = vec![manifest(path, false)];
        let f = judged(&inv);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.summary,
            format!("{path} names {LIB}, which does not exist")
        );
    }

    #[test]
    fn a_filter_hides_panvk_only_when_it_leaves_no_usable_manifest() {
        let mut inv = Inventory::default();
        inv.vulkan_icd.manifests = vec![
            manifest("/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json", true),
            manifest("/usr/local/share/vulkan/icd.d/panfrost_icd.json", true),
        ];
        inv.env = Env::from_pairs([("VK_LOADER_DRIVERS_SELECT", "*aarch64*")]);
        let f = judged(&inv);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("hidden by the loader")));
        inv.env = Env::from_pairs([("VK_LOADER_DRIVERS_SELECT", "*lvp*")]);
        let f = judged(&inv);
        assert!(
            f.summary.starts_with("panvk's ICD is hidden"),
            "{}",
            f.summary
        );
        assert!(f.fix.unwrap().starts_with("unset VK_LOADER_DRIVERS_SELECT"));
    }

    #[test]
    fn a_malformed_manifest_beside_a_usable_panvk_warns() {
        let mut inv = Inventory::default();
        inv.vulkan_icd.manifests = vec![
            manifest("/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json", true),
            ManifestFile {
                path: "/etc/vulkan/icd.d/broken.json".into(),
                manifest: None,
                library_found: None,
                error: Some("not valid JSON: EOF".into()),
            },
        ];
        let f = judged(&inv);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(
            f.summary,
            "/etc/vulkan/icd.d/broken.json: not valid JSON: EOF (the loader skips it)"
        );
    }
}
