//! The one Vulkan layer rvl has, over `ash`: loading the loader (with an optional override),
//! listing and describing devices (the same description for doctor and smoke-bench), opening
//! one, buffers, pipelines and their compiler statistics, and Vulkan errors kept as data
//! (call + result).
//!
//! | module | what |
//! |---|---|
//! | [`info`] | [`DeviceInfo`], [`VulkanProbe`], device choice: plain data, no `ash` |
//! | [`error`] | [`VkError`]: a failed call as data |
//! | [`instance`] | loading libvulkan, the instance, listing devices |
//! | [`describe`] | the one function that fills a [`DeviceInfo`] |
//! | [`device`] | [`Gpu`]: an opened device with a compute queue |
//! | [`buffer`] | storage buffers (mapped on UMA/CPU devices, staged on discrete GPUs) |
//! | [`pipeline`] | layouts, specialised compute pipelines, statistics |
//! | [`command`] | command buffers, recording, timestamp queries, submission |

pub mod buffer;
pub mod command;
pub mod describe;
pub mod device;
pub mod error;
pub mod info;
pub mod instance;
pub mod pipeline;

pub use buffer::Buffer;
pub use command::{
    one_shot, BufferHandle, CommandBuffers, DescriptorSet, Dispatch, QueryPool, Recording,
};
pub use device::Gpu;
pub use error::{Call, VkError};
pub use info::{pick_device, DeviceInfo, ShaderCores, VulkanProbe};
pub use instance::{Instance, LoadOptions};
pub use pipeline::{Layouts, Pipeline, PipelineHandle, Statistic};

use std::path::Path;

/// What doctor's live probe records: every device the loader offers, or why there are none.
/// Never panics on a missing loader or a broken driver: that becomes `error`.
pub fn probe(library: Option<&Path>) -> VulkanProbe {
    let opts = LoadOptions {
        library,
        app: c"rvl doctor",
    };
    match Instance::load(&opts) {
        Ok(instance) => VulkanProbe {
            error: None,
            devices: instance.devices.clone(),
        },
        Err(e) => VulkanProbe {
            error: Some(e.to_string()),
            devices: Vec::new(),
        },
    }
}
