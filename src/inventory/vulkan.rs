//! What rvl knows about a Vulkan device, as plain data: doctor's inventory embeds it and
//! smoke-bench prints and saves it. Filled by [`crate::vulkan::describe`]; device choice and
//! the methods that need driver knowledge are [`crate::vulkan::info`]'s, which re-exports
//! these types.

use serde::{Deserialize, Serialize};

/// One physical device, as printed and saved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Position in `vkEnumeratePhysicalDevices` order (what `--device N` names).
    pub index: usize,
    pub name: String,
    /// `cpu`, `discrete-gpu`, `integrated-gpu`, `virtual-gpu` or `other`.
    pub kind: String,
    /// Empty when the driver cannot say (no Vulkan 1.2 and no VK_KHR_driver_properties).
    pub driver_name: String,
    /// "Mesa 26.1.6" for Mesa drivers; empty when the driver cannot say.
    pub driver_info: String,
    /// `VkDriverId` name, e.g. `MESA_PANVK`, `MESA_LLVMPIPE`, `NVIDIA_PROPRIETARY`; `unknown`
    /// when the driver cannot say.
    pub driver_id: String,
    pub driver_version: String,
    pub api_version: String,
    pub vendor_id: u32,
    pub device_id: u32,
    /// shaderFloat16 and 16-bit storage buffers: the fp16 kernels can run.
    pub fp16: bool,
    /// shaderIntegerDotProduct: the int8 kernel can run.
    pub int8_dot: bool,
    /// The driver says 4x8-bit packed signed dot products are hardware-accelerated.
    pub int8_dot_accelerated: bool,
    /// shaderBufferFloat32AtomicAdd (VK_EXT_shader_atomic_float): the split-K kernels can run.
    pub float_atomic_add: bool,
    pub subgroup_size: u32,
    pub max_shared_memory: u32,
    pub max_workgroup_invocations: u32,
    pub max_storage_buffer_range: u64,
    /// Nanoseconds per timestamp tick; None when compute queues cannot write timestamps.
    pub timestamp_period_ns: Option<Nanos>,
    /// VK_KHR_pipeline_executable_properties: registers/spills per kernel can be read.
    pub pipeline_statistics: bool,
    /// VK_ARM_shader_core_builtins: (core mask, core count, warps per core), when exposed.
    pub shader_cores: Option<ShaderCores>,
    /// Compute units (NVIDIA SMs, AMD CUs, Arm shader cores) where a vendor extension says how
    /// many (see [`compute_units`](crate::vulkan::info::compute_units)); None otherwise (lavapipe). Sizes the split-K of the
    /// "-splitcu" kernels. Absent from inventories saved before it existed.
    #[serde(default)]
    pub compute_units: Option<u32>,
    /// The shaderFloat16 feature alone (doctor's field; [`DeviceInfo::fp16`] also needs
    /// 16-bit storage).
    pub shader_float16: bool,
    /// The shaderInt8 feature.
    pub shader_int8: bool,
    /// The shaderIntegerDotProduct feature: the same fact as `int8_dot`, under the name
    /// `rvl doctor --json` has always used.
    pub integer_dot_product: bool,
    /// maxComputeSharedMemorySize: the same fact as `max_shared_memory`, under doctor's name.
    pub max_compute_shared_memory: u32,
}

/// A float that compares by its bits, so descriptions can be `Eq` (the inventory is).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(pub f32);

impl PartialEq for Nanos {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Nanos {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaderCores {
    pub core_mask: u64,
    pub core_count: u32,
    pub warps_per_core: u32,
}

/// What doctor's live probe saw through the Vulkan loader.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VulkanProbe {
    /// Why the loader or an instance could not be used.
    pub error: Option<String>,
    pub devices: Vec<DeviceInfo>,
}
