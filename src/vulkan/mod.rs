//! The thin layer over `ash` the bench uses: device choice, buffers, pipelines, and Vulkan
//! errors kept as data (call + result).

pub mod buffer;
pub mod device;
pub mod error;
pub mod pipeline;

pub use buffer::{one_shot, submit_and_wait, Buffer};
pub use device::{pick_device, DeviceInfo, Gpu, Instance};
pub use error::{Call, VkError};
pub use pipeline::{Layouts, Pipeline, Statistic};
