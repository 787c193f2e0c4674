//! Every GEMM kernel variant, on lavapipe (or whatever Vulkan device is present), against the
//! f64 reference on every output entry, for shapes that are and are not multiples of the tiles.
//! With RVL_REQUIRE_VULKAN=1 (CI) a missing device fails the test instead of skipping it.
#![cfg(feature = "bench")]

mod common;

use rvl::bench::gemm::{compute_once, compute_repeated};
use rvl::bench::kernels::{catalogue, Family, Precision};
use rvl::bench::operands::{max_error, pack, random_values, Packed, Side};
use rvl::bench::runner::Runner;
use rvl::vulkan::{pick_device, Gpu, Instance};

fn instance() -> Option<Instance> {
    common::vulkan_instance()
}

/// The device rvl would pick.
fn open(inst: &Instance) -> Gpu {
    let index = pick_device(&inst.devices, None).expect("a device");
    Gpu::open(inst, index).expect("open device")
}

/// (tokens, outputs, K): tiny, ragged in every dimension, spanning several tiles, one token.
fn shapes(precision: Precision) -> Vec<(u32, u32, u32)> {
    match precision.k_block() {
        1 => vec![(1, 1, 1), (17, 37, 45), (130, 131, 70), (5, 260, 12)],
        _ => vec![(1, 1, 32), (17, 37, 96), (130, 131, 64), (5, 260, 32)],
    }
}

#[test]
fn every_kernel_matches_the_cpu_reference_on_ragged_shapes() {
    let Some(inst) = instance() else { return };
    let gpu = open(&inst);
    let mut runner = Runner::new(&gpu).expect("runner");
    let mut checked = 0;
    for spec in catalogue() {
        if let Some(reason) = spec.unsupported_reason(&gpu.info) {
            eprintln!(
                "{} {}: not supported here ({reason})",
                spec.precision.name(),
                spec.name
            );
            continue;
        }
        for (m, n, k) in shapes(spec.precision) {
            let x = pack(
                spec.precision,
                Side::Activations,
                m,
                k,
                &random_values(m, k, 1),
            );
            let w = pack(spec.precision, Side::Weights, n, k, &random_values(n, k, 2));
            let c = compute_once(&mut runner, &spec, &x, &w).unwrap_or_else(|e| {
                panic!("{} {} {m}x{n}x{k}: {e}", spec.precision.name(), spec.name)
            });
            let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
            let err = max_error(&c, n, &x, &w, &all);
            assert!(
                err <= spec.precision.tolerance(),
                "{} {} on {m}x{n}x{k}: error {err:e} above {:e}",
                spec.precision.name(),
                spec.name,
                spec.precision.tolerance()
            );
            checked += 1;
        }
    }
    // fp32 (8 variants) must always run; lavapipe also runs fp16, int8 and q4_0.
    assert!(checked >= 8 * 4, "only {checked} kernel/shape pairs ran");
}

/// Random fp32 activations (`m x k`, seed) and weights (`n x k`, seed + 1).
fn fp32_operands(m: u32, n: u32, k: u32, seed: u64) -> (Packed, Packed) {
    let x = pack(
        Precision::Fp32,
        Side::Activations,
        m,
        k,
        &random_values(m, k, seed),
    );
    let w = pack(
        Precision::Fp32,
        Side::Weights,
        n,
        k,
        &random_values(n, k, seed + 1),
    );
    (x, w)
}

#[test]
fn a_wrong_kernel_is_caught_by_the_check() {
    let Some(inst) = instance() else { return };
    let gpu = open(&inst);
    let mut runner = Runner::new(&gpu).expect("runner");
    let spec = catalogue().into_iter().next().expect("a kernel");
    let (m, n, k) = (9, 33, 20);
    let (x, w) = fp32_operands(m, n, k, 5);
    let mut c = compute_once(&mut runner, &spec, &x, &w).expect("run");
    let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    assert!(max_error(&c, n, &x, &w, &all) <= Precision::Fp32.tolerance());
    // Drop the last K column's contribution from one entry: the kind of bug a ragged edge hides.
    let last = (m * n - 1) as usize;
    c[last] -= x.values[(m * k - 1) as usize] * w.values[(n * k - 1) as usize];
    assert!(max_error(&c, n, &x, &w, &all) > Precision::Fp32.tolerance());
}

/// Random activations (`m x k`, seed) and weights (`n x k`, seed + 1), packed for `p`.
fn operands(p: Precision, m: u32, n: u32, k: u32, seed: u64) -> (Packed, Packed) {
    let x = pack(p, Side::Activations, m, k, &random_values(m, k, seed));
    let w = pack(p, Side::Weights, n, k, &random_values(n, k, seed + 1));
    (x, w)
}

