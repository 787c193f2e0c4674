//! llama.cpp's own matrix products beside rvl's kernels, on the same board: `test-backend-ops
//! perf` (rvl's patch 0006: `--mul-mat` at exactly the sweep's shapes and ubatches) on llama.cpp's
//! CPU backend, the baseline the board really has (quantised weights with the CPU's int8 dot
//! products, repacked where llama.cpp repacks them), and on the same Vulkan device (llama.cpp's
//! own kernels). Per ubatch and weight type, the layer's time is the sum of its products, each
//! measured alone, as rvl's screens are.
//!
//! The stage: which tool ([`find`]), which products ([`cases`]), two processes with a time
//! limit each ([`run`]), and the layer figures ([`layers`]) the report and the headline's
//! GPU/CPU use.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::kernels::Precision;
use super::model::Gemm;
use super::plan::{Plan, Size};
use super::report::{self, UbatchResult};
use crate::backend_ops::{self, MulMat, Outcome};
use crate::error::Error;

/// Weight types llama.cpp runs for each of rvl's precisions: its own name for the same data
/// (int8 is Q8_0-style blocks), and for q4_0 also q4_K, the type of most tensors of the Q4_K_M
/// files these models are usually run from.
pub fn ggml_types(p: Precision) -> &'static [&'static str] {
    match p {
        Precision::Fp32 => &["f32"],
        Precision::Fp16 => &["f16"],
        Precision::Int8 => &["q8_0"],
        Precision::Q4_0 => &["q4_0", "q4_K"],
    }
}

/// rvl's precision for a ggml type, where rvl has a kernel for it.
pub fn precision_of(ggml_type: &str) -> Option<Precision> {
    Precision::ALL
        .into_iter()
        .find(|p| ggml_types(*p).first() == Some(&ggml_type))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Cpu,
    Vulkan,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "CPU",
            Backend::Vulkan => "Vulkan",
        }
    }

    /// test-backend-ops' `-b` name (with GGML_VK_VISIBLE_DEVICES naming rvl's device, ggml
    /// calls it its first).
    fn ggml(self) -> &'static str {
        match self {
            Backend::Cpu => "CPU",
            Backend::Vulkan => "Vulkan0",
        }
    }
}

/// Time and speed of each case: `perf_ms` per product, and per backend a limit after which
/// the process is stopped and what it printed is kept (the rest is "not measured").
pub fn budget(size: Size) -> (u32, Duration) {
    match size {
        Size::Quick => (50, Duration::from_secs(15)),
        Size::Default => (150, Duration::from_secs(60)),
        // test-backend-ops' own default: a second per product.
        Size::Full => (1000, Duration::from_secs(900)),
    }
}

/// llama.cpp's side of the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LlamaCpp {
    /// The test-backend-ops run, None when none was (then `not_run` says why).
    pub tool: Option<String>,
    pub not_run: Option<String>,
    /// Threads of the CPU backend (the big cores, as `--gguf`'s CPU runs); None without one.
    pub cpu_threads: Option<usize>,
    /// Milliseconds each product was timed for (`--perf-ms`).
    pub perf_ms: u32,
    pub runs: Vec<Run>,
    pub gemms: Vec<LlamaGemm>,
}

/// One test-backend-ops process.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub backend: Backend,
    /// ggml's description of the device (`llvmpipe (LLVM 15.0.6, 256 bits)`, the CPU's name).
    pub device: Option<String>,
    pub exit: String,
    /// Why it gave fewer products than asked for, if it did.
    pub error: Option<String>,
    pub seconds: f64,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmStatus {
    Ok,
    /// The backend does not run this type.
    NotSupported,
    /// The process ended (time limit, crash) before it reached this product.
    NotMeasured,
}

/// One of the layer's products in llama.cpp, on one backend.
#[derive(Debug, Clone, Serialize)]
pub struct LlamaGemm {
    pub backend: Backend,
    pub ggml_type: String,
    /// rvl's precision for the same weights, None where rvl has no kernel (q4_K).
    pub precision: Option<Precision>,
    pub ubatch: u32,
    pub gemm: String,
    /// `K x N`, as rvl's screens name it.
    pub shape: String,
    /// Output features computed: fewer than N on CPU Vulkan devices, as rvl's own screens
    /// there (the time is scaled to the whole matrix).
    pub outputs: u32,
    pub status: GemmStatus,
    /// Seconds for the whole matrix.
    pub seconds: Option<f64>,
    pub gflops: Option<f64>,
    /// Where llama.cpp kept the weights (`CPU_REPACK`: repacked for the CPU's dot products).
    pub weights: Option<String>,
}

