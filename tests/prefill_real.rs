//! The real llama.cpp, end to end: `rvl smoke-bench --gguf` runs the pinned, patched
//! llama.cpp's `llama-bench` (built for x86_64 with the Vulkan backend by
//! `scripts/llama-vulkan/build.sh`) on a random-weight llama GGUF that rvl's writer
//! (`rvl::gguf`) generates, on lavapipe and on the CPU.
//!
//! Needs `RVL_LLAMA_BENCH=PATH` (CI sets it to the script's output) and the patched
//! `test-backend-ops` beside it (the script builds both), for the correctness check and the GEMM
//! bench's llama.cpp columns. Without them the tests print SKIPPED, unless `RVL_REQUIRE_LLAMA=1`
//! (CI) makes that a failure, so they cannot pass vacuously. The vocab comes from the same tree (`RVL_LLAMA_VOCAB`, else the tree the
//! script built from: BUILD_KEY/src/models/ggml-vocab-llama-spm.gguf).

mod common;

use common::llama::{llama, tiny_model};
use rvl::exit;

#[test]
fn smoke_bench_gguf_measures_the_generated_model_on_lavapipe_and_the_cpu_at_ubatch_16_and_64() {
    let Some(l) = llama() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (model, params) = tiny_model(&l, dir.path());
    // pp64 rather than the default pp512: the same cases, a quarter of lavapipe's time
    let out = common::rvl(&["smoke-bench", "--gguf"])
        .arg(&model)
        .args(&["--ubatch", "16,64", "--prompt", "64", "--llama-bench"])
        .arg(&l.bench)
        .arg("--json")
        // ggml skips CPU-type Vulkan devices (lavapipe) unless they are named
        .env("GGML_VK_VISIBLE_DEVICES", "0")
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .run()
        .expect_code(exit::OK);
    let doc = out.stdout_json();
    let p = &doc["prefill"];
    // llama.cpp loaded exactly the model rvl wrote
    assert_eq!(p["model"]["n_params"].as_u64(), Some(params), "{out}");
    assert!(
        p["model"]["model_type"].as_str().unwrap().contains("F16"),
        "{out}"
    );
    assert_eq!(p["prompt_tokens"], 64);
    let lb = &p["llama_bench"];
    assert_eq!(lb["backends"], "Vulkan", "{out}");
    assert!(
        lb["gpu_info"].as_str().unwrap().contains("llvmpipe"),
        "{out}"
    );
    assert_eq!(p["vulkan_device"]["kind"], "cpu", "lavapipe: {out}");

    let rows = p["ubatches"].as_array().unwrap();
    let ubatches: Vec<u64> = rows.iter().map(|r| r["ubatch"].as_u64().unwrap()).collect();
    assert_eq!(ubatches, vec![16, 64], "{out}");
    for r in rows {
        for side in ["gpu", "cpu"] {
            let case = &r[side];
            assert_eq!(case["status"], "ok", "ubatch {} {side}: {out}", r["ubatch"]);
            let ts = case["tokens_per_s"].as_f64().unwrap();
            assert!(ts > 0.0 && ts.is_finite(), "{ts}: {out}");
            assert_eq!(case["samples_tokens_per_s"].as_array().unwrap().len(), 3);
            let argv: Vec<&str> = case["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(argv[0], l.bench.to_str().unwrap());
        }
        assert!(r["gpu_cpu_ratio"].as_f64().unwrap() > 0.0, "{out}");
        assert!(r["gpu_prompt_5000_s"].as_f64().unwrap() > 0.0, "{out}");
        eprintln!(
            "ubatch {}: lavapipe {:.1} t/s, CPU {:.1} t/s",
            r["ubatch"], r["gpu"]["tokens_per_s"], r["cpu"]["tokens_per_s"]
        );
    }
    let best = p["best_gpu_ubatch"].as_u64().unwrap();
    assert!(best == 16 || best == 64, "{out}");
    assert_eq!(doc["exit_code"], exit::OK);
    // The real test-backend-ops checked lavapipe's matmuls at the model's four matrices against
    // llama.cpp's CPU before each GPU run, and they passed.
    assert_eq!(
        p["check_tool"]["path"],
        l.bin("test-backend-ops").to_str().unwrap(),
        "{out}"
    );
    assert_eq!(
        p["check_tool"]["shapes"],
        serde_json::json!([
            "f16 128x128",
            "f16 384x128",
            "f16 128x384",
            "f16 128x32000 (LM head)"
        ])
    );
    for r in rows {
        let c = &r["check"];
        assert_eq!(c["status"], "passed", "ubatch {}: {c:#}", r["ubatch"]);
        assert_eq!(
            (c["cases"].as_u64(), c["passed"].as_u64()),
            (Some(4), Some(4))
        );
        eprintln!(
            "ubatch {}: check {:.2} s ({})",
            r["ubatch"],
            c["seconds"].as_f64().unwrap(),
            c["argv"]
        );
    }
}

/// The GEMM bench with llama.cpp's real columns: test-backend-ops perf at the tiny preset's
/// shapes on lavapipe (llama.cpp's Vulkan kernels) and on its CPU backend.
#[cfg(feature = "bench")]
#[test]
fn smoke_bench_sets_llama_cpps_real_cpu_and_vulkan_products_beside_rvls_kernels() {
    let Some(l) = llama() else { return };
    let out = common::rvl(&[
        "smoke-bench",
        "--model",
        "tiny",
        "--ubatch",
        "16",
        "--quick",
        "--precision",
        "fp32,q4_0",
        "--json",
        "--test-backend-ops",
    ])
    .arg(l.bin("test-backend-ops"))
    .run()
    .expect_code(exit::OK);
    let doc = out.stdout_json();
    assert_eq!(doc["cpu_baseline"]["source"], "llama_cpp", "{out}");
    let runs = doc["llama_cpp"]["runs"].as_array().unwrap();
    for r in runs {
        assert_eq!(r["error"], serde_json::Value::Null, "{r:#}");
    }
    assert!(
        runs[0]["device"].as_str().unwrap().contains("llvmpipe"),
        "{out}"
    );
    let layers = doc["ubatches"][0]["llama_cpp"].as_array().unwrap();
    for (backend, t) in [
        ("vulkan", "f32"),
        ("vulkan", "q4_0"),
        ("cpu", "f32"),
        ("cpu", "q4_0"),
    ] {
        let x = layers
            .iter()
            .find(|x| x["backend"] == backend && x["ggml_type"] == t)
            .unwrap_or_else(|| panic!("{backend} {t}: {out}"));
        let g = x["gflops"].as_f64().unwrap();
        assert!(g > 0.0 && g.is_finite(), "{x}");
        eprintln!("llama.cpp {backend} {t}: {g:.2} GFLOP/s a layer");
    }
}
