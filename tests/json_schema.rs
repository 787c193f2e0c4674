//! Every verb's `--json` document, errors included, against the JSON Schema in docs/json.md.
//! The schema is read from the document itself, so the docs and the code cannot drift apart.

mod common;

use std::path::Path;

use common::roots::{artifacts, firmware_bytes, setup, Fixture};
use common::{fixture_dir, rvl, Rvl};
use serde_json::Value;

/// The ```json block of docs/json.md.
fn schema_json() -> Value {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .unwrap();
    let start = doc
        .find("```json\n")
        .expect("docs/json.md has a ```json block")
        + 8;
    let len = doc[start..].find("\n```").expect("the block is closed");
    serde_json::from_str(&doc[start..start + len]).expect("the schema is JSON")
}

/// The schema, compiled.
fn schema() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema_json()).expect("the schema is a valid JSON Schema")
}

/// Run rvl, parse stdout as one JSON document, check it against the schema and against the
/// process: the envelope's exit_code is the real exit status.
fn checked(cmd: Rvl) -> Value {
    let out = cmd.env("RVL_FETCH_ATTEMPTS", "1").run();
    let doc = out.stdout_json();
    let errors: Vec<String> = schema()
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the document breaks docs/json.md's schema:\n{}\n{out}",
        errors.join("\n")
    );
    assert_eq!(
        doc["exit_code"],
        out.code(),
        "exit_code in the envelope differs from the exit status: {out}"
    );
    doc
}

#[test]
fn the_schema_rejects_a_document_without_the_envelope() {
    let s = schema();
    assert!(!s.is_valid(&serde_json::json!({"checks": []})));
    assert!(!s.is_valid(&serde_json::json!({
        "schema_version": 1, "rvl_version": "0.1.0", "command": "doctor", "exit_code": 2,
        "error": {"kind": "no-such-kind", "message": "x", "causes": []}
    })));
    assert!(s.is_valid(&serde_json::json!({
        "schema_version": 1, "rvl_version": "0.1.0", "command": "doctor", "exit_code": 2,
        "error": {"kind": "usage", "message": "x", "causes": []}
    })));
}

#[test]
fn the_schema_names_every_error_kind_rvl_gives() {
    let schema = schema_json();
    let listed = &schema["$defs"]["error"]["properties"]["error"]["properties"]["kind"]["enum"];
    let mut expected: Vec<&str> = rvl::error::KINDS.to_vec();
    expected.push("other");
    assert_eq!(listed, &serde_json::json!(expected));
}

#[test]
fn doctor_documents_follow_the_schema() {
    for name in ["boltzmann-mainline", "boltzmann-vendor-kbase", "x86-host"] {
        let doc = checked(rvl(&["doctor", "--json"]).root(fixture_dir(name)));
        assert_eq!(doc["command"], "doctor");
    }
    let doc = checked(rvl(&["doctor", "--list-checks", "--json"]));
    assert!(doc["checks"].as_array().unwrap().len() >= 9);
    let doc = checked(rvl(&["doctor", "--only", "nope", "--json"]));
    assert_eq!(doc["error"]["kind"], "usage");
    assert_eq!(doc["exit_code"], rvl::exit::USAGE);
}

#[test]
fn serve_documents_follow_the_schema() {
    let fx = Fixture::copy("boltzmann-mainline");
    let print = |fx: &Fixture| checked(rvl(&["serve", "--print", "--json", "m.gguf"]).root(fx));
    let refused = print(&fx);
    assert_eq!(refused["error"]["kind"], "refused");
    common::plant_llama(&fx, "/opt/rvl/llama.cpp-0.3.36-rvl1", true);
    let doc = print(&fx);
    assert_eq!(doc["command"], "serve");
    assert_eq!(doc["role"], "llama-server");
    assert_eq!(
        doc["argv"][0],
        "/opt/rvl/llama.cpp-0.3.36-rvl1/bin/llama-server"
    );
    let head = checked(
        rvl(&[
            "serve",
            "--print",
            "--json",
            "m.gguf",
            "--rpc",
            "10.0.0.2:50052",
        ])
        .root(&fx),
    );
    assert_eq!(head["rpc"], serde_json::json!(["10.0.0.2:50052"]));
    let worker = checked(rvl(&["serve", "--print", "--json", "--rpc-worker"]).root(&fx));
    assert_eq!(worker["role"], "rpc-worker");
    assert_eq!(worker["listen"], "127.0.0.1:50052");
    let wildcard = checked(
        rvl(&[
            "serve",
            "--print",
            "--json",
            "--rpc-worker",
            "--host",
            "0.0.0.0",
        ])
        .root(&fx),
    );
    assert_eq!(wildcard["error"]["kind"], "usage");
}

