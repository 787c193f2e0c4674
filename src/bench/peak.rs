//! vkpeak-style arithmetic peak: an FMA loop (peak.comp) sized to run long enough to time, so
//! GEMM efficiency is reported against what this driver and clock actually deliver.

use serde::Serialize;

use super::kernels::{self, Precision, PEAK_F16, PEAK_F32, PEAK_INT8};
use super::runner::{median, Bound, Runner};
use super::throughput::{self, Prediction};
use crate::vulkan::{Buffer, VkError};

/// Operations per invocation per loop iteration: peak.comp 4 unrolled x 8 chains x 4 lanes x
/// 2 FLOP; peak_int8.comp 4 x 8 x 4 dot products x 8 ops (4 MACs).
fn ops_per_iter(precision: Precision) -> f64 {
    match precision {
        Precision::Int8 => 1024.0,
        _ => 256.0,
    }
}
const LOCAL: u32 = 256;

#[derive(Debug, Clone, Serialize)]
pub struct Peak {
    pub precision: Precision,
    pub gflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rate the compiled loop allows (throughput.rs), where the driver gives unit cycles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Prediction>,
}

/// Measure the arithmetic peak for `precision` (fp32 or fp16 FMA, int8 dot products; GFLOP/s or
/// GOP/s), aiming at `target_s` per timed run.
pub fn measure(runner: &mut Runner, precision: Precision, target_s: f64, reps: usize) -> Peak {
    let predicted = predict(runner, precision);
    match try_measure(runner, precision, target_s, reps) {
        Ok(g) => Peak {
            precision,
            gflops: Some(g),
            error: None,
            predicted,
        },
        Err(e) => Peak {
            precision,
            gflops: None,
            error: Some(e.to_string()),
            predicted,
        },
    }
}

/// The peak loop's predicted rate from its pipeline statistics, if the driver gives them.
fn predict(runner: &mut Runner, precision: Precision) -> Option<Prediction> {
    let spec = peak_spec(precision, runner.gpu.info.is_cpu());
    let gpu = runner.gpu;
    let stats = runner.pipeline(&spec).ok()?.statistics(gpu);
    throughput::for_kernel(
        &gpu.info,
        precision.name(),
        &spec.name,
        &stats,
        Some(ops_per_iter(precision)),
    )
}

/// The peak kernel for `precision`: LOCAL invocations per workgroup, enough workgroups to
/// fill a big GPU many times over (a CPU device gets fewer).
fn peak_spec(precision: Precision, cpu: bool) -> kernels::KernelSpec {
    let spirv = match precision {
        Precision::Fp16 => PEAK_F16,
        Precision::Int8 => PEAK_INT8,
        _ => PEAK_F32,
    };
    let groups: u32 = if cpu { 64 } else { 16384 };
    kernels::fixed(
        &format!("peak-{}", precision.name()),
        precision,
        spirv,
        vec![LOCAL],
        LOCAL,
        groups,
    )
}

fn try_measure(
    runner: &mut Runner,
    precision: Precision,
    target_s: f64,
    reps: usize,
) -> Result<f64, VkError> {
    let spec = peak_spec(precision, runner.gpu.info.is_cpu());
    let groups = spec.fixed_grid.map_or(1, |g| g.0);
    let out = Buffer::storage(runner.gpu, u64::from(groups * LOCAL) * 4)?;
    let set = runner.bind(&[&out], 0, 0, 0, 0)?.set;
    // Push constants: iterations, then the operands (float bits for FMA, packed int8 for dots).
    let (a, b) = match precision {
        Precision::Int8 => (0x0102_0304, 0x01ff_02fe),
        _ => (0.999f32.to_bits(), 1e-4f32.to_bits()),
    };
    let bound = |iters: u32| Bound {
        m: iters,
        n: a,
        k: b,
        ldk: 0,
        set,
        out: None,
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
            let flops =
                f64::from(groups) * f64::from(LOCAL) * f64::from(scaled) * ops_per_iter(precision);
            break flops / t / 1e9;
        }
        iters = iters.saturating_mul(4);
    };
    runner.layouts.reset_sets()?;
    Ok(result)
}
