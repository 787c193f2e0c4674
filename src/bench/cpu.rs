//! CPU baseline: the same GEMMs with `matrixmultiply`'s multi-threaded fp32 sgemm, the well-kept
//! pure-Rust GEMM crate (it uses up to 4 threads; `MATMUL_NUM_THREADS` overrides).

use std::time::Instant;

use serde::Serialize;

use super::model::Gemm;
use super::operands::random_values;

#[derive(Debug, Clone, Serialize)]
pub struct CpuLayer {
    pub threads: usize,
    /// Seconds for one layer's GEMMs at this ubatch (fastest of the timed runs).
    pub seconds_per_layer: f64,
    pub gflops: f64,
}

/// Threads matrixmultiply will use: `MATMUL_NUM_THREADS` (`setting`, read once into the
/// Settings; matrixmultiply reads the same variable itself), else the CPU count, at most 4.
pub fn threads(setting: Option<&str>) -> usize {
    if let Some(n) = setting.and_then(|v| v.trim().parse::<usize>().ok()) {
        return n.clamp(1, 4);
    }
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}

/// C (m x n) = X (m x k) * W (n x k)^T.
pub fn sgemm_nt(m: usize, n: usize, k: usize, x: &[f32], w: &[f32], c: &mut [f32]) {
    assert!(x.len() >= m * k && w.len() >= n * k && c.len() >= m * n);
    // SAFETY: the asserts above bound every index sgemm touches with these strides.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            x.as_ptr(),
            k as isize,
            1,
            w.as_ptr(),
            1,
            k as isize,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// Time one layer (`gemms`) at `tokens`, `reps` times; report the fastest, with the `threads`
/// matrixmultiply uses (see [`threads`]).
pub fn measure_layer(gemms: &[Gemm], tokens: u32, reps: usize, threads: usize) -> CpuLayer {
    let m = tokens as usize;
    // Operands per distinct shape, generated once; the output buffer is shared.
    let mut shapes: Vec<(u32, u32)> = gemms.iter().map(|g| (g.k, g.n)).collect();
    shapes.sort_unstable();
    shapes.dedup();
    type Operands = ((u32, u32), Vec<f32>, Vec<f32>);
    let data: Vec<Operands> = shapes
        .iter()
        .map(|&(k, n)| {
            (
                (k, n),
                random_values(tokens, k, 11),
                random_values(n, k, 12),
            )
        })
        .collect();
    let max_out = gemms.iter().map(|g| m * g.n as usize).max().unwrap_or(0);
    let mut c = vec![0f32; max_out];
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        for g in gemms {
            let (_, x, w) = data
                .iter()
                .find(|(s, _, _)| *s == (g.k, g.n))
                .expect("shape generated above");
            sgemm_nt(m, g.n as usize, g.k as usize, x, w, &mut c);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let flops: f64 = gemms.iter().map(|g| g.flops(tokens)).sum();
    CpuLayer {
        threads,
        seconds_per_layer: best,
        gflops: flops / best / 1e9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgemm_nt_matches_a_naive_loop() {
        let (m, n, k) = (5, 7, 9);
        let x = random_values(m, k, 1);
        let w = random_values(n, k, 2);
        let mut c = vec![0f32; (m * n) as usize];
        sgemm_nt(m as usize, n as usize, k as usize, &x, &w, &mut c);
        for i in 0..m as usize {
            for j in 0..n as usize {
                let r: f32 = (0..k as usize)
                    .map(|t| x[i * k as usize + t] * w[j * k as usize + t])
                    .sum();
                assert!((c[i * n as usize + j] - r).abs() < 1e-4);
            }
        }
    }
}
