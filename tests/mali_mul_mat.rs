//! rvl's Mali matmul pipelines (patches/llama.cpp 0003-0017) computed on a real Vulkan driver
//! against ggml's CPU backend, at the G610's subgroup size and at lavapipe's default: llama.cpp's
//! own `test-backend-ops test -o MUL_MAT`, built by `scripts/llama-vulkan/build.sh` beside
//! llama-bench, with the Mali pipelines forced (`GGML_VK_MALI_TILES=1`) on lavapipe.
//!
//! Two paths, each checked: the fp16 pipelines (mul_mm_mali.comp), which lavapipe takes as it
//! is, since it does not call its int8 dot products accelerated; and the int-dot one
//! (mul_mmq_mali.comp, q8_1 activations), which it takes under `GGML_VK_FORCE_INTEGER_DOT=1`.
//! ggml's device line (`int dot: 0` / `int dot: 1`) shows which path ran, and the test checks it.
//!
//! lavapipe reports `subgroupSize = 16` under `LP_NATIVE_VECTOR_WIDTH=512` and 8 under 256; the
//! test checks that ggml saw that warp size. Each width gets its own Mesa shader cache, so a
//! binary compiled for one width is never reused for the other.
//!
//! The cases (`CASES`) cover every Mali pipeline and weight type once or more: f16 weights with
//! f32 and f16 activations, f32, q4_0, q8_0, q4_K and q6_K; fp16 accumulators and the fp32 ones
//! (`prec=f32`, attention's KQ); the 32x32 tile (17 columns) and the 64x64 one; K a multiple of
//! the K step and not (77, 200); rows and columns that end inside a tile (100, 70, 17, 24);
//! batched and broadcast weights (bs [2,3], nr [2,1]); quantised rows of many blocks (K 1024),
//! which the loaders of 0007 and 0010 address by block and sub-block. On a Mali GPU the pipelines
//! keep their tiles in a storage buffer, a region per workgroup of a dispatch (0016, 0017), and
//! these tests run that build (`GGML_VK_MALI_BUFFER_TILES=1`; ggml's device line says which);
//! a dispatch of batches whose tiles pass a cap is split, each part after the one before, and
//! `CASES_SPLIT` runs the batched cases with the cap at 1 byte (a dispatch per batch). Other
//! GPUs, where `GGML_VK_MALI_TILES=1` forces the pipelines, get their shared-memory build:
//! `CASES_SHARED` checks it. At subgroup 8 a
//! subset (`CASES_SG8`)
//! runs, each shader build once. A wrong result fails the case: a shader
//! that skips one K step per block fails with ERR 0.032 > 0.0005 (docs/panvk-lab.md).
//!
//! Needs `RVL_LLAMA_BENCH=PATH` (CI sets it to build.sh's output; test-backend-ops is beside
//! it). Without it the tests print SKIPPED, unless `RVL_REQUIRE_LLAMA=1` (CI) makes that a
//! failure.

mod common;

use std::path::PathBuf;
use std::process::Command;

/// test-backend-ops' parameter filter (a regex on each case's parameters): the cases above.
/// Every line is a prefix, so a line also selects its `prec=f32` twin where patch 0005 adds one.
const CASES: &[&str] = &[
    r"type_a=f16,type_b=f32,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f16,type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f16,type_b=f32,m=100,n=70,k=77,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f16,type_b=f32,m=64,n=24,k=200,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f16,type_b=f32,m=64,n=48,k=128,bs=\[2,3\],nr=\[2,1\],",
    r"type_a=f16,type_b=f16,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f32,type_b=f32,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f32,type_b=f32,m=64,n=24,k=200,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=136,n=72,k=1024,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=20,k=512,bs=\[2,3\],nr=\[2,1\],",
    r"type_a=(q4_0|q8_0),type_b=f32,m=100,n=70,k=96,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=q4_K,type_b=f32,m=100,n=70,k=768,bs=\[1,1\],nr=\[1,1\],",
];
/// How many test-backend-ops cases `CASES` selects: 8 float lines, 8 quantised cases, the
/// quantised types over several blocks (patch 0009: 136x72 K 1024, 40x20 K 512 batched), the
/// block counts a two-block K step does not divide (patch 0012: 3 blocks of q4_0 and q8_0, 3
/// super-blocks of q4_K, 100x70), and the `prec=f32` twins (f16: 96x72, 40x17, 64x48 batched;
/// q4_0 and q4_K: 96x72, 40x17; every quantised type: 136x72).
const EXPECTED: usize = 8 + 8 + 8 + 3 + 11;

