//! A llama-architecture model with random weights, as GGUF: what llama.cpp needs to load
//! and run it (the `llama.*` hyperparameters, every tensor of every layer, a real
//! tokenizer), and nothing it does not.
//!
//! The weights are noise from a fixed seed, so the model says nothing useful, but its
//! prefill does exactly the work a trained model of the same shape does: the same matmuls,
//! attention and norms. That makes it a stand-in for measuring prompt processing speed
//! without downloading weights. The tokenizer is copied from a vocab-only GGUF such as the
//! llama.cpp tree's `models/ggml-vocab-llama-spm.gguf` ([`tokenizer_metadata`]).

use std::io::Write;

use super::quant;
use super::write::{self, TensorSpec};
use super::{GgmlType, Gguf, GgufError, Value};

/// The shape and storage of the model to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaParams {
    pub layers: u32,
    /// n_embd
    pub hidden: u32,
    /// n_ff
    pub ffn: u32,
    pub heads: u32,
    /// grouped-query attention: heads / kv_heads queries share one K/V head
    pub kv_heads: u32,
    pub context: u32,
    /// the matrices' type (f32, f16 or q4_0); norm weights are always f32
    pub weight_type: GgmlType,
    pub seed: u64,
}

impl Default for LlamaParams {
    /// The tiny test model: 2 layers, hidden 128 with 2 heads (head size 64, which every
    /// attention kernel of ggml supports), FFN 384, f16.
    fn default() -> Self {
        LlamaParams {
            layers: 2,
            hidden: 128,
            ffn: 384,
            heads: 2,
            kv_heads: 2,
            context: 2048,
            weight_type: GgmlType::F16,
            seed: 0x5eed,
        }
    }
}

impl LlamaParams {
    fn check(&self) -> Result<(), GgufError> {
        let bad = |m: String| Err(GgufError::Invalid(m));
        if [
            self.layers,
            self.hidden,
            self.ffn,
            self.heads,
            self.kv_heads,
            self.context,
        ]
        .contains(&0)
        {
            return bad("layers, hidden, ffn, heads, kv_heads and context must all be > 0".into());
        }
        if self.hidden % self.heads != 0 {
            return bad(format!(
                "hidden {} is not a multiple of heads {}",
                self.hidden, self.heads
            ));
        }
        if self.heads % self.kv_heads != 0 {
            return bad(format!(
                "heads {} is not a multiple of kv_heads {}",
                self.heads, self.kv_heads
            ));
        }
        if (self.hidden / self.heads) % 2 != 0 {
            return bad(format!(
                "head size {} must be even (RoPE rotates pairs)",
                self.hidden / self.heads
            ));
        }
        if !matches!(
            self.weight_type,
            GgmlType::F32 | GgmlType::F16 | GgmlType::Q4_0
        ) {
            return bad(format!(
                "weight type {} cannot be written (f32, f16, q4_0 can)",
                self.weight_type.name()
            ));
        }
        if let Some((block, _)) = self.weight_type.block() {
            // ne[0] of the matrices is hidden, or ffn for ffn_down
            for (what, n) in [("hidden", self.hidden), ("ffn", self.ffn)] {
                if u64::from(n) % block != 0 {
                    return bad(format!(
                        "{what} {n} is not a multiple of {block} ({} blocks)",
                        self.weight_type.name()
                    ));
                }
            }
        }
        Ok(())
    }

    fn head_dim(&self) -> u32 {
        self.hidden / self.heads
    }

    /// llama.cpp's `general.file_type` for the weight type (LLAMA_FTYPE_ALL_F32,
    /// _MOSTLY_F16, _MOSTLY_Q4_0), which llama-bench prints as the model's type.
    fn file_type(&self) -> u32 {
        match self.weight_type {
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            _ => 0,
        }
    }
}

/// The `tokenizer.*` keys of a vocab GGUF (llama.cpp's `models/ggml-vocab-*.gguf`), which
/// must at least list the tokens.
pub fn tokenizer_metadata(vocab: &Gguf) -> Result<Vec<(String, Value)>, GgufError> {
    let keys: Vec<(String, Value)> = vocab
        .metadata
        .iter()
        .filter(|(k, _)| k.starts_with("tokenizer."))
        .cloned()
        .collect();
    match keys.iter().find(|(k, _)| k == "tokenizer.ggml.tokens") {
        Some((_, Value::Array(_, tokens))) if !tokens.is_empty() => Ok(keys),
        _ => Err(GgufError::Invalid(
            "the vocab file has no tokenizer.ggml.tokens list".into(),
        )),
    }
}

/// The metadata and tensor table of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorSpec>,
    pub vocab_size: u64,
}

