//! `rvl smoke-bench --gguf MODEL.gguf`: llama.cpp's real prompt processing on this board, per
//! ubatch, on the Vulkan device beside the CPU, with every crash caught and named.
//!
//! Flow: plan (pure, from flags) -> the model's GGUF magic, layer shapes and weight table ->
//! which llama-bench (rvl's newest prefix or `--llama-bench`) and test-backend-ops, and the
//! environment rvl runs llama.cpp with -> per ubatch the correctness check ([`check`]: the
//! GPU's matmuls at the model's shapes against the CPU; a ubatch with wrong results is not
//! timed), then one llama-bench process per case, each with a time limit ([`run`]) -> each
//! case judged ([`parse`]) -> report ->
//! `--compare`, `--save`, and the record per model that `rvl serve` takes its ubatch from
//! ([`saved`]). Nothing here needs rvl's own Vulkan code (llama-bench brings its own), so it
//! builds without the `bench` feature; with it, rvl's loader names the driver and Mesa version.

pub mod check;
pub mod compare;
pub mod g610;
pub mod gguf;
pub mod parse;
pub mod plan;
pub mod render;
pub mod report;
pub mod run;
pub mod saved;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli;
use crate::error::Error;
use crate::exit;
use crate::host::{self, Root};
use crate::inventory::{Inventory, LlamaFacts, LlamaInstall};
use crate::llama::{self, Tiles};
use crate::output::{escape_line, sig3, Envelope, Outcome, Style};
use crate::settings::Settings;
use crate::vulkan::{DeviceInfo, VulkanProbe};

use compare::Comparison;
use parse::BenchLine;
use plan::{Plan, SweepSize};
use report::{
    Case, Check, CheckTool, LlamaBench, ModelFile, Report, Side, UbatchRow, VulkanDevice,
};

/// The verb, as the envelope names it.
const VERB: &str = "smoke-bench";

/// A prefill run and what was done with it. In `--json` its report is the `prefill` section.
#[derive(Debug, Serialize)]
pub struct PrefillOutcome {
    pub prefill: Report,
    /// Against the `--compare` file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Where `--save` wrote the document (said in human output only).
    #[serde(skip)]
    pub saved: Option<PathBuf>,
    /// Where the record for `rvl serve` went, or why it did not (human output only).
    #[serde(skip)]
    pub recorded: Result<String, String>,
}

impl Outcome for PrefillOutcome {
    /// PROBLEMS when any run did not end ok (the sweep itself went on).
    fn exit_code(&self) -> i32 {
        if self.prefill.problems {
            exit::PROBLEMS
        } else {
            exit::OK
        }
    }

    fn human(&self, style: Style) -> String {
        let mut out = render::render(&self.prefill, style);
        if let Some(c) = &self.comparison {
            out.push_str(&render::render_comparison(c, style));
        }
        out.push_str(&render::render_notes(&self.prefill.notes, style));
        if let Some(path) = &self.saved {
            let _ = writeln!(out, "saved: {}", escape_line(&path.display().to_string()));
        }
        match &self.recorded {
            Ok(p) => {
                let _ = writeln!(out, "recorded for rvl serve: {}", escape_line(p));
            }
            Err(why) => {
                let _ = writeln!(
                    out,
                    "{}",
                    style.yellow(&format!("not recorded for rvl serve: {}", escape_line(why)))
                );
            }
        }
        out
    }
}

