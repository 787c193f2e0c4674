//! `rvl smoke-bench`: is the GPU worth using for LLM prefill, at which ubatch, and does the
//! driver survive it? GEMMs at a real model's prefill shapes on any Vulkan device, against a
//! measured FMA peak and the CPU, with the driver failures it hits reported as results.
//!
//! Flow: plan (pure, from flags) -> load Vulkan, pick and open a device -> peak -> sweep
//! (screening + llama.cpp-style layer stacks per precision and ubatch) -> llama.cpp's own
//! products at the same shapes on its CPU backend and this device ([`llamacpp`]) -> CPU
//! baseline (llama.cpp's CPU, else matrixmultiply's sgemm) -> report (table or JSON) ->
//! optional save / compare. `--probe-limits` runs the panvk TLS/WLS
//! reproducer instead of the sweep.

pub mod compare;
pub mod cpu;
pub mod devfreq;
pub mod gemm;
pub mod inject;
pub mod kernels;
pub mod llamacpp;
pub mod model;
pub mod operands;
pub mod outcome;
pub mod peak;
pub mod plan;
pub mod probe;
pub mod render;
pub mod report;
pub mod runner;
pub mod spill;
pub mod sweep;
pub mod tasksplit;
pub mod throughput;

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::cli;
use crate::error::Error;
use crate::host::Root;
use crate::output::Envelope;
use crate::settings::Settings;
use crate::vulkan::{Gpu, Instance, LoadOptions};

use kernels::{KernelSpec, Precision};
use peak::Peak;
use plan::{Plan, Size};
use report::{Baseline, BaselineSource, CpuBaseline, CpuResult, ModelInfo, Report, UbatchResult};
use runner::Runner;

pub use outcome::{BenchOutcome, SweepOutcome};

/// The verb, as the envelope names it.
const VERB: &str = "smoke-bench";

pub fn run(args: &cli::BenchArgs, settings: &Settings) -> anyhow::Result<BenchOutcome> {
    let inputs = Inputs::read(args, settings)?;
    let progress = settings.progress(args.json);
    let instance = load_vulkan(settings)?;
    let gpu = open_device(&instance, args.device.as_deref(), progress)?;
    if args.probe_limits {
        return Ok(BenchOutcome::Limits(probe_limits(&gpu, progress)?));
    }
    let devfreq_root = settings
        .vars
        .devfreq_root
        .as_ref()
        .map_or_else(Root::system, Root::new);
    let pin = args
        .max_clock
        .then(|| {
            crate::clockpin::pin(
                &devfreq_root,
                VERB,
                crate::clockpin::OnSignal::RestoreAndExit,
            )
        })
        .transpose()?;
    if let (Some(p), true) = (&pin, progress) {
        eprintln!(
            "smoke-bench: GPU clock held at the top: {} {} -> {} (now {})",
            p.change.attribute,
            p.change.from,
            p.change.to,
            p.now()
        );
    }
    let mut clock = Clock {
        root: devfreq_root,
        pin,
        samples: Vec::new(),
        progress,
    };
    let mut report = measure(&inputs, &instance, &gpu, settings, &mut clock)?;
    // Restored here, before the report is printed (Drop also covers errors and panics above).
    if let Some(p) = clock.pin.take() {
        report.clock_pin = Some(report::ClockPinReport {
            change: p.change.clone(),
            samples: std::mem::take(&mut clock.samples),
        });
    }
    let outcome = SweepOutcome {
        comparison: inputs.baseline.map(|b| compare::compare(&b, &report)),
        report,
        saved: None,
    };
    Ok(BenchOutcome::Sweep(Box::new(save(outcome, args)?)))
}

/// Everything read from the flags and settings before any device work, so a bad flag or a
/// bad `--compare` file is an input error first.
struct Inputs {
    plan: Plan,
    inject: inject::Injector,
    extra_tiles: Vec<KernelSpec>,
    /// The `--compare` document.
    baseline: Option<Value>,
    /// The test-backend-ops for llama.cpp's columns, or why there is none.
    llama_tool: Result<String, String>,
}

