//! vkpeak-style arithmetic peak: an FMA loop (peak.comp) sized to run long enough to time, so
//! GEMM efficiency is reported against what this driver and clock actually deliver.

use serde::Serialize;

use super::kernels::{self, Precision, PEAK_F16, PEAK_F32};
use super::runner::{median, Bound, Runner};
use super::vk::{Buffer, VkError};

/// FLOP per invocation per loop iteration in peak.comp: 4 unrolled x 8 chains x 4 lanes x 2.
const FLOP_PER_ITER: f64 = 256.0;
const LOCAL: u32 = 256;

#[derive(Debug, Clone, Serialize)]
pub struct Peak {
    pub precision: Precision,
    pub gflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Measure the FMA peak for `precision` (fp32 or fp16), aiming at `target_s` per timed run.
pub fn measure(runner: &mut Runner, precision: Precision, target_s: f64, reps: usize) -> Peak {
    match try_measure(runner, precision, target_s, reps) {
        Ok(g) => Peak {
            precision,
            gflops: Some(g),
            error: None,
        },
        Err(e) => Peak {
            precision,
            gflops: None,
            error: Some(e.to_string()),
        },
    }
}

fn try_measure(
    runner: &mut Runner,
    precision: Precision,
    target_s: f64,
    reps: usize,
) -> Result<f64, VkError> {
    let spirv = if precision == Precision::Fp16 {
        PEAK_F16
    } else {
        PEAK_F32
    };
    // Enough workgroups to fill a big GPU many times over; a CPU device gets fewer.
    let groups: u32 = if runner.gpu.info.is_cpu() { 64 } else { 16384 };
    let spec = kernels::fixed(
        &format!("peak-{}", precision.name()),
        precision,
        spirv,
        vec![LOCAL],
        LOCAL,
        groups,
    );
    let out = Buffer::storage(runner.gpu, u64::from(groups * LOCAL) * 4)?;
    let set = runner.bind(&[&out], 0, 0, 0, 0)?.set;
    // Push constants: iterations, multiplier, addend (float bits), unused.
    let bound = |iters: u32| Bound {
        m: iters,
        n: 0.999f32.to_bits(),
        k: 1e-4f32.to_bits(),
        ldk: 0,
        set,
    };
    // Grow the loop until a run takes a quarter of the target, then scale to the target.
    let mut iters: u32 = 16;
    let result = loop {
        let t = median(&runner.time_single(&spec, &bound(iters), 1)?).unwrap_or(0.0);
        if t >= target_s / 4.0 || iters >= 1 << 22 {
            let scaled = if t > 0.0 {
                ((f64::from(iters) * target_s / t) as u32).clamp(iters, 1 << 24)
            } else {
                iters
            };
            let times = runner.time_single(&spec, &bound(scaled), reps.max(1))?;
            let t = median(&times).unwrap_or(f64::INFINITY);
            let flops = f64::from(groups) * f64::from(LOCAL) * f64::from(scaled) * FLOP_PER_ITER;
            break flops / t / 1e9;
        }
        iters = iters.saturating_mul(4);
    };
    runner.layouts.reset_sets()?;
    Ok(result)
}