#[test]
fn split_k_kernels_clear_their_output_before_every_run() {
    let Some(inst) = instance() else { return };
    let gpu = open(&inst);
    if gpu.info.driver_id == "MESA_LLVMPIPE" {
        // lavapipe has float atomics, so CI always runs the split-K kernels.
        assert!(
            gpu.info.float_atomic_add,
            "lavapipe without shaderBufferFloat32AtomicAdd"
        );
    }
    let mut runner = Runner::new(&gpu).expect("runner");
    // K = 96: three q4_0 blocks, six K steps of 16, split unevenly enough to matter.
    let (m, n, k) = (130, 131, 96);
    let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    let mut ran = 0;
    for spec in catalogue().into_iter().filter(|s| s.split_k > 1) {
        if spec.unsupported_reason(&gpu.info).is_some() {
            continue;
        }
        let (x, w) = operands(spec.precision, m, n, k, 7);
        // Warm-up plus three timed runs into one output: without the clear they would add up.
        let out = compute_repeated(&mut runner, &spec, &x, &w, 3).expect("run");
        let err = max_error(&out, n, &x, &w, &all);
        assert!(
            err <= spec.precision.tolerance(),
            "{} {} after repeated runs: error {err:e}",
            spec.precision.name(),
            spec.name
        );
        ran += 1;
    }
    if gpu.info.float_atomic_add {
        assert!(ran >= 2, "only {ran} split-K kernels ran");
    }
}

#[test]
fn splitcu_kernels_match_the_cpu_reference_at_the_splits_each_device_size_gives() {
    let Some(inst) = instance() else { return };
    let gpu = open(&inst);
    let mut runner = Runner::new(&gpu).expect("runner");
    let variants: Vec<_> = catalogue()
        .into_iter()
        .filter(|s| s.split_from_cus)
        .collect();
    assert!(
        variants.len() >= 4,
        "only {} -splitcu variants",
        variants.len()
    );
    if gpu.info.compute_units.is_none() {
        // lavapipe: not offered, since no split can be sized without the count.
        for s in &variants {
            assert!(s.unsupported_reason(&gpu.info).is_some(), "{}", s.name);
        }
    }
    if !gpu.info.float_atomic_add {
        return;
    }
    // Each variant resolved for an H200's 132 SMs, a 16-unit GPU and a 4-core Mali-sized one:
    // the splits differ per shape (up to 16 slices on the one-tile shapes, capped by K steps on
    // K = 12 and 45) and every one must give the reference's result.
    let mut splits = std::collections::BTreeSet::new();
    for spec in &variants {
        let p = spec.precision;
        // K = 260 is no whole number of q4_0/int8 blocks; 288 is.
        let extra = if p.k_block() > 1 {
            (64, 300, 288)
        } else {
            (64, 300, 260)
        };
        for (m, n, k) in shapes(p).into_iter().chain([extra]) {
            let (x, w) = operands(p, m, n, k, 13);
            let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
            for units in [132, 16, 4] {
                let shaped = spec.for_shape(m, n, x.ldk, Some(units));
                splits.insert(shaped.split_k);
                // Warm-up and timed runs into one output, as a screen does.
                let c = compute_repeated(&mut runner, &shaped, &x, &w, 2).expect("run");
                let err = max_error(&c, n, &x, &w, &all);
                assert!(
                    err <= p.tolerance(),
                    "{} {} split {} ({units} units) on {m}x{n}x{k}: error {err:e}",
                    p.name(),
                    spec.name,
                    shaped.split_k
                );
            }
        }
    }
    assert!(
        splits.len() >= 4 && splits.contains(&1) && splits.contains(&16),
        "splits tried: {splits:?}"
    );
}

#[test]
fn the_runner_sizes_a_splitcu_kernels_split_from_the_devices_compute_units() {
    let Some(inst) = instance() else { return };
    let mut gpu = open(&inst);
    if !gpu.info.float_atomic_add {
        return;
    }
    // As if the driver had said 132 SMs: the runner, not the caller, resolves the variant. Left
    // unresolved it would run the split-K build as one slice without clearing C, and the
    // warm-up and timed runs would add up.
    gpu.info.compute_units = Some(132);
    let mut runner = Runner::new(&gpu).expect("runner");
    let spec = catalogue()
        .into_iter()
        .find(|s| s.name == "tiled-64x128-splitcu")
        .expect("in the catalogue");
    assert_eq!(spec.unsupported_reason(&gpu.info), None);
    let (m, n, k) = (64, 300, 260);
    let (x, w) = fp32_operands(m, n, k, 17);
    assert_eq!(spec.for_shape(m, n, x.ldk, Some(132)).split_k, 16);
    let c = compute_repeated(&mut runner, &spec, &x, &w, 2).expect("run");
    let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    let err = max_error(&c, n, &x, &w, &all);
    assert!(err <= Precision::Fp32.tolerance(), "error {err:e}");
}

