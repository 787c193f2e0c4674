//! The GEMM kernel catalogue: which SPIR-V, which specialisation constants (tile sizes), how the
//! grid is laid out, and what each variant needs from the device.

use std::borrow::Cow;

use serde::Serialize;

use crate::vulkan::DeviceInfo;

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

static GEMM_REG_F32: &[u8] = include_bytes!("../shaders/gemm_reg_f32.spv");
static GEMM_REG_F16: &[u8] = include_bytes!("../shaders/gemm_reg_f16.spv");
static GEMM_TILED_F32: &[u8] = include_bytes!("../shaders/gemm_tiled_f32.spv");
static GEMM_TILED_PEELED_F32: &[u8] = include_bytes!("../shaders/gemm_tiled_peeled_f32.spv");
static GEMM_TILED_SPLITK_F32: &[u8] = include_bytes!("../shaders/gemm_tiled_splitk_f32.spv");
static GEMM_TILED_F16: &[u8] = include_bytes!("../shaders/gemm_tiled_f16.spv");
static GEMM_TILED_PEELED_F16: &[u8] = include_bytes!("../shaders/gemm_tiled_peeled_f16.spv");
static GEMM_TILED_SPLITK_F16: &[u8] = include_bytes!("../shaders/gemm_tiled_splitk_f16.spv");
static GEMM_TILED_F16S: &[u8] = include_bytes!("../shaders/gemm_tiled_f16s.spv");
static GEMM_TILED_PEELED_F16S: &[u8] = include_bytes!("../shaders/gemm_tiled_peeled_f16s.spv");
static GEMM_TILED_SPLITK_F16S: &[u8] = include_bytes!("../shaders/gemm_tiled_splitk_f16s.spv");
static GEMM_TILED_Q4_0: &[u8] = include_bytes!("../shaders/gemm_tiled_q4_0.spv");
static GEMM_TILED_PEELED_Q4_0: &[u8] = include_bytes!("../shaders/gemm_tiled_peeled_q4_0.spv");
static GEMM_TILED_SPLITK_Q4_0: &[u8] = include_bytes!("../shaders/gemm_tiled_splitk_q4_0.spv");
static GEMM_TILED_INT8: &[u8] = include_bytes!("../shaders/gemm_tiled_int8.spv");
static GEMM_TILED_SPLITK_INT8: &[u8] = include_bytes!("../shaders/gemm_tiled_splitk_int8.spv");
static GEMM_INT8: &[u8] = include_bytes!("../shaders/gemm_int8.spv");
static GEMM_Q4_0: &[u8] = include_bytes!("../shaders/gemm_q4_0.spv");
pub static PEAK_F32: &[u8] = include_bytes!("../shaders/peak_f32.spv");
pub static PEAK_F16: &[u8] = include_bytes!("../shaders/peak_f16.spv");
pub static PEAK_INT8: &[u8] = include_bytes!("../shaders/peak_int8.spv");
pub static PROBE_SPILL: &[u8] = include_bytes!("../shaders/probe_spill.spv");

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

/// The three loop forms of gemm_tiled.comp: the guarded loop, PEEL_LAST_STEP, SPLIT_K over
/// that many workgroups; and SPLIT_K over a number chosen per shape from the device
/// ([`KernelSpec::for_shape`] turns it into one of the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TiledLoop {
    Guarded,
    Peeled,
    SplitK(u32),
    SplitPerCu,
}

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

/// The operand formats gemm_tiled.comp is built for, and int8 (gemm_tiled_int8.comp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TiledOperands {
    Fp32,
    /// -DF16: fp16 X and W, widened to fp32 as they are fetched.
    Fp16,
    /// -DF16 -DSHARED_F16: fp16 X and W staged as fp16 in shared memory, widened to fp32 as
    /// the inner loop reads them (the same results as Fp16 in half the shared memory).
    Fp16Shared,
    /// -DQ4_0: fp32 X, q4_0 W dequantised to fp32 as it is fetched.
    Q4_0,
    /// gemm_tiled_int8.comp: Q8_0-style blocks on both sides, integer dots (guarded and
    /// split-K loops only).
    Int8,
}

