//! The variants: every kernel rvl screens, per precision in the order a budgeted run screens
//! them, and the tile llama.cpp picks for a ubatch.

use super::spirv::{TiledLoop, TiledOperands};
use super::{KernelSpec, Precision};

/// The int8 shared-memory tiles (gemm_tiled_int8.comp), for devices with integer dot products
/// and fast local memory: one K step per block of 32, the large and medium tiles, a 32-row tile
/// for ubatch 16-64, and those split four and eight ways for the small grids (o and down at
/// ubatch 64). Not llama-like, so never on Mali (the lab rule), and like every int8 kernel only
/// where the device has shaderIntegerDotProduct.
fn int8_tiles() -> Vec<KernelSpec> {
    use TiledLoop::{Guarded, SplitK};
    [
        ("tiled-128x128", [128, 128, 32, 8, 8], Guarded),
        ("tiled-64x128", [64, 128, 32, 8, 8], Guarded),
        ("tiled-64x64", [64, 64, 32, 4, 8], Guarded),
        ("tiled-32x128", [32, 128, 32, 4, 8], Guarded),
        ("tiled-64x128-split4", [64, 128, 32, 8, 8], SplitK(4)),
        ("tiled-32x128-split8", [32, 128, 32, 4, 8], SplitK(8)),
    ]
    .into_iter()
    .map(|(name, dims, form)| KernelSpec::tiled_in(TiledOperands::Int8, name, dims, form))
    .collect()
}

/// The shared-memory tiles built for fp16 and q4_0 (gemm_tiled.comp -DF16 / -DQ4_0), for GPUs
/// with fast local memory: the fp32 family's shapes (guarded, peeled at BK 8, split-K in two),
/// tiles with fewer token rows for ubatch 16-64, where a 128-row tile is mostly padding, and those
/// split four and eight ways: Qwen2.5-3B's o and down have 2048 outputs, 16 workgroups of 128
/// at one token tile, against 132 SMs on an H200.
/// None is llama-like, so Mali never runs them (the lab rule: nothing spilling there).
fn low_precision_tiles(operands: TiledOperands) -> Vec<KernelSpec> {
    use TiledLoop::{Guarded, Peeled, SplitK, SplitPerCu};
    [
        ("tiled-128x128", [128, 128, 16, 8, 8], Guarded),
        ("tiled-64x128", [64, 128, 16, 8, 8], Guarded),
        ("tiled-128x64", [128, 64, 16, 8, 8], Guarded),
        ("tiled-64x64", [64, 64, 16, 4, 8], Guarded),
        ("tiled-32x128", [32, 128, 16, 4, 8], Guarded),
        ("tiled-128x128-k8-peeled", [128, 128, 8, 8, 8], Peeled),
        ("tiled-64x128-k8-peeled", [64, 128, 8, 8, 8], Peeled),
        ("tiled-128x64-split2", [128, 64, 16, 8, 8], SplitK(2)),
        ("tiled-64x128-split2", [64, 128, 16, 8, 8], SplitK(2)),
        ("tiled-64x128-split4", [64, 128, 16, 8, 8], SplitK(4)),
        ("tiled-64x64-split4", [64, 64, 16, 4, 8], SplitK(4)),
        ("tiled-32x128-split4", [32, 128, 16, 4, 8], SplitK(4)),
        ("tiled-32x128-split8", [32, 128, 16, 4, 8], SplitK(8)),
        // 16 rows, 64 invocations: ubatch 16 without half the tile as padding.
        ("tiled-16x128-split4", [16, 128, 16, 4, 8], SplitK(4)),
        ("tiled-16x128-split8", [16, 128, 16, 4, 8], SplitK(8)),
        // Split as many ways as the device's compute units need per shape, as for fp32 (on an
        // H200 the fp32 64x128 tile split 16 ways took down at ubatch 64 from 21.4 to 34.9
        // TFLOP/s over the best fixed split); offered only where the driver gives the count.
        ("tiled-128x64-splitcu", [128, 64, 16, 8, 8], SplitPerCu),
        ("tiled-64x128-splitcu", [64, 128, 16, 8, 8], SplitPerCu),
        ("tiled-64x64-splitcu", [64, 64, 16, 4, 8], SplitPerCu),
        ("tiled-32x128-splitcu", [32, 128, 16, 4, 8], SplitPerCu),
    ]
    .into_iter()
    .map(|(name, dims, form)| KernelSpec::tiled_in(operands, name, dims, form))
    .collect()
}

