//! vkpeak-style arithmetic peak: an FMA loop (peak.comp) sized to run long enough to time, so
//! GEMM efficiency is reported against what this driver and clock actually deliver.

use serde::Serialize;

use super::kernels::{self, Precision, PEAK_F16, PEAK_F32, PEAK_INT8};
use super::runner::{median, Bound, Runner};
use super::tasksplit::{self, Split};
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
/// Invocations per workgroup of the peak loops.
pub const LOCAL: u32 = 256;
/// vkpeak's workgroup on a subgroup-16 device: the one Mesa up to 25.3 put in a single task.
pub const NARROW: u32 = 16;
/// Invocations of every peak dispatch (16384 workgroups of 256); the narrow variant keeps the
/// grid within panvk's maxComputeWorkGroupCount (65535) with 32768 workgroups of 16.
const INVOCATIONS: u32 = 16384 * LOCAL;
const NARROW_GROUPS: u32 = 32768;

#[derive(Debug, Clone, Serialize)]
pub struct Peak {
    pub precision: Precision,
    /// Invocations per workgroup: 256 for the peaks efficiencies are measured against, 16 for
    /// the vkpeak-shaped fp32 run that shows whether narrow workgroups reach every core.
    pub workgroup_size: u32,
    pub workgroups: u32,
    pub gflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rate the compiled loop allows (throughput.rs), where the driver gives unit cycles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Prediction>,
    /// `gflops` over the predicted loop rate (the lab's loop figure where it applies, else the
    /// floor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_over_predicted: Option<f64>,
    /// How panvk splits this dispatch into tasks (panvk only; tasksplit.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_split: Option<Split>,
    /// The GPU's devfreq cur_freq (Hz) right before and right after the timed runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cur_freq_before_hz: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cur_freq_after_hz: Option<u64>,
}

impl Peak {
    /// The vkpeak-shaped run, not a peak to measure GEMMs against.
    pub fn is_narrow(&self) -> bool {
        self.workgroup_size != LOCAL
    }
}

/// Measure the arithmetic peak for `precision` (fp32 or fp16 FMA, int8 dot products; GFLOP/s or
/// GOP/s) with `local` invocations per workgroup, aiming at `target_s` per timed run.
/// `cur_freq` reads the GPU clock (devfreq) around the timed runs.
pub fn measure(
    runner: &mut Runner,
    precision: Precision,
    local: u32,
    target_s: f64,
    reps: usize,
    cur_freq: &dyn Fn() -> Option<u64>,
) -> Peak {
    let spec = peak_spec(precision, runner.gpu.info.is_cpu(), local);
    let groups = spec.fixed_grid.map_or(1, |g| g.0);
    let (predicted, registers) = predict(runner, &spec);
    let task_split = tasksplit::Limits::for_device(&runner.gpu.info).and_then(|l| {
        tasksplit::split(
            tasksplit::Rule::for_device(&runner.gpu.info),
            &l,
            [local, 1, 1],
            [groups, 1, 1],
            registers.unwrap_or(64),
        )
    });
    let mut peak = Peak {
        precision,
        workgroup_size: local,
        workgroups: groups,
        gflops: None,
        error: None,
        predicted,
        measured_over_predicted: None,
        task_split,
        cur_freq_before_hz: None,
        cur_freq_after_hz: None,
    };
    match try_measure(runner, &spec, target_s, reps, cur_freq) {
        Ok((g, before, after)) => {
            peak.gflops = Some(g);
            peak.cur_freq_before_hz = before;
            peak.cur_freq_after_hz = after;
            peak.measured_over_predicted = peak
                .predicted
                .as_ref()
                .map(|p| p.loop_gflops.unwrap_or(p.gflops))
                .filter(|p| *p > 0.0)
                .map(|p| g / p);
        }
        Err(e) => peak.error = Some(e.to_string()),
    }
    peak
}

/// The peak loop's predicted rate from its pipeline statistics, if the driver gives them, and
/// the registers it uses (for the task split's thread capacity).
fn predict(runner: &mut Runner, spec: &kernels::KernelSpec) -> (Option<Prediction>, Option<u32>) {
    let gpu = runner.gpu;
    let Ok(pipeline) = runner.pipeline(spec) else {
        return (None, None);
    };
    let stats = pipeline.statistics(gpu);
    let registers = stats
        .iter()
        .find(|s| s.name == "Registers used")
        .map(|s| s.value as u32);
    // The lab counted the 256-invocation loops; the narrow run compiles to the same loop, but
    // its name keeps the lab's figure only for the kernel it counted.
    let prediction = throughput::for_kernel(
        &gpu.info,
        spec.precision.name(),
        &format!("peak-{}", spec.precision.name()),
        &stats,
        Some(ops_per_iter(spec.precision)),
    );
    (prediction, registers)
}

/// The peak kernel for `precision`: `local` invocations per workgroup, enough workgroups to
/// fill a big GPU many times over (a CPU device gets fewer).
fn peak_spec(precision: Precision, cpu: bool, local: u32) -> kernels::KernelSpec {
    let spirv = match precision {
        Precision::Fp16 => PEAK_F16,
        Precision::Int8 => PEAK_INT8,
        _ => PEAK_F32,
    };
    let groups: u32 = match (cpu, local) {
        (true, _) => 64,
        (false, LOCAL) => INVOCATIONS / LOCAL,
        (false, _) => NARROW_GROUPS,
    };
    let name = if local == LOCAL {
        format!("peak-{}", precision.name())
    } else {
        format!("peak-{}-wg{local}", precision.name())
    };
    kernels::fixed(&name, precision, spirv, vec![local], local, groups)
}

/// The rate, and cur_freq read before and after the timed runs.
fn try_measure(
    runner: &mut Runner,
    spec: &kernels::KernelSpec,
    target_s: f64,
    reps: usize,
    cur_freq: &dyn Fn() -> Option<u64>,
) -> Result<(f64, Option<u64>, Option<u64>), VkError> {
    let precision = spec.precision;
    let local = spec.local.0;
    let groups = spec.fixed_grid.map_or(1, |g| g.0);
    let out = Buffer::storage(runner.gpu, u64::from(groups * local) * 4)?;
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
        let t = median(&runner.time_single(spec, &bound(iters), 1)?).unwrap_or(0.0);
        if t >= target_s / 4.0 || iters >= 1 << 22 {
            let scaled = if t > 0.0 {
                ((f64::from(iters) * target_s / t) as u32).clamp(iters, 1 << 24)
            } else {
                iters
            };
            let before = cur_freq();
            let times = runner.time_single(spec, &bound(scaled), reps.max(1))?;
            let after = cur_freq();
            let t = median(&times).unwrap_or(f64::INFINITY);
            let flops =
                f64::from(groups) * f64::from(local) * f64::from(scaled) * ops_per_iter(precision);
            break (flops / t / 1e9, before, after);
        }
        iters = iters.saturating_mul(4);
    };
    runner.layouts.reset_sets()?;
    Ok(result)
}
