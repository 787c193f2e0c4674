//! The result of a `smoke-bench --gguf` run as data: what `--json` prints under `prefill`, what
//! `--save` writes and what `rvl serve` reads back. Plain serde types, no IO.

use serde::{Deserialize, Serialize};

/// Prompt length the table's prefill time is given for (an agent's prompt; as in the GEMM
/// report).
pub const PROMPT_TOKENS: u32 = 5000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// "rvl smoke-bench 0.1.0".
    pub tool: String,
    pub model: ModelFile,
    /// Prompt tokens per llama-bench run (`-p`).
    pub prompt_tokens: u32,
    pub llama_bench: LlamaBench,
    /// The llama.cpp RPC workers the GPU runs used besides this board (`--rpc`), as
    /// `HOST:PORT`; empty for this board alone.
    #[serde(default)]
    pub rpc: Vec<String>,
    /// The Vulkan device ggml uses as rvl's own loader sees it (driver and Mesa version), when
    /// rvl could look.
    pub vulkan_device: Option<VulkanDevice>,
    /// rvl's panvk build when it is the one the loader loads, with its patch level: "rvl's
    /// panvk (Mesa 26.2.4, queue TLS patch, series 2/2)"; None for any other driver.
    #[serde(default)]
    pub rvl_panvk: Option<String>,
    /// Threads of the CPU runs (the big cores), None with `--no-cpu`.
    pub cpu_threads: Option<usize>,
    pub case_timeout_s: u64,
    /// The test-backend-ops that checked the GPU's results before each GPU run, or why none
    /// did (then every row's `check` is absent).
    #[serde(default)]
    pub check_tool: CheckTool,
    pub ubatches: Vec<UbatchRow>,
    /// The fastest ubatch whose GPU run was ok (its check passed or could not run): what
    /// `rvl serve` uses for this model; never one with wrong results.
    pub best_gpu_ubatch: Option<u32>,
    /// rvl's GEMM-only prediction for the model's layer shapes (from its GGUF header), or why
    /// there is none.
    #[serde(default)]
    pub gemm_prediction: GemmPrediction,
    /// The GEMM-only prefill of the model's weight matrices on a Mali-G610 MC4 at 1 GHz, from
    /// their tensor types and the panvk lab's rates for rvl's Mali pipelines (the ceiling a
    /// board's measured rate is set against), or why there is none.
    #[serde(default)]
    pub g610_prediction: super::g610::G610Prediction,
    pub notes: Vec<String>,
    /// True when any run did not end ok.
    pub problems: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelFile {
    pub path: String,
    /// The file name, the key `rvl serve` looks the run up by.
    pub file_name: String,
    pub bytes: u64,
    /// llama-bench's description of it ("llama 7B Q4_0"), from the first run that printed one.
    pub model_type: Option<String>,
    pub n_params: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LlamaBench {
    pub path: String,
    /// llama.cpp's build id as llama-bench reports it.
    pub build_commit: Option<String>,
    pub build_number: Option<i64>,
    /// The backends llama-bench was built with ("Vulkan"), and its GPU as ggml names it.
    pub backends: Option<String>,
    pub gpu_info: Option<String>,
    /// The rvl prefix the binary belongs to (`/opt/rvl/llama.cpp-0.3.36-rvl1`), if it does.
    pub rvl_prefix: Option<String>,
    /// That build's patches against this rvl's series: "2 of 2 current, tiles patch current".
    pub patch_level: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VulkanDevice {
    pub index: usize,
    pub name: String,
    /// `cpu` for lavapipe, else the GPU kind (`integrated-gpu`, ...).
    pub kind: String,
    pub driver_name: String,
    /// The driver's own version text (Mesa's "Mesa 26.1.0").
    pub driver_info: String,
    pub driver_version: String,
}

/// Which test-backend-ops checks the GPU ubatches, and on what.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CheckTool {
    pub path: Option<String>,
    /// The model's weight matrices it runs (`q4_K 2048x2048`, ...), at each ubatch.
    #[serde(default)]
    pub shapes: Vec<String>,
    /// Why no check ran (no tool, no weight table in the header).
    pub not_run: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UbatchRow {
    pub ubatch: u32,
    /// llama.cpp's Vulkan matmuls at this ubatch against its CPU backend, before the GPU run.
    #[serde(default)]
    pub check: Option<Check>,
    pub gpu: Case,
    pub cpu: Option<Case>,
    /// GPU t/s over CPU t/s, when both ran ok.
    pub gpu_cpu_ratio: Option<f64>,
    /// Seconds for a 5,000-token prompt at the GPU's measured rate.
    pub gpu_prompt_5000_s: Option<f64>,
    /// The GEMM sweep's predicted t/s (linear layers only) at this ubatch.
    #[serde(default)]
    pub gemm_predicted_tokens_per_s: Option<f64>,
    /// Measured GPU t/s over that prediction: what attention and the other ops cost.
    #[serde(default)]
    pub measured_over_predicted: Option<f64>,
    /// The lab model's GEMM-only t/s on a G610 at 1 GHz at this ubatch (`g610_prediction`).
    #[serde(default)]
    pub g610_predicted_tokens_per_s: Option<f64>,
}

/// The layer shapes the prediction used and what it gave.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GemmPrediction {
    /// "llama: hidden 64, ffn 160, 2 layers, 4 heads (2 KV)".
    pub shapes: Option<String>,
    /// The Vulkan device the GEMMs ran on.
    pub device: Option<String>,
    /// The sweep's size (`--quick`, default, `--full`); absent in records saved before it.
    #[serde(default)]
    pub sweep: Option<super::plan::SweepSize>,
    pub points: Vec<GemmPoint>,
    /// Why there is no prediction (no shapes in the header, no Vulkan in this rvl, ...).
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GemmPoint {
    pub ubatch: u32,
    /// The precision of the fastest stack that ran.
    pub precision: Option<String>,
    pub predicted_tokens_per_s: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// The driver ran out of device memory (`ErrorOutOfDeviceMemory`: panvk above ubatch 64
    /// without rvl's tiles patch).
    OutOfDeviceMemory,
    /// A GPU run found no Vulkan device, so its figure would be the CPU's.
    NoVulkanDevice,
    /// Killed by a signal (SIGABRT, SIGSEGV, ...).
    Crashed,
    /// Exited with a non-zero status.
    Failed,
    /// Ran past `--case-timeout` and was killed.
    Timeout,
    /// Exited 0 but printed no pp result rvl could read.
    BadOutput,
    /// The correctness check before the run found products outside test-backend-ops' bound:
    /// the ubatch is not timed and `rvl serve` never uses it.
    WrongResults,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::OutOfDeviceMemory => "out of device memory",
            Status::NoVulkanDevice => "no Vulkan device",
            Status::Crashed => "crashed",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::BadOutput => "bad output",
            Status::WrongResults => "wrong results",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Every product within test-backend-ops' bound (normalised mean squared error <= 5e-4).
    Passed,
    /// At least one product outside it, or NaN/inf where the CPU has a number.
    WrongResults,
    /// The check did not finish (crashed, timed out, found no Vulkan device, failed).
    Error,
}

impl CheckStatus {
    pub fn name(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::WrongResults => "wrong results",
            CheckStatus::Error => "error",
        }
    }
}

/// One run of `test-backend-ops test --mul-mat ... -b Vulkan0` at one ubatch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub status: CheckStatus,
    /// Products asked for, those within the bound, those the device does not run.
    pub cases: usize,
    pub passed: usize,
    pub not_supported: usize,
    /// The first product outside the bound and what the tool said about it:
    /// `MUL_MAT(type_a=q4_0,m=2048,n=128,k=2048): [MUL_MAT] ERR = 0.53 > 0.0005`.
    pub first_failure: Option<String>,
    /// How the process ended ("exit status 0", "SIGSEGV", "killed after 300 s").
    pub exit: String,
    /// What went wrong when the check did not finish.
    pub detail: Option<String>,
    #[serde(default)]
    pub stderr_tail: Vec<String>,
    pub seconds: f64,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Gpu,
    Cpu,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Gpu => "GPU",
            Side::Cpu => "CPU",
        }
    }
}