#[test]
fn the_int8_shared_memory_tiles_match_the_reference_on_the_ci_device() {
    let Some(inst) = instance() else { return };
    let gpu = open(&inst);
    let mut runner = Runner::new(&gpu).expect("runner");
    let tiles: Vec<_> = catalogue()
        .into_iter()
        .filter(|s| s.precision == Precision::Int8 && s.family == Family::Tiled)
        .collect();
    assert!(tiles.len() >= 4, "only {} int8 tiles", tiles.len());
    if gpu.info.driver_id == "MESA_LLVMPIPE" {
        // lavapipe reports shaderIntegerDotProduct, 32 KiB shared memory and float atomics, so
        // CI checks every int8 tile there.
        assert!(
            gpu.info.int8_dot,
            "lavapipe without shaderIntegerDotProduct"
        );
        // Not the -splitcu tiles: they wait for a compute-unit count, which lavapipe lacks.
        for s in tiles.iter().filter(|s| !s.split_from_cus) {
            assert_eq!(s.unsupported_reason(&gpu.info), None, "{}", s.name);
        }
    }
    // Ragged M and N (a partial row quad, a partial token tile, N not a multiple of 4); K = 160
    // is five blocks, each with its own scale per row, so the split-K slices (two blocks
    // against one, eight slices for five blocks) end unevenly and some are empty.
    let mut ran = 0;
    for (m, n, k) in [(37, 133, 160), (130, 66, 64), (3, 1, 32)] {
        let (x, w) = operands(Precision::Int8, m, n, k, 19);
        let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
        for spec in &tiles {
            if spec.unsupported_reason(&gpu.info).is_some() {
                continue;
            }
            // Warm-up and timed runs into one output, as a screen does (the split-K clear).
            let c = compute_repeated(&mut runner, spec, &x, &w, 2).expect("run");
            let err = max_error(&c, n, &x, &w, &all);
            assert!(
                err <= Precision::Int8.tolerance(),
                "int8 {} on {m}x{n}x{k}: error {err:e}",
                spec.name
            );
            ran += 1;
        }
    }
    if gpu.info.driver_id == "MESA_LLVMPIPE" {
        assert_eq!(ran, 3 * tiles.len(), "every int8 tile on every shape");
    }
}

#[test]
fn the_q4_0_shared_memory_tiles_dequantise_every_block_on_the_ci_device() {
    let Some(inst) = instance() else { return };
    let gpu = open(&inst);
    let mut runner = Runner::new(&gpu).expect("runner");
    let tiles: Vec<_> = catalogue()
        .into_iter()
        .filter(|s| s.precision == Precision::Q4_0 && s.family == Family::Tiled)
        .collect();
    if gpu.info.driver_id == "MESA_LLVMPIPE" {
        // lavapipe (32 KiB shared memory, float atomics) must run every q4_0 tile: it is the
        // only device CI checks them on.
        // Not the -splitcu tiles: they wait for a compute-unit count, which lavapipe lacks.
        for s in tiles.iter().filter(|s| !s.split_from_cus) {
            assert_eq!(s.unsupported_reason(&gpu.info), None, "{}", s.name);
        }
    }
    // Ragged M and N; K = 160 is five blocks, so K steps of 16 and 8 cross block boundaries and
    // the split-K slices (three steps of 16 against two) end inside a block.
    let (m, n, k) = (37, 133, 160);
    // Every block has its own scale (its largest magnitude / 7), so reading another block's scale
    // or nibbles is off by far more than rounding.
    let (x, w) = operands(Precision::Q4_0, m, n, k, 11);
    let all: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    let mut ran = 0;
    for spec in &tiles {
        if spec.unsupported_reason(&gpu.info).is_some() {
            continue;
        }
        let c = compute_once(&mut runner, spec, &x, &w).expect("run");
        let err = max_error(&c, n, &x, &w, &all);
        assert!(
            err <= Precision::Q4_0.tolerance(),
            "q4_0 {} on {m}x{n}x{k}: error {err:e}",
            spec.name
        );
        ran += 1;
    }
    if gpu.info.driver_id == "MESA_LLVMPIPE" {
        assert!(ran >= 3, "only {ran} q4_0 tiles ran");
    }
}
