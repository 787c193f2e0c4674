//! `vulkan-device` (live only): load libvulkan, list devices, find panvk, report its Mesa
//! version and the features llama.cpp cares about, the known ubatch limit, and whether a
//! `smoke-bench --gguf` record saw wrong results from it (a warning).

use crate::doctor::context::Context;
use crate::doctor::finding::{Finding, Status};
use crate::vulkan::info::DeviceInfo;

const ID: &str = "vulkan-device";

/// The newest Mesa series whose panvk is known to allocate compute TLS per command buffer (the
/// 152 MiB buffer that makes llama.cpp's large matmul tile fail; research/panvk-oom.md, and the
/// 26.2 tree in the lab, docs/panvk-lab.md). A newer one gets the same warning, flagged as unchecked.
const LAST_CHECKED: (u32, u32) = (26, 2);

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn features(d: &DeviceInfo) -> String {
    format!(
        "fp16 {}, int8 {}, int dot {}, subgroup {}, shared memory {} KiB, compute units {}",
        yes(d.shader_float16),
        yes(d.shader_int8),
        yes(d.integer_dot_product),
        d.subgroup_size,
        d.max_compute_shared_memory / 1024,
        d.compute_units
            .map_or_else(|| "unknown".to_string(), |n| n.to_string())
    )
}

/// "?" for a string the driver could not give.
fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "?"
    } else {
        s
    }
}

pub fn check(ctx: &Context) -> Finding {
    with_wrong_results(ctx, device(ctx))
}

/// A pass or warning becomes a warning naming each `smoke-bench --gguf` record whose GPU
/// results were wrong at some ubatch (rvl serve already avoids those ubatches).
fn with_wrong_results(ctx: &Context, mut f: Finding) -> Finding {
    let records = &ctx.inv.llama.wrong_results;
    if records.is_empty() || !matches!(f.status, Status::Pass | Status::Warn) {
        return f;
    }
    let list = |u: &[u32]| u.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    for r in records {
        f.evidence.push(format!(
            "{}: wrong GPU results at ubatch {} ({}; first: {})",
            r.record,
            list(&r.ubatches),
            r.model,
            r.first_failure
        ));
    }
    let first = &records[0];
    f.summary = format!(
        "{}; wrong results from llama.cpp on this GPU at ubatch {} of {}{}",
        f.summary,
        list(&first.ubatches),
        first.model,
        if records.len() > 1 {
            format!(" (and {} more models)", records.len() - 1)
        } else {
            String::new()
        }
    );
    f.status = Status::Warn;
    let advice = "rvl serve never uses those ubatches; after updating panvk or llama.cpp (sudo rvl setup --only mesa,icd,llama-cpp) rerun rvl smoke-bench --gguf MODEL";
    f.fix = Some(match f.fix.take() {
        Some(fix) => format!("{fix}; {advice}"),
        None => advice.to_string(),
    });
    f
}

fn device(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    if ctx.no_vulkan {
        return Finding::skip(ID, "--no-vulkan");
    }
    if let Some(why) = ctx.not_live_reason() {
        return Finding::skip(ID, why);
    }
    if let Some(why) = crate::vulkan::UNAVAILABLE {
        return Finding::skip(ID, why);
    }
    let Some(probe) = &ctx.inv.live_facts.vulkan else {
        return Finding::skip(ID, "the Vulkan probe did not run");
    };
    if let Some(e) = &probe.error {
        return Finding::fail(ID, format!("Vulkan unusable: {e}")).fix(
            "install the loader and drivers: sudo apt install libvulkan1 mesa-vulkan-drivers",
        );
    }
    let mut ev: Vec<String> = probe
        .devices
        .iter()
        .map(|d| {
            format!(
                "{}: {} {} (Vulkan {})",
                d.name,
                or_unknown(&d.driver_name),
                d.driver_info,
                d.api_version
            )
        })
        .collect();
    if ctx
        .inv
        .env
        .get("PAN_I_WANT_A_BROKEN_VULKAN_DRIVER")
        .is_some()
    {
        // panvk only demands it for untested GPU generations; v10 (G610) left that list in 24.3.
        ev.push(
            "PAN_I_WANT_A_BROKEN_VULKAN_DRIVER is set: Mali-G610 has not needed it since Mesa 24.3"
                .into(),
        );
    }
    let gpu_name = ctx
        .profile
        .map(|p| p.gpu.name.as_str())
        .unwrap_or("Mali-G610");
    let Some(dev) = probe
        .devices
        .iter()
        .find(|d| d.is_panvk() || d.name.starts_with(gpu_name))
    else {
        let names: Vec<_> = probe.devices.iter().map(|d| d.name.as_str()).collect();
        return Finding::fail(
            ID,
            format!(
                "no panvk device (devices: {})",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            ),
        )
        .evidence(ev)
        .fix(ctx.setup_panvk());
    };
    let mesa = if dev.driver_info.is_empty() {
        "Mesa ?"
    } else {
        &dev.driver_info
    };
    let summary = format!("{} (panvk, {mesa}): {}", dev.name, features(dev));
    // No upstream release fixes the per-command-buffer TLS allocation yet (26.2.4 does not), so
    // every stock panvk has the limit; rvl's patched panvk (one TLS buffer per queue) or rvl's
    // patched llama.cpp (tiles that do not spill) each lift it.
    if let Some(rvl) = crate::mesa::active(ctx.inv).filter(|r| r.tls_fixed()) {
        ev.push(format!(
            "{}: compute TLS is one grow-only buffer per queue, so llama.cpp's spilling tile no longer costs 152 MiB per command buffer",
            rvl.install.prefix
        ));
        return Finding::pass(
            ID,
            format!("{summary}; ubatch > 64 limit fixed by {}", rvl.describe()),
        )
        .evidence(ev);
    }
    if let Some(inst) = crate::llama::patched(&ctx.inv.llama) {
        ev.push(format!(
            "a stock llama.cpp still fails above -ub 64 on this driver; rvl's build at {} does not (rvl serve runs it)",
            inst.prefix
        ));
        return Finding::pass(
            ID,
            format!("{summary}; ubatch > 64 limit handled by rvl's patched llama.cpp"),
        )
        .evidence(ev);
    }
    let newer =
        crate::vulkan::info::mesa_version(&dev.driver_info).is_some_and(|v| v > LAST_CHECKED);
    if newer {
        ev.push(format!(
            "Mesa newer than {}.{}: rvl has not checked whether it still allocates TLS per command buffer",
            LAST_CHECKED.0, LAST_CHECKED.1
        ));
    }
    Finding::warn(
        ID,
        format!("{summary}; known limit: llama.cpp ubatch > 64 fails (ErrorOutOfDeviceMemory at vkEndCommandBuffer)"),
    )
    .evidence(ev)
    .fix(format!(
        "stock panvk allocates a 152 MiB TLS buffer per command buffer for the spilling large tile: run llama.cpp with -ub 64, or install rvl's patched panvk and llama.cpp ({})",
        match ctx.mesa_blocked() {
            Some(why) => format!("{why}: upgrade the image first"),
            None => ctx.setup("mesa,icd,llama-cpp"),
        }
    ))
}
