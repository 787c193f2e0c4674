//! Recording and timing GEMM dispatches on the device: one kernel alone (to check it and time
//! it), and the layer stack recorded the way llama.cpp's Vulkan backend submits a prefill graph
//! (many dispatches per command buffer, a barrier between dependent dispatches, several command
//! buffers recorded and alive before they are submitted one `vkQueueSubmit` each).

use std::collections::HashMap;
use std::time::Instant;

use ash::vk;

use super::inject::Injector;
use super::kernels::KernelSpec;
use crate::vulkan::{one_shot, submit_and_wait, Buffer, Call, Gpu, Layouts, Pipeline, VkError};

/// A GEMM bound to device buffers.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub ldk: u32,
    pub set: vk::DescriptorSet,
    /// The output buffer (binding 2), cleared before a split-K kernel adds into it.
    pub out: Option<vk::Buffer>,
}

/// Times of a stack run: per dispatch (all reps), and the whole stack per rep, in seconds.
#[derive(Debug, Clone, Default)]
pub struct StackTiming {
    pub per_dispatch: Vec<Vec<f64>>,
    pub total: Vec<f64>,
    pub command_buffers: usize,
    /// True when the device's timestamp queries were used, false for wall clock.
    pub timestamps: bool,
}

pub struct Runner<'g> {
    pub gpu: &'g Gpu,
    pub layouts: Layouts,
    pipelines: HashMap<String, Pipeline>,
    query_pool: vk::QueryPool,
    query_capacity: u32,
}

fn key(spec: &KernelSpec) -> String {
    format!("{}/{}", spec.precision.name(), spec.name)
}