impl TiledOperands {
    const ALL: [TiledOperands; 5] = [
        TiledOperands::Fp32,
        TiledOperands::Fp16,
        TiledOperands::Fp16Shared,
        TiledOperands::Q4_0,
        TiledOperands::Int8,
    ];

    /// The operand build a tiled kernel's SPIR-V is (fp16 has two, so the precision alone
    /// does not say); None for the register and fixed-grid kernels.
    fn of_spirv(spirv: &[u8]) -> Option<TiledOperands> {
        use TiledLoop::{Guarded, Peeled, SplitK};
        TiledOperands::ALL.into_iter().find(|&o| {
            [Guarded, Peeled, SplitK(2)]
                .into_iter()
                .any(|form| tiled_spirv(o, form).is_some_and(|b| std::ptr::eq(b, spirv)))
        })
    }

    fn precision(self) -> Precision {
        match self {
            TiledOperands::Fp32 => Precision::Fp32,
            TiledOperands::Fp16 | TiledOperands::Fp16Shared => Precision::Fp16,
            TiledOperands::Q4_0 => Precision::Q4_0,
            TiledOperands::Int8 => Precision::Int8,
        }
    }
}

/// The SPIR-V of gemm_tiled.comp (gemm_tiled_int8.comp for int8) for an operand format and
/// loop form (scripts/check-shaders.sh builds one per pair); None for int8's peeled loop, which
/// is not built.
fn tiled_spirv(operands: TiledOperands, form: TiledLoop) -> Option<&'static [u8]> {
    use TiledLoop::{Guarded, Peeled, SplitK, SplitPerCu};
    Some(match (operands, form) {
        (TiledOperands::Fp32, Guarded) => GEMM_TILED_F32,
        (TiledOperands::Fp32, Peeled) => GEMM_TILED_PEELED_F32,
        (TiledOperands::Fp32, SplitK(_) | SplitPerCu) => GEMM_TILED_SPLITK_F32,
        (TiledOperands::Fp16, Guarded) => GEMM_TILED_F16,
        (TiledOperands::Fp16, Peeled) => GEMM_TILED_PEELED_F16,
        (TiledOperands::Fp16, SplitK(_) | SplitPerCu) => GEMM_TILED_SPLITK_F16,
        (TiledOperands::Q4_0, Guarded) => GEMM_TILED_Q4_0,
        (TiledOperands::Q4_0, Peeled) => GEMM_TILED_PEELED_Q4_0,
        (TiledOperands::Q4_0, SplitK(_) | SplitPerCu) => GEMM_TILED_SPLITK_Q4_0,
        (TiledOperands::Fp16Shared, Guarded) => GEMM_TILED_F16S,
        (TiledOperands::Fp16Shared, Peeled) => GEMM_TILED_PEELED_F16S,
        (TiledOperands::Fp16Shared, SplitK(_) | SplitPerCu) => GEMM_TILED_SPLITK_F16S,
        (TiledOperands::Int8, Guarded) => GEMM_TILED_INT8,
        (TiledOperands::Int8, SplitK(_) | SplitPerCu) => GEMM_TILED_SPLITK_INT8,
        (TiledOperands::Int8, Peeled) => return None,
    })
}

/// The int8 shared-memory tiles (gemm_tiled_int8.comp), for devices with integer dot products
/// and fast local memory: one K step per block of 32, the large and medium tiles, a 32-row tile
/// for ubatch 16-64, and those split four and eight ways for the small grids (o and down at
/// ubatch 64). Not llama-like, so never on Mali (the lab rule), and like every int8 kernel only
/// where the device has shaderIntegerDotProduct.
fn int8_tiles() -> Vec<KernelSpec> {
    use TiledLoop::{Guarded, SplitK};
    [
        ("tiled-128x128", [128, 128, 32, 8, 8], Guarded),
        ("tiled-64x128", [64, 128, 32, 8, 8], Guarded),
        ("tiled-64x64", [64, 64, 32, 4, 8], Guarded),
        ("tiled-32x128", [32, 128, 32, 4, 8], Guarded),
        ("tiled-64x128-split4", [64, 128, 32, 8, 8], SplitK(4)),
        ("tiled-32x128-split8", [32, 128, 32, 4, 8], SplitK(8)),
    ]
    .into_iter()
    .map(|(name, dims, form)| KernelSpec::tiled_in(TiledOperands::Int8, name, dims, form))
    .collect()
}

