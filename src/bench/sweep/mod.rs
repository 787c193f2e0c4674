//! The ubatch sweep: per precision and ubatch, check and time every kernel variant on each GEMM
//! shape of a layer, pick the fastest correct one per shape, then record and time the layer
//! stack with those kernels (and with llama.cpp's tiles), llama.cpp-style. A failure at one
//! ubatch is recorded with its Vulkan call and result and the sweep moves on.
//!
//! Per precision, one layer of weights is packed and uploaded once ([`Sweep::pack_layer`]); then
//! each ubatch goes through four stages, all over the one [`Sweep`] context:
//! 1. pack: its activations and outputs on the device, bound per GEMM ([`Sweep::pack_ubatch`]);
//! 2. screen: every variant on every distinct shape, checked and timed
//!    ([`Sweep::screen_variants`]; on GPUs also [`Sweep::retime_back_to_back`]);
//! 3. choose: the fastest correct kernel per shape ([`choose_fastest`]);
//! 4. stack: the layer stack recorded and timed with that choice ([`Sweep::stack`]).
//!
//! The decisions (what is skipped and why, which kernel wins, how many layers a stack records,
//! how its time is scaled to the model) are the pure functions after the stages.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::gemm::{self, DeviceMatrix};
use super::inject::Injector;
use super::kernels::{self, KernelSpec, Precision};
use super::model::Gemm;
use super::operands::{check_points, footprint, max_error, pack, random_values, Packed, Side};
use super::plan::{Plan, Size};
use super::report::{predict, GemmTime, Screen, Stack, Status, UbatchResult};
use super::runner::{median, warmup_runs, Bound, Runner, StackTiming};
use super::spill::{self, KernelDiagnostics};
use super::throughput;
use crate::vulkan::{Buffer, VkError};

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

/// One precision's layer: packed and uploaded once, used by every ubatch.
struct Layer {
    p: Precision,
    /// Precisions in this run, which share the time budget.
    n_precisions: usize,
    /// The model's GEMMs.
    model: [Gemm; 5],
    /// The GEMMs as run: on CPU devices fewer outputs than the model's (see `Plan::output_cap`).
    run: [Gemm; 5],
    /// Packed weights per distinct model shape (gate and up share values).
    packed_w: HashMap<(u32, u32), Packed>,
    /// One device matrix per GEMM, like a real model.
    weights: Vec<DeviceMatrix>,
}

impl Layer {
    fn packed_weights(&self, gi: usize) -> &Packed {
        &self.packed_w[&shape_key(&self.model[gi])]
    }
}

/// One ubatch's operands on the device, bound per GEMM. The buffers must outlive the bound
/// descriptor sets, so they are kept here until the ubatch is done.
struct Operands {
    ub: u32,
    /// Packed activations per distinct K.
    packed_x: HashMap<u32, Packed>,
    _activations: HashMap<u32, DeviceMatrix>,
    outs: Vec<Buffer>,
    bounds: Vec<Bound>,
}

impl Operands {
    fn packed_activations(&self, g: &Gemm) -> &Packed {
        &self.packed_x[&g.k]
    }
}

/// A ubatch's time: its share of the run's budget, counted from when its work began.
#[derive(Clone, Copy)]
struct Budget {
    started: Instant,
    share_s: f64,
}

