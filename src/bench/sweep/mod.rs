//! The ubatch sweep: per precision and ubatch, check and time every kernel variant on each GEMM
//! shape of a layer, pick the fastest correct one per shape, then record and time the layer
//! stack with those kernels (and with llama.cpp's tiles), llama.cpp-style. A failure at one
//! ubatch is recorded with its Vulkan call and result and the sweep moves on.
//!
//! Per precision, one layer of weights is packed and uploaded once ([`Sweep::pack_layer`]); then
//! each ubatch goes through four stages, a file each, all over the one [`Sweep`] context:
//! 1. pack: its activations and outputs on the device, bound per GEMM ([`Sweep::pack_ubatch`]);
//! 2. screen: every variant on every distinct shape, checked and timed
//!    ([`Sweep::screen_variants`]; on GPUs also [`Sweep::retime_back_to_back`]);
//! 3. choose: the fastest correct kernel per shape ([`choose::choose_fastest`]);
//! 4. stack: the layer stack recorded and timed with that choice ([`Sweep::stack`]).
//!
//! The decisions (what is skipped and why, which kernel wins, how many layers a stack records,
//! how its time is scaled to the model) are the pure functions after the methods of each stage.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::inject::Injector;
use super::kernels::{self, KernelSpec, Precision};
use super::plan::Plan;
use super::report::{Stack, Status, UbatchResult};
use super::runner::Runner;
use super::spill::KernelDiagnostics;
use crate::vulkan::VkError;

mod choose;
mod pack;
mod screen;
mod stack;

use choose::best_measured;
pub use choose::rank_variants;
use pack::Layer;
pub use stack::empty_stack;

/// Dispatches per command buffer: ggml-vulkan submits about every 100 graph nodes, of which
/// roughly a fifth are these GEMMs, so ~20 GEMM dispatches (4 layers) per command buffer.
pub const DISPATCHES_PER_COMMAND_BUFFER: usize = 20;
/// Sampled entries checked against the f64 reference per GEMM (plus edges and corners).
const CHECK_SAMPLES: usize = 192;
const CHECK_EDGE: u32 = 32;
/// Part of a ubatch's time share that screening may use before it drops the slow tail of the
/// variants: the stacks, which are what the run reports, need the rest.
const SCREEN_SHARE: f64 = 0.5;
/// The llama.cpp-tiles stack runs after the best one has used part of the share; it gets this
/// multiple of the share so that it can still record as many layers.
const LLAMA_STACK_SHARE: f64 = 1.5;
/// The first ubatch ranks the variants for the later ones, so its screening may take this part
/// of the precision's whole budget (the later, ranked ubatches then need fewer screens).
const RANKING_SHARE: f64 = 0.3;
/// The reason a screen left out to keep the run's time budget carries (the human output
/// counts them by it).
pub const SKIPPED_FOR_TIME: &str = "time budget of this run (use --full)";
/// Most whole-stack warm-up submissions.
const MAX_STACK_WARMUP: usize = 50;

pub struct Outcome {
    pub ubatches: Vec<UbatchResult>,
    pub kernels: Vec<KernelDiagnostics>,
    pub notes: Vec<String>,
    pub problems: bool,
}

/// The context every stage works in: the device, the plan, failure injection, the measured
/// peaks, the extra tiles and whether to print progress; and what the stages accumulate.
struct Sweep<'r, 'g> {
    runner: &'r mut Runner<'g>,
    plan: &'r Plan,
    inject: &'r Injector,
    peaks: &'r HashMap<Precision, f64>,
    extra: Vec<KernelSpec>,
    progress: bool,
    results: BTreeMap<u32, UbatchResult>,
    kernels: Vec<KernelDiagnostics>,
    notes: Vec<String>,
    problems: bool,
    /// Set once the device is lost: nothing after that can run.
    lost: Option<VkError>,
}

/// A ubatch's time: its share of the run's budget, counted from when its work began.
#[derive(Clone, Copy)]
struct Budget {
    started: Instant,
    share_s: f64,
}

/// Why a precision or a ubatch has no stack to time.
#[derive(Debug)]
enum NoStack {
    /// A Vulkan call failed: an error, and a problem of the run.
    Failed(VkError),
    /// Not attempted, for this reason.
    Skipped(String),
}

impl NoStack {
    fn into_stack(self, p: Precision, layers_model: u32) -> Stack {
        match self {
            NoStack::Failed(e) => {
                empty_stack(p, "best", Status::Error, Some(e), None, layers_model)
            }
            NoStack::Skipped(r) => {
                empty_stack(p, "best", Status::Skipped, None, Some(r), layers_model)
            }
        }
    }
}

