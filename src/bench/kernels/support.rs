//! What a device can run: each kernel's needs (features, float atomics, shared memory,
//! invocations) against the device's, and the Mali lab rule (nothing that spills there).

use super::{Family, KernelSpec, Precision};
use crate::vulkan::DeviceInfo;

impl KernelSpec {
    /// Why the kernel cannot run on `dev`, if it cannot.
    pub fn unsupported_reason(&self, dev: &DeviceInfo) -> Option<String> {
        if let Some(r) = self.precision.unsupported_reason(dev) {
            return Some(r);
        }

        if is_mali(dev) {
            if self.family == Family::Tiled && !self.llama_like {
                // 64 accumulators plus staging registers: every such tile spills in the panvk
                // lab (docs/panvk-lab.md: 14:18 to 824:1166 with Mesa 26.2; tiled-128x128 481:1671
                // with 26.1.6, 585:2167 with 26.2, 152 MiB of scratch per command buffer).
                // llama.cpp's own tiles still run there, to reproduce what its pipeline meets.
                return Some(
                    "a desktop shared-memory tile: spills on Mali (tiled-128x128: 585 spills, 2167 fills with Mesa 26.2 in the panvk lab)"
                        .into(),
                );
            }
            if let Some((spills, fills)) = self.mali_spills() {
                return Some(format!(
                    "spills on Mali ({spills} spills, {fills} fills with Mesa's Valhall compiler in the panvk lab); a smaller micro-tile runs instead"
                ));
            }
        }
        if self.split_from_cus && dev.compute_units.is_none() {
            return Some(
                "sizes its split-K from the compute-unit count, which this driver does not give"
                    .into(),
            );
        }
        if (self.split_k > 1 || self.split_from_cus) && !dev.float_atomic_add {
            return Some(
                "needs shaderBufferFloat32AtomicAdd (VK_EXT_shader_atomic_float) to add split-K partial sums"
                    .into(),
            );
        }
        if self.shared_bytes > dev.max_shared_memory {
            return Some(format!(
                "needs {} KiB shared memory, device has {} KiB",
                self.shared_bytes / 1024,
                dev.max_shared_memory / 1024
            ));
        }
        if self.invocations() > dev.max_workgroup_invocations {
            return Some(format!(
                "needs {} invocations per workgroup, device allows {}",
                self.invocations(),
                dev.max_workgroup_invocations
            ));
        }
        None
    }

    /// Spills and fills measured for this register-blocked configuration on Mali, if it spills.
    pub fn mali_spills(&self) -> Option<(u32, u32)> {
        if self.family != Family::Reg || self.fixed_grid.is_some() {
            return None;
        }
        let config = [self.local.0, self.local.1, self.spec[2], self.spec[3]];
        MALI_SPILLS
            .iter()
            .find(|(p, c, _, _)| *p == self.precision && *c == config)
            .map(|&(_, _, spills, fills)| (spills, fills))
    }
}

/// Register-blocked configurations `(precision, [wx, wy, TM, TN], spills, fills)` that Mesa
/// 26.1.6's Valhall compiler spills for a Mali-G610 (64 registers; 26.2 spills the same ones,
/// int8 reg-4x2 10:16 and reg-4x4 39:61 there), measured in the panvk lab
/// (docs/panvk-lab.md, "rvl's own kernels"). Every spill costs a thread-local scratch buffer of
/// megabytes per command buffer on panvk, so Mali skips these and runs the clean smaller tiles;
/// other GPUs, with more registers, keep them.
pub const MALI_SPILLS: &[(Precision, [u32; 4], u32, u32)] = &[
    (Precision::Fp32, [8, 8, 4, 8], 16, 70),
    (Precision::Fp32, [16, 4, 8, 4], 34, 78),
    (Precision::Fp16, [8, 8, 4, 8], 40, 40),
    (Precision::Int8, [16, 4, 4, 2], 2, 22),
    (Precision::Int8, [16, 4, 4, 4], 27, 27),
    (Precision::Q4_0, [16, 4, 4, 2], 11, 34),
    (Precision::Q4_0, [16, 4, 4, 4], 40, 155),
];