pub fn run(args: &cli::BenchArgs, settings: &Settings) -> anyhow::Result<PrefillOutcome> {
    let root = Root::system();
    // Flags and files first: a bad one is an error before minutes of benchmarking.
    if let Some(path) = &args.save {
        crate::saved::check_writable(path)?;
    }
    let baseline = args.compare.as_deref().map(saved::load).transpose()?;
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = plan::big_cores(&host::cpus::capacities(&root), available);
    let plan = Plan::from_args(args, threads).map_err(Error::Usage)?;
    let (model, shapes, weights, table) = model_file(&plan.model)?;
    // A worker that is down would fail every GPU case, minutes later: say so now.
    for w in &plan.rpc {
        host::rpc::connects(w, host::rpc::CONNECT_TIMEOUT).map_err(Error::Tool)?;
    }
    let inv = inventory(&root, settings);
    let (bench, install) = choose_bench(args.llama_bench.as_deref(), &inv.llama)?;
    let g610 = match table {
        Ok(g) => g610::predict(&g, &plan.ubatches, int_dot_build(install)),
        Err(e) => g610::G610Prediction {
            error: Some(format!("the GGUF header gives no tensor table ({e})")),
            ..Default::default()
        },
    };
    let mut checker = check_tool(args.test_backend_ops.as_deref(), &bench, install, weights)?;
    if !plan.rpc.is_empty() && checker.tool.path.is_some() {
        // test-backend-ops multiplies on this board's devices only; the GPU runs here are the
        // workers'. A check of the head's Vulkan0 would say nothing about them (or find none).
        checker = Checker {
            tool: CheckTool {
                not_run: Some(format!(
                    "the GPU runs use the RPC workers, and test-backend-ops checks only this board's devices: run rvl smoke-bench --gguf {} on each worker to check its GPU",
                    escape_line(&model.file_name)
                )),
                ..CheckTool::default()
            },
            weights: Vec::new(),
        };
    }
    let env = llama::launch_env(&inv);
    let progress = settings.progress(args.json);
    if progress {
        eprintln!(
            "smoke-bench: {} with {bench}, pp{}, {} runs of at most {} s each{}",
            escape_line(&model.file_name),
            plan.prompt,
            plan.cases().len(),
            plan.timeout.as_secs(),
            {
                let mut s = match &checker.tool.path {
                    Some(t) => format!(
                        "; each GPU ubatch checked first with {} ({} matrices)",
                        escape_line(t),
                        checker.weights.len()
                    ),
                    None => String::new(),
                };
                if !plan.rpc.is_empty() {
                    s.push_str(&format!(
                        "; GPU runs with RPC workers {}",
                        crate::rpc::join(&plan.rpc)
                    ));
                }
                s
            }
        );
    }
    let (rows, line, check_tool) = sweep(&plan, &bench, checker, &env, progress);
    let visible = env
        .get("GGML_VK_VISIBLE_DEVICES")
        .map(String::as_str)
        .or(settings.env.get("GGML_VK_VISIBLE_DEVICES"));
    let device = inv
        .live_facts
        .vulkan
        .as_ref()
        .and_then(|p| ggml_device(p, visible));
    let prediction = gemm_prediction(&plan, shapes, device.as_ref(), settings, progress);
    let mut report = build_report(
        &plan, model, &bench, install, line, device, rows, prediction, g610,
    );
    report.notes.push(match (&check_tool.path, &check_tool.not_run) {
        (Some(_), _) => format!(
            "before each GPU run, test-backend-ops multiplied random matrices of the model's weight types and shapes at that ubatch on {} and on llama.cpp's CPU backend; a ubatch with a product outside its bound (normalised mean squared error 5e-4, what llama.cpp's own tests hold every backend to) is \"wrong results\": not timed, and never used by rvl serve",
            check::BACKEND
        ),
        (None, Some(why)) => format!("the GPU's results were not checked: {why}"),
        (None, None) => "the GPU's results were not checked".into(),
    });
    report.check_tool = check_tool;
    report.rvl_panvk = rvl_panvk(&inv);
    let candidates = crate::mesa::active(&inv)
        .and_then(|p| p.level)
        .map_or(0, |l| l.candidates);
    report
        .notes
        .extend(candidate_note(candidates, &report.ubatches));
    let mut outcome = PrefillOutcome {
        comparison: baseline.map(|b| compare::compare(&b, &report)),
        prefill: report,
        saved: None,
        recorded: Err(String::new()),
    };
    let code = outcome.exit_code();
    if let Some(path) = &args.save {
        crate::saved::save(path, &Envelope::new(VERB, code, &outcome))?;
        outcome.saved = Some(path.clone());
    }
    outcome.recorded = record(&outcome, &settings.env, code);
    Ok(outcome)
}

/// The model's header: its size and that it is GGUF (the magic), so a wrong path fails at once
/// rather than as a dozen failed runs; its layer shapes, its weight matrices (the check's
/// products) and its tensor table (the G610 prediction), or why not.
type ModelHead = (
    ModelFile,
    Result<gguf::Shapes, String>,
    Result<Vec<gguf::Weight>, String>,
    Result<crate::gguf::Gguf, String>,
);