/// The shared-memory tiles built for fp16 and q4_0 (gemm_tiled.comp -DF16 / -DQ4_0), for GPUs
/// with fast local memory: the fp32 family's shapes (guarded, peeled at BK 8, split-K in two),
/// tiles with fewer token rows for ubatch 16-64, where a 128-row tile is mostly padding, and those
/// split four and eight ways: Qwen2.5-3B's o and down have 2048 outputs, 16 workgroups of 128
/// at one token tile, against 132 SMs on an H200.
/// None is llama-like, so Mali never runs them (the lab rule: nothing spilling there).
fn low_precision_tiles(operands: TiledOperands) -> Vec<KernelSpec> {
    use TiledLoop::{Guarded, Peeled, SplitK, SplitPerCu};
    [
        ("tiled-128x128", [128, 128, 16, 8, 8], Guarded),
        ("tiled-64x128", [64, 128, 16, 8, 8], Guarded),
        ("tiled-128x64", [128, 64, 16, 8, 8], Guarded),
        ("tiled-64x64", [64, 64, 16, 4, 8], Guarded),
        ("tiled-32x128", [32, 128, 16, 4, 8], Guarded),
        ("tiled-128x128-k8-peeled", [128, 128, 8, 8, 8], Peeled),
        ("tiled-64x128-k8-peeled", [64, 128, 8, 8, 8], Peeled),
        ("tiled-128x64-split2", [128, 64, 16, 8, 8], SplitK(2)),
        ("tiled-64x128-split2", [64, 128, 16, 8, 8], SplitK(2)),
        ("tiled-64x128-split4", [64, 128, 16, 8, 8], SplitK(4)),
        ("tiled-64x64-split4", [64, 64, 16, 4, 8], SplitK(4)),
        ("tiled-32x128-split4", [32, 128, 16, 4, 8], SplitK(4)),
        ("tiled-32x128-split8", [32, 128, 16, 4, 8], SplitK(8)),
        // 16 rows, 64 invocations: ubatch 16 without half the tile as padding.
        ("tiled-16x128-split4", [16, 128, 16, 4, 8], SplitK(4)),
        ("tiled-16x128-split8", [16, 128, 16, 4, 8], SplitK(8)),
        // Split as many ways as the device's compute units need per shape, as for fp32 (on an
        // H200 the fp32 64x128 tile split 16 ways took down at ubatch 64 from 21.4 to 34.9
        // TFLOP/s over the best fixed split); offered only where the driver gives the count.
        ("tiled-128x64-splitcu", [128, 64, 16, 8, 8], SplitPerCu),
        ("tiled-64x128-splitcu", [64, 128, 16, 8, 8], SplitPerCu),
        ("tiled-64x64-splitcu", [64, 64, 16, 4, 8], SplitPerCu),
        ("tiled-32x128-splitcu", [32, 128, 16, 4, 8], SplitPerCu),
    ]
    .into_iter()
    .map(|(name, dims, form)| KernelSpec::tiled_in(operands, name, dims, form))
    .collect()
}

