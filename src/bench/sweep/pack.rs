//! Stage 1, pack: one layer of weights per precision and each ubatch's activations and outputs,
//! sized from the shapes against the device's buffer limit (and host memory) before anything is
//! allocated, then uploaded and bound per GEMM.

use std::collections::HashMap;

use super::{NoStack, Sweep};
use crate::bench::gemm::{self, DeviceMatrix};
use crate::bench::kernels::Precision;
use crate::bench::model::Gemm;
use crate::bench::operands::{footprint, pack, random_values, Packed, Side};
use crate::bench::runner::Bound;
use crate::vulkan::{Buffer, VkError};

/// One precision's layer: packed and uploaded once, used by every ubatch.
pub(super) struct Layer {
    pub(super) p: Precision,
    /// Precisions in this run, which share the time budget.
    pub(super) n_precisions: usize,
    /// The model's GEMMs.
    pub(super) model: [Gemm; 5],
    /// The GEMMs as run: on CPU devices fewer outputs than the model's (see `Plan::output_cap`).
    pub(super) run: [Gemm; 5],
    /// Packed weights per distinct model shape (gate and up share values).
    packed_w: HashMap<(u32, u32), Packed>,
    /// One device matrix per GEMM, like a real model.
    weights: Vec<DeviceMatrix>,
}

impl Layer {
    pub(super) fn packed_weights(&self, gi: usize) -> &Packed {
        &self.packed_w[&shape_key(&self.model[gi])]
    }
}

/// One ubatch's operands on the device, bound per GEMM. The buffers must outlive the bound
/// descriptor sets, so they are kept here until the ubatch is done.
pub(super) struct Operands {
    pub(super) ub: u32,
    /// Packed activations per distinct K.
    packed_x: HashMap<u32, Packed>,
    _activations: HashMap<u32, DeviceMatrix>,
    pub(super) outs: Vec<Buffer>,
    pub(super) bounds: Vec<Bound>,
}

impl Operands {
    pub(super) fn packed_activations(&self, g: &Gemm) -> &Packed {
        &self.packed_x[&g.k]
    }
}

/// Stage 1 on the device: the layer once per precision, the operands once per ubatch.
impl Sweep<'_, '_> {
    /// Pack: one layer of `p` weights, within the device's buffer limit, on the device.
    pub(super) fn pack_layer(
        &mut self,
        p: Precision,
        n_precisions: usize,
    ) -> Result<Layer, NoStack> {
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

    /// Stage 1, pack: activations per distinct K and an output per GEMM, within the device's
    /// buffer limit, on the device and bound to the layer's weights.
    pub(super) fn pack_ubatch(&mut self, layer: &Layer, ub: u32) -> Result<Operands, NoStack> {
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
}

/// The key weights are packed and chosen by: GEMMs of one shape share both.
pub(super) fn shape_key(g: &Gemm) -> (u32, u32) {
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
pub(super) fn distinct_shapes(layer: &[Gemm]) -> Vec<usize> {
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

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::tiny;
    use super::*;

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
}