fn model_file(path: &Path) -> Result<ModelHead, Error> {
    let shown = path.display().to_string();
    let read = |n: usize| {
        crate::host::root::read_head(path, n).map_err(|e| {
            Error::BadInput(format!(
                "--gguf {shown}: {}",
                crate::host::root::describe(&e)
            ))
        })
    };
    // Most headers fit in the first MiB; a large vocabulary needs more.
    let (mut head, bytes) = read(1 << 20)?;
    if head.len() as u64 == 1 << 20 && gguf::shapes(&head).is_err() {
        head = read(gguf::HEAD_CAP)?.0;
    }
    if !head.starts_with(b"GGUF") {
        return Err(Error::BadInput(format!(
            "--gguf {shown}: not a GGUF model (it does not start with \"GGUF\")"
        )));
    }
    let file = ModelFile {
        path: shown.clone(),
        file_name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(shown),
        bytes,
        model_type: None,
        n_params: None,
    };
    let weights = gguf::weights(&head).map(|(w, _)| w);
    let table = crate::gguf::read::parse(&head, false).map_err(|e| e.to_string());
    Ok((file, gguf::shapes(&head), weights, table))
}

/// The check's tool and the model's matrices, or why no check runs.
struct Checker {
    tool: CheckTool,
    weights: Vec<gguf::Weight>,
}

/// Which test-backend-ops checks the GPU: `--test-backend-ops PATH`, else the one of the rvl
/// prefix llama-bench belongs to, else the one beside llama-bench (a build's `bin/`). None,
/// with the reason, when there is none or the header gives no weight table.
fn check_tool(
    given: Option<&Path>,
    bench: &str,
    install: Option<&LlamaInstall>,
    weights: Result<Vec<gguf::Weight>, String>,
) -> Result<Checker, Error> {
    let path = match given {
        Some(p) if !p.is_file() => {
            return Err(Error::Usage(format!(
                "--test-backend-ops {}: no such file",
                p.display()
            )))
        }
        Some(p) => Some(p.display().to_string()),
        None => install
            .filter(|i| i.test_backend_ops_executable)
            .map(LlamaInstall::test_backend_ops)
            .or_else(|| {
                let beside = Path::new(bench).with_file_name(crate::backend_ops::TOOL);
                beside.is_file().then(|| beside.display().to_string())
            }),
    };
    let mut tool = CheckTool::default();
    let weights = match (&path, weights) {
        (None, _) => {
            tool.not_run = Some(format!(
                "no {} beside {bench} (rvl's llama.cpp ships it: sudo rvl setup --only llama-cpp; or give --test-backend-ops PATH)",
                crate::backend_ops::TOOL
            ));
            Vec::new()
        }
        (Some(_), Err(e)) => {
            tool.not_run = Some(format!("the GGUF header gives no weight matrices ({e})"));
            Vec::new()
        }
        (Some(p), Ok(w)) => {
            tool.path = Some(p.clone());
            tool.shapes = w.iter().map(check::describe).collect();
            w
        }
    };
    Ok(Checker { tool, weights })
}

/// rvl's GEMM sweep at the model's shapes, to set beside what llama.cpp measured; on the
/// device ggml uses when rvl knows which.
fn gemm_prediction(
    plan: &Plan,
    shapes: Result<gguf::Shapes, String>,
    device: Option<&VulkanDevice>,
    settings: &Settings,
    progress: bool,
) -> report::GemmPrediction {
    let shapes = match shapes {
        Ok(s) => s,
        Err(e) => {
            return report::GemmPrediction {
                error: Some(format!(
                    "the GGUF header gives no usable layer shapes ({e})"
                )),
                ..Default::default()
            }
        }
    };
    if progress {
        eprintln!(
            "smoke-bench: the GEMM-only prediction for {} (a {} sweep)",
            shapes.describe(),
            plan.sweep.word()
        );
    }
    let precision = gguf::precision_of(shapes.file_type);
    let run = contain_panic(|| {
        crate::bench::predict(
            &shapes,
            &plan.ubatches,
            plan.sweep,
            precision,
            device.map(|d| d.index),
            settings,
            progress,
        )
        .map_err(|e| e.to_string())
    })
    .and_then(|r| r);
    match run {
        Ok((device, points)) => report::GemmPrediction {
            shapes: Some(shapes.describe()),
            device: Some(device),
            sweep: Some(plan.sweep),
            points,
            error: None,
        },
        Err(e) => report::GemmPrediction {
            shapes: Some(shapes.describe()),
            sweep: Some(plan.sweep),
            error: Some(e),
            ..Default::default()
        },
    }
}