/// Precisions this run measures on this device.
pub fn precisions_for(plan: &Plan, is_cpu: bool) -> Vec<Precision> {
    match &plan.precisions {
        Some(list) => list.clone(),
        // fp16 and int8 are emulated on CPU devices: measuring them there says nothing.
        None if is_cpu => vec![Precision::Fp32],
        None => Precision::ALL.to_vec(),
    }
}

pub fn run(
    runner: &mut Runner,
    plan: &Plan,
    inject: &Injector,
    peaks: &HashMap<Precision, f64>,
    extra: &[KernelSpec],
    progress: bool,
) -> Outcome {
    let precisions = precisions_for(plan, runner.gpu.info.is_cpu());
    let mut s = Sweep {
        runner,
        plan,
        inject,
        peaks,
        extra: extra.to_vec(),
        progress,
        results: plan
            .ubatches
            .iter()
            .map(|u| (*u, UbatchResult::new(*u)))
            .collect(),
        kernels: Vec::new(),
        notes: Vec::new(),
        problems: false,
        lost: None,
    };
    if plan.precisions.is_none() && s.runner.gpu.info.is_cpu() {
        s.notes.push("CPU device: only fp32 is measured by default (fp16/int8 are emulated there); ask with --precision".into());
    }
    for p in &precisions {
        s.precision(*p, precisions.len());
    }
    let ubatches: Vec<UbatchResult> = s.results.into_values().collect();
    let mut kernels = s.kernels;
    for k in &mut kernels {
        k.measured_gflops = best_measured(&ubatches, &k.precision, &k.kernel);
    }
    Outcome {
        ubatches,
        kernels,
        notes: s.notes,
        problems: s.problems,
    }
}

/// What every stage shares, and per precision: which variants run, on the layer
/// [`Sweep::pack_layer`] packs.
impl Sweep<'_, '_> {
    fn say(&self, msg: &str) {
        if self.progress {
            eprintln!("smoke-bench: {msg}");
        }
    }

    fn result_mut(&mut self, ub: u32) -> &mut UbatchResult {
        self.results
            .get_mut(&ub)
            .expect("every ubatch has a result")
    }

    /// Record a failed Vulkan call: a problem of the run, and the end of it if the device is gone.
    fn note_failure(&mut self, e: &VkError) {
        self.problems = true;
        if e.is_device_lost() {
            self.lost = Some(e.clone());
        }
    }

    /// The "best" stack of ubatch `ub` says why there is none.
    fn no_stack_at(&mut self, ub: u32, p: Precision, why: NoStack) {
        if matches!(why, NoStack::Failed(_)) {
            self.problems = true;
        }
        let stack = why.into_stack(p, self.plan.model.layers);
        self.result_mut(ub).stacks.push(stack);
    }

    /// Every ubatch's "best" stack says why there is none.
    fn no_stack_anywhere(&mut self, p: Precision, why: NoStack) {
        if matches!(why, NoStack::Failed(_)) {
            self.problems = true;
        }
        let stack = why.into_stack(p, self.plan.model.layers);
        for r in self.results.values_mut() {
            r.stacks.push(stack.clone());
        }
    }

    fn precision(&mut self, p: Precision, n_precisions: usize) {
        if let Some(reason) = self.precision_skip_reason(p) {
            return self.no_stack_anywhere(p, NoStack::Skipped(reason));
        }
        let mut variants = self.variants(p);
        let layer = match self.pack_layer(p, n_precisions) {
            Ok(layer) => layer,
            Err(why) => return self.no_stack_anywhere(p, why),
        };
        for (ui, ub) in self.plan.ubatches.clone().into_iter().enumerate() {
            if self.lost.is_some() {
                let reason = "not run: the device was lost at a smaller ubatch".to_string();
                self.no_stack_at(ub, p, NoStack::Skipped(reason));
                continue;
            }
            // The first ubatch tries every variant; later ones try them fastest-first, as
            // measured so far, and drop the slow tail when the time budget runs out.
            self.ubatch(&layer, ub, ui == 0, &variants);
            if let Err(e) = self.runner.layouts.reset_sets() {
                self.lost = Some(e);
            }
            variants = rank_variants(&variants, &self.results[&ub].screens, p);
        }
    }

    fn precision_skip_reason(&self, p: Precision) -> Option<String> {
        match &self.lost {
            Some(lost) => Some(format!("not run: the device was lost earlier ({lost})")),
            None => p.unsupported_reason(&self.runner.gpu.info),
        }
    }