/// A stack to record: a label, the kernel per GEMM of the layer, the layer time screening
/// predicts for them and the time it may take.
struct StackRequest<'v> {
    label: &'static str,
    chosen: Vec<&'v KernelSpec>,
    est_layer_s: f64,
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

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// What every stage shares, and per precision: which variants run, and the layer they run on.
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

    /// Pack: one layer of `p` weights, within the device's buffer limit, on the device.
    fn pack_layer(&mut self, p: Precision, n_precisions: usize) -> Result<Layer, NoStack> {
        let gpu = self.runner.gpu;
        let model = self.plan.model.layer();
        // On CPU devices quick/default runs compute only the first `cap` outputs of each weight
        // matrix and scale the time by N / cap (GEMM time is linear in N once N spans many tiles).
        let cap = self.plan.output_cap(gpu.info.is_cpu());
        let run = model.map(|g| Gemm {
            n: cap.map_or(g.n, |c| g.n.min(c)),
            ..g
        });
        if let Some(c) = cap {
            self.notes.push(format!(
                "CPU device: each GEMM computed its first {c} outputs only and its time was scaled to the full matrix (use --full for whole matrices)"
            ));
        }
        // Sizes first, by arithmetic: the shapes may come from a file (--gguf), and packing
        // allocates on the host before anything reaches the device.
        let host = crate::host::mem::available(&crate::host::Root::system());
        if let Some(reason) =
            weights_over_limit(p, &model, &run, gpu.info.max_storage_buffer_range, host)
        {
            return Err(NoStack::Skipped(reason));
        }
        let packed_w = pack_weights(p, &model, &run);
        self.say(&format!("{}: uploading one layer of weights", p.name()));
        let weights = model
            .iter()
            .map(|g| gemm::upload(gpu, &packed_w[&shape_key(g)]))
            .collect::<Result<Vec<DeviceMatrix>, VkError>>()
            .map_err(NoStack::Failed)?;
        Ok(Layer {
            p,
            n_precisions,
            model,
            run,
            packed_w,
            weights,
        })
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

    /// Stage 1, pack: activations per distinct K and an output per GEMM, within the device's
    /// buffer limit, on the device and bound to the layer's weights.
    fn pack_ubatch(&mut self, layer: &Layer, ub: u32) -> Result<Operands, NoStack> {
        self.inject
            .check(ub, "vkAllocateMemory")
            .map_err(NoStack::Failed)?;
        let gpu = self.runner.gpu;
        let range = gpu.info.max_storage_buffer_range;
        if let Some(reason) = ubatch_over_limit(layer.p, ub, &layer.model, &layer.run, range) {
            return Err(NoStack::Skipped(reason));
        }
        let packed_x = pack_activations(layer.p, &layer.model, ub);
        let mut x: HashMap<u32, DeviceMatrix> = HashMap::new();
        for (k, px) in &packed_x {
            x.insert(*k, gemm::upload(gpu, px).map_err(NoStack::Failed)?);
        }
        let outs = layer
            .run
            .iter()
            .map(|g| Buffer::storage(gpu, gemm::output_bytes(ub, g.n)))
            .collect::<Result<Vec<Buffer>, VkError>>()
            .map_err(NoStack::Failed)?;
        let mut bounds: Vec<Bound> = Vec::with_capacity(layer.model.len());
        for (i, g) in layer.model.iter().enumerate() {
            let (xp, wp) = (&packed_x[&g.k], layer.packed_weights(i));
            let bound = gemm::bind(self.runner, &x[&g.k], &layer.weights[i], &outs[i], xp, wp)
                .map_err(NoStack::Failed)?;
            bounds.push(bound);
        }
        Ok(Operands {
            ub,
            packed_x,
            _activations: x,
            outs,
            bounds,
        })
    }

    /// Stage 2, screen: every variant on every distinct shape, checked and timed alone.
    /// Variants past the time budget, and everything after a lost device, are recorded as
    /// skipped.
    fn screen_variants(
        &mut self,
        layer: &Layer,
        ops: &Operands,
        variants: &[KernelSpec],
        try_all: bool,
        budget: Budget,
    ) -> Vec<Screen> {
        let distinct = distinct_shapes(&layer.model);
        self.say(&format!(
            "{} ubatch {}: checking {} kernel variants on {} shapes",
            layer.p.name(),
            ops.ub,
            variants.len(),
            distinct.len()
        ));
        let full = self.plan.size == Size::Full;
        let mut screens = Vec::new();
        // Wall time each variant's screens took (compile, upload, check and timing included):
        // the measured cost the budget check expects the next variant to have.
        let mut costs_s: Vec<f64> = Vec::new();
        let floor_s = self.screen_floor_s(layer, ops.ub, &distinct);
        for (vi, spec) in variants.iter().enumerate() {
            let elapsed_s = budget.started.elapsed().as_secs_f64();
            let estimate_s = next_variant_estimate_s(&costs_s, floor_s);
            let limit_s = screening_limit_s(
                budget.share_s,
                try_all,
                self.plan.budget_s() / layer.n_precisions.max(1) as f64,
            );
            let over_budget = screening_over_budget(vi, full, elapsed_s + estimate_s, limit_s);
            let variant_started = Instant::now();
            for &gi in &distinct {
                let g = &layer.model[gi];
                // A skipped screen counts the model's outputs; a run one those it computed, under
                // the model's shape label.
                match screen_skip_reason(over_budget, self.lost.is_some()) {
                    Some(reason) => screens.push(screen_skipped(layer.p, spec, g, reason)),
                    None => {
                        let mut s = self.screen(layer, ops, spec, gi);
                        s.shape = g.shape();
                        screens.push(s);
                    }
                }
            }
            if !over_budget {
                costs_s.push(variant_started.elapsed().as_secs_f64());
            }
        }
        screens
    }

    /// The least time one variant's screens can take: their FLOPs at the device's measured
    /// peak, once checked and `reps` times timed. Zero when the peak is unknown.
    fn screen_floor_s(&self, layer: &Layer, ub: u32, distinct: &[usize]) -> f64 {
        let Some(peak) = peak_for(self.peaks, layer.p).filter(|g| *g > 0.0) else {
            return 0.0;
        };
        let runs = (self.plan.reps() + 1) as f64;
        distinct
            .iter()
            .map(|&gi| layer.run[gi].flops(ub) / (peak * 1e9) * runs)
            .sum()
    }

    /// Screen one kernel on GEMM `gi` as run: time it alone, then read the result back and check
    /// it against the f64 reference.
    fn screen(&mut self, layer: &Layer, ops: &Operands, spec: &KernelSpec, gi: usize) -> Screen {
        let (p, g, ub) = (layer.p, &layer.run[gi], ops.ub);
        let mut s = screen_skipped(p, spec, g, "");
        s.reason = None;
        let b = &ops.bounds[gi];
        s.split_k = resolved_split(spec, (b.m, b.n, b.ldk), self.runner.gpu.info.compute_units);
        self.diagnose(spec);
        // Slow devices get one timed run; the check run doubles as the warm-up.
        let reps = if self.plan.size == Size::Quick || self.runner.gpu.info.is_cpu() {
            1
        } else {
            self.plan.reps()
        };
        let times = match self.runner.time_single(spec, &ops.bounds[gi], reps) {
            Ok(t) => t,
            Err(e) => return self.screen_failed(s, e),
        };
        let c = match ops.outs[gi].download(self.runner.gpu, gemm::output_bytes(ub, g.n)) {
            Ok(c) => gemm::to_f32(&c),
            Err(e) => return self.screen_failed(s, e),
        };
        let points = check_points(ub, g.n, CHECK_SAMPLES, CHECK_EDGE);
        let (x, w) = (ops.packed_activations(g), layer.packed_weights(gi));
        let err = max_error(&c, g.n, x, w, &points);
        let secs = median(&times).unwrap_or(f64::NAN);
        set_time(&mut s, secs, g.flops(ub), peak_for(self.peaks, p));
        s.max_error = Some(err);
        s.status = verdict(err, s.tolerance);
        if s.status == Status::Wrong {
            self.problems = true;
        }
        s
    }

    fn screen_failed(&mut self, mut s: Screen, e: VkError) -> Screen {
        self.note_failure(&e);
        s.status = Status::Error;
        s.error = Some(e);
        s
    }

    /// Record a kernel's compiler statistics the first time it is built.
    fn diagnose(&mut self, spec: &KernelSpec) {
        if self
            .kernels
            .iter()
            .any(|k| k.kernel == spec.name && k.precision == spec.precision.name())
        {
            return;
        }
        let gpu = self.runner.gpu;
        let stats = match self.runner.pipeline(spec) {
            Ok(pipe) => pipe.statistics(gpu),
            Err(_) => return, // the screening run reports the error
        };
        let mut d = spill::diagnose(&gpu.info, spec.precision.name(), &spec.name, stats);
        d.predicted = throughput::for_kernel(
            &gpu.info,
            spec.precision.name(),
            &spec.name,
            &d.statistics,
            spec.flops_per_iteration(),
        );
        self.kernels.push(d);
    }

    /// Stage 2b: on GPUs, time the correct kernels again back to back per shape, with no host
    /// work in between, and keep those times (see Runner::time_many).
    fn retime_back_to_back(
        &mut self,
        layer: &Layer,
        ops: &Operands,
        variants: &[KernelSpec],
        screens: &mut [Screen],
    ) {
        if self.runner.gpu.info.is_cpu() || !self.runner.timestamps() || self.lost.is_some() {
            return;
        }
        for gi in distinct_shapes(&layer.model) {
            self.retime_shape(layer, ops, variants, screens, gi);
        }
    }

    fn retime_shape(
        &mut self,
        layer: &Layer,
        ops: &Operands,
        variants: &[KernelSpec],
        screens: &mut [Screen],
        gi: usize,
    ) {
        let ok = correct_screens(screens, layer.model[gi].name);
        let items: Vec<(&KernelSpec, Bound)> = ok
            .iter()
            .filter_map(|&i| variants.iter().find(|v| v.name == screens[i].kernel))
            .map(|v| (v, ops.bounds[gi]))
            .collect();
        if items.len() != ok.len() || items.is_empty() {
            return;
        }
        let warm = warmup_runs(screens[ok[0]].seconds.unwrap_or(0.0));
        match self.runner.time_many(&items, warm, self.plan.reps()) {
            Ok(times) => {
                let flops = layer.run[gi].flops(ops.ub);
                let peak = peak_for(self.peaks, layer.p);
                for (&i, t) in ok.iter().zip(times) {
                    if let Some(secs) = median(&t) {
                        set_time(&mut screens[i], secs, flops, peak);
                    }
                }
            }
            Err(e) => {
                self.note_failure(&e);
                for &i in &ok {
                    screens[i].status = Status::Error;
                    screens[i].error = Some(e.clone());
                }
            }
        }
    }

    /// Stages 3 and 4, choose and stack: the layer stack with the fastest correct kernel per
    /// shape and, where it is measured, with llama.cpp's own tile choice, to see what its
    /// pipeline does on this driver.
    fn stacks(
        &mut self,
        layer: &Layer,
        ops: &Operands,
        variants: &[KernelSpec],
        screens: &[Screen],
        budget: Budget,
    ) -> Vec<Stack> {
        if self.lost.is_some() {
            return Vec::new();
        }
        let best = match choose_fastest(screens, &layer.model) {
            Some(choice) => {
                let req = StackRequest {
                    label: "best",
                    chosen: choice.kernels.iter().map(|k| named(variants, k)).collect(),
                    est_layer_s: choice.est_layer_s,
                    share_s: budget.share_s,
                };
                self.stack(layer, ops, req, budget.started)
            }
            None => NoStack::Skipped("no kernel gave a correct result for every shape".into())
                .into_stack(layer.p, self.plan.model.layers),
        };
        let mut stacks = vec![best];
        let llama = kernels::llama_tile_for(ops.ub);
        let full = self.plan.size == Size::Full;
        let want_llama = wants_llama_stack(layer.p, full, self.runner.gpu.info.is_cpu());
        if let (true, Some(spec)) = (want_llama, variants.iter().find(|v| v.name == llama)) {
            if self.lost.is_none() {
                let req = StackRequest {
                    label: "llama.cpp tiles",
                    chosen: vec![spec; layer.model.len()],
                    est_layer_s: llama_estimate(screens, llama),
                    share_s: budget.share_s * LLAMA_STACK_SHARE,
                };
                stacks.push(self.stack(layer, ops, req, budget.started));
            }
        }
        stacks
    }

    /// Stage 4, stack: record as many layers as the time allows with the chosen kernels, submit
    /// them like llama.cpp does, and scale the time to the model.
    fn stack(
        &mut self,
        layer: &Layer,
        ops: &Operands,
        req: StackRequest,
        started: Instant,
    ) -> Stack {
        let (p, ub, model_layers) = (layer.p, ops.ub, self.plan.model.layers);
        let left_s = (req.share_s - started.elapsed().as_secs_f64()).max(0.0);
        let is_cpu = self.runner.gpu.info.is_cpu();
        let schedule = stack_schedule(self.plan, is_cpu, left_s, req.est_layer_s);
        let mut stack = empty_stack(p, req.label, Status::Ok, None, None, model_layers);
        stack.kernels = layer
            .model
            .iter()
            .zip(&req.chosen)
            .map(|(g, k)| (g.name.to_string(), k.name.clone()))
            .collect();
        stack.layers_recorded = schedule.layers;
        stack.extrapolated = schedule.layers < model_layers;
        let items: Vec<(&KernelSpec, Bound)> = (0..schedule.layers)
            .flat_map(|_| req.chosen.iter().zip(&ops.bounds).map(|(k, b)| (*k, *b)))
            .collect();
        stack.dispatches = items.len();
        stack.command_buffers = items.len().div_ceil(DISPATCHES_PER_COMMAND_BUFFER);
        self.say(&format!(
            "{} ubatch {ub}: {}: {} of {model_layers} layers, {} in {}",
            p.name(),
            req.label,
            schedule.layers,
            crate::output::count(stack.dispatches, "dispatch"),
            crate::output::count(stack.command_buffers, "command buffer")
        ));
        let (warmup, reps) = (schedule.warmup, schedule.reps);
        let per_cb = DISPATCHES_PER_COMMAND_BUFFER;
        match self
            .runner
            .run_stack(&items, per_cb, warmup, reps, ub, self.inject)
        {
            Ok(timing) => record_timing(&mut stack, &timing, (&layer.model, &layer.run), ub),
            Err(e) => {
                self.note_failure(&e);
                stack.status = Status::Error;
                stack.error = Some(e);
            }
        }
        stack
    }
}