/// Run `f`; a panic in it becomes an error instead of ending the process. The prediction runs
/// after minutes of llama-bench runs, and a bug in it must not lose them: `main`'s panic hook
/// would exit at once, so it is set aside while `f` runs. (An allocation failure aborts
/// whatever the hook; sizes are bounded by arithmetic before anything is allocated.)
fn contain_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    use std::sync::{Arc, Mutex};
    let message: Arc<Mutex<String>> = Arc::default();
    let seen = message.clone();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(mut m) = seen.lock() {
            *m = info.to_string();
        }
    }));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|_| {
        let m = message.lock().map(|m| m.clone()).unwrap_or_default();
        format!("internal error in the prediction (a bug, please report it): {m}")
    })
}

/// What rvl's launch environment is decided from: the process environment, rvl's llama.cpp
/// prefixes and ICD, and the Vulkan devices rvl's loader sees (the panvk index, the driver).
fn inventory(root: &Root, settings: &Settings) -> Inventory {
    let mut inv = Inventory {
        live: true,
        env: settings.env.clone(),
        ..Default::default()
    };
    inv.live_facts.vulkan = Some(crate::vulkan::probe(
        settings.vars.vulkan_library.as_deref(),
    ));
    inv.llama = host::llama::facts(root, &inv);
    // Which panvk the loader gives llama.cpp, for the report's versions.
    inv.vulkan_icd = host::gather::icd_facts(root, &inv.env);
    inv.mesa = host::mesa::facts(root);
    inv
}

/// What this run says about a panvk built with `candidates` candidate patches (`rvl setup
/// --mesa-candidates`): that is what the run is for, so it says whether the GPU's results held
/// and what to do either way. None for a build without candidates.
fn candidate_note(candidates: usize, rows: &[UbatchRow]) -> Option<String> {
    if candidates == 0 {
        return None;
    }
    let patches = crate::output::count(candidates, "candidate Mesa patch");
    let back = "go back to the series-only panvk with `rvl setup --only mesa,icd`";
    let status = |r: &UbatchRow| r.check.as_ref().map(|c| c.status);
    let wrong: Vec<String> = rows
        .iter()
        .filter(|r| status(r) == Some(report::CheckStatus::WrongResults))
        .map(|r| r.ubatch.to_string())
        .collect();
    let passed = rows
        .iter()
        .any(|r| status(r) == Some(report::CheckStatus::Passed));
    Some(if !wrong.is_empty() {
        format!(
            "panvk carries {patches} (rvl setup --mesa-candidates), and the GPU gave wrong results at ubatch {}: {back}, and send this run (--save FILE) with the report",
            wrong.join(", ")
        )
    } else if passed {
        format!(
            "panvk carries {patches} (rvl setup --mesa-candidates); the GPU's results passed the check at every ubatch it ran: this run (--save FILE) is the board evidence the candidates need"
        )
    } else {
        format!(
            "panvk carries {patches} (rvl setup --mesa-candidates), and no check of the GPU's results passed in this run: they are unproven here until one does; {back} to be safe"
        )
    })
}

/// rvl's panvk and its patch level, when it is the panvk the loader loads.
fn rvl_panvk(inv: &Inventory) -> Option<String> {
    crate::mesa::active(inv).map(|p| p.describe())
}

/// `--llama-bench PATH`, else the newest complete rvl prefix's; with the install it belongs
/// to, if any (for its patch level).
fn choose_bench<'a>(
    given: Option<&Path>,
    facts: &'a LlamaFacts,
) -> Result<(String, Option<&'a LlamaInstall>), Error> {
    if let Some(p) = given {
        let shown = p.display().to_string();
        if !p.is_file() {
            return Err(Error::Usage(format!("--llama-bench {shown}: no such file")));
        }
        let inst = install_of(&shown, facts);
        return Ok((shown, inst));
    }
    match llama::newest(facts).filter(|i| i.bench_executable) {
        Some(i) => Ok((i.bench(), Some(i))),
        None => Err(Error::Tool(format!(
            "no llama-bench to run: rvl's llama.cpp is not installed (no {}/{}*/bin/llama-bench); fix: sudo rvl setup --only llama-cpp, or name one with --llama-bench PATH",
            llama::PREFIX_PARENT,
            llama::PREFIX_NAME
        ))),
    }
}