impl<'g> Runner<'g> {
    pub fn new(gpu: &'g Gpu) -> Result<Runner<'g>, VkError> {
        Ok(Runner {
            gpu,
            layouts: Layouts::new(gpu, 4096)?,
            pipelines: HashMap::new(),
            query_pool: vk::QueryPool::null(),
            query_capacity: 0,
        })
    }

    pub fn timestamps(&self) -> bool {
        self.gpu.info.timestamp_period_ns.is_some()
    }

    /// Build (once) and return the pipeline for a kernel variant.
    pub fn pipeline(&mut self, spec: &KernelSpec) -> Result<&Pipeline, VkError> {
        let k = key(spec);
        if !self.pipelines.contains_key(&k) {
            let p = Pipeline::new(self.gpu, &self.layouts, spec.spirv, &spec.spec)?;
            self.pipelines.insert(k.clone(), p);
        }
        Ok(&self.pipelines[&k])
    }

    pub fn bind(
        &self,
        buffers: &[&Buffer],
        m: u32,
        n: u32,
        k: u32,
        ldk: u32,
    ) -> Result<Bound, VkError> {
        Ok(Bound {
            m,
            n,
            k,
            ldk,
            set: self.layouts.bind(buffers)?,
            out: buffers.get(2).map(|b| b.buffer),
        })
    }

    fn ensure_queries(&mut self, count: u32) -> Result<(), VkError> {
        if count <= self.query_capacity {
            return Ok(());
        }
        let d = &self.gpu.device;
        let capacity = count.next_power_of_two().max(64);
        // SAFETY: the old pool is unused (every submission is waited for).
        unsafe {
            if self.query_pool != vk::QueryPool::null() {
                d.destroy_query_pool(self.query_pool, None);
                self.query_pool = vk::QueryPool::null();
                self.query_capacity = 0;
            }
            self.query_pool = d
                .create_query_pool(
                    &vk::QueryPoolCreateInfo::default()
                        .query_type(vk::QueryType::TIMESTAMP)
                        .query_count(capacity),
                    None,
                )
                .call("vkCreateQueryPool")?;
        }
        self.query_capacity = capacity;
        Ok(())
    }

    fn read_queries(&self, count: u32) -> Result<Vec<u64>, VkError> {
        let mut out = vec![0u64; count as usize];
        // SAFETY: the queries were written by a submission that has completed.
        unsafe {
            self.gpu
                .device
                .get_query_pool_results(
                    self.query_pool,
                    0,
                    &mut out,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
                .call("vkGetQueryPoolResults")?;
        }
        Ok(out)
    }

    fn ticks_to_s(&self, ticks: u64) -> f64 {
        let period = f64::from(self.gpu.info.tick_ns().unwrap_or(1.0));
        ticks as f64 * period * 1e-9
    }

    fn record_dispatch(
        &self,
        cb: vk::CommandBuffer,
        pipe: vk::Pipeline,
        spec: &KernelSpec,
        g: &Bound,
    ) {
        let d = &self.gpu.device;
        let (gx, gy) = spec.grid(g.m, g.n);
        if spec.split_k > 1 {
            let out = g
                .out
                .expect("a split-K kernel is bound with an output buffer");
            self.record_clear(cb, out);
        }
        let push: Vec<u8> = [g.m, g.n, g.k, g.ldk]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        // SAFETY: cb is recording; pipeline, layout and set are valid.
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipe);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                self.layouts.pipeline_layout,
                0,
                &[g.set],
                &[],
            );
            d.cmd_push_constants(
                cb,
                self.layouts.pipeline_layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                &push,
            );
            d.cmd_dispatch(cb, gx, gy, spec.split_k);
        }
    }

    /// Zero `out` for a split-K kernel that adds its partial sums into it, ordered after earlier
    /// shader access and before the dispatch. It is recorded with the dispatch, so its time
    /// counts in the kernel's time.
    fn record_clear(&self, cb: vk::CommandBuffer, out: vk::Buffer) {
        let d = &self.gpu.device;
        let before = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE)];
        let after = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
        // SAFETY: cb is recording; out is a live storage buffer created with TRANSFER_DST.
        unsafe {
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &before,
                &[],
                &[],
            );
            d.cmd_fill_buffer(cb, out, 0, vk::WHOLE_SIZE, 0);
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &after,
                &[],
                &[],
            );
        }
    }

    /// A compute-to-compute memory barrier, as between dependent graph nodes in ggml-vulkan.
    fn record_barrier(&self, cb: vk::CommandBuffer) {
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
        // SAFETY: cb is recording.
        unsafe {
            self.gpu.device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &barrier,
                &[],
                &[],
            );
        }
    }

    fn record_timestamp(&self, cb: vk::CommandBuffer, query: u32) {
        // SAFETY: cb is recording; query < capacity and was reset in this command buffer.
        unsafe {
            self.gpu.device.cmd_write_timestamp(
                cb,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                self.query_pool,
                query,
            );
        }
    }

    /// Run one GEMM alone: once to size a warm-up, then `warm-up + reps` times in one command
    /// buffer, and return the `reps` timed durations. The warm-up keeps the device busy for
    /// [`WARM_S`] first, because a GPU that idled during the host's checks drops its clock
    /// (an H200 falls to 345 MHz) and a millisecond kernel would be timed on the way back up.
    pub fn time_single(
        &mut self,
        spec: &KernelSpec,
        g: &Bound,
        reps: usize,
    ) -> Result<Vec<f64>, VkError> {
        let pipe = self.pipeline(spec)?.pipeline;
        if self.timestamps() {
            let probe = self.timed_dispatches(pipe, spec, g, 0, 1)?[0];
            if reps == 0 {
                return Ok(Vec::new());
            }
            let warm = warmup_runs(probe);
            self.timed_dispatches(pipe, spec, g, warm, reps)
        } else {
            let mut times = Vec::with_capacity(reps);
            for r in 0..=reps {
                let start = Instant::now();
                one_shot(self.gpu, |cb| self.record_dispatch(cb, pipe, spec, g))?;
                if r > 0 {
                    times.push(start.elapsed().as_secs_f64());
                }
            }
            Ok(times)
        }
    }

    /// Time several kernels back to back in one command buffer, `reps` runs each, after
    /// `warm` untimed runs of the first: no host work between them, so every kernel meets the
    /// device in the same state (on an H200, kernels timed between host-side checks came out
    /// up to 5x slower than the same kernels inside a busy stream).
    pub fn time_many(
        &mut self,
        items: &[(&KernelSpec, Bound)],
        warm: usize,
        reps: usize,
    ) -> Result<Vec<Vec<f64>>, VkError> {
        if items.is_empty() || reps == 0 {
            return Ok(vec![Vec::new(); items.len()]);
        }
        let mut pipes = Vec::with_capacity(items.len());
        for (spec, _) in items {
            pipes.push(self.pipeline(spec)?.pipeline);
        }
        let batch: Vec<_> = pipes
            .iter()
            .zip(items)
            .map(|(pipe, (spec, g))| (*pipe, *spec, *g))
            .collect();
        self.time_pipelines(&batch, warm, reps)
    }

    /// One command buffer: `warm` untimed dispatches, then `n` timed ones.
    fn timed_dispatches(
        &mut self,
        pipe: vk::Pipeline,
        spec: &KernelSpec,
        g: &Bound,
        warm: usize,
        n: usize,
    ) -> Result<Vec<f64>, VkError> {
        Ok(self
            .time_pipelines(&[(pipe, spec, *g)], warm, n)?
            .pop()
            .unwrap_or_default())
    }

    /// The recording both timing entry points share: `warm` untimed runs of the first item, then
    /// `reps` timed runs of each item in order, a timestamp after every dispatch.
    fn time_pipelines(
        &mut self,
        items: &[(vk::Pipeline, &KernelSpec, Bound)],
        warm: usize,
        reps: usize,
    ) -> Result<Vec<Vec<f64>>, VkError> {
        let n = items.len() * reps;
        self.ensure_queries(n as u32 + 1)?;
        one_shot(self.gpu, |cb| {
            // SAFETY: cb is recording; the range is within the pool.
            unsafe {
                self.gpu
                    .device
                    .cmd_reset_query_pool(cb, self.query_pool, 0, n as u32 + 1)
            };
            for _ in 0..warm {
                let (pipe, spec, g) = &items[0];
                self.record_dispatch(cb, *pipe, spec, g);
                self.record_barrier(cb);
            }
            self.record_timestamp(cb, 0);
            let mut q = 1;
            for (pipe, spec, g) in items {
                for _ in 0..reps {
                    self.record_dispatch(cb, *pipe, spec, g);
                    self.record_barrier(cb);
                    self.record_timestamp(cb, q);
                    q += 1;
                }
            }
        })?;
        let ts = self.read_queries(n as u32 + 1)?;
        Ok((0..items.len())
            .map(|i| {
                (0..reps)
                    .map(|r| {
                        let at = i * reps + r;
                        self.ticks_to_s(ts[at + 1].saturating_sub(ts[at]))
                    })
                    .collect()
            })
            .collect())
    }

    /// Record `items` (in order) into command buffers of `per_cb` dispatches, all of them before
    /// the first submission, then submit them `warmup + reps` times and time the last `reps`.
    pub fn run_stack(
        &mut self,
        items: &[(&KernelSpec, Bound)],
        per_cb: usize,
        warmup: usize,
        reps: usize,
        ubatch: u32,
        inject: &Injector,
    ) -> Result<StackTiming, VkError> {
        let mut pipes = Vec::with_capacity(items.len());
        for (spec, _) in items {
            pipes.push(self.pipeline(spec)?.pipeline);
        }
        let chunks: Vec<std::ops::Range<usize>> = (0..items.len())
            .step_by(per_cb.max(1))
            .map(|s| s..(s + per_cb.max(1)).min(items.len()))
            .collect();
        let timestamps = self.timestamps();
        let queries = (items.len() + chunks.len()) as u32;
        if timestamps {
            self.ensure_queries(queries)?;
        }
        let d = &self.gpu.device;
        // SAFETY: the command buffers are allocated here and freed before returning, after the
        // queue is idle.
        let cbs = unsafe {
            d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(self.gpu.command_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(chunks.len() as u32),
            )
            .call("vkAllocateCommandBuffers")?
        };
        let result = self.record_and_submit(
            items, &pipes, &chunks, &cbs, timestamps, warmup, reps, ubatch, inject,
        );
        // SAFETY: wait for anything submitted before freeing; errors here are already reported.
        unsafe {
            let _ = d.queue_wait_idle(self.gpu.queue);
            d.free_command_buffers(self.gpu.command_pool, &cbs);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn record_and_submit(
        &self,
        items: &[(&KernelSpec, Bound)],
        pipes: &[vk::Pipeline],
        chunks: &[std::ops::Range<usize>],
        cbs: &[vk::CommandBuffer],
        timestamps: bool,
        warmup: usize,
        reps: usize,
        ubatch: u32,
        inject: &Injector,
    ) -> Result<StackTiming, VkError> {
        let d = &self.gpu.device;
        let queries = (items.len() + chunks.len()) as u32;
        for (ci, (range, cb)) in chunks.iter().zip(cbs).enumerate() {
            inject.check(ubatch, "vkBeginCommandBuffer")?;
            // SAFETY: cb is freshly allocated and not in use.
            unsafe {
                d.begin_command_buffer(*cb, &vk::CommandBufferBeginInfo::default())
                    .call("vkBeginCommandBuffer")?;
                let first_query = (range.start + ci) as u32;
                if timestamps {
                    d.cmd_reset_query_pool(
                        *cb,
                        self.query_pool,
                        first_query,
                        range.len() as u32 + 1,
                    );
                    self.record_timestamp(*cb, first_query);
                }
                for (j, i) in range.clone().enumerate() {
                    self.record_dispatch(*cb, pipes[i], items[i].0, &items[i].1);
                    self.record_barrier(*cb);
                    if timestamps {
                        self.record_timestamp(*cb, first_query + j as u32 + 1);
                    }
                }
                inject.check(ubatch, "vkEndCommandBuffer")?;
                d.end_command_buffer(*cb).call("vkEndCommandBuffer")?;
            }
        }
        let mut timing = StackTiming {
            per_dispatch: vec![Vec::new(); items.len()],
            total: Vec::new(),
            command_buffers: cbs.len(),
            timestamps,
        };
        for rep in 0..warmup + reps {
            inject.check(ubatch, "vkQueueSubmit")?;
            let start = Instant::now();
            submit_and_wait(self.gpu, cbs)?;
            let wall = start.elapsed().as_secs_f64();
            inject.check(ubatch, "vkWaitForFences")?;
            if rep < warmup {
                continue;
            }
            if !timestamps {
                timing.total.push(wall);
                continue;
            }
            let ts = self.read_queries(queries)?;
            let mut total = 0.0;
            for (ci, range) in chunks.iter().enumerate() {
                let base = range.start + ci;
                for (j, i) in range.clone().enumerate() {
                    let dt = self.ticks_to_s(ts[base + j + 1].saturating_sub(ts[base + j]));
                    timing.per_dispatch[i].push(dt);
                }
                total += self.ticks_to_s(ts[base + range.len()].saturating_sub(ts[base]));
            }
            timing.total.push(total);
        }
        Ok(timing)
    }
}

impl Drop for Runner<'_> {
    fn drop(&mut self) {
        // SAFETY: nothing is pending (every submission is waited for).
        unsafe {
            let _ = self.gpu.device.device_wait_idle();
            self.pipelines.clear();
            if self.query_pool != vk::QueryPool::null() {
                self.gpu.device.destroy_query_pool(self.query_pool, None);
            }
        }
    }
}

/// Busy time before anything is timed (see [`Runner::time_single`]).
pub const WARM_S: f64 = 0.05;

/// Untimed runs of a job that takes `once` seconds needed to keep the device busy for
/// [`WARM_S`]; none when one run is already that long (the run that measured it warmed up).
pub fn warmup_runs(once: f64) -> usize {
    if once >= WARM_S {
        0
    } else {
        ((WARM_S / once.max(1e-6)).ceil() as usize).min(1000)
    }
}

pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_fills_the_warm_time_and_is_bounded() {
        assert_eq!(warmup_runs(0.2), 0);
        assert_eq!(warmup_runs(0.01), 5);
        assert_eq!(warmup_runs(0.0), 1000);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
