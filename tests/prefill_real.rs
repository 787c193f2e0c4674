//! The real llama.cpp, end to end: `rvl smoke-bench --gguf` runs the pinned, patched
//! llama.cpp's `llama-bench` (built for x86_64 with the Vulkan backend by
//! `scripts/llama-vulkan/build.sh`) on a random-weight llama GGUF that rvl's writer
//! (`rvl::gguf`) generates, on lavapipe and on the CPU.
//!
//! Needs `RVL_LLAMA_BENCH=PATH` (CI sets it to the script's output). Without it the tests
//! print SKIPPED, unless `RVL_REQUIRE_LLAMA=1` (CI) makes that a failure, so they cannot
//! pass vacuously. The vocab comes from the same tree (`RVL_LLAMA_VOCAB`, else the tree the
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
}