/// The int-dot path (`GGML_VK_FORCE_INTEGER_DOT=1`): the quantised lines of `CASES`, all four
/// types on mul_mmq_mali.comp.
const CASES_INT: &[&str] = &[
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=136,n=72,k=1024,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=20,k=512,bs=\[2,3\],nr=\[2,1\],",
    r"type_a=(q4_0|q8_0),type_b=f32,m=100,n=70,k=96,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=q4_K,type_b=f32,m=100,n=70,k=768,bs=\[1,1\],nr=\[1,1\],",
];
/// 16 quantised cases, 3 of patch 0012, and 8 `prec=f32` twins (q4_0 and q4_K: 96x72, 40x17;
/// each type: 136x72).
const EXPECTED_INT: usize = 16 + 3 + 8;

/// At lavapipe's default subgroup of 8 a subset: each shader build once (fp16 and fp32
/// accumulators, float and quantised A, both tiles, K not a multiple of 32). The shader uses no
/// subgroup operations, so the width the G610 runs (16, all of `CASES`) is the one that matters;
/// this keeps CI's cost down (lavapipe's compile of each pipeline is nearly all of it).
const CASES_SG8: &[&str] = &[
    r"type_a=f16,type_b=f32,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=f32,type_b=f32,m=64,n=24,k=200,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_K|q6_K),type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q8_0|q4_K),type_b=f32,m=136,n=72,k=1024,bs=\[1,1\],nr=\[1,1\],",
];
/// f16 and its `prec=f32` twin, f32, q4_K and its twin, q6_K, q8_0 and q4_K over several
/// blocks and their twins.
const EXPECTED_SG8: usize = 10;

/// The int-dot path at subgroup 8: both tiles, q4_0, q4_K and q6_K (the loaders with nibbles).
const CASES_INT_SG8: &[&str] = &[
    r"type_a=(q4_0|q4_K|q6_K),type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q4_K|q6_K),type_b=f32,m=136,n=72,k=1024,bs=\[1,1\],nr=\[1,1\],",
];
/// Three cases per line and the `prec=f32` twins (q4_0 and q4_K at 40x17; all three at 136x72).
const EXPECTED_INT_SG8: usize = 6 + 5;

/// The batched cases (6 batches), run with `GGML_VK_MALI_TILES_MAX_BYTES=1`: each batch its own
/// dispatch, reusing the first batch's tiles after a barrier. f16 (and its `prec=f32` twin) and
/// the four quantised types on the fp16 path (q6_K keeps shared memory: a control), the four on
/// the int-dot path.
const CASES_SPLIT: &[&str] = &[
    r"type_a=f16,type_b=f32,m=64,n=48,k=128,bs=\[2,3\],nr=\[2,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=20,k=512,bs=\[2,3\],nr=\[2,1\],",
];
const EXPECTED_SPLIT: usize = 2 + 4;
const CASES_SPLIT_INT: &[&str] =
    &[r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=20,k=512,bs=\[2,3\],nr=\[2,1\],"];
const EXPECTED_SPLIT_INT: usize = 4;

/// The shared-memory builds (`GGML_VK_MALI_BUFFER_TILES=0`, what a GPU other than Mali runs when
/// the pipelines are forced): f16 and f32 weights and the quantised types on the 32x32 tile, on
/// both paths.
const CASES_SHARED: &[&str] = &[
    r"type_a=(f16|f32),type_b=f32,m=96,n=72,k=256,bs=\[1,1\],nr=\[1,1\],",
    r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],",
];
/// f16 and its `prec=f32` twin, f32, four quantised cases and the q4_0 and q4_K twins.
const EXPECTED_SHARED: usize = 3 + 4 + 2;
const CASES_SHARED_INT: &[&str] =
    &[r"type_a=(q4_0|q8_0|q4_K|q6_K),type_b=f32,m=40,n=17,k=256,bs=\[1,1\],nr=\[1,1\],"];
const EXPECTED_SHARED_INT: usize = 4 + 2;

/// The pinned build's test-backend-ops (beside `RVL_LLAMA_BENCH`), or None to skip.
fn test_backend_ops() -> Option<PathBuf> {
    common::llama::llama().map(|l| l.bin("test-backend-ops"))
}