impl Model {
    pub fn describe(p: &LlamaParams, tokenizer: Vec<(String, Value)>) -> Result<Model, GgufError> {
        p.check()?;
        let vocab_size = match tokenizer.iter().find(|(k, _)| k == "tokenizer.ggml.tokens") {
            Some((_, Value::Array(_, t))) if !t.is_empty() => t.len() as u64,
            _ => return Err(GgufError::Invalid("the tokenizer has no tokens".into())),
        };
        let u = Value::U32;
        let mut metadata: Vec<(String, Value)> = vec![
            ("general.architecture".into(), Value::String("llama".into())),
            (
                "general.name".into(),
                Value::String(format!(
                    "rvl random llama {}L h{} ffn{} {}",
                    p.layers,
                    p.hidden,
                    p.ffn,
                    p.weight_type.name()
                )),
            ),
            ("general.file_type".into(), u(p.file_type())),
            ("llama.context_length".into(), u(p.context)),
            ("llama.embedding_length".into(), u(p.hidden)),
            ("llama.block_count".into(), u(p.layers)),
            ("llama.feed_forward_length".into(), u(p.ffn)),
            ("llama.attention.head_count".into(), u(p.heads)),
            ("llama.attention.head_count_kv".into(), u(p.kv_heads)),
            ("llama.rope.dimension_count".into(), u(p.head_dim())),
            ("llama.rope.freq_base".into(), Value::F32(10_000.0)),
            (
                "llama.attention.layer_norm_rms_epsilon".into(),
                Value::F32(1e-5),
            ),
            ("llama.vocab_size".into(), u(vocab_size as u32)),
        ];
        metadata.extend(tokenizer);

        let (h, f, v) = (u64::from(p.hidden), u64::from(p.ffn), vocab_size);
        let kv = u64::from(p.kv_heads * p.head_dim());
        let w = p.weight_type;
        let mut tensors = vec![
            TensorSpec::new("token_embd.weight", &[h, v], w),
            TensorSpec::new("output_norm.weight", &[h], GgmlType::F32),
            TensorSpec::new("output.weight", &[h, v], w),
        ];
        for i in 0..p.layers {
            let t = |name: &str, dims: &[u64], ty| {
                TensorSpec::new(format!("blk.{i}.{name}.weight"), dims, ty)
            };
            tensors.extend([
                t("attn_norm", &[h], GgmlType::F32),
                t("attn_q", &[h, h], w),
                t("attn_k", &[h, kv], w),
                t("attn_v", &[h, kv], w),
                t("attn_output", &[h, h], w),
                t("ffn_norm", &[h], GgmlType::F32),
                t("ffn_gate", &[h, f], w),
                t("ffn_up", &[h, f], w),
                t("ffn_down", &[f, h], w),
            ]);
        }
        Ok(Model {
            metadata,
            tensors,
            vocab_size,
        })
    }

