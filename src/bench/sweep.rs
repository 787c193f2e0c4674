//! The ubatch sweep: per precision and ubatch, check and time every kernel variant on each GEMM
//! shape of a layer, pick the fastest correct one per shape, then record and time the layer
//! stack with those kernels (and with llama.cpp's tiles), llama.cpp-style. A failure at one
//! ubatch is recorded with its Vulkan call and result and the sweep moves on.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::gemm::{self, DeviceMatrix};
use super::inject::Injector;
use super::kernels::{self, KernelSpec, Precision};
use super::model::Gemm;
use super::operands::{check_points, max_error, pack, random_values, Packed, Side};
use super::plan::{Plan, Size};
use super::report::{predict, GemmTime, Screen, Stack, Status, UbatchResult};
use super::runner::{median, warmup_runs, Bound, Runner};
use super::spill::{self, KernelDiagnostics};
use crate::vulkan::{Buffer, VkError};

/// Dispatches per command buffer: ggml-vulkan submits about every 100 graph nodes, of which
/// roughly a fifth are these GEMMs, so ~20 GEMM dispatches (4 layers) per command buffer.
pub const DISPATCHES_PER_COMMAND_BUFFER: usize = 20;
/// Sampled entries checked against the f64 reference per GEMM (plus edges and corners).
const CHECK_SAMPLES: usize = 192;
const CHECK_EDGE: u32 = 32;

pub struct Outcome {
    pub ubatches: Vec<UbatchResult>,
    pub kernels: Vec<KernelDiagnostics>,
    pub notes: Vec<String>,
    pub problems: bool,
}

