//! `rvl smoke-bench --gguf`: the real binary against a stand-in llama-bench (a sh script that
//! prints llama-bench's `-o json` output, crashes, hangs or prints garbage on chosen cases).

mod common;

use std::time::{Duration, Instant};

use common::prefill::{stand_in, OOM_ABORT};
use rvl::exit;

#[test]
fn a_run_that_succeeds_gives_the_table_with_gpu_cpu_and_their_ratio() {
    let b = stand_in("");
    let out = b.rvl(&["--ubatch", "64,16"]).run().expect_code(exit::OK);
    let s = out.stdout();
    for needle in [
        "| ubatch | GPU check | GPU pp512 t/s | CPU pp512 t/s | GPU/CPU | 5,000-token prefill time (GPU) | status |",
        "| 16 | - | 32.5 | 20.5 | 1.59x | 2.6 min | ok |",
        "| 64 | - | 128 | 20.5 | 6.27x | 38.9 s | ok |",
        "fastest GPU ubatch that ran: 64",
        "build b7000 (abc1234)",
        // The stand-in model has no tensor table: nothing to check, and it says so.
        "GPU check: not run (the GGUF header gives no weight matrices (",
    ] {
        assert!(s.contains(needle), "{needle:?}: {out}");
    }
    // A progress line per case on stderr, in order.
    let progress: Vec<&str> = out
        .stderr()
        .lines()
        .filter(|l| l.starts_with("smoke-bench: [") && l.contains(" t/s in "))
        .collect();
    assert_eq!(progress.len(), 4, "{out}");
    assert!(progress[0].starts_with("smoke-bench: [1/4] ubatch 16 on the GPU: 32.5 t/s"));
    // GPU runs offload every layer; CPU runs get no device at all and an explicit thread count.
    let calls = b.calls();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 4, "{calls}");
    assert!(
        lines[0].ends_with("-p 512 -n 0 -b 512 -ub 16 -r 3 -o json -ngl 99"),
        "{calls}"
    );
    assert!(
        lines[1].contains("-ub 16 -r 3 -o json -ngl 0 -dev none -t "),
        "{calls}"
    );
    assert!(b.record().is_file(), "the record for rvl serve: {out}");
}

#[test]
fn a_ubatch_whose_gpu_results_are_wrong_is_named_not_timed_and_the_sweep_goes_on() {
    let b = stand_in("");
    std::fs::write(&b.model, common::prefill::weights_gguf()).unwrap();
    let out = b
        .rvl(&["--ubatch", "16,64,128", "--no-cpu"])
        .env("TBO_WRONG_AT", "64")
        .run()
        .expect_code(exit::PROBLEMS);
    let s = out.stdout();
    for needle in [
        "| ubatch | GPU check | GPU pp512 t/s |",
        // (the G610 column: 771156 and 910832 t/s for this tiny f16 model)
        "| 16 | ok 4/4 | 32.5 | - | - | 2.6 min | 771156 | ok |",
        "| 64 | wrong | - | - | - | - | 910832 | GPU wrong results |",
        "| 128 | ok 4/4 | 256 | - | - | 19.5 s | 910832 | ok |",
        "✗ ubatch 64 GPU: wrong results (not timed): MUL_MAT(type_a=f16,m=128,n=64,k=128): [MUL_MAT] ERR = 0.531000000 > 0.000500000",
        "fastest GPU ubatch that ran: 128",
        "wrong results on the GPU at ubatch 64: not timed, and rvl serve never uses it",
        // The model's four matrices, the LM head at one token.
        "f16 128x128, f16 384x128, f16 128x384, f16 128x32000 (LM head)",
    ] {
        assert!(s.contains(needle), "{needle:?}: {out}");
    }
    // One check per GPU ubatch, on Vulkan0, before it; ubatch 64 was never timed.
    let checks = b.tbo_calls();
    let lines: Vec<&str> = checks.lines().collect();
    assert_eq!(lines.len(), 3, "{checks}");
    assert_eq!(
        lines[1],
        "test --mul-mat f16:128:64:128,f16:128:64:384,f16:384:64:128,f16:32000:1:128 -b Vulkan0"
    );
    let runs = b.calls();
    assert_eq!(runs.lines().count(), 2, "{runs}");
    assert!(!runs.contains("-ub 64 "), "{runs}");
    let doc = b
        .rvl(&["--ubatch", "16,64", "--no-cpu", "--json"])
        .env("TBO_WRONG_AT", "64")
        .run()
        .expect_code(exit::PROBLEMS)
        .stdout_json();
    let rows = &doc["prefill"]["ubatches"];
    assert_eq!(rows[0]["check"]["status"], "passed");
    assert_eq!(rows[0]["check"]["cases"], 4);
    assert_eq!(rows[1]["gpu"]["status"], "wrong_results");
    assert_eq!(rows[1]["check"]["status"], "wrong_results");
    assert_eq!(
        rows[1]["check"]["first_failure"],
        "MUL_MAT(type_a=f16,m=128,n=64,k=128): [MUL_MAT] ERR = 0.531000000 > 0.000500000"
    );
    assert_eq!(rows[1]["gpu"]["tokens_per_s"], serde_json::Value::Null);
    assert_eq!(doc["prefill"]["best_gpu_ubatch"], 16);
    assert_eq!(
        doc["prefill"]["check_tool"]["path"],
        b.tbo.to_str().unwrap()
    );
}

