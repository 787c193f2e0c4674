//! `rvl serve`: the llama-server command rvl builds from its prefix, on fixture roots (always
//! `--print`: a foreign root's binaries are never run).

mod common;

use common::{plant_llama, rvl, Fixture, Rvl};
use rvl::exit;

const PREFIX: &str = "/opt/rvl/llama.cpp-0.3.36-rvl1";
const SERVER: &str = "/opt/rvl/llama.cpp-0.3.36-rvl1/bin/llama-server";

fn serve(fx: &Fixture, extra: &[&str]) -> Rvl {
    rvl(&["serve", "--print"])
        .root(fx)
        .arg("/models/qwen 3b.gguf")
        .args(extra)
}

/// boltzmann-mainline (every blocking check passes) with rvl's ICD installed.
fn ready_root() -> Fixture {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write(
        "etc/vulkan/icd.d/rvl_panvk.aarch64.json",
        fx.read("usr/share/vulkan/icd.d/panfrost_icd.aarch64.json"),
    );
    fx
}

#[test]
fn print_gives_the_exact_command_line_with_rvls_icd_and_the_patched_ubatch() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    let out = serve(&fx, &["--", "--port", "8080", "--alias", "a b"])
        .run()
        .expect_code(exit::OK);
    assert_eq!(
        out.stdout(),
        format!(
            "VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json {SERVER} --model '/models/qwen 3b.gguf' --n-gpu-layers 999 --ubatch-size 512 --port 8080 --alias 'a b'\n"
        )
    );
}

#[test]
fn json_gives_command_env_and_argv_and_leaves_out_what_only_a_live_system_knows() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    let doc = serve(&fx, &[])
        .arg("--json")
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(doc["command"], "serve");
    assert_eq!(
        doc["command_line"],
        format!("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json {SERVER} --model '/models/qwen 3b.gguf' --n-gpu-layers 999 --ubatch-size 512")
    );
    assert_eq!(
        doc["env"],
        serde_json::json!({"VK_DRIVER_FILES": "/etc/vulkan/icd.d/rvl_panvk.aarch64.json"}),
        "under --root: no XDG_RUNTIME_DIR guess, no GGML_VK_VISIBLE_DEVICES (no Vulkan probe)"
    );
    assert_eq!(
        doc["argv"],
        serde_json::json!([
            SERVER,
            "--model",
            "/models/qwen 3b.gguf",
            "--n-gpu-layers",
            "999",
            "--ubatch-size",
            "512"
        ])
    );
}

#[test]
fn a_build_without_the_tiles_patch_gets_ubatch_64_and_no_icd_means_no_vk_driver_files() {
    let fx = Fixture::copy("boltzmann-mainline");
    plant_llama(&fx, PREFIX, false);
    let out = serve(&fx, &[]).run().expect_code(exit::OK);
    assert_eq!(
        out.stdout(),
        format!("{SERVER} --model '/models/qwen 3b.gguf' --n-gpu-layers 999 --ubatch-size 64\n")
    );
}

#[test]
fn a_stock_llama_cpp_on_rvls_patched_panvk_gets_ubatch_512_and_on_rvls_stock_panvk_64() {
    for (root, ubatch) in [("panvk-rvl-patched", 512), ("panvk-rvl-stock", 64)] {
        let fx = Fixture::copy(root);
        plant_llama(&fx, PREFIX, false);
        let doc = serve(&fx, &[])
            .arg("--json")
            .run()
            .expect_code(exit::OK)
            .stdout_json();
        let line = doc["command_line"].as_str().unwrap();
        assert!(
            line.contains(&format!("--ubatch-size {ubatch}")),
            "{root}: {line}"
        );
    }
}

#[test]
fn the_newest_complete_prefix_is_used() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    plant_llama(&fx, "/opt/rvl/llama.cpp-0.3.36-rvl2", true);
    // Newer still, but unfinished (no stamp): not a build.
    fx.write("opt/rvl/llama.cpp-0.3.40-rvl1/bin/llama-server", "");
    let out = serve(&fx, &[]).run().expect_code(exit::OK);
    assert!(
        out.stdout()
            .contains(" /opt/rvl/llama.cpp-0.3.36-rvl2/bin/llama-server "),
        "{out}"
    );
}

#[test]
fn a_missing_prefix_is_refused_with_the_setup_fix() {
    let fx = ready_root();
    let out = serve(&fx, &[]).run().expect_code(exit::PROBLEMS);
    assert!(out.stdout().is_empty(), "{out}");
    for needle in [
        "rvl's llama.cpp is not installed",
        "sudo rvl setup --only llama-cpp",
    ] {
        assert!(out.stderr().contains(needle), "{needle:?}: {out}");
    }
    let doc = serve(&fx, &[])
        .arg("--json")
        .run()
        .expect_code(exit::PROBLEMS)
        .stdout_json();
    assert_eq!(doc["error"]["kind"], "refused");
}

#[test]
fn failing_blocking_checks_refuse_and_name_each_with_its_fix() {
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    plant_llama(&fx, PREFIX, true);
    let out = serve(&fx, &[]).run().expect_code(exit::PROBLEMS);
    assert!(out.stdout().is_empty(), "{out}");
    for needle in [
        "refusing to start llama-server",
        "gpu-driver:",
        "firmware:",
        "vulkan-icd:",
        "(fix: ",
    ] {
        assert!(out.stderr().contains(needle), "{needle:?}: {out}");
    }
}