#[cfg(feature = "bench")]
#[test]
fn smoke_bench_documents_follow_the_schema() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let sweep = checked(rvl(common::TINY_BENCH_JSON));
    assert_eq!(sweep["command"], "smoke-bench");
    // With llama.cpp's columns (a stand-in test-backend-ops) and its CPU as the baseline.
    let d = tempfile::tempdir().unwrap();
    let tbo = common::prefill::stand_in_tbo(d.path());
    let beside = checked(
        rvl(&[
            "smoke-bench",
            "--model",
            "tiny",
            "--ubatch",
            "8",
            "--quick",
            "--precision",
            "fp32",
            "--json",
            "--test-backend-ops",
        ])
        .arg(&tbo),
    );
    assert_eq!(beside["cpu_baseline"]["source"], "llama_cpp");
    assert!(!beside["llama_cpp"]["gemms"].as_array().unwrap().is_empty());
    // --max-clock on a fake devfreq node: the clock_pin record follows the schema too.
    let tree = tempfile::tempdir().unwrap();
    let node = tree.path().join("sys/class/devfreq/fb000000.gpu");
    std::fs::create_dir_all(&node).unwrap();
    for (f, v) in [
        ("governor", "simple_ondemand"),
        ("available_governors", "simple_ondemand performance"),
        ("available_frequencies", "300000000 1000000000"),
    ] {
        std::fs::write(node.join(f), v).unwrap();
    }
    let pinned = checked(
        rvl(common::TINY_BENCH_JSON)
            .arg("--max-clock")
            .env("RVL_DEVFREQ_ROOT", tree.path()),
    );
    assert_eq!(pinned["clock_pin"]["change"]["to"], "performance");
    let probe = checked(rvl(&["smoke-bench", "--probe-limits", "--json"]));
    assert!(probe["runs"].is_array());
    let error = checked(
        rvl(&["smoke-bench", "--json"]).env("RVL_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1"),
    );
    assert_eq!(error["error"]["kind"], "no-vulkan");
    let usage = checked(rvl(&["smoke-bench", "--precision", "fp8", "--json"]));
    assert_eq!(usage["exit_code"], rvl::exit::USAGE);
}

