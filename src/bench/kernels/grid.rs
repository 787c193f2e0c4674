//! Dispatch geometry: the grid of workgroups for a shape, and the K split a "-splitcu" variant
//! sizes per shape from the device's compute units.

use std::borrow::Cow;

use super::spirv::{TiledLoop, TiledOperands};
use super::{Family, KernelSpec};

impl KernelSpec {
    /// The kernel to build and dispatch for `m` tokens, `n` outputs and `ldk` (padded) K on a
    /// device with `compute_units`: itself, except that a "-splitcu" variant becomes the split-K
    /// kernel of [`split_for_compute_units`] slices (the guarded loop where that is 1, or where
    /// the count is unknown, which [`KernelSpec::unsupported_reason`] keeps from happening).
    /// The split is spec constant 6, so each distinct split is its own pipeline.
    pub fn for_shape(
        &self,
        m: u32,
        n: u32,
        ldk: u32,
        compute_units: Option<u32>,
    ) -> Cow<'_, KernelSpec> {
        if !self.split_from_cus {
            return Cow::Borrowed(self);
        }
        let (&[_, bm, bn, bk, tm, tn, _], Some(operands)) =
            (&self.spec[..], TiledOperands::of_spirv(self.spirv))
        else {
            return Cow::Borrowed(self);
        };
        let (gx, gy) = self.grid(m, n);
        let steps = ldk.div_ceil(bk);
        let split = compute_units.map_or(1, |cus| split_for_compute_units(gx * gy, steps, cus));
        let form = if split > 1 {
            TiledLoop::SplitK(split)
        } else {
            TiledLoop::Guarded
        };
        Cow::Owned(KernelSpec {
            llama_like: self.llama_like,
            ..Self::tiled_in(operands, &self.name, [bm, bn, bk, tm, tn], form)
        })
    }

    /// Workgroups to dispatch for `m` tokens and `n` outputs.
    pub fn grid(&self, m: u32, n: u32) -> (u32, u32) {
        if let Some(g) = self.fixed_grid {
            return g;
        }
        match self.family {
            // gemm_tiled.comp: x walks the token tiles so workgroups sharing weights run together.
            Family::Tiled => (m.div_ceil(self.tile_m), n.div_ceil(self.tile_n)),
            Family::Reg => (n.div_ceil(self.tile_n), m.div_ceil(self.tile_m)),
        }
    }
}

/// More K slices than this only add atomics: no shape here has so few workgroups.
pub(super) const MAX_SPLIT_K: u32 = 16;

