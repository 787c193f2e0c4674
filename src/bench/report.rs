//! The result of a run, as printed (`render`) and as `--json` / `--save` write it (inside the
//! envelope, which carries `schema_version`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::cpu::CpuLayer;
use super::devfreq::Devfreq;
use super::kernels::Precision;
use super::llamacpp::{LlamaCpp, LlamaLayer};
use super::model::Model;
use super::peak::Peak;
use super::plan::Size;
use super::spill::KernelDiagnostics;
use crate::vulkan::{DeviceInfo, VkError};

pub const PROMPT_TOKENS: u32 = 5000;
pub const SCOPE_NOTE: &str = "predictions cover the linear layers (GEMMs) only: attention, \
     norms, RoPE, activations and the LM head are not included";

/// `--max-clock`'s record: the change it made (and undid) and the clock around each part.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ClockPinReport {
    pub change: crate::clockpin::Change,
    /// ("before fp32 peak", "1000 MHz (governor performance)"), in order.
    pub samples: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: String,
    pub device: DeviceInfo,
    pub devices: Vec<DeviceInfo>,
    pub model: ModelInfo,
    pub size: Size,
    pub gpu_clock: Option<Devfreq>,
    /// `--max-clock`: what was changed, and the clock read before and after each part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_pin: Option<ClockPinReport>,
    pub peak: Vec<Peak>,
    pub kernels: Vec<KernelDiagnostics>,
    pub ubatches: Vec<UbatchResult>,
    /// matrixmultiply's threads, when it was the CPU baseline of some ubatch.
    pub cpu_threads: Option<usize>,
    /// What the CPU t/s and GPU/CPU figures compare with.
    pub cpu_baseline: CpuBaseline,
    /// llama.cpp's own matrix products at the same shapes, on its CPU backend and on this
    /// device (test-backend-ops), or why there are none.
    pub llama_cpp: LlamaCpp,
    pub notes: Vec<String>,
    /// True when any kernel gave a wrong result or any step failed.
    pub problems: bool,
}

/// Where a CPU figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineSource {
    /// llama.cpp's CPU backend (test-backend-ops perf): quantised weights, the CPU's dot
    /// products, repacked where llama.cpp repacks them; the fastest weight type per ubatch.
    LlamaCpp,
    /// matrixmultiply's fp32 sgemm: not what llama.cpp runs on the CPU.
    Matrixmultiply,
}

/// The run's CPU baseline: `llama_cpp`, `matrixmultiply`, `mixed` (llama.cpp's where it
/// measured the whole layer, matrixmultiply's elsewhere) or `none` (`--no-cpu`), and a sentence.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuBaseline {
    pub source: String,
    pub what: String,
}

/// One ubatch's CPU figure.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    pub source: BaselineSource,
    /// The weight type of the fastest llama.cpp CPU layer (`q4_0`), None for matrixmultiply.
    pub ggml_type: Option<String>,
    pub predicted_tokens_per_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    #[serde(flatten)]
    pub model: Model,
    pub gflop_per_token: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// Ran, but the result was outside the tolerance.
    Wrong,
    /// A Vulkan call failed.
    Error,
    Skipped,
}

/// One kernel on one GEMM shape, run alone: checked against the CPU reference and timed.
#[derive(Debug, Clone, Serialize)]
pub struct Screen {
    pub precision: Precision,
    pub kernel: String,
    pub gemm: String,
    pub shape: String,
    /// Output features actually computed (fewer than the shape's N on sliced CPU-device runs).
    pub outputs: u32,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<VkError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Median seconds for the outputs computed.
    pub seconds: Option<f64>,
    pub gflops: Option<f64>,
    /// GEMM GFLOP/s over the measured peak of the arithmetic it uses.
    pub efficiency: Option<f64>,
    pub max_error: Option<f64>,
    pub tolerance: f64,
    /// The K split a "-splitcu" kernel resolved to on this shape (from the device's compute
    /// units); absent for every other kernel, whose split is in its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_k: Option<u32>,
}

