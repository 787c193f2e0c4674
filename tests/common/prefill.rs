//! `smoke-bench --gguf` against a stand-in llama-bench: a sh script in a temporary directory
//! that prints what llama-bench's `-o json` prints (the fields of tools/llama-bench's JSON
//! printer that rvl reads, and a few it does not), and a file with GGUF's magic as the model.
//! Beside it a stand-in `test-backend-ops` ([`TBO_SCRIPT`]) answers the correctness check and
//! the GEMM bench's llama.cpp columns.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::run::{rvl, Rvl};

pub struct Bench {
    pub dir: tempfile::TempDir,
    pub bench: PathBuf,
    /// The stand-in test-backend-ops beside it.
    pub tbo: PathBuf,
    pub model: PathBuf,
    /// XDG_STATE_HOME for the run (the record for rvl serve lands under it).
    pub state: PathBuf,
}

/// A stand-in whose behaviour per case is `arms`: sh `case "$ngl:$ub"` arms tried before the
/// default ones, e.g. `99:128) kill -ABRT $$;;`. By default a GPU run (`-ngl 99`) reports
/// ub*2+0.5 t/s on "llvmpipe (LLVM 15.0.6, 256 bits)", a CPU run 20.5 t/s. Every call's
/// arguments are appended to `<bench>.calls`.
pub fn stand_in(arms: &str) -> Bench {
    stand_in_named(arms, "tiny.gguf")
}

pub fn stand_in_named(arms: &str, model_name: &str) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("llama-bench");
    let script = format!(
        r#"#!/bin/sh
echo "GGML_VK_VISIBLE_DEVICES=$GGML_VK_VISIBLE_DEVICES $*" >> "$0.calls"
ub=; ngl=; p=
while [ $# -gt 0 ]; do
  case "$1" in
    -ub) ub=$2; shift;;
    -ngl) ngl=$2; shift;;
    -p) p=$2; shift;;
  esac
  shift
done
json() {{
cat <<J
[
  {{
    "build_commit": "abc1234",
    "build_number": 7000,
    "cpu_info": "stand-in CPU",
    "gpu_info": "$2",
    "backends": "Vulkan",
    "model_filename": "m.gguf",
    "model_type": "llama ?B F16",
    "model_size": 4000000,
    "model_n_params": 2000000,
    "n_batch": 512,
    "n_ubatch": $ub,
    "n_threads": 4,
    "n_gpu_layers": $ngl,
    "n_prompt": $p,
    "n_gen": 0,
    "n_depth": 0,
    "test_time": "2026-12-03T09:00:00Z",
    "avg_ns": 1000,
    "stddev_ns": 10,
    "avg_ts": $1,
    "stddev_ts": 0.25,
    "samples_ns": [ 1000, 1000 ],
    "samples_ts": [ $1, $1 ]
  }}
]
J
}}
case "$ngl:$ub" in
{arms}
99:*) json "$((ub * ${{GPU_FACTOR:-2}})).5" "llvmpipe (LLVM 15.0.6, 256 bits)";;
*) json 20.5 "";;
esac
"#
    );
    fs::write(&bench, script).unwrap();
    fs::set_permissions(&bench, fs::Permissions::from_mode(0o755)).unwrap();
    let tbo = stand_in_tbo(dir.path());
    let model = dir.path().join(model_name);
    fs::write(&model, b"GGUF\x03\x00\x00\x00 a stand-in model").unwrap();
    let state = dir.path().join("state");
    Bench {
        dir,
        bench,
        tbo,
        model,
        state,
    }
}

/// A stand-in for rvl's patched `test-backend-ops`: for each `--mul-mat TYPE:M:N:K` product it
/// prints the line the real tool's console printer does. `test`: OK, or a FAIL with an NMSE
/// line for products whose N is in `TBO_WRONG_AT` (`:128:` style list, e.g. `128`); `perf`: a
/// time of M*N*K/`TBO_RATE` us (default 1000, 2 GFLOP/s; the CPU backend takes half the rate),
/// q4_0 weights on the CPU in `CPU_REPACK`. `TBO_FAIL=1` makes it exit 1 with llama.cpp's usage
/// text, as a build without rvl's patch does. Every call's arguments go to `<tbo>.calls`.
pub const TBO_SCRIPT: &str = r#"#!/bin/sh
echo "$*" >> "$0.calls"
if [ -n "$TBO_FAIL" ]; then echo "Usage: $0 [mode] [options]"; exit 1; fi
mode=test; spec=; backend=
while [ $# -gt 0 ]; do
  case "$1" in
    test|perf) mode=$1;;
    --mul-mat) spec=$2; shift;;
    -b) backend=$2; shift;;
  esac
  shift
