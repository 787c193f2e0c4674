//! `vulkan-icd`: manifests in the loader's search order whose library is panvk, that the
//! library exists, duplicates, and manifests the loader will skip as malformed.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::icd::{self, SearchMode, DRIVER_FILES_VAR, PANVK_LIBRARY};

const ID: &str = "vulkan-icd";

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let icd = &ctx.inv.vulkan_icd;
    let mut ev = Vec::new();
    let override_var = icd
        .search
        .as_ref()
        .filter(|s| s.mode == SearchMode::Override)
        .and_then(|s| s.variable.clone());
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
    let panvk: Vec<_> = icd.manifests.iter().filter(|m| m.panvk()).collect();
    let broken: Vec<_> = icd.manifests.iter().filter(|m| m.error.is_some()).collect();
    let hidden: Vec<(&str, String)> = panvk
        .iter()
        .filter_map(|m| icd::filtered_out(&ctx.inv.env, &m.path).map(|why| (m.path.as_str(), why)))
        .collect();
    ev.extend(
        hidden
            .iter()
            .map(|(p, why)| format!("{p}: hidden by the loader ({why})")),
    );
    let usable: Vec<_> = panvk
        .iter()
        .filter(|m| m.library_found.is_some())
        .filter(|m| !hidden.iter().any(|(p, _)| *p == m.path))
        .collect();

    if panvk.is_empty() {
        let summary = match &override_var {
            Some(v) => format!("{v} is set and names no panvk manifest"),
            None => format!("no Vulkan ICD manifest names {PANVK_LIBRARY}"),
        };
        let fix = match &override_var {
            Some(v) => format!("unset {v}, or point it at panfrost_icd.aarch64.json"),
            None => ctx.setup("mesa,icd"),
        };
        return Finding::fail(ID, summary).evidence(ev).fix(fix);
    }
    if usable.is_empty() && !hidden.is_empty() {
        let why = &hidden[0].1;
        let var = why.split('=').next().unwrap_or("VK_LOADER_DRIVERS_SELECT");
        return Finding::fail(ID, format!("panvk's ICD is hidden: {why}"))
            .evidence(ev)
            .fix(format!("unset {var}, or make it name panfrost_icd.*.json"));
    }
    if usable.is_empty() {
        let m = panvk[0];
        let lib = m
            .manifest
            .as_ref()
            .map(|x| x.library_path.as_str())
            .unwrap_or(PANVK_LIBRARY);
        return Finding::fail(ID, format!("{} names {lib}, which does not exist", m.path))
            .evidence(ev)
            .fix(format!(
                "reinstall panvk, or remove the stale manifest: {}",
                ctx.setup("mesa,icd")
            ));
    }
    if usable.len() > 1 {
        let paths: Vec<_> = usable.iter().map(|m| m.path.as_str()).collect();
        return Finding::warn(
            ID,
            format!(
                "{} panvk ICDs: the GPU shows up {} times ({})",
                usable.len(),
                usable.len(),
                paths.join(", ")
            ),
        )
        .evidence(ev)
        .fix(format!(
            "keep one: export {DRIVER_FILES_VAR}={} or remove the others ({})",
            paths[0],
            ctx.setup("icd")
        ));
    }
    if let Some(b) = broken.first() {
        return Finding::warn(
            ID,
            format!(
                "{}: {} (the loader skips it)",
                b.path,
                b.error.as_deref().unwrap_or("")
            ),
        )
        .evidence(ev)
        .fix(format!("fix or delete {}", b.path));
    }
    Finding::pass(
        ID,
        format!(
            "{} → {}",
            usable[0].path,
            usable[0].library_found.as_deref().unwrap_or("")
        ),
    )
    .evidence(ev)
}
