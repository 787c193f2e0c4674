//! Stage 2, screen: every variant on every distinct shape, checked against the f64 reference
//! and timed alone (on GPUs then again back to back); and the decisions of which screens the
//! time budget leaves out and what a screen's time and result say.

use std::collections::HashMap;
use std::time::Instant;

use super::pack::{distinct_shapes, Layer, Operands};
use super::{
    Budget, Sweep, CHECK_EDGE, CHECK_SAMPLES, RANKING_SHARE, SCREEN_SHARE, SKIPPED_FOR_TIME,
};
use crate::bench::gemm;
use crate::bench::kernels::{KernelSpec, Precision};
use crate::bench::model::Gemm;
use crate::bench::operands::{check_points, max_error};
use crate::bench::plan::Size;
use crate::bench::report::{Screen, Status};
use crate::bench::runner::{median, warmup_runs, Bound};
use crate::bench::spill;
use crate::bench::throughput;
use crate::vulkan::VkError;

/// Stage 2 on the device: screens, compiler statistics and back-to-back times.
impl Sweep<'_, '_> {
    /// Stage 2, screen: every variant on every distinct shape, checked and timed alone.
    /// Variants past the time budget, and everything after a lost device, are recorded as
    /// skipped.
    pub(super) fn screen_variants(
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
    pub(super) fn retime_back_to_back(
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

pub(super) fn screen_skipped(p: Precision, spec: &KernelSpec, g: &Gemm, reason: &str) -> Screen {
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

#[cfg(test)]
mod tests {
    use super::super::test_support::{fp32_variants, screened, tiny};
    use super::*;
    use crate::bench::kernels;

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
}