done
echo "Testing 2 devices"
echo ""
echo "Backend 1/2: $backend"
echo "  Device description: stand-in $backend"
echo ""
rc=0
rate=${TBO_RATE:-1000}
[ "$backend" = CPU ] && rate=$((rate / 2))
for c in $(echo "$spec" | tr ',' ' '); do
  set -- $(echo "$c" | tr ':' ' ')
  t=$1; m=$2; n=$3; k=$4
  if [ "$mode" = perf ]; then
    us=$((m * n * k / rate + 1))
    w=$backend; [ "$backend" = CPU ] && [ "$t" = q4_0 ] && w=CPU_REPACK
    printf '  MUL_MAT(type_a=%s,m=%s,n=%s,k=%s,weights=%s):   3 runs - %s.00 us/run - 1.00 GFLOP/run - [1;34m  1.00 GFLOPS[0m
' $t $m $n $k $w $us
  else
    case ":${TBO_WRONG_AT:-none}:" in
      *":$n:"*) printf '[MUL_MAT] ERR = 0.531000000 > 0.000500000   MUL_MAT(type_a=%s,m=%s,n=%s,k=%s): [1;31mFAIL[0m
' $t $m $n $k; rc=1;;
      *) printf '  MUL_MAT(type_a=%s,m=%s,n=%s,k=%s): [1;32mOK[0m
' $t $m $n $k;;
    esac
  fi
done
echo "  Backend $backend: OK"
exit $rc
"#;

