//! `--probe-limits`: the panvk TLS/WLS reproducer (research/panvk-oom.md §7). Command buffers
//! are recorded and ended, never submitted, and all stay alive, with a kernel that spills
//! (128 accumulators, like llama.cpp's large tile) and one that does not (8: the panvk lab
//! measured this shader spill-free on a Mali-G610 at 8 and 12, spilling from 16 up). panvk allocates the per-command-buffer scratch (TLS) at vkEndCommandBuffer, so the
//! count at which that call fails shows the limit. A second test records many dispatches of a
//! shared-memory kernel into one command buffer (a WLS buffer per dispatch). Both are bounded.

use std::fmt::Write;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::kernels::{self, Precision, PROBE_SPILL};
use super::runner::Bound;
use super::spill::{self, KernelDiagnostics};
use crate::output::Style;
use crate::vulkan::{Buffer, CommandBuffers, Dispatch, Gpu, Layouts, Pipeline, VkError};

/// At most this many command buffers per kernel (~10-20 alive is what breaks llama.cpp).
pub const MAX_COMMAND_BUFFERS: usize = 64;
/// At most this many dispatches in the WLS test's single command buffer.
pub const MAX_DISPATCHES: usize = 1024;
/// Each test stops after this long, whatever the count.
const TIME_LIMIT: Duration = Duration::from_secs(20);
/// 11008 rows / 128 per workgroup: one large-tile FFN dispatch at 72 tokens.
const GROUPS: u32 = 86;
/// Accumulators of the spilling probe kernel (llama.cpp's large tile).
const SPILLING_NACC: u32 = 128;
/// Accumulators of the probe kernel that must not spill on Mali: 0 spills and 38 registers with
/// Mesa 26.1.6 in the panvk lab (16 already spills 5:21, 32 spills 69:85).
const CLEAN_NACC: u32 = 8;

