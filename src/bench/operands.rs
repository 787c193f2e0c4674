//! Host-side operands: deterministic pseudo-random inputs, packed the way each kernel reads them
//! (padded fp32/fp16 rows, Q8_0-style int8 blocks, Q4_0-style 4-bit blocks), and the exact values
//! the packing produced, from which the CPU reference is computed in f64.

use super::kernels::Precision;

/// A matrix of `rows x k` values in one precision, ready to upload.
#[derive(Debug, Clone)]
pub struct Packed {
    pub rows: u32,
    pub k: u32,
    /// Row length in elements as the kernel sees it (fp rows padded to a multiple of 4).
    pub ldk: u32,
    pub data: Vec<u8>,
    /// Per-block scales (int8: f32 per 32 values; q4_0: f16 pairs), empty otherwise.
    pub scales: Vec<u8>,
    /// The value each element stands for after packing, `rows x k`, for the reference.
    pub values: Vec<f32>,
}

/// xorshift64*: fast, deterministic, good enough for benchmark inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((r >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// `rows x k` values; the caller bounds the size first ([`footprint`]).
pub fn random_values(rows: u32, k: u32, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..rows as usize * k as usize)
        .map(|_| rng.uniform())
        .collect()
}

/// Which side of the product a matrix is: the Q4_0 kernel takes 4-bit weights but fp32
/// activations, the int8 kernel int8 on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Activations,
    Weights,
}

/// What packing one `rows x k` matrix takes, computed before anything is allocated: the
/// largest device buffer (the packed data) and the host memory held at the peak of packing
/// (the random values, the packed data and scales, and the values kept for the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    pub device: u64,
    pub host: u64,
}

/// The [`Footprint`] of [`pack`]ing a `rows x k` matrix, or None when a size overflows a u64
/// (shapes come from files) or `k` is not a whole number of the format's blocks.
pub fn footprint(precision: Precision, side: Side, rows: u32, k: u32) -> Option<Footprint> {
    let fmt = match (precision, side) {
        (Precision::Q4_0, Side::Activations) => Precision::Fp32,
        (p, _) => p,
    };
    let elems = u64::from(rows).checked_mul(u64::from(k))?;
    let (data, scales) = match fmt {
        Precision::Fp32 | Precision::Fp16 => {
            let ldk = u64::from(k).checked_next_multiple_of(4)?;
            let elem = if fmt == Precision::Fp32 { 4 } else { 2 };
            (u64::from(rows).checked_mul(ldk)?.checked_mul(elem)?, 0)
        }
        Precision::Int8 | Precision::Q4_0 if k % fmt.k_block() != 0 => return None,
        Precision::Int8 => (elems, elems / 32 * 4),
        Precision::Q4_0 => {
            let blocks = elems / 32;
            (blocks.checked_mul(16)?, blocks.next_multiple_of(2) * 2)
        }
    };
    let f32s = elems.checked_mul(4)?;
    let host = f32s
        .checked_mul(2)?
        .checked_add(data)?
        .checked_add(scales)?;
    Some(Footprint { device: data, host })
}

/// Pack `values` (`rows x k`) for `precision`. Quantised formats need `k % 32 == 0`.
pub fn pack(precision: Precision, side: Side, rows: u32, k: u32, values: &[f32]) -> Packed {
    assert_eq!(values.len(), rows as usize * k as usize);
    let fmt = match (precision, side) {
        (Precision::Q4_0, Side::Activations) => Precision::Fp32,
        (p, _) => p,
    };
    match fmt {
        Precision::Fp32 => pack_float(rows, k, values, false),
        Precision::Fp16 => pack_float(rows, k, values, true),
        Precision::Int8 => pack_int8(rows, k, values),
        Precision::Q4_0 => pack_q4_0(rows, k, values),
    }
}

fn pack_float(rows: u32, k: u32, values: &[f32], half: bool) -> Packed {
    let ldk = k.next_multiple_of(4);
    let elem = if half { 2 } else { 4 };
    let mut data = vec![0u8; rows as usize * ldk as usize * elem];
    let mut kept = Vec::with_capacity(values.len());
    for r in 0..rows as usize {
        for c in 0..k as usize {
            let v = values[r * k as usize + c];
            let at = (r * ldk as usize + c) * elem;
            if half {
                let h = f32_to_f16(v);
                data[at..at + 2].copy_from_slice(&h.to_le_bytes());
                kept.push(f16_to_f32(h));
            } else {
                data[at..at + 4].copy_from_slice(&v.to_le_bytes());
                kept.push(v);
            }
        }
    }
    Packed {
        rows,
        k,
        ldk,
        data,
        scales: Vec::new(),
        values: kept,
    }
}

