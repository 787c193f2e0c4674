//! Parsing a GGUF file's header, metadata and tensor table from bytes.
//!
//! The input is untrusted (a model file the user points at): every count is checked against
//! the bytes that are left before anything is allocated, arrays nest at most
//! [`MAX_ARRAY_DEPTH`] deep, and a tensor's offset and size must fall inside the file when
//! the whole file is given. A prefix that holds the header and tables is enough to parse
//! (tensor data is not read); [`parse`] then checks sizes against the prefix only when
//! `whole_file` is set.

use std::collections::HashSet;

use super::{GgmlType, Gguf, GgufError, TensorInfo, Value, ValueType, DEFAULT_ALIGNMENT, MAGIC};

/// Deeper array nesting than this is refused (llama.cpp's files nest at most one level).
pub const MAX_ARRAY_DEPTH: usize = 4;
/// A tensor has at most this many dimensions (GGML_MAX_DIMS).
pub const MAX_DIMS: u32 = 4;
/// Metadata values in all (keys and array elements together). A value takes at least one
/// byte of the file but 32 bytes in memory, so without a count a 64 MiB header of byte
/// arrays would become 2 GiB; real models hold about a million (a 256k-token vocabulary's
/// tokens, scores, types and merges).
pub const MAX_VALUES: usize = 1 << 22;

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Values still allowed ([`MAX_VALUES`] at the start).
    values_left: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], GgufError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(GgufError::Truncated(what))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], GgufError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count of items that each take at least `min_item` bytes: more than the bytes left
    /// could hold is a truncated (or hostile) file, refused before allocating.
    fn count(&mut self, min_item: usize, what: &'static str) -> Result<usize, GgufError> {
        let n = self.u64(what)?;
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_item.max(1)) <= self.left() => Ok(n),
            _ => Err(GgufError::Truncated(what)),
        }
    }

    fn string(&mut self, what: &'static str) -> Result<String, GgufError> {
        self.str(what).map(str::to_string)
    }

    /// A string borrowed from the input (names are checked for duplicates before they are
    /// copied).
    fn str(&mut self, what: &'static str) -> Result<&'a str, GgufError> {
        let n = self.count(1, what)?;
        let raw = self.take(n, what)?;
        std::str::from_utf8(raw)
            .map_err(|_| GgufError::Invalid(format!("{what} is not valid UTF-8")))
    }

    /// Take `n` values from the budget, or refuse the file.
    fn spend(&mut self, n: usize) -> Result<(), GgufError> {
        self.values_left = self.values_left.checked_sub(n).ok_or_else(|| {
            GgufError::Invalid(format!(
                "more than {MAX_VALUES} metadata values (keys and array items; a real model has about a million)"
            ))
        })?;
        Ok(())
    }

    fn value(&mut self, key: &str, ty: ValueType, depth: usize) -> Result<Value, GgufError> {
        const V: &str = "a metadata value";
        Ok(match ty {
            ValueType::U8 => Value::U8(self.array::<1>(V)?[0]),
            ValueType::I8 => Value::I8(self.array::<1>(V)?[0] as i8),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(V)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(V)?)),
            ValueType::U32 => Value::U32(self.u32(V)?),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(V)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(V)?)),
            ValueType::U64 => Value::U64(self.u64(V)?),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(V)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(V)?)),
            ValueType::Bool => match self.array::<1>(V)?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    return Err(GgufError::Invalid(format!(
                        "metadata key {key:?}: bool byte {b} is neither 0 nor 1"
                    )))
                }
            },
            ValueType::String => Value::String(self.string("a metadata string")?),
            ValueType::Array => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufError::Invalid(format!(
                        "metadata key {key:?}: arrays nest deeper than {MAX_ARRAY_DEPTH}"
                    )));
                }
                let tag = self.u32("an array type")?;
                let elem = ValueType::from_u32(tag).ok_or_else(|| GgufError::ValueType {
                    key: key.to_string(),
                    tag,
                })?;
                let n = self.count(min_size(elem), "an array")?;
                self.spend(n)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(key, elem, depth + 1)?);
                }
                Value::Array(elem, items)
            }
        })
    }
}