impl Inputs {
    fn read(args: &cli::BenchArgs, settings: &Settings) -> Result<Inputs, Error> {
        let vars = &settings.vars;
        if let Some(path) = &args.save {
            compare::check_writable(path)?;
        }
        Ok(Inputs {
            plan: Plan::from_args(args).map_err(Error::Usage)?,
            inject: inject::Injector::from_setting(vars.bench_inject_failure.as_deref())
                .map_err(Error::Usage)?,
            extra_tiles: match &vars.bench_tiles {
                Some(spec) => kernels::parse_tiles(spec).map_err(Error::Usage)?,
                None => Vec::new(),
            },
            baseline: args.compare.as_deref().map(compare::load).transpose()?,
            llama_tool: llamacpp::find(args.test_backend_ops.as_deref(), &settings.env)?,
        })
    }
}

fn load_vulkan(settings: &Settings) -> Result<Instance, Error> {
    Instance::load(&LoadOptions {
        library: settings.vars.vulkan_library.as_deref(),
        app: c"rvl smoke-bench",
    })
}

/// Choose (`--device` or the best) and open the device.
fn open_device(instance: &Instance, wanted: Option<&str>, progress: bool) -> Result<Gpu, Error> {
    let index = instance.choose(wanted)?;
    let gpu = Gpu::open(instance, index).map_err(|source| Error::DeviceUnusable {
        context: format!(
            "could not open Vulkan device {index} ({})",
            instance.devices[index].name
        ),
        source,
    })?;
    if progress {
        eprintln!(
            "smoke-bench: device {index}: {} ({}, {})",
            gpu.info.name, gpu.info.driver_name, gpu.info.kind
        );
    }
    Ok(gpu)
}

fn probe_limits(gpu: &Gpu, progress: bool) -> Result<probe::ProbeResult, Error> {
    probe::run(gpu, progress).map_err(|source| Error::Vulkan {
        context: "--probe-limits could not set up its test kernels".into(),
        source,
    })
}

/// The devfreq root, and with `--max-clock` the pin and the clock read around each part.
struct Clock {
    root: Root,
    pin: Option<crate::clockpin::ClockPin>,
    samples: Vec<(String, String)>,
    progress: bool,
}

impl Clock {
    /// Read the clock when it is pinned, print it and keep it: `when` is "before fp32 peak".
    fn sample(&mut self, when: &str) {
        let Some(p) = &self.pin else { return };
        let now = p.now();
        if self.progress {
            eprintln!("smoke-bench: GPU clock {when}: {now}");
        }
        self.samples.push((when.to_string(), now));
    }
}

/// Peaks, the sweep and the CPU baseline, into a report.
fn measure(
    inputs: &Inputs,
    instance: &Instance,
    gpu: &Gpu,
    settings: &Settings,
    clock: &mut Clock,
) -> Result<Report, Error> {
    let progress = clock.progress;
    let plan = &inputs.plan;
    let mut runner = Runner::new(gpu).map_err(|source| Error::DeviceUnusable {
        context: format!("could not set up compute on {}", gpu.info.name),
        source,
    })?;
    let gpu_clock = devfreq::read(&clock.root);
    let (peaks, peak_map) = measure_peaks(&mut runner, plan, clock);
    clock.sample("before the sweep");
    let outcome = sweep::run(
        &mut runner,
        plan,
        &inputs.inject,
        &peak_map,
        &inputs.extra_tiles,
        progress,
    );
    clock.sample("after the sweep");
    drop(runner);
    let mut ubatches = outcome.ubatches;
    let llama = llama_side(inputs, gpu, &ubatches, progress);
    llamacpp::layers(&llama, plan, &mut ubatches);
    let threads = cpu::threads(settings.vars.matmul_threads.as_deref());
    let mut sgemm = false;
    if plan.cpu {
        sgemm = cpu_baseline(plan, &mut ubatches, threads, progress);
    }
    let cpu_baseline = baselines(plan, &mut ubatches, &llama, threads);
    let mut notes = outcome.notes;
    notes.extend(clock_note(
        &gpu.info,
        gpu_clock.as_ref(),
        clock.pin.is_some(),
    ));
    notes.extend(notes_for(gpu, &ubatches));
    Ok(Report {
        tool: format!("rvl smoke-bench {}", env!("CARGO_PKG_VERSION")),
        device: gpu.info.clone(),
        devices: instance.devices.clone(),
        model: ModelInfo {
            model: plan.model.clone(),
            gflop_per_token: plan.model.flops_per_token() / 1e9,
        },
        size: plan.size,
        gpu_clock,
        clock_pin: None,
        peak: peaks,
        kernels: outcome.kernels,
        ubatches,
        cpu_threads: sgemm.then_some(threads),
        cpu_baseline,
        llama_cpp: llama,
        notes,
        problems: outcome.problems,
    })
}