#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// 1-based count of the command buffer (or dispatch) whose call failed.
    pub at: usize,
    pub error: VkError,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeRun {
    pub test: String,
    pub kernel: String,
    pub accumulators: u32,
    pub diagnostics: KernelDiagnostics,
    pub recorded: usize,
    pub bound: usize,
    pub failure: Option<Failure>,
    pub stopped_by_time: bool,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeResult {
    pub device: String,
    pub driver: String,
    pub runs: Vec<ProbeRun>,
}

pub fn run(gpu: &Gpu, progress: bool) -> Result<ProbeResult, VkError> {
    let layouts = Layouts::new(gpu, 4)?;
    let src = Buffer::storage(gpu, u64::from(GROUPS) * 128 * 64 * 8)?;
    let dst = Buffer::storage(gpu, u64::from(GROUPS) * 128 * 4)?;
    let set = layouts.bind(&[&src, &src, &dst])?;
    let bound = Bound {
        m: 0,
        n: 0,
        k: 0,
        ldk: 0,
        set,
        out: None,
    };
    let mut runs = Vec::new();
    for (test, nacc) in [
        ("command buffers", SPILLING_NACC),
        ("command buffers", CLEAN_NACC),
        ("dispatches in one command buffer", CLEAN_NACC),
    ] {
        let name = format!("probe-spill-{nacc}");
        if progress {
            eprintln!("smoke-bench: probe: {test}, {name} (building the pipeline)");
        }
        let spec = kernels::fixed(&name, Precision::Fp32, PROBE_SPILL, vec![nacc], 128, GROUPS);
        let pipe = Pipeline::new(gpu, &layouts, spec.spirv, &spec.spec)?;
        let diagnostics = spill::diagnose(&gpu.info, "fp32", &name, pipe.statistics(gpu));
        let per_cb = test.starts_with("dispatches");
        let limit = if per_cb {
            MAX_DISPATCHES
        } else {
            MAX_COMMAND_BUFFERS
        };
        if progress {
            eprintln!("smoke-bench: probe: recording up to {limit} {test}");
        }
        let start = Instant::now();
        let (recorded, failure, stopped_by_time) = if per_cb {
            record_dispatches(gpu, &layouts, &pipe, &bound, limit)
        } else {
            record_command_buffers(gpu, &layouts, &pipe, &bound, limit)
        };
        runs.push(ProbeRun {
            test: test.into(),
            kernel: name,
            accumulators: nacc,
            diagnostics,
            recorded,
            bound: limit,
            failure,
            stopped_by_time,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    Ok(ProbeResult {
        device: gpu.info.name.clone(),
        driver: format!("{} {}", gpu.info.driver_name, gpu.info.driver_info),
        runs,
    })
}

/// One dispatch of the probe kernel (it reads no push constants).
fn dispatch(pipe: &Pipeline, b: &Bound) -> Dispatch {
    Dispatch {
        pipeline: pipe.handle(),
        set: b.set,
        push: None,
        groups: [GROUPS, 1, 1],
    }
}

fn record_command_buffers(
    gpu: &Gpu,
    layouts: &Layouts,
    pipe: &Pipeline,
    b: &Bound,
    limit: usize,
) -> (usize, Option<Failure>, bool) {
    let start = Instant::now();
    // Never submitted; all freed together when this goes out of scope.
    let mut alive: Vec<CommandBuffers> = Vec::new();
    let mut outcome = (0, None, false);
    for i in 0..limit {
        if start.elapsed() > TIME_LIMIT {
            outcome.2 = true;
            break;
        }
        let step = (|| -> Result<(), VkError> {
            alive.push(CommandBuffers::allocate(gpu, 1)?);
            let mut rec = alive[alive.len() - 1].begin(0)?;
            rec.dispatch(layouts, &dispatch(pipe, b));
            rec.end()
        })();
        match step {
            Ok(()) => outcome.0 = i + 1,
            Err(error) => {
                outcome.1 = Some(Failure { at: i + 1, error });
                break;
            }
        }
    }
    outcome
}

fn record_dispatches(
    gpu: &Gpu,
    layouts: &Layouts,
    pipe: &Pipeline,
    b: &Bound,
    limit: usize,
) -> (usize, Option<Failure>, bool) {
    let failed_at_start = |error| (0, Some(Failure { at: 1, error }), false);
    // Never submitted; freed when this goes out of scope.
    let cbs = match CommandBuffers::allocate(gpu, 1) {
        Ok(c) => c,
        Err(error) => return failed_at_start(error),
    };
    let start = Instant::now();
    let mut rec = match cbs.begin(0) {
        Ok(r) => r,
        Err(error) => return failed_at_start(error),
    };
    let mut outcome = (0, None, false);
    let one = dispatch(pipe, b);
    for i in 0..limit {
        if start.elapsed() > TIME_LIMIT {
            outcome.2 = true;
            break;
        }
        rec.dispatch(layouts, &one);
        outcome.0 = i + 1;
    }
    if let Err(error) = rec.end() {
        outcome.1 = Some(Failure {
            at: outcome.0,
            error,
        });
    }
    outcome
}

pub fn render(r: &ProbeResult, style: Style) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {} ({})",
        style.bold("rvl smoke-bench --probe-limits:"),
        r.device,
        r.driver
    );
    let _ = writeln!(
        o,
        "recorded and ended without submitting; all stay alive until the end of each test"
    );
    for run in &r.runs {
        let spills = run
            .diagnostics
            .spills
            .map(|s| format!("{s:.0} spills"))
            .unwrap_or_else(|| "spills not exposed".into());
        let scratch = run
            .diagnostics
            .scratch
            .as_ref()
            .map(|s| {
                format!(
                    ", predicted panvk scratch {:.0} MiB per command buffer",
                    s.bytes_per_command_buffer as f64 / 1048576.0
                )
            })
            .unwrap_or_default();
        let verdict = match &run.failure {
            Some(f) => style.red(&format!("failed at {} #{}: {}", run.test, f.at, f.error)),
            None if run.stopped_by_time => style.yellow(&format!(
                "{} recorded, stopped by the time limit",
                run.recorded
            )),
            None => style.green(&format!(
                "{} of {} recorded, no failure",
                run.recorded, run.bound
            )),
        };
        let _ = writeln!(
            o,
            "  {:<32} {:<16} ({} accumulators, {spills}{scratch}): {verdict}",
            run.test, run.kernel, run.accumulators
        );
    }
    o
}
