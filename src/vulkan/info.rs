//! What rvl knows about a Vulkan device, as plain data: doctor's inventory embeds it and
//! smoke-bench prints and saves it. One type, filled by one function
//! ([`crate::vulkan::describe`]), so both verbs describe a device the same way. No `ash` here:
//! a build without the `bench` feature still reads and writes inventories.
//!
//! The types are [`crate::inventory::vulkan`]'s (the bottom layer), re-exported here with the
//! methods and device choice that know drivers; imports only the inventory and `output`.

pub use crate::inventory::vulkan::{DeviceInfo, Nanos, ShaderCores, VulkanProbe};

impl DeviceInfo {
    pub fn is_panvk(&self) -> bool {
        self.driver_id == DRIVER_ID_MESA_PANVK
    }
    pub fn is_cpu(&self) -> bool {
        self.kind == "cpu"
    }
    /// Nanoseconds per timestamp tick, when the device can time compute work.
    pub fn tick_ns(&self) -> Option<f32> {
        self.timestamp_period_ns.map(|p| p.0)
    }
}

/// The vendor extensions' compute-unit figures for one device, each None where the driver does
/// not expose that extension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreCounts {
    /// VK_NV_shader_sm_builtins: shaderSMCount.
    pub nv_sms: Option<u32>,
    /// VK_AMD_shader_core_properties: (shaderEngineCount, shaderArraysPerEngineCount,
    /// computeUnitsPerShaderArray).
    pub amd: Option<(u32, u32, u32)>,
    /// VK_ARM_shader_core_builtins: shaderCoreCount (VK_ARM_shader_core_properties gives only
    /// per-core rates, no count).
    pub arm_cores: Option<u32>,
}

/// The device's compute-unit count from whichever vendor extension gives one: NVIDIA's SMs,
/// AMD's engines x arrays x CUs per array, Arm's shader cores. A zero (a driver filling the
/// struct without knowing) counts as not given, since a split sized for 0 units means nothing.
pub fn compute_units(c: &CoreCounts) -> Option<u32> {
    let nonzero = |v: u32| (v > 0).then_some(v);
    c.nv_sms
        .and_then(nonzero)
        .or_else(|| {
            c.amd
                .and_then(|(e, a, u)| e.checked_mul(a)?.checked_mul(u))
                .and_then(nonzero)
        })
        .or_else(|| c.arm_cores.and_then(nonzero))
}

/// A Mesa driverInfo's release: "Mesa 26.1.6" → (26, 1); None for other drivers' strings.
pub fn mesa_version(info: &str) -> Option<(u32, u32)> {
    let v = info
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut p = v.split(|c: char| !c.is_ascii_digit());
    Some((p.next()?.parse().ok()?, p.next()?.parse().ok()?))
}

/// `VkDriverId` name of Mesa panvk.
pub const DRIVER_ID_MESA_PANVK: &str = "MESA_PANVK";

/// `--device N` past the end: how many there are, and their indices.
fn no_such_device(i: usize, n: usize) -> String {
    let devices = crate::output::count(n, "Vulkan device");
    if n == 1 {
        format!("--device {i}: there is only {devices} (index 0)")
    } else {
        format!("--device {i}: there are only {devices} (0..{})", n - 1)
    }
}