/// Arithmetic peaks: fp32 always, fp16 and int8 when the device has them. fp16 and int8 are
/// emulated on CPU devices; their peaks are measured there only with --full.
fn measure_peaks(
    runner: &mut Runner,
    plan: &Plan,
    clock: &mut Clock,
) -> (Vec<Peak>, HashMap<Precision, f64>) {
    let progress = clock.progress;
    let peak_s = match plan.size {
        Size::Quick => 0.05,
        _ => 0.2,
    };
    let info = runner.gpu.info.clone();
    let mut peaks = Vec::new();
    let mut peak_map = HashMap::new();
    for p in [Precision::Fp32, Precision::Fp16, Precision::Int8] {
        if p.unsupported_reason(&info).is_some()
            || (info.is_cpu() && p != Precision::Fp32 && plan.size != Size::Full)
        {
            continue;
        }
        if progress {
            eprintln!("smoke-bench: measuring the {} arithmetic peak", p.name());
        }
        // vkpeak's 16-invocation workgroups beside the 256 ones (GPUs only): where they run
        // slower, narrow workgroups reach fewer cores (Mesa up to 25.3, tasksplit.rs).
        let narrow = p == Precision::Fp32 && !info.is_cpu();
        for local in std::iter::once(peak::LOCAL).chain(narrow.then_some(peak::NARROW)) {
            let what = if local == peak::LOCAL {
                format!("the {} peak", p.name())
            } else {
                format!("the {} peak with {local}-invocation workgroups", p.name())
            };
            clock.sample(&format!("before {what}"));
            let root = clock.root.clone();
            let cur_freq = move || devfreq::read(&root).and_then(|d| d.cur_freq_hz);
            let pk = peak::measure(runner, p, local, peak_s, plan.reps(), &cur_freq);
            clock.sample(&format!("after {what}"));
            if let (Some(g), false) = (pk.gflops, pk.is_narrow()) {
                peak_map.insert(p, g);
            }
            peaks.push(pk);
        }
    }
    (peaks, peak_map)
}

/// llama.cpp's products at the sweep's shapes on its CPU backend (unless --no-cpu) and on
/// this device, when a test-backend-ops is there.
fn llama_side(
    inputs: &Inputs,
    gpu: &Gpu,
    ubatches: &[UbatchResult],
    progress: bool,
) -> llamacpp::LlamaCpp {
    let tool = match &inputs.llama_tool {
        Ok(t) => t,
        Err(why) => {
            return llamacpp::LlamaCpp {
                not_run: Some(why.clone()),
                ..Default::default()
            }
        }
    };
    let mut precisions: Vec<Precision> = ubatches
        .iter()
        .flat_map(|u| u.screens.iter().map(|s| s.precision))
        .collect();
    precisions.sort_unstable();
    precisions.dedup();
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads =
        crate::prefill::plan::big_cores(&crate::host::cpus::capacities(&Root::system()), available);
    llamacpp::run(&llamacpp::Job {
        tool,
        plan: &inputs.plan,
        precisions: &precisions,
        device_index: gpu.info.index,
        cpu_device: gpu.info.is_cpu(),
        cpu_threads: inputs.plan.cpu.then_some(threads),
        progress,
    })
}

/// matrixmultiply's sgemm of the layer, per ubatch where llama.cpp's CPU gave no whole layer.
/// True when it ran for any.
fn cpu_baseline(
    plan: &Plan,
    ubatches: &mut [UbatchResult],
    threads: usize,
    progress: bool,
) -> bool {
    let layer = plan.model.layer();
    let reps = if plan.size == Size::Quick { 1 } else { 2 };
    let mut ran = false;
    for r in ubatches {
        if llamacpp::cpu_best(r).is_some() {
            continue;
        }
        if progress {
            eprintln!(
                "smoke-bench: CPU baseline (matrixmultiply sgemm), ubatch {}",
                r.ubatch
            );
        }
        let l = cpu::measure_layer(&layer, r.ubatch, reps, threads);
        let (tps, prompt) = report::predict(l.seconds_per_layer, plan.model.layers, r.ubatch);
        r.cpu = Some(CpuResult {
            layer: l,
            predicted_tokens_per_s: tps,
            prompt_5000_s: prompt,
        });
        ran = true;
    }
    ran
}

