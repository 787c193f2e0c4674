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
    // The fix installs into the tree serve looked at (owned by the user: no sudo).
    let fix = format!(
        "fix: rvl setup --root {} --board boltzmann --only llama-cpp",
        fx.path().display()
    );
    for needle in ["rvl's llama.cpp is not installed", fix.as_str()] {
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

const WORKER: &str = "/opt/rvl/llama.cpp-0.3.36-rvl1/bin/ggml-rpc-server";

fn worker(fx: &Fixture, args: &[&str]) -> Rvl {
    rvl(&["serve", "--print", "--rpc-worker"])
        .root(fx)
        .args(args)
}

#[test]
fn a_worker_listens_on_loopback_with_the_vulkan_device_and_rvls_environment() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    let out = worker(&fx, &[]).run().expect_code(exit::OK);
    assert_eq!(
        out.stdout(),
        format!("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json {WORKER} --host 127.0.0.1 --port 50052 --device Vulkan0\n")
    );
    assert!(
        out.stderr()
            .contains("listens on 127.0.0.1:50052, this board only"),
        "{out}"
    );
    let doc = worker(&fx, &["--json", "--port", "50100", "--", "-c"])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(doc["role"], "rpc-worker");
    assert_eq!(doc["listen"], "127.0.0.1:50100");
    assert_eq!(
        doc["argv"],
        serde_json::json!([
            WORKER,
            "--host",
            "127.0.0.1",
            "--port",
            "50100",
            "--device",
            "Vulkan0",
            "-c"
        ])
    );
    assert!(doc.get("ubatch_from").is_none() && doc.get("rpc").is_none());
}

#[test]
fn a_named_address_is_taken_and_the_missing_authentication_is_said() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    let out = worker(&fx, &["--host", "192.168.1.11", "--port", "50053"])
        .run()
        .expect_code(exit::OK);
    assert!(
        out.stdout()
            .ends_with(" --host 192.168.1.11 --port 50053 --device Vulkan0\n"),
        "{out}"
    );
    assert!(out.stderr().contains("no authentication"), "{out}");
}

#[test]
fn every_wildcard_address_is_refused_without_allow_network_and_the_refusal_says_why() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    for host in ["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"] {
        let out = worker(&fx, &["--host", host])
            .run()
            .expect_code(exit::USAGE);
        assert!(out.stdout().is_empty(), "{host}: {out}");
        for needle in ["every interface", "no authentication", "--allow-network"] {
            assert!(out.stderr().contains(needle), "{host}: {needle:?}: {out}");
        }
    }
    // Shortened forms ggml-rpc-server's inet_addr() reads as 0.0.0.0 are never taken.
    for host in ["0", "0x0", "0.0", "127.1", "localhost"] {
        let out = worker(&fx, &["--host", host, "--allow-network"])
            .run()
            .expect_code(exit::USAGE);
        assert!(out.stderr().contains("a.b.c.d"), "{host}: {out}");
    }
    let out = worker(&fx, &["--host", "0.0.0.0", "--allow-network"])
        .run()
        .expect_code(exit::OK);
    assert!(out.stdout().contains(" --host 0.0.0.0 "), "{out}");
    assert!(out.stderr().contains("every interface"), "{out}");
}

#[test]
fn worker_flags_need_rpc_worker_and_a_worker_takes_no_model() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    for args in [
        &["serve", "--print", "m.gguf", "--host", "1.2.3.4"][..],
        &["serve", "--print", "m.gguf", "--allow-network"],
        &["serve", "--print", "--rpc-worker", "m.gguf"],
        &["serve", "--print", "--rpc-worker", "--rpc", "a:1"],
        &["serve", "--print"],
    ] {
        rvl(args).root(&fx).run().expect_code(exit::USAGE);
    }
}

#[test]
fn a_build_from_before_rpc_is_refused_with_the_rebuild_for_worker_and_head() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    fx.remove(&WORKER[1..]);
    let out = worker(&fx, &[]).run().expect_code(exit::PROBLEMS);
    for needle in [
        "ggml-rpc-server is missing",
        "-DGGML_RPC=ON",
        // Under --root the fix names the image's tree and repeats --root (issue 28, item 3).
        &format!(
            "rm -rf {}/opt/rvl/llama.cpp-0.3.36-rvl1 && rvl setup --root {}",
            fx.path().display(),
            fx.path().display()
        )[..],
        "--only llama-cpp",
    ] {
        assert!(out.stderr().contains(needle), "{needle:?}: {out}");
    }
    let out = serve(&fx, &["--rpc", "10.0.0.2:50052"])
        .run()
        .expect_code(exit::PROBLEMS);
    assert!(out.stderr().contains("has no --rpc"), "{out}");
    // Without workers the head does not need it.
    serve(&fx, &[]).run().expect_code(exit::OK);
}