/// Choose a device: an explicit `--device` (index or case-insensitive part of the name) wins;
/// otherwise panvk, then a discrete, integrated or virtual GPU, and a CPU device last.
pub fn pick_device(devices: &[DeviceInfo], wanted: Option<&str>) -> Result<usize, String> {
    if devices.is_empty() {
        return Err("no Vulkan device found".into());
    }
    if let Some(want) = wanted {
        if let Ok(i) = want.parse::<usize>() {
            return if i < devices.len() {
                Ok(i)
            } else {
                Err(no_such_device(i, devices.len()))
            };
        }
        let needle = want.to_lowercase();
        let hits: Vec<usize> = devices
            .iter()
            .filter(|d| d.name.to_lowercase().contains(&needle))
            .map(|d| d.index)
            .collect();
        return match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!(
                "--device {want:?} matches no device; devices: {}",
                list_names(devices)
            )),
            _ => Err(format!(
                "--device {want:?} matches several devices ({}); use the index",
                hits.iter()
                    .map(|i| format!("{i}: {}", devices[*i].name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
    let rank = |d: &DeviceInfo| match (d.is_panvk(), d.kind.as_str()) {
        (true, _) => 0,
        (_, "discrete-gpu") => 1,
        (_, "integrated-gpu") => 2,
        (_, "virtual-gpu") => 3,
        (_, "cpu") => 5,
        _ => 4,
    };
    Ok(devices
        .iter()
        .min_by_key(|d| (rank(d), d.index))
        .map(|d| d.index)
        .unwrap_or(0))
}

fn list_names(devices: &[DeviceInfo]) -> String {
    devices
        .iter()
        .map(|d| format!("{}: {}", d.index, d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub fn dev(index: usize, name: &str, kind: &str, driver_id: &str) -> DeviceInfo {
        DeviceInfo {
            index,
            name: name.into(),
            kind: kind.into(),
            driver_id: driver_id.into(),
            driver_version: "1.0.0".into(),
            api_version: "1.3.0".into(),
            fp16: true,
            shader_float16: true,
            subgroup_size: 16,
            max_shared_memory: 32768,
            max_compute_shared_memory: 32768,
            max_workgroup_invocations: 1024,
            max_storage_buffer_range: 1 << 27,
            timestamp_period_ns: Some(Nanos(1.0)),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn mesa_versions() {
        assert_eq!(super::mesa_version("Mesa 26.1.6"), Some((26, 1)));
        assert_eq!(
            super::mesa_version("Mesa 25.2.0-devel (git-abc)"),
            Some((25, 2))
        );
        assert_eq!(super::mesa_version("proprietary"), None);
    }

    use super::*;
    use tests_support::dev;

    #[test]
    fn prefers_panvk_then_gpu_over_cpu() {
        let list = vec![
            dev(
                0,
                "llvmpipe (LLVM 15.0.6, 256 bits)",
                "cpu",
                "MESA_LLVMPIPE",
            ),
            dev(1, "NVIDIA H200", "discrete-gpu", "NVIDIA_PROPRIETARY"),
        ];
        assert_eq!(pick_device(&list, None), Ok(1));
        let list = vec![
            dev(0, "llvmpipe", "cpu", "MESA_LLVMPIPE"),
            dev(1, "Some iGPU", "integrated-gpu", "OTHER"),
            dev(2, "Mali-G610 (Panfrost)", "integrated-gpu", "MESA_PANVK"),
        ];
        assert_eq!(pick_device(&list, None), Ok(2));
        assert_eq!(pick_device(&list[..1], None), Ok(0));
    }

    #[test]
    fn explicit_choice_by_index_or_name() {
        let list = vec![
            dev(0, "llvmpipe", "cpu", "MESA_LLVMPIPE"),
            dev(1, "Mali-G610", "integrated-gpu", "MESA_PANVK"),
        ];
        assert_eq!(pick_device(&list, Some("0")), Ok(0));
        assert_eq!(pick_device(&list, Some("LLVM")), Ok(0));
        let err = pick_device(&list, Some("7")).unwrap_err();
        assert!(err.contains("only 2 Vulkan devices (0..1)"), "{err}");
        let err = pick_device(&list[..1], Some("1")).unwrap_err();
        assert_eq!(err, "--device 1: there is only 1 Vulkan device (index 0)");
        let err = pick_device(&list, Some("radeon")).unwrap_err();
        assert!(
            err.contains("matches no device") && err.contains("1: Mali-G610"),
            "{err}"
        );
        let err = pick_device(&list, Some("l")).unwrap_err();
        assert!(err.contains("several"), "{err}");
        assert!(pick_device(&[], None).is_err());
    }

    #[test]
    fn compute_units_come_from_whichever_vendor_extension_gives_them() {
        let none = CoreCounts::default();
        assert_eq!(compute_units(&none), None, "lavapipe exposes none of them");
        let h200 = CoreCounts {
            nv_sms: Some(132),
            ..none
        };
        assert_eq!(compute_units(&h200), Some(132));
        // An RX 7900 XTX: 6 engines x 2 arrays x 8 CUs.
        let navi = CoreCounts {
            amd: Some((6, 2, 8)),
            ..none
        };
        assert_eq!(compute_units(&navi), Some(96));
        let g610 = CoreCounts {
            arm_cores: Some(4),
            ..none
        };
        assert_eq!(compute_units(&g610), Some(4));
        // A zero anywhere is a driver that does not know, not a device without units.
        let zeros = CoreCounts {
            nv_sms: Some(0),
            amd: Some((6, 0, 8)),
            arm_cores: Some(0),
        };
        assert_eq!(compute_units(&zeros), None);
        let fallback = CoreCounts {
            nv_sms: Some(0),
            arm_cores: Some(10),
            ..none
        };
        assert_eq!(compute_units(&fallback), Some(10));
    }

    #[test]
    fn an_inventory_saved_before_compute_units_existed_still_reads() {
        let d = dev(1, "Mali-G610", "integrated-gpu", "MESA_PANVK");
        let mut json: serde_json::Value = serde_json::to_value(&d).unwrap();
        json.as_object_mut().unwrap().remove("compute_units");
        let back: DeviceInfo = serde_json::from_value(json).unwrap();
        assert_eq!(back.compute_units, None);
    }

    #[test]
    fn descriptions_round_trip_through_json() {
        let d = dev(1, "Mali-G610", "integrated-gpu", "MESA_PANVK");
        let back: DeviceInfo = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        assert!(back.is_panvk());
    }
}
