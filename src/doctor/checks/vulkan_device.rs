//! `vulkan-device` (live only): load libvulkan, list devices, find panvk, report its Mesa
//! version and the features llama.cpp cares about, and the known ubatch limit.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::live::{VulkanDevice, DRIVER_ID_MESA_PANVK};

const ID: &str = "vulkan-device";

/// The last Mesa release known to allocate the 152 MiB per-command-buffer TLS buffer that makes
/// llama.cpp's large matmul tile fail (research/panvk-oom.md).
const OOM_FIXED_AFTER: (u32, u32) = (26, 1);

/// "Mesa 26.1.6" → (26, 1).
fn mesa_version(info: &str) -> Option<(u32, u32)> {
    let v = info
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut p = v.split(|c: char| !c.is_ascii_digit());
    Some((p.next()?.parse().ok()?, p.next()?.parse().ok()?))
}

fn yes(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

fn features(d: &VulkanDevice) -> String {
    format!(
        "fp16 {}, int8 {}, int dot {}, subgroup {}, shared memory {} KiB",
        yes(d.shader_float16),
        yes(d.shader_int8),
        yes(d.integer_dot_product),
        d.subgroup_size
            .map(|s| s.to_string())
            .unwrap_or_else(|| "?".into()),
        d.max_compute_shared_memory / 1024
    )
}

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    if ctx.no_vulkan {
        return Finding::skip(ID, "--no-vulkan");
    }
    if let Some(why) = ctx.not_live_reason() {
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
    let ev: Vec<String> = probe
        .devices
        .iter()
        .map(|d| {
            format!(
                "{}: {} {} (Vulkan {})",
                d.name,
                d.driver_name.as_deref().unwrap_or("?"),
                d.driver_info.as_deref().unwrap_or(""),
                d.api_version
            )
        })
        .collect();
    let gpu_name = ctx
        .profile
        .map(|p| p.gpu.name.as_str())
        .unwrap_or("Mali-G610");
    let Some(dev) = probe
        .devices
        .iter()
        .find(|d| d.driver_id == Some(DRIVER_ID_MESA_PANVK) || d.name.starts_with(gpu_name))
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
        .fix(ctx.setup("mesa,icd"));
    };
    let mesa = dev.driver_info.as_deref().unwrap_or("Mesa ?");
    let summary = format!("{} (panvk, {mesa}): {}", dev.name, features(dev));
    match dev.driver_info.as_deref().and_then(mesa_version) {
        Some(v) if v <= OOM_FIXED_AFTER => Finding::warn(
            ID,
            format!("{summary}; known limit: llama.cpp ubatch > 64 fails (ErrorOutOfDeviceMemory at vkEndCommandBuffer)"),
        )
        .evidence(ev)
        .fix(format!(
            "Mesa ≤ 26.1 allocates a 152 MiB TLS buffer per command buffer for the spilling large tile: run llama.cpp with -ub 64, or use rvl's patched llama.cpp ({})",
            ctx.setup("llama-cpp")
        )),
        _ => Finding::pass(ID, summary).evidence(ev),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesa_versions() {
        assert_eq!(mesa_version("Mesa 26.1.6"), Some((26, 1)));
        assert_eq!(mesa_version("Mesa 25.2.0-devel (git-abc)"), Some((25, 2)));
        assert_eq!(mesa_version("proprietary"), None);
    }
}