/// Whether the llama.cpp build has int-dot shaders, so the G610 prediction takes rvl's int-dot
/// pipeline for q4_0, q8_0, q4_K and q6_K: its build stamp says so. A llama-bench outside rvl's
/// installs, or an older stamp that does not say, is taken as a build without (Debian 12's
/// glslc has no GL_EXT_integer_dot_product).
fn int_dot_build(install: Option<&LlamaInstall>) -> bool {
    install
        .and_then(|i| i.stamp.as_ref())
        .and_then(|s| s.int_dot_matmul)
        .unwrap_or(false)
}

/// The rvl install a llama-bench path belongs to (its prefix's `bin/`, or setup's wrapper on
/// PATH, which execs the newest complete prefix's), if any.
fn install_of<'a>(bench: &str, facts: &'a LlamaFacts) -> Option<&'a LlamaInstall> {
    let wrapper = crate::setup::paths::LLAMA_WRAPPERS
        .iter()
        .any(|(w, bin)| *bin == "llama-bench" && bench == *w);
    if wrapper {
        return llama::newest(facts);
    }
    facts
        .installs
        .iter()
        .find(|i| bench.starts_with(&format!("{}/bin/", i.prefix)))
}

/// The device ggml's Vulkan backend uses first: the first index of GGML_VK_VISIBLE_DEVICES,
/// else the first device that is not a CPU implementation (ggml skips those).
pub fn ggml_device(probe: &VulkanProbe, visible: Option<&str>) -> Option<VulkanDevice> {
    let d: &DeviceInfo = match visible {
        Some(v) => {
            let i: usize = v.split(',').next()?.trim().parse().ok()?;
            probe.devices.get(i)?
        }
        None => probe.devices.iter().find(|d| !d.is_cpu())?,
    };
    Some(VulkanDevice {
        index: d.index,
        name: d.name.clone(),
        kind: d.kind.clone(),
        driver_name: d.driver_name.clone(),
        driver_info: d.driver_info.clone(),
        driver_version: d.driver_version.clone(),
    })
}

/// The correctness check at `ub`: test-backend-ops on the Vulkan device against the CPU.
fn run_check(
    tool: &str,
    weights: &[gguf::Weight],
    ub: u32,
    plan: &Plan,
    env: &BTreeMap<String, String>,
    progress: bool,
) -> (Check, Option<Case>) {
    let (cases, _) = check::cases(weights, ub);
    let argv = crate::backend_ops::test_argv(tool, check::BACKEND, &cases);
    if progress {
        eprintln!(
            "smoke-bench: ubatch {ub}: checking llama.cpp's Vulkan matmuls against its CPU ({} products)",
            cases.len()
        );
    }
    let raw = run::run(&argv, env, plan.timeout);
    let mut c = check::judge(&raw.ended, &raw.stdout, &raw.stderr, cases.len());
    c.seconds = raw.seconds;
    c.argv = argv;
    if progress {
        eprintln!(
            "smoke-bench: ubatch {ub}: check {} ({}/{} within the bound) in {}",
            c.status.name(),
            c.passed,
            c.cases,
            crate::output::duration(c.seconds)
        );
    }
    let untimed = check::untimed_gpu_case(&c, &raw.stderr);
    (c, untimed)
}