/// Lavapipe gives no pipeline statistics, so its document has no `predicted`; the same document
/// with a prediction for panvk-named statistics planted in it (as rvl serialises one) still
/// follows the schema, and one with a nonsense bound does not.
#[cfg(feature = "bench")]
#[test]
fn a_prediction_is_absent_without_unit_statistics_and_follows_the_schema_where_present() {
    use rvl::bench::throughput::{for_kernel, Prediction};
    if common::vulkan_instance().is_none() {
        return;
    }
    let mut doc = checked(rvl(common::TINY_BENCH_JSON));
    if doc["device"]["driver_id"] == "MESA_LLVMPIPE" {
        for entry in doc["peak"]
            .as_array()
            .unwrap()
            .iter()
            .chain(doc["kernels"].as_array().unwrap())
        {
            assert!(
                entry.get("predicted").is_none(),
                "lavapipe has no unit cycles: {entry}"
            );
        }
        assert!(doc["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["statistics"] == serde_json::json!([])));
    }
    let panvk = rvl::vulkan::DeviceInfo {
        driver_id: "MESA_PANVK".into(),
        ..Default::default()
    };
    let stats: Vec<rvl::vulkan::Statistic> = [
        ("FMA", 2.0),
        ("CVT", 0.1),
        ("SFU", 0.0),
        ("ALU", 2.1),
        ("Load/store", 0.2),
    ]
    .into_iter()
    .map(|(name, value)| rvl::vulkan::Statistic {
        name: name.into(),
        value,
    })
    .collect();
    let p: Prediction = for_kernel(&panvk, "fp32", "peak-fp32", &stats, Some(256.0)).unwrap();
    let p = serde_json::to_value(&p).unwrap();
    doc["peak"][0]["predicted"] = p.clone();
    if let Some(k) = doc["kernels"].get_mut(0) {
        k["predicted"] = p.clone();
        k["measured_gflops"] = serde_json::json!(85.0);
    }
    assert!(schema().is_valid(&doc), "{doc}");
    doc["peak"][0]["predicted"]["bound"] = serde_json::json!("clock");
    assert!(!schema().is_valid(&doc));
}

/// Every peak names its dispatch; a task split as rvl serialises one for panvk follows the
/// schema, and one with an axis Mali does not have does not.
#[cfg(feature = "bench")]
#[test]
fn peaks_name_their_dispatch_and_a_task_split_follows_the_schema() {
    use rvl::bench::tasksplit::{split, Limits, Rule};
    if common::vulkan_instance().is_none() {
        return;
    }
    let mut doc = checked(rvl(common::TINY_BENCH_JSON));
    for p in doc["peak"].as_array().unwrap() {
        assert!(p["workgroup_size"].as_u64().unwrap() >= 1, "{p}");
        assert!(p["workgroups"].as_u64().unwrap() >= 1, "{p}");
        if doc["device"]["kind"] == "cpu" {
            assert_eq!(
                p["workgroup_size"], 256,
                "no 16-invocation run on a CPU device: {p}"
            );
        }
    }
    let s = split(Rule::Mesa25, &Limits::g610(), [16, 1, 1], [32768, 1, 1], 8).unwrap();
    doc["peak"][0]["task_split"] = serde_json::to_value(&s).unwrap();
    doc["peak"][0]["measured_over_predicted"] = serde_json::json!(0.21);
    doc["peak"][0]["cur_freq_before_hz"] = serde_json::json!(300_000_000u64);
    assert!(schema().is_valid(&doc), "{doc}");
    doc["peak"][0]["task_split"]["task_axis"] = serde_json::json!("w");
    assert!(!schema().is_valid(&doc));
}

#[test]
fn smoke_bench_gguf_documents_follow_the_schema_ok_failed_and_compared() {
    // A stand-in llama-bench: no Vulkan needed by rvl, so this runs everywhere.
    let b = common::prefill::stand_in(&format!(
        "99:128) {};;\n0:16) sleep 30;;",
        common::prefill::OOM_ABORT
    ));
    let ok = checked(b.rvl(&["--ubatch", "64", "--json"]));
    assert_eq!(ok["prefill"]["best_gpu_ubatch"], 64);
    let saved = b.path("saved.json");
    let failed = checked(
        b.rvl(&[
            "--ubatch",
            "16,128",
            "--case-timeout",
            "1",
            "--json",
            "--save",
        ])
        .arg(&saved),
    );
    assert_eq!(failed["exit_code"], rvl::exit::PROBLEMS);
    let compared = checked(
        b.rvl(&["--ubatch", "16,128", "--no-cpu", "--json", "--compare"])
            .arg(&saved),
    );
    assert!(compared["comparison"]["rows"].is_array());
    let usage = checked(b.rvl(&["--prompt", "0", "--json"]));
    assert_eq!(usage["error"]["kind"], "usage");
    // A model with a tensor table: each GPU ubatch checked first, one with wrong results.
    std::fs::write(&b.model, common::prefill::weights_gguf()).unwrap();
    let wrong = checked(
        b.rvl(&["--ubatch", "16,64", "--json"])
            .env("TBO_WRONG_AT", "64"),
    );
    assert_eq!(wrong["prefill"]["ubatches"][0]["check"]["status"], "passed");
    assert_eq!(
        wrong["prefill"]["ubatches"][1]["gpu"]["status"],
        "wrong_results"
    );
    // With the G610 lab prediction's points (a tensor table of Mali weight types).
    std::fs::write(
        &b.model,
        common::prefill::tiny_weights_gguf(rvl::gguf::GgmlType::Q4_0),
    )
    .unwrap();
    let g610 = checked(b.rvl(&["--ubatch", "16,64", "--no-cpu", "--json"]));
    assert_eq!(
        g610["prefill"]["g610_prediction"]["points"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // With the GEMM prediction's points (a header with shapes; needs rvl's Vulkan).
    #[cfg(feature = "bench")]
    if common::vulkan_instance().is_some() {
        std::fs::write(&b.model, common::prefill::tiny_shapes_gguf(None)).unwrap();
        let predicted = checked(b.rvl(&["--ubatch", "16", "--no-cpu", "--json"]));
        assert!(
            predicted["prefill"]["gemm_prediction"]["points"][0]["predicted_tokens_per_s"]
                .is_number()
        );
    }
}

/// `setup --only kernel --yes --json`: applies on the first run, nothing to do on the second.
const APPLY: [&str; 6] = [
    "--board",
    "boltzmann",
    "--only",
    "kernel",
    "--yes",
    "--json",
];

#[test]
fn setup_documents_follow_the_schema() {
    let fx = Fixture::copy("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let run = |args: &[&str]| checked(setup(fx.path(), &a.manifest).args(args));
    let plan = run(&["--board", "boltzmann", "--dry-run", "--json"]);
    assert_eq!(plan["mode"], "plan");
    // Not a terminal and no --yes: refused, as an error document.
    let refused = run(&["--board", "boltzmann", "--only", "kernel", "--json"]);
    assert_eq!(refused["error"]["kind"], "not-confirmed");
    let applied = run(&APPLY);
    assert_eq!(
        (&applied["mode"], &applied["applied"]),
        (&"apply".into(), &true.into())
    );
    let again = run(&APPLY);
    assert_eq!(again["applied"], false);
    let status = run(&["--status", "--json"]);
    assert_eq!(status["mode"], "status");
    assert_eq!(status["applied"].as_array().unwrap().len(), 1);
    let cache = fx.parent().join("cache");
    let cache = cache.to_str().unwrap();
    let downloaded = run(&[
        "--download-only",
        "--cache",
        cache,
        "--only",
        "firmware",
        "--json",
    ]);
    assert_eq!(downloaded["mode"], "download");
    assert_eq!(downloaded["files"][0]["fetched"], true);
    let planned = run(&["--rollback", "--yes", "--dry-run", "--json"]);
    assert_eq!(planned["dry_run"], true);
    assert_eq!(planned["runs"][0]["paths"][0]["action"], "restore");
    let rolled = run(&["--rollback", "--yes", "--json"]);
    assert_eq!(rolled["mode"], "rollback");
    let status = run(&["--status", "--json"]);
    assert_eq!(status["rolled_back"].as_array().unwrap().len(), 1);
    // A path changed after setup is refused: exit 10, with the reason in the document.
    run(&APPLY);
    let ext = fx.path().join("boot/extlinux/extlinux.conf");
    let mut text = std::fs::read_to_string(&ext).unwrap();
    text.push_str("label mine\n\tlinux /boot/vmlinuz-mine\n");
    std::fs::write(&ext, text).unwrap();
    let dep = run(&["--rollback", "--yes", "--run", "nope", "--json"]);
    assert_eq!(dep["error"]["kind"], "usage");
    let rolled = run(&["--rollback", "--yes", "--json"]);
    assert_eq!(
        rolled["exit_code"], 0,
        "extlinux's default is undone line-wise: {rolled}"
    );
    assert_eq!(rolled["runs"][0]["paths"][0]["action"], "undo-edits");
    // The old default's kernel is gone: that part is refused (exit 10) and named.
    run(&APPLY);
    let mut text = std::fs::read_to_string(&ext).unwrap();
    text.push_str("# mine\n");
    std::fs::write(&ext, text).unwrap();
    std::fs::remove_file(fx.path().join("boot/vmlinuz-6.1.75-npu-port")).unwrap();
    let refused = run(&["--rollback", "--yes", "--json"]);
    assert_eq!(refused["exit_code"], rvl::exit::ROLLBACK_INCOMPLETE);
    assert_eq!(refused["refused"][0], "/boot/extlinux/extlinux.conf");
    assert!(refused["runs"][0]["paths"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("/boot/vmlinuz-6.1.75-npu-port, which is missing"));
    let unknown = run(&["--only", "kernal", "--json"]);
    assert_eq!(unknown["error"]["kind"], "usage");
}

#[test]
fn a_blocked_step_is_listed_with_why_and_fix_and_exits_blocked() {
    let fx = Fixture::copy("boltzmann-extlinux");
    std::fs::remove_file(fx.path().join("boot/vmlinuz-7.0.0-rc3-marfrit-A1")).unwrap();
    let a = artifacts(&firmware_bytes(), None, &[]);
    let run = |args: &[&str]| checked(setup(fx.path(), &a.manifest).args(args));
    for mode in ["--dry-run", "--yes"] {
        let doc = run(&[
            "--board",
            "boltzmann",
            "--only",
            "kernel,firmware",
            mode,
            "--json",
        ]);
        assert_eq!(doc["exit_code"], rvl::exit::BLOCKED, "{doc}");
        let blocked = &doc["plan"]["blocked"][0];
        assert_eq!(blocked["step"], "kernel", "{doc}");
        assert!(blocked["fix"]
            .as_str()
            .unwrap()
            .contains("sudo apt install linux-rk3588-marfrit-A1"));
    }
}

#[test]
fn report_documents_follow_the_schema() {
    let fx = Fixture::copy("boltzmann-mainline");
    let out = fx.parent().join("bug.tar.gz");
    let doc = checked(
        rvl(&["report", "--no-vulkan", "--json", "-o"])
            .arg(&out)
            .root(&fx),
    );
    assert_eq!(doc["command"], "report");
    assert!(!doc["files"].as_array().unwrap().is_empty(), "{doc}");
    let missing = fx.parent().join("no-such-dir/bug.tar.gz");
    let refused = checked(
        rvl(&["report", "--no-vulkan", "--json", "-o"])
            .arg(&missing)
            .root(&fx),
    );
    assert_eq!(refused["error"]["kind"], "usage");
}

#[test]
fn status_documents_follow_the_schema() {
    for name in [
        "boltzmann-mainline",
        "boltzmann-vendor-kbase",
        "armbian-vendor-panthor",
        "x86-host",
    ] {
        let doc = checked(rvl(&["status", "--json"]).root(fixture_dir(name)));
        assert_eq!(doc["command"], "status");
    }
    let err = checked(rvl(&["status", "--json"]).root("/nonexistent/rvl-root"));
    assert_eq!(err["error"]["kind"], "usage");
}