struct Sweep<'r, 'g> {
    runner: &'r mut Runner<'g>,
    plan: &'r Plan,
    inject: &'r Injector,
    peaks: &'r HashMap<Precision, f64>,
    progress: bool,
    results: BTreeMap<u32, UbatchResult>,
    kernels: Vec<KernelDiagnostics>,
    notes: Vec<String>,
    problems: bool,
    lost: Option<VkError>,
    extra: Vec<KernelSpec>,
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
        extra: extra.to_vec(),
    };
    if plan.precisions.is_none() && s.runner.gpu.info.is_cpu() {
        s.notes.push("CPU device: only fp32 is measured by default (fp16/int8 are emulated there); ask with --precision".into());
    }
    for p in &precisions {
        s.precision(*p, precisions.len());
    }
    Outcome {
        ubatches: s.results.into_values().collect(),
        kernels: s.kernels,
        notes: s.notes,
        problems: s.problems,
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

impl Sweep<'_, '_> {
    fn say(&self, msg: &str) {
        if self.progress {
            eprintln!("smoke-bench: {msg}");
        }
    }

    fn stack_for_all(
        &mut self,
        p: Precision,
        status: Status,
        error: Option<VkError>,
        reason: Option<String>,
    ) {
        let layers = self.plan.model.layers;
        for r in self.results.values_mut() {
            r.stacks.push(empty_stack(
                p,
                "best",
                status,
                error.clone(),
                reason.clone(),
                layers,
            ));
        }
        if status == Status::Error {
            self.problems = true;
        }
    }

    fn precision(&mut self, p: Precision, n_precisions: usize) {
        let dev = self.runner.gpu.info.clone();
        if let Some(lost) = &self.lost {
            let reason = format!("not run: the device was lost earlier ({lost})");
            self.stack_for_all(p, Status::Skipped, None, Some(reason));
            return;
        }
        if let Some(reason) = p.unsupported_reason(&dev) {
            self.stack_for_all(p, Status::Skipped, None, Some(reason));
            return;
        }
        let mut variants: Vec<KernelSpec> = Vec::new();
        let all = kernels::catalogue()
            .into_iter()
            .chain(self.extra.iter().cloned());
        for k in all.filter(|k| k.precision == p) {
            match k.unsupported_reason(&dev) {
                Some(r) => self
                    .notes
                    .push(format!("{} {} not run: {r}", p.name(), k.name)),
                None => variants.push(k),
            }
        }
        let layer = self.plan.model.layer();
        // On CPU devices quick/default runs compute only the first `cap` outputs of each weight
        // matrix and scale the time by N / cap (GEMM time is linear in N once N spans many tiles).
        let cap = self.plan.output_cap(dev.is_cpu());
        let n_run: [u32; 5] = layer.map(|g| cap.map_or(g.n, |c| g.n.min(c)));
        if let Some(c) = cap {
            self.notes.push(format!(
                "CPU device: each GEMM computed its first {c} outputs only and its time was scaled to the full matrix (use --full for whole matrices)"
            ));
        }
        // Weights: one packed matrix per distinct shape (gate and up share values), one device
        // buffer per GEMM like a real model.
        let mut packed_w: HashMap<(u32, u32), Packed> = HashMap::new();
        for (g, &n) in layer.iter().zip(&n_run) {
            packed_w.entry((g.k, g.n)).or_insert_with(|| {
                pack(
                    p,
                    Side::Weights,
                    n,
                    g.k,
                    &random_values(n, g.k, u64::from(g.k) * 7 + u64::from(g.n)),
                )
            });
        }
        if let Some(too_big) = packed_w
            .values()
            .find(|w| w.data.len() as u64 > dev.max_storage_buffer_range)
        {
            let reason = format!(
                "a {}x{} weight matrix needs {:.0} MiB, above the device's maxStorageBufferRange ({:.0} MiB)",
                too_big.k,
                too_big.rows,
                mib(too_big.data.len() as u64),
                mib(dev.max_storage_buffer_range)
            );
            self.stack_for_all(p, Status::Skipped, None, Some(reason));
            return;
        }
        self.say(&format!("{}: uploading one layer of weights", p.name()));
        let weights: Result<Vec<DeviceMatrix>, VkError> = layer
            .iter()
            .map(|g| gemm::upload(self.runner.gpu, &packed_w[&(g.k, g.n)]))
            .collect();
        let weights = match weights {
            Ok(w) => w,
            Err(e) => {
                self.stack_for_all(p, Status::Error, Some(e), None);
                return;
            }
        };
        for (ui, ub) in self.plan.ubatches.clone().into_iter().enumerate() {
            if self.lost.is_some() {
                let reason = "not run: the device was lost at a smaller ubatch".to_string();
                let stack = empty_stack(
                    p,
                    "best",
                    Status::Skipped,
                    None,
                    Some(reason),
                    self.plan.model.layers,
                );
                self.results
                    .get_mut(&ub)
                    .expect("every ubatch has a result")
                    .stacks
                    .push(stack);
                continue;
            }
            // The first ubatch tries every variant; later ones try them fastest-first, as
            // measured so far, and drop the slow tail when the time budget runs out.
            self.ubatch(
                p,
                ub,
                ui == 0,
                n_precisions,
                &variants,
                &layer,
                &n_run,
                &packed_w,
                &weights,
            );
            if let Err(e) = self.runner.layouts.reset_sets() {
                self.lost = Some(e);
            }
            variants = rank_variants(&variants, &self.results[&ub].screens, p);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ubatch(
        &mut self,
        p: Precision,
        ub: u32,
        try_all: bool,
        n_precisions: usize,
        variants: &[KernelSpec],
        layer: &[Gemm; 5],
        n_run: &[u32; 5],
        packed_w: &HashMap<(u32, u32), Packed>,
        weights: &[DeviceMatrix],
    ) {
        let start = Instant::now();
        let share = self.plan.share_s(ub, n_precisions);
        // The GEMMs as run (possibly fewer outputs than the model's, see `output_cap`).
        let run_layer: [Gemm; 5] = std::array::from_fn(|i| Gemm {
            n: n_run[i],
            ..layer[i]
        });
        let full = self.plan.size == Size::Full;
        let layers_model = self.plan.model.layers;
        let fail_all = |this: &mut Self, e: VkError| {
            this.problems = true;
            let stack = empty_stack(p, "best", Status::Error, Some(e), None, layers_model);
            this.results
                .get_mut(&ub)
                .expect("every ubatch has a result")
                .stacks
                .push(stack);
        };
        if let Err(e) = self.inject.check(ub, "vkAllocateMemory") {
            return fail_all(self, e);
        }
        // Activations per distinct K, outputs per GEMM.
        let mut packed_x: HashMap<u32, Packed> = HashMap::new();
        for g in layer {
            packed_x.entry(g.k).or_insert_with(|| {
                pack(
                    p,
                    Side::Activations,
                    ub,
                    g.k,
                    &random_values(ub, g.k, u64::from(g.k) + 3),
                )
            });
        }
        let dev_range = self.runner.gpu.info.max_storage_buffer_range;
        let biggest_out = run_layer
            .iter()
            .map(|g| gemm::output_bytes(ub, g.n))
            .max()
            .unwrap_or(0);
        let biggest_x = packed_x
            .values()
            .map(|x| x.data.len() as u64)
            .max()
            .unwrap_or(0);
        if biggest_out.max(biggest_x) > dev_range {
            let reason = format!(
                "ubatch {ub} needs a {:.0} MiB buffer, above maxStorageBufferRange ({:.0} MiB)",
                mib(biggest_out.max(biggest_x)),
                mib(dev_range)
            );
            let stack = empty_stack(p, "best", Status::Skipped, None, Some(reason), layers_model);
            self.results
                .get_mut(&ub)
                .expect("every ubatch has a result")
                .stacks
                .push(stack);
            return;
        }
        let gpu = self.runner.gpu;
        let mut xdev: HashMap<u32, DeviceMatrix> = HashMap::new();
        for (k, x) in &packed_x {
            match gemm::upload(gpu, x) {
                Ok(d) => {
                    xdev.insert(*k, d);
                }
                Err(e) => return fail_all(self, e),
            }
        }
        let outs: Result<Vec<Buffer>, VkError> = run_layer
            .iter()
            .map(|g| Buffer::storage(gpu, gemm::output_bytes(ub, g.n)))
            .collect();
        let outs = match outs {
            Ok(o) => o,
            Err(e) => return fail_all(self, e),
        };
        let mut bounds: Vec<Bound> = Vec::with_capacity(layer.len());
        for (i, g) in layer.iter().enumerate() {
            let (x, w) = (&packed_x[&g.k], &packed_w[&(g.k, g.n)]);
            match gemm::bind(self.runner, &xdev[&g.k], &weights[i], &outs[i], x, w) {
                Ok(b) => bounds.push(b),
                Err(e) => return fail_all(self, e),
            }
        }

        // 1. Screening: every variant on every distinct shape, checked and timed.
        let mut distinct: Vec<usize> = Vec::new();
        for (i, g) in layer.iter().enumerate() {
            if !distinct
                .iter()
                .any(|&j| (layer[j].k, layer[j].n) == (g.k, g.n))
            {
                distinct.push(i);
            }
        }
        self.say(&format!(
            "{} ubatch {ub}: checking {} kernel variants on {} shapes",
            p.name(),
            variants.len(),
            distinct.len()
        ));
        let mut screens: Vec<Screen> = Vec::new();
        for (vi, spec) in variants.iter().enumerate() {
            let over_budget =
                vi > 0 && !full && !try_all && start.elapsed().as_secs_f64() > share * 0.5;
            for &gi in &distinct {
                let g = &layer[gi];
                if self.lost.is_some() || over_budget {
                    let reason = if over_budget {
                        "time budget of this run (use --full)"
                    } else {
                        "device lost"
                    };
                    screens.push(screen_skipped(p, spec, g, reason));
                    continue;
                }
                let mut s = self.screen(
                    p,
                    spec,
                    &run_layer[gi],
                    ub,
                    &bounds[gi],
                    &outs[gi],
                    &packed_x[&g.k],
                    &packed_w[&(g.k, g.n)],
                );
                s.shape = g.shape();
                screens.push(s);
            }
        }

        // 1b. On GPUs, time the correct kernels again back to back per shape, with no host work
        // in between, and keep those times (see Runner::time_many).
        if !self.runner.gpu.info.is_cpu() && self.runner.timestamps() && self.lost.is_none() {
            for &gi in &distinct {
                let g = &layer[gi];
                let ok: Vec<usize> = (0..screens.len())
                    .filter(|&i| screens[i].gemm == g.name && screens[i].status == Status::Ok)
                    .collect();
                let items: Vec<(&KernelSpec, Bound)> = ok
                    .iter()
                    .filter_map(|&i| variants.iter().find(|v| v.name == screens[i].kernel))
                    .map(|v| (v, bounds[gi]))
                    .collect();
                if items.len() != ok.len() || items.is_empty() {
                    continue;
                }
                let warm = warmup_runs(screens[ok[0]].seconds.unwrap_or(0.0));
                match self.runner.time_many(&items, warm, self.plan.reps()) {
                    Ok(times) => {
                        let run = &run_layer[gi];
                        for (&i, t) in ok.iter().zip(times) {
                            if let Some(secs) = median(&t) {
                                let gflops = run.flops(ub) / secs / 1e9;
                                screens[i].seconds = Some(secs);
                                screens[i].gflops = Some(gflops);
                                screens[i].efficiency = self.peak_for(p).map(|peak| gflops / peak);
                            }
                        }
                    }
                    Err(e) => {
                        self.problems = true;
                        if e.is_device_lost() {
                            self.lost = Some(e.clone());
                        }
                        for &i in &ok {
                            screens[i].status = Status::Error;
                            screens[i].error = Some(e.clone());
                        }
                    }
                }
            }
        }

        // 2. The fastest correct kernel per shape.
        let mut best: HashMap<(u32, u32), (&KernelSpec, f64)> = HashMap::new();
        for s in screens.iter().filter(|s| s.status == Status::Ok) {
            let spec = variants
                .iter()
                .find(|v| v.name == s.kernel)
                .expect("screened variant");
            let g = layer
                .iter()
                .find(|g| g.name == s.gemm)
                .expect("screened gemm");
            let t = s.seconds.unwrap_or(f64::INFINITY);
            let e = best.entry((g.k, g.n)).or_insert((spec, t));
            if t < e.1 {
                *e = (spec, t);
            }
        }
        let mut stacks = Vec::new();
        if self.lost.is_none() {
            let chosen: Option<Vec<&KernelSpec>> = layer
                .iter()
                .map(|g| best.get(&(g.k, g.n)).map(|b| b.0))
                .collect();
            match chosen {
                Some(chosen) => {
                    let est: f64 = layer.iter().map(|g| best[&(g.k, g.n)].1).sum();
                    stacks.push(self.stack(
                        p,
                        "best",
                        ub,
                        &chosen,
                        (layer, &run_layer),
                        &bounds,
                        est,
                        start,
                        share,
                    ));
                }
                None => stacks.push(empty_stack(
                    p,
                    "best",
                    Status::Skipped,
                    None,
                    Some("no kernel gave a correct result for every shape".into()),
                    layers_model,
                )),
            }
            // llama.cpp's own tile choice, to see what its pipeline does on this driver.
            let llama = kernels::llama_tile_for(ub);
            let want_llama = p == Precision::Fp32 && (full || !self.runner.gpu.info.is_cpu());
            if let (true, Some(spec)) = (want_llama, variants.iter().find(|v| v.name == llama)) {
                if self.lost.is_none() {
                    let chosen = vec![spec; layer.len()];
                    let est: f64 = screens
                        .iter()
                        .filter(|s| s.kernel == llama)
                        .filter_map(|s| s.seconds)
                        .sum::<f64>()
                        * 1.25;
                    stacks.push(self.stack(
                        p,
                        "llama.cpp tiles",
                        ub,
                        &chosen,
                        (layer, &run_layer),
                        &bounds,
                        est,
                        start,
                        share * 1.5,
                    ));
                }
            }
        }
        let r = self
            .results
            .get_mut(&ub)
            .expect("every ubatch has a result");
        r.screens.extend(screens);
        r.stacks.extend(stacks);
    }

    #[allow(clippy::too_many_arguments)]
    fn screen(
        &mut self,
        p: Precision,
        spec: &KernelSpec,
        g: &Gemm,
        ub: u32,
        bound: &Bound,
        out: &Buffer,
        x: &Packed,
        w: &Packed,
    ) -> Screen {
        let mut s = screen_skipped(p, spec, g, "");
        s.reason = None;
        self.diagnose(spec);
        // Slow devices get one timed run; the check run doubles as the warm-up.
        let reps = if self.plan.size == Size::Quick || self.runner.gpu.info.is_cpu() {
            1
        } else {
            self.plan.reps()
        };
        let times = match self.runner.time_single(spec, bound, reps) {
            Ok(t) => t,
            Err(e) => return self.screen_failed(s, e),
        };
        let c = match out.download(self.runner.gpu, gemm::output_bytes(ub, g.n)) {
            Ok(c) => gemm::to_f32(&c),
            Err(e) => return self.screen_failed(s, e),
        };
        let err = max_error(
            &c,
            g.n,
            x,
            w,
            &check_points(ub, g.n, CHECK_SAMPLES, CHECK_EDGE),
        );
        let secs = median(&times).unwrap_or(f64::NAN);
        let gflops = g.flops(ub) / secs / 1e9;
        s.seconds = Some(secs);
        s.gflops = Some(gflops);
        s.efficiency = self.peak_for(p).map(|peak| gflops / peak);
        s.max_error = Some(err);
        s.status = if err <= s.tolerance {
            Status::Ok
        } else {
            Status::Wrong
        };
        if s.status == Status::Wrong {
            self.problems = true;
        }
        s
    }

    fn screen_failed(&mut self, mut s: Screen, e: VkError) -> Screen {
        self.problems = true;
        if e.is_device_lost() {
            self.lost = Some(e.clone());
        }
        s.status = Status::Error;
        s.error = Some(e);
        s
    }

    /// The measured peak of the arithmetic a precision's kernels use.
    fn peak_for(&self, p: Precision) -> Option<f64> {
        match p {
            Precision::Fp32 | Precision::Q4_0 => self.peaks.get(&Precision::Fp32).copied(),
            Precision::Fp16 => self.peaks.get(&Precision::Fp16).copied(),
            Precision::Int8 => self.peaks.get(&Precision::Int8).copied(),
        }
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
        let d = spill::diagnose(
            &self.runner.gpu.info,
            spec.precision.name(),
            &spec.name,
            stats,
        );
        self.kernels.push(d);
    }

    #[allow(clippy::too_many_arguments)]
    fn stack(
        &mut self,
        p: Precision,
        label: &str,
        ub: u32,
        chosen: &[&KernelSpec],
        (layer, run_layer): (&[Gemm; 5], &[Gemm; 5]),
        bounds: &[Bound],
        est_layer_s: f64,
        start: Instant,
        share: f64,
    ) -> Stack {
        let model_layers = self.plan.model.layers;
        let full = self.plan.size == Size::Full;
        let slow = self.plan.size == Size::Quick || (self.runner.gpu.info.is_cpu() && !full);
        let (warmup, reps) = if slow { (0, 1) } else { (1, self.plan.reps()) };
        let runs = (warmup + reps) as f64;
        let layers = if full {
            model_layers
        } else {
            let left = (share - start.elapsed().as_secs_f64()).max(0.0);
            ((left / (est_layer_s.max(1e-9) * runs)) as u32).clamp(1, model_layers)
        };
        // Whole-stack warm-up submissions: at least one, and enough to keep the device busy for
        // WARM_S (its clock must be up before the timed runs; see Runner::time_single).
        let warmup = if slow {
            0
        } else {
            warmup.max(warmup_runs(est_layer_s * f64::from(layers)).min(50))
        };
        let mut stack = empty_stack(p, label, Status::Ok, None, None, model_layers);
        stack.kernels = layer
            .iter()
            .zip(chosen)
            .map(|(g, k)| (g.name.to_string(), k.name.clone()))
            .collect();
        stack.layers_recorded = layers;
        stack.extrapolated = layers < model_layers;
        let items: Vec<(&KernelSpec, Bound)> = (0..layers)
            .flat_map(|_| chosen.iter().zip(bounds).map(|(k, b)| (*k, *b)))
            .collect();
        stack.dispatches = items.len();
        stack.command_buffers = items.len().div_ceil(DISPATCHES_PER_COMMAND_BUFFER);
        self.say(&format!(
            "{} ubatch {ub}: {label}: {layers} of {model_layers} layers, {} dispatches in {} command buffers",
            p.name(),
            stack.dispatches,
            stack.command_buffers
        ));
        let timing = match self.runner.run_stack(
            &items,
            DISPATCHES_PER_COMMAND_BUFFER,
            warmup,
            reps,
            ub,
            self.inject,
        ) {
            Ok(t) => t,
            Err(e) => {
                self.problems = true;
                if e.is_device_lost() {
                    self.lost = Some(e.clone());
                }
                stack.status = Status::Error;
                stack.error = Some(e);
                return stack;
            }
        };
        stack.timing = if timing.timestamps {
            "timestamps"
        } else {
            "wall-clock"
        }
        .into();
        let total = median(&timing.total).unwrap_or(f64::NAN);
        let layer_flops: f64 = layer.iter().map(|g| g.flops(ub)).sum();
        let run_flops: f64 = run_layer.iter().map(|g| g.flops(ub)).sum();
        stack.sliced = run_flops < layer_flops;
        // Scale a sliced run to the model's matrices: per GEMM when timestamps give per-dispatch
        // times, by FLOPs otherwise.
        let mut per_layer = total / f64::from(layers) * layer_flops / run_flops;
        if timing.timestamps {
            let (mut run_sum, mut scaled_sum) = (0.0, 0.0);
            for (gi, g) in layer.iter().enumerate() {
                let all: Vec<f64> = timing
                    .per_dispatch
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % layer.len() == gi)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                if let Some(t) = median(&all) {
                    let t_full = t * f64::from(g.n) / f64::from(run_layer[gi].n);
                    run_sum += t;
                    scaled_sum += t_full;
                    stack.per_gemm.push(GemmTime {
                        gemm: g.name.into(),
                        shape: g.shape(),
                        kernel: chosen[gi].name.clone(),
                        seconds: t_full,
                        gflops: g.flops(ub) / t_full / 1e9,
                    });
                }
            }
            if stack.sliced && scaled_sum > 0.0 {
                // Barriers and gaps between dispatches scale with the dispatch count, not with N.
                let gaps = (total / f64::from(layers) - run_sum).max(0.0);
                per_layer = scaled_sum + gaps;
            }
        }
        stack.seconds_per_layer = Some(per_layer);
        stack.gflops = Some(layer_flops / per_layer / 1e9);
        let (tps, prompt) = predict(per_layer, model_layers, ub);
        stack.predicted_tokens_per_s = Some(tps);
        stack.prompt_5000_s = Some(prompt);
        stack
    }
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

    #[test]
    fn variants_are_ranked_by_measured_time_and_failures_go_last() {
        let layer = preset("tiny").unwrap().layer();
        let vs: Vec<KernelSpec> = kernels::catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Fp32)
            .take(3)
            .collect();
        let timed = |k: &KernelSpec, secs: f64, status: Status| {
            let mut s = screen_skipped(Precision::Fp32, k, &layer[0], "");
            s.status = status;
            s.seconds = Some(secs);
            s
        };
        // vs[0] slow, vs[1] fast, vs[2] wrong.
        let screens = vec![
            timed(&vs[0], 3.0, Status::Ok),
            timed(&vs[1], 1.0, Status::Ok),
            timed(&vs[2], 0.5, Status::Wrong),
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
}