/// Run `cases` on lavapipe at `subgroup` (8 or 16), on the int-dot path or not, with `env` set
/// too, and check that ggml took that path and all `expected` cases passed.
fn mul_mat_cases_pass_at(
    subgroup: u32,
    int_dot: bool,
    cases: &[&str],
    expected: usize,
    env: &[(&str, &str)],
) {
    let Some(tbo) = test_backend_ops() else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let filter = format!(
        "^({})",
        cases
            .iter()
            .map(|c| c.trim_end_matches(','))
            .collect::<Vec<_>>()
            .join("|")
    );
    let t0 = std::time::Instant::now();
    let out = Command::new(&tbo)
        .args(["test", "-b", "Vulkan0", "-o", "MUL_MAT", "-p", &filter])
        .env("GGML_VK_MALI_TILES", "1")
        // ggml skips CPU-type Vulkan devices (lavapipe) unless they are named
        .env("GGML_VK_VISIBLE_DEVICES", "0")
        .env("LP_NATIVE_VECTOR_WIDTH", (subgroup * 32).to_string())
        .env("MESA_SHADER_CACHE_DIR", cache.path())
        .env("GGML_VK_FORCE_INTEGER_DOT", if int_dot { "1" } else { "0" })
        // the build a Mali GPU runs, unless `env` says otherwise
        .env("GGML_VK_MALI_BUFFER_TILES", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "subgroup {subgroup}, int dot {int_dot}: {:.0} s for the MUL_MAT cases",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        text.contains(&format!("warp size: {subgroup} ")),
        "ggml did not see subgroup {subgroup} on lavapipe:\n{text}"
    );
    assert!(
        text.contains(&format!("int dot: {} ", u8::from(int_dot))),
        "ggml did not take the {} path:\n{text}",
        if int_dot { "int-dot" } else { "fp16" }
    );
    let shared = env.contains(&("GGML_VK_MALI_BUFFER_TILES", "0"));
    let tiles = if shared {
        "shared memory"
    } else {
        "a storage buffer"
    };
    assert!(
        text.contains(&format!("Mali matmul tiles in {tiles}\n")),
        "ggml did not keep the tiles in {tiles}:\n{text}"
    );
    let failed: Vec<&str> = text.lines().filter(|l| l.contains("FAIL")).collect();
    assert!(failed.is_empty(), "failing cases:\n{}", failed.join("\n"));
    assert!(
        text.contains(&format!("{expected}/{expected} tests passed")),
        "expected {expected} passing cases:\n{text}"
    );
    assert!(out.status.success(), "{text}");
}

#[test]
fn the_mali_matmul_pipelines_match_the_cpu_at_subgroup_16() {
    mul_mat_cases_pass_at(16, false, CASES, EXPECTED, &[]);
}

#[test]
fn the_mali_matmul_pipelines_match_the_cpu_at_subgroup_8() {
    mul_mat_cases_pass_at(8, false, CASES_SG8, EXPECTED_SG8, &[]);
}

#[test]
fn the_mali_int_dot_pipeline_matches_the_cpu_at_subgroup_16() {
    mul_mat_cases_pass_at(16, true, CASES_INT, EXPECTED_INT, &[]);
}

#[test]
fn the_mali_int_dot_pipeline_matches_the_cpu_at_subgroup_8() {
    mul_mat_cases_pass_at(8, true, CASES_INT_SG8, EXPECTED_INT_SG8, &[]);
}

#[test]
fn a_batched_dispatch_split_to_fit_its_tiles_matches_the_cpu() {
    let cap = [("GGML_VK_MALI_TILES_MAX_BYTES", "1")];
    mul_mat_cases_pass_at(16, false, CASES_SPLIT, EXPECTED_SPLIT, &cap);
    mul_mat_cases_pass_at(16, true, CASES_SPLIT_INT, EXPECTED_SPLIT_INT, &cap);
}

#[test]
fn the_shared_memory_builds_match_the_cpu_at_subgroup_16() {
    let shared = [("GGML_VK_MALI_BUFFER_TILES", "0")];
    mul_mat_cases_pass_at(16, false, CASES_SHARED, EXPECTED_SHARED, &shared);
    mul_mat_cases_pass_at(16, true, CASES_SHARED_INT, EXPECTED_SHARED_INT, &shared);
}