fn pack_int8(rows: u32, k: u32, values: &[f32]) -> Packed {
    assert_eq!(k % 32, 0, "int8 blocks need K % 32 == 0");
    let mut data = Vec::with_capacity(values.len());
    let mut scales = Vec::with_capacity(values.len() / 32 * 4);
    let mut kept = Vec::with_capacity(values.len());
    for block in values.chunks_exact(32) {
        let amax = block.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = if amax > 0.0 { amax / 127.0 } else { 1.0 };
        scales.extend_from_slice(&d.to_le_bytes());
        for v in block {
            let q = (v / d).round().clamp(-127.0, 127.0) as i8;
            data.push(q as u8);
            kept.push(f32::from(q) * d);
        }
    }
    Packed {
        rows,
        k,
        ldk: k,
        data,
        scales,
        values: kept,
    }
}

fn pack_q4_0(rows: u32, k: u32, values: &[f32]) -> Packed {
    assert_eq!(k % 32, 0, "Q4_0 blocks need K % 32 == 0");
    let blocks = values.len() / 32;
    let mut data = Vec::with_capacity(blocks * 16);
    let mut halves: Vec<u16> = Vec::with_capacity(blocks);
    let mut kept = Vec::with_capacity(values.len());
    for block in values.chunks_exact(32) {
        let amax = block.iter().fold(0f32, |a, v| a.max(v.abs()));
        // 4-bit codes 0..15 stand for -8..7; scale so the largest magnitude maps to 7.
        let h = f32_to_f16(if amax > 0.0 { amax / 7.0 } else { 1.0 });
        let d = f16_to_f32(h);
        halves.push(h);
        let codes: Vec<u32> = block
            .iter()
            .map(|v| ((v / d).round().clamp(-8.0, 7.0) + 8.0) as u32)
            .collect();
        for word in codes.chunks_exact(8) {
            let packed = word
                .iter()
                .enumerate()
                .fold(0u32, |acc, (e, q)| acc | (q << (4 * e)));
            data.extend_from_slice(&packed.to_le_bytes());
        }
        kept.extend(codes.iter().map(|q| (*q as f32 - 8.0) * d));
    }
    if halves.len() % 2 == 1 {
        halves.push(0);
    }
    let scales = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
    Packed {
        rows,
        k,
        ldk: k,
        data,
        scales,
        values: kept,
    }
}

/// f64 reference for C[m][n] and its error scale sum_k |x w|.
pub fn reference(x: &Packed, w: &Packed, m: u32, n: u32) -> (f64, f64) {
    let k = x.k as usize;
    let xr = &x.values[m as usize * k..(m as usize + 1) * k];
    let wr = &w.values[n as usize * k..(n as usize + 1) * k];
    xr.iter().zip(wr).fold((0.0, 0.0), |(s, a), (xv, wv)| {
        let p = f64::from(*xv) * f64::from(*wv);
        (s + p, a + p.abs())
    })
}

/// The entries a check looks at: the four corners (ragged edges), every entry of the last row
/// and column up to `edge` of them, and `samples` pseudo-random ones.
pub fn check_points(m: u32, n: u32, samples: usize, edge: u32) -> Vec<(u32, u32)> {
    let mut pts = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    pts.extend((0..n.min(edge)).map(|j| (m - 1, n - 1 - j)));
    pts.extend((0..m.min(edge)).map(|i| (m - 1 - i, n - 1)));
    let mut rng = Rng::new(u64::from(m) * 31 + u64::from(n));
    for _ in 0..samples {
        let i = ((rng.uniform() + 1.0) * 0.5 * m as f32) as u32;
        let j = ((rng.uniform() + 1.0) * 0.5 * n as f32) as u32;
        pts.push((i.min(m - 1), j.min(n - 1)));
    }
    pts.sort_unstable();
    pts.dedup();
    pts
}

/// Largest relative error of `c` (`m x n`, row-major f32) at `points`.
pub fn max_error(c: &[f32], n: u32, x: &Packed, w: &Packed, points: &[(u32, u32)]) -> f64 {
    points
        .iter()
        .map(|&(i, j)| {
            let (r, scale) = reference(x, w, i, j);
            let got = f64::from(c[(i * n + j) as usize]);
            if !got.is_finite() {
                return f64::INFINITY;
            }
            (got - r).abs() / scale.max(f64::MIN_POSITIVE)
        })
        .fold(0.0, f64::max)
}

