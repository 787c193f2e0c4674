//! Recording and submitting compute work: command buffers that stay alive until dropped,
//! a recording handle with the few commands the bench records (dispatch, clear, barrier,
//! timestamp), timestamp query pools, and one-shot submissions. The `unsafe` Vulkan calls of
//! the bench live here, so its runner and probe are safe code.
//!
//! The wrappers keep the rules the raw calls need: a recording exists only between a
//! successful `vkBeginCommandBuffer` and `vkEndCommandBuffer`; queries are within the pool;
//! command buffers and query pools are freed only after the queue is idle. Handles recorded
//! into a command buffer (pipelines, descriptor sets, buffers) must outlive its execution, as
//! their owners (Runner, the probe) ensure by waiting for every submission.

use ash::vk;

use super::buffer::Buffer;
use super::device::Gpu;
use super::error::{Call, VkError};
use super::pipeline::{Layouts, PipelineHandle};

/// A descriptor set handed out by [`Layouts::bind`].
pub type DescriptorSet = vk::DescriptorSet;
/// A buffer's handle, as recorded (see [`Buffer::handle`]).
pub type BufferHandle = vk::Buffer;

/// One compute dispatch: a pipeline, its descriptor set, the four words of push constants
/// (none for kernels that read none), and the grid.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    pub pipeline: PipelineHandle,
    pub set: DescriptorSet,
    pub push: Option<[u32; 4]>,
    pub groups: [u32; 3],
}

/// A command buffer between begin and end.
pub struct Recording<'a> {
    gpu: &'a Gpu,
    cb: vk::CommandBuffer,
}

impl Recording<'_> {
    /// Bind the pipeline and set, push the constants, dispatch.
    pub fn dispatch(&mut self, layouts: &Layouts, d: &Dispatch) {
        let dev = &self.gpu.device;
        // SAFETY: cb is recording; the pipeline, layout and set are live (see the module note).
        unsafe {
            dev.cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::COMPUTE, d.pipeline.0);
            dev.cmd_bind_descriptor_sets(
                self.cb,
                vk::PipelineBindPoint::COMPUTE,
                layouts.pipeline_layout,
                0,
                &[d.set],
                &[],
            );
            if let Some(words) = d.push {
                let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_ne_bytes()).collect();
                dev.cmd_push_constants(
                    self.cb,
                    layouts.pipeline_layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    &bytes,
                );
            }
            let [x, y, z] = d.groups;
            dev.cmd_dispatch(self.cb, x, y, z);
        }
    }

    /// Zero `out` (a storage buffer created with TRANSFER_DST), ordered after earlier shader
    /// access and before the next dispatch.
    pub fn zero(&mut self, out: BufferHandle) {
        let dev = &self.gpu.device;
        let before = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE)];
        let after = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
        // SAFETY: cb is recording; out is a live storage buffer created with TRANSFER_DST.
        unsafe {
            dev.cmd_pipeline_barrier(
                self.cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &before,
                &[],
                &[],
            );
            dev.cmd_fill_buffer(self.cb, out, 0, vk::WHOLE_SIZE, 0);
            dev.cmd_pipeline_barrier(
                self.cb,
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
    pub fn compute_barrier(&mut self) {
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
        // SAFETY: cb is recording.
        unsafe {
            self.gpu.device.cmd_pipeline_barrier(
                self.cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &barrier,
                &[],
                &[],
            );
        }
    }

    /// Reset queries `first..first + count` of `pool` before they are written again.
    pub fn reset_queries(&mut self, pool: &QueryPool, first: u32, count: u32) {
        assert!(
            first + count <= pool.capacity,
            "queries out of the pool's range"
        );
        // SAFETY: cb is recording; the range is within the pool (checked above).
        unsafe {
            self.gpu
                .device
                .cmd_reset_query_pool(self.cb, pool.pool, first, count)
        };
    }

    /// Write a timestamp into `query` once everything before it has finished.
    pub fn timestamp(&mut self, pool: &QueryPool, query: u32) {
        assert!(query < pool.capacity, "query out of the pool's range");
        // SAFETY: cb is recording; query is within the pool (checked above) and was reset
        // in this command buffer by the caller.
        unsafe {
            self.gpu.device.cmd_write_timestamp(
                self.cb,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                pool.pool,
                query,
            );
        }
    }

    /// Copy the first `len` bytes of `from` into `to`.
    pub(super) fn copy(&mut self, from: &Buffer, to: &Buffer, len: u64) {
        assert!(
            len <= from.size && len <= to.size,
            "copy larger than a buffer"
        );
        // SAFETY: cb is recording; both buffers are live and at least `len` bytes.
        unsafe {
            self.gpu.device.cmd_copy_buffer(
                self.cb,
                from.buffer,
                to.buffer,
                &[vk::BufferCopy::default().size(len)],
            )
        }
    }

    /// `vkEndCommandBuffer`: where panvk allocates a command buffer's scratch memory.
    pub fn end(self) -> Result<(), VkError> {
        // SAFETY: cb is recording.
        unsafe { self.gpu.device.end_command_buffer(self.cb) }.call("vkEndCommandBuffer")
    }
}

/// Primary command buffers from the device's pool, freed (after the queue is idle) on drop.
pub struct CommandBuffers<'g> {
    gpu: &'g Gpu,
    cbs: Vec<vk::CommandBuffer>,
}

