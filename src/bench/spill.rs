//! Spill diagnostics: registers, spills and fills per kernel from
//! VK_KHR_pipeline_executable_properties, and on panvk the scratch (TLS) memory each command
//! buffer holding a spilling kernel will allocate at vkEndCommandBuffer:
//!   next_pow2(align16(TLS bytes per thread)) x max threads per core x core_id_range,
//! where core_id_range = util_last_bit(shader core mask) (research/panvk-oom.md §3b).

use serde::Serialize;

use super::throughput::Prediction;
use crate::vulkan::{DeviceInfo, Statistic};

/// Mali-G610 MC4 on RK3588 as panthor reports it, used when the device does not expose its own.
pub const G610_MAX_THREADS: u32 = 2048;
pub const G610_CORE_MASK: u64 = 0x50005;
/// Bytes of thread-local storage one spilled value takes in Mesa's Valhall SSA spiller.
pub const SPILL_SLOT_BYTES: u64 = 4;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KernelDiagnostics {
    pub precision: String,
    pub kernel: String,
    pub statistics: Vec<Statistic>,
    pub registers: Option<f64>,
    pub spills: Option<f64>,
    pub fills: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scratch: Option<ScratchPrediction>,
    /// The rate the compiled code allows (throughput.rs), where the driver gives unit cycles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Prediction>,
    /// The best GFLOP/s this kernel's screens measured, beside `predicted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_gflops: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScratchPrediction {
    pub tls_bytes_per_thread: u64,
    /// Where the per-thread size came from (a driver statistic, or spills x 4 B).
    pub tls_source: String,
    pub max_threads_per_core: u32,
    pub core_mask: u64,
    pub core_id_range: u32,
    /// Where threads/core mask came from (the device, or the G610 defaults).
    pub topology_source: String,
    pub bytes_per_command_buffer: u64,
    /// True when the kernel will make panvk allocate scratch.
    pub allocates: bool,
}

fn find(stats: &[Statistic], words: &[&str]) -> Option<f64> {
    stats
        .iter()
        .find(|s| {
            let n = s.name.to_lowercase();
            words.iter().any(|w| n.contains(w))
        })
        .map(|s| s.value)
}

/// Highest set bit + 1 (Mesa's util_last_bit): 0x50005 -> 19.
pub fn core_id_range(mask: u64) -> u32 {
    64 - mask.leading_zeros()
}

/// panvk's per-command-buffer TLS size for a per-thread stack of `tls_bytes`.
pub fn scratch_bytes(tls_bytes: u64, max_threads: u32, core_mask: u64) -> u64 {
    if tls_bytes == 0 {
        return 0;
    }
    tls_bytes.next_multiple_of(16).next_power_of_two()
        * u64::from(max_threads)
        * u64::from(core_id_range(core_mask))
}

/// Read the interesting numbers out of a driver's statistics (names differ per driver).
pub fn diagnose(
    dev: &DeviceInfo,
    precision: &str,
    kernel: &str,
    statistics: Vec<Statistic>,
) -> KernelDiagnostics {
    let registers = find(&statistics, &["register", "gprs", "vgpr"]);
    let spills = find(&statistics, &["spill"]);
    let fills = find(&statistics, &["fill"]);
    let scratch = dev.is_panvk().then(|| {
        let (tls, tls_source) = match find(&statistics, &["tls", "stack", "scratch"]) {
            Some(b) => (b as u64, "driver statistic".to_string()),
            None => (
                spills.unwrap_or(0.0) as u64 * SPILL_SLOT_BYTES,
                format!("spills x {SPILL_SLOT_BYTES} B (estimate: one slot per spilled value)"),
            ),
        };
        let (threads, mask, topology_source) = match dev.shader_cores {
            Some(c) if c.core_mask != 0 && c.warps_per_core != 0 => (
                c.warps_per_core * dev.subgroup_size.max(1),
                c.core_mask,
                "device (VK_ARM_shader_core_builtins)".to_string(),
            ),
            _ => (
                G610_MAX_THREADS,
                G610_CORE_MASK,
                "Mali-G610 MC4 defaults (2048 threads, mask 0x50005): the device does not expose them".to_string(),
            ),
        };
        let bytes = scratch_bytes(tls, threads, mask);
        ScratchPrediction {
            tls_bytes_per_thread: tls,
            tls_source,
            max_threads_per_core: threads,
            core_mask: mask,
            core_id_range: core_id_range(mask),
            topology_source,
            bytes_per_command_buffer: bytes,
            allocates: bytes > 0,
        }
    });
    KernelDiagnostics {
        precision: precision.to_string(),
        kernel: kernel.to_string(),
        statistics,
        registers,
        spills,
        fills,
        scratch,
        predicted: None,
        measured_gflops: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_matches_the_measured_152_mib() {
        assert_eq!(core_id_range(0x50005), 19);
        assert_eq!(core_id_range(0xf), 4);
        assert_eq!(core_id_range(0), 0);
        // 754 spills x 4 B = 3016 B -> 4 KiB per thread -> 4096 x 2048 x 19 = 152 MiB.
        assert_eq!(scratch_bytes(754 * 4, 2048, 0x50005), 152 * 1024 * 1024);
        assert_eq!(scratch_bytes(0, 2048, 0x50005), 0);
    }

    fn stat(name: &str, value: f64) -> Statistic {
        Statistic {
            name: name.into(),
            value,
        }
    }

    #[test]
    fn panvk_kernels_get_a_prediction_with_its_source() {
        let mut dev =
            crate::vulkan::info::tests_support::dev(0, "Mali-G610", "integrated-gpu", "MESA_PANVK");
        let d = diagnose(
            &dev,
            "fp32",
            "llama-128x128",
            vec![stat("Spills", 754.0), stat("Fills", 900.0)],
        );
        let s = d.scratch.as_ref().unwrap();
        assert_eq!(d.spills, Some(754.0));
        assert_eq!(d.fills, Some(900.0));
        assert!(s.allocates);
        assert_eq!(s.bytes_per_command_buffer, 152 * 1024 * 1024);
        assert!(s.topology_source.contains("defaults"));
        let clean = diagnose(&dev, "fp32", "reg-4x4", vec![stat("Spills", 0.0)]);
        assert!(!clean.scratch.unwrap().allocates);
        // Non-panvk devices get the statistics but no panvk prediction.
        dev.driver_id = "NVIDIA_PROPRIETARY".into();
        let nv = diagnose(&dev, "fp32", "x", vec![stat("Register Count", 96.0)]);
        assert_eq!(nv.registers, Some(96.0));
        assert!(nv.scratch.is_none());
    }
}