    /// The catalogue's and the extra variants of `p` that the device can run; one note per
    /// reason for those it cannot, naming them all.
    fn variants(&mut self, p: Precision) -> Vec<KernelSpec> {
        let dev = &self.runner.gpu.info;
        let all = kernels::catalogue()
            .into_iter()
            .chain(self.extra.iter().cloned());
        let mut variants = Vec::new();
        // (reason, kernels) in the order the reasons first come up.
        let mut skipped: Vec<(String, Vec<String>)> = Vec::new();
        for k in all.filter(|k| k.precision == p) {
            match k.unsupported_reason(dev) {
                Some(r) => match skipped.iter_mut().find(|(why, _)| *why == r) {
                    Some((_, names)) => names.push(k.name.to_string()),
                    None => skipped.push((r, vec![k.name.to_string()])),
                },
                None => variants.push(k),
            }
        }
        for (why, names) in skipped {
            self.notes
                .push(format!("{} {} not run: {why}", p.name(), names.join(", ")));
        }
        variants
    }
}

/// Per ubatch: pack, screen, choose, stack.
impl Sweep<'_, '_> {
    fn ubatch(&mut self, layer: &Layer, ub: u32, try_all: bool, variants: &[KernelSpec]) {
        let budget = Budget {
            started: Instant::now(),
            share_s: self.plan.share_s(ub, layer.n_precisions),
        };
        let ops = match self.pack_ubatch(layer, ub) {
            Ok(ops) => ops,
            Err(why) => return self.no_stack_at(ub, layer.p, why),
        };
        let mut screens = self.screen_variants(layer, &ops, variants, try_all, budget);
        self.retime_back_to_back(layer, &ops, variants, &mut screens);
        let stacks = self.stacks(layer, &ops, variants, &screens, budget);
        let r = self.result_mut(ub);
        r.screens.extend(screens);
        r.stacks.extend(stacks);
    }
}

/// What the stages' tests share: a tiny layer, variants, screens and plans.
#[cfg(test)]
mod test_support {
    use super::screen::screen_skipped;
    use crate::bench::kernels::{self, KernelSpec, Precision};
    use crate::bench::model::{preset, Gemm};
    use crate::bench::plan::{Plan, Size};
    use crate::bench::report::{Screen, Status};

    pub(super) fn tiny() -> [Gemm; 5] {
        // qkv 64x128, o 64x64, gate and up 64x160, down 160x64.
        preset("tiny").unwrap().layer()
    }

    pub(super) fn fp32_variants(n: usize) -> Vec<KernelSpec> {
        kernels::catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Fp32)
            .take(n)
            .collect()
    }

    pub(super) fn screened(k: &KernelSpec, g: &Gemm, status: Status, secs: Option<f64>) -> Screen {
        let mut s = screen_skipped(Precision::Fp32, k, g, "");
        s.status = status;
        s.seconds = secs;
        s
    }

    pub(super) fn plan(model: &str, size: Size) -> Plan {
        Plan {
            model: preset(model).unwrap(),
            ubatches: vec![8, 16],
            precisions: None,
            size,
            cpu: false,
        }
    }

    pub(super) fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_devices_default_to_fp32_only() {
        let args =
            <crate::cli::Cli as clap::Parser>::try_parse_from(["rvl", "smoke-bench"]).unwrap();
        let crate::cli::Command::SmokeBench(a) = args.command else {
            unreachable!()
        };
        let plan = Plan::from_args(&a).unwrap();
        assert_eq!(precisions_for(&plan, true), vec![Precision::Fp32]);
        assert_eq!(precisions_for(&plan, false), Precision::ALL.to_vec());
    }

    #[test]
    fn a_missing_stack_says_why() {
        let e = VkError::new("vkQueueSubmit", ash::vk::Result::ERROR_DEVICE_LOST);
        let failed = NoStack::Failed(e.clone()).into_stack(Precision::Int8, 28);
        assert_eq!(
            (failed.status, failed.error, failed.reason),
            (Status::Error, Some(e), None)
        );
        let skipped = NoStack::Skipped("why".into()).into_stack(Precision::Int8, 28);
        assert_eq!(skipped.status, Status::Skipped);
        assert_eq!(
            (skipped.error, skipped.reason),
            (None, Some("why".to_string()))
        );
        assert_eq!((skipped.label.as_str(), skipped.layers_model), ("best", 28));
    }
}
