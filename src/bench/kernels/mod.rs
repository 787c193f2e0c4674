//! The GEMM kernel catalogue: which SPIR-V, which specialisation constants (tile sizes), how the
//! grid is laid out, and what each variant needs from the device.
//!
//! Its parts: the SPIR-V builds (`spirv`), the variants in screening order (`catalogue`), the
//! dispatch grid and per-shape K split (`grid`), what a device can run (`support`), and extra
//! tiles from the environment with the look-ups by name (`parse`).

use serde::Serialize;

use crate::vulkan::DeviceInfo;

mod catalogue;
mod grid;
mod parse;
mod spirv;
mod support;

pub use catalogue::{catalogue, llama_tile_for};
pub use grid::split_for_compute_units;
pub use parse::{find, fixed, parse_tiles, TILES_ENV};
pub use spirv::{PEAK_F16, PEAK_F32, PEAK_INT8, PROBE_SPILL};
pub use support::{is_mali, MALI_SPILLS};

use spirv::{
    tiled_spirv, TiledLoop, TiledOperands, GEMM_INT8, GEMM_Q4_0, GEMM_REG_F16, GEMM_REG_F32,
};

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Fp32,
    Fp16,
    Int8,
    Q4_0,
}

impl Precision {
    pub const ALL: [Precision; 4] = [
        Precision::Fp32,
        Precision::Fp16,
        Precision::Int8,
        Precision::Q4_0,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
            Precision::Q4_0 => "q4_0",
        }
    }

    pub fn parse(s: &str) -> Result<Precision, String> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown precision {s:?}; known: fp32, fp16, int8, q4_0"))
    }

    /// Largest accepted error, relative to sum_k |x_k * w_k| of the checked entry (the scale of
    /// rounding error in a dot product). The reference uses the same rounded/quantised inputs,
    /// so only the kernel's arithmetic is judged: fp32 accumulation, fp16 maths in short chunks.
    pub fn tolerance(self) -> f64 {
        match self {
            Precision::Fp32 | Precision::Int8 | Precision::Q4_0 => 1e-5,
            Precision::Fp16 => 5e-3,
        }
    }

    /// K must be a multiple of this (quantised blocks of 32 values).
    pub fn k_block(self) -> u32 {
        match self {
            Precision::Fp32 | Precision::Fp16 => 1,
            Precision::Int8 | Precision::Q4_0 => 32,
        }
    }

    /// Why this precision cannot run on the device, if it cannot.
    pub fn unsupported_reason(self, dev: &DeviceInfo) -> Option<String> {
        match self {
            Precision::Fp16 if !dev.fp16 => {
                Some("device lacks shaderFloat16 + storageBuffer16BitAccess".into())
            }
            Precision::Int8 if !dev.int8_dot => Some("device lacks shaderIntegerDotProduct".into()),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Register-blocked, no shared memory (Mali Valhall style).
    Reg,
    /// Shared-memory tiles shaped like llama.cpp's mul_mm, with register micro-tiles.
    Tiled,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KernelSpec {
    pub name: String,
    pub precision: Precision,
    pub family: Family,
    #[serde(skip)]
    pub spirv: &'static [u8],
    /// Specialisation constants, id 0.. in order.
    pub spec: Vec<u32>,
    /// Workgroup size (x, y).
    pub local: (u32, u32),
    /// Tokens and output features covered by one workgroup.
    pub tile_m: u32,
    pub tile_n: u32,
    pub shared_bytes: u32,
    /// Accumulators each invocation keeps in registers.
    pub accumulators: u32,
    /// True for the llama.cpp-shaped tile pair.
    pub llama_like: bool,
    /// A grid that does not depend on the shape (the peak and probe kernels).
    #[serde(skip)]
    pub fixed_grid: Option<(u32, u32)>,
    /// Workgroups along K (grid z): above 1 each adds its slice's partial sums into C
    /// atomically, and the runner clears C before every dispatch.
    pub split_k: u32,
    /// A "-splitcu" variant: its split-K is not fixed but sized per shape from the device's
    /// compute units ([`KernelSpec::for_shape`], which the runner calls before it builds a
    /// pipeline or dispatches); until then `split_k` is 1.
    pub split_from_cus: bool,
}

impl KernelSpec {
    /// A register-blocked kernel: workgroup `wx x wy` invocations, each `tm x tn` outputs.
    fn reg(precision: Precision, wx: u32, wy: u32, tm: u32, tn: u32) -> KernelSpec {
        let (spirv, mut spec) = match precision {
            Precision::Fp32 => (GEMM_REG_F32, vec![wx, wy, tm, tn]),
            Precision::Fp16 => (GEMM_REG_F16, vec![wx, wy, tm, tn]),
            Precision::Int8 => (GEMM_INT8, vec![wx, wy, tm, tn]),
            Precision::Q4_0 => (GEMM_Q4_0, vec![wx, wy, tm, tn]),
        };
        if precision == Precision::Fp16 {
            spec.push(8); // KCHUNK: 32 values summed in fp16 before the fp32 add
        }
        KernelSpec {
            name: format!("reg-{tm}x{tn}"),
            precision,
            family: Family::Reg,
            spirv,
            spec,
            local: (wx, wy),
            tile_m: wy * tm,
            tile_n: wx * tn,
            shared_bytes: 0,
            accumulators: tm * tn,
            llama_like: false,
            fixed_grid: None,
            split_k: 1,
            split_from_cus: false,
        }
    }

    /// A shared-memory tiled fp32 kernel: `bm x bn` tile, `bk` K step, `tm x tn` per invocation.
    fn tiled(
        name: &str,
        bm: u32,
        bn: u32,
        bk: u32,
        tm: u32,
        tn: u32,
        llama_like: bool,
    ) -> KernelSpec {
        KernelSpec {
            llama_like,
            ..Self::tiled_in(
                TiledOperands::Fp32,
                name,
                [bm, bn, bk, tm, tn],
                TiledLoop::Guarded,
            )
        }
    }

    /// The fp32 tiled kernel built with its last K step peeled off the loop (gemm_tiled.comp,
    /// PEEL_LAST_STEP): fewer registers, more workgroups per SM on NVIDIA.
    fn tiled_peeled(name: &str, dims: [u32; 5]) -> KernelSpec {
        Self::tiled_in(TiledOperands::Fp32, name, dims, TiledLoop::Peeled)
    }

    /// The fp32 tiled kernel with its K steps shared out over `split_k` workgroups (see
    /// gemm_tiled.comp, SPLIT_K); `split_k == 1` is the plain kernel.
    fn tiled_split(name: &str, dims: [u32; 5], split_k: u32) -> KernelSpec {
        let form = if split_k > 1 {
            TiledLoop::SplitK(split_k)
        } else {
            TiledLoop::Guarded
        };
        Self::tiled_in(TiledOperands::Fp32, name, dims, form)
    }

    /// A shared-memory tiled kernel on `operands` (the fp32, fp16 or q4_0 build of
    /// gemm_tiled.comp, or gemm_tiled_int8.comp, whose BK is one block of 32):
    /// `[bm, bn, bk, tm, tn]`, in one of its loop forms. Not llama-like, so not on Mali unless
    /// the caller says so.
    fn tiled_in(
        operands: TiledOperands,
        name: &str,
        [bm, bn, bk, tm, tn]: [u32; 5],
        form: TiledLoop,
    ) -> KernelSpec {
        let threads = (bm / tm) * (bn / tn);
        let split_k = match form {
            TiledLoop::SplitK(s) => s,
            TiledLoop::Guarded | TiledLoop::Peeled | TiledLoop::SplitPerCu => 1,
        };
        KernelSpec {
            name: name.to_string(),
            precision: operands.precision(),
            family: Family::Tiled,
            spirv: tiled_spirv(operands, form)
                .unwrap_or_else(|| panic!("{name}: gemm_tiled has no {operands:?} {form:?} build")),
            spec: vec![threads, bm, bn, bk, tm, tn, split_k],
            local: (threads, 1),
            tile_m: bm,
            tile_n: bn,
            shared_bytes: match operands {
                // Two buffers of one block per row: 8 uints of packed int8 and a scale.
                TiledOperands::Int8 => 2 * (bm + bn) * (8 * 4 + 4),
                TiledOperands::Fp16Shared => 2 * bk * (bm + bn) * 2,
                // The other float builds stage fp32 (fp16 and q4_0 widen as they fetch).
                TiledOperands::Fp32 | TiledOperands::Fp16 | TiledOperands::Q4_0 => {
                    2 * bk * (bm + bn) * 4
                }
            },
            accumulators: tm * tn,
            llama_like: false,
            fixed_grid: None,
            split_k,
            split_from_cus: form == TiledLoop::SplitPerCu,
        }
    }

    /// The fp32 tiled kernel whose K split is sized per shape from the device's compute units
    /// (see [`KernelSpec::for_shape`]).
    fn tiled_split_per_cu(name: &str, dims: [u32; 5]) -> KernelSpec {
        Self::tiled_in(TiledOperands::Fp32, name, dims, TiledLoop::SplitPerCu)
    }

    /// FLOPs (ops for int8) one invocation does per iteration of its main loop, for the
    /// throughput model (throughput.rs): the register kernels step K by a vec4 (fp32/fp16:
    /// TM x TN dot products of 4 = 8 x TM x TN FLOP) or by a block of 32 (int8, q4_0:
    /// 64 x TM x TN). None for the tiled kernels (their inner K loop may or may not be unrolled,
    /// so the static code's iteration is not known here) and the fixed-grid kernels (peak.rs
    /// counts its own).
    pub fn flops_per_iteration(&self) -> Option<f64> {
        if self.family != Family::Reg || self.fixed_grid.is_some() {
            return None;
        }
        let per_output = match self.precision {
            Precision::Fp32 | Precision::Fp16 => 8.0,
            Precision::Int8 | Precision::Q4_0 => 64.0,
        };
        Some(per_output * f64::from(self.spec[2]) * f64::from(self.spec[3]))
    }

    pub fn invocations(&self) -> u32 {
        self.local.0 * self.local.1
    }

    /// The tiled kernel's host contract (see gemm_tiled.comp and gemm_tiled_int8.comp); always
    /// true for the catalogue.
    pub fn contract_holds(&self) -> bool {
        match self.family {
            Family::Reg => true,
            Family::Tiled if self.precision == Precision::Int8 => {
                // Loads are guarded per row, so only the micro-tile shape and the block matter.
                let [threads, bm, bn, bk, tm, tn, split] = self.spec[..] else {
                    return false;
                };
                threads == (bm / tm) * (bn / tn)
                    && split >= 1
                    && bk == 32
                    && tm % 4 == 0
                    && tn % 4 == 0
                    && bm % tm == 0
                    && bn % tn == 0
            }
            Family::Tiled => {
                let [threads, bm, bn, bk, tm, tn, split] = self.spec[..] else {
                    return false;
                };
                threads == (bm / tm) * (bn / tn)
                    && split >= 1
                    && tm % 4 == 0
                    && tn % 4 == 0
                    && bk % 4 == 0
                    && bm % tm == 0
                    && bn % tn == 0
                    && (bm * bk / 4) % threads == 0
                    && (bn * bk / 4) % threads == 0
            }
        }
    }
}

/// Devices the tests of every part judge kernels against.
#[cfg(test)]
mod tests_support {
    use super::*;

    pub fn mali() -> DeviceInfo {
        let mut dev =
            crate::vulkan::info::tests_support::dev(0, "Mali-G610 MC4", "integrated", "MESA_PANVK");
        dev.fp16 = true;
        dev.int8_dot = true;
        dev.max_shared_memory = 32 * 1024;
        dev.max_workgroup_invocations = 1024;
        dev
    }

    /// The same device data with NVIDIA's ids: not Mali.
    pub fn nvidia() -> DeviceInfo {
        let mut dev = mali();
        dev.driver_id = "NVIDIA_PROPRIETARY".into();
        dev.vendor_id = 0x10de;
        dev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throughput_model_knows_each_register_kernels_work_per_loop_iteration() {
        let flops = |name: &str, p: Precision| find(name, p).unwrap().flops_per_iteration();
        // fp32/fp16: TM x TN vec4 dot products per K step; int8/q4_0: a block of 32 per step.
        assert_eq!(flops("reg-4x4", Precision::Fp32), Some(128.0));
        assert_eq!(flops("reg-4x2", Precision::Fp16), Some(64.0));
        assert_eq!(flops("reg-2x2", Precision::Int8), Some(256.0));
        assert_eq!(flops("reg-4x1", Precision::Q4_0), Some(256.0));
        assert_eq!(flops("tiled-128x128", Precision::Fp32), None);
        let peak = fixed("peak-fp32", Precision::Fp32, PEAK_F32, vec![256], 256, 16);
        assert_eq!(peak.flops_per_iteration(), None);
    }

    #[test]
    fn every_variant_keeps_its_host_contract() {
        for k in catalogue() {
            assert!(k.contract_holds(), "{}", k.name);
            assert!(k.invocations() <= 256, "{}", k.name);
            assert!(
                k.shared_bytes <= 32 * 1024,
                "{} does not fit Mali/lavapipe",
                k.name
            );
        }
    }

    #[test]
    fn precision_names_parse() {
        assert_eq!(Precision::parse("Q4_0"), Ok(Precision::Q4_0));
        assert!(Precision::parse("bf16").unwrap_err().contains("fp32, fp16"));
    }
}