/// The key weights are packed and chosen by: GEMMs of one shape share both.
fn shape_key(g: &Gemm) -> (u32, u32) {
    (g.k, g.n)
}

/// One packed weight matrix per distinct model shape, with the outputs of `run` (gate and up
/// share values, as their seeds depend on the shape only).
fn pack_weights(p: Precision, model: &[Gemm; 5], run: &[Gemm; 5]) -> HashMap<(u32, u32), Packed> {
    let mut packed: HashMap<(u32, u32), Packed> = HashMap::new();
    for (g, r) in model.iter().zip(run) {
        packed.entry(shape_key(g)).or_insert_with(|| {
            let seed = u64::from(g.k) * 7 + u64::from(g.n);
            pack(p, Side::Weights, r.n, g.k, &random_values(r.n, g.k, seed))
        });
    }
    packed
}

/// One packed activation matrix of `ub` tokens per distinct K.
fn pack_activations(p: Precision, model: &[Gemm; 5], ub: u32) -> HashMap<u32, Packed> {
    let mut packed: HashMap<u32, Packed> = HashMap::new();
    for g in model {
        packed.entry(g.k).or_insert_with(|| {
            let values = random_values(ub, g.k, u64::from(g.k) + 3);
            pack(p, Side::Activations, ub, g.k, &values)
        });
    }
    packed
}

/// Why one layer of `p` weights cannot be packed: a K that is not a whole number of a
/// quantised format's blocks, a size past a u64, a matrix above maxStorageBufferRange, or more
/// host memory for packing than `host_available` (`MemAvailable`, when known). Computed from
/// the shapes alone, before anything is allocated.
fn weights_over_limit(
    p: Precision,
    model: &[Gemm; 5],
    run: &[Gemm; 5],
    range: u64,
    host_available: Option<u64>,
) -> Option<String> {
    if let Some(g) = model.iter().find(|g| g.k % p.k_block() != 0) {
        return Some(format!(
            "{} needs every K to be a multiple of {}; the {} GEMM's K is {}",
            p.name(),
            p.k_block(),
            g.name,
            g.k
        ));
    }
    let mut seen = Vec::new();
    let mut host = 0u64;
    for (g, r) in model.iter().zip(run) {
        if seen.contains(&shape_key(g)) {
            continue;
        }
        seen.push(shape_key(g));
        let Some(f) = footprint(p, Side::Weights, r.n, g.k) else {
            return Some(format!(
                "a {}x{} weight matrix is too large to size",
                g.k, g.n
            ));
        };
        if f.device > range {
            return Some(format!(
                "a {}x{} weight matrix needs {:.0} MiB, above the device's maxStorageBufferRange ({:.0} MiB)",
                g.k,
                r.n,
                mib(f.device),
                mib(range)
            ));
        }
        host = host.saturating_add(f.host);
    }
    match host_available {
        Some(avail) if host > avail => Some(format!(
            "packing one layer of {} weights needs {:.0} MiB of memory, more than the {:.0} MiB available",
            p.name(),
            mib(host),
            mib(avail)
        )),
        _ => None,
    }
}