/// Each ubatch's CPU figure (llama.cpp's fastest CPU layer, else matrixmultiply's) and the
/// best stack's ratio to it; what the run's baseline was, in a word and a sentence.
fn baselines(
    plan: &Plan,
    ubatches: &mut [UbatchResult],
    llama: &llamacpp::LlamaCpp,
    sgemm_threads: usize,
) -> CpuBaseline {
    let (mut from_llama, mut from_sgemm) = (0, 0);
    for u in ubatches.iter_mut() {
        let b = match (llamacpp::cpu_best(u), &u.cpu) {
            (Some((t, tps)), _) => Some(Baseline {
                source: BaselineSource::LlamaCpp,
                ggml_type: Some(t.to_string()),
                predicted_tokens_per_s: tps,
            }),
            (None, Some(c)) => Some(Baseline {
                source: BaselineSource::Matrixmultiply,
                ggml_type: None,
                predicted_tokens_per_s: c.predicted_tokens_per_s,
            }),
            (None, None) => None,
        };
        match b.as_ref().map(|b| b.source) {
            Some(BaselineSource::LlamaCpp) => from_llama += 1,
            Some(BaselineSource::Matrixmultiply) => from_sgemm += 1,
            None => {}
        }
        u.gpu_cpu_ratio = b.as_ref().and_then(|b| {
            u.best_stack()
                .and_then(|s| s.predicted_tokens_per_s)
                .map(|g| g / b.predicted_tokens_per_s)
        });
        u.cpu_baseline = b;
    }
    let llama_what = format!(
        "llama.cpp's CPU backend (test-backend-ops perf, {} threads; weights as llama.cpp loads them, repacked where it repacks), the fastest weight type per ubatch",
        llama.cpu_threads.unwrap_or(0)
    );
    let sgemm_what = format!(
        "matrixmultiply's fp32 sgemm on {sgemm_threads} threads, not llama.cpp's quantised CPU path (int8 dot products, Q4_0 repacking), which is several times faster for Q4 models: GPU/CPU flatters the GPU{}",
        match &llama.not_run {
            Some(why) => format!(" (no llama.cpp: {why})"),
            None => String::new(),
        }
    );
    let (source, what) = match (from_llama, from_sgemm) {
        _ if !plan.cpu => ("none", "no CPU baseline (--no-cpu)".to_string()),
        (0, 0) => ("none", "no CPU baseline".to_string()),
        (_, 0) => ("llama_cpp", llama_what),
        (0, _) => ("matrixmultiply", sgemm_what),
        _ => (
            "mixed",
            format!("{llama_what} where it measured the whole layer; elsewhere {sgemm_what}"),
        ),
    };
    CpuBaseline {
        source: source.into(),
        what,
    }
}

/// A GPU measured under a load-following governor: what that does to short timed runs, and the
/// flag that takes the clock out of the question (docs/panvk-lab.md, "The clock").
fn clock_note(
    dev: &crate::vulkan::DeviceInfo,
    clock: Option<&devfreq::Devfreq>,
    pinned: bool,
) -> Option<String> {
    let c = clock?;
    let governor = c.governor.as_deref()?;
    if pinned || dev.is_cpu() || governor == "performance" {
        return None;
    }
    Some(format!(
        "the GPU clock followed governor {governor} (at the start {} of {} MHz): panthor's \
         devfreq samples the load every 50 ms, so a timed run that starts after an idle gap runs \
         partly below the top OPP; sudo rvl smoke-bench --max-clock measures at the top OPP and \
         restores the governor afterwards",
        c.cur_freq_hz
            .map_or("?".into(), |f| (f / 1_000_000).to_string()),
        c.max_freq_hz
            .map_or("?".into(), |f| (f / 1_000_000).to_string()),
    ))
}

