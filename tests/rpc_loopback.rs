//! One model served across "boards" on loopback, with the real pinned llama.cpp: two
//! ggml-rpc-servers on 127.0.0.1, one serving lavapipe (started with the command line `rvl
//! serve --rpc-worker` prints), one serving the CPU (a worker without a GPU), and the tiny
//! model rvl's GGUF writer makes. llama-server as `rvl serve MODEL --rpc …` prints it gives the
//! same greedy tokens as llama-server in one process; `rvl smoke-bench --gguf --rpc` measures
//! pp through the workers with the statuses the local sweep gives.
//!
//! Ports are chosen at run time; every server is killed when its test ends, panics included
//! (and by the kernel if the test's thread goes first). Needs `RVL_LLAMA_BENCH` as
//! tests/prefill_real.rs does; `RVL_REQUIRE_LLAMA=1` (CI) makes a missing build a failure.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::llama::{free_port, llama, tiny_model, Llama, Server};
use common::{plant_llama, rvl, Fixture};
use rvl::exit;

const PREFIX: &str = "/opt/rvl/llama.cpp-0.3.36-rvl1";
/// Tokens generated per request: enough to tell two runs apart, few for lavapipe.
const N_PREDICT: usize = 8;

/// The tests run one at a time: lavapipe compiles ggml's pipelines on the CPU (minutes with a
/// cold cache on 2 cores), and the second test finds them in Mesa's shader cache.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Mesa's shader cache for every lavapipe in these tests, rvl's llama-bench runs included
/// (rvl runs start from an empty environment): the user's, else one under the build dir.
fn shader_cache() -> std::path::PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
}

/// The argv of `rvl serve --print --json ARGS` on a healthy fixture board with rvl's build.
fn serve_argv(fx: &Fixture, args: &[&str]) -> Vec<String> {
    let doc = rvl(&["serve", "--print", "--json"])
        .root(fx)
        .args(args)
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    doc["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn board() -> Fixture {
    let fx = Fixture::copy("boltzmann-mainline");
    plant_llama(&fx, PREFIX, true);
    fx
}

struct Workers {
    gpu: Server,
    cpu: Server,
}

impl Workers {
    fn list(&self) -> String {
        format!("{},{}", self.gpu.endpoint(), self.cpu.endpoint())
    }
}

/// The lavapipe worker runs the command line rvl prints for `--rpc-worker --port N`, with this
/// build's ggml-rpc-server in place of the fixture's; the CPU one is a plain ggml-rpc-server.
fn workers(l: &Llama, fx: &Fixture, dir: &Path) -> Workers {
    let bin = l.bin("ggml-rpc-server");
    let gpu = Server::start("rpc-lavapipe", dir, Duration::from_secs(120), |port| {
        let argv = serve_argv(fx, &["--rpc-worker", "--port", &port.to_string()]);
        assert_eq!(argv[0], format!("{PREFIX}/bin/ggml-rpc-server"));
        assert_eq!(
            argv[1..],
            [
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--device",
                "Vulkan0"
            ]
        );
        let mut c = Command::new(&bin);
        // ggml skips CPU-type Vulkan devices such as lavapipe unless they are named.
        c.args(&argv[1..])
            .env("GGML_VK_VISIBLE_DEVICES", "0")
            .env("XDG_CACHE_HOME", shader_cache());
        c
    });
    let cpu = Server::start("rpc-cpu", dir, Duration::from_secs(60), |port| {
        let mut c = Command::new(&bin);
        c.args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--device",
            "CPU",
        ]);
        c
    });
    assert!(
        gpu.log().contains("Vulkan0: llvmpipe"),
        "the GPU worker serves lavapipe:\n{}",
        gpu.log()
    );
    Workers { gpu, cpu }
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap()
}

