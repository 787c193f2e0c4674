//! The SPIR-V builds: one static per compiled shader, and which build of gemm_tiled.comp (or
//! gemm_tiled_int8.comp) a tiled kernel runs for its operands and loop form.

use super::Precision;

pub(super) static GEMM_REG_F32: &[u8] = include_bytes!("../shaders/gemm_reg_f32.spv");
pub(super) static GEMM_REG_F16: &[u8] = include_bytes!("../shaders/gemm_reg_f16.spv");
pub(super) static GEMM_TILED_F32: &[u8] = include_bytes!("../shaders/gemm_tiled_f32.spv");
pub(super) static GEMM_TILED_PEELED_F32: &[u8] =
    include_bytes!("../shaders/gemm_tiled_peeled_f32.spv");
pub(super) static GEMM_TILED_SPLITK_F32: &[u8] =
    include_bytes!("../shaders/gemm_tiled_splitk_f32.spv");
pub(super) static GEMM_TILED_F16: &[u8] = include_bytes!("../shaders/gemm_tiled_f16.spv");
pub(super) static GEMM_TILED_PEELED_F16: &[u8] =
    include_bytes!("../shaders/gemm_tiled_peeled_f16.spv");
pub(super) static GEMM_TILED_SPLITK_F16: &[u8] =
    include_bytes!("../shaders/gemm_tiled_splitk_f16.spv");
pub(super) static GEMM_TILED_F16S: &[u8] = include_bytes!("../shaders/gemm_tiled_f16s.spv");
pub(super) static GEMM_TILED_PEELED_F16S: &[u8] =
    include_bytes!("../shaders/gemm_tiled_peeled_f16s.spv");
pub(super) static GEMM_TILED_SPLITK_F16S: &[u8] =
    include_bytes!("../shaders/gemm_tiled_splitk_f16s.spv");
pub(super) static GEMM_TILED_Q4_0: &[u8] = include_bytes!("../shaders/gemm_tiled_q4_0.spv");
pub(super) static GEMM_TILED_PEELED_Q4_0: &[u8] =
    include_bytes!("../shaders/gemm_tiled_peeled_q4_0.spv");
pub(super) static GEMM_TILED_SPLITK_Q4_0: &[u8] =
    include_bytes!("../shaders/gemm_tiled_splitk_q4_0.spv");
pub(super) static GEMM_TILED_INT8: &[u8] = include_bytes!("../shaders/gemm_tiled_int8.spv");
pub(super) static GEMM_TILED_SPLITK_INT8: &[u8] =
    include_bytes!("../shaders/gemm_tiled_splitk_int8.spv");
pub(super) static GEMM_INT8: &[u8] = include_bytes!("../shaders/gemm_int8.spv");
pub(super) static GEMM_Q4_0: &[u8] = include_bytes!("../shaders/gemm_q4_0.spv");
pub static PEAK_F32: &[u8] = include_bytes!("../shaders/peak_f32.spv");
pub static PEAK_F16: &[u8] = include_bytes!("../shaders/peak_f16.spv");
pub static PEAK_INT8: &[u8] = include_bytes!("../shaders/peak_int8.spv");
pub static PROBE_SPILL: &[u8] = include_bytes!("../shaders/probe_spill.spv");

/// The three loop forms of gemm_tiled.comp: the guarded loop, PEEL_LAST_STEP, SPLIT_K over
/// that many workgroups; and SPLIT_K over a number chosen per shape from the device
/// ([`KernelSpec::for_shape`](super::KernelSpec::for_shape) turns it into one of the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TiledLoop {
    Guarded,
    Peeled,
    SplitK(u32),
    SplitPerCu,
}

/// The operand formats gemm_tiled.comp is built for, and int8 (gemm_tiled_int8.comp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TiledOperands {
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
    pub(super) fn of_spirv(spirv: &[u8]) -> Option<TiledOperands> {
        use TiledLoop::{Guarded, Peeled, SplitK};
        TiledOperands::ALL.into_iter().find(|&o| {
            [Guarded, Peeled, SplitK(2)]
                .into_iter()
                .any(|form| tiled_spirv(o, form).is_some_and(|b| std::ptr::eq(b, spirv)))
        })
    }

    pub(super) fn precision(self) -> Precision {
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
pub(super) fn tiled_spirv(operands: TiledOperands, form: TiledLoop) -> Option<&'static [u8]> {
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