impl Screen {
    /// The kernel as the human output names it: with the split a "-splitcu" kernel ran with.
    pub fn kernel_label(&self) -> String {
        match self.split_k {
            Some(split) => format!("{} ({split})", self.kernel),
            None => self.kernel.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GemmTime {
    pub gemm: String,
    pub shape: String,
    pub kernel: String,
    pub seconds: f64,
    pub gflops: f64,
}

/// The layer stack recorded and submitted like llama.cpp does.
#[derive(Debug, Clone, Serialize)]
pub struct Stack {
    pub precision: Precision,
    /// `best` (fastest correct kernel per shape) or `llama.cpp tiles`.
    pub label: String,
    pub kernels: BTreeMap<String, String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<VkError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub layers_recorded: u32,
    pub layers_model: u32,
    /// True when fewer layers were recorded than the model has and the time was scaled up.
    pub extrapolated: bool,
    /// True when each GEMM computed only part of its outputs (CPU devices) and was scaled up.
    pub sliced: bool,
    pub dispatches: usize,
    pub command_buffers: usize,
    /// `timestamps` or `wall-clock`.
    pub timing: String,
    pub seconds_per_layer: Option<f64>,
    pub gflops: Option<f64>,
    pub per_gemm: Vec<GemmTime>,
    pub predicted_tokens_per_s: Option<f64>,
    pub prompt_5000_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CpuResult {
    #[serde(flatten)]
    pub layer: CpuLayer,
    pub predicted_tokens_per_s: f64,
    pub prompt_5000_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct UbatchResult {
    pub ubatch: u32,
    pub screens: Vec<Screen>,
    pub stacks: Vec<Stack>,
    /// matrixmultiply's fp32 sgemm of the layer (only where llama.cpp's CPU gave no layer).
    pub cpu: Option<CpuResult>,
    /// llama.cpp's layer per backend and weight type (from `llama_cpp.gemms`).
    pub llama_cpp: Vec<LlamaLayer>,
    /// The CPU figure of this ubatch: llama.cpp's fastest CPU layer, else matrixmultiply's.
    pub cpu_baseline: Option<Baseline>,
    /// Best GPU stack's predicted tokens/s over the CPU baseline's.
    pub gpu_cpu_ratio: Option<f64>,
}

impl UbatchResult {
    pub fn new(ubatch: u32) -> Self {
        UbatchResult {
            ubatch,
            screens: Vec::new(),
            stacks: Vec::new(),
            cpu: None,
            llama_cpp: Vec::new(),
            cpu_baseline: None,
            gpu_cpu_ratio: None,
        }
    }

    /// The fastest stack that ran without error.
    pub fn best_stack(&self) -> Option<&Stack> {
        self.stacks
            .iter()
            .filter(|s| s.status == Status::Ok)
            .max_by(|a, b| {
                a.predicted_tokens_per_s
                    .unwrap_or(0.0)
                    .total_cmp(&b.predicted_tokens_per_s.unwrap_or(0.0))
            })
    }
}

/// Whole-model prefill from the time of one layer's GEMMs at `ubatch` tokens.
pub fn predict(seconds_per_layer: f64, layers: u32, ubatch: u32) -> (f64, f64) {
    let per_ubatch = seconds_per_layer * f64::from(layers);
    let tps = f64::from(ubatch) / per_ubatch;
    let prompt = f64::from(PROMPT_TOKENS.div_ceil(ubatch)) * per_ubatch;
    (tps, prompt)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A report of the tiny model on a default device with these peaks, nothing else.
    pub fn report(peak: Vec<Peak>) -> Report {
        let model = super::super::model::preset("tiny").unwrap().clone();
        Report {
            tool: "rvl smoke-bench test".into(),
            device: DeviceInfo::default(),
            devices: Vec::new(),
            model: ModelInfo {
                gflop_per_token: model.flops_per_token() / 1e9,
                model,
            },
            size: Size::Quick,
            gpu_clock: None,
            clock_pin: None,
            peak,
            kernels: Vec::new(),
            ubatches: Vec::new(),
            cpu_threads: None,
            cpu_baseline: CpuBaseline::default(),
            llama_cpp: Default::default(),
            notes: Vec::new(),
            problems: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prediction_counts_whole_ubatches() {
        // 0.01 s per layer, 36 layers: 0.36 s per ubatch of 512 -> 1422 t/s; 5000 tokens need
        // 10 ubatches (the last one partly empty, as in llama.cpp) = 3.6 s.
        let (tps, prompt) = predict(0.01, 36, 512);
        assert!((tps - 512.0 / 0.36).abs() < 1e-6);
        assert!((prompt - 3.6).abs() < 1e-9);
    }
}
