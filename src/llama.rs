//! rvl's llama.cpp builds as data, no IO: which install is the newest, whether it carries rvl's
//! Mali tiles patch (its build stamp against the series embedded in this binary), the parse of
//! `llama-bench --list-devices`, and the environment rvl runs llama.cpp binaries with. Doctor's
//! `llama-cpp` check, `vulkan-device` and `rvl serve` all judge from these.

use std::collections::BTreeMap;

use crate::inventory::{Inventory, LlamaFacts, LlamaInstall, LlamaStamp};

/// Where setup installs its builds (`prefix_for("llama.cpp", …)` in setup/paths.rs).
pub const PREFIX_PARENT: &str = "/opt/rvl";
pub const PREFIX_NAME: &str = "llama.cpp-";
/// The patch that keeps llama.cpp's matmul tiles from spilling on Mali (the ubatch > 64 fix).
pub const TILES_PATCH_SUFFIX: &str = "-vulkan-mali-non-spilling-matmul-tiles.patch";

/// The ubatch sizes rvl sweeps (GEMM smoke-bench and `--gguf`): around panvk's limit of 64
/// without the tiles patch, up to llama.cpp's default of 512.
pub const UBATCH_SWEEP: [u32; 6] = [16, 32, 64, 128, 256, 512];
/// Largest ubatch accepted: llama.cpp's own default batch limit is far below this.
pub const MAX_UBATCH: u32 = 8192;

/// Where an install's binaries are.
impl LlamaInstall {
    pub fn rpc_server(&self) -> String {
        format!("{}/bin/{}", self.prefix, crate::rpc::RPC_SERVER)
    }
    pub fn server(&self) -> String {
        format!("{}/bin/llama-server", self.prefix)
    }
    pub fn bench(&self) -> String {
        format!("{}/bin/llama-bench", self.prefix)
    }
    pub fn test_backend_ops(&self) -> String {
        format!("{}/bin/test-backend-ops", self.prefix)
    }
}

/// "llama.cpp-0.3.36-rvl1" → [0, 3, 36, 1]: the numbers in a prefix name, for ordering.
pub fn version_key(name: &str) -> Vec<u64> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect()
}

pub use crate::patchlevel::{Key as Tiles, PatchLevel};

/// rvl's series for llama.cpp, as (name, sha256), from the copy embedded in the binary.
pub fn rvl_series() -> Vec<(String, String)> {
    crate::patchlevel::rvl_series("llama.cpp")
}

/// The build's level against `series`; its key patch is the Mali tiles patch.
pub fn patch_level(stamp: &LlamaStamp, series: &[(String, String)]) -> PatchLevel {
    crate::patchlevel::level(&stamp.patches, series, TILES_PATCH_SUFFIX)
}

/// `--ubatch` as given (the sweep when empty): each in 1..=MAX_UBATCH, sorted, once each.
pub fn ubatch_list(given: &[u32]) -> Result<Vec<u32>, String> {
    let mut ubatches = if given.is_empty() {
        UBATCH_SWEEP.to_vec()
    } else {
        given.to_vec()
    };
    if let Some(bad) = ubatches.iter().find(|u| **u == 0 || **u > MAX_UBATCH) {
        return Err(format!(
            "--ubatch {bad}: each ubatch must be between 1 and {MAX_UBATCH}"
        ));
    }
    ubatches.sort_unstable();
    ubatches.dedup();
    Ok(ubatches)
}

/// The install `rvl serve` runs and doctor judges: the newest with a build stamp.
pub fn newest(facts: &LlamaFacts) -> Option<&LlamaInstall> {
    facts.installs.iter().find(|i| i.stamp.is_some())
}

/// The newest complete install when it carries the tiles patch (any revision): ubatch > 64
/// works with it.
pub fn patched(facts: &LlamaFacts) -> Option<&LlamaInstall> {
    newest(facts).filter(|i| {
        i.stamp
            .as_ref()
            .is_some_and(|s| patch_level(s, &rvl_series()).key != Tiles::Missing)
    })
}

/// The device lines of `llama-bench --list-devices`: the `NAME: description` lines right after
/// "Available devices:", up to the first line that is not one (ggml's log lines follow).
pub fn parse_list_devices(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("Available devices"))
        .skip(1)
        .map(str::trim)
        .take_while(|l| {
            l.split_once(": ")
                .is_some_and(|(n, _)| !n.is_empty() && !n.contains(char::is_whitespace))
        })
        .map(str::to_string)
        .collect()
}

/// Index of the panvk device in the loader's device list (the order ggml's Vulkan backend
/// numbers physical devices in, which GGML_VK_VISIBLE_DEVICES takes); None when the Vulkan
/// probe did not run or found no panvk.
pub fn panvk_index(inv: &Inventory) -> Option<usize> {
    let probe = inv.live_facts.vulkan.as_ref()?;
    probe.devices.iter().position(|d| d.is_panvk())
}