#[test]
fn failing_blocking_checks_refuse_a_worker_too() {
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    plant_llama(&fx, PREFIX, true);
    let out = worker(&fx, &[]).run().expect_code(exit::PROBLEMS);
    assert!(
        out.stderr()
            .contains("refusing to start ggml-rpc-server: doctor's blocking checks fail"),
        "{out}"
    );
}

#[test]
fn the_head_passes_its_workers_to_llama_server_before_the_extra_arguments() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    let out = serve(
        &fx,
        &[
            "--rpc",
            "192.168.1.11:50052,rk1-2.lan:50052",
            "--",
            "-ts",
            "1,1",
        ],
    )
    .run()
    .expect_code(exit::OK);
    assert_eq!(
        out.stdout(),
        format!("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json {SERVER} --model '/models/qwen 3b.gguf' --n-gpu-layers 999 --ubatch-size 512 --rpc 192.168.1.11:50052,rk1-2.lan:50052 -ts 1,1\n")
    );
    let doc = serve(&fx, &["--rpc", "192.168.1.11:50052", "--json"])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(doc["rpc"], serde_json::json!(["192.168.1.11:50052"]));
    for bad in [
        "0.0.0.0:50052",
        "a:1,a:1",
        "[::1]:50052",
        "rk1-2",
        "a:70000",
    ] {
        let out = serve(&fx, &["--rpc", bad]).run().expect_code(exit::USAGE);
        assert!(out.stderr().contains("--rpc"), "{bad}: {out}");
    }
}

#[test]
fn a_ubatch_measured_on_one_board_is_not_taken_for_a_model_spread_over_workers() {
    let fx = ready_root();
    plant_llama(&fx, PREFIX, true);
    record_a_prefill_run(&fx, PREFIX);
    let out = serve(&fx, &["--rpc", "10.0.0.2:50052"])
        .env("XDG_STATE_HOME", "/state")
        .run()
        .expect_code(exit::OK);
    assert!(out.stdout().contains(" --ubatch-size 512 "), "{out}");
    assert!(
        out.stderr().contains(
            "not taking the ubatch from /state/rvl/prefill/qwen 3b.gguf.json: it measured this board alone, not RPC workers 10.0.0.2:50052"
        ),
        "{out}"
    );
}

/// `serve --max-clock`: rvl pins the GPU clock, runs llama-server (a stand-in from
/// `RVL_ROOT_TOOLS`, acting on `RVL_ROOT`) and restores devfreq when it exits.
mod max_clock {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    const NODE: &str = "sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu";

    /// A llama-server that notes its arguments and the governor it ran under in
    /// `$RVL_ROOT/ran`, then exits `$STANDIN_EXIT`, or with `STANDIN_WAIT` waits for SIGTERM or
    /// SIGINT (noted, then exit 7).
    const STAND_IN: &str = r#"#!/bin/sh
node="$RVL_ROOT/sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu"
out="$RVL_ROOT/ran"
{ echo "args $*"; echo "governor $(cat "$node/governor")"; echo "min_freq $(cat "$node/min_freq")"; } >"$out"
if [ -n "$STANDIN_WAIT" ]; then
    trap 'echo "got TERM" >>"$out"; exit 7' TERM
    trap 'echo "got INT" >>"$out"; exit 7' INT
    touch "$RVL_ROOT/waiting"
    while :; do sleep 0.05; done
fi
exit "${STANDIN_EXIT:-0}"
"#;

    fn tools() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("llama-server");
        fs::write(&p, STAND_IN).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn ready() -> Fixture {
        let fx = ready_root();
        plant_llama(&fx, PREFIX, true);
        fx
    }

    fn governor(fx: &Fixture) -> String {
        fx.read(&format!("{NODE}/governor"))
    }

    fn run_serve(fx: &Fixture, tools: &Path, extra: &[&str]) -> common::Output {
        rvl(&["serve"])
            .args(extra)
            .root(fx)
            .arg("/models/m.gguf")
            .env("RVL_ROOT_TOOLS", tools)
            .env("STANDIN_EXIT", "3")
            .run()
    }