#[test]
fn a_foreign_root_is_never_run_only_printed() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    let marker = fx.join("ran");
    fx.write(
        &format!("{}/bin/llama-server", &PREFIX[1..]),
        format!("#!/bin/sh\ntouch {}\n", marker.display()),
    );
    let out = rvl(&["serve"])
        .root(&fx)
        .arg("m.gguf")
        .run()
        .expect_code(exit::USAGE);
    assert!(out.stderr().contains("add --print"), "{out}");
    assert!(!marker.exists());
}

/// A `smoke-bench --gguf` run of a model named "qwen 3b.gguf" (stand-in llama-bench: ubatch
/// 128 runs out of device memory, 256 is slower than 64), recorded under the fixture's
/// `/state`, the XDG_STATE_HOME `serve` is then given, as if measured with the llama.cpp of
/// `prefix` (the stand-in lives outside any prefix; the record names the build it measured).
fn record_a_prefill_run(fx: &Fixture, prefix: &str) {
    let b = common::prefill::stand_in_named(
        &format!(
            "99:128) {};;\n99:256) json 100.5 GPU;;",
            common::prefill::OOM_ABORT
        ),
        "qwen 3b.gguf",
    );
    b.rvl(&["--ubatch", "16,64,128,256", "--no-cpu"])
        .env("XDG_STATE_HOME", fx.join("state"))
        .run()
        .expect_code(exit::PROBLEMS);
    let rel = "state/rvl/prefill/qwen 3b.gguf.json";
    let mut doc: serde_json::Value = serde_json::from_str(&fx.read(rel)).unwrap();
    doc["prefill"]["llama_bench"]["rvl_prefix"] = serde_json::json!(prefix);
    fx.write(rel, serde_json::to_vec_pretty(&doc).unwrap());
}

#[test]
fn the_fastest_ubatch_that_ran_in_the_models_recorded_prefill_run_wins_over_the_build_rule() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    record_a_prefill_run(&fx, PREFIX);
    let out = serve(&fx, &[])
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK);
    assert!(out.stdout().contains(" --ubatch-size 64\n"), "{out}");
    assert!(
        out.stderr().contains(
            "rvl serve: --ubatch-size 64 is the fastest that ran in /state/rvl/prefill/qwen 3b.gguf.json"
        ),
        "{out}"
    );
    let doc = serve(&fx, &["--json"])
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(
        doc["ubatch_from"],
        "smoke-bench --gguf record /state/rvl/prefill/qwen 3b.gguf.json"
    );
    // Another model has no record: the build's rule.
    let other = rvl(&["serve", "--print", "--json"])
        .root(&fx)
        .arg("/models/other.gguf")
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(other["ubatch_from"], "tiles patch");
    assert!(other["command_line"]
        .as_str()
        .unwrap()
        .ends_with("--ubatch-size 512"));
}

#[test]
fn a_ubatch_with_wrong_gpu_results_is_never_served_even_when_it_was_the_fastest() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    // The stand-in's GPU rate grows with the ubatch, so 256 would win; its check fails.
    common::prefill::record_wrong_results("qwen 3b.gguf", "16,64,256", "256", &fx.join("state"));
    let rel = "state/rvl/prefill/qwen 3b.gguf.json";
    let mut doc: serde_json::Value = serde_json::from_str(&fx.read(rel)).unwrap();
    assert_eq!(
        doc["prefill"]["ubatches"][2]["gpu"]["status"],
        "wrong_results"
    );
    doc["prefill"]["llama_bench"]["rvl_prefix"] = serde_json::json!(PREFIX);
    fx.write(rel, serde_json::to_vec_pretty(&doc).unwrap());
    let out = serve(&fx, &[])
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK);
    assert!(out.stdout().contains(" --ubatch-size 64\n"), "{out}");
    assert!(
        out.stderr().contains(
            "rvl serve: never ubatch 256: wrong results on the GPU in /state/rvl/prefill/qwen 3b.gguf.json (MUL_MAT(type_a=f16,m=128,n=256,k=128): [MUL_MAT] ERR = 0.531000000 > 0.000500000)"
        ),
        "{out}"
    );
}

#[test]
fn a_damaged_record_is_ignored_with_a_warning_and_the_build_rule_applies() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, false);
    fx.write("state/rvl/prefill/qwen 3b.gguf.json", "{ not json");
    let out = serve(&fx, &[])
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK);
    assert!(out.stdout().ends_with(" --ubatch-size 64\n"), "{out}");
    assert!(
        out.stderr().contains(
            "rvl serve: ignoring the smoke-bench record /state/rvl/prefill/qwen 3b.gguf.json"
        ),
        "{out}"
    );
}

#[test]
fn a_record_measured_with_another_llama_cpp_build_is_not_taken() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, false);
    // Measured with a patched build that is gone; the stock one left fails above 64.
    record_a_prefill_run(&fx, "/opt/rvl/llama.cpp-0.3.36-rvl2");
    let out = serve(&fx, &[])
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK);
    assert!(out.stdout().ends_with(" --ubatch-size 64\n"), "{out}");
    assert!(
        out.stderr().contains(
            "not taking the ubatch from /state/rvl/prefill/qwen 3b.gguf.json: it measured /opt/rvl/llama.cpp-0.3.36-rvl2, not /opt/rvl/llama.cpp-0.3.36-rvl1"
        ),
        "{out}"
    );
}