/// IEEE binary16 conversions, round to nearest even: the GGUF writer's (one copy in the crate).
pub use crate::gguf::{f16_to_f32, f32_to_f16};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_footprint_is_what_packing_allocates_and_none_past_a_u64() {
        for p in Precision::ALL {
            for side in [Side::Activations, Side::Weights] {
                let (rows, k) = (6, 96);
                let f = footprint(p, side, rows, k).unwrap();
                let values = random_values(rows, k, 1);
                let packed = pack(p, side, rows, k, &values);
                assert_eq!(f.device, packed.data.len() as u64, "{p:?} {side:?}");
                let held = (values.len() + packed.values.len()) * 4
                    + packed.data.len()
                    + packed.scales.len();
                assert_eq!(f.host, held as u64, "{p:?} {side:?}");
            }
        }
        assert_eq!(footprint(Precision::Q4_0, Side::Weights, 4, 100), None);
        assert!(footprint(Precision::Q4_0, Side::Activations, 4, 100).is_some());
        let max = u32::MAX;
        let huge = footprint(Precision::Fp32, Side::Weights, max, 1 << 20).unwrap();
        assert_eq!(huge.device, u64::from(max) << 22);
        assert_eq!(huge.host, 3 * (u64::from(max) << 22));
        assert_eq!(footprint(Precision::Fp32, Side::Weights, max, max), None);
    }

    #[test]
    fn f16_conversion_round_trips_and_rounds_to_nearest() {
        for v in [
            0.0f32, 1.0, -2.5, 0.333_333, 65504.0, 6.1035e-5, 5.96e-8, -1e-3,
        ] {
            let back = f16_to_f32(f32_to_f16(v));
            assert!((back - v).abs() <= v.abs() * 1e-3 + 6e-8, "{v} -> {back}");
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(1e9), 0x7c00);
        // 1 + 2^-11 is exactly halfway between 1 and the next half: ties to even (1.0).
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }

    #[test]
    fn fp_rows_are_padded_with_zeros() {
        let v = random_values(2, 5, 1);
        let p = pack(Precision::Fp32, Side::Weights, 2, 5, &v);
        assert_eq!(p.ldk, 8);
        assert_eq!(p.data.len(), 2 * 8 * 4);
        assert_eq!(&p.data[5 * 4..8 * 4], &[0u8; 12]);
        assert_eq!(p.values, v);
    }

    #[test]
    fn quantised_values_stay_close_to_the_inputs() {
        let v = random_values(3, 64, 2);
        let q8 = pack(Precision::Int8, Side::Weights, 3, 64, &v);
        let q4 = pack(Precision::Q4_0, Side::Weights, 3, 64, &v);
        assert_eq!(q8.data.len(), 3 * 64);
        assert_eq!(q8.scales.len(), 3 * 2 * 4);
        assert_eq!(q4.data.len(), 3 * 2 * 16);
        assert_eq!(q4.scales.len(), 3 * 2 * 2);
        for (a, b) in v.iter().zip(&q8.values) {
            assert!((a - b).abs() < 1.0 / 127.0, "{a} {b}");
        }
        for (a, b) in v.iter().zip(&q4.values) {
            assert!((a - b).abs() < 1.0 / 7.0, "{a} {b}");
        }
        // Q4_0 activations stay fp32.
        let x = pack(Precision::Q4_0, Side::Activations, 3, 64, &v);
        assert_eq!(x.values, v);
        // First nibble of the first word is element 0.
        let d = f16_to_f32(u16::from_le_bytes([q4.scales[0], q4.scales[1]]));
        let code = (q4.data[0] & 15) as f32;
        assert_eq!((code - 8.0) * d, q4.values[0]);
    }

    #[test]
    fn error_metric_sees_a_wrong_entry() {
        let x = pack(
            Precision::Fp32,
            Side::Activations,
            3,
            4,
            &random_values(3, 4, 3),
        );
        let w = pack(
            Precision::Fp32,
            Side::Weights,
            2,
            4,
            &random_values(2, 4, 4),
        );
        let mut c: Vec<f32> = (0..3)
            .flat_map(|i| (0..2).map(move |j| (i, j)))
            .map(|(i, j)| reference(&x, &w, i, j).0 as f32)
            .collect();
        let pts = check_points(3, 2, 8, 4);
        assert!(pts.contains(&(2, 1)));
        assert!(max_error(&c, 2, &x, &w, &pts) < 1e-6);
        c[5] += 1.0;
        assert!(max_error(&c, 2, &x, &w, &pts) > 0.1);
        c[5] = f32::NAN;
        assert!(max_error(&c, 2, &x, &w, &pts).is_infinite());
    }
}