/// Every case, in order, each in its own process, each GPU case after its ubatch's check; a
/// failure is a result and the sweep goes on. Also the first llama-bench JSON line read (its
/// build id, the model's description), and the check's tool (with why it stopped, if it did).
fn sweep(
    plan: &Plan,
    bench: &str,
    checker: Checker,
    env: &BTreeMap<String, String>,
    progress: bool,
) -> (Vec<UbatchRow>, Option<BenchLine>, CheckTool) {
    let Checker { mut tool, weights } = checker;
    let cases = plan.cases();
    let mut first_line: Option<BenchLine> = None;
    let mut done: Vec<(u32, Case)> = Vec::new();
    let mut checks: Vec<(u32, Check)> = Vec::new();
    for (i, &(ub, side)) in cases.iter().enumerate() {
        if let (Side::Gpu, Some(path)) = (side, tool.path.clone()) {
            let (c, untimed) = run_check(&path, &weights, ub, plan, env, progress);
            let stop = check::unusable(&c);
            if stop {
                tool.not_run = c.detail.clone();
                tool.path = None;
            } else {
                checks.push((ub, c));
            }
            if let Some(case) = untimed {
                done.push((ub, case));
                continue;
            }
        }
        let argv = plan.argv(bench, ub, side);
        if progress {
            eprintln!(
                "smoke-bench: [{}/{}] ubatch {ub} on the {}",
                i + 1,
                cases.len(),
                side.name()
            );
        }
        let raw = run::run(&argv, env, plan.timeout);
        let rpc = side == Side::Gpu && !plan.rpc.is_empty();
        let (mut case, line) =
            parse::classify(side, rpc, plan.prompt, &raw.ended, &raw.stdout, &raw.stderr);
        case.seconds = raw.seconds;
        case.argv = argv;
        if progress {
            let result = match case.ok_rate() {
                Some(t) => format!("{} t/s", sig3(t)),
                None => format!("{} ({})", case.status.name(), case.exit),
            };
            eprintln!(
                "smoke-bench: [{}/{}] ubatch {ub} on the {}: {result} in {}",
                i + 1,
                cases.len(),
                side.name(),
                crate::output::duration(case.seconds)
            );
        }
        if first_line.is_none() {
            first_line = line;
        }
        done.push((ub, case));
    }
    let rows = plan
        .ubatches
        .iter()
        .filter_map(|&ub| {
            let pick = |s: Side| {
                done.iter()
                    .find(|(u, c)| *u == ub && c.side == s)
                    .map(|p| p.1.clone())
            };
            let gpu = pick(Side::Gpu)?;
            let cpu = pick(Side::Cpu);
            let g = gpu.ok_rate();
            Some(UbatchRow {
                check: checks.iter().find(|(u, _)| *u == ub).map(|c| c.1.clone()),
                gemm_predicted_tokens_per_s: None,
                measured_over_predicted: None,
                g610_predicted_tokens_per_s: None,
                ubatch: ub,
                gpu_cpu_ratio: g
                    .zip(cpu.as_ref().and_then(Case::ok_rate))
                    .map(|(g, c)| g / c),
                gpu_prompt_5000_s: g.map(|t| f64::from(report::PROMPT_TOKENS) / t),
                gpu,
                cpu,
            })
        })
        .collect();
    (rows, first_line, tool)
}

fn patch_words(inst: &LlamaInstall) -> Option<String> {
    let stamp = inst.stamp.as_ref()?;
    let l = llama::patch_level(stamp, &llama::rvl_series());
    let tiles = match l.key {
        Tiles::Current => "current",
        Tiles::Older => "an older revision",
        Tiles::Missing => "missing",
    };
    Some(format!(
        "{} of {} rvl patches current, tiles patch {tiles}",
        l.current, l.of
    ))
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    plan: &Plan,
    mut model: ModelFile,
    bench: &str,
    install: Option<&LlamaInstall>,
    line: Option<BenchLine>,
    device: Option<VulkanDevice>,
    mut rows: Vec<UbatchRow>,
    prediction: report::GemmPrediction,
    g610: g610::G610Prediction,
) -> Report {
    for r in &mut rows {
        r.g610_predicted_tokens_per_s = g610
            .points
            .iter()
            .find(|p| p.ubatch == r.ubatch)
            .map(|p| p.tokens_per_s);
        r.gemm_predicted_tokens_per_s = prediction
            .points
            .iter()
            .find(|p| p.ubatch == r.ubatch)
            .and_then(|p| p.predicted_tokens_per_s);
        r.measured_over_predicted = r
            .gpu
            .ok_rate()
            .zip(r.gemm_predicted_tokens_per_s)
            .filter(|(_, p)| *p > 0.0)
            .map(|(m, p)| m / p);
    }
    let line = line.unwrap_or_default();
    model.model_type = line.model_type.clone();
    model.n_params = line.model_n_params;
    let mut notes = vec![
        "CPU runs pass -ngl 0 -dev none: with -ngl 0 alone llama.cpp still sends batches of 32 or more tokens to the Vulkan device".to_string(),
        format!(
            "the prefill time is {} tokens at the measured pp{} rate; attention grows with the context, so a real prompt of that length takes somewhat longer",
            report::PROMPT_TOKENS, plan.prompt
        ),
    ];
    match &prediction.error {
        Some(e) => notes.push(format!("no GEMM prediction beside it: {e}")),
        None => notes.push(format!("the GEMM prediction covers the linear layers only (a {} sweep{}); measured/pred below 1 is what attention, norms, RoPE, the LM head and llama.cpp's own overheads cost", plan.sweep.word(), if plan.sweep == SweepSize::Full { "" } else { "; --full screens every kernel" })),
    }
    match &g610.error {
        Some(e) => notes.push(format!("no G610 lab prediction: {e}")),
        None => notes.push(format!("the G610 prediction is the panvk lab's: the model's weight matrices at the inner-loop rates of the llama.cpp pipelines their types run ({}); a board's pp is below it by attention, the other ops, the memory system and the clock it runs at", g610::BASIS)),
    }
    if let Some(d) = &device {
        if d.kind == "cpu" {
            notes.push("the Vulkan device is a CPU implementation (lavapipe): its GPU runs compete with the CPU runs for the same cores".into());
        }
    }
    let problems = rows.iter().any(|r| {
        std::iter::once(&r.gpu)
            .chain(r.cpu.as_ref())
            .any(|c| c.status != report::Status::Ok)
    });
    Report {
        tool: format!("rvl smoke-bench {}", env!("CARGO_PKG_VERSION")),
        model,
        prompt_tokens: plan.prompt,
        rpc: plan
            .rpc
            .iter()
            .map(crate::rpc::Endpoint::to_string)
            .collect(),
        llama_bench: LlamaBench {
            path: bench.to_string(),
            build_commit: line.build_commit,
            build_number: line.build_number,
            backends: line.backends,
            gpu_info: line.gpu_info.filter(|g| !g.trim().is_empty()),
            rvl_prefix: install.map(|i| i.prefix.clone()),
            patch_level: install.and_then(patch_words),
        },
        vulkan_device: device,
        rvl_panvk: None,
        cpu_threads: plan.cpu.then_some(plan.threads),
        case_timeout_s: plan.timeout.as_secs(),
        check_tool: CheckTool::default(),
        best_gpu_ubatch: report::best_gpu_ubatch(&rows),
        gemm_prediction: prediction,
        g610_prediction: g610,
        ubatches: rows,
        notes,
        problems,
    }
}

