//! The few GGUF header fields the GEMM prediction needs: a model's layer shapes
//! (`<arch>.embedding_length`, `.feed_forward_length`, `.block_count`,
//! `.attention.head_count`, `.attention.head_count_kv`) and `general.file_type`. Pure: it reads
//! the key-value section from the bytes at the start of the file and stops there (tensor data
//! is never read). Every length is checked against what is left, so a hostile file is an
//! error, never a panic or a huge allocation.

use std::collections::BTreeMap;

/// Enough for the key-value section of real models (a 150k-token vocabulary is ~5 MiB).
pub const HEAD_CAP: usize = 64 << 20;

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

#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Int(u64),
    Text(String),
    Other,
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("ends inside its header (at byte {})", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn len(&mut self) -> Result<usize, String> {
        usize::try_from(self.u64()?).map_err(|_| "a length beyond this machine".to_string())
    }
    fn string(&mut self) -> Result<String, String> {
        let n = self.len()?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// One value of GGUF type `t`; arrays are skipped (their items read past, not kept).
    fn value(&mut self, t: u32, depth: u32) -> Result<Scalar, String> {
        let fixed = |r: &mut Self, n: usize| r.take(n).map(|_| Scalar::Other);
        match t {
            0 | 1 | 7 => Ok(Scalar::Int(u64::from(self.take(1)?[0]))),
            2 | 3 => Ok(Scalar::Int(u64::from(u16::from_le_bytes(
                self.take(2)?.try_into().expect("2 bytes"),
            )))),
            4 | 5 => Ok(Scalar::Int(u64::from(self.u32()?))),
            10 | 11 => Ok(Scalar::Int(self.u64()?)),
            6 => fixed(self, 4),
            12 => fixed(self, 8),
            8 => Ok(Scalar::Text(self.string()?)),
            9 if depth < 4 => {
                let item = self.u32()?;
                let n = self.len()?;
                let width = match item {
                    0 | 1 | 7 => Some(1),
                    2 | 3 => Some(2),
                    4..=6 => Some(4),
                    10..=12 => Some(8),
                    _ => None,
                };
                match width {
                    Some(w) => {
                        let bytes = n
                            .checked_mul(w)
                            .ok_or_else(|| "an array too long to be real".to_string())?;
                        self.take(bytes)?;
                    }
                    None => {
                        for _ in 0..n {
                            self.value(item, depth + 1)?;
                        }
                    }
                }
                Ok(Scalar::Other)
            }
            _ => Err(format!("unknown value type {t}")),
        }
    }
}

/// The key-value section of a GGUF file (its first bytes, `head`), as far as it is needed.
fn keys(head: &[u8]) -> Result<BTreeMap<String, Scalar>, String> {
    let mut r = Reader { b: head, at: 0 };
    if r.take(4)? != b"GGUF" {
        return Err("not a GGUF file".into());
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(format!("GGUF version {version}, rvl reads 2 and 3"));
    }
    let _tensors = r.u64()?;
    let count = r.u64()?;
    let mut out = BTreeMap::new();
    for _ in 0..count {
        let key = r.string()?;
        let t = r.u32()?;
        let v = r.value(t, 0)?;
        if !matches!(v, Scalar::Other) {
            out.insert(key, v);
        }
    }
    Ok(out)
}

/// The layer shapes of the model whose file starts with `head`, or why they cannot be read.
pub fn shapes(head: &[u8]) -> Result<Shapes, String> {
    let kv = keys(head)?;
    let arch = match kv.get("general.architecture") {
        Some(Scalar::Text(a)) => a.clone(),
        _ => return Err("no general.architecture".into()),
    };
    let int = |k: &str| -> Result<u32, String> {
        let key = format!("{arch}.{k}");
        match kv.get(&key) {
            Some(Scalar::Int(v)) => u32::try_from(*v)
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("{key} is {v}")),
            _ => Err(format!("no {key}")),
        }
    };
    let heads = int("attention.head_count")?;
    let s = Shapes {
        hidden: int("embedding_length")?,
        ffn: int("feed_forward_length")?,
        layers: int("block_count")?,
        heads,
        // Without the key llama.cpp takes as many KV heads as heads.
        kv_heads: int("attention.head_count_kv").unwrap_or(heads),
        file_type: match kv.get("general.file_type") {
            Some(Scalar::Int(v)) => u32::try_from(*v).ok(),
            _ => None,
        },
        architecture: arch,
    };
    if s.hidden % s.heads != 0 || s.kv_heads > s.heads {
        return Err(format!(
            "{} heads ({} KV) do not divide embedding_length {}",
            s.heads, s.kv_heads, s.hidden
        ));
    }
    Ok(s)
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

impl Shapes {
    pub fn describe(&self) -> String {
        format!(
            "{}: hidden {}, ffn {}, {} layers, {} heads ({} KV)",
            self.architecture, self.hidden, self.ffn, self.layers, self.heads, self.kv_heads
        )
    }
}

/// A GGUF header with these string and u32 keys and no tensors (tests; the test suite's
/// stand-in models).
pub fn header(strings: &[(&str, &str)], ints: &[(&str, u32)]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(((strings.len() + ints.len()) as u64).to_le_bytes());
    let s = |b: &mut Vec<u8>, t: &str| {
        b.extend((t.len() as u64).to_le_bytes());
        b.extend(t.as_bytes());
    };
    for (k, v) in strings {
        s(&mut b, k);
        b.extend(8u32.to_le_bytes());
        s(&mut b, v);
    }
    for (k, v) in ints {
        s(&mut b, k);
        b.extend(4u32.to_le_bytes());
        b.extend(v.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen() -> Vec<u8> {
        header(
            &[("general.architecture", "qwen2")],
            &[
                ("qwen2.embedding_length", 2048),
                ("qwen2.feed_forward_length", 11008),
                ("qwen2.block_count", 36),
                ("qwen2.attention.head_count", 16),
                ("qwen2.attention.head_count_kv", 2),
                ("general.file_type", 2),
            ],
        )
    }

    #[test]
    fn the_layer_shapes_are_read_from_the_architectures_keys() {
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
    }

    #[test]
    fn arrays_and_floats_before_the_shapes_are_skipped() {
        let mut b = header(&[("general.architecture", "llama")], &[]);
        // tokenizer.ggml.tokens: an array of 2 strings; a float; then the shapes.
        b.extend((21u64).to_le_bytes());
        b.extend(b"tokenizer.ggml.tokens");
        b.extend(9u32.to_le_bytes());
        b.extend(8u32.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        for t in ["<s>", "a"] {
            b.extend((t.len() as u64).to_le_bytes());
            b.extend(t.as_bytes());
        }
        b.extend((3u64).to_le_bytes());
        b.extend(b"eps");
        b.extend(6u32.to_le_bytes());
        b.extend(1e-5f32.to_le_bytes());
        let tail = header(
            &[],
            &[
                ("llama.embedding_length", 64),
                ("llama.feed_forward_length", 160),
                ("llama.block_count", 2),
                ("llama.attention.head_count", 4),
            ],
        );
        b.extend(&tail[24..]);
        // The count in the header: 1 + 2 + 4.
        b[16..24].copy_from_slice(&7u64.to_le_bytes());
        let s = shapes(&b).unwrap();
        assert_eq!(
            (s.hidden, s.ffn, s.kv_heads, s.file_type),
            (64, 160, 4, None)
        );
    }

    #[test]
    fn truncated_foreign_and_incomplete_headers_are_errors_not_panics() {
        let q = qwen();
        for cut in [0, 3, 10, 30, q.len() - 1] {
            assert!(shapes(&q[..cut]).is_err(), "cut at {cut}");
        }
        assert!(shapes(b"GGUF\x03\x00\x00\x00 a stand-in model").is_err());
        assert_eq!(shapes(b"NOPE").unwrap_err(), "not a GGUF file");
        let partial = header(
            &[("general.architecture", "llama")],
            &[("llama.block_count", 2)],
        );
        assert_eq!(
            shapes(&partial).unwrap_err(),
            "no llama.attention.head_count"
        );
        // A length of 2^63: refused, not allocated.
        let mut huge = header(&[], &[]);
        huge[16..24].copy_from_slice(&1u64.to_le_bytes());
        huge.extend(u64::MAX.to_le_bytes());
        assert!(shapes(&huge).is_err());
    }
}
