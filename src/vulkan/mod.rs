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
//!
//! Only `info` and `error`'s data type exist without the `bench` feature (no `ash` then):
//! [`probe`] says Vulkan is not built in, and [`UNAVAILABLE`] says why.

#[cfg(feature = "bench")]
pub mod buffer;
#[cfg(feature = "bench")]
pub mod command;
#[cfg(feature = "bench")]
pub mod describe;
#[cfg(feature = "bench")]
pub mod device;
pub mod error;
pub mod info;
#[cfg(feature = "bench")]
pub mod instance;
#[cfg(feature = "bench")]
pub mod pipeline;

#[cfg(feature = "bench")]
pub use buffer::Buffer;
#[cfg(feature = "bench")]
pub use command::{
    one_shot, BufferHandle, CommandBuffers, DescriptorSet, Dispatch, QueryPool, Recording,
};
#[cfg(feature = "bench")]
pub use device::Gpu;
#[cfg(feature = "bench")]
pub use error::Call;
pub use error::VkError;
pub use info::{pick_device, DeviceInfo, ShaderCores, VulkanProbe};
#[cfg(feature = "bench")]
pub use instance::{Instance, LoadOptions};
#[cfg(feature = "bench")]
pub use pipeline::{Layouts, Pipeline, PipelineHandle, Statistic};

use std::path::Path;

/// Why this binary cannot use Vulkan at all, or None when it can.
pub const UNAVAILABLE: Option<&str> = if cfg!(feature = "bench") {
    None
} else {
    Some("this rvl was built without the `bench` feature, so it has no Vulkan support (rebuild with default features)")
};

/// What doctor's live probe records without the `bench` feature: why there is nothing.
#[cfg(not(feature = "bench"))]
pub fn probe(_library: Option<&Path>) -> VulkanProbe {
    VulkanProbe {
        error: UNAVAILABLE.map(str::to_string),
        devices: Vec::new(),
    }
}

/// What doctor's live probe records: every device the loader offers, or why there are none.
/// Never panics on a missing loader or a broken driver: that becomes `error`.
#[cfg(feature = "bench")]
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