/// fp16 tiles that keep their operands fp16 in shared memory (gemm_tiled.comp -DF16
/// -DSHARED_F16): half the shared memory of the fp16 tiles above, so twice the workgroups fit
/// an SM, or a K step of 32 in the same bytes. On an H200 llama.cpp's fp16 tiles, which stage
/// fp16, beat rvl's fp32-staged ones at ubatch 64 (qkv 19.5 against 16.0 TFLOP/s) and at 128 on
/// gate (36.5 against 30.3); these are the same shapes staged as llama.cpp does, measured beside
/// them. After the fp16 family, so a budgeted run screens what it did before; never on Mali
/// (not llama-like).
fn fp16_shared_tiles() -> Vec<KernelSpec> {
    use TiledLoop::{Guarded, Peeled, SplitK};
    [
        ("tiled-128x128-smem16", [128, 128, 16, 8, 8], Guarded),
        ("tiled-64x64-smem16", [64, 64, 16, 4, 8], Guarded),
        ("tiled-128x128-k32-smem16", [128, 128, 32, 8, 8], Guarded),
        (
            "tiled-128x128-k8-peeled-smem16",
            [128, 128, 8, 8, 8],
            Peeled,
        ),
        ("tiled-128x64-split2-smem16", [128, 64, 16, 8, 8], SplitK(2)),
        ("tiled-64x128-split4-smem16", [64, 128, 16, 8, 8], SplitK(4)),
        ("tiled-64x64-split4-smem16", [64, 64, 16, 4, 8], SplitK(4)),
        (
            "tiled-64x64-k32-split4-smem16",
            [64, 64, 32, 4, 8],
            SplitK(4),
        ),
        ("tiled-32x128-split8-smem16", [32, 128, 16, 4, 8], SplitK(8)),
    ]
    .into_iter()
    .map(|(name, dims, form)| KernelSpec::tiled_in(TiledOperands::Fp16Shared, name, dims, form))
    .collect()
}

/// llama.cpp's tile for this ubatch: the medium 64x64 tile up to 64 tokens, the large 128x128
/// tile above (ggml_vk_guess_matmul_pipeline; research/perf-anchors.md §3.3).
pub fn llama_tile_for(ubatch: u32) -> &'static str {
    if ubatch <= 64 {
        "llama-64x64"
    } else {
        "llama-128x128"
    }
}

/// Every kernel variant, fastest-first guesses first within a precision. The register kernels
/// come first: they are the fastest guess on Mali and on CPU devices, where a budgeted run may
/// screen no further (fp16 at ubatch 16 on lavapipe: tiled-128x128 0.3 GFLOP/s, reg-4x4
/// 1.4-3.2). `--full` screens every variant wherever it runs.
pub fn catalogue() -> Vec<KernelSpec> {
    let mut all = fp32_kernels();
    all.extend([
        // fp16 data and maths.
        KernelSpec::reg(Precision::Fp16, 16, 4, 4, 4),
        KernelSpec::reg(Precision::Fp16, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Fp16, 8, 8, 4, 8),
    ]);
    all.extend(low_precision_tiles(TiledOperands::Fp16));
    all.extend(fp16_shared_tiles());
    all.extend([
        // int8 dot products: 4-8 accumulators for Mali, 8-16 elsewhere.
        KernelSpec::reg(Precision::Int8, 16, 4, 2, 2),
        KernelSpec::reg(Precision::Int8, 16, 4, 4, 1),
        KernelSpec::reg(Precision::Int8, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Int8, 16, 4, 4, 4),
    ]);
    all.extend(int8_tiles());
    all.extend([
        // 4-bit weights, fp32 activations: 2-4 accumulators for Mali, 8-16 elsewhere.
        KernelSpec::reg(Precision::Q4_0, 16, 4, 2, 2),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 4, 1),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 2, 1),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Q4_0, 16, 4, 4, 4),
    ]);
    all.extend(low_precision_tiles(TiledOperands::Q4_0));
    all
}