#[test]
fn a_test_backend_ops_without_rvls_patch_is_named_once_and_the_runs_are_timed_unchecked() {
    let b = stand_in("");
    std::fs::write(&b.model, common::prefill::weights_gguf()).unwrap();
    let out = b
        .rvl(&["--ubatch", "16,64", "--no-cpu"])
        .env("TBO_FAIL", "1")
        .run()
        .expect_code(exit::OK);
    assert!(
        out.stdout()
            .contains("GPU check: not run (this test-backend-ops lacks rvl's --mul-mat"),
        "{out}"
    );
    assert!(out.stdout().contains("| 64 | - | 128 |"), "{out}");
    assert_eq!(b.tbo_calls().lines().count(), 1, "tried once");
    // A path given that is not there is a usage error before anything runs.
    b.rvl(&["--test-backend-ops", "/nonexistent/tbo"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("--test-backend-ops /nonexistent/tbo: no such file");
}

#[test]
fn an_abort_at_one_ubatch_is_named_with_its_stderr_lines_and_the_sweep_goes_on() {
    let b = stand_in(&format!(
        "99:128) {OOM_ABORT};;\n0:256) echo 'ggml: segfault ahead' >&2; kill -SEGV $$;;"
    ));
    let out = b
        .rvl(&["--ubatch", "64,128,256"])
        .run()
        .expect_code(exit::PROBLEMS);
    let s = out.stdout();
    for needle in [
        "| 64 | - | 128 | 20.5 | 6.27x | 38.9 s | ok |",
        "| 128 | - | - | 20.5 | - | - | GPU out of device memory (SIGABRT) |",
        "| 256 | - | 512 | - | - | 9.76 s | CPU crashed (SIGSEGV) |",
        "✗ ubatch 128 GPU: out of device memory (SIGABRT): what():  vk::CommandBuffer::end: ErrorOutOfDeviceMemory",
        "│ terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'",
        "✗ ubatch 256 CPU: crashed (SIGSEGV)",
        "│ ggml: segfault ahead",
        // The fastest GPU run that ended ok, not the crashed one.
        "fastest GPU ubatch that ran: 256",
    ] {
        assert!(s.contains(needle), "{needle:?}: {out}");
    }
    assert_eq!(b.calls().lines().count(), 6, "every case ran");
}

#[test]
fn a_hanging_run_is_killed_at_the_case_timeout_and_the_next_case_runs() {
    let b = stand_in("99:64) echo 'waiting for the GPU' >&2; sleep 60;;");
    let start = Instant::now();
    let out = b
        .rvl(&["--ubatch", "16,64", "--no-cpu", "--case-timeout", "1"])
        .run()
        .expect_code(exit::PROBLEMS);
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let s = out.stdout();
    for needle in [
        "| 64 | - | - | - | - | - | GPU timeout |",
        "✗ ubatch 64 GPU: timeout (killed after 1 s): no result within --case-timeout 1 s",
        "│ waiting for the GPU",
        "| 16 | - | 32.5 | - | - | 2.6 min | ok |",
        "CPU runs: skipped (--no-cpu)",
    ] {
        assert!(s.contains(needle), "{needle:?}: {out}");
    }
}

#[test]
fn malformed_json_and_a_gpu_run_without_a_vulkan_device_get_their_own_status() {
    let b = stand_in(
        "99:16) echo '[ {\"n_prompt\": 512, '; exit 0;;\n99:32) json 20.1 \"\";;\n99:64) echo 'ggml_vulkan: No devices found.' >&2; exit 1;;",
    );
    let out = b
        .rvl(&["--ubatch", "16,32,64", "--no-cpu", "--json"])
        .run()
        .expect_code(exit::PROBLEMS);
    let doc = out.stdout_json();
    let rows = doc["prefill"]["ubatches"].as_array().unwrap();
    let status = |i: usize| rows[i]["gpu"]["status"].as_str().unwrap();
    assert_eq!(
        (status(0), status(1), status(2)),
        ("bad_output", "no_vulkan_device", "no_vulkan_device"),
        "{out}"
    );
    assert!(rows[0]["gpu"]["detail"]
        .as_str()
        .unwrap()
        .contains("cut short"));
    assert_eq!(rows[1]["gpu"]["tokens_per_s"], serde_json::Value::Null);
    assert_eq!(doc["prefill"]["best_gpu_ubatch"], serde_json::Value::Null);
    assert_eq!(doc["exit_code"], exit::PROBLEMS);
}

#[test]
fn save_then_compare_shows_a_crash_fixed_and_the_change_per_ubatch() {
    let before = stand_in(&format!("99:128) {OOM_ABORT};;"));
    let saved = before.path("before.json");
    before
        .rvl(&["--ubatch", "64,128", "--no-cpu", "--save"])
        .arg(&saved)
        .run()
        .expect_code(exit::PROBLEMS)
        .expect_stdout("saved: ");
    let after = stand_in("");
    let out = after
        .rvl(&["--ubatch", "64,128", "--no-cpu", "--compare"])
        .arg(&saved)
        .env("GPU_FACTOR", "3")
        .run()
        .expect_code(exit::OK);
    for needle in [
        "compared with the saved run (llama.cpp b7000 (abc1234)",
        "| 64 | GPU | 128 t/s | 192 t/s | +50% |",
        "| 128 | GPU | out of device memory | 384 t/s | - |",
    ] {
        assert!(out.stdout().contains(needle), "{needle:?}: {out}");
    }
    let doc = after
        .rvl(&["--ubatch", "64,128", "--no-cpu", "--json", "--compare"])
        .arg(&saved)
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(
        doc["comparison"]["rows"][1]["before_status"],
        "out_of_device_memory"
    );
    assert_eq!(doc["comparison"]["rows"][1]["after_status"], "ok");
}

#[test]
fn compare_refuses_a_gemm_result_before_anything_runs() {
    let b = stand_in("");
    let gemm = b.path("gemm.json");
    std::fs::write(
        &gemm,
        r#"{"schema_version": 1, "tool": "rvl smoke-bench 0.1.0", "ubatches": []}"#,
    )
    .unwrap();
    b.rvl(&["--compare"])
        .arg(&gemm)
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("a GEMM smoke-bench result");
    assert_eq!(b.calls(), "", "nothing ran before the input error");
}

#[test]
fn a_file_that_is_not_gguf_and_a_missing_llama_bench_are_refused_before_any_run() {
    let b = stand_in("");
    std::fs::write(&b.model, "not a model").unwrap();
    b.rvl(&[])
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("not a GGUF model");
    let b = stand_in("");
    common::rvl(&["smoke-bench", "--gguf"])
        .arg(&b.model)
        .args(&["--llama-bench", "/nonexistent/llama-bench"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("--llama-bench /nonexistent/llama-bench: no such file");
}

#[test]
fn gguf_only_flags_without_gguf_and_gemm_only_flags_with_it_are_usage_errors() {
    common::rvl(&["smoke-bench", "--prompt", "128"])
        .run()
        .expect_code(exit::USAGE);
    let b = stand_in("");
    b.rvl(&["--precision", "fp16"])
        .run()
        .expect_code(exit::USAGE);
    b.rvl(&["--prompt", "0"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("--prompt 0");
}

#[cfg(feature = "bench")]
#[test]
fn a_users_ggml_vk_visible_devices_reaches_llama_bench_and_names_the_recorded_device() {
    let Some(instance) = common::vulkan_instance() else {
        return;
    };
    let b = stand_in("");
    let doc = b
        .rvl(&["--ubatch", "16", "--no-cpu", "--json"])
        .env("GGML_VK_VISIBLE_DEVICES", "0")
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert!(
        b.calls().starts_with("GGML_VK_VISIBLE_DEVICES=0 "),
        "{}",
        b.calls()
    );
    let d = &doc["prefill"]["vulkan_device"];
    assert_eq!(d["index"], 0);
    assert_eq!(d["name"], instance.devices[0].name.as_str());
    assert_eq!(d["driver_info"], instance.devices[0].driver_info.as_str());
    if instance.devices[0].kind == "cpu" {
        let notes = doc["prefill"]["notes"].to_string();
        assert!(notes.contains("CPU implementation (lavapipe)"), "{notes}");
    }
}

#[cfg(feature = "bench")]
#[test]
fn a_model_whose_header_gives_its_shapes_gets_the_gemm_prediction_beside_the_measurement() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let b = stand_in("");
    // The `tiny` preset's shapes, all F32: a quick sweep of seconds on lavapipe.
    std::fs::write(&b.model, common::prefill::tiny_shapes_gguf(Some(0))).unwrap();
    let out = b
        .rvl(&["--ubatch", "16", "--no-cpu", "--json"])
        .run()
        .expect_code(exit::OK);
    let doc = out.stdout_json();
    let p = &doc["prefill"]["gemm_prediction"];
    assert_eq!(p["error"], serde_json::Value::Null, "{out}");
    assert_eq!(
        p["shapes"],
        "llama: hidden 64, ffn 160, 2 layers, 4 heads (2 KV)"
    );
    assert_eq!(
        p["points"][0]["precision"], "fp32",
        "the file type's precision"
    );
    assert_eq!(p["sweep"], "default", "{p}");
    // --quick and --full size the prediction's sweep as they size smoke-bench's own; only a
    // smaller sweep than --full points to it.
    for (flag, word) in [("--quick", "quick"), ("--full", "full")] {
        let sized = b
            .rvl(&["--ubatch", "16", "--no-cpu", "--json", flag])
            .run()
            .expect_code(exit::OK)
            .stdout_json();
        assert_eq!(sized["prefill"]["gemm_prediction"]["sweep"], word, "{flag}");
        let notes = sized["prefill"]["notes"].to_string();
        assert!(
            notes.contains(&format!("(a {word} sweep")),
            "{flag}: {notes}"
        );
        assert_eq!(
            notes.contains("--full screens every kernel"),
            flag == "--quick",
            "{flag}: {notes}"
        );
    }
    let row = &doc["prefill"]["ubatches"][0];
    let pred = row["gemm_predicted_tokens_per_s"].as_f64().unwrap();
    let ratio = row["measured_over_predicted"].as_f64().unwrap();
    assert!((ratio - 32.5 / pred).abs() < 1e-9 * ratio.max(1.0), "{row}");
    let human = b
        .rvl(&["--ubatch", "16", "--no-cpu"])
        .run()
        .expect_code(exit::OK);
    assert!(
        human
            .stdout()
            .contains("| GEMM-only pred t/s | GPU/pred | status |"),
        "{human}"
    );
}

#[test]
fn a_header_without_shapes_says_why_there_is_no_prediction_and_keeps_the_plain_table() {
    let b = stand_in("");
    let out = b
        .rvl(&["--ubatch", "16", "--no-cpu"])
        .run()
        .expect_code(exit::OK);
    assert!(!out.stdout().contains("GEMM-only pred"), "{out}");
    assert!(
        out.stdout().contains(
            "note: no GEMM prediction beside it: the GGUF header gives no usable layer shapes ("
        ),
        "{out}"
    );
}

/// Layer shapes of 2^32-1 (llama-bench never reads them; rvl's prediction does): a named note,
/// and the measured runs come out whole, as JSON and as the table. On 4201ed1 the prediction
/// tried to allocate 4 TB after the runs and the process aborted with nothing printed.
#[test]
fn absurd_layer_shapes_are_a_named_note_and_the_measured_runs_still_come_out() {
    let b = stand_in("");
    let max = u32::MAX;
    for (hidden, ffn, layers, key) in [
        (max, 64, 2, "embedding_length"),
        (64, max, 2, "feed_forward_length"),
        (64, 64, max, "block_count"),
    ] {
        let gguf = common::prefill::shapes_gguf(hidden, ffn, layers, 1, 1, Some(2));
        std::fs::write(&b.model, gguf).unwrap();
        let out = b
            .rvl(&["--ubatch", "16", "--no-cpu", "--json"])
            .run()
            .expect_code(exit::OK);
        let doc = out.stdout_json();
        let p = &doc["prefill"];
        assert_eq!(p["ubatches"][0]["gpu"]["status"], "ok", "{out}");
        assert_eq!(p["ubatches"][0]["gpu"]["tokens_per_s"], 32.5, "{out}");
        let error = p["gemm_prediction"]["error"].as_str().unwrap_or_default();
        assert_eq!(
            error,
            format!("the GGUF header gives no usable layer shapes (llama.{key} 4294967295 is beyond any real model (at most {}))",
                match key { "embedding_length" => 65536, "feed_forward_length" => 262144, _ => 1024 }),
            "{out}"
        );
        assert!(p["gemm_prediction"]["points"]
            .as_array()
            .unwrap()
            .is_empty());
    }
    let human = b
        .rvl(&["--ubatch", "16", "--no-cpu"])
        .run()
        .expect_code(exit::OK);
    assert!(human.stdout().contains("| 16 | - | 32.5 |"), "{human}");
    assert!(
        human
            .stdout()
            .contains("note: no GEMM prediction beside it: the GGUF header gives no usable layer shapes (llama.block_count 4294967295 is beyond"),
        "{human}"
    );
}

/// A K that q4_0's blocks do not divide, and the largest shapes rvl takes (hidden 65536, ffn
/// 262144, 1024 layers: 64 GiB per fp32 weight matrix): sized by arithmetic before anything is
/// packed, the reason named in the prediction's error, the measured runs kept. On 4201ed1 the
/// first panicked in the Q4_0 packer (exit 70, results lost); the second, on a GPU whose
/// outputs are not capped as lavapipe's are, packed 64 GiB on the host before checking the
/// device's limit, and gave no reason for the missing prediction anywhere.
#[cfg(feature = "bench")]
#[test]
fn shapes_too_large_for_the_device_or_not_whole_blocks_are_skipped_before_packing() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let b = stand_in("");
    for (gguf, precision, why) in [
        (
            common::prefill::shapes_gguf(100, 160, 2, 4, 2, Some(2)),
            "q4_0",
            "q4_0 needs every K to be a multiple of 32; the qkv GEMM's K is 100",
        ),
        (
            common::prefill::shapes_gguf(65536, 262144, 1024, 64, 8, Some(0)),
            "fp32",
            "above the device's maxStorageBufferRange",
        ),
    ] {
        std::fs::write(&b.model, gguf).unwrap();
        let out = b
            .rvl(&["--ubatch", "16", "--no-cpu", "--json", "--quick"])
            .run()
            .expect_code(exit::OK);
        let doc = out.stdout_json();
        let p = &doc["prefill"];
        assert_eq!(p["ubatches"][0]["gpu"]["status"], "ok", "{out}");
        let error = p["gemm_prediction"]["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with(&format!(
                "no kernel ran at the model's shapes ({precision}: "
            )),
            "{out}"
        );
        assert!(error.contains(why), "{why}: {out}");
    }
}

/// What llama-bench with `-rpc` prints on a head without a Vulkan device of its own: ggml's
/// "No devices found", and a result whose backends name RPC and whose gpu_info is the workers.
const RPC_RUN: &str = "echo 'ggml_vulkan: No devices found.' >&2; json 64.5 \"$RPC\" | sed 's/\"Vulkan\"/\"Vulkan,RPC\"/'";

#[test]
fn rpc_workers_join_the_gpu_cases_only_and_a_head_without_vulkan_is_no_fault_then() {
    let worker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = worker.local_addr().unwrap().to_string();
    let b = stand_in(&format!("99:*) {RPC_RUN};;"));
    let out = b
        .rvl(&["--ubatch", "16", "--json", "--rpc", &at])
        .env("RPC", &at)
        .run()
        .expect_code(exit::OK);
    let doc = out.stdout_json();
    let p = &doc["prefill"];
    assert_eq!(p["rpc"], serde_json::json!([at]), "{out}");
    let row = &p["ubatches"][0];
    assert_eq!(row["gpu"]["status"], "ok", "{out}");
    assert_eq!(row["gpu"]["tokens_per_s"], 64.5);
    assert_eq!(row["cpu"]["status"], "ok", "{out}");
    let calls = b.calls();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 2, "{calls}");
    assert!(lines[0].ends_with(&format!("-ngl 99 -rpc {at}")), "{calls}");
    assert!(
        !lines[1].contains("-rpc"),
        "the CPU run is this board's: {calls}"
    );
    // The same output from a run given no workers is a GPU run that found no GPU.
    let local = b
        .rvl(&["--ubatch", "16", "--no-cpu", "--json"])
        .env("RPC", &at)
        .run()
        .expect_code(exit::PROBLEMS)
        .stdout_json();
    assert_eq!(
        local["prefill"]["ubatches"][0]["gpu"]["status"],
        "no_vulkan_device"
    );
    // Human output names the workers, and the serve command the ubatch is for.
    let out = b
        .rvl(&["--ubatch", "16", "--no-cpu", "--rpc", &at])
        .env("RPC", &at)
        .run()
        .expect_code(exit::OK);
    for needle in [
        format!("GPU runs: with RPC workers {at} (llama-bench -rpc)"),
        format!("(rvl serve tiny.gguf --rpc {at} uses it)"),
    ] {
        assert!(out.stdout().contains(&needle), "{needle:?}: {out}");
    }
}

#[test]
fn with_rpc_workers_the_heads_devices_are_not_checked_and_the_note_says_where_to_check() {
    let worker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = worker.local_addr().unwrap().to_string();
    let b = stand_in(&format!("99:*) {RPC_RUN};;"));
    std::fs::write(&b.model, common::prefill::weights_gguf()).unwrap();
    let out = b
        .rvl(&["--ubatch", "16", "--no-cpu", "--json", "--rpc", &at])
        .env("RPC", &at)
        .run()
        .expect_code(exit::OK);
    let p = &out.stdout_json()["prefill"];
    assert_eq!(p["check_tool"]["path"], serde_json::Value::Null, "{out}");
    let why = p["check_tool"]["not_run"].as_str().unwrap();
    assert!(
        why.contains("RPC workers") && why.contains("on each worker"),
        "{why}"
    );
    assert_eq!(p["ubatches"][0]["check"], serde_json::Value::Null, "{out}");
    assert_eq!(p["ubatches"][0]["gpu"]["status"], "ok", "{out}");
    assert_eq!(b.tbo_calls(), "", "no test-backend-ops run on the head");
}

#[test]
fn a_worker_that_does_not_answer_stops_the_sweep_before_any_run() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let b = stand_in("");
    let out = b
        .rvl(&["--ubatch", "16", "--rpc", &closed])
        .run()
        .expect_code(exit::PROBLEMS);
    assert!(
        out.stderr().contains(&format!("{closed} does not answer")),
        "{out}"
    );
    assert!(out.stderr().contains("rvl serve --rpc-worker"), "{out}");
    assert_eq!(b.calls(), "", "nothing ran");
    b.rvl(&["--ubatch", "16", "--rpc", "0.0.0.0:1"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("not the address of a worker");
}

#[test]
fn compare_says_when_the_saved_run_used_this_board_alone_and_this_one_rpc_workers() {
    let worker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = worker.local_addr().unwrap().to_string();
    let local = stand_in("");
    let saved = local.path("local.json");
    local
        .rvl(&["--ubatch", "16", "--no-cpu", "--save"])
        .arg(&saved)
        .run()
        .expect_code(exit::OK);
    let rpc = stand_in(&format!("99:*) {RPC_RUN};;"));
    let out = rpc
        .rvl(&["--ubatch", "16", "--no-cpu", "--rpc", &at, "--compare"])
        .arg(&saved)
        .env("RPC", &at)
        .run()
        .expect_code(exit::OK);
    for needle in [
        format!("GPU runs before: this board alone, now with RPC workers {at}"),
        "| 16 | GPU | 32.5 t/s | 64.5 t/s | +98% |".to_string(),
    ] {
        assert!(out.stdout().contains(&needle), "{needle:?}: {out}");
    }
}

#[test]
fn a_model_of_mali_weight_types_gets_the_g610_lab_prediction_beside_the_measurement() {
    let b = stand_in("");
    std::fs::write(
        &b.model,
        common::prefill::tiny_weights_gguf(rvl::gguf::GgmlType::F16),
    )
    .unwrap();
    let out = b
        .rvl(&["--ubatch", "64,16,8", "--no-cpu", "--json"])
        .run()
        .expect_code(exit::OK);
    let doc = out.stdout_json();
    let g = &doc["prefill"]["g610_prediction"];
    assert_eq!(g["error"], serde_json::Value::Null, "{out}");
    // the stand-in llama-bench is no rvl install: no stamp, taken as a build without int dot
    assert_eq!(g["int_dot_build"], false);
    assert_eq!(g["by_type"][0]["ggml_type"], "f16");
    assert_eq!(g["by_type"][0]["matrices"], 3);
    assert_eq!(g["by_type"][0]["pipeline"], "matmul_mali_f16_f32_f16acc");
    let rate = rvl::prefill::g610::lab_rate(1).unwrap();
    let gflop = 49_152e-9;
    // ubatch 8 is ggml's matrix-vector path: no lab figure
    let points = g["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{out}");
    let rows = doc["prefill"]["ubatches"].as_array().unwrap();
    for (ub, want) in [(64, rate.medium_gflops), (16, rate.small_gflops)] {
        let p = points.iter().find(|p| p["ubatch"] == ub).unwrap();
        let t = p["tokens_per_s"].as_f64().unwrap();
        assert!((t - want / gflop).abs() < 1e-6 * t, "{p}: {out}");
        let row = rows.iter().find(|r| r["ubatch"] == ub).unwrap();
        assert_eq!(row["g610_predicted_tokens_per_s"].as_f64(), Some(t));
    }
    let row8 = rows.iter().find(|r| r["ubatch"] == 8).unwrap();
    assert_eq!(row8["g610_predicted_tokens_per_s"], serde_json::Value::Null);

    let human = b
        .rvl(&["--ubatch", "64", "--no-cpu"])
        .run()
        .expect_code(exit::OK);
    let s = human.stdout();
    assert!(
        s.contains(
            "G610 at 1 GHz (panvk lab model, GEMM only, fp16 build): 0.0000492 GFLOP/token (f16 0.0000492 at "
        ),
        "{human}"
    );
    assert!(s.contains("| G610 1 GHz pred t/s | status |"), "{human}");
}

#[test]
fn weights_of_a_type_without_a_mali_pipeline_say_why_there_is_no_g610_prediction() {
    let b = stand_in("");
    std::fs::write(
        &b.model,
        common::prefill::tiny_weights_gguf(rvl::gguf::GgmlType::BF16),
    )
    .unwrap();
    let out = b
        .rvl(&["--ubatch", "64", "--no-cpu"])
        .run()
        .expect_code(exit::OK);
    assert!(!out.stdout().contains("G610 1 GHz pred"), "{out}");
    assert!(
        out.stdout().contains("note: no G610 lab prediction: no lab rate for the tensor type of blk.0.attn_q.weight (ggml type 30) and 2 more"),
        "{out}"
    );
}
