//! Write a random-weight llama-architecture GGUF that llama.cpp loads and runs, for
//! measuring prompt processing without downloading a model:
//!
//!   cargo run --example make-gguf -- --vocab TREE/models/ggml-vocab-llama-spm.gguf \
//!       --out tiny.gguf                                   # 2 layers, hidden 128, f16
//!   cargo run --release --example make-gguf -- --vocab ... --out big.gguf \
//!       --layers 4 --hidden 2048 --ffn 11008 --heads 16 --type q4_0
//!
//! The tokenizer is copied from the vocab file (llama.cpp's `models/ggml-vocab-*.gguf`).

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use rvl::gguf::llama_model::{tokenizer_metadata, write_model, LlamaParams, Model};
use rvl::gguf::{read, GgmlType};

#[derive(Parser)]
#[command(about = "Write a random-weight llama GGUF (llama.cpp loads it; the output is noise)")]
struct Args {
    /// The GGUF file to write
    #[arg(long)]
    out: PathBuf,
    /// A vocab GGUF whose tokenizer.* keys are copied (e.g. llama.cpp's models/ggml-vocab-llama-spm.gguf)
    #[arg(long)]
    vocab: PathBuf,
    #[arg(long, default_value_t = 2)]
    layers: u32,
    #[arg(long, default_value_t = 128)]
    hidden: u32,
    #[arg(long, default_value_t = 384)]
    ffn: u32,
    /// Attention heads (head size = hidden / heads)
    #[arg(long, default_value_t = 2)]
    heads: u32,
    /// K/V heads (default: = heads)
    #[arg(long)]
    kv_heads: Option<u32>,
    #[arg(long, default_value_t = 2048)]
    context: u32,
    /// Matrix storage: f32, f16 or q4_0
    #[arg(long = "type", default_value = "f16", value_parser = ["f32", "f16", "q4_0"])]
    weight_type: String,
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let p = LlamaParams {
        layers: a.layers,
        hidden: a.hidden,
        ffn: a.ffn,
        heads: a.heads,
        kv_heads: a.kv_heads.unwrap_or(a.heads),
        context: a.context,
        weight_type: match a.weight_type.as_str() {
            "f32" => GgmlType::F32,
            "q4_0" => GgmlType::Q4_0,
            _ => GgmlType::F16,
        },
        seed: a.seed,
    };
    match run(&a, &p) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("make-gguf: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args, p: &LlamaParams) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&a.vocab).with_context(|| format!("cannot read {}", a.vocab.display()))?;
    let vocab = read::parse(&bytes, true).with_context(|| a.vocab.display().to_string())?;
    let tokenizer = tokenizer_metadata(&vocab).with_context(|| a.vocab.display().to_string())?;
    let model = Model::describe(p, tokenizer.clone())?;
    eprintln!(
        "make-gguf: {} layers, hidden {}, ffn {}, heads {}/{}, vocab {}, {}: {:.1} MB",
        p.layers,
        p.hidden,
        p.ffn,
        p.heads,
        p.kv_heads,
        model.vocab_size,
        p.weight_type.name(),
        model.file_size()? as f64 / 1e6
    );
    let file =
        File::create(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let mut w = BufWriter::new(file);
    let n = write_model(&mut w, p, tokenizer).with_context(|| a.out.display().to_string())?;
    println!("{} ({n} bytes)", a.out.display());
    Ok(())
}