    /// Tensor i's bytes: norms are ones; matrices uniform in ±1/sqrt(fan-in) (fan-in =
    /// dims[0]), so activations stay in range through the layers. Deterministic per
    /// (seed, i).
    pub fn tensor_data(&self, seed: u64, i: usize) -> Vec<u8> {
        let t = &self.tensors[i];
        let n: u64 = t.dims.iter().product();
        let values: Vec<f32> = if t.dims.len() == 1 {
            vec![1.0; n as usize]
        } else {
            let scale = 1.0 / (t.dims[0] as f32).sqrt();
            let mut rng = SplitMix64(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            (0..n).map(|_| rng.unit() * scale).collect()
        };
        // check() allows only types encode() handles, in whole blocks
        quant::encode(t.ggml_type, &values).unwrap_or_default()
    }

    /// Bytes the file will take.
    pub fn file_size(&self) -> Result<u64, GgufError> {
        let (head, offsets) = write::header(&self.metadata, &self.tensors)?;
        let last = self.tensors.len() - 1;
        Ok(head.len() as u64 + offsets[last] + self.tensors[last].byte_size()?)
    }
}

/// Write the model described by `p` with the tokenizer keys `tokenizer` to `w`; returns the
/// bytes written.
pub fn write_model<W: Write>(
    w: &mut W,
    p: &LlamaParams,
    tokenizer: Vec<(String, Value)>,
) -> Result<u64, GgufError> {
    let model = Model::describe(p, tokenizer)?;
    write::write(w, &model.metadata, &model.tensors, |i| {
        model.tensor_data(p.seed, i)
    })
}

/// A small fast PRNG (splitmix64): reproducible noise, not cryptography.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        // the top 24 bits: exactly representable in f32
        ((self.next() >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::super::read::parse;
    use super::super::write::strings;
    use super::*;

    fn tokenizer(n: usize) -> Vec<(String, Value)> {
        let tokens: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        vec![
            ("tokenizer.ggml.model".into(), Value::String("llama".into())),
            ("tokenizer.ggml.tokens".into(), strings(&tokens)),
        ]
    }

    #[test]
    fn the_model_has_every_tensor_llama_cpp_loads_with_its_shape() {
        let p = LlamaParams {
            kv_heads: 1,
            ..LlamaParams::default()
        };
        let m = Model::describe(&p, tokenizer(100)).unwrap();
        // 3 global tensors + 9 per layer
        assert_eq!(m.tensors.len(), 3 + 9 * 2);
        let dims = |n: &str| m.tensors.iter().find(|t| t.name == n).unwrap().dims.clone();
        assert_eq!(dims("token_embd.weight"), vec![128, 100]);
        assert_eq!(dims("blk.1.attn_k.weight"), vec![128, 64]);
        assert_eq!(dims("blk.1.ffn_down.weight"), vec![384, 128]);
        assert_eq!(dims("blk.0.ffn_gate.weight"), vec![128, 384]);
        let get = |k: &str| {
            m.metadata
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("llama.rope.dimension_count"), Some(Value::U32(64)));
        assert_eq!(get("llama.vocab_size"), Some(Value::U32(100)));
        assert_eq!(
            get("general.architecture"),
            Some(Value::String("llama".into()))
        );
        assert_eq!(
            get("tokenizer.ggml.model"),
            Some(Value::String("llama".into()))
        );
    }

    #[test]
    fn a_written_model_parses_back_at_the_predicted_size_with_unit_norms() {
        for ty in [GgmlType::F32, GgmlType::F16, GgmlType::Q4_0] {
            let p = LlamaParams {
                weight_type: ty,
                hidden: 64,
                heads: 2,
                ffn: 96,
                ..LlamaParams::default()
            };
            let mut out = Vec::new();
            let n = write_model(&mut out, &p, tokenizer(64)).unwrap();
            assert_eq!(n, out.len() as u64);
            let m = Model::describe(&p, tokenizer(64)).unwrap();
            assert_eq!(m.file_size().unwrap(), n);
            let g = parse(&out, true).unwrap();
            assert_eq!(g.tensor("blk.0.attn_q.weight").unwrap().ggml_type, ty);
            let norm = g.tensor("output_norm.weight").unwrap();
            let at = (g.data_offset + norm.offset) as usize;
            assert_eq!(&out[at..at + 4], &1.0f32.to_le_bytes());
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_another_seed_other_bytes() {
        let m = Model::describe(&LlamaParams::default(), tokenizer(32)).unwrap();
        let i = m
            .tensors
            .iter()
            .position(|t| t.name == "blk.0.attn_q.weight")
            .unwrap();
        assert_eq!(m.tensor_data(1, i), m.tensor_data(1, i));
        assert_ne!(m.tensor_data(1, i), m.tensor_data(2, i));
        let vals: Vec<f32> = m
            .tensor_data(1, i)
            .chunks(2)
            .map(|b| super::super::f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect();
        let bound = 1.0 / 128f32.sqrt() + 1e-3;
        assert!(vals.iter().all(|v| v.abs() <= bound));
        assert!(vals.iter().any(|v| *v > bound / 2.0) && vals.iter().any(|v| *v < -bound / 2.0));
    }

    #[test]
    fn shapes_llama_cpp_would_reject_are_refused_up_front() {
        let bad = |p: LlamaParams| Model::describe(&p, tokenizer(8)).unwrap_err().to_string();
        let d = LlamaParams::default;
        assert!(bad(LlamaParams { heads: 3, ..d() }).contains("multiple of heads"));
        assert!(bad(LlamaParams {
            kv_heads: 3,
            heads: 4,
            ..d()
        })
        .contains("multiple of kv_heads"));
        assert!(bad(LlamaParams { layers: 0, ..d() }).contains("> 0"));
        assert!(bad(LlamaParams {
            hidden: 96,
            heads: 32,
            ..d()
        })
        .contains("even"));
        assert!(bad(LlamaParams {
            ffn: 100,
            weight_type: GgmlType::Q4_0,
            ..d()
        })
        .contains("ffn 100"));
        assert!(bad(LlamaParams {
            weight_type: GgmlType::Q8_0,
            ..d()
        })
        .contains("cannot be written"));
        assert!(Model::describe(&d(), vec![]).is_err());
    }

    #[test]
    fn only_tokenizer_keys_are_copied_from_a_vocab_file() {
        let mut meta = tokenizer(4);
        meta.push(("general.architecture".into(), Value::String("llama".into())));
        meta.push(("llama.block_count".into(), Value::U32(32)));
        let vocab = Gguf {
            version: 3,
            metadata: meta,
            tensors: vec![],
            alignment: 32,
            data_offset: 0,
        };
        let keys: Vec<String> = tokenizer_metadata(&vocab)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, vec!["tokenizer.ggml.model", "tokenizer.ggml.tokens"]);
        let empty = Gguf {
            metadata: vec![],
            ..vocab
        };
        assert!(tokenizer_metadata(&empty).is_err());
    }
}