fn fp32_kernels() -> Vec<KernelSpec> {
    vec![
        // fp32, Mali-style register blocking (16-wide warps; 8-32 accumulators per invocation).
        // The 8-accumulator tiles are the ones Mali runs besides reg-4x4 (see MALI_SPILLS).
        KernelSpec::reg(Precision::Fp32, 16, 4, 4, 4),
        KernelSpec::reg(Precision::Fp32, 16, 4, 4, 2),
        KernelSpec::reg(Precision::Fp32, 16, 4, 2, 4),
        KernelSpec::reg(Precision::Fp32, 8, 8, 4, 8),
        KernelSpec::reg(Precision::Fp32, 16, 4, 8, 4),
        // fp32, shared-memory tiles for GPUs with fast local memory.
        KernelSpec::tiled("tiled-128x128", 128, 128, 16, 8, 8, false),
        KernelSpec::tiled("tiled-64x128", 64, 128, 16, 8, 8, false),
        KernelSpec::tiled("tiled-128x64", 128, 64, 16, 8, 8, false),
        // 256 invocations at BK 8 in the peeled form: the fastest for gate/up at ubatch 512 on
        // an H200 (38.9 TFLOP/s; the guarded 128x128 tile above gives 27.5).
        KernelSpec::tiled_peeled("tiled-128x128-k8-peeled", [128, 128, 8, 8, 8]),
        KernelSpec::tiled_peeled("tiled-64x128-k8-peeled", [64, 128, 8, 8, 8]),
        // The same tiles with K split in two: twice the workgroups, for grids with about one per
        // SM (down and o at ubatch 512 on a 132-SM H200 have 128; down goes 37.7 -> 41.6 TFLOP/s).
        KernelSpec::tiled_split("tiled-128x64-split2", [128, 64, 16, 8, 8], 2),
        KernelSpec::tiled_split("tiled-64x128-split2", [64, 128, 16, 8, 8], 2),
        // llama.cpp's medium and large tiles: 128 invocations, 32 and 128 accumulators each.
        KernelSpec::tiled("llama-64x64", 64, 64, 16, 4, 8, true),
        KernelSpec::tiled("llama-128x128", 128, 128, 8, 8, 16, true),
        // Small and medium grids (ubatch 16-64, and qkv/o at 512), after the guesses above so a
        // budgeted run that stops early screens what it did before: the fp16/q4_0 families'
        // tiles with fewer token rows, split four and eight ways (o and down at ubatch 64 are
        // 16-32 workgroups of these against 132 SMs on an H200)...
        KernelSpec::tiled_split("tiled-64x64", [64, 64, 16, 4, 8], 1),
        KernelSpec::tiled_split("tiled-32x128", [32, 128, 16, 4, 8], 1),
        KernelSpec::tiled_split("tiled-64x128-split4", [64, 128, 16, 8, 8], 4),
        KernelSpec::tiled_split("tiled-64x64-split4", [64, 64, 16, 4, 8], 4),
        KernelSpec::tiled_split("tiled-32x128-split4", [32, 128, 16, 4, 8], 4),
        KernelSpec::tiled_split("tiled-32x128-split8", [32, 128, 16, 4, 8], 8),
        KernelSpec::tiled_split("tiled-16x128-split4", [16, 128, 16, 4, 8], 4),
        KernelSpec::tiled_split("tiled-16x128-split8", [16, 128, 16, 4, 8], 8),
        // ...and the same tiles split as many ways as this device's compute units need per
        // shape, where the driver says how many it has.
        KernelSpec::tiled_split_per_cu("tiled-128x64-splitcu", [128, 64, 16, 8, 8]),
        KernelSpec::tiled_split_per_cu("tiled-64x128-splitcu", [64, 128, 16, 8, 8]),
        KernelSpec::tiled_split_per_cu("tiled-64x64-splitcu", [64, 64, 16, 4, 8]),
        KernelSpec::tiled_split_per_cu("tiled-32x128-splitcu", [32, 128, 16, 4, 8]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kernels::spirv::{
        GEMM_TILED_F16, GEMM_TILED_F16S, GEMM_TILED_INT8, GEMM_TILED_PEELED_F16,
        GEMM_TILED_PEELED_F16S, GEMM_TILED_PEELED_Q4_0, GEMM_TILED_Q4_0, GEMM_TILED_SPLITK_F16,
        GEMM_TILED_SPLITK_F16S, GEMM_TILED_SPLITK_INT8, GEMM_TILED_SPLITK_Q4_0,
    };
    use crate::bench::kernels::tests_support::{mali, nvidia};
    use crate::bench::kernels::{find, Family};

    #[test]
    fn llama_pair_matches_ggml_vulkan_register_pressure() {
        let m = find("llama-64x64", Precision::Fp32).unwrap();
        let l = find("llama-128x128", Precision::Fp32).unwrap();
        assert_eq!((m.invocations(), m.accumulators), (128, 32));
        assert_eq!((l.invocations(), l.accumulators), (128, 128));
        assert_eq!(llama_tile_for(64), "llama-64x64");
        assert_eq!(llama_tile_for(65), "llama-128x128");
    }

    #[test]
    fn fp16_and_q4_0_get_shared_memory_tiles_on_desktop_gpus_but_never_on_mali() {
        let mut desktop = nvidia();
        desktop.float_atomic_add = true;
        desktop.max_shared_memory = 48 * 1024;
        desktop.compute_units = Some(132);
        for (p, plain, peeled, split) in [
            (
                Precision::Fp16,
                GEMM_TILED_F16,
                GEMM_TILED_PEELED_F16,
                GEMM_TILED_SPLITK_F16,
            ),
            (
                Precision::Q4_0,
                GEMM_TILED_Q4_0,
                GEMM_TILED_PEELED_Q4_0,
                GEMM_TILED_SPLITK_Q4_0,
            ),
        ] {
            let tiles: Vec<_> = catalogue()
                .into_iter()
                .filter(|k| {
                    k.precision == p && k.family == Family::Tiled && !k.name.ends_with("-smem16")
                })
                .collect();
            assert!(tiles.len() >= 3, "{}: {} tiles", p.name(), tiles.len());
            let mut forms = [false; 3];
            for k in &tiles {
                // Each runs its own precision's build of gemm_tiled.comp in the loop form its
                // name says; a wrong build would read the operands in another format.
                let want = if k.split_k > 1 || k.split_from_cus {
                    forms[2] = true;
                    split
                } else if k.name.ends_with("-peeled") {
                    forms[1] = true;
                    peeled
                } else {
                    forms[0] = true;
                    plain
                };
                assert!(std::ptr::eq(k.spirv, want), "{} {}", p.name(), k.name);
                assert!(!k.llama_like, "{} {}", p.name(), k.name);
                assert_eq!(k.unsupported_reason(&desktop), None, "{}", k.name);
                let on_mali = k.unsupported_reason(&mali()).unwrap_or_default();
                assert!(on_mali.contains("spills on Mali"), "{}: {on_mali}", k.name);
            }
            assert_eq!(forms, [true; 3], "{}: guarded, peeled, split-K", p.name());
        }
        // The fp16 tiles that stage fp16 run the SHARED_F16 builds, in half the shared memory.
        let staged: Vec<_> = catalogue()
            .into_iter()
            .filter(|k| k.name.ends_with("-smem16"))
            .collect();
        assert!(staged.len() >= 3, "{} -smem16 tiles", staged.len());
        for k in &staged {
            assert_eq!(k.precision, Precision::Fp16, "{}", k.name);
            let want = if k.split_k > 1 {
                GEMM_TILED_SPLITK_F16S
            } else if k.name.contains("-peeled") {
                GEMM_TILED_PEELED_F16S
            } else {
                GEMM_TILED_F16S
            };
            assert!(std::ptr::eq(k.spirv, want), "{}", k.name);
            let [_, bm, bn, bk, ..] = k.spec[..] else {
                panic!("{}: spec {:?}", k.name, k.spec)
            };
            assert_eq!(k.shared_bytes, 2 * bk * (bm + bn) * 2, "{}", k.name);
            assert_eq!(k.unsupported_reason(&desktop), None, "{}", k.name);
            assert!(k.unsupported_reason(&mali()).is_some(), "{}", k.name);
        }
        // fp16 tiles need the device's fp16 support like the fp16 register kernels.
        let mut no_fp16 = desktop.clone();
        no_fp16.fp16 = false;
        let k = find("tiled-128x128", Precision::Fp16).expect("fp16 tile");
        assert!(k
            .unsupported_reason(&no_fp16)
            .unwrap()
            .contains("shaderFloat16"));
        // A device with less shared memory than a tile stages skips that tile.
        let mut small = desktop;
        small.max_shared_memory = 16 * 1024;
        let k = find("tiled-128x128", Precision::Q4_0).expect("q4_0 tile");
        assert!(k
            .unsupported_reason(&small)
            .unwrap()
            .contains("shared memory"));
    }

    #[test]
    fn int8_gets_integer_dot_tiles_where_the_device_has_int_dot_but_never_on_mali() {
        let mut desktop = nvidia();
        desktop.float_atomic_add = true;
        let tiles: Vec<_> = catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Int8 && k.family == Family::Tiled)
            .collect();
        assert!(tiles.len() >= 4, "{} int8 tiles", tiles.len());
        // A small-grid tile (32 token rows) and a split-K one are among them.
        assert!(tiles.iter().any(|k| k.tile_m <= 32 && k.split_k == 1));
        assert!(tiles.iter().any(|k| k.split_k > 1));
        for k in &tiles {
            let want = if k.split_k > 1 {
                GEMM_TILED_SPLITK_INT8
            } else {
                GEMM_TILED_INT8
            };
            assert!(std::ptr::eq(k.spirv, want), "{}", k.name);
            assert!(!k.llama_like, "{}", k.name);
            // One block of packed int8 and its scale per row, twice: 128x128 stages 18 KiB.
            assert_eq!(k.shared_bytes, 2 * (k.tile_m + k.tile_n) * 36, "{}", k.name);
            assert_eq!(k.unsupported_reason(&desktop), None, "{}", k.name);
            let on_mali = k.unsupported_reason(&mali()).unwrap_or_default();
            assert!(on_mali.contains("spills on Mali"), "{}: {on_mali}", k.name);
        }
        let mut no_dot = desktop;
        no_dot.int8_dot = false;
        let k = find("tiled-64x64", Precision::Int8).expect("an int8 tile");
        assert!(k
            .unsupported_reason(&no_dot)
            .unwrap()
            .contains("shaderIntegerDotProduct"));
        assert_eq!(k.shared_bytes, 2 * 128 * 36);
    }

    #[test]
    fn fp32_gets_the_small_grid_tiles_after_its_existing_guesses() {
        let fp32: Vec<String> = catalogue()
            .into_iter()
            .filter(|k| k.precision == Precision::Fp32)
            .map(|k| k.name)
            .collect();
        let at = |name: &str| {
            fp32.iter()
                .position(|n| n == name)
                .unwrap_or_else(|| panic!("{name}"))
        };
        let last_old = at("llama-128x128");
        for name in [
            "tiled-64x64",
            "tiled-32x128",
            "tiled-64x128-split4",
            "tiled-64x64-split4",
            "tiled-32x128-split4",
            "tiled-32x128-split8",
            "tiled-16x128-split4",
            "tiled-16x128-split8",
            "tiled-128x64-splitcu",
            "tiled-64x128-splitcu",
            "tiled-64x64-splitcu",
            "tiled-32x128-splitcu",
        ] {
            // Screened after the old ones, so a budget that ends early screens what it did.
            assert!(
                at(name) > last_old,
                "{name} screens before the existing fp32 guesses"
            );
        }
    }
}