/// One layer's products in llama.cpp at one ubatch, one type, one backend.
#[derive(Debug, Clone, Serialize)]
pub struct LlamaLayer {
    pub backend: Backend,
    pub ggml_type: String,
    pub precision: Option<Precision>,
    /// None unless every product of the layer was measured.
    pub seconds_per_layer: Option<f64>,
    pub gflops: Option<f64>,
    pub predicted_tokens_per_s: Option<f64>,
}

/// `--test-backend-ops PATH`, else rvl's newest llama.cpp's, else None with why not.
pub fn find(
    given: Option<&Path>,
    env: &crate::inventory::Env,
) -> Result<Result<String, String>, Error> {
    if let Some(p) = given {
        if !p.is_file() {
            return Err(Error::Usage(format!(
                "--test-backend-ops {}: no such file",
                p.display()
            )));
        }
        return Ok(Ok(p.display().to_string()));
    }
    let inv = crate::inventory::Inventory {
        live: true,
        env: env.clone(),
        ..Default::default()
    };
    let facts = crate::host::llama::facts(&crate::host::Root::system(), &inv);
    Ok(crate::llama::newest(&facts)
        .filter(|i| i.test_backend_ops_executable)
        .map(crate::inventory::LlamaInstall::test_backend_ops)
        .ok_or_else(|| {
            format!(
                "rvl's llama.cpp is not installed (no {}/{}*/bin/{}): sudo rvl setup --only llama-cpp, or give --test-backend-ops PATH",
                crate::llama::PREFIX_PARENT,
                crate::llama::PREFIX_NAME,
                backend_ops::TOOL
            )
        }))
}

/// A product to ask for and the layer GEMMs it stands for (gate and up share a shape).
struct Planned {
    case: MulMat,
    ggml_type: &'static str,
    ubatch: u32,
    gemms: Vec<Gemm>,
}

/// The order products are asked for, so that a run stopped at its time limit has whole rows of
/// what matters most: the quantised types first (what llama.cpp runs models in, and on the CPU
/// the fastest), then int8's q8_0, f16, f32.
const PRIORITY: [Precision; 4] = [
    Precision::Q4_0,
    Precision::Int8,
    Precision::Fp16,
    Precision::Fp32,
];

/// The products for `backend`: each type of `precisions` (in [`PRIORITY`] order), each ubatch
/// (smallest first), each distinct shape of `layer`. `cap`: outputs computed per matrix (CPU
/// Vulkan devices).
fn cases(
    layer: &[Gemm],
    ubatches: &[u32],
    precisions: &[Precision],
    cap: Option<u32>,
) -> Vec<Planned> {
    let mut out: Vec<Planned> = Vec::new();
    for p in PRIORITY.into_iter().filter(|p| precisions.contains(p)) {
        for &t in ggml_types(p) {
            for &ub in ubatches {
                let Some(block) = backend_ops::block_size(t) else {
                    continue;
                };
                for g in layer {
                    if u64::from(g.k) % block != 0 {
                        continue;
                    }
                    let m = cap.map_or(g.n, |c| g.n.min(c));
                    let case = MulMat {
                        ggml_type: t.to_string(),
                        m: u64::from(m),
                        n: u64::from(ub),
                        k: u64::from(g.k),
                    };
                    match out.iter_mut().find(|x| x.case == case) {
                        Some(x) => x.gemms.push(*g),
                        None => out.push(Planned {
                            case,
                            ggml_type: t,
                            ubatch: ub,
                            gemms: vec![*g],
                        }),
                    }
                }
            }
        }
    }
    out
}

/// What [`run`] needs of the sweep.
pub struct Job<'a> {
    pub tool: &'a str,
    pub plan: &'a Plan,
    /// The precisions the sweep measured (llama.cpp's Vulkan products); its CPU products take
    /// every type, since the CPU baseline is the fastest way llama.cpp runs the layer there.
    pub precisions: &'a [Precision],
    /// The Vulkan device rvl measured (its index in the loader's list) and whether it is a
    /// CPU implementation (then each matrix is sliced as rvl's own screens are).
    pub device_index: usize,
    pub cpu_device: bool,
    /// CPU threads; None: no CPU run (`--no-cpu`).
    pub cpu_threads: Option<usize>,
    pub progress: bool,
}

