//! Encoding f32 weights into the ggml storage types rvl writes: f32, f16 and q4_0.
//!
//! q4_0 (ggml's block layout): blocks of 32 values, each an f16 scale `d` followed by 16
//! bytes; byte j holds value j in its low nibble and value j + 16 in its high nibble; a
//! value is `(nibble - 8) * d`. The scale maps the block's largest-magnitude value to -8,
//! so that value is exact and the rest round to the nearest step.

use super::{f16_to_f32, f32_to_f16, GgmlType};

/// Bytes of `values` stored as `ty`, or None for a type rvl cannot encode or a length that
/// is not a whole number of blocks.
pub fn encode(ty: GgmlType, values: &[f32]) -> Option<Vec<u8>> {
    match ty {
        GgmlType::F32 => Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        GgmlType::F16 => Some(
            values
                .iter()
                .flat_map(|&v| f32_to_f16(v).to_le_bytes())
                .collect(),
        ),
        GgmlType::Q4_0 if values.len() % 32 == 0 => {
            let mut out = Vec::with_capacity(values.len() / 32 * 18);
            for block in values.chunks_exact(32) {
                q4_0_block(block, &mut out);
            }
            Some(out)
        }
        _ => None,
    }
}

fn q4_0_block(x: &[f32], out: &mut Vec<u8>) {
    // the signed value of largest magnitude (the first one on ties)
    let max = x
        .iter()
        .copied()
        .fold(0.0f32, |m, v| if v.abs() > m.abs() { v } else { m });
    let d = max / -8.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let d16 = f32_to_f16(d);
    out.extend_from_slice(&d16.to_le_bytes());
    let q = |v: f32| -> u8 { ((v * id + 8.5) as i32).clamp(0, 15) as u8 };
    for j in 0..16 {
        out.push(q(x[j]) | (q(x[j + 16]) << 4));
    }
}

/// The values of q4_0 bytes (for tests and checks; llama.cpp does this on the device).
pub fn decode_q4_0(bytes: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(bytes.len() / 18 * 32);
    for block in bytes.chunks_exact(18) {
        let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        let qs = &block[2..];
        let mut vals = [0.0f32; 32];
        for j in 0..16 {
            vals[j] = ((qs[j] & 0x0f) as i32 - 8) as f32 * d;
            vals[j + 16] = ((qs[j] >> 4) as i32 - 8) as f32 * d;
        }
        out.extend_from_slice(&vals);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_0_keeps_the_largest_value_exact_and_the_rest_within_half_a_step() {
        // one sign per block, so no value lands beyond the +7 steps a nibble holds
        let x: Vec<f32> = (0..64)
            .map(|i| (i * 37 % 64) as f32 / 10.0 * if i < 32 { 1.0 } else { -1.0 })
            .collect();
        let bytes = encode(GgmlType::Q4_0, &x).unwrap();
        assert_eq!(bytes.len(), 2 * 18);
        let y = decode_q4_0(&bytes);
        for (block_x, block_y) in x.chunks(32).zip(y.chunks(32)) {
            let max = block_x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let step = max / 8.0;
            // the f16 scale adds up to 2^-11 of the block's range
            let slack = max * 1e-3;
            for (a, b) in block_x.iter().zip(block_y) {
                assert!(
                    (a - b).abs() <= step / 2.0 + slack,
                    "{a} vs {b} (step {step})"
                );
            }
            let i = block_x.iter().position(|v| v.abs() == max).unwrap();
            assert!((block_x[i] - block_y[i]).abs() <= slack);
        }
    }

    #[test]
    fn q4_0_clamps_the_opposite_extreme_to_seven_steps() {
        let mut x = [0.0f32; 32];
        x[0] = 8.0;
        x[1] = -8.0;
        x[2] = 3.0;
        let y = decode_q4_0(&encode(GgmlType::Q4_0, &x).unwrap());
        assert_eq!(&y[..3], &[8.0, -7.0, 3.0]);
    }

    #[test]
    fn an_all_zero_block_encodes_to_zero_scale_and_decodes_to_zeros() {
        let bytes = encode(GgmlType::Q4_0, &[0.0; 32]).unwrap();
        // (0 / -8 is -0.0: the sign bit may be set, the magnitude is zero)
        assert_eq!(f16_to_f32(u16::from_le_bytes([bytes[0], bytes[1]])), 0.0);
        assert!(decode_q4_0(&bytes).iter().all(|&v| v == 0.0));
    }

    #[test]
    fn encoding_refuses_partial_q4_0_blocks_and_unknown_types() {
        assert!(encode(GgmlType::Q4_0, &[1.0; 31]).is_none());
        assert!(encode(GgmlType::Q8_0, &[1.0; 32]).is_none());
        assert_eq!(encode(GgmlType::F16, &[1.0]).unwrap(), vec![0x00, 0x3c]);
        assert_eq!(encode(GgmlType::F32, &[1.0]).unwrap(), 1.0f32.to_le_bytes());
    }
}
