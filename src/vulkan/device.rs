//! Opening a described device: one compute queue, a command pool, the extensions and
//! features the kernels need.

use std::ffi::c_char;

use ash::vk;

use super::error::{Call, VkError};
use super::info::DeviceInfo;
use super::instance::Instance;

/// An opened device with one compute queue.
pub struct Gpu {
    pub info: DeviceInfo,
    pub(super) device: ash::Device,
    pub(super) queue: vk::Queue,
    pub(super) memory: vk::PhysicalDeviceMemoryProperties,
    pub(super) exec_props: Option<ash::khr::pipeline_executable_properties::Device>,
    pub(super) command_pool: vk::CommandPool,
    /// Map device memory directly (UMA / CPU devices) instead of staging through host memory.
    pub(super) direct_map: bool,
}

impl Gpu {
    pub fn open(inst: &Instance, index: usize) -> Result<Gpu, VkError> {
        let info = inst.devices[index].clone();
        let (pd, enables) = inst.physical[index];
        // SAFETY: standard device creation; all create-info data outlives the calls.
        unsafe {
            let families = inst
                .instance
                .get_physical_device_queue_family_properties(pd);
            let queue_family = families
                .iter()
                .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .ok_or_else(|| {
                    VkError::new(
                        "vkGetPhysicalDeviceQueueFamilyProperties",
                        vk::Result::ERROR_FEATURE_NOT_PRESENT,
                    )
                })? as u32;
            let priorities = [1.0f32];
            let queue_info = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(queue_family)
                .queue_priorities(&priorities)];

            let mut ext_names: Vec<*const c_char> = Vec::new();
            if info.pipeline_statistics {
                ext_names.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
            }
            if info.int8_dot && enables.api < vk::API_VERSION_1_3 && enables.int_dot_ext {
                ext_names.push(ash::khr::shader_integer_dot_product::NAME.as_ptr());
            }
            if info.fp16 && enables.api < vk::API_VERSION_1_2 && enables.f16_ext {
                ext_names.push(ash::khr::shader_float16_int8::NAME.as_ptr());
            }
            if info.float_atomic_add {
                ext_names.push(ash::ext::shader_atomic_float::NAME.as_ptr());
            }

            let mut storage16 = vk::PhysicalDevice16BitStorageFeatures::default()
                .storage_buffer16_bit_access(info.fp16);
            let mut f16 =
                vk::PhysicalDeviceShaderFloat16Int8Features::default().shader_float16(info.fp16);
            let mut dot = vk::PhysicalDeviceShaderIntegerDotProductFeatures::default()
                .shader_integer_dot_product(info.int8_dot);
            let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
                .shader_buffer_float32_atomic_add(info.float_atomic_add);
            let mut exec = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                .pipeline_executable_info(true);
            let mut create = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queue_info)
                .enabled_extension_names(&ext_names);
            if info.fp16 {
                create = create.push_next(&mut storage16).push_next(&mut f16);
            }
            if info.int8_dot {
                create = create.push_next(&mut dot);
            }
            if info.pipeline_statistics {
                create = create.push_next(&mut exec);
            }
            if info.float_atomic_add {
                create = create.push_next(&mut atomic_float);
            }
            let device = inst
                .instance
                .create_device(pd, &create, None)
                .call("vkCreateDevice")?;
            let queue = device.get_device_queue(queue_family, 0);
            let memory = inst.instance.get_physical_device_memory_properties(pd);
            let exec_props = info.pipeline_statistics.then(|| {
                ash::khr::pipeline_executable_properties::Device::new(&inst.instance, &device)
            });
            let pool = device
                .create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(queue_family)
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                    None,
                )
                .call("vkCreateCommandPool");
            let command_pool = match pool {
                Ok(p) => p,
                Err(e) => {
                    device.destroy_device(None);
                    return Err(e);
                }
            };
            let direct_map = info.kind != "discrete-gpu";
            Ok(Gpu {
                info,
                device,
                queue,
                memory,
                exec_props,
                command_pool,
                direct_map,
            })
        }
    }

    /// Block until the queue is idle (used before tearing down resources).
    pub fn wait_idle(&self) -> Result<(), VkError> {
        // SAFETY: device is valid.
        unsafe { self.device.device_wait_idle() }.call("vkDeviceWaitIdle")
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: every object created from the device is destroyed by its owner before this;
        // waiting first makes sure no command buffer is still executing.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_command_pool(self.command_pool, None);
            self.device.destroy_device(None);
        }
    }
}