/// The report's closing notes: what the numbers do and do not say.
fn notes_for(gpu: &Gpu, ubatches: &[UbatchResult]) -> Vec<String> {
    let mut notes = Vec::new();
    if gpu.info.is_cpu() {
        notes.push("the chosen Vulkan device is a CPU implementation; it competes with the CPU baseline for the same cores".into());
    }
    if ubatches
        .iter()
        .flat_map(|u| &u.stacks)
        .any(|s| s.extrapolated || s.sliced)
    {
        notes.push("stacks marked ~ recorded fewer layers (or matrix outputs) than the model has, to fit the run's time; their times are scaled to the whole model".into());
    }
    notes.extend(peak_loop_below_a_gemm(ubatches));
    notes.push(report::SCOPE_NOTE.into());
    notes
}

/// A note per precision whose measured peak loop a correct GEMM screen outran: then that loop
/// does not saturate this device (an H200's int8 loop measured 31.6 TOP/s, the int8 tiles ran
/// at 65.8), and efficiencies above 100 % are relative to the loop, not to the hardware.
fn peak_loop_below_a_gemm(ubatches: &[UbatchResult]) -> Vec<String> {
    let mut fastest: BTreeMap<Precision, &report::Screen> = BTreeMap::new();
    for s in ubatches.iter().flat_map(|u| &u.screens) {
        if s.status != report::Status::Ok || s.efficiency.is_none_or(|e| e <= 1.0) {
            continue;
        }
        let best = fastest.entry(s.precision).or_insert(s);
        if s.efficiency > best.efficiency {
            *best = s;
        }
    }
    fastest
        .values()
        .map(|s| {
            let (gflops, e) = (s.gflops.unwrap_or(0.0), s.efficiency.unwrap_or(0.0));
            format!(
                "{}: {} on {} reached {} GFLOP/s, {}x the measured peak loop ({} GFLOP/s): that loop does not saturate this device, so {} efficiencies above 100 % are relative to it, not to the hardware",
                s.precision.name(),
                s.kernel_label(),
                s.gemm,
                crate::output::sig3(gflops),
                crate::output::sig3(e),
                crate::output::sig3(gflops / e),
                s.precision.name()
            )
        })
        .collect()
}

/// The GEMM-only prediction `smoke-bench --gguf` sets beside llama.cpp's measurement: a quick
/// sweep (no CPU baseline) of a model with `shapes`, on Vulkan device `device` (None: the
/// best), in `precision` when the model's file type names one. Per ubatch, the fastest stack
/// that ran.
pub fn predict(
    shapes: &crate::prefill::gguf::Shapes,
    ubatches: &[u32],
    size: Size,
    precision: Option<&str>,
    device: Option<usize>,
    settings: &Settings,
    progress: bool,
) -> Result<(String, Vec<crate::prefill::report::GemmPoint>), Error> {
    // The shapes come from a file: only a real model's (every size below fits a u64).
    shapes.check().map_err(Error::BadInput)?;
    // Plans hold a preset (&'static); a model read from a file lives for this one run, so
    // leaking its few bytes is the simple way to give it that lifetime.
    let model: &'static model::Model = Box::leak(Box::new(model::Model {
        name: "the GGUF's shapes",
        hidden: shapes.hidden,
        ffn: shapes.ffn,
        layers: shapes.layers,
        heads: shapes.heads,
        kv_heads: shapes.kv_heads,
    }));
    let precisions = precision
        .map(|p| Precision::parse(p).map(|p| vec![p]))
        .transpose()
        .map_err(Error::Usage)?;
    let inputs = Inputs {
        plan: Plan {
            model,
            ubatches: ubatches.to_vec(),
            precisions,
            size,
            cpu: false,
        },
        inject: inject::Injector::default(),
        extra_tiles: Vec::new(),
        baseline: None,
        llama_tool: Err("not run for --gguf's prediction".into()),
    };
    let instance = load_vulkan(settings)?;
    let wanted = device.map(|i| i.to_string());
    let gpu = open_device(&instance, wanted.as_deref(), progress)?;
    let mut clock = Clock {
        root: Root::system(),
        pin: None,
        samples: Vec::new(),
        progress,
    };
    let report = measure(&inputs, &instance, &gpu, settings, &mut clock)?;
    let points = report
        .ubatches
        .iter()
        .map(|u| {
            let best = u.best_stack();
            crate::prefill::report::GemmPoint {
                ubatch: u.ubatch,
                precision: best.map(|s| s.precision.name().to_string()),
                predicted_tokens_per_s: best.and_then(|s| s.predicted_tokens_per_s),
            }
        })
        .collect::<Vec<_>>();
    if points.iter().all(|p| p.predicted_tokens_per_s.is_none()) {
        // Say why, once per distinct reason: a shape above the device's buffer limit, more
        // memory than there is, a failed Vulkan call.
        let mut why: Vec<String> = Vec::new();
        for s in report.ubatches.iter().flat_map(|u| &u.stacks) {
            let r = s
                .reason
                .clone()
                .or_else(|| s.error.as_ref().map(|e| e.to_string()));
            if let Some(r) = r.map(|r| format!("{}: {r}", s.precision.name())) {
                if !why.contains(&r) {
                    why.push(r);
                }
            }
        }
        return Err(Error::BadInput(format!(
            "no kernel ran at the model's shapes ({})",
            if why.is_empty() {
                "no reason recorded".to_string()
            } else {
                why.join("; ")
            }
        )));
    }
    Ok((format!("{}: {}", gpu.info.index, gpu.info.name), points))
}

