//! Writing a GGUF v3 file: header, metadata, tensor table, then the tensor data, streamed.
//!
//! The tensor data is asked for one tensor at a time ([`write`]'s `data` callback), so a
//! model of a few GB is written without holding it in memory; each tensor's bytes must be
//! exactly what its type and dims say.

use std::collections::HashSet;
use std::io::Write;

use super::{GgmlType, GgufError, Value, ValueType, DEFAULT_ALIGNMENT, MAGIC, VERSION};

/// A tensor to write: its record without the offset (the writer lays them out).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
}

impl TensorSpec {
    pub fn new(name: impl Into<String>, dims: &[u64], ggml_type: GgmlType) -> Self {
        TensorSpec {
            name: name.into(),
            dims: dims.to_vec(),
            ggml_type,
        }
    }

    /// Bytes of this tensor's data, or why it cannot be written.
    pub fn byte_size(&self) -> Result<u64, GgufError> {
        self.ggml_type.byte_size(&self.dims).ok_or_else(|| {
            GgufError::Invalid(format!(
                "tensor {:?}: {:?} is not a whole number of {} blocks",
                self.name,
                self.dims,
                self.ggml_type.name()
            ))
        })
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, key: &str, v: &Value) -> Result<(), GgufError> {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_str(out, s),
        Value::Array(elem, items) => {
            out.extend_from_slice(&(*elem as u32).to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                if item.value_type() != *elem {
                    return Err(GgufError::Invalid(format!(
                        "metadata key {key:?}: a {:?} in an array of {elem:?}",
                        item.value_type()
                    )));
                }
                put_value(out, key, item)?;
            }
        }
    }
    Ok(())
}

/// The header, metadata and tensor table, padded to the alignment, and each tensor's
/// offset in the data section. Checks what the reader would refuse.
pub fn header(
    metadata: &[(String, Value)],
    tensors: &[TensorSpec],
) -> Result<(Vec<u8>, Vec<u64>), GgufError> {
    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, Value::U32(a))) if *a > 0 && a.is_power_of_two() => u64::from(*a),
        Some((_, v)) => {
            return Err(GgufError::Invalid(format!(
                "general.alignment must be a u32 power of two, got {v:?}"
            )))
        }
    };
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    let mut keys: HashSet<&str> = HashSet::with_capacity(metadata.len());
    for (key, value) in metadata {
        if !keys.insert(key) {
            return Err(GgufError::Invalid(format!(
                "metadata key {key:?} appears twice"
            )));
        }
        put_str(&mut out, key);
        out.extend_from_slice(&(value.value_type() as u32).to_le_bytes());
        put_value(&mut out, key, value)?;
    }
    let mut offsets = Vec::with_capacity(tensors.len());
    let mut next = 0u64;
    let mut names: HashSet<&str> = HashSet::with_capacity(tensors.len());
    for t in tensors {
        if !names.insert(&t.name) {
            return Err(GgufError::Invalid(format!(
                "tensor {:?} appears twice",
                t.name
            )));
        }
        if t.dims.is_empty() || t.dims.len() > super::read::MAX_DIMS as usize {
            return Err(GgufError::Invalid(format!(
                "tensor {:?} has {} dimensions",
                t.name,
                t.dims.len()
            )));
        }
        put_str(&mut out, &t.name);
        out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&t.ggml_type.0.to_le_bytes());
        out.extend_from_slice(&next.to_le_bytes());
        offsets.push(next);
        next = next
            .checked_add(t.byte_size()?)
            .and_then(|end| end.checked_next_multiple_of(alignment))
            .ok_or_else(|| {
                GgufError::Invalid(format!(
                    "tensor {:?}: the data section would pass 2^64 bytes",
                    t.name
                ))
            })?;
    }
    let padded = (out.len() as u64).next_multiple_of(alignment) as usize;
    out.resize(padded, 0);
    Ok((out, offsets))
}

/// Write a whole file to `w`: `data(i)` gives tensor i's bytes, asked for in order. Returns
/// the bytes written.
pub fn write<W: Write>(
    w: &mut W,
    metadata: &[(String, Value)],
    tensors: &[TensorSpec],
    mut data: impl FnMut(usize) -> Vec<u8>,
) -> Result<u64, GgufError> {
    let (head, offsets) = header(metadata, tensors)?;
    w.write_all(&head).map_err(GgufError::Write)?;
    let mut pos = 0u64;
    for (i, t) in tensors.iter().enumerate() {
        let pad = offsets[i] - pos;
        w.write_all(&vec![0u8; pad as usize])
            .map_err(GgufError::Write)?;
        let bytes = data(i);
        let want = t.byte_size()?;
        if bytes.len() as u64 != want {
            return Err(GgufError::Invalid(format!(
                "tensor {:?}: {} bytes given, {} expected",
                t.name,
                bytes.len(),
                want
            )));
        }
        w.write_all(&bytes).map_err(GgufError::Write)?;
        pos = offsets[i] + want;
    }
    w.flush().map_err(GgufError::Write)?;
    Ok(head.len() as u64 + pos)
}