/// Wait until llama-server has loaded its model (`/health` answers 200), at most `limit`.
fn ready(s: &mut Server, limit: Duration) {
    let start = Instant::now();
    let url = format!("http://127.0.0.1:{}/health", s.port);
    loop {
        if http()
            .get(&url)
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        assert!(s.running(), "{} exited:\n{}", s.name, s.log());
        assert!(
            start.elapsed() < limit,
            "{} not ready within {} s:\n{}",
            s.name,
            limit.as_secs(),
            s.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The tokens of a greedy completion (temperature 0: the most likely token every step).
fn greedy_tokens(s: &Server) -> Vec<u64> {
    let body = serde_json::json!({
        "prompt": "The quick brown fox",
        "n_predict": N_PREDICT,
        "temperature": 0.0,
        "seed": 1,
        "return_tokens": true,
        "cache_prompt": false,
    });
    let r = http()
        .post(format!("http://127.0.0.1:{}/completion", s.port))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", s.name, s.log()));
    let text = r.text().unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}: {text}\n{}", s.name, s.log()));
    doc["tokens"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no tokens in {text}", s.name))
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect()
}

/// llama-server's options for a small, single-slot, quick-to-start test server.
fn small(port: u16) -> Vec<String> {
    [
        "--port",
        &port.to_string(),
        "-c",
        "256",
        "-np",
        "1",
        "--no-warmup",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn llama_server_gives_the_same_greedy_tokens_through_two_rpc_workers_as_in_one_process() {
    let Some(l) = llama() else { return };
    let _one_at_a_time = serial();
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (model, _) = tiny_model(&l, dir.path());
    let model = model.to_str().unwrap().to_string();
    let server = l.bin("llama-server");
    let fx = board();
    let w = workers(&l, &fx, dir.path());

    // What `rvl serve --rpc` checks before it starts llama-server, against the real thing.
    let eps = rvl::rpc::workers(&[w.gpu.endpoint(), w.cpu.endpoint()]).unwrap();
    let lines = rvl::host::rpc::check(server.to_str().unwrap(), &BTreeMap::new(), &eps)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        lines[0].starts_with(&format!("RPC0: {} (", w.gpu.endpoint())),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with(&format!("RPC1: {} (", w.cpu.endpoint())),
        "{lines:?}"
    );
    let gone =
        rvl::rpc::workers(&[w.gpu.endpoint(), format!("127.0.0.1:{}", free_port())]).unwrap();
    let err = rvl::host::rpc::check(server.to_str().unwrap(), &BTreeMap::new(), &gone).unwrap_err();
    assert!(err.contains("does not answer"), "{err}");

    // The head: rvl's command line for MODEL --rpc A,B; the layers split evenly (-ts 1,1) so
    // each worker computes part of every token. The head has no Vulkan device of its own.
    let argv = serve_argv(&fx, &[&model, "--rpc", &w.list()]);
    let at = argv.iter().position(|a| a == "--rpc").unwrap();
    assert_eq!(argv[at + 1], w.list());
    let mut head = Server::start("head", dir.path(), Duration::from_secs(60), |port| {
        let mut c = Command::new(&server);
        c.args(&argv[1..])
            .args(small(port))
            .args(["-ts", "1,1"])
            .env_remove("GGML_VK_VISIBLE_DEVICES");
        c
    });
    // The reference: one process, the CPU only.
    let mut one = Server::start("one-process", dir.path(), Duration::from_secs(60), |port| {
        let mut c = Command::new(&server);
        c.args(["--model", &model, "-ngl", "0", "-dev", "none"])
            .args(small(port));
        c
    });
    ready(&mut head, Duration::from_secs(300));
    ready(&mut one, Duration::from_secs(120));
    let through_rpc = greedy_tokens(&head);
    let in_one = greedy_tokens(&one);
    assert_eq!(through_rpc.len(), N_PREDICT, "{through_rpc:?}");
    assert_eq!(
        through_rpc, in_one,
        "greedy tokens through RPC (left) and in one process (right) differ"
    );
    for wk in [&w.gpu, &w.cpu] {
        assert!(
            wk.log().contains("Accepted client connection"),
            "{} was never used:\n{}",
            wk.name,
            wk.log()
        );
    }
    eprintln!(
        "greedy tokens {through_rpc:?}, the same through RPC and in one process ({} s)",
        t0.elapsed().as_secs()
    );
}

#[test]
fn smoke_bench_gguf_rpc_measures_pp_through_the_workers_with_the_statuses_of_the_local_sweep() {
    let Some(l) = llama() else { return };
    let _one_at_a_time = serial();
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (model, _) = tiny_model(&l, dir.path());
    let fx = board();
    let w = workers(&l, &fx, dir.path());
    let run = |extra: &[&str]| {
        rvl(&["smoke-bench", "--gguf"])
            .arg(&model)
            .args(&["--ubatch", "16", "--prompt", "64", "--quick", "--json"])
            .arg("--llama-bench")
            .arg(&l.bench)
            .args(extra)
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("XDG_CACHE_HOME", shader_cache())
    };
    // This board alone: lavapipe (named, or ggml skips it) beside the CPU.
    let saved = dir.path().join("local.json");
    let local = run(&["--save", saved.to_str().unwrap()])
        .env("GGML_VK_VISIBLE_DEVICES", "0")
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    // Through the workers; this board has no Vulkan device of its own then (rvl runs start
    // from an empty environment: no GGML_VK_VISIBLE_DEVICES, so ggml skips lavapipe).
    let list = w.list();
    let out = run(&["--rpc", &list, "--compare", saved.to_str().unwrap()]).run();
    let doc = out.stdout_json();
    assert_eq!(doc["exit_code"], exit::OK, "{out}");
    let p = &doc["prefill"];
    assert_eq!(
        p["rpc"],
        serde_json::json!([w.gpu.endpoint(), w.cpu.endpoint()]),
        "{out}"
    );
    let lb = &p["llama_bench"];
    assert!(lb["backends"].as_str().unwrap().contains("RPC"), "{out}");
    assert!(
        lb["gpu_info"].as_str().unwrap().contains(&w.gpu.endpoint()),
        "{out}"
    );
    let rows = |d: &serde_json::Value| {
        d["prefill"]["ubatches"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                ["gpu", "cpu"].map(|side| {
                    (
                        r["ubatch"].as_u64().unwrap(),
                        side,
                        r[side]["status"].as_str().unwrap().to_string(),
                        r[side]["tokens_per_s"].as_f64(),
                    )
                })
            })
            .collect::<Vec<_>>()
    };
    let (before, now) = (rows(&local), rows(&doc));
    assert_eq!(
        before.iter().map(|r| (r.0, r.1, &r.2)).collect::<Vec<_>>(),
        now.iter().map(|r| (r.0, r.1, &r.2)).collect::<Vec<_>>(),
        "the RPC sweep's statuses are the local sweep's"
    );
    assert!(
        now.iter().all(|r| r.2 == "ok" && r.3.unwrap() > 0.0),
        "{out}"
    );
    let gpu_argv = p["ubatches"][0]["gpu"]["argv"].to_string();
    assert!(
        gpu_argv.contains(&format!("\"-rpc\",\"{list}\"")),
        "{gpu_argv}"
    );
    assert_eq!(
        doc["comparison"]["gpu_runs"],
        format!("this board alone, now with RPC workers {list}")
    );
    for (b, n) in before.iter().zip(&now) {
        eprintln!(
            "pp64 ubatch {} {}: local {:.1} t/s, through RPC {:.1} t/s",
            n.0,
            n.1,
            b.3.unwrap(),
            n.3.unwrap()
        );
    }
    eprintln!("({} s)", t0.elapsed().as_secs());
}
