//! `rvl smoke-bench`: is the GPU worth using for LLM prefill, at which ubatch, and does the
//! driver survive it? GEMMs at a real model's prefill shapes on any Vulkan device, against a
//! measured FMA peak and the CPU, with the driver failures it hits reported as results.
//!
//! Flow: plan (pure, from flags) -> load Vulkan, pick and open a device -> peak -> sweep
//! (screening + llama.cpp-style layer stacks per precision and ubatch) -> CPU baseline ->
//! report (table or JSON) -> optional save / compare. `--probe-limits` runs the panvk TLS/WLS
//! reproducer instead of the sweep.

pub mod compare;
pub mod cpu;
pub mod devfreq;
pub mod gemm;
pub mod inject;
pub mod kernels;
pub mod model;
pub mod operands;
pub mod peak;
pub mod plan;
pub mod probe;
pub mod render;
pub mod report;
pub mod runner;
pub mod spill;
pub mod sweep;

use std::collections::HashMap;

use crate::host::Root;
use crate::output::{self, Style};
use crate::vulkan as vk;
use crate::{cli, error, exit};

use kernels::Precision;
use plan::{Plan, Size};
use report::{CpuResult, ModelInfo, Report};

pub fn run(args: &cli::BenchArgs) -> anyhow::Result<i32> {
    let plan = Plan::from_args(args).map_err(|e| error::fail(exit::USAGE, e))?;
    let inject = inject::Injector::from_env().map_err(|e| error::fail(exit::USAGE, e))?;
    let extra_tiles = match std::env::var(kernels::TILES_ENV) {
        Ok(spec) => kernels::parse_tiles(&spec).map_err(|e| error::fail(exit::USAGE, e))?,
        Err(_) => Vec::new(),
    };
    // Read the comparison baseline first: a bad file is an input error before any device work.
    let baseline = match &args.compare {
        Some(path) => Some(compare::load(path)?),
        None => None,
    };
    let progress = true;

    let library = std::env::var_os("RVL_VULKAN_LIBRARY").map(std::path::PathBuf::from);
    let instance = vk::Instance::load(&vk::LoadOptions {
        library: library.as_deref(),
        app: c"rvl smoke-bench",
    })?;
    let index = instance.choose(args.device.as_deref())?;
    let gpu = vk::Gpu::open(&instance, index).map_err(|e| {
        error::fail(
            exit::NO_VULKAN,
            format!(
                "could not open Vulkan device {index} ({}): {e}",
                instance.devices[index].name
            ),
        )
    })?;
    if progress {
        eprintln!(
            "smoke-bench: device {index}: {} ({}, {})",
            gpu.info.name, gpu.info.driver_name, gpu.info.kind
        );
    }

    if args.probe_limits {
        let result =
            probe::run(&gpu, progress).map_err(|e| error::fail(exit::PROBLEMS, e.to_string()))?;
        if args.json {
            output::print_json(&result)?;
        } else {
            print!("{}", probe::render(&result, Style::detect()));
        }
        return Ok(exit::OK);
    }

    let mut runner =
        runner::Runner::new(&gpu).map_err(|e| error::fail(exit::NO_VULKAN, e.to_string()))?;
    let clock = devfreq::read(&Root::system());

    // Peaks: fp32 always, fp16 when the device has it.
    let peak_s = match plan.size {
        Size::Quick => 0.05,
        _ => 0.2,
    };
    let mut peaks = Vec::new();
    let mut peak_map = HashMap::new();
    // fp16 and int8 are emulated on CPU devices; their peaks are measured there only with --full.
    for p in [Precision::Fp32, Precision::Fp16, Precision::Int8] {
        if p.unsupported_reason(&gpu.info).is_some()
            || (gpu.info.is_cpu() && p != Precision::Fp32 && plan.size != Size::Full)
        {
            continue;
        }
        if progress {
            eprintln!("smoke-bench: measuring the {} arithmetic peak", p.name());
        }
        let pk = peak::measure(&mut runner, p, peak_s, plan.reps());
        if let Some(g) = pk.gflops {
            peak_map.insert(p, g);
        }
        peaks.push(pk);
    }

    let outcome = sweep::run(
        &mut runner,
        &plan,
        &inject,
        &peak_map,
        &extra_tiles,
        progress,
    );
    let mut ubatches = outcome.ubatches;
    let mut notes = outcome.notes;

    if plan.cpu {
        let layer = plan.model.layer();
        for r in &mut ubatches {
            if progress {
                eprintln!("smoke-bench: CPU baseline, ubatch {}", r.ubatch);
            }
            let reps = if plan.size == Size::Quick { 1 } else { 2 };
            let l = cpu::measure_layer(&layer, r.ubatch, reps);
            let (tps, prompt) = report::predict(l.seconds_per_layer, plan.model.layers, r.ubatch);
            r.gpu_cpu_ratio = r
                .best_stack()
                .and_then(|s| s.predicted_tokens_per_s)
                .map(|g| g / tps);
            r.cpu = Some(CpuResult {
                layer: l,
                predicted_tokens_per_s: tps,
                prompt_5000_s: prompt,
            });
        }
    }
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
    notes.push(report::SCOPE_NOTE.into());

    drop(runner);
    let report = Report {
        schema_version: output::SCHEMA_VERSION,
        tool: format!("rvl smoke-bench {}", env!("CARGO_PKG_VERSION")),
        device: gpu.info.clone(),
        devices: instance.devices.clone(),
        model: ModelInfo {
            model: plan.model.clone(),
            gflop_per_token: plan.model.flops_per_token() / 1e9,
        },
        size: plan.size,
        gpu_clock: clock,
        peak: peaks,
        kernels: outcome.kernels,
        ubatches,
        cpu_threads: plan.cpu.then(cpu::threads),
        notes,
        problems: outcome.problems,
    };

    if let Some(path) = &args.save {
        compare::save(path, &report)?;
    }
    let comparison = baseline.map(|b| compare::compare(&b, &report));
    if args.json {
        let mut doc = serde_json::to_value(&report)?;
        if let (Some(c), Some(obj)) = (&comparison, doc.as_object_mut()) {
            obj.insert("comparison".into(), serde_json::to_value(c)?);
        }
        output::print_json(&doc)?;
    } else {
        let style = Style::detect();
        print!("{}", render::render(&report, style));
        if let Some(c) = &comparison {
            print!("{}", compare::render(c, style));
        }
        if let Some(path) = &args.save {
            println!("saved: {}", path.display());
        }
    }
    Ok(if report.problems {
        exit::PROBLEMS
    } else {
        exit::OK
    })
}