/// Both processes, then every product's figure.
pub fn run(job: &Job) -> LlamaCpp {
    let (perf_ms, limit) = budget(job.plan.size);
    let layer = job.plan.model.layer();
    let mut out = LlamaCpp {
        tool: Some(job.tool.to_string()),
        cpu_threads: job.cpu_threads,
        perf_ms,
        ..Default::default()
    };
    let mut backends = vec![(
        Backend::Vulkan,
        job.plan.output_cap(job.cpu_device),
        job.precisions,
    )];
    if job.cpu_threads.is_some() {
        backends.push((Backend::Cpu, None, &Precision::ALL[..]));
    }
    for (backend, cap, precisions) in backends {
        let planned = cases(&layer, &job.plan.ubatches, precisions, cap);
        if planned.is_empty() {
            continue;
        }
        let list: Vec<MulMat> = planned.iter().map(|p| p.case.clone()).collect();
        let threads = (backend == Backend::Cpu)
            .then_some(job.cpu_threads)
            .flatten();
        let argv = backend_ops::perf_argv(job.tool, backend.ggml(), &list, perf_ms, threads);
        // rvl's own device, whatever the user's GGML_VK_VISIBLE_DEVICES says.
        let env = BTreeMap::from([(
            "GGML_VK_VISIBLE_DEVICES".to_string(),
            job.device_index.to_string(),
        )]);
        if job.progress {
            eprintln!(
                "smoke-bench: llama.cpp's {} matmuls (test-backend-ops perf, {} products, at most {} s)",
                backend.name(),
                list.len(),
                limit.as_secs()
            );
        }
        let raw = crate::prefill::run::run(&argv, &env, limit);
        let printed = backend_ops::parse(&raw.stdout);
        let measured = printed
            .cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Timed { .. } | Outcome::NotSupported))
            .count();
        let error = describe_end(&raw, &printed, measured, list.len(), limit);
        if job.progress {
            eprintln!(
                "smoke-bench: llama.cpp {}: {measured} of {} products in {}{}",
                backend.name(),
                list.len(),
                crate::output::duration(raw.seconds),
                error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            );
        }
        for p in &planned {
            let found = printed.cases.iter().find(|c| c.case == p.case);
            for g in &p.gemms {
                out.gemms
                    .push(figure(backend, p, g, found.map(|c| &c.outcome)));
            }
        }
        out.runs.push(Run {
            backend,
            device: printed.device,
            exit: raw.ended.words(),
            error,
            seconds: raw.seconds,
            argv,
        });
    }
    out
}

/// Why a run gave fewer products than asked for, None when it gave them all.
fn describe_end(
    raw: &crate::prefill::run::RawRun,
    printed: &backend_ops::Printed,
    measured: usize,
    asked: usize,
    limit: Duration,
) -> Option<String> {
    use crate::prefill::parse::Ended;
    if measured == asked {
        return None;
    }
    let last = raw
        .stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(crate::output::escape_line);
    Some(match &raw.ended {
        Ended::NotStarted(why) => crate::output::escape_line(why),
        Ended::Exit(1) if backend_ops::lacks_patch(&raw.stdout) => format!(
            "this test-backend-ops lacks rvl's {} (patches/llama.cpp 0006): rebuild rvl's llama.cpp, sudo rvl setup --only llama-cpp",
            backend_ops::MUL_MAT_OPTION
        ),
        Ended::Timeout(_) => format!(
            "the run's {} s were up: {measured} of {asked} products measured (--full allows more)",
            limit.as_secs()
        ),
        Ended::Exit(0) if !printed.backend_ran => {
            "ggml found no such device (lavapipe: it is skipped unless GGML_VK_VISIBLE_DEVICES names it)".into()
        }
        Ended::Signal(n) => format!(
            "{}{}",
            crate::prefill::parse::signal_name(*n),
            last.map(|l| format!(": {l}")).unwrap_or_default()
        ),
        Ended::Exit(c) => format!(
            "exit status {c}{}",
            last.map(|l| format!(": {l}")).unwrap_or_default()
        ),
    })
}

/// One GEMM's figure from its product's line (scaled from the outputs computed to the whole
/// matrix).
fn figure(backend: Backend, p: &Planned, g: &Gemm, outcome: Option<&Outcome>) -> LlamaGemm {
    let mut f = LlamaGemm {
        backend,
        ggml_type: p.ggml_type.to_string(),
        precision: precision_of(p.ggml_type),
        ubatch: p.ubatch,
        gemm: g.name.to_string(),
        shape: g.shape(),
        outputs: p.case.m as u32,
        status: GemmStatus::NotMeasured,
        seconds: None,
        gflops: None,
        weights: None,
    };
    match outcome {
        Some(Outcome::Timed {
            us_per_run,
            weights,
        }) => {
            let s = us_per_run * 1e-6 * f64::from(g.n) / p.case.m as f64;
            f.status = GemmStatus::Ok;
            f.seconds = Some(s);
            f.gflops = Some(g.flops(p.ubatch) / s / 1e9);
            f.weights = weights.clone();
        }
        Some(Outcome::NotSupported) => f.status = GemmStatus::NotSupported,
        _ => {}
    }
    f
}

