//! `rvl smoke-bench` end to end: the no-Vulkan errors, the JSON document, an injected driver
//! failure that is reported while the sweep goes on, save/compare, and --probe-limits.
//! Runs on the "tiny" preset so lavapipe on two cores finishes in seconds.
#![cfg(feature = "bench")]

mod common;

use common::{rvl, Rvl};
use rvl::exit;

fn vulkan_present() -> bool {
    common::vulkan_instance().is_some()
}

/// `rvl smoke-bench --model tiny --no-cpu ARGS`.
fn tiny(args: &[&str]) -> Rvl {
    rvl(&["smoke-bench", "--model", "tiny", "--no-cpu"]).args(args)
}

/// The same with `--ubatch 8,16 --quick`: seconds on lavapipe.
fn tiny_quick(args: &[&str]) -> Rvl {
    tiny(&["--ubatch", "8,16", "--quick"]).args(args)
}

/// Each top-level key of the envelope and the report stands once in the printed document
/// (a flattened body must not repeat the envelope's fields).
fn assert_keys_once(stdout: &str) {
    for key in [
        "schema_version",
        "rvl_version",
        "command",
        "exit_code",
        "tool",
    ] {
        assert_eq!(
            stdout.matches(&format!("\n  \"{key}\":")).count(),
            1,
            "top-level {key} once: {stdout}"
        );
    }
}

#[test]
fn missing_loader_is_no_vulkan_not_a_panic() {
    let out = rvl(&["smoke-bench", "--quick"])
        .env("RVL_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1")
        .run()
        .expect_code(exit::NO_VULKAN)
        .expect_stderr("Vulkan loader")
        .expect_stderr("apt-get install libvulkan1");
    assert!(out.stdout().is_empty(), "{out}");
}

#[test]
fn no_driver_is_no_vulkan_with_a_hint() {
    let out = rvl(&["smoke-bench", "--quick", "--json"])
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .run()
        .expect_code(exit::NO_VULKAN);
    let err = out.stderr();
    assert!(
        err.contains("VK_DRIVER_FILES") || err.contains("no device"),
        "{out}"
    );
}