/// fp16 tiles that keep their operands fp16 in shared memory (gemm_tiled.comp -DF16
/// -DSHARED_F16): half the shared memory of the fp16 tiles above, so twice the workgroups fit
/// an SM, or a K step of 32 in the same bytes. On an H200 llama.cpp's fp16 tiles, which stage
/// fp16, beat rvl's fp32-staged ones at ubatch 64 (qkv 19.5 against 16.0 TFLOP/s) and at 128 on
/// gate (36.5 against 30.3); these are the same shapes staged as llama.cpp does, measured beside
/// them. After the fp16 family, so a budgeted run screens what it did before; never on Mali
/// (not llama-like).
fn fp16_shared_tiles() -> Vec<KernelSpec> {
    use TiledLoop::{Guarded, Peeled, SplitK};
    [
        ("tiled-128x128-smem16", [128, 128, 16, 8, 8], Guarded),
        ("tiled-64x64-smem16", [64, 64, 16, 4, 8], Guarded),
        ("tiled-128x128-k32-smem16", [128, 128, 32, 8, 8], Guarded),
        (
            "tiled-128x128-k8-peeled-smem16",
            [128, 128, 8, 8, 8],
            Peeled,
        ),
        ("tiled-128x64-split2-smem16", [128, 64, 16, 8, 8], SplitK(2)),
        ("tiled-64x128-split4-smem16", [64, 128, 16, 8, 8], SplitK(4)),
        ("tiled-64x64-split4-smem16", [64, 64, 16, 4, 8], SplitK(4)),
        (
            "tiled-64x64-k32-split4-smem16",
            [64, 64, 32, 4, 8],
            SplitK(4),
        ),
        ("tiled-32x128-split8-smem16", [32, 128, 16, 4, 8], SplitK(8)),
    ]
    .into_iter()
    .map(|(name, dims, form)| KernelSpec::tiled_in(TiledOperands::Fp16Shared, name, dims, form))
    .collect()
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

/// llama.cpp's tile for this ubatch: the medium 64x64 tile up to 64 tokens, the large 128x128
/// tile above (ggml_vk_guess_matmul_pipeline; research/perf-anchors.md §3.3).
pub fn llama_tile_for(ubatch: u32) -> &'static str {
    if ubatch <= 64 {
        "llama-64x64"
    } else {
        "llama-128x128"
    }
}

/// Every kernel variant, fastest-first guesses first within a precision. The register kernels
/// come first: they are the fastest guess on Mali and on CPU devices, where a budgeted run may
/// screen no further (fp16 at ubatch 16 on lavapipe: tiled-128x128 0.3 GFLOP/s, reg-4x4
/// 1.4-3.2). `--full` screens every variant wherever it runs.
pub fn catalogue() -> Vec<KernelSpec> {
    let mut all = fp32_kernels();
    all.extend([
        // fp16 data and maths.
        KernelSpec::reg(Precision::Fp16, 16, 4, 4, 4),
        KernelSpec::reg(Precision::Fp16, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Fp16, 8, 8, 4, 8),
    ]);
    all.extend(low_precision_tiles(TiledOperands::Fp16));
    all.extend(fp16_shared_tiles());
    all.extend([
        // int8 dot products: 4-8 accumulators for Mali, 8-16 elsewhere.
        KernelSpec::reg(Precision::Int8, 16, 4, 2, 2),
        KernelSpec::reg(Precision::Int8, 16, 4, 4, 1),
        KernelSpec::reg(Precision::Int8, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Int8, 16, 4, 4, 4),
    ]);
    all.extend(int8_tiles());
    all.extend([
        // 4-bit weights, fp32 activations: 2-4 accumulators for Mali, 8-16 elsewhere.
        KernelSpec::reg(Precision::Q4_0, 16, 4, 2, 2),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 4, 1),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 2, 1),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 4, 4),
    ]);
    all.extend(low_precision_tiles(TiledOperands::Q4_0));
    all
}