    #[test]
    fn the_clock_is_held_while_the_server_runs_and_the_exit_status_is_the_servers() {
        let (fx, tools) = (ready(), tools());
        assert_eq!(governor(&fx), "simple_ondemand\n");
        let out = run_serve(&fx, tools.path(), &["--max-clock"]).expect_code(3);
        let ran = fx.read("ran");
        assert!(ran.contains("governor performance"), "{ran}\n{out}");
        assert!(
            ran.contains("args --model /models/m.gguf --n-gpu-layers 999 --ubatch-size 512"),
            "{ran}"
        );
        assert_eq!(governor(&fx), "simple_ondemand\n", "{out}");
        for needle in [
            "GPU clock held at the top while llama-server runs: governor simple_ondemand -> performance",
            "serve: GPU governor restored to simple_ondemand",
        ] {
            assert!(out.stderr().contains(needle), "{needle:?}: {out}");
        }
        // The command line is printed once, before the server starts.
        assert_eq!(
            out.stdout().matches("--ubatch-size 512").count(),
            1,
            "{out}"
        );
    }

    #[test]
    fn without_max_clock_the_server_runs_under_the_governor_as_it_is() {
        let (fx, tools) = (ready(), tools());
        run_serve(&fx, tools.path(), &[]).expect_code(3);
        assert!(fx.read("ran").contains("governor simple_ondemand"));
    }

    #[test]
    fn min_freq_is_raised_when_performance_is_not_offered_and_comes_back() {
        let (fx, tools) = (ready(), tools());
        fx.write(
            &format!("{NODE}/available_governors"),
            "userspace powersave simple_ondemand\n",
        );
        run_serve(&fx, tools.path(), &["--max-clock"]).expect_code(3);
        assert!(fx.read("ran").contains("min_freq 1000000000"));
        assert_eq!(fx.read(&format!("{NODE}/min_freq")), "300000000\n");
    }

    #[test]
    fn sigterm_and_sigint_go_on_to_the_server_and_the_clock_comes_back_after_it_exits() {
        for sig in ["TERM", "INT"] {
            let (fx, tools) = (ready(), tools());
            let child = Command::new(env!("CARGO_BIN_EXE_rvl"))
                .args(["serve", "--max-clock", "--root"])
                .arg(fx.path())
                .arg("/models/m.gguf")
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("RVL_ROOT_TOOLS", tools.path())
                .env("STANDIN_WAIT", "1")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let t0 = Instant::now();
            while !fx.join("waiting").exists() {
                assert!(
                    t0.elapsed() < Duration::from_secs(30),
                    "the stand-in never started"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(governor(&fx), "performance\n", "not pinned while serving");
            let kill = Command::new("kill")
                .args([format!("-{sig}"), child.id().to_string()])
                .status()
                .unwrap();
            assert!(kill.success());
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(7), "{sig}: {stderr}");
            assert!(fx.read("ran").contains(&format!("got {sig}")), "{sig}");
            assert_eq!(governor(&fx), "simple_ondemand\n", "{sig}: {stderr}");
            assert!(
                stderr.contains("serve: GPU governor restored to simple_ondemand"),
                "{sig}: {stderr}"
            );
        }
    }

    #[test]
    fn without_a_devfreq_node_it_refuses_before_the_server_starts() {
        let (fx, tools) = (ready(), tools());
        fx.remove("sys/class/devfreq");
        let out = run_serve(&fx, tools.path(), &["--max-clock"]).expect_code(exit::UNSUPPORTED);
        assert!(out.stderr().contains("no GPU devfreq node"), "{out}");
        assert!(!fx.join("ran").exists(), "the server ran: {out}");
    }

    #[test]
    fn max_clock_with_print_is_a_usage_error_and_a_foreign_root_needs_a_stand_in() {
        let fx = ready();
        rvl(&["serve", "--print", "--max-clock"])
            .root(&fx)
            .arg("/models/m.gguf")
            .run()
            .expect_code(exit::USAGE);
        rvl(&["serve", "--max-clock"])
            .root(&fx)
            .arg("/models/m.gguf")
            .run()
            .expect_code(exit::USAGE)
            .expect_stderr("only prints another system's command");
        assert_eq!(governor(&fx), "simple_ondemand\n");
    }
}