/// One llama-bench process: one ubatch on the GPU or on the CPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    pub side: Side,
    pub status: Status,
    /// Mean prompt tokens per second over llama-bench's repetitions.
    pub tokens_per_s: Option<f64>,
    pub stddev_tokens_per_s: Option<f64>,
    #[serde(default)]
    pub samples_tokens_per_s: Vec<f64>,
    /// How it ended: "exit status 0", "exit status 3", "SIGABRT", "killed after 300 s".
    pub exit: String,
    /// What rvl recognised, in one line (the out-of-memory call, the error line).
    pub detail: Option<String>,
    /// The last stderr lines of a run that did not end ok, control bytes escaped.
    #[serde(default)]
    pub stderr_tail: Vec<String>,
    pub seconds: f64,
    /// The command run (llama-bench and its arguments).
    pub argv: Vec<String>,
}

impl Case {
    pub fn ok_rate(&self) -> Option<f64> {
        self.tokens_per_s.filter(|_| self.status == Status::Ok)
    }
}

/// The ubatches whose GPU results were wrong, and the first failure of each.
pub fn wrong_ubatches(rows: &[UbatchRow]) -> Vec<(u32, String)> {
    rows.iter()
        .filter(|r| r.gpu.status == Status::WrongResults)
        .map(|r| (r.ubatch, r.gpu.detail.clone().unwrap_or_default()))
        .collect()
}

/// The fastest ubatch whose GPU run was ok (a ubatch with wrong results has no rate).
pub fn best_gpu_ubatch(rows: &[UbatchRow]) -> Option<u32> {
    rows.iter()
        .filter_map(|r| r.gpu.ok_rate().map(|t| (r.ubatch, t)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(u, _)| u)
}