/// K slices for a tiled kernel whose grid has `workgroups` (x times y) and `k_steps` steps of
/// BK: the fewest, as a power of two, that give at least one workgroup per compute unit, so
/// small grids (o and down at ubatch 64: 16-32 workgroups) fill the device. At most
/// [`MAX_SPLIT_K`], since each slice adds an atomic pass over C, and never more slices than K
/// steps, since a slice without a step only adds zeros.
pub fn split_for_compute_units(workgroups: u32, k_steps: u32, compute_units: u32) -> u32 {
    let most = MAX_SPLIT_K.min(k_steps.max(1));
    let mut split = 1;
    while split * 2 <= most && workgroups.max(1) * split < compute_units {
        split *= 2;
    }
    split
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kernels::spirv::{
        GEMM_TILED_F16S, GEMM_TILED_F32, GEMM_TILED_Q4_0, GEMM_TILED_SPLITK_F16S,
        GEMM_TILED_SPLITK_F32, GEMM_TILED_SPLITK_Q4_0,
    };
    use crate::bench::kernels::{find, Precision};

    #[test]
    fn grid_covers_ragged_shapes() {
        let k = find("reg-4x4", Precision::Fp32).unwrap();
        // 16x4 invocations x 4x4 outputs = 64 outputs x 16 tokens per workgroup.
        assert_eq!(k.grid(17, 65), (2, 2));
        assert_eq!(k.grid(16, 64), (1, 1));
        let t = find("tiled-128x64", Precision::Fp32).unwrap();
        assert_eq!(t.grid(512, 11008), (4, 172));
    }

    /// The split a "-splitcu" variant resolves to on one of Qwen2.5-3B's GEMMs.
    fn split_on(kernel: &str, gemm: &str, ubatch: u32, compute_units: u32) -> u32 {
        let layer = crate::bench::model::preset("Qwen2.5-3B").unwrap().layer();
        let g = layer.iter().find(|g| g.name == gemm).unwrap();
        let k = find(kernel, Precision::Fp32).unwrap();
        k.for_shape(ubatch, g.n, g.k, Some(compute_units)).split_k
    }

    #[test]
    fn qwen_3b_o_and_down_split_until_every_one_of_132_compute_units_has_a_workgroup() {
        // o and down have 2048 outputs: 16 tiles of 128 or 32 of 64; ubatch 64 is one 64-row
        // token tile, 512 eight of them (four of 128, sixteen of 32).
        for gemm in ["o", "down"] {
            // 16 workgroups: 8 slices give 128 < 132, so 16.
            assert_eq!(split_on("tiled-64x128-splitcu", gemm, 64, 132), 16);
            // 32 workgroups: 4 give 128, so 8.
            assert_eq!(split_on("tiled-64x64-splitcu", gemm, 64, 132), 8);
            assert_eq!(split_on("tiled-32x128-splitcu", gemm, 64, 132), 8);
            assert_eq!(split_on("tiled-128x64-splitcu", gemm, 64, 132), 8);
            // 128 workgroups at 512: one more slice each.
            assert_eq!(split_on("tiled-64x128-splitcu", gemm, 512, 132), 2);
            assert_eq!(split_on("tiled-128x64-splitcu", gemm, 512, 132), 2);
            // 256 and 512 workgroups already cover 132 units: no split.
            assert_eq!(split_on("tiled-64x64-splitcu", gemm, 512, 132), 1);
            assert_eq!(split_on("tiled-32x128-splitcu", gemm, 512, 132), 1);
        }
    }

    #[test]
    fn qwen_3b_o_and_down_are_not_split_for_16_compute_units() {
        // Their smallest grid here, 16 workgroups, already has one per unit.
        for gemm in ["o", "down"] {
            for ubatch in [64, 512] {
                for kernel in [
                    "tiled-64x128-splitcu",
                    "tiled-64x64-splitcu",
                    "tiled-32x128-splitcu",
                    "tiled-128x64-splitcu",
                ] {
                    assert_eq!(
                        split_on(kernel, gemm, ubatch, 16),
                        1,
                        "{kernel} {gemm} {ubatch}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_split_is_a_power_of_two_of_at_most_16_and_no_more_than_the_k_steps() {
        assert_eq!(split_for_compute_units(1, 1000, 132), 16);
        assert_eq!(split_for_compute_units(3, 1000, 16), 8);
        assert_eq!(split_for_compute_units(200, 1000, 132), 1);
        // Five K steps: four slices at most (the next power of two would leave slices empty).
        assert_eq!(split_for_compute_units(1, 5, 132), 4);
        assert_eq!(split_for_compute_units(1, 1, 132), 1);
        assert_eq!(split_for_compute_units(0, 0, 132), 1);
    }

    #[test]
    fn a_splitcu_variant_is_resolved_to_a_split_k_pipeline_per_shape() {
        let k = find("tiled-64x128-splitcu", Precision::Fp32).unwrap();
        // 2048 outputs at ubatch 64 on 132 units: 16 slices, the split-K build, constant 6.
        let r = k.for_shape(64, 2048, 2048, Some(132));
        assert_eq!((r.split_k, r.spec[6]), (16, 16));
        assert!(std::ptr::eq(r.spirv, GEMM_TILED_SPLITK_F32));
        assert!(!r.split_from_cus);
        assert_eq!(
            (r.name.as_str(), r.tile_m, r.tile_n),
            (k.name.as_str(), 64, 128)
        );
        assert!(r.contract_holds());
        // No split needed: the guarded build, which writes C without atomics or a clear.
        let r = k.for_shape(512, 11008, 2048, Some(132));
        assert_eq!((r.split_k, r.spec[6]), (1, 1));
        assert!(std::ptr::eq(r.spirv, GEMM_TILED_F32));
        // K = 32 is two steps of 16: two slices however few the workgroups.
        assert_eq!(k.for_shape(1, 128, 32, Some(132)).split_k, 2);
        // Each operand build resolves to its own split and guarded builds, fp16's two included
        // (same precision, other SPIR-V).
        for (k, split, guarded) in [
            (
                find("tiled-64x128-splitcu", Precision::Q4_0).unwrap(),
                GEMM_TILED_SPLITK_Q4_0,
                GEMM_TILED_Q4_0,
            ),
            (
                KernelSpec::tiled_in(
                    TiledOperands::Fp16Shared,
                    "t",
                    [64, 128, 16, 8, 8],
                    TiledLoop::SplitPerCu,
                ),
                GEMM_TILED_SPLITK_F16S,
                GEMM_TILED_F16S,
            ),
        ] {
            let r = k.for_shape(64, 2048, 2048, Some(132));
            assert!(std::ptr::eq(r.spirv, split), "{}", k.name);
            assert_eq!(r.shared_bytes, k.shared_bytes, "{}", k.name);
            let r = k.for_shape(512, 11008, 2048, Some(132));
            assert!(std::ptr::eq(r.spirv, guarded), "{}", k.name);
        }
        // Fixed kernels pass through unchanged.
        let fixed = find("tiled-64x128-split4", Precision::Fp32).unwrap();
        assert!(matches!(
            fixed.for_shape(64, 2048, 2048, Some(132)),
            Cow::Borrowed(_)
        ));
    }
}