/// The variables rvl adds when it runs a llama.cpp binary. Sorted by name (the printed order).
/// A variable the user already set is left as it is: an explicit choice wins over rvl's.
pub fn launch_env(inv: &Inventory) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let set = |n: &str| inv.env.get(n).is_some();
    // The loader takes VK_ICD_FILENAMES as the older name of the same thing.
    if inv.llama.rvl_icd && !set("VK_DRIVER_FILES") && !set("VK_ICD_FILENAMES") {
        env.insert(
            "VK_DRIVER_FILES".into(),
            crate::setup::paths::ICD_FILE.to_string(),
        );
    }
    if let Some(x) = &inv.llama.xdg_fallback {
        if !set("XDG_RUNTIME_DIR") {
            env.insert("XDG_RUNTIME_DIR".into(), x.clone());
        }
    }
    if let Some(i) = panvk_index(inv) {
        if !set("GGML_VK_VISIBLE_DEVICES") {
            env.insert("GGML_VK_VISIBLE_DEVICES".into(), i.to_string());
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_series_has_the_tiles_patch() {
        assert!(rvl_series()
            .iter()
            .any(|(n, _)| n.ends_with(TILES_PATCH_SUFFIX)));
    }

    #[test]
    fn prefixes_order_by_their_numbers_not_their_text() {
        assert!(version_key("llama.cpp-0.3.36-rvl1") > version_key("llama.cpp-0.3.9-rvl2"));
        assert!(version_key("llama.cpp-0.3.36-rvl2") > version_key("llama.cpp-0.3.36-rvl1"));
    }

    #[test]
    fn list_devices_keeps_only_the_device_lines() {
        let out = "ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = Mali-G610 MC4 (panvk) | uma: 1\nAvailable devices:\n  Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)\n\nggml_vulkan: done\n";
        assert_eq!(
            parse_list_devices(out),
            vec!["Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)"]
        );
        assert!(parse_list_devices("Available devices:\n").is_empty());
        assert!(parse_list_devices("error: unknown argument\n").is_empty());
    }

    #[test]
    fn launch_env_adds_the_icd_the_runtime_dir_and_the_panvk_index_but_keeps_the_users_own() {
        use crate::inventory::Env;
        use crate::vulkan::info::{DeviceInfo, VulkanProbe, DRIVER_ID_MESA_PANVK};
        let mut inv = Inventory::default();
        assert!(launch_env(&inv).is_empty());
        inv.llama.rvl_icd = true;
        inv.llama.xdg_fallback = Some("/run/user/1000".into());
        let cpu = DeviceInfo {
            name: "llvmpipe".into(),
            ..Default::default()
        };
        let gpu = DeviceInfo {
            name: "Mali-G610 MC4".into(),
            driver_id: DRIVER_ID_MESA_PANVK.into(),
            ..Default::default()
        };
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![cpu, gpu],
        });
        let env = launch_env(&inv);
        assert_eq!(
            env.into_iter().collect::<Vec<_>>(),
            vec![
                ("GGML_VK_VISIBLE_DEVICES".to_string(), "1".to_string()),
                (
                    "VK_DRIVER_FILES".to_string(),
                    crate::setup::paths::ICD_FILE.to_string()
                ),
                ("XDG_RUNTIME_DIR".to_string(), "/run/user/1000".to_string()),
            ]
        );
        inv.env = Env::from_pairs([
            ("VK_ICD_FILENAMES", "/x.json"),
            ("XDG_RUNTIME_DIR", "/run/user/7"),
            ("GGML_VK_VISIBLE_DEVICES", "0"),
        ]);
        assert!(launch_env(&inv).is_empty());
    }
}

/// What ggml's configure says about glslc and integer dot product, from the build log: Some(true)
/// when the int-dot matmul shaders are built, Some(false) when this glslc lacks the extension.
pub fn int_dot_from_log(log: &str) -> Option<bool> {
    log.lines().rev().find_map(|l| {
        let l = l.trim_start_matches("-- ").trim();
        match l {
            "GL_EXT_integer_dot_product supported by glslc" => Some(true),
            "GL_EXT_integer_dot_product not supported by glslc" => Some(false),
            _ => None,
        }
    })
}

/// The sentence doctor and serve print about the int-dot matmul path of a build.
pub fn int_dot_line(built: Option<bool>) -> Option<&'static str> {
    match built? {
        true => Some("int-dot matmul: built (on Mali, q4_0/q8_0/q4_K/q6_K prefill takes rvl's int-dot pipeline)"),
        false => Some("int-dot matmul: not built (this release's glslc lacks GL_EXT_integer_dot_product, e.g. Debian 12's 2023.2); quantised prefill takes rvl's fp16 Mali pipeline"),
    }
}

#[cfg(test)]
mod int_dot_tests {
    use super::*;

    #[test]
    fn the_int_dot_path_is_read_from_ggmls_configure_output() {
        assert_eq!(
            int_dot_from_log("-- GL_EXT_integer_dot_product not supported by glslc\n"),
            Some(false)
        );
        assert_eq!(int_dot_from_log("-- GL_KHR_cooperative_matrix supported by glslc\n-- GL_EXT_integer_dot_product supported by glslc\n"), Some(true));
        assert_eq!(int_dot_from_log("nothing\n"), None);
        assert!(int_dot_line(Some(false)).unwrap().contains("not built"));
        assert_eq!(int_dot_line(None), None);
    }
}
