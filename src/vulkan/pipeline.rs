//! Compute pipelines from the committed SPIR-V, specialised per tile configuration, and the
//! compiler statistics (registers, spills, fills) the driver exposes for them.

use std::io::Cursor;

use ash::vk;
use serde::Serialize;

use super::buffer::Buffer;
use super::command::DescriptorSet;
use super::device::Gpu;
use super::error::{Call, VkError};

/// Every kernel uses the same interface: storage buffers at bindings 0..=4 (X, W, C, X scales,
/// W scales; unused ones get a dummy) and 16 bytes of push constants (M, N, K, ldk or the
/// kernel's own four words).
pub const BINDINGS: u32 = 5;
pub const PUSH_BYTES: u32 = 16;

/// Descriptor-set and pipeline layouts shared by all kernels, plus a pool for the sets.
pub struct Layouts {
    pub(super) set_layout: vk::DescriptorSetLayout,
    pub(super) pipeline_layout: vk::PipelineLayout,
    pool: vk::DescriptorPool,
    device: ash::Device,
}

impl Layouts {
    pub fn new(gpu: &Gpu, max_sets: u32) -> Result<Layouts, VkError> {
        let d = &gpu.device;
        let bindings: Vec<_> = (0..BINDINGS)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // SAFETY: create-info data outlives each call; objects are destroyed in Drop.
        unsafe {
            let set_layout = d
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                    None,
                )
                .call("vkCreateDescriptorSetLayout")?;
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .size(PUSH_BYTES)];
            let set_layouts = [set_layout];
            let pipeline_layout = d
                .create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default()
                        .set_layouts(&set_layouts)
                        .push_constant_ranges(&ranges),
                    None,
                )
                .call("vkCreatePipelineLayout")?;
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(max_sets * BINDINGS)];
            let pool = d
                .create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(max_sets)
                        .pool_sizes(&sizes),
                    None,
                )
                .call("vkCreateDescriptorPool")?;
            Ok(Layouts {
                set_layout,
                pipeline_layout,
                pool,
                device: d.clone(),
            })
        }
    }

    /// A descriptor set binding `buffers` (in binding order; fewer than five repeat the last).
    pub fn bind(&self, buffers: &[&Buffer]) -> Result<DescriptorSet, VkError> {
        assert!(!buffers.is_empty());
        let layouts = [self.set_layout];
        // SAFETY: the pool and layout are valid; buffer handles are valid for the set's lifetime.
        unsafe {
            let set = self
                .device
                .allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(self.pool)
                        .set_layouts(&layouts),
                )
                .call("vkAllocateDescriptorSets")?[0];
            let infos: Vec<[vk::DescriptorBufferInfo; 1]> = (0..BINDINGS as usize)
                .map(|b| {
                    let buf = buffers[b.min(buffers.len() - 1)];
                    [vk::DescriptorBufferInfo::default()
                        .buffer(buf.buffer)
                        .offset(0)
                        .range(vk::WHOLE_SIZE)]
                })
                .collect();
            let writes: Vec<_> = infos
                .iter()
                .enumerate()
                .map(|(b, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(b as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            self.device.update_descriptor_sets(&writes, &[]);
            Ok(set)
        }
    }

    /// Free every set handed out so far.
    pub fn reset_sets(&self) -> Result<(), VkError> {
        // SAFETY: callers only reset when no command buffer using the sets is pending.
        unsafe {
            self.device
                .reset_descriptor_pool(self.pool, vk::DescriptorPoolResetFlags::empty())
                .call("vkResetDescriptorPool")
        }
    }
}

impl Drop for Layouts {
    fn drop(&mut self) {
        // SAFETY: pipelines using the layouts are dropped first by their owners.
        unsafe {
            self.device.destroy_descriptor_pool(self.pool, None);
            self.device
                .destroy_pipeline_layout(self.pipeline_layout, None);
            self.device
                .destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

/// A specialised compute pipeline.
pub struct Pipeline {
    pipeline: vk::Pipeline,
    device: ash::Device,
}

/// A pipeline's handle, as a recording names it; the [`Pipeline`] must outlive the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipelineHandle(pub(super) vk::Pipeline);

impl Pipeline {
    pub fn handle(&self) -> PipelineHandle {
        PipelineHandle(self.pipeline)
    }

    /// Build a pipeline from SPIR-V words with specialisation constants `spec[i]` at id `i`.
    pub fn new(
        gpu: &Gpu,
        layouts: &Layouts,
        spirv: &[u8],
        spec: &[u32],
    ) -> Result<Pipeline, VkError> {
        let code = ash::util::read_spv(&mut Cursor::new(spirv)).map_err(|_| {
            VkError::new("vkCreateShaderModule", vk::Result::ERROR_INVALID_SHADER_NV)
        })?;
        let d = &gpu.device;
        let entries: Vec<_> = (0..spec.len() as u32)
            .map(|i| vk::SpecializationMapEntry {
                constant_id: i,
                offset: i * 4,
                size: 4,
            })
            .collect();
        let data: Vec<u8> = spec.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let spec_info = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        // SAFETY: the module lives until the pipeline is created; create-info data outlives the call.
        unsafe {
            let module = d
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None)
                .call("vkCreateShaderModule")?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main")
                .specialization_info(&spec_info);
            let flags = if gpu.exec_props.is_some() {
                vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
            } else {
                vk::PipelineCreateFlags::empty()
            };
            let info = [vk::ComputePipelineCreateInfo::default()
                .flags(flags)
                .stage(stage)
                .layout(layouts.pipeline_layout)];
            let result = d.create_compute_pipelines(vk::PipelineCache::null(), &info, None);
            d.destroy_shader_module(module, None);
            let pipeline = result.map_err(|(_, r)| VkError::new("vkCreateComputePipelines", r))?[0];
            Ok(Pipeline {
                pipeline,
                device: d.clone(),
            })
        }
    }

    /// The driver's statistics for this pipeline (empty without VK_KHR_pipeline_executable_properties).
    pub fn statistics(&self, gpu: &Gpu) -> Vec<Statistic> {
        let Some(ext) = &gpu.exec_props else {
            return Vec::new();
        };
        let mut out = Vec::new();
        // SAFETY: the pipeline was created with CAPTURE_STATISTICS_KHR.
        unsafe {
            let info = vk::PipelineInfoKHR::default().pipeline(self.pipeline);
            let Ok(execs) = ext.get_pipeline_executable_properties(&info) else {
                return out;
            };
            for index in 0..execs.len() as u32 {
                let exec = vk::PipelineExecutableInfoKHR::default()
                    .pipeline(self.pipeline)
                    .executable_index(index);
                let Ok(stats) = ext.get_pipeline_executable_statistics(&exec) else {
                    continue;
                };
                for s in stats {
                    let name = s
                        .name_as_c_str()
                        .map(|c| c.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let value = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => f64::from(s.value.b32),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64 as f64,
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64 as f64,
                        vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => s.value.f64,
                        _ => continue,
                    };
                    out.push(Statistic { name, value });
                }
            }
        }
        out
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // SAFETY: the bench waits for the queue before dropping pipelines.
        unsafe { self.device.destroy_pipeline(self.pipeline, None) };
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Statistic {
    pub name: String,
    pub value: f64,
}