fn fp32_kernels() -> Vec<KernelSpec> {
    vec![
        // fp32, Mali-style register blocking (16-wide warps; 8-32 accumulators per invocation).
        // The 8-accumulator tiles are the ones Mali runs besides reg-4x4 (see MALI_SPILLS).
        KernelSpec::reg(Precision::Fp32, 16, 4, 4, 4),
        KernelSpec::reg(Precision::Fp32, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Fp32, 16, 4, 2, 4),
        KernelSpec::reg(Precision::Fp32, 8, 8, 4, 8),
        KernelSpec::reg(Precision::Fp32, 16, 4, 8, 4),
        // fp32, shared-memory tiles for GPUs with fast local memory.
        KernelSpec::tiled("tiled-128x128", 128, 128, 16, 8, 8, false),
        KernelSpec::tiled("tiled-64x128", 64, 128, 16, 8, 8, false),
        KernelSpec::tiled("tiled-128x64", 128, 64, 16, 8, 8, false),
        // 256 invocations at BK 8 in the peeled form: the fastest for gate/up at ubatch 512 on
        // an H200 (38.9 TFLOP/s; the guarded 128x128 tile above gives 27.5).
        KernelSpec::tiled_peeled("tiled-128x128-k8-peeled", [128, 128, 8, 8, 8]),
        KernelSpec::tiled_peeled("tiled-64x128-k8-peeled", [64, 128, 8, 8, 8]),
        // The same tiles with K split in two: twice the workgroups, for grids with about one per
        // SM (down and o at ubatch 512 on a 132-SM H200 have 128; down goes 37.7 -> 41.6 TFLOP/s).
        KernelSpec::tiled_split("tiled-128x64-split2", [128, 64, 16, 8, 8], 2),
        KernelSpec::tiled_split("tiled-64x128-split2", [64, 128, 16, 8, 8], 2),
        // llama.cpp's medium and large tiles: 128 invocations, 32 and 128 accumulators each.
        KernelSpec::tiled("llama-64x64", 64, 64, 16, 4, 8, true),
        KernelSpec::tiled("llama-128x128", 128, 128, 8, 8, 16, true),
        // Small and medium grids (ubatch 16-64, and qkv/o at 512), after the guesses above so a
        // budgeted run that stops early screens what it did before: the fp16/q4_0 families'
        // tiles with fewer token rows, split four and eight ways (o and down at ubatch 64 are
        // 16-32 workgroups of these against 132 SMs on an H200)...
        KernelSpec::tiled_split("tiled-64x64", [64, 64, 16, 4, 8], 1),
        KernelSpec::tiled_split("tiled-32x128", [32, 128, 16, 4, 8], 1),
        KernelSpec::tiled_split("tiled-64x128-split4", [64, 128, 16, 8, 8], 4),
        KernelSpec::tiled_split("tiled-64x64-split4", [64, 64, 16, 4, 8], 4),
        KernelSpec::tiled_split("tiled-32x128-split4", [32, 128, 16, 4, 8], 4),
        KernelSpec::tiled_split("tiled-32x128-split8", [32, 128, 16, 4, 8], 8),
        KernelSpec::tiled_split("tiled-16x128-split4", [16, 128, 16, 4, 8], 4),
        KernelSpec::tiled_split("tiled-16x128-split8", [16, 128, 16, 4, 8], 8),
        // ...and the same tiles split as many ways as this device's compute units need per
        // shape, where the driver says how many it has.
        KernelSpec::tiled_split_per_cu("tiled-128x64-splitcu", [128, 64, 16, 8, 8]),
        KernelSpec::tiled_split_per_cu("tiled-64x128-splitcu", [64, 128, 16, 8, 8]),
        KernelSpec::tiled_split_per_cu("tiled-64x64-splitcu", [64, 64, 16, 4, 8]),
        KernelSpec::tiled_split_per_cu("tiled-32x128-splitcu", [32, 128, 16, 4, 8]),
    ]
}

/// Extra shared-memory tile shapes to try, for tuning on a new GPU without a rebuild:
/// `RVL_BENCH_TILES=BMxBNxBKxTMxTN[xSPLIT][p][,...]` (e.g. `128x128x16x8x8`, `128x64x16x8x8x2`,
/// `128x128x8x8x8p`). Each must keep the tiled kernel's contract (see gemm_tiled.comp);
/// SPLIT > 1 is split-K, a trailing `p` the peeled loop.
pub const TILES_ENV: &str = "RVL_BENCH_TILES";

/// More K slices than this only add atomics: no shape here has so few workgroups.
const MAX_SPLIT_K: u32 = 16;