/// Why ubatch `ub` cannot run: an activation or output buffer above maxStorageBufferRange (or
/// past a u64). From the shapes, before anything is packed.
fn ubatch_over_limit(
    p: Precision,
    ub: u32,
    model: &[Gemm; 5],
    run: &[Gemm; 5],
    range: u64,
) -> Option<String> {
    let outs = run
        .iter()
        .map(|g| u64::from(ub).checked_mul(u64::from(g.n))?.checked_mul(4));
    let xs = model
        .iter()
        .map(|g| footprint(p, Side::Activations, ub, g.k).map(|f| f.device));
    let biggest = outs.chain(xs).try_fold(0u64, |m, b| b.map(|b| m.max(b)));
    match biggest {
        None => Some(format!("ubatch {ub}: a buffer is too large to size")),
        Some(b) if b > range => Some(format!(
            "ubatch {ub} needs a {:.0} MiB buffer, above maxStorageBufferRange ({:.0} MiB)",
            mib(b),
            mib(range)
        )),
        Some(_) => None,
    }
}

/// Index of the first GEMM of each distinct shape, in layer order: screening one GEMM per shape
/// is enough, as GEMMs of one shape (gate and up) run the same kernel on the same sizes.
fn distinct_shapes(layer: &[Gemm]) -> Vec<usize> {
    let mut distinct: Vec<usize> = Vec::new();
    for (i, g) in layer.iter().enumerate() {
        if !distinct
            .iter()
            .any(|&j| shape_key(&layer[j]) == shape_key(g))
        {
            distinct.push(i);
        }
    }
    distinct
}

/// Whether variant `vi` of a ubatch would end past its screening limit, given the time it
/// would end at (`ends_s`: elapsed plus its estimate). Checked before the screen runs, so a
/// slow device stops before it overshoots, not after. The first variant always runs, so that
/// every ubatch has a stack; a --full run tries everything.
fn screening_over_budget(vi: usize, full: bool, ends_s: f64, limit_s: f64) -> bool {
    vi > 0 && !full && ends_s > limit_s
}

/// Seconds a ubatch may spend screening: half its share of the run. The first ubatch ranks
/// the variants for all the others (which then try them fastest-first), so it may also use
/// [`RANKING_SHARE`] of the precision's whole budget, even when its own FLOP share is tiny.
fn screening_limit_s(share_s: f64, ranking: bool, precision_budget_s: f64) -> f64 {
    let own = share_s * SCREEN_SHARE;
    if ranking {
        own.max(precision_budget_s * RANKING_SHARE)
    } else {
        own
    }
}

/// What the next variant's screens will cost: the mean of the variants measured so far in
/// this ubatch, never less than the peak-rate floor.
fn next_variant_estimate_s(costs_s: &[f64], floor_s: f64) -> f64 {
    if costs_s.is_empty() {
        return floor_s;
    }
    let mean = costs_s.iter().sum::<f64>() / costs_s.len() as f64;
    mean.max(floor_s)
}

/// Why a screen is not run, if it is not.
fn screen_skip_reason(over_budget: bool, device_lost: bool) -> Option<&'static str> {
    if over_budget {
        Some(SKIPPED_FOR_TIME)
    } else if device_lost {
        Some("device lost")
    } else {
        None
    }
}

/// A checked result within the tolerance is correct; anything else (NaN included) is wrong.
fn verdict(max_error: f64, tolerance: f64) -> Status {
    if max_error <= tolerance {
        Status::Ok
    } else {
        Status::Wrong
    }
}

/// A screen's time, and its rate and efficiency from the FLOPs it ran.
fn set_time(s: &mut Screen, secs: f64, flops: f64, peak: Option<f64>) {
    let gflops = flops / secs / 1e9;
    s.seconds = Some(secs);
    s.gflops = Some(gflops);
    s.efficiency = peak.map(|peak| gflops / peak);
}

/// The best GFLOP/s a kernel's correct screens measured over every shape and ubatch.
fn best_measured(ubatches: &[UbatchResult], precision: &str, kernel: &str) -> Option<f64> {
    ubatches
        .iter()
        .flat_map(|u| &u.screens)
        .filter(|s| s.kernel == kernel && s.precision.name() == precision && s.status == Status::Ok)
        .filter_map(|s| s.gflops)
        .max_by(f64::total_cmp)
}

/// The measured peak of the arithmetic a precision's kernels use (q4_0 dequantises to fp32).
fn peak_for(peaks: &HashMap<Precision, f64>, p: Precision) -> Option<f64> {
    match p {
        Precision::Fp32 | Precision::Q4_0 => peaks.get(&Precision::Fp32).copied(),
        Precision::Fp16 => peaks.get(&Precision::Fp16).copied(),
        Precision::Int8 => peaks.get(&Precision::Int8).copied(),
    }
}

/// Indices of the correct screens of GEMM `gemm`.
fn correct_screens(screens: &[Screen], gemm: &str) -> Vec<usize> {
    (0..screens.len())
        .filter(|&i| screens[i].gemm == gemm && screens[i].status == Status::Ok)
        .collect()
}

/// The variant of that name (the first, should an extra tile repeat a catalogue name).
fn named<'v>(variants: &'v [KernelSpec], name: &str) -> &'v KernelSpec {
    variants
        .iter()
        .find(|v| v.name == name)
        .expect("screened variant")
}

/// The kernel chosen per GEMM of a layer, and the layer time screening measured for them.
#[derive(Debug, PartialEq)]
struct Choice<'s> {
    kernels: Vec<&'s str>,
    est_layer_s: f64,
}

/// The fastest correct kernel per shape (the first screened on a tie), for every GEMM of the
/// layer; None when some shape has no correct kernel.
fn choose_fastest<'s>(screens: &'s [Screen], layer: &[Gemm; 5]) -> Option<Choice<'s>> {
    let mut best: HashMap<(u32, u32), (&str, f64)> = HashMap::new();
    for s in screens.iter().filter(|s| s.status == Status::Ok) {
        let g = layer
            .iter()
            .find(|g| g.name == s.gemm)
            .expect("screened gemm");
        let t = s.seconds.unwrap_or(f64::INFINITY);
        let e = best.entry(shape_key(g)).or_insert((&s.kernel, t));
        if t < e.1 {
            *e = (&s.kernel, t);
        }
    }
    let per_gemm: Option<Vec<(&str, f64)>> = layer
        .iter()
        .map(|g| best.get(&shape_key(g)).copied())
        .collect();
    let per_gemm = per_gemm?;
    Some(Choice {
        kernels: per_gemm.iter().map(|(k, _)| *k).collect(),
        est_layer_s: per_gemm.iter().map(|(_, t)| t).sum(),
    })
}