/// A string array value (tokenizer lists and the like).
pub fn strings<S: AsRef<str>>(items: &[S]) -> Value {
    Value::Array(
        ValueType::String,
        items
            .iter()
            .map(|s| Value::String(s.as_ref().to_string()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::read::parse;
    use super::*;

    fn sample() -> (Vec<(String, Value)>, Vec<TensorSpec>) {
        let meta = vec![
            ("general.architecture".into(), Value::String("llama".into())),
            ("a.u8".into(), Value::U8(7)),
            ("a.i8".into(), Value::I8(-7)),
            ("a.u16".into(), Value::U16(700)),
            ("a.i16".into(), Value::I16(-700)),
            ("a.u32".into(), Value::U32(70_000)),
            ("a.i32".into(), Value::I32(-70_000)),
            ("a.f32".into(), Value::F32(1e-5)),
            ("a.bool".into(), Value::Bool(true)),
            ("a.u64".into(), Value::U64(1 << 40)),
            ("a.i64".into(), Value::I64(-(1 << 40))),
            ("a.f64".into(), Value::F64(0.25)),
            ("a.strs".into(), strings(&["<s>", "héllo", ""])),
            ("a.empty".into(), Value::Array(ValueType::F32, vec![])),
            (
                "a.nested".into(),
                Value::Array(
                    ValueType::Array,
                    vec![Value::Array(
                        ValueType::I32,
                        vec![Value::I32(1), Value::I32(-1)],
                    )],
                ),
            ),
        ];
        let tensors = vec![
            TensorSpec::new("a", &[5], GgmlType::F32),
            TensorSpec::new("b", &[64, 2], GgmlType::Q4_0),
            TensorSpec::new("c", &[3, 1], GgmlType::F16),
        ];
        (meta, tensors)
    }

    #[test]
    fn what_is_written_reads_back_with_every_value_type_and_aligned_tensors() {
        let (meta, tensors) = sample();
        let mut out = Vec::new();
        let n = write(&mut out, &meta, &tensors, |i| {
            vec![i as u8 + 1; tensors[i].byte_size().unwrap() as usize]
        })
        .unwrap();
        assert_eq!(n, out.len() as u64);
        let g = parse(&out, true).unwrap();
        assert_eq!(g.metadata, meta);
        assert_eq!(g.tensors.len(), 3);
        assert_eq!(g.data_offset % 32, 0);
        for (i, t) in g.tensors.iter().enumerate() {
            assert_eq!(
                (&t.name, &t.dims, t.ggml_type),
                (&tensors[i].name, &tensors[i].dims, tensors[i].ggml_type)
            );
            assert_eq!(t.offset % 32, 0);
            let start = (g.data_offset + t.offset) as usize;
            let size = t.ggml_type.byte_size(&t.dims).unwrap() as usize;
            assert!(out[start..start + size].iter().all(|&b| b == i as u8 + 1));
        }
        // a: 20 bytes at 0; b: 72 bytes at 32; c: 6 bytes at 128
        let offsets: Vec<u64> = g.tensors.iter().map(|t| t.offset).collect();
        assert_eq!(offsets, vec![0, 32, 128]);
    }

    #[test]
    fn a_tensor_of_the_wrong_size_or_a_mixed_array_is_refused() {
        let (meta, tensors) = sample();
        let e = write(&mut Vec::new(), &meta, &tensors, |_| vec![0; 3]).unwrap_err();
        assert!(e.to_string().contains("3 bytes given, 20 expected"), "{e}");

        let bad = vec![(
            "mixed".to_string(),
            Value::Array(ValueType::U32, vec![Value::U32(1), Value::I32(2)]),
        )];
        assert!(header(&bad, &[])
            .unwrap_err()
            .to_string()
            .contains("in an array of"));
        let partial = [TensorSpec::new("q", &[48], GgmlType::Q4_0)];
        assert!(header(&[], &partial)
            .unwrap_err()
            .to_string()
            .contains("whole number"));
    }

    #[test]
    fn a_larger_alignment_from_the_metadata_is_used_and_read_back() {
        let meta = vec![("general.alignment".to_string(), Value::U32(64))];
        let tensors = [
            TensorSpec::new("a", &[3], GgmlType::F32),
            TensorSpec::new("b", &[3], GgmlType::F32),
        ];
        let mut out = Vec::new();
        write(&mut out, &meta, &tensors, |_| vec![0; 12]).unwrap();
        let g = parse(&out, true).unwrap();
        assert_eq!(
            (g.alignment, g.data_offset % 64, g.tensors[1].offset),
            (64, 0, 64)
        );
    }
}