/// The fewest bytes one value of a type takes (a string or an array: its u64 length).
fn min_size(ty: ValueType) -> usize {
    match ty {
        ValueType::U8 | ValueType::I8 | ValueType::Bool => 1,
        ValueType::U16 | ValueType::I16 => 2,
        ValueType::U32 | ValueType::I32 | ValueType::F32 => 4,
        ValueType::U64 | ValueType::I64 | ValueType::F64 | ValueType::String => 8,
        ValueType::Array => 12,
    }
}

/// Parse `bytes`: the whole file (`whole_file`: every known-type tensor must lie inside it)
/// or a prefix holding at least the header and tables.
pub fn parse(bytes: &[u8], whole_file: bool) -> Result<Gguf, GgufError> {
    let mut c = Cursor {
        bytes,
        pos: 0,
        values_left: MAX_VALUES,
    };
    if c.take(4, "the magic").map_err(|_| GgufError::NotGguf)? != MAGIC {
        return Err(GgufError::NotGguf);
    }
    let version = c.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::Version(version));
    }
    // a tensor record takes at least 8 (name) + 4 (dims) + 4 (type) + 8 (offset) bytes
    let n_tensors = c.count(24, "the tensor count")?;
    let n_kv = c.count(12, "the metadata count")?;
    c.spend(n_kv)?;

    // Duplicates are found with sets of names borrowed from the input: a linear scan per
    // name made a header of millions of keys (64 MiB holds about 3M) parse for hours.
    let mut keys: HashSet<&str> = HashSet::with_capacity(n_kv);
    let mut metadata: Vec<(String, Value)> = Vec::with_capacity(n_kv);
    for _ in 0..n_kv {
        let key = c.str("a metadata key")?;
        if !keys.insert(key) {
            return Err(GgufError::Invalid(format!(
                "metadata key {key:?} appears twice"
            )));
        }
        let tag = c.u32("a value type")?;
        let ty = ValueType::from_u32(tag).ok_or_else(|| GgufError::ValueType {
            key: key.to_string(),
            tag,
        })?;
        let value = c.value(key, ty, 0)?;
        metadata.push((key.to_string(), value));
    }
    drop(keys);

    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, Value::U32(a))) if *a > 0 && a.is_power_of_two() => u64::from(*a),
        Some((_, v)) => {
            return Err(GgufError::Invalid(format!(
                "general.alignment must be a u32 power of two, got {v:?}"
            )))
        }
    };

    let mut names: HashSet<&str> = HashSet::with_capacity(n_tensors);
    let mut tensors: Vec<TensorInfo> = Vec::with_capacity(n_tensors);
    for _ in 0..n_tensors {
        let name = c.str("a tensor name")?;
        let n_dims = c.u32("a tensor's dimension count")?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(GgufError::Invalid(format!(
                "tensor {name:?} has {n_dims} dimensions (1..={MAX_DIMS} allowed)"
            )));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(c.u64("a tensor dimension")?);
        }
        let ggml_type = GgmlType(c.u32("a tensor type")?);
        let offset = c.u64("a tensor offset")?;
        if offset % alignment != 0 {
            return Err(GgufError::Invalid(format!(
                "tensor {name:?} offset {offset} is not a multiple of the alignment {alignment}"
            )));
        }
        if !names.insert(name) {
            return Err(GgufError::Invalid(format!("tensor {name:?} appears twice")));
        }
        tensors.push(TensorInfo {
            name: name.to_string(),
            dims,
            ggml_type,
            offset,
        });
    }

    let data_offset = (c.pos as u64).next_multiple_of(alignment);
    if whole_file {
        let data_len = (bytes.len() as u64).saturating_sub(data_offset);
        for t in &tensors {
            let Some(size) = t.ggml_type.byte_size(&t.dims) else {
                continue;
            };
            if t.offset.checked_add(size).is_none_or(|end| end > data_len) {
                return Err(GgufError::Invalid(format!(
                    "tensor {:?} ({} bytes at {}) runs past the end of the file",
                    t.name, size, t.offset
                )));
            }
        }
    }
    Ok(Gguf {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(n_tensors: u64, n_kv: u64) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&n_tensors.to_le_bytes());
        b.extend_from_slice(&n_kv.to_le_bytes());
        b
    }

    fn push_str(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&(s.len() as u64).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }

    #[test]
    fn an_empty_file_with_only_a_header_parses() {
        let g = parse(&header(0, 0), true).unwrap();
        assert_eq!((g.version, g.metadata.len(), g.tensors.len()), (3, 0, 0));
        assert_eq!(g.alignment, 32);
        assert_eq!(g.data_offset, 32);
    }

    #[test]
    fn a_wrong_magic_or_version_is_named() {
        assert!(matches!(
            parse(b"GGML\x03\0\0\0", true),
            Err(GgufError::NotGguf)
        ));
        assert!(matches!(parse(b"GG", true), Err(GgufError::NotGguf)));
        let mut b = header(0, 0);
        b[4] = 4;
        assert!(matches!(parse(&b, true), Err(GgufError::Version(4))));
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let b = header(u64::MAX, 0);
        assert!(matches!(parse(&b, true), Err(GgufError::Truncated(_))));
        let mut b = header(0, 1);
        push_str(&mut b, "k");
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(matches!(
            parse(&b, true),
            Err(GgufError::Truncated("an array"))
        ));
    }

    #[test]
    fn deeply_nested_arrays_and_unknown_types_are_refused() {
        let mut b = header(0, 1);
        push_str(&mut b, "deep");
        b.extend_from_slice(&9u32.to_le_bytes());
        for _ in 0..6 {
            b.extend_from_slice(&9u32.to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
        }
        b.extend_from_slice(&[0; 64]);
        let e = parse(&b, true).unwrap_err();
        assert!(e.to_string().contains("nest deeper"), "{e}");

        let mut b = header(0, 1);
        push_str(&mut b, "odd");
        b.extend_from_slice(&13u32.to_le_bytes());
        assert!(matches!(
            parse(&b, true),
            Err(GgufError::ValueType { tag: 13, .. })
        ));
    }

    #[test]
    fn a_tensor_past_the_end_of_the_file_is_refused_only_for_a_whole_file() {
        let mut b = header(1, 0);
        push_str(&mut b, "t");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&8u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // f32: 32 bytes
        b.extend_from_slice(&0u64.to_le_bytes());
        let e = parse(&b, true).unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");
        let g = parse(&b, false).unwrap();
        assert_eq!(g.tensor("t").unwrap().dims, vec![8]);
    }

    #[test]
    fn a_bool_other_than_zero_or_one_and_a_duplicate_key_are_refused() {
        let mut b = header(0, 1);
        push_str(&mut b, "flag");
        b.extend_from_slice(&7u32.to_le_bytes());
        b.push(2);
        assert!(parse(&b, true)
            .unwrap_err()
            .to_string()
            .contains("neither 0 nor 1"));

        let mut b = header(0, 2);
        for _ in 0..2 {
            push_str(&mut b, "k");
            b.extend_from_slice(&4u32.to_le_bytes());
            b.extend_from_slice(&1u32.to_le_bytes());
        }
        assert!(parse(&b, true).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn a_duplicate_among_many_keys_or_tensors_is_found_by_name() {
        let n = 5000;
        let mut b = header(0, n + 1);
        for i in 0..n {
            push_str(&mut b, &format!("k{i}"));
            b.extend_from_slice(&0u32.to_le_bytes());
            b.push(1);
        }
        push_str(&mut b, "k1234");
        b.extend_from_slice(&0u32.to_le_bytes());
        b.push(1);
        let e = parse(&b, false).unwrap_err().to_string();
        assert_eq!(e, "metadata key \"k1234\" appears twice");

        let mut b = header(3, 0);
        for name in ["a", "b", "a"] {
            push_str(&mut b, name);
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
        }
        let e = parse(&b, false).unwrap_err().to_string();
        assert_eq!(e, "tensor \"a\" appears twice");
    }

    #[test]
    fn more_metadata_values_than_a_real_model_has_are_refused_before_allocating() {
        // One u8 array of MAX_VALUES items: 4 MiB of file, 128 MiB as values.
        let mut b = header(0, 1);
        push_str(&mut b, "tokenizer.ggml.token_type");
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(MAX_VALUES as u64).to_le_bytes());
        b.resize(b.len() + MAX_VALUES, 1);
        let e = parse(&b, false).unwrap_err().to_string();
        assert!(e.contains("more than 4194304 metadata values"), "{e}");
        // One fewer fits (the key is a value too).
        let mut b = header(0, 1);
        push_str(&mut b, "k");
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(MAX_VALUES as u64 - 1).to_le_bytes());
        b.resize(b.len() + MAX_VALUES - 1, 1);
        assert_eq!(parse(&b, false).unwrap().metadata.len(), 1);
    }
}