/// Whether to time a stack of llama.cpp's tile too: it exists for fp32 only, and on CPU devices
/// it would take the time of the best stack again, so only --full runs it there.
fn wants_llama_stack(p: Precision, full: bool, is_cpu: bool) -> bool {
    p == Precision::Fp32 && (full || !is_cpu)
}

/// Layer time of llama.cpp's tile from its screens: they cover the distinct shapes only (four
/// of the five GEMMs, gate and up being one), so the sum is scaled up by a quarter.
fn llama_estimate(screens: &[Screen], llama: &str) -> f64 {
    screens
        .iter()
        .filter(|s| s.kernel == llama)
        .filter_map(|s| s.seconds)
        .sum::<f64>()
        * 1.25
}

/// How a stack is run: layers recorded, untimed and timed submissions.
#[derive(Debug, PartialEq)]
struct StackSchedule {
    layers: u32,
    warmup: usize,
    reps: usize,
}

/// A --full run records every layer; others as many as `left_s` allows at `est_layer_s` a
/// layer, at least one. Slow runs (quick, or CPU devices) submit once, untimed warm-up
/// included; others warm up for at least one submission and enough to keep the device busy for
/// WARM_S (its clock must be up before the timed runs; see Runner::time_single).
fn stack_schedule(plan: &Plan, is_cpu: bool, left_s: f64, est_layer_s: f64) -> StackSchedule {
    let model_layers = plan.model.layers;
    let full = plan.size == Size::Full;
    let slow = plan.size == Size::Quick || (is_cpu && !full);
    let (warmup, reps) = if slow { (0, 1) } else { (1, plan.reps()) };
    let runs = (warmup + reps) as f64;
    let layers = if full {
        model_layers
    } else {
        ((left_s / (est_layer_s.max(1e-9) * runs)) as u32).clamp(1, model_layers)
    };
    let warmup = if slow {
        0
    } else {
        let busy = warmup_runs(est_layer_s * f64::from(layers)).min(MAX_STACK_WARMUP);
        warmup.max(busy)
    };
    StackSchedule {
        layers,
        warmup,
        reps,
    }
}

/// Fill in a timed stack's times (its kernels and layers recorded already set) for the model's
/// whole matrices and layer count. A sliced run
/// (fewer outputs than the model's) is scaled per GEMM where timestamps give per-dispatch times,
/// by FLOPs otherwise.
fn record_timing(
    stack: &mut Stack,
    timing: &StackTiming,
    (model, run): (&[Gemm; 5], &[Gemm; 5]),
    ub: u32,
) {
    stack.timing = if timing.timestamps {
        "timestamps"
    } else {
        "wall-clock"
    }
    .into();
    let layers = f64::from(stack.layers_recorded);
    let total = median(&timing.total).unwrap_or(f64::NAN);
    let model_flops: f64 = model.iter().map(|g| g.flops(ub)).sum();
    let run_flops: f64 = run.iter().map(|g| g.flops(ub)).sum();
    stack.sliced = run_flops < model_flops;
    let mut per_layer = total / layers * model_flops / run_flops;
    if timing.timestamps {
        let (per_gemm, run_sum, scaled_sum) = per_gemm_times(stack, timing, (model, run), ub);
        stack.per_gemm = per_gemm;
        if stack.sliced && scaled_sum > 0.0 {
            // Barriers and gaps between dispatches scale with the dispatch count, not with N.
            let gaps = (total / layers - run_sum).max(0.0);
            per_layer = scaled_sum + gaps;
        }
    }
    stack.seconds_per_layer = Some(per_layer);
    stack.gflops = Some(model_flops / per_layer / 1e9);
    let (tps, prompt) = predict(per_layer, stack.layers_model, ub);
    stack.predicted_tokens_per_s = Some(tps);
    stack.prompt_5000_s = Some(prompt);
}

/// Each GEMM's median dispatch time over the stack's layers and reps, scaled from the outputs
/// run to the model's; with the sums of the times as run and as scaled.
fn per_gemm_times(
    stack: &Stack,
    timing: &StackTiming,
    (model, run): (&[Gemm; 5], &[Gemm; 5]),
    ub: u32,
) -> (Vec<GemmTime>, f64, f64) {
    let (mut per_gemm, mut run_sum, mut scaled_sum) = (Vec::new(), 0.0, 0.0);
    for (gi, g) in model.iter().enumerate() {
        let all: Vec<f64> = timing
            .per_dispatch
            .iter()
            .enumerate()
            .filter(|(i, _)| i % model.len() == gi)
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        let Some(t) = median(&all) else { continue };
        let t_full = t * f64::from(g.n) / f64::from(run[gi].n);
        run_sum += t;
        scaled_sum += t_full;
        per_gemm.push(GemmTime {
            gemm: g.name.into(),
            shape: g.shape(),
            kernel: stack.kernels[g.name].clone(),
            seconds: t_full,
            gflops: g.flops(ub) / t_full / 1e9,
        });
    }
    (per_gemm, run_sum, scaled_sum)
}

/// Variants ordered by their total time over this ubatch's shapes, fastest first; variants that
/// were not tried or were not correct everywhere keep their order behind the measured ones.
pub fn rank_variants(variants: &[KernelSpec], screens: &[Screen], p: Precision) -> Vec<KernelSpec> {
    let cost = |k: &KernelSpec| -> f64 {
        let mine: Vec<&Screen> = screens
            .iter()
            .filter(|s| s.precision == p && s.kernel == k.name)
            .collect();
        if mine.is_empty() || mine.iter().any(|s| s.status != Status::Ok) {
            return f64::INFINITY;
        }
        mine.iter().filter_map(|s| s.seconds).sum()
    };
    let mut ranked: Vec<(f64, usize)> = variants
        .iter()
        .enumerate()
        .map(|(i, k)| (cost(k), i))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ranked
        .into_iter()
        .map(|(_, i)| variants[i].clone())
        .collect()
}

/// The split a "-splitcu" kernel runs with on a bound shape (what the runner resolves it to),
/// for the screen's record; None for every other kernel.
fn resolved_split(
    spec: &KernelSpec,
    (m, n, ldk): (u32, u32, u32),
    compute_units: Option<u32>,
) -> Option<u32> {
    spec.split_from_cus
        .then(|| spec.for_shape(m, n, ldk, compute_units).split_k)
}

fn screen_skipped(p: Precision, spec: &KernelSpec, g: &Gemm, reason: &str) -> Screen {
    Screen {
        precision: p,
        kernel: spec.name.clone(),
        gemm: g.name.into(),
        shape: g.shape(),
        outputs: g.n,
        status: Status::Skipped,
        error: None,
        reason: Some(reason.into()),
        seconds: None,
        gflops: None,
        efficiency: None,
        max_error: None,
        tolerance: p.tolerance(),
        split_k: None,
    }
}