/// [`TBO_SCRIPT`] as `DIR/test-backend-ops`.
pub fn stand_in_tbo(dir: &std::path::Path) -> PathBuf {
    let p = dir.join("test-backend-ops");
    fs::write(&p, TBO_SCRIPT).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// What llama.cpp on panvk without the tiles patch does above ubatch 64: the out-of-memory
/// exception's lines on stderr, then abort.
pub const OOM_ABORT: &str = "echo 'ggml_vulkan: Compiling shaders' >&2; echo \"terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\" >&2; echo '  what():  vk::CommandBuffer::end: ErrorOutOfDeviceMemory' >&2; kill -ABRT $$";

impl Bench {
    /// `rvl smoke-bench --gguf MODEL --llama-bench STAND-IN ARGS…`, the record under `state`.
    pub fn rvl(&self, args: &[&str]) -> Rvl {
        rvl(&["smoke-bench", "--gguf"])
            .arg(&self.model)
            .arg("--llama-bench")
            .arg(&self.bench)
            .args(args)
            .env("XDG_STATE_HOME", &self.state)
    }

    pub fn calls(&self) -> String {
        fs::read_to_string(format!("{}.calls", self.bench.display())).unwrap_or_default()
    }

    /// The stand-in test-backend-ops' calls, one a line.
    pub fn tbo_calls(&self) -> String {
        fs::read_to_string(format!("{}.calls", self.tbo.display())).unwrap_or_default()
    }

    pub fn record(&self) -> PathBuf {
        self.state.join("rvl/prefill").join(
            self.model
                .file_name()
                .map(|n| format!("{}.json", n.to_string_lossy()))
                .unwrap(),
        )
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A `smoke-bench --gguf` run of a model named `model_name` (the tensor table of
/// [`weights_gguf`]) at GPU ubatches `ubatches`, whose check finds wrong results at `wrong_at`,
/// recorded for `rvl serve` under `state_home` (its XDG_STATE_HOME).
pub fn record_wrong_results(
    model_name: &str,
    ubatches: &str,
    wrong_at: &str,
    state_home: &std::path::Path,
) {
    let b = stand_in_named("", model_name);
    fs::write(&b.model, weights_gguf()).unwrap();
    b.rvl(&["--ubatch", ubatches, "--no-cpu"])
        .env("XDG_STATE_HOME", state_home)
        .env("TBO_WRONG_AT", wrong_at)
        .run()
        .expect_code(rvl::exit::PROBLEMS);
}

/// A GGUF header with the tiny generated model's tensor table (2 layers, hidden 128, FFN 384,
/// f16 matrices, a 32000-token LM head) and no tensor data: enough for the correctness check's
/// shapes (the stand-ins never read the model).
pub fn weights_gguf() -> Vec<u8> {
    use rvl::gguf::write::TensorSpec;
    use rvl::gguf::{GgmlType, Value};
    // No layer-shape keys: the GEMM prediction (which needs rvl's Vulkan) stays out of it.
    let meta: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String("llama".into())),
        ("general.file_type".into(), Value::U32(1)),
    ];
    let mut tensors = vec![
        TensorSpec::new("token_embd.weight", &[128, 32000], GgmlType::F16),
        TensorSpec::new("output.weight", &[128, 32000], GgmlType::F16),
    ];
    for l in 0..2 {
        for (role, dims) in [
            ("attn_q", [128, 128]),
            ("attn_k", [128, 128]),
            ("attn_v", [128, 128]),
            ("attn_output", [128, 128]),
            ("ffn_gate", [128, 384]),
            ("ffn_up", [128, 384]),
            ("ffn_down", [384, 128]),
        ] {
            tensors.push(TensorSpec::new(
                format!("blk.{l}.{role}.weight"),
                &dims,
                GgmlType::F16,
            ));
        }
        tensors.push(TensorSpec::new(
            format!("blk.{l}.attn_norm.weight"),
            &[128],
            GgmlType::F32,
        ));
    }
    rvl::gguf::write::header(&meta, &tensors).unwrap().0
}

/// A GGUF file with the `tiny` preset's layer shapes in its metadata and no tensors: enough
/// for smoke-bench's GEMM prediction (the stand-in llama-bench never reads it).
pub fn tiny_shapes_gguf(file_type: Option<u32>) -> Vec<u8> {
    shapes_gguf(64, 160, 2, 4, 2, file_type)
}

/// A GGUF header naming these llama layer shapes (hidden, ffn, layers, heads, KV heads).
pub fn shapes_gguf(
    hidden: u32,
    ffn: u32,
    layers: u32,
    heads: u32,
    kv_heads: u32,
    file_type: Option<u32>,
) -> Vec<u8> {
    use rvl::gguf::Value;
    let mut meta: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String("llama".into())),
        ("llama.embedding_length".into(), Value::U32(hidden)),
        ("llama.feed_forward_length".into(), Value::U32(ffn)),
        ("llama.block_count".into(), Value::U32(layers)),
        ("llama.attention.head_count".into(), Value::U32(heads)),
        ("llama.attention.head_count_kv".into(), Value::U32(kv_heads)),
    ];
    if let Some(t) = file_type {
        meta.push(("general.file_type".into(), Value::U32(t)));
    }
    rvl::gguf::write::header(&meta, &[]).unwrap().0
}

/// A GGUF header with one layer's weight matrices of type `ty` (attn_q 64x64, ffn_up 64x160,
/// ffn_down 160x64: 49,152 FLOP per token) beside an f32 norm: enough for the G610 lab
/// prediction (no shapes metadata, so no GEMM sweep).
pub fn tiny_weights_gguf(ty: rvl::gguf::GgmlType) -> Vec<u8> {
    use rvl::gguf::{write::TensorSpec, GgmlType, Value};
    let meta = vec![(
        "general.architecture".to_string(),
        Value::String("llama".into()),
    )];
    let t = [
        TensorSpec::new("blk.0.attn_norm.weight", &[64], GgmlType::F32),
        TensorSpec::new("blk.0.attn_q.weight", &[64, 64], ty),
        TensorSpec::new("blk.0.ffn_up.weight", &[64, 160], ty),
        TensorSpec::new("blk.0.ffn_down.weight", &[160, 64], ty),
    ];
    rvl::gguf::write::header(&meta, &t).unwrap().0
}