/// `--save FILE`: the document `--json` prints, envelope included.
fn save(mut outcome: SweepOutcome, args: &cli::BenchArgs) -> Result<SweepOutcome, Error> {
    if let Some(path) = &args.save {
        // The envelope of the Sweep variant: untagged, it serialises as its SweepOutcome.
        compare::save(path, &Envelope::new(VERB, outcome.exit_code(), &outcome))?;
        outcome.saved = Some(path.clone());
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::{Screen, Status};

    fn screen(precision: Precision, kernel: &str, gflops: f64, peak: f64) -> Screen {
        Screen {
            precision,
            kernel: kernel.into(),
            gemm: "down".into(),
            shape: "11008x2048".into(),
            outputs: 2048,
            status: Status::Ok,
            error: None,
            reason: None,
            seconds: Some(1.0),
            gflops: Some(gflops),
            efficiency: Some(gflops / peak),
            max_error: Some(0.0),
            tolerance: 1e-5,
            split_k: None,
        }
    }

    #[test]
    fn a_gemm_faster_than_its_peak_loop_says_the_loop_is_no_ceiling_once_per_precision() {
        let mut u = UbatchResult::new(512);
        u.screens = vec![
            screen(Precision::Int8, "tiled-64x128", 61_800.0, 31_600.0),
            screen(Precision::Int8, "tiled-64x128-split4", 65_800.0, 31_600.0),
            screen(Precision::Fp32, "tiled-64x128-split2", 41_600.0, 63_500.0),
        ];
        let mut wrong = screen(Precision::Fp16, "tiled-64x64", 90_000.0, 66_400.0);
        wrong.status = Status::Wrong;
        u.screens.push(wrong);
        let notes = peak_loop_below_a_gemm(&[u]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("int8: tiled-64x128-split4 on down reached 65800 GFLOP/s, 2.08x the measured peak loop (31600 GFLOP/s)"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn a_gpu_left_to_a_load_following_governor_gets_the_max_clock_recommendation() {
        use crate::vulkan::info::tests_support::dev;
        let gpu = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        let node = devfreq::Devfreq {
            device: "fb000000.gpu".into(),
            cur_freq_hz: Some(300_000_000),
            max_freq_hz: Some(1_000_000_000),
            governor: Some("simple_ondemand".into()),
        };
        let note = clock_note(&gpu, Some(&node), false).unwrap();
        assert!(
            note.starts_with(
                "the GPU clock followed governor simple_ondemand (at the start 300 of 1000 MHz)"
            ),
            "{note}"
        );
        assert!(note.contains("sudo rvl smoke-bench --max-clock"), "{note}");
        // Pinned, already at performance, a CPU device or no node: nothing to recommend.
        assert_eq!(clock_note(&gpu, Some(&node), true), None);
        let perf = devfreq::Devfreq {
            governor: Some("performance".into()),
            ..node.clone()
        };
        assert_eq!(clock_note(&gpu, Some(&perf), false), None);
        let cpu = dev(0, "llvmpipe", "cpu", "MESA_LLVMPIPE");
        assert_eq!(clock_note(&cpu, Some(&node), false), None);
        assert_eq!(clock_note(&gpu, None, false), None);
    }
}