pub fn empty_stack(
    p: Precision,
    label: &str,
    status: Status,
    error: Option<VkError>,
    reason: Option<String>,
    layers_model: u32,
) -> Stack {
    Stack {
        precision: p,
        label: label.into(),
        kernels: BTreeMap::new(),
        status,
        error,
        reason,
        layers_recorded: 0,
        layers_model,
        extrapolated: false,
        sliced: false,
        dispatches: 0,
        command_buffers: 0,
        timing: String::new(),
        seconds_per_layer: None,
        gflops: None,
        per_gemm: Vec::new(),
        predicted_tokens_per_s: None,
        prompt_5000_s: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::preset;

    fn tiny() -> [Gemm; 5] {
        // qkv 64x128, o 64x64, gate and up 64x160, down 160x64.
        preset("tiny").unwrap().layer()
    }

    fn fp32_variants(n: usize) -> Vec<KernelSpec> {
        kernels::catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Fp32)
            .take(n)
            .collect()
    }

    fn screened(k: &KernelSpec, g: &Gemm, status: Status, secs: Option<f64>) -> Screen {
        let mut s = screen_skipped(Precision::Fp32, k, g, "");
        s.status = status;
        s.seconds = secs;
        s
    }

    fn plan(model: &str, size: Size) -> Plan {
        Plan {
            model: preset(model).unwrap(),
            ubatches: vec![8, 16],
            precisions: None,
            size,
            cpu: false,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn variants_are_ranked_by_measured_time_and_failures_go_last() {
        let layer = tiny();
        let vs = fp32_variants(3);
        // vs[0] slow, vs[1] fast, vs[2] wrong.
        let screens = vec![
            screened(&vs[0], &layer[0], Status::Ok, Some(3.0)),
            screened(&vs[1], &layer[0], Status::Ok, Some(1.0)),
            screened(&vs[2], &layer[0], Status::Wrong, Some(0.5)),
        ];
        let names: Vec<String> = rank_variants(&vs, &screens, Precision::Fp32)
            .into_iter()
            .map(|k| k.name)
            .collect();
        assert_eq!(
            names,
            vec![vs[1].name.clone(), vs[0].name.clone(), vs[2].name.clone()]
        );
    }

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
    fn one_gemm_per_shape_is_screened() {
        // gate and up share a shape: up is not screened.
        assert_eq!(distinct_shapes(&tiny()), vec![0, 1, 2, 4]);
        let g = |name, k, n| Gemm { name, k, n };
        let layer = [
            g("a", 1, 2),
            g("b", 1, 2),
            g("c", 2, 1),
            g("d", 1, 2),
            g("e", 3, 3),
        ];
        assert_eq!(distinct_shapes(&layer), vec![0, 2, 4]);
    }

    #[test]
    fn screening_stops_before_a_variant_would_end_past_its_limit() {
        // (variant, full, elapsed + estimate, limit)
        assert!(screening_over_budget(1, false, 5.1, 5.0));
        assert!(!screening_over_budget(1, false, 5.0, 5.0));
        assert!(
            !screening_over_budget(0, false, 99.0, 5.0),
            "the first always runs"
        );
        assert!(
            !screening_over_budget(1, true, 99.0, 5.0),
            "--full tries all"
        );
    }

    #[test]
    fn the_ranking_ubatch_may_use_part_of_the_whole_budget_and_no_more() {
        // A small first ubatch of an 8 s quick run: its own FLOP share is 0.1 s.
        assert_eq!(screening_limit_s(0.1, false, 8.0), 0.05);
        let ranking = screening_limit_s(0.1, true, 8.0);
        assert!((ranking - 8.0 * RANKING_SHARE).abs() < 1e-9, "{ranking}");
        assert!(ranking < 8.0, "bounded: --quick keeps its budget");
        assert_eq!(
            screening_limit_s(20.0, true, 8.0),
            10.0,
            "its own share when larger"
        );
    }

    #[test]
    fn the_next_variant_is_expected_to_cost_what_the_measured_ones_did() {
        assert_eq!(next_variant_estimate_s(&[], 0.25), 0.25, "peak floor first");
        assert_eq!(next_variant_estimate_s(&[1.0, 3.0], 0.25), 2.0);
        assert_eq!(
            next_variant_estimate_s(&[0.1], 0.25),
            0.25,
            "never below the floor"
        );
    }

    #[test]
    fn a_skipped_screen_says_budget_before_device_lost() {
        let budget = Some(SKIPPED_FOR_TIME);
        assert_eq!(screen_skip_reason(true, true), budget);
        assert_eq!(screen_skip_reason(true, false), budget);
        assert_eq!(screen_skip_reason(false, true), Some("device lost"));
        assert_eq!(screen_skip_reason(false, false), None);
    }

    #[test]
    fn a_result_is_correct_only_within_the_tolerance() {
        assert_eq!(verdict(1e-6, 1e-5), Status::Ok);
        assert_eq!(verdict(1e-5, 1e-5), Status::Ok);
        assert_eq!(verdict(2e-5, 1e-5), Status::Wrong);
        assert_eq!(verdict(f64::NAN, 1e-5), Status::Wrong);
    }

    #[test]
    fn screen_rates_come_from_the_flops_run_and_the_matching_peak() {
        let peaks = HashMap::from([(Precision::Fp32, 100.0), (Precision::Int8, 400.0)]);
        assert_eq!(peak_for(&peaks, Precision::Q4_0), Some(100.0));
        assert_eq!(peak_for(&peaks, Precision::Int8), Some(400.0));
        assert_eq!(peak_for(&peaks, Precision::Fp16), None);

        let vs = fp32_variants(1);
        let mut s = screened(&vs[0], &tiny()[0], Status::Ok, None);
        set_time(&mut s, 0.5, 2e9, Some(100.0));
        assert_eq!(
            (s.seconds, s.gflops, s.efficiency),
            (Some(0.5), Some(4.0), Some(0.04))
        );
        set_time(&mut s, 0.25, 2e9, None);
        assert_eq!(
            (s.seconds, s.gflops, s.efficiency),
            (Some(0.25), Some(8.0), None)
        );
    }

    #[test]
    fn only_correct_screens_of_the_gemm_are_retimed() {
        let (layer, vs) = (tiny(), fp32_variants(2));
        let screens = vec![
            screened(&vs[0], &layer[0], Status::Ok, Some(1.0)),
            screened(&vs[0], &layer[1], Status::Ok, Some(1.0)),
            screened(&vs[1], &layer[0], Status::Wrong, Some(1.0)),
            screened(&vs[1], &layer[0], Status::Ok, Some(1.0)),
        ];
        assert_eq!(correct_screens(&screens, "qkv"), vec![0, 3]);
        assert_eq!(correct_screens(&screens, "down"), Vec::<usize>::new());
    }

    #[test]
    fn the_fastest_correct_kernel_wins_each_shape() {
        let (l, vs) = (tiny(), fp32_variants(3));
        let (a, b, c) = (&vs[0], &vs[1], &vs[2]);
        let mut screens = vec![
            screened(a, &l[0], Status::Ok, Some(2.0)),
            screened(b, &l[0], Status::Ok, Some(1.0)), // faster: wins qkv
            screened(a, &l[1], Status::Ok, Some(1.0)), // a tie: the first screened wins o
            screened(b, &l[1], Status::Ok, Some(1.0)),
            screened(a, &l[2], Status::Ok, Some(3.0)),
            screened(c, &l[2], Status::Wrong, Some(0.5)), // faster but wrong
            screened(c, &l[4], Status::Skipped, None),
            screened(a, &l[4], Status::Ok, Some(0.5)),
            screened(b, &l[4], Status::Ok, Some(0.25)),
        ];
        let choice = choose_fastest(&screens, &l).expect("every shape has a correct kernel");
        let (a, b) = (a.name.as_str(), b.name.as_str());
        // up runs gate's kernel, and its time counts again in the layer's.
        assert_eq!(choice.kernels, vec![b, a, a, a, b]);
        assert!(close(choice.est_layer_s, 1.0 + 1.0 + 3.0 + 3.0 + 0.25));

        screens.retain(|s| s.gemm != "down" || s.status != Status::Ok);
        assert_eq!(choose_fastest(&screens, &l), None);
    }

    #[test]
    fn the_llama_stack_runs_for_fp32_on_gpus_and_on_cpu_devices_with_full() {
        assert!(wants_llama_stack(Precision::Fp32, false, false));
        assert!(wants_llama_stack(Precision::Fp32, true, true));
        assert!(!wants_llama_stack(Precision::Fp32, false, true));
        assert!(!wants_llama_stack(Precision::Fp16, true, false));
        assert!(!wants_llama_stack(Precision::Q4_0, false, false));
    }

    #[test]
    fn the_llama_estimate_scales_its_four_screened_shapes_to_five_gemms() {
        let l = tiny();
        let llama = fp32_variants(20)
            .into_iter()
            .find(|k| k.name == "llama-64x64")
            .expect("llama's medium tile is in the catalogue");
        let other = &fp32_variants(1)[0];
        let screens = vec![
            screened(&llama, &l[0], Status::Ok, Some(0.1)),
            screened(&llama, &l[1], Status::Ok, Some(0.2)),
            screened(&llama, &l[2], Status::Ok, Some(0.3)),
            screened(&llama, &l[4], Status::Ok, Some(0.4)),
            screened(&llama, &l[4], Status::Skipped, None),
            screened(other, &l[0], Status::Ok, Some(5.0)),
        ];
        assert!(close(llama_estimate(&screens, "llama-64x64"), 1.25));
    }

    #[test]
    fn full_runs_record_every_layer_and_warm_up_the_device() {
        let p = plan("qwen2.5-3b", Size::Full);
        let s = |est| stack_schedule(&p, true, 0.0, est);
        // 36 layers of 10 ms: 0.36 s busy already, one warm-up submission.
        assert_eq!(
            s(0.01),
            StackSchedule {
                layers: 36,
                warmup: 1,
                reps: 5
            }
        );
        // 36 layers of 1 us: 36 us, so enough submissions to be busy for WARM_S, at most 50.
        assert_eq!(s(1e-6).warmup, MAX_STACK_WARMUP);
        let s = stack_schedule(&plan("tiny", Size::Full), false, 0.0, 0.01);
        assert_eq!(
            s,
            StackSchedule {
                layers: 2,
                warmup: 3,
                reps: 5
            }
        );
    }

    #[test]
    fn other_runs_record_the_layers_that_fit_their_time() {
        // Default on a GPU: one warm-up and 3 reps, so 4 runs of each layer recorded.
        let p = plan("qwen2.5-3b", Size::Default);
        let layers = |left_s, est| stack_schedule(&p, false, left_s, est).layers;
        assert_eq!(layers(1.0, 0.1), 2);
        assert_eq!(layers(0.0, 0.1), 1, "at least one layer");
        assert_eq!(layers(1000.0, 0.1), 36, "at most the model's");
        assert_eq!(
            layers(1.0, 0.0),
            36,
            "no estimate is not a division by zero"
        );
        // Quick runs, and CPU devices, submit once with no warm-up.
        let quick = stack_schedule(&plan("qwen2.5-3b", Size::Quick), false, 1.0, 0.1);
        assert_eq!(
            quick,
            StackSchedule {
                layers: 10,
                warmup: 0,
                reps: 1
            }
        );
        let cpu = stack_schedule(&p, true, 1.0, 0.1);
        assert_eq!(
            cpu,
            StackSchedule {
                layers: 10,
                warmup: 0,
                reps: 1
            }
        );
    }

    /// A tiny stack of 2 layers with the outputs of every GEMM halved (a sliced run).
    fn sliced_stack() -> (Stack, [Gemm; 5], [Gemm; 5]) {
        let model = tiny();
        let run = model.map(|g| Gemm { n: g.n / 2, ..g });
        let mut stack = empty_stack(Precision::Fp32, "best", Status::Ok, None, None, 2);
        let k = &fp32_variants(1)[0];
        stack.kernels = model
            .iter()
            .map(|g| (g.name.to_string(), k.name.clone()))
            .collect();
        stack.layers_recorded = 2;
        (stack, model, run)
    }

    /// Two layers' dispatches, each GEMM taking 10, 20, 30, 40, 50 ms.
    fn per_dispatch() -> Vec<Vec<f64>> {
        (0..10).map(|i| vec![0.01 * f64::from(i % 5 + 1)]).collect()
    }

    #[test]
    fn a_wall_clock_stack_is_scaled_to_the_model_by_flops() {
        let (mut stack, model, run) = sliced_stack();
        let timing = StackTiming {
            total: vec![0.3, 0.1, 0.2],
            timestamps: false,
            ..StackTiming::default()
        };
        record_timing(&mut stack, &timing, (&model, &run), 8);
        assert_eq!(stack.timing, "wall-clock");
        assert!(stack.sliced);
        assert!(stack.per_gemm.is_empty());
        // Median 0.2 s for 2 layers, twice the FLOPs in the model: 0.2 s a layer.
        let per_layer = stack.seconds_per_layer.unwrap();
        assert!(close(per_layer, 0.2), "{per_layer}");
        let flops: f64 = model.iter().map(|g| g.flops(8)).sum();
        assert!(close(stack.gflops.unwrap(), flops / 0.2 / 1e9));
        let (tps, prompt) = predict(per_layer, 2, 8);
        assert_eq!(stack.predicted_tokens_per_s, Some(tps));
        assert_eq!(stack.prompt_5000_s, Some(prompt));
    }

    #[test]
    fn a_timestamped_sliced_stack_is_scaled_per_gemm_and_keeps_its_gaps() {
        let (mut stack, model, run) = sliced_stack();
        let timing = StackTiming {
            per_dispatch: per_dispatch(),
            total: vec![0.4],
            timestamps: true,
            ..StackTiming::default()
        };
        record_timing(&mut stack, &timing, (&model, &run), 8);
        assert_eq!(stack.timing, "timestamps");
        let secs: Vec<f64> = stack.per_gemm.iter().map(|g| g.seconds).collect();
        let want = [0.02, 0.04, 0.06, 0.08, 0.10];
        assert!(secs.iter().zip(want).all(|(s, w)| close(*s, w)), "{secs:?}");
        assert_eq!(stack.per_gemm[2].gemm, "gate");
        assert_eq!(stack.per_gemm[2].shape, "64x160");
        assert_eq!(stack.per_gemm[2].kernel, stack.kernels["gate"]);
        // 0.2 s a layer of which 0.15 s in the GEMMs: 0.05 s of gaps on top of the scaled 0.3 s.
        let per_layer = stack.seconds_per_layer.unwrap();
        assert!(close(per_layer, 0.35), "{per_layer}");
    }

    #[test]
    fn a_timestamped_whole_stack_keeps_its_total_time() {
        let (mut stack, model, _) = sliced_stack();
        let timing = StackTiming {
            per_dispatch: per_dispatch(),
            total: vec![0.4],
            timestamps: true,
            ..StackTiming::default()
        };
        record_timing(&mut stack, &timing, (&model, &model), 8);
        assert!(!stack.sliced);
        assert!(close(stack.per_gemm[4].seconds, 0.05));
        let per_layer = stack.seconds_per_layer.unwrap();
        assert!(close(per_layer, 0.2), "{per_layer}");
    }

    #[test]
    fn weights_are_packed_once_per_model_shape_with_the_outputs_run() {
        let model = tiny();
        let run = model.map(|g| Gemm {
            n: g.n.min(100),
            ..g
        });
        let packed = pack_weights(Precision::Fp32, &model, &run);
        assert_eq!(packed.len(), 4, "gate and up share one matrix");
        let gate = &packed[&(64, 160)];
        assert_eq!((gate.rows, gate.k), (100, 64));
        assert_eq!(packed[&(160, 64)].rows, 64);
    }

    #[test]
    fn weights_above_the_buffer_limit_skip_the_precision() {
        let model = tiny();
        let fp32 = Precision::Fp32;
        // The biggest, gate/up and down, hold 64 x 160 fp32 values: 40960 bytes.
        assert_eq!(weights_over_limit(fp32, &model, &model, 40960, None), None);
        let reason = weights_over_limit(fp32, &model, &model, 40959, None).expect("over");
        assert!(
            reason.starts_with("a 64x160 weight matrix needs 0 MiB")
                || reason.starts_with("a 160x64 weight matrix needs 0 MiB"),
            "{reason}"
        );
        assert!(reason.ends_with("above the device's maxStorageBufferRange (0 MiB)"));
    }

    #[test]
    fn weights_past_host_memory_a_u64_or_the_block_size_are_refused_before_packing() {
        let model = tiny();
        let fp32 = Precision::Fp32;
        // Packing holds values, packed data and kept values: 3 x 4 bytes per weight, for
        // qkv 64x128, o 64x64, gate/up 64x160, down 160x64 (one matrix for gate and up).
        let host = 12 * 64 * (128 + 64 + 160 + 160);
        assert_eq!(
            weights_over_limit(fp32, &model, &model, u64::MAX, Some(host)),
            None
        );
        let reason = weights_over_limit(fp32, &model, &model, u64::MAX, Some(host - 1));
        assert_eq!(
            reason.as_deref(),
            Some("packing one layer of fp32 weights needs 0 MiB of memory, more than the 0 MiB available")
        );
        // Sizes that do not fit a u64 are refused, not wrapped.
        let layer = [Gemm {
            name: "up",
            k: u32::MAX,
            n: u32::MAX,
        }; 5];
        let why = weights_over_limit(fp32, &layer, &layer, u64::MAX, None).unwrap();
        assert_eq!(
            why,
            format!("a {0}x{0} weight matrix is too large to size", u32::MAX)
        );
        let odd = model.map(|g| Gemm { k: 100, ..g });
        assert_eq!(
            weights_over_limit(Precision::Q4_0, &odd, &odd, u64::MAX, None).as_deref(),
            Some("q4_0 needs every K to be a multiple of 32; the qkv GEMM's K is 100")
        );
        assert_eq!(weights_over_limit(fp32, &odd, &odd, u64::MAX, None), None);
    }

    #[test]
    fn an_activation_or_output_above_the_buffer_limit_skips_the_ubatch() {
        let model = tiny();
        let fp32 = Precision::Fp32;
        // The biggest output and activations are 8192 x 160 fp32: 5 MiB.
        let mib = 1 << 20;
        assert_eq!(ubatch_over_limit(fp32, 8192, &model, &model, 5 * mib), None);
        let want = "ubatch 8192 needs a 5 MiB buffer, above maxStorageBufferRange (4 MiB)";
        assert_eq!(
            ubatch_over_limit(fp32, 8192, &model, &model, 4 * mib).as_deref(),
            Some(want)
        );
        // Small outputs: the activations alone are over.
        let narrow = model.map(|g| Gemm { n: 16, ..g });
        assert_eq!(
            ubatch_over_limit(fp32, 8192, &model, &narrow, 4 * mib).as_deref(),
            Some(want)
        );
        let short = model.map(|g| Gemm { k: 16, n: 16, ..g });
        assert_eq!(ubatch_over_limit(fp32, 8192, &short, &short, 4 * mib), None);
    }

    #[test]
    fn a_splitcu_screen_records_the_split_it_ran_with_and_others_none() {
        let cu = kernels::find("tiled-64x128-splitcu", Precision::Fp32).unwrap();
        // o at ubatch 64 on an H200: 16 workgroups, 16 slices; at 512 two.
        assert_eq!(resolved_split(&cu, (64, 2048, 2048), Some(132)), Some(16));
        assert_eq!(resolved_split(&cu, (512, 2048, 2048), Some(132)), Some(2));
        let fixed = kernels::find("tiled-64x128-split4", Precision::Fp32).unwrap();
        assert_eq!(resolved_split(&fixed, (64, 2048, 2048), Some(132)), None);
        let mut s = screened(&cu, &tiny()[0], Status::Ok, Some(1.0));
        assert_eq!(s.kernel_label(), "tiled-64x128-splitcu");
        s.split_k = Some(16);
        assert_eq!(s.kernel_label(), "tiled-64x128-splitcu (16)");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["split_k"], 16);
        s.split_k = None;
        assert!(serde_json::to_value(&s).unwrap().get("split_k").is_none());
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