/// Per ubatch, each backend and type's whole layer (every product measured) with its predicted
/// tokens/s, into `ubatches`; then each ubatch's CPU baseline: the fastest llama.cpp CPU type.
pub fn layers(l: &LlamaCpp, plan: &Plan, ubatches: &mut [UbatchResult]) {
    let layer = plan.model.layer();
    for u in ubatches.iter_mut() {
        let mut keys: Vec<(Backend, String)> = l
            .gemms
            .iter()
            .filter(|g| g.ubatch == u.ubatch)
            .map(|g| (g.backend, g.ggml_type.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        for (backend, ty) in keys {
            let times: Vec<Option<f64>> = layer
                .iter()
                .map(|g| {
                    l.gemms
                        .iter()
                        .find(|x| {
                            x.ubatch == u.ubatch
                                && x.backend == backend
                                && x.ggml_type == ty
                                && x.gemm == g.name
                        })
                        .and_then(|x| x.seconds)
                })
                .collect();
            let secs: Option<f64> = times.iter().copied().sum();
            let flops: f64 = layer.iter().map(|g| g.flops(u.ubatch)).sum();
            u.llama_cpp.push(LlamaLayer {
                backend,
                precision: precision_of(&ty),
                ggml_type: ty,
                seconds_per_layer: secs,
                gflops: secs.map(|s| flops / s / 1e9),
                predicted_tokens_per_s: secs
                    .map(|s| report::predict(s, plan.model.layers, u.ubatch).0),
            });
        }
    }
}

/// The fastest llama.cpp CPU layer at this ubatch: (type, tokens/s).
pub fn cpu_best(u: &UbatchResult) -> Option<(&str, f64)> {
    u.llama_cpp
        .iter()
        .filter(|l| l.backend == Backend::Cpu)
        .filter_map(|l| Some((l.ggml_type.as_str(), l.predicted_tokens_per_s?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::preset;

    #[test]
    fn gate_and_up_share_one_product_and_odd_blocks_are_left_out() {
        let layer = preset("qwen2.5-3b").unwrap().layer();
        let c = cases(&layer, &[16, 512], &[Precision::Q4_0], None);
        // 2 ubatches x 2 types x 4 shapes (gate and up are one product), type by type.
        assert_eq!(c.len(), 16);
        assert_eq!(c[0].case.spec(), "q4_0:2560:16:2048");
        assert_eq!(c[4].case.spec(), "q4_0:2560:512:2048");
        assert_eq!(c[8].case.spec(), "q4_K:2560:16:2048");
        let all = cases(&layer, &[16], &Precision::ALL, None);
        let order: Vec<&str> = all.iter().step_by(4).map(|p| p.ggml_type).collect();
        assert_eq!(order, vec!["q4_0", "q4_K", "q8_0", "f16", "f32"]);
        let gate = c.iter().find(|p| p.gemms.len() == 2).unwrap();
        assert_eq!(gate.case.spec(), "q4_0:11008:16:2048");
        // The tiny preset's K of 64 and 160 are no whole q4_K blocks: only q4_0 runs.
        let tiny = preset("tiny").unwrap().layer();
        let c = cases(&tiny, &[16], &[Precision::Q4_0], Some(32));
        assert!(c.iter().all(|p| p.ggml_type == "q4_0"), "{}", c.len());
        assert!(c.iter().all(|p| p.case.m <= 32));
    }

    #[test]
    fn a_sliced_product_is_scaled_to_the_whole_matrix() {
        let g = Gemm {
            name: "down",
            k: 256,
            n: 2048,
        };
        let p = Planned {
            case: MulMat {
                ggml_type: "f32".into(),
                m: 1024,
                n: 64,
                k: 256,
            },
            ggml_type: "f32",
            ubatch: 64,
            gemms: vec![g],
        };
        let f = figure(
            Backend::Vulkan,
            &p,
            &g,
            Some(&Outcome::Timed {
                us_per_run: 1000.0,
                weights: None,
            }),
        );
        assert_eq!(f.seconds, Some(0.002));
        assert_eq!(f.outputs, 1024);
        assert!((f.gflops.unwrap() - g.flops(64) / 0.002 / 1e9).abs() < 1e-9);
        assert_eq!(f.precision, Some(Precision::Fp32));
        assert_eq!(
            figure(Backend::Cpu, &p, &g, None).status,
            GemmStatus::NotMeasured
        );
        assert_eq!(precision_of("q4_K"), None);
        assert_eq!(precision_of("q8_0"), Some(Precision::Int8));
    }
}
