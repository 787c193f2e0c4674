//! Putting packed operands on the device and running one GEMM end to end (upload, dispatch,
//! read back). The sweep uses the pieces; tests use [`compute_once`] to check every kernel.

use super::kernels::KernelSpec;
use super::operands::Packed;
use super::runner::{Bound, Runner};
use crate::vulkan::{Buffer, Gpu, VkError};

/// A packed matrix on the device: its data and, for quantised formats, its scales.
pub struct DeviceMatrix {
    pub data: Buffer,
    pub scales: Option<Buffer>,
}

pub fn upload(gpu: &Gpu, p: &Packed) -> Result<DeviceMatrix, VkError> {
    let data = Buffer::storage(gpu, p.data.len() as u64)?;
    data.upload(gpu, &p.data)?;
    let scales = if p.scales.is_empty() {
        None
    } else {
        let s = Buffer::storage(gpu, p.scales.len() as u64)?;
        s.upload(gpu, &p.scales)?;
        Some(s)
    };
    Ok(DeviceMatrix { data, scales })
}

/// Bytes of a `tokens x n` fp32 result.
pub fn output_bytes(tokens: u32, n: u32) -> u64 {
    u64::from(tokens) * u64::from(n) * 4
}

/// Descriptor set for C = X * W^T: bindings X, W, C, X scales, W scales (C stands in for
/// scales a format does not have).
pub fn bind(
    runner: &Runner,
    x: &DeviceMatrix,
    w: &DeviceMatrix,
    c: &Buffer,
    xp: &Packed,
    wp: &Packed,
) -> Result<Bound, VkError> {
    let xs = x.scales.as_ref().unwrap_or(c);
    let ws = w.scales.as_ref().unwrap_or(c);
    runner.bind(
        &[&x.data, &w.data, c, xs, ws],
        xp.rows,
        wp.rows,
        xp.k,
        xp.ldk,
    )
}

/// Upload, run once, read back: the `m x n` fp32 result.
pub fn compute_once(
    runner: &mut Runner,
    spec: &KernelSpec,
    x: &Packed,
    w: &Packed,
) -> Result<Vec<f32>, VkError> {
    compute_repeated(runner, spec, x, w, 0)
}

/// Upload, run as a timing would (once, then a warm-up and `reps` timed runs when `reps > 0`,
/// all into the same output), read back the `m x n` fp32 result.
pub fn compute_repeated(
    runner: &mut Runner,
    spec: &KernelSpec,
    x: &Packed,
    w: &Packed,
    reps: usize,
) -> Result<Vec<f32>, VkError> {
    let gpu = runner.gpu;
    let xd = upload(gpu, x)?;
    let wd = upload(gpu, w)?;
    let c = Buffer::storage(gpu, output_bytes(x.rows, w.rows))?;
    let bound = bind(runner, &xd, &wd, &c, x, w)?;
    runner.time_single(spec, &bound, reps)?;
    let bytes = c.download(gpu, output_bytes(x.rows, w.rows))?;
    runner.layouts.reset_sets()?;
    Ok(to_f32(&bytes))
}

pub fn to_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}
