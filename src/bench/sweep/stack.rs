//! Stage 4, stack: the layer stack recorded with the chosen kernels (and with llama.cpp's tiles),
//! submitted like llama.cpp does; and the decisions of how many layers it records and how its
//! time is scaled to the model.

use std::collections::BTreeMap;
use std::time::Instant;

use super::choose::{choose_fastest, named};
use super::pack::{Layer, Operands};
use super::{
    Budget, NoStack, Sweep, DISPATCHES_PER_COMMAND_BUFFER, LLAMA_STACK_SHARE, MAX_STACK_WARMUP,
};
use crate::bench::kernels::{self, KernelSpec, Precision};
use crate::bench::model::Gemm;
use crate::bench::plan::{Plan, Size};
use crate::bench::report::{predict, GemmTime, Screen, Stack, Status};
use crate::bench::runner::{median, warmup_runs, Bound, StackTiming};
use crate::vulkan::VkError;

/// A stack to record: a label, the kernel per GEMM of the layer, the layer time screening
/// predicts for them and the time it may take.
struct StackRequest<'v> {
    label: &'static str,
    chosen: Vec<&'v KernelSpec>,
    est_layer_s: f64,
    share_s: f64,
}

/// Stages 3 and 4 on the device: the stacks of a ubatch.
impl Sweep<'_, '_> {
    /// Stages 3 and 4, choose and stack: the layer stack with the fastest correct kernel per
    /// shape and, where it is measured, with llama.cpp's own tile choice, to see what its
    /// pipeline does on this driver.
    pub(super) fn stacks(
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
    use super::super::test_support::{close, fp32_variants, plan, screened, tiny};
    use super::*;

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
}