impl<'g> CommandBuffers<'g> {
    pub fn allocate(gpu: &'g Gpu, count: usize) -> Result<CommandBuffers<'g>, VkError> {
        // SAFETY: plain allocation from the device's pool; freed in Drop.
        let cbs = unsafe {
            gpu.device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(gpu.command_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(count as u32),
            )
        }
        .call("vkAllocateCommandBuffers")?;
        Ok(CommandBuffers { gpu, cbs })
    }

    pub fn len(&self) -> usize {
        self.cbs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cbs.is_empty()
    }

    /// `vkBeginCommandBuffer` on buffer `i` (not pending: every submission is waited for).
    pub fn begin(&self, i: usize) -> Result<Recording<'_>, VkError> {
        self.begin_with(i, vk::CommandBufferUsageFlags::empty())
    }

    fn begin_with(
        &self,
        i: usize,
        flags: vk::CommandBufferUsageFlags,
    ) -> Result<Recording<'_>, VkError> {
        let cb = self.cbs[i];
        // SAFETY: cb comes from this pool and is not pending (every submission is waited for).
        unsafe {
            self.gpu
                .device
                .begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))
        }
        .call("vkBeginCommandBuffer")?;
        Ok(Recording { gpu: self.gpu, cb })
    }

    /// Submit every buffer (one `vkQueueSubmit` each, like llama.cpp) and wait for the last.
    pub fn submit_and_wait(&self) -> Result<(), VkError> {
        submit_and_wait(self.gpu, &self.cbs)
    }
}

impl Drop for CommandBuffers<'_> {
    fn drop(&mut self) {
        // SAFETY: waiting for the queue first means none of these buffers is pending.
        unsafe {
            let _ = self.gpu.device.queue_wait_idle(self.gpu.queue);
            self.gpu
                .device
                .free_command_buffers(self.gpu.command_pool, &self.cbs);
        }
    }
}

/// A pool of timestamp queries.
pub struct QueryPool {
    pool: vk::QueryPool,
    capacity: u32,
    device: ash::Device,
}

impl QueryPool {
    pub fn timestamps(gpu: &Gpu, capacity: u32) -> Result<QueryPool, VkError> {
        // SAFETY: valid device; the pool is destroyed in Drop.
        let pool = unsafe {
            gpu.device.create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(capacity),
                None,
            )
        }
        .call("vkCreateQueryPool")?;
        Ok(QueryPool {
            pool,
            capacity,
            device: gpu.device.clone(),
        })
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The first `count` timestamps, waiting for them to be available.
    pub fn read(&self, count: u32) -> Result<Vec<u64>, VkError> {
        assert!(count <= self.capacity, "queries out of the pool's range");
        let mut out = vec![0u64; count as usize];
        // SAFETY: the range is within the pool; WAIT blocks until the queries are written.
        unsafe {
            self.device.get_query_pool_results(
                self.pool,
                0,
                &mut out,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .call("vkGetQueryPoolResults")?;
        Ok(out)
    }
}

impl Drop for QueryPool {
    fn drop(&mut self) {
        // SAFETY: the owner waits for every submission before dropping the pool.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_query_pool(self.pool, None);
        }
    }
}

/// Record `record` into a fresh command buffer, submit it and wait for it.
pub fn one_shot(gpu: &Gpu, record: impl FnOnce(&mut Recording)) -> Result<(), VkError> {
    let cbs = CommandBuffers::allocate(gpu, 1)?;
    let mut rec = cbs.begin_with(0, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
    record(&mut rec);
    rec.end()?;
    cbs.submit_and_wait()
}

/// Submit command buffers (one `vkQueueSubmit` each, like llama.cpp) and wait for the last.
fn submit_and_wait(gpu: &Gpu, cbs: &[vk::CommandBuffer]) -> Result<(), VkError> {
    let d = &gpu.device;
    // SAFETY: command buffers are recorded and not pending; the fence is local.
    unsafe {
        let fence = d
            .create_fence(&vk::FenceCreateInfo::default(), None)
            .call("vkCreateFence")?;
        let result = (|| {
            for (i, cb) in cbs.iter().enumerate() {
                let one = [*cb];
                let submit = [vk::SubmitInfo::default().command_buffers(&one)];
                let f = if i + 1 == cbs.len() {
                    fence
                } else {
                    vk::Fence::null()
                };
                d.queue_submit(gpu.queue, &submit, f)
                    .call("vkQueueSubmit")?;
            }
            // Generous timeout: a slow CPU device at ubatch 512 can take a while, but a hang must
            // become a result, not a frozen bench.
            d.wait_for_fences(&[fence], true, 600_000_000_000)
                .call("vkWaitForFences")?;
            d.queue_wait_idle(gpu.queue).call("vkQueueWaitIdle")
        })();
        if result.is_err() {
            // Some buffers may have been submitted before the failure: let them finish before
            // anything they use is freed.
            let _ = d.queue_wait_idle(gpu.queue);
        }
        d.destroy_fence(fence, None);
        result
    }
}
