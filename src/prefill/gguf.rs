//! The layer shapes the GEMM prediction needs, from a model's GGUF metadata
//! (`<arch>.embedding_length`, `.feed_forward_length`, `.block_count`,
//! `.attention.head_count`, `.attention.head_count_kv`) and `general.file_type`. Pure: the
//! bytes at the start of the file go through rvl's one GGUF reader ([`crate::gguf::read`]);
//! tensor data is never read.

use crate::gguf::Gguf;

/// Enough for the metadata and tensor table of real models (a 150k-token vocabulary is ~5 MiB).
pub const HEAD_CAP: usize = 64 << 20;

/// The largest shapes the prediction takes, each about four times what the biggest published
/// dense models use (Llama 3.1 405B: hidden 16384, ffn 53248, 126 layers; Nemotron-4 340B:
/// hidden 18432, ffn 73728, 96 layers). A file naming more is not a model rvl can predict;
/// with these, every size the sweep derives (a weight matrix is at most 2^34 elements) fits
/// in a u64 with room to spare.
pub const MAX_HIDDEN: u32 = 1 << 16;
pub const MAX_FFN: u32 = 1 << 18;
pub const MAX_LAYERS: u32 = 1 << 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shapes {
    pub architecture: String,
    pub hidden: u32,
    pub ffn: u32,
    pub layers: u32,
    pub heads: u32,
    pub kv_heads: u32,
    /// llama.cpp's `llama_ftype` (0 all F32, 1 mostly F16, 2 mostly Q4_0, ...), if given.
    pub file_type: Option<u32>,
}

impl Shapes {
    pub fn describe(&self) -> String {
        format!(
            "{}: hidden {}, ffn {}, {} layers, {} heads ({} KV)",
            self.architecture, self.hidden, self.ffn, self.layers, self.heads, self.kv_heads
        )
    }
}

/// The layer shapes of the model whose file starts with `head`, or why they cannot be read.
pub fn shapes(head: &[u8]) -> Result<Shapes, String> {
    let g = crate::gguf::read::parse(head, false).map_err(|e| e.to_string())?;
    from_metadata(&g)
}

/// A weight matrix llama.cpp multiplies activations by (`MUL_MAT`): its ggml type name, its
/// output features (`m`, the tensor's second dimension) and input features (`k`, the first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Weight {
    pub ggml_type: String,
    pub m: u64,
    pub k: u64,
    /// The output projection (LM head): a prompt run multiplies only the last token by it.
    pub lm_head: bool,
}

/// The per-layer projections llama.cpp runs as MUL_MAT on the weights (`blk.N.<role>.weight`).
const MATMUL_ROLES: &[&str] = &[
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_qkv",
    "attn_output",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
    "ffn_gate_up",
];

/// The distinct matrices (type and shape) of the model whose file starts with `head`: every
/// layer projection and the LM head (`output.weight`, else the tied `token_embd.weight`), the
/// shapes the correctness check runs. Types rvl has no name for are left out and listed in
/// the second value.
pub fn weights(head: &[u8]) -> Result<(Vec<Weight>, Vec<String>), String> {
    let g = crate::gguf::read::parse(head, false).map_err(|e| e.to_string())?;
    let head_name = if g.tensor("output.weight").is_some() {
        "output.weight"
    } else {
        "token_embd.weight"
    };
    let mut out = Vec::new();
    let mut unnamed = Vec::new();
    for t in &g.tensors {
        let role = t
            .name
            .strip_prefix("blk.")
            .and_then(|r| r.split_once('.'))
            .filter(|(n, _)| n.parse::<u32>().is_ok())
            .and_then(|(_, r)| r.strip_suffix(".weight"));
        let lm_head = t.name == head_name;
        if !(lm_head || role.is_some_and(|r| MATMUL_ROLES.contains(&r))) || t.dims.len() != 2 {
            continue;
        }
        let Some(ty) = t.ggml_type.ggml_name() else {
            unnamed.push(format!("{} (ggml type {})", t.name, t.ggml_type.0));
            continue;
        };
        out.push(Weight {
            ggml_type: ty.to_string(),
            m: t.dims[1],
            k: t.dims[0],
            lm_head,
        });
    }
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err("its tensor table has no projection weights (blk.N.attn_q.weight, ...)".into());
    }
    Ok((out, unnamed))
}