pub fn parse_tiles(spec: &str) -> Result<Vec<KernelSpec>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let shape_error = || {
            format!(
                "{TILES_ENV}: {item:?} is not BMxBNxBKxTMxTN[xSPLIT][p] (five or six numbers, \
                 p for the peeled loop)"
            )
        };
        let (dims, peeled) = match item.strip_suffix('p') {
            Some(dims) => (dims, true),
            None => (item, false),
        };
        let nums: Vec<u32> = dims
            .split('x')
            .map(|v| v.parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| shape_error())?;
        let (bm, bn, bk, tm, tn, split) = match nums[..] {
            [bm, bn, bk, tm, tn] => (bm, bn, bk, tm, tn, 1),
            [bm, bn, bk, tm, tn, split] => (bm, bn, bk, tm, tn, split),
            _ => return Err(shape_error()),
        };
        if [bm, bn, bk, tm, tn, split].contains(&0) || tm > bm || tn > bn || split > MAX_SPLIT_K {
            return Err(format!(
                "{TILES_ENV}: {item:?}: sizes must be positive, TM <= BM, TN <= BN, SPLIT <= {MAX_SPLIT_K}"
            ));
        }
        if peeled && split > 1 {
            return Err(format!(
                "{TILES_ENV}: {item:?}: the peeled loop has no split-K build; drop the split or the p"
            ));
        }
        let base = format!("tiled-{bm}x{bn}-k{bk}-{tm}x{tn}");
        let dims = [bm, bn, bk, tm, tn];
        let k = if peeled {
            KernelSpec::tiled_peeled(&format!("{base}-peeled"), dims)
        } else if split > 1 {
            KernelSpec::tiled_split(&format!("{base}-split{split}"), dims, split)
        } else {
            KernelSpec::tiled_split(&base, dims, 1)
        };
        if !k.contract_holds() || k.invocations() > 1024 {
            return Err(format!(
                "{TILES_ENV}: {item:?} breaks the tiled kernel's contract: TM, TN, BK multiples of 4, \
                 (BM/TM)*(BN/TN) <= 1024 invocations dividing BM*BK/4 and BN*BK/4"
            ));
        }
        out.push(k);
    }
    Ok(out)
}

/// A kernel outside the GEMM family (peak loop, probe): one spec constant, fixed grid.
pub fn fixed(
    name: &str,
    precision: Precision,
    spirv: &'static [u8],
    spec: Vec<u32>,
    local: u32,
    groups: u32,
) -> KernelSpec {
    KernelSpec {
        name: name.to_string(),
        precision,
        family: Family::Reg,
        spirv,
        spec,
        local: (local, 1),
        tile_m: 1,
        tile_n: 1,
        shared_bytes: 0,
        accumulators: 0,
        llama_like: false,
        fixed_grid: Some((groups, 1)),
        split_k: 1,
        split_from_cus: false,
    }
}