/// Write the record `rvl serve` reads for this model; its path, or why there is none.
fn record(
    outcome: &PrefillOutcome,
    env: &crate::inventory::Env,
    code: i32,
) -> Result<String, String> {
    let path = saved::record_path(env, &outcome.prefill.model.file_name)
        .ok_or_else(|| "no state directory (neither XDG_STATE_HOME nor HOME is set)".to_string())?;
    let p = Path::new(&path);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    crate::saved::save(p, &Envelope::new(VERB, code, outcome)).map_err(|e| e.to_string())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(ubatch: u32, status: Option<report::CheckStatus>) -> UbatchRow {
        use compare::tests::{case, row};
        let mut r = row(ubatch, case(Side::Gpu, report::Status::Ok, Some(100.0)));
        r.check = status.map(|status| Check {
            status,
            cases: 4,
            passed: 4,
            not_supported: 0,
            first_failure: None,
            exit: "exit status 0".into(),
            detail: None,
            stderr_tail: Vec::new(),
            seconds: 1.0,
            argv: Vec::new(),
        });
        r
    }

    #[test]
    fn a_run_on_candidate_patches_says_whether_the_gpu_held_and_what_to_do() {
        use report::CheckStatus::{Passed, WrongResults};
        let ok = [checked(64, Some(Passed)), checked(512, Some(Passed))];
        assert_eq!(candidate_note(0, &ok), None);
        let good = candidate_note(1, &ok).unwrap();
        assert!(
            good.contains("1 candidate Mesa patch") && good.contains("passed the check"),
            "{good}"
        );
        let bad = candidate_note(
            2,
            &[checked(64, Some(Passed)), checked(512, Some(WrongResults))],
        )
        .unwrap();
        assert!(bad.contains("2 candidate Mesa patches"), "{bad}");
        assert!(bad.contains("wrong results at ubatch 512:"), "{bad}");
        assert!(bad.contains("rvl setup --only mesa,icd"), "{bad}");
        // Nothing checked (no test-backend-ops, or every check errored): unproven, not good.
        for unproven in [
            candidate_note(1, &[checked(64, None)]).unwrap(),
            candidate_note(1, &[checked(64, Some(report::CheckStatus::Error))]).unwrap(),
        ] {
            assert!(
                unproven.contains("no check of the GPU's results passed"),
                "{unproven}"
            );
        }
    }

    #[test]
    fn a_panic_in_the_prediction_becomes_its_error_and_the_hook_comes_back() {
        assert_eq!(contain_panic(|| 7), Ok(7));
        let e = contain_panic(|| -> u32 { panic!("boom at layer 3") }).unwrap_err();
        assert!(
            e.starts_with("internal error in the prediction (a bug"),
            "{e}"
        );
        assert!(e.contains("boom at layer 3"), "{e}");
        assert_eq!(contain_panic(|| "again"), Ok("again"));
    }

    fn dev(index: usize, name: &str, kind: &str) -> DeviceInfo {
        DeviceInfo {
            index,
            name: name.into(),
            kind: kind.into(),
            ..Default::default()
        }
    }

    #[test]
    fn only_a_stamp_that_says_int_dot_makes_the_prediction_take_the_int_dot_pipeline() {
        use crate::inventory::LlamaStamp;
        let with = |int_dot_matmul| LlamaInstall {
            stamp: Some(LlamaStamp {
                int_dot_matmul,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(int_dot_build(Some(&with(Some(true)))));
        assert!(!int_dot_build(Some(&with(Some(false)))));
        assert!(!int_dot_build(Some(&with(None))));
        assert!(!int_dot_build(Some(&LlamaInstall::default())));
        assert!(!int_dot_build(None));
    }

    #[test]
    fn a_llama_bench_in_an_rvl_prefix_reports_that_builds_patch_level() {
        use crate::inventory::{LlamaStamp, StampPatch};
        let series = llama::rvl_series();
        let inst = LlamaInstall {
            prefix: "/opt/rvl/llama.cpp-0.3.36-rvl1".into(),
            stamp: Some(LlamaStamp {
                project: "llama.cpp".into(),
                version: "0.3.36".into(),
                source_sha256: String::new(),
                patches: series
                    .iter()
                    .map(|(n, s)| StampPatch {
                        name: n.clone(),
                        sha256: s.clone(),
                    })
                    .collect(),
                int_dot_matmul: None,
            }),
            stamp_error: None,
            server_executable: true,
            bench_executable: true,
            test_backend_ops_executable: true,
            rpc_server_executable: true,
        };
        let facts = LlamaFacts {
            installs: vec![inst],
            ..Default::default()
        };
        let found = install_of("/opt/rvl/llama.cpp-0.3.36-rvl1/bin/llama-bench", &facts).unwrap();
        assert_eq!(
            patch_words(found).unwrap(),
            format!(
                "{n} of {n} rvl patches current, tiles patch current",
                n = series.len()
            )
        );
        assert!(install_of("/usr/local/bin/llama-bench", &facts).is_none());
        // setup's wrapper runs the newest complete prefix's binary.
        assert_eq!(
            install_of("/usr/local/bin/rvl-llama-bench", &facts).map(|i| i.prefix.as_str()),
            Some("/opt/rvl/llama.cpp-0.3.36-rvl1")
        );
        assert!(install_of("/opt/rvl/llama.cpp-0.3.36-rvl10/bin/llama-bench", &facts).is_none());
    }

    #[test]
    fn the_report_names_rvls_panvk_and_its_level_only_when_the_loader_loads_it() {
        let with_library = |library: &str| {
            crate::mesa::testing::with_rvl_panvk(Inventory::default(), library, &[])
        };
        let rvls = with_library("/opt/rvl/mesa-26.2.4-rvl1/lib/libvulkan_panfrost.so");
        let words = rvl_panvk(&rvls).unwrap();
        assert!(
            words.starts_with("rvl's panvk (Mesa 26.2.4, stock"),
            "{words}"
        );
        assert_eq!(
            rvl_panvk(&with_library("/usr/lib/libvulkan_panfrost.so")),
            None
        );
    }

    #[test]
    fn the_device_ggml_uses_is_the_visible_one_else_the_first_real_gpu() {
        let probe = VulkanProbe {
            error: None,
            devices: vec![
                dev(0, "llvmpipe", "cpu"),
                dev(1, "Mali-G610", "integrated-gpu"),
            ],
        };
        assert_eq!(ggml_device(&probe, None).unwrap().name, "Mali-G610");
        assert_eq!(ggml_device(&probe, Some("0")).unwrap().name, "llvmpipe");
        assert!(ggml_device(&probe, Some("7")).is_none());
        let cpu_only = VulkanProbe {
            error: None,
            devices: vec![dev(0, "llvmpipe", "cpu")],
        };
        assert!(ggml_device(&cpu_only, None).is_none());
    }
}
