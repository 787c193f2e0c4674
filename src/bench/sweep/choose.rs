//! Stage 3, choose: the fastest correct kernel per shape for a ubatch's stack, the variants
//! ranked for the next ubatch, and each kernel's best rate for the report.

use std::collections::HashMap;

use super::pack::shape_key;
use crate::bench::kernels::{KernelSpec, Precision};
use crate::bench::model::Gemm;
use crate::bench::report::{Screen, Status, UbatchResult};

/// The kernel chosen per GEMM of a layer, and the layer time screening measured for them.
#[derive(Debug, PartialEq)]
pub(super) struct Choice<'s> {
    pub(super) kernels: Vec<&'s str>,
    pub(super) est_layer_s: f64,
}

/// The fastest correct kernel per shape (the first screened on a tie), for every GEMM of the
/// layer; None when some shape has no correct kernel.
pub(super) fn choose_fastest<'s>(screens: &'s [Screen], layer: &[Gemm; 5]) -> Option<Choice<'s>> {
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

/// The variant of that name (the first, should an extra tile repeat a catalogue name).
pub(super) fn named<'v>(variants: &'v [KernelSpec], name: &str) -> &'v KernelSpec {
    variants
        .iter()
        .find(|v| v.name == name)
        .expect("screened variant")
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

/// The best GFLOP/s a kernel's correct screens measured over every shape and ubatch.
pub(super) fn best_measured(
    ubatches: &[UbatchResult],
    precision: &str,
    kernel: &str,
) -> Option<f64> {
    ubatches
        .iter()
        .flat_map(|u| &u.screens)
        .filter(|s| s.kernel == kernel && s.precision.name() == precision && s.status == Status::Ok)
        .filter_map(|s| s.gflops)
        .max_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{close, fp32_variants, screened, tiny};
    use super::*;

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
}