#[test]
fn bad_flags_are_usage_errors() {
    rvl(&["smoke-bench", "--precision", "fp8"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("unknown precision");
    rvl(&["smoke-bench"])
        .env(rvl::bench::inject::ENV, "soon:vkQueueSubmit")
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("UBATCH:CALL[:RESULT]");
}

#[test]
fn json_run_has_schema_checks_and_stacks() {
    if !vulkan_present() {
        return;
    }
    let out = tiny_quick(&["--json", "--precision", "fp32,q4_0"])
        .run()
        .expect_code(exit::OK);
    let doc = out.stdout_json();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["command"], "smoke-bench");
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["rvl_version"], env!("CARGO_PKG_VERSION"));
    assert!(doc["tool"].as_str().unwrap().starts_with("rvl smoke-bench"));
    assert!(doc["device"]["name"].is_string());
    // The compute-unit count is always in the document: null where no vendor extension gives
    // it, as on lavapipe.
    let units = &doc["device"]["compute_units"];
    assert!(units.is_null() || units.as_u64().unwrap() > 0, "{units}");
    if doc["device"]["driver_id"] == "MESA_LLVMPIPE" {
        assert!(
            units.is_null(),
            "lavapipe has no compute-unit extension: {units}"
        );
    }
    assert_eq!(doc["model"]["name"], "tiny");
    assert!(doc["peak"][0]["gflops"].as_f64().unwrap() > 0.0);
    let ubs = doc["ubatches"].as_array().unwrap();
    assert_eq!(ubs.len(), 2);
    for u in ubs {
        let screens = u["screens"].as_array().unwrap();
        assert!(screens
            .iter()
            .any(|s| s["status"] == "ok" && s["precision"] == "q4_0"));
        for s in screens.iter().filter(|s| s["status"] == "ok") {
            assert!(s["max_error"].as_f64().unwrap() <= s["tolerance"].as_f64().unwrap());
        }
        let stacks = u["stacks"].as_array().unwrap();
        let best = stacks
            .iter()
            .find(|s| s["label"] == "best" && s["precision"] == "fp32")
            .unwrap();
        assert_eq!(best["status"], "ok");
        assert!(best["predicted_tokens_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(best["dispatches"].as_u64().unwrap() % 5, 0);
    }
    assert_keys_once(out.stdout());
    // Under --json with stderr not a terminal (as here), a script reads the output: no progress.
    assert!(
        !out.stderr().contains("smoke-bench:"),
        "no progress lines: {out}"
    );
}

#[test]
fn llama_cpps_cpu_and_vulkan_kernels_stand_beside_rvls_and_the_cpu_baseline_is_llama_cpps() {
    if !vulkan_present() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let tbo = common::prefill::stand_in_tbo(d.path());
    let base = [
        "smoke-bench",
        "--model",
        "tiny",
        "--ubatch",
        "8,16",
        "--quick",
    ];
    let doc = rvl(&base)
        .args(&["--precision", "fp32,q4_0", "--json", "--test-backend-ops"])
        .arg(&tbo)
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(doc["cpu_baseline"]["source"], "llama_cpp", "{doc:#}");
    assert!(doc["cpu_baseline"]["what"]
        .as_str()
        .unwrap()
        .starts_with("llama.cpp's CPU backend (test-backend-ops perf"));
    let l = &doc["llama_cpp"];
    assert_eq!(l["tool"], tbo.to_str().unwrap());
    let runs = l["runs"].as_array().unwrap();
    let backends: Vec<&str> = runs
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, vec!["vulkan", "cpu"]);
    let gemms = l["gemms"].as_array().unwrap();
    let count = |backend: &str, t: &str| {
        gemms
            .iter()
            .filter(|g| g["backend"] == backend && g["ggml_type"] == t && g["status"] == "ok")
            .count()
    };
    // Vulkan: the precisions rvl ran; the CPU every type whose blocks fit the tiny K of 64 and
    // 160 (q4_K's 256 do not). 2 ubatches x 5 GEMMs each.
    assert_eq!((count("vulkan", "f32"), count("vulkan", "q4_0")), (10, 10));
    assert_eq!(count("vulkan", "f16"), 0);
    for t in ["f32", "f16", "q4_0", "q8_0"] {
        assert_eq!(count("cpu", t), 10, "{t}");
    }
    assert_eq!(count("cpu", "q4_K"), 0);
    assert!(gemms
        .iter()
        .filter(|g| g["backend"] == "cpu" && g["ggml_type"] == "q4_0")
        .all(|g| g["weights"] == "CPU_REPACK"));
    for u in doc["ubatches"].as_array().unwrap() {
        assert!(u["cpu"].is_null(), "no matrixmultiply run: {u:#}");
        let b = &u["cpu_baseline"];
        assert_eq!(b["source"], "llama_cpp");
        let best = u["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["status"] == "ok")
            .filter_map(|s| s["predicted_tokens_per_s"].as_f64())
            .fold(0.0, f64::max);
        let ratio = u["gpu_cpu_ratio"].as_f64().unwrap();
        assert!(
            (ratio - best / b["predicted_tokens_per_s"].as_f64().unwrap()).abs() < 1e-9 * ratio,
            "{u:#}"
        );
        assert!(u["llama_cpp"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["predicted_tokens_per_s"].as_f64().unwrap() > 0.0));
    }
    // The same shapes and ubatches on both backends, rvl's device, the big cores on the CPU.
    let calls = std::fs::read_to_string(format!("{}.calls", tbo.display())).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    // Type by type, the quantised first, each over the ubatches.
    assert!(
        lines[0].starts_with(
            "perf --mul-mat q4_0:128:8:64,q4_0:64:8:64,q4_0:160:8:64,q4_0:64:8:160,q4_0:128:16:64,"
        ),
        "{calls}"
    );
    assert!(lines[0].contains(",f32:64:16:160 -b "), "{calls}");
    assert!(lines[0].ends_with(" -b Vulkan0 --perf-ms 50"), "{calls}");
    assert!(lines[1].contains(" -b CPU --perf-ms 50 -t "), "{calls}");
    // People get the three columns side by side.
    let human = rvl(&base)
        .args(&["--precision", "fp32", "--test-backend-ops"])
        .arg(&tbo)
        .run()
        .expect_code(exit::OK);
    let s = human.stdout();
    assert!(
        s.contains("side by side, one layer's GEMMs, each product alone (GFLOP/s): rvl's best kernels | llama.cpp's Vulkan kernels | llama.cpp's CPU backend ("),
        "{human}"
    );
    let row = s
        .lines()
        .find(|l| l.trim_start().starts_with("8  fp32 (f32)"))
        .unwrap_or_else(|| panic!("no ubatch 8 fp32 row: {human}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells.len(), 7, "{row}");
    assert!(cells[3..6].iter().all(|c| *c != "-"), "{row}");
    assert!(s.contains("CPU t/s: llama.cpp's CPU backend"), "{human}");
    assert!(
        s.contains("llama.cpp's CPU repacked the q4_0 weights") || !s.contains("q4_0 (q4_0)"),
        "{human}"
    );
}

#[test]
fn without_llama_cpp_the_cpu_column_says_it_is_an_fp32_sgemm_not_llama_cpps_path() {
    if !vulkan_present() {
        return;
    }
    let base = ["smoke-bench", "--model", "tiny", "--ubatch", "8", "--quick"];
    let doc = rvl(&base)
        .arg("--json")
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(doc["cpu_baseline"]["source"], "matrixmultiply");
    assert!(doc["llama_cpp"]["tool"].is_null());
    assert!(doc["llama_cpp"]["not_run"]
        .as_str()
        .unwrap()
        .contains("sudo rvl setup --only llama-cpp"));
    assert_eq!(
        doc["ubatches"][0]["cpu_baseline"]["source"],
        "matrixmultiply"
    );
    let out = rvl(&base).run().expect_code(exit::OK);
    for needle in [
        "CPU t/s: matrixmultiply's fp32 sgemm on ",
        "not llama.cpp's quantised CPU path",
        "llama.cpp side by side: not run (rvl's llama.cpp is not installed",
    ] {
        assert!(out.stdout().contains(needle), "{needle:?}: {out}");
    }
}

#[test]
fn human_run_prints_progress_on_stderr() {
    if !vulkan_present() {
        return;
    }
    let out = tiny(&["--ubatch", "8", "--quick", "--precision", "fp32"])
        .run()
        .expect_code(exit::OK);
    assert!(out.stderr().contains("smoke-bench: device"), "{out}");
    assert!(out.stdout().contains("rvl smoke-bench"), "{out}");
    assert!(
        out.stdout().contains("GEMMs), quick run"),
        "the size in words: {out}"
    );
    assert!(
        out.stdout().contains("| compute units "),
        "the device line names its compute units: {out}"
    );
    // "N command buffer(s)" agrees with N (the tiny model records one: "1 command buffer").
    let mut seen = 0;
    for line in out.stderr().lines() {
        let Some(head) = line
            .strip_suffix(" command buffer")
            .or_else(|| line.strip_suffix(" command buffers"))
        else {
            continue;
        };
        let n: usize = head.rsplit(' ').next().unwrap().parse().unwrap();
        assert_eq!(line.ends_with('s'), n != 1, "{line}");
        seen += 1;
    }
    assert!(seen > 0, "no command buffer count in the progress: {out}");
}

#[test]
fn injected_failure_is_reported_and_the_sweep_continues() {
    if !vulkan_present() {
        return;
    }
    // A failed ubatch is a problem.
    let doc = tiny_quick(&["--json", "--precision", "fp32"])
        .env(rvl::bench::inject::ENV, "8:vkEndCommandBuffer")
        .run()
        .expect_code(exit::PROBLEMS)
        .stdout_json();
    let ubs = doc["ubatches"].as_array().unwrap();
    let failed = &ubs[0]["stacks"][0];
    assert_eq!(ubs[0]["ubatch"], 8);
    assert_eq!(failed["status"], "error");
    assert_eq!(failed["error"]["call"], "vkEndCommandBuffer");
    assert_eq!(failed["error"]["result"], "VK_ERROR_OUT_OF_DEVICE_MEMORY");
    assert_eq!(failed["error"]["injected"], true);
    assert_eq!(ubs[1]["ubatch"], 16);
    assert_eq!(ubs[1]["stacks"][0]["status"], "ok");

    // The human table shows the failing call too.
    tiny_quick(&["--precision", "fp32"])
        .env(
            rvl::bench::inject::ENV,
            "16:vkQueueSubmit:VK_ERROR_DEVICE_LOST",
        )
        .run()
        .expect_stdout("vkQueueSubmit returned VK_ERROR_DEVICE_LOST (injected)");
}

#[test]
fn save_then_compare() {
    if !vulkan_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("before.json");
    let saved_s = saved.to_str().unwrap();
    let printed = tiny_quick(&["--json", "--precision", "fp32", "--save", saved_s])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    // --save writes the document --json prints (timings aside, which differ run to run).
    let saved_doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let keys = |d: &serde_json::Value| d.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&saved_doc), keys(&printed));
    assert_eq!(saved_doc["command"], "smoke-bench");
    assert_eq!(saved_doc["devices"], printed["devices"]);
    let doc = tiny_quick(&["--json", "--precision", "fp32", "--compare", saved_s])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    let rows = doc["comparison"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows[0]["change"].is_number());
    assert!(
        doc["comparison"].get("warning").is_none(),
        "same model and size"
    );
    // A run of another size (here: default vs quick) does not compare: the output says so.
    tiny(&["--ubatch", "8", "--precision", "fp32", "--compare", saved_s])
        .run()
        .expect_stdout("the numbers do not compare")
        // No spread is measured per stack: the table says so instead of implying precision.
        .expect_stdout("each figure is one run, with no spread measured");

    std::fs::write(dir.path().join("junk.json"), "[1, 2").unwrap();
    rvl(&["smoke-bench", "--compare"])
        .arg(dir.path().join("junk.json"))
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("junk.json");
}

#[test]
fn probe_limits_is_bounded_and_reports_each_test() {
    if !vulkan_present() {
        return;
    }
    let doc = rvl(&["smoke-bench", "--probe-limits", "--json"])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(doc["command"], "smoke-bench");
    assert_eq!(doc["schema_version"], 1);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["accumulators"], 128);
    for r in runs {
        assert!(r["recorded"].as_u64().unwrap() <= r["bound"].as_u64().unwrap());
    }
}