/// Arm Mali (PCI vendor 0x13b5) or the panvk driver on anything.
pub fn is_mali(dev: &DeviceInfo) -> bool {
    dev.vendor_id == 0x13b5 || dev.is_panvk()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kernels::tests_support::{mali, nvidia};
    use crate::bench::kernels::{catalogue, find};

    /// Register-blocked configs (precision, wx, wy, TM, TN) that the panvk lab measured
    /// spilling on a Mali-G610 with Mesa 26.1.6 (docs/panvk-lab.md); written out here apart from
    /// MALI_SPILLS so that dropping an entry there fails this test.
    const LAB_SPILLING: [(Precision, u32, u32, u32, u32); 7] = [
        (Precision::Fp32, 8, 8, 4, 8),
        (Precision::Fp32, 16, 4, 8, 4),
        (Precision::Fp16, 8, 8, 4, 8),
        (Precision::Int8, 16, 4, 4, 2),
        (Precision::Int8, 16, 4, 4, 4),
        (Precision::Q4_0, 16, 4, 4, 2),
        (Precision::Q4_0, 16, 4, 4, 4),
    ];

    /// The configs the same lab measured with 0 spills: Mali may run only these.
    const LAB_CLEAN: [(Precision, u32, u32, u32, u32); 10] = [
        (Precision::Fp32, 16, 4, 4, 4),
        (Precision::Fp32, 16, 4, 4, 2),
        (Precision::Fp32, 16, 4, 2, 4),
        (Precision::Fp16, 16, 4, 4, 4),
        (Precision::Fp16, 16, 4, 4, 2),
        (Precision::Int8, 16, 4, 2, 2),
        (Precision::Int8, 16, 4, 4, 1),
        (Precision::Q4_0, 16, 4, 2, 2),
        (Precision::Q4_0, 16, 4, 4, 1),
        (Precision::Q4_0, 16, 4, 2, 1),
    ];

    fn config(k: &KernelSpec) -> (Precision, u32, u32, u32, u32) {
        (k.precision, k.local.0, k.local.1, k.spec[2], k.spec[3])
    }

    fn runs_on(dev: &DeviceInfo) -> Vec<KernelSpec> {
        catalogue()
            .into_iter()
            .filter(|k| k.family == Family::Reg && k.unsupported_reason(dev).is_none())
            .collect()
    }

    #[test]
    fn mali_runs_no_register_kernel_the_lab_saw_spill() {
        let on_mali = runs_on(&mali());
        for k in &on_mali {
            assert!(
                !LAB_SPILLING.contains(&config(k)),
                "{} {} spills on Mali but is in its catalogue",
                k.precision.name(),
                k.name
            );
            assert!(
                LAB_CLEAN.contains(&config(k)),
                "{} {} was never measured spill-free on Mali",
                k.precision.name(),
                k.name
            );
        }
        // Every precision keeps at least one register kernel on Mali.
        for p in Precision::ALL {
            assert!(on_mali.iter().any(|k| k.precision == p), "{}", p.name());
        }
        // The vendor id alone (another driver on a Mali) is enough to be treated as Mali.
        let mut arm = mali();
        arm.driver_id = "ARM_PROPRIETARY".into();
        arm.vendor_id = 0x13b5;
        assert_eq!(runs_on(&arm).len(), on_mali.len());
    }

    #[test]
    fn mali_runs_llama_cpp_tiles_but_no_desktop_tile() {
        let dev = mali();
        let tiled: Vec<_> = catalogue()
            .into_iter()
            .filter(|k| k.family == Family::Tiled)
            .collect();
        assert!(tiled.iter().any(|k| !k.llama_like));
        for k in &tiled {
            let reason = k.unsupported_reason(&dev);
            assert_eq!(reason.is_none(), k.llama_like, "{}: {reason:?}", k.name);
        }
        let mut nvidia = nvidia();
        nvidia.float_atomic_add = true;
        nvidia.max_shared_memory = 48 * 1024;
        nvidia.compute_units = Some(132);
        assert!(tiled
            .iter()
            .all(|k| k.unsupported_reason(&nvidia).is_none()));
    }

    #[test]
    fn split_k_needs_float_atomics() {
        let k = find("tiled-128x64-split2", Precision::Fp32).expect("in the catalogue");
        let mut dev = nvidia();
        assert!(k.unsupported_reason(&dev).unwrap().contains("AtomicAdd"));
        dev.float_atomic_add = true;
        assert_eq!(k.unsupported_reason(&dev), None);
    }

    #[test]
    fn other_gpus_keep_the_larger_register_tiles() {
        let other = nvidia();
        let elsewhere: Vec<_> = runs_on(&other).iter().map(config).collect();
        for c in LAB_SPILLING {
            assert!(elsewhere.contains(&c), "{c:?} dropped for every GPU");
        }
        let skipped = find("reg-8x4", Precision::Fp32)
            .unwrap()
            .unsupported_reason(&mali())
            .unwrap();
        assert!(skipped.contains("34 spills, 78 fills"), "{skipped}");
    }

    #[test]
    fn splitcu_variants_are_offered_only_where_the_compute_units_are_known() {
        let mut dev = nvidia();
        dev.float_atomic_add = true;
        let k = find("tiled-32x128-splitcu", Precision::Fp32).unwrap();
        let why = k.unsupported_reason(&dev).unwrap();
        assert!(why.contains("compute-unit count"), "{why}");
        dev.compute_units = Some(132);
        assert_eq!(k.unsupported_reason(&dev), None);
        // They add partial sums atomically like any split-K kernel.
        dev.float_atomic_add = false;
        assert!(k.unsupported_reason(&dev).unwrap().contains("AtomicAdd"));
        // And Mali keeps its lab rule whatever it reports.
        let mut mali = mali();
        mali.compute_units = Some(4);
        mali.float_atomic_add = true;
        assert!(k
            .unsupported_reason(&mali)
            .unwrap()
            .contains("spills on Mali"));
    }
}