pub fn find(name: &str, precision: Precision) -> Option<KernelSpec> {
    catalogue()
        .into_iter()
        .find(|k| k.name == name && k.precision == precision)
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
    fn llama_pair_matches_ggml_vulkan_register_pressure() {
        let m = find("llama-64x64", Precision::Fp32).unwrap();
        let l = find("llama-128x128", Precision::Fp32).unwrap();
        assert_eq!((m.invocations(), m.accumulators), (128, 32));
        assert_eq!((l.invocations(), l.accumulators), (128, 128));
        assert_eq!(llama_tile_for(64), "llama-64x64");
        assert_eq!(llama_tile_for(65), "llama-128x128");
    }

    #[test]
    fn grid_covers_ragged_shapes() {
        let k = find("reg-4x4", Precision::Fp32).unwrap();
        // 16x4 invocations x 4x4 outputs = 64 outputs x 16 tokens per workgroup.
        assert_eq!(k.grid(17, 65), (2, 2));
        assert_eq!(k.grid(16, 64), (1, 1));
        let t = find("tiled-128x64", Precision::Fp32).unwrap();
        assert_eq!(t.grid(512, 11008), (4, 172));
    }

    #[test]
    fn extra_tiles_parse_and_are_checked() {
        let t = parse_tiles("128x128x16x8x8, 64x64x16x4x4").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].name, "tiled-128x128-k16-8x8");
        assert_eq!(t[0].invocations(), 256);
        assert!(parse_tiles("128x128x16x8")
            .unwrap_err()
            .contains("five or six numbers"));
        assert!(parse_tiles("128x128x6x8x8")
            .unwrap_err()
            .contains("contract"));
        assert!(parse_tiles("4x4x4x8x8").unwrap_err().contains("TM <= BM"));
        // Split-K and the peeled loop: a sixth number, a trailing p; not both.
        let t = parse_tiles("128x64x16x8x8x2,128x128x8x8x8p").unwrap();
        assert_eq!(t[0].name, "tiled-128x64-k16-8x8-split2");
        assert_eq!(t[0].split_k, 2);
        assert!(std::ptr::eq(t[0].spirv, GEMM_TILED_SPLITK_F32));
        assert_eq!(t[1].name, "tiled-128x128-k8-8x8-peeled");
        assert!(std::ptr::eq(t[1].spirv, GEMM_TILED_PEELED_F32));
        assert_eq!(t[1].split_k, 1);
        assert!(parse_tiles("128x64x16x8x8x2p")
            .unwrap_err()
            .contains("no split-K build"));
        assert!(parse_tiles("128x64x16x8x8x0")
            .unwrap_err()
            .contains("SPLIT <="));
        assert!(parse_tiles("128x64x16x8x8x17")
            .unwrap_err()
            .contains("SPLIT <="));
    }

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

    fn mali() -> DeviceInfo {
        let mut dev =
            crate::vulkan::info::tests_support::dev(0, "Mali-G610 MC4", "integrated", "MESA_PANVK");
        dev.fp16 = true;
        dev.int8_dot = true;
        dev.max_shared_memory = 32 * 1024;
        dev.max_workgroup_invocations = 1024;
        dev
    }

    /// The same device data with NVIDIA's ids: not Mali.
    fn nvidia() -> DeviceInfo {
        let mut dev = mali();
        dev.driver_id = "NVIDIA_PROPRIETARY".into();
        dev.vendor_id = 0x10de;
        dev
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
    fn fp16_and_q4_0_get_shared_memory_tiles_on_desktop_gpus_but_never_on_mali() {
        let mut desktop = nvidia();
        desktop.float_atomic_add = true;
        desktop.max_shared_memory = 48 * 1024;
        desktop.compute_units = Some(132);
        for (p, plain, peeled, split) in [
            (
                Precision::Fp16,
                GEMM_TILED_F16,
                GEMM_TILED_PEELED_F16,
                GEMM_TILED_SPLITK_F16,
            ),
            (
                Precision::Q4_0,
                GEMM_TILED_Q4_0,
                GEMM_TILED_PEELED_Q4_0,
                GEMM_TILED_SPLITK_Q4_0,
            ),
        ] {
            let tiles: Vec<_> = catalogue()
                .into_iter()
                .filter(|k| {
                    k.precision == p && k.family == Family::Tiled && !k.name.ends_with("-smem16")
                })
                .collect();
            assert!(tiles.len() >= 3, "{}: {} tiles", p.name(), tiles.len());
            let mut forms = [false; 3];
            for k in &tiles {
                // Each runs its own precision's build of gemm_tiled.comp in the loop form its
                // name says; a wrong build would read the operands in another format.
                let want = if k.split_k > 1 || k.split_from_cus {
                    forms[2] = true;
                    split
                } else if k.name.ends_with("-peeled") {
                    forms[1] = true;
                    peeled
                } else {
                    forms[0] = true;
                    plain
                };
                assert!(std::ptr::eq(k.spirv, want), "{} {}", p.name(), k.name);
                assert!(!k.llama_like, "{} {}", p.name(), k.name);
                assert_eq!(k.unsupported_reason(&desktop), None, "{}", k.name);
                let on_mali = k.unsupported_reason(&mali()).unwrap_or_default();
                assert!(on_mali.contains("spills on Mali"), "{}: {on_mali}", k.name);
            }
            assert_eq!(forms, [true; 3], "{}: guarded, peeled, split-K", p.name());
        }
        // The fp16 tiles that stage fp16 run the SHARED_F16 builds, in half the shared memory.
        let staged: Vec<_> = catalogue()
            .into_iter()
            .filter(|k| k.name.ends_with("-smem16"))
            .collect();
        assert!(staged.len() >= 3, "{} -smem16 tiles", staged.len());
        for k in &staged {
            assert_eq!(k.precision, Precision::Fp16, "{}", k.name);
            let want = if k.split_k > 1 {
                GEMM_TILED_SPLITK_F16S
            } else if k.name.contains("-peeled") {
                GEMM_TILED_PEELED_F16S
            } else {
                GEMM_TILED_F16S
            };
            assert!(std::ptr::eq(k.spirv, want), "{}", k.name);
            let [_, bm, bn, bk, ..] = k.spec[..] else {
                panic!("{}: spec {:?}", k.name, k.spec)
            };
            assert_eq!(k.shared_bytes, 2 * bk * (bm + bn) * 2, "{}", k.name);
            assert_eq!(k.unsupported_reason(&desktop), None, "{}", k.name);
            assert!(k.unsupported_reason(&mali()).is_some(), "{}", k.name);
        }
        // fp16 tiles need the device's fp16 support like the fp16 register kernels.
        let mut no_fp16 = desktop.clone();
        no_fp16.fp16 = false;
        let k = find("tiled-128x128", Precision::Fp16).expect("fp16 tile");
        assert!(k
            .unsupported_reason(&no_fp16)
            .unwrap()
            .contains("shaderFloat16"));
        // A device with less shared memory than a tile stages skips that tile.
        let mut small = desktop;
        small.max_shared_memory = 16 * 1024;
        let k = find("tiled-128x128", Precision::Q4_0).expect("q4_0 tile");
        assert!(k
            .unsupported_reason(&small)
            .unwrap()
            .contains("shared memory"));
    }

    #[test]
    fn int8_gets_integer_dot_tiles_where_the_device_has_int_dot_but_never_on_mali() {
        let mut desktop = nvidia();
        desktop.float_atomic_add = true;
        let tiles: Vec<_> = catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Int8 && k.family == Family::Tiled)
            .collect();
        assert!(tiles.len() >= 4, "{} int8 tiles", tiles.len());
        // A small-grid tile (32 token rows) and a split-K one are among them.
        assert!(tiles.iter().any(|k| k.tile_m <= 32 && k.split_k == 1));
        assert!(tiles.iter().any(|k| k.split_k > 1));
        for k in &tiles {
            let want = if k.split_k > 1 {
                GEMM_TILED_SPLITK_INT8
            } else {
                GEMM_TILED_INT8
            };
            assert!(std::ptr::eq(k.spirv, want), "{}", k.name);
            assert!(!k.llama_like, "{}", k.name);
            // One block of packed int8 and its scale per row, twice: 128x128 stages 18 KiB.
            assert_eq!(k.shared_bytes, 2 * (k.tile_m + k.tile_n) * 36, "{}", k.name);
            assert_eq!(k.unsupported_reason(&desktop), None, "{}", k.name);
            let on_mali = k.unsupported_reason(&mali()).unwrap_or_default();
            assert!(on_mali.contains("spills on Mali"), "{}: {on_mali}", k.name);
        }
        let mut no_dot = desktop;
        no_dot.int8_dot = false;
        let k = find("tiled-64x64", Precision::Int8).expect("an int8 tile");
        assert!(k
            .unsupported_reason(&no_dot)
            .unwrap()
            .contains("shaderIntegerDotProduct"));
        assert_eq!(k.shared_bytes, 2 * 128 * 36);
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

    #[test]
    fn fp32_gets_the_small_grid_tiles_after_its_existing_guesses() {
        let fp32: Vec<String> = catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Fp32)
            .map(|k| k.name)
            .collect();
        let at = |name: &str| {
            fp32.iter()
                .position(|n| n == name)
                .unwrap_or_else(|| panic!("{name}"))
        };
        let last_old = at("llama-128x128");
        for name in [
            "tiled-64x64",
            "tiled-32x128",
            "tiled-64x128-split4",
            "tiled-64x64-split4",
            "tiled-32x128-split4",
            "tiled-32x128-split8",
            "tiled-16x128-split4",
            "tiled-16x128-split8",
            "tiled-128x64-splitcu",
            "tiled-64x128-splitcu",
            "tiled-64x64-splitcu",
            "tiled-32x128-splitcu",
        ] {
            // Screened after the old ones, so a budget that ends early screens what it did.
            assert!(
                at(name) > last_old,
                "{name} screens before the existing fp32 guesses"
            );
        }
    }

    #[test]
    fn precision_names_parse() {
        assert_eq!(Precision::parse("Q4_0"), Ok(Precision::Q4_0));
        assert!(Precision::parse("bf16").unwrap_err().contains("fp32, fp16"));
    }
}
