//! GGUF, the file format llama.cpp loads models from (version 3; ggml's `docs/gguf.md`).
//!
//! rvl needs it for two things: generating small random-weight llama models, so that the
//! real llama.cpp can be run end to end in tests without downloading weights
//! ([`llama_model`]), and reading a model's metadata (its shapes, its tokenizer). Both
//! directions are pure over bytes: [`read::parse`] takes a slice, [`write::write`] any
//! `io::Write`; file IO is the caller's.
//!
//! Layout (all little-endian): magic `GGUF`, version u32, tensor count u64, metadata count
//! u64; the metadata key/value pairs; one info record per tensor (name, dims, ggml type,
//! offset into the data section); padding to the alignment; the tensor data, each tensor at
//! its offset (a multiple of the alignment).

pub mod llama_model;
pub mod quant;
pub mod read;
pub mod write;

/// The four bytes every GGUF file starts with.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// The version rvl writes; the reader accepts 2 and 3 (same layout, 64-bit counts).
pub const VERSION: u32 = 3;
/// The data-section alignment unless `general.alignment` says otherwise.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// A metadata value's type tag, as stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl ValueType {
    pub fn from_u32(v: u32) -> Option<Self> {
        use ValueType::*;
        Some(match v {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }
}

/// One metadata value. Arrays keep their element type so that an empty array round-trips.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(ValueType, Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(..) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// Any non-negative integer value as u64 (files written by different tools use different
    /// widths for the same key, e.g. u32 or u64 for `llama.block_count`).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// A ggml tensor type id. Only the types rvl writes have named constants; the reader keeps
/// any id, and [`GgmlType::block`] says how large a tensor of a known type is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType(pub u32);

impl GgmlType {
    pub const F32: GgmlType = GgmlType(0);
    pub const F16: GgmlType = GgmlType(1);
    pub const Q4_0: GgmlType = GgmlType(2);
    pub const Q8_0: GgmlType = GgmlType(8);
    pub const Q4_K: GgmlType = GgmlType(12);
    pub const Q6_K: GgmlType = GgmlType(14);
    pub const BF16: GgmlType = GgmlType(30);

    /// (elements per block, bytes per block) for the types rvl knows, else None.
    pub fn block(self) -> Option<(u64, u64)> {
        match self {
            GgmlType::F32 => Some((1, 4)),
            GgmlType::F16 => Some((1, 2)),
            // one f16 scale + 32 four-bit values
            GgmlType::Q4_0 => Some((32, 18)),
            // one f16 scale + 32 signed bytes
            GgmlType::Q8_0 => Some((32, 34)),
            // super-blocks of 256: f16 d and dmin, 12 bytes of 6-bit scales/mins, 128 of nibbles
            GgmlType::Q4_K => Some((256, 144)),
            // super-blocks of 256: 128 bytes low nibbles, 64 high 2-bit, 16 i8 scales, f16 d
            GgmlType::Q6_K => Some((256, 210)),
            GgmlType::BF16 => Some((1, 2)),
            _ => None,
        }
    }

    /// The bytes of a tensor with these dims, when the type is known and ne[0] is a whole
    /// number of blocks (ggml stores rows block by block).
    pub fn byte_size(self, dims: &[u64]) -> Option<u64> {
        let (per_block, bytes) = self.block()?;
        let first = *dims.first().unwrap_or(&1);
        if first % per_block != 0 {
            return None;
        }
        let elems = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
        (elems / per_block).checked_mul(bytes)
    }

    pub fn name(self) -> &'static str {
        self.ggml_name().unwrap_or("other")
    }

    /// ggml's name for the type (`ggml_type_name`: "q4_K", "q6_K", "bf16" ...): the ids are
    /// GGUF's on-disk type tags, the same in every llama.cpp; None for ids rvl does not know
    /// (removed ones, newer ones).
    pub fn ggml_name(self) -> Option<&'static str> {
        const NAMES: [&str; 31] = [
            "f32", "f16", "q4_0", "q4_1", "", "", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K", "q3_K",
            "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl",
            "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m", "bf16",
        ];
        match self.0 {
            34 => Some("tq1_0"),
            35 => Some("tq2_0"),
            39 => Some("mxfp4"),
            i => NAMES.get(i as usize).copied().filter(|n| !n.is_empty()),
        }
    }
}

/// One tensor's record in the info table.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: dims[0] is the contiguous (row) dimension.
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// From the start of the data section.
    pub offset: u64,
}

/// A parsed file: everything but the tensor data, plus where that data starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Gguf {
    pub version: u32,
    /// In file order (GGUF keys are unique; the reader rejects duplicates).
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Byte offset of the data section from the start of the file.
    pub data_offset: u64,
}

impl Gguf {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// What is wrong with a GGUF file (read) or a model description (write).
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("not a GGUF file (the first bytes are not 'GGUF')")]
    NotGguf,
    #[error("GGUF version {0} is not supported (2 and 3 are)")]
    Version(u32),
    #[error("the file ends inside {0}")]
    Truncated(&'static str),
    #[error("metadata key {key:?} has unknown value type {tag}")]
    ValueType { key: String, tag: u32 },
    #[error("{0}")]
    Invalid(String),
    #[error("cannot write the GGUF data")]
    Write(#[source] std::io::Error),
}

/// IEEE half-precision bits of `x`, rounded to nearest even (ggml's f16 storage).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0xff {
        // inf stays inf; any NaN becomes a quiet NaN
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // subnormal half (or zero): shift the full mantissa (with its implicit 1) into place
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut h = m >> shift;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (mant >> 13);
    let rest = mant & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        // a carry out of the mantissa correctly bumps the exponent (up to inf)
        h += 1;
    }
    sign | h as u16
}

/// The f32 value of half-precision bits.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: value = m * 2^-24
            let v = m as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_matches_known_bit_patterns() {
        for (x, h) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (0.5, 0x3800),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (f32::INFINITY, 0x7c00),
            (6.103_515_6e-5, 0x0400),
            (5.960_464_5e-8, 0x0001),
            (1e-9, 0x0000),
            // 1 + 2^-11 is exactly halfway between 1 and the next half: ties to even (1.0)
            (1.000_488_3, 0x3c00),
            (1.000_732_4, 0x3c01),
        ] {
            assert_eq!(f32_to_f16(x), h, "{x}");
        }
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
    }

    #[test]
    fn every_finite_half_survives_a_round_trip_through_f32() {
        for h in 0..=0xffffu16 {
            if h & 0x7c00 == 0x7c00 {
                continue;
            }
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#06x}");
        }
    }

    #[test]
    fn byte_sizes_follow_the_block_layout_and_refuse_partial_blocks() {
        assert_eq!(GgmlType::F32.byte_size(&[64, 3]), Some(768));
        assert_eq!(GgmlType::F16.byte_size(&[64, 3]), Some(384));
        assert_eq!(GgmlType::Q4_0.byte_size(&[64, 3]), Some(2 * 3 * 18));
        assert_eq!(GgmlType::Q4_0.byte_size(&[48, 3]), None);
        assert_eq!(GgmlType(99).byte_size(&[64]), None);
        assert_eq!(GgmlType::F32.byte_size(&[u64::MAX, 2]), None);
    }
}
