//! `smoke-bench --gguf` against a stand-in llama-bench: a sh script in a temporary directory
//! that prints what llama-bench's `-o json` prints (the fields of tools/llama-bench's JSON
//! printer that rvl reads, and a few it does not), and a file with GGUF's magic as the model.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::run::{rvl, Rvl};

pub struct Bench {
    pub dir: tempfile::TempDir,
    pub bench: PathBuf,
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
    let model = dir.path().join(model_name);
    fs::write(&model, b"GGUF\x03\x00\x00\x00 a stand-in model").unwrap();
    let state = dir.path().join("state");
    Bench {
        dir,
        bench,
        model,
        state,
    }
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

/// A GGUF file with the `tiny` preset's layer shapes in its metadata and no tensors: enough
/// for smoke-bench's GEMM prediction (the stand-in llama-bench never reads it).
pub fn tiny_shapes_gguf(file_type: Option<u32>) -> Vec<u8> {
    use rvl::gguf::Value;
    let mut meta: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String("llama".into())),
        ("llama.embedding_length".into(), Value::U32(64)),
        ("llama.feed_forward_length".into(), Value::U32(160)),
        ("llama.block_count".into(), Value::U32(2)),
        ("llama.attention.head_count".into(), Value::U32(4)),
        ("llama.attention.head_count_kv".into(), Value::U32(2)),
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