fn from_metadata(g: &Gguf) -> Result<Shapes, String> {
    let arch = g
        .get("general.architecture")
        .and_then(|v| v.as_str())
        .ok_or("no general.architecture")?
        .to_string();
    let int = |k: &str| -> Result<u32, String> {
        let key = format!("{arch}.{k}");
        let v = g.get(&key).ok_or_else(|| format!("no {key}"))?;
        v.as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| *v > 0)
            .ok_or_else(|| format!("{key} is {v:?}"))
    };
    let heads = int("attention.head_count")?;
    let s = Shapes {
        hidden: int("embedding_length")?,
        ffn: int("feed_forward_length")?,
        layers: int("block_count")?,
        heads,
        // Without the key llama.cpp takes as many KV heads as heads.
        kv_heads: int("attention.head_count_kv").unwrap_or(heads),
        file_type: g
            .get("general.file_type")
            .and_then(|v| v.as_u64())
            .and_then(|v| u32::try_from(v).ok()),
        architecture: arch,
    };
    s.check()?;
    Ok(s)
}

impl Shapes {
    /// Shapes a real model can have: within [`MAX_HIDDEN`], [`MAX_FFN`] and [`MAX_LAYERS`],
    /// and heads that divide the hidden size. Err names the key and its bound.
    pub fn check(&self) -> Result<(), String> {
        let arch = &self.architecture;
        for (key, value, max) in [
            ("embedding_length", self.hidden, MAX_HIDDEN),
            ("feed_forward_length", self.ffn, MAX_FFN),
            ("block_count", self.layers, MAX_LAYERS),
        ] {
            if value > max {
                return Err(format!(
                    "{arch}.{key} {value} is beyond any real model (at most {max})"
                ));
            }
        }
        if self.heads == 0 || self.hidden % self.heads != 0 || self.kv_heads > self.heads {
            return Err(format!(
                "{} heads ({} KV) do not divide embedding_length {}",
                self.heads, self.kv_heads, self.hidden
            ));
        }
        Ok(())
    }
}

/// The GEMM sweep's precision for llama.cpp's file type, where one matches: all F32, mostly
/// F16, mostly Q4_0. Other types get every precision the device has.
pub fn precision_of(file_type: Option<u32>) -> Option<&'static str> {
    match file_type? {
        0 => Some("fp32"),
        1 => Some("fp16"),
        2 => Some("q4_0"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::{write, Value};

    fn file(meta: &[(&str, Value)]) -> Vec<u8> {
        let meta: Vec<(String, Value)> = meta
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        write::header(&meta, &[]).unwrap().0
    }

    fn qwen() -> Vec<u8> {
        file(&[
            ("general.architecture", Value::String("qwen2".into())),
            ("general.file_type", Value::U32(2)),
            ("qwen2.embedding_length", Value::U32(2048)),
            ("qwen2.feed_forward_length", Value::U32(11008)),
            ("qwen2.block_count", Value::U64(36)),
            ("qwen2.attention.head_count", Value::U32(16)),
            ("qwen2.attention.head_count_kv", Value::U32(2)),
        ])
    }

    #[test]
    fn the_layer_shapes_are_read_from_the_architectures_keys_in_any_integer_width() {
        let s = shapes(&qwen()).unwrap();
        assert_eq!(
            (
                s.architecture.as_str(),
                s.hidden,
                s.ffn,
                s.layers,
                s.heads,
                s.kv_heads,
                s.file_type
            ),
            ("qwen2", 2048, 11008, 36, 16, 2, Some(2))
        );
        assert_eq!(precision_of(s.file_type), Some("q4_0"));
        assert_eq!(
            s.describe(),
            "qwen2: hidden 2048, ffn 11008, 36 layers, 16 heads (2 KV)"
        );
    }

    #[test]
    fn the_checked_weights_are_each_layer_projection_once_and_the_lm_head() {
        use crate::gguf::write::TensorSpec;
        use crate::gguf::GgmlType;
        let q4k = GgmlType(12);
        let mut tensors = vec![
            TensorSpec::new("token_embd.weight", &[2048, 151936], GgmlType::Q8_0),
            TensorSpec::new("output_norm.weight", &[2048], GgmlType::F32),
        ];
        for l in 0..2 {
            for (role, dims, ty) in [
                ("attn_norm", vec![2048], GgmlType::F32),
                ("attn_q", vec![2048, 2048], q4k),
                ("attn_k", vec![2048, 256], q4k),
                ("attn_v", vec![2048, 256], GgmlType(14)),
                ("ffn_up", vec![2048, 11008], q4k),
                ("ffn_down", vec![11008, 2048], GgmlType(14)),
                ("ffn_weird", vec![2048, 7], q4k),
            ] {
                tensors.push(TensorSpec::new(format!("blk.{l}.{role}.weight"), &dims, ty));
            }
        }
        let meta = vec![(
            "general.architecture".to_string(),
            Value::String("qwen2".into()),
        )];
        let head = write::header(&meta, &tensors).unwrap().0;
        let (w, unnamed) = weights(&head).unwrap();
        let got: Vec<(&str, u64, u64, bool)> = w
            .iter()
            .map(|w| (w.ggml_type.as_str(), w.m, w.k, w.lm_head))
            .collect();
        // Tied embeddings: token_embd is the LM head; norms and unknown roles are not matmuls.
        assert_eq!(
            got,
            vec![
                ("q4_K", 256, 2048, false),
                ("q4_K", 2048, 2048, false),
                ("q4_K", 11008, 2048, false),
                ("q6_K", 256, 2048, false),
                ("q6_K", 2048, 11008, false),
                ("q8_0", 151936, 2048, true),
            ]
        );
        assert!(unnamed.is_empty());
        assert!(weights(&qwen())
            .unwrap_err()
            .contains("no projection weights"));
    }

    #[test]
    fn missing_keys_truncated_headers_and_odd_heads_say_why() {
        let partial = file(&[
            ("general.architecture", Value::String("llama".into())),
            ("llama.attention.head_count", Value::U32(4)),
        ]);
        assert_eq!(shapes(&partial).unwrap_err(), "no llama.embedding_length");
        let q = qwen();
        assert!(shapes(&q[..q.len() / 2])
            .unwrap_err()
            .contains("ends inside"));
        assert!(shapes(b"GGUF\x03\x00\x00\x00 a stand-in model").is_err());
        let odd = file(&[
            ("general.architecture", Value::String("llama".into())),
            ("llama.embedding_length", Value::U32(64)),
            ("llama.feed_forward_length", Value::U32(160)),
            ("llama.block_count", Value::U32(2)),
            ("llama.attention.head_count", Value::U32(3)),
        ]);
        assert!(shapes(&odd).unwrap_err().contains("do not divide"));
    }

    #[test]
    fn shapes_beyond_any_real_model_are_refused_naming_the_key() {
        let absurd = |hidden: u32, ffn: u32, layers: u32| {
            file(&[
                ("general.architecture", Value::String("llama".into())),
                ("llama.embedding_length", Value::U32(hidden)),
                ("llama.feed_forward_length", Value::U32(ffn)),
                ("llama.block_count", Value::U32(layers)),
                ("llama.attention.head_count", Value::U32(1)),
            ])
        };
        let max = u32::MAX;
        assert_eq!(
            shapes(&absurd(max, 64, 2)).unwrap_err(),
            "llama.embedding_length 4294967295 is beyond any real model (at most 65536)"
        );
        assert!(shapes(&absurd(64, max, 2))
            .unwrap_err()
            .starts_with("llama.feed_forward_length 4294967295 is beyond"));
        assert!(shapes(&absurd(64, 64, max))
            .unwrap_err()
            .starts_with("llama.block_count 4294967295 is beyond"));
        // The bounds themselves are shapes.
        let s = shapes(&absurd(MAX_HIDDEN, MAX_FFN, MAX_LAYERS)).unwrap();
        assert_eq!((s.hidden, s.ffn, s.layers), (65536, 262144, 1024));
    }
}
