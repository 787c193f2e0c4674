//! Loading Vulkan, listing devices, choosing one and opening it.
//!
//! The loader is dlopened at run time (`ash` feature `loaded`), so a machine without Vulkan gets
//! a clear NO_VULKAN error instead of a binary that does not start. `RVL_VULKAN_LIBRARY` names
//! another loader file (a vendored `libvulkan.so.1`, or a bogus path in tests).

use std::ffi::{c_char, CStr};

use ash::vk;
use serde::Serialize;

use super::error::{Call, VkError};
use crate::{error, exit};

/// What the bench needs to know about a physical device, as printed and saved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceInfo {
    pub index: usize,
    pub name: String,
    /// `cpu`, `discrete-gpu`, `integrated-gpu`, `virtual-gpu` or `other`.
    pub kind: String,
    pub driver_name: String,
    pub driver_info: String,
    /// `VkDriverId` name, e.g. `MESA_PANVK`, `MESA_LLVMPIPE`, `NVIDIA_PROPRIETARY`.
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
    pub timestamp_period_ns: Option<f32>,
    /// VK_KHR_pipeline_executable_properties: registers/spills per kernel can be read.
    pub pipeline_statistics: bool,
    /// VK_ARM_shader_core_builtins: (core mask, core count, warps per core), when exposed.
    pub shader_cores: Option<ShaderCores>,
    #[serde(skip)]
    pub(crate) has_int_dot_ext: bool,
    #[serde(skip)]
    pub(crate) has_f16_ext: bool,
    #[serde(skip)]
    pub(crate) has_core_builtins_ext: bool,
    #[serde(skip)]
    pub(crate) api_raw: u32,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct ShaderCores {
    pub core_mask: u64,
    pub core_count: u32,
    pub warps_per_core: u32,
}

impl DeviceInfo {
    pub fn is_panvk(&self) -> bool {
        self.driver_id == "MESA_PANVK"
    }
    pub fn is_cpu(&self) -> bool {
        self.kind == "cpu"
    }
}

/// Choose a device: an explicit `--device` (index or case-insensitive part of the name) wins;
/// otherwise panvk, then a discrete, integrated or virtual GPU, and a CPU device last.
pub fn pick_device(devices: &[DeviceInfo], wanted: Option<&str>) -> Result<usize, String> {
    if devices.is_empty() {
        return Err("no Vulkan device found".into());
    }
    if let Some(want) = wanted {
        if let Ok(i) = want.parse::<usize>() {
            return if i < devices.len() {
                Ok(i)
            } else {
                Err(format!(
                    "--device {i}: there are only {} Vulkan devices (0..{})",
                    devices.len(),
                    devices.len() - 1
                ))
            };
        }
        let needle = want.to_lowercase();
        let hits: Vec<usize> = devices
            .iter()
            .filter(|d| d.name.to_lowercase().contains(&needle))
            .map(|d| d.index)
            .collect();
        return match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!(
                "--device {want:?} matches no device; devices: {}",
                list_names(devices)
            )),
            _ => Err(format!(
                "--device {want:?} matches several devices ({}); use the index",
                hits.iter()
                    .map(|i| format!("{i}: {}", devices[*i].name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
    let rank = |d: &DeviceInfo| match (d.is_panvk(), d.kind.as_str()) {
        (true, _) => 0,
        (_, "discrete-gpu") => 1,
        (_, "integrated-gpu") => 2,
        (_, "virtual-gpu") => 3,
        (_, "cpu") => 5,
        _ => 4,
    };
    Ok(devices
        .iter()
        .min_by_key(|d| (rank(d), d.index))
        .map(|d| d.index)
        .unwrap_or(0))
}

fn list_names(devices: &[DeviceInfo]) -> String {
    devices
        .iter()
        .map(|d| format!("{}: {}", d.index, d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The Vulkan loader and an instance.
pub struct Instance {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub api_version: u32,
    physical: Vec<vk::PhysicalDevice>,
    pub devices: Vec<DeviceInfo>,
}

impl Instance {
    /// Load libvulkan, create an instance and describe every device. Every way this can fail
    /// maps to exit status NO_VULKAN with a message saying what to install or check.
    pub fn load() -> anyhow::Result<Instance> {
        let entry = load_entry()?;
        // SAFETY: plain Vulkan calls on a loader we just opened; every pointer lives until the call returns.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .ok()
            .flatten()
            .unwrap_or(vk::API_VERSION_1_0);
        if loader_version < vk::API_VERSION_1_1 {
            return Err(error::fail(
                exit::NO_VULKAN,
                format!(
                    "the Vulkan loader supports only API {}; rvl needs 1.1 or newer",
                    version_string(loader_version)
                ),
            ));
        }
        let api_version = loader_version.min(vk::API_VERSION_1_3);
        let app = vk::ApplicationInfo::default()
            .application_name(c"rvl smoke-bench")
            .api_version(api_version);
        let create = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: create-info structs are valid for the duration of the call.
        let instance = unsafe { entry.create_instance(&create, None) }.map_err(|r| {
            error::fail(
                exit::NO_VULKAN,
                format!(
                    "no Vulkan driver could be used: vkCreateInstance returned {} \
                     (is an ICD installed, e.g. mesa-vulkan-drivers? check VK_DRIVER_FILES / VK_ICD_FILENAMES)",
                    super::error::result_name(r)
                ),
            )
        })?;
        // SAFETY: instance is valid.
        let physical = match unsafe { instance.enumerate_physical_devices() } {
            Ok(p) => p,
            Err(r) => {
                // SAFETY: no child objects exist yet.
                unsafe { instance.destroy_instance(None) };
                return Err(error::fail(
                    exit::NO_VULKAN,
                    format!(
                        "vkEnumeratePhysicalDevices returned {}: the Vulkan driver failed to start",
                        super::error::result_name(r)
                    ),
                ));
            }
        };
        if physical.is_empty() {
            // SAFETY: no child objects exist yet.
            unsafe { instance.destroy_instance(None) };
            return Err(error::fail(
                exit::NO_VULKAN,
                "the Vulkan loader found no device (no ICD installed or none loaded; \
                 VK_LOADER_DEBUG=all explains why)",
            ));
        }
        let devices = physical
            .iter()
            .enumerate()
            .map(|(i, pd)| describe(&instance, *pd, i, api_version))
            .collect();
        Ok(Instance {
            entry,
            instance,
            api_version,
            physical,
            devices,
        })
    }

    pub fn physical(&self, index: usize) -> vk::PhysicalDevice {
        self.physical[index]
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: devices created from this instance are dropped before it (Gpu holds an Rc-free
        // borrow-by-construction: Gpu is always dropped first by the bench).
        unsafe { self.instance.destroy_instance(None) };
    }
}

fn load_entry() -> anyhow::Result<ash::Entry> {
    let custom = std::env::var_os("RVL_VULKAN_LIBRARY");
    // SAFETY: loading the Vulkan loader library runs its initialisers; that is the intended use.
    let loaded = unsafe {
        match &custom {
            Some(path) => ash::Entry::load_from(path),
            None => ash::Entry::load(),
        }
    };
    loaded.map_err(|e| {
        let which = custom
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| "libvulkan.so.1".into());
        error::fail(
            exit::NO_VULKAN,
            format!(
                "the Vulkan loader ({which}) could not be loaded: {e} \
                 (install it: apt-get install libvulkan1, plus a driver such as mesa-vulkan-drivers)"
            ),
        )
    })
}

pub fn version_string(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

/// Driver versions are vendor-encoded; NVIDIA uses 10.8.8.6 bits, everyone else the API layout.
fn driver_version_string(vendor_id: u32, v: u32) -> String {
    if vendor_id == 0x10de {
        format!(
            "{}.{}.{}",
            (v >> 22) & 0x3ff,
            (v >> 14) & 0xff,
            (v >> 6) & 0xff
        )
    } else {
        version_string(v)
    }
}

fn cstr(raw: &[c_char]) -> String {
    // SAFETY: Vulkan fills these fixed arrays with NUL-terminated strings.
    unsafe { CStr::from_ptr(raw.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn kind_name(t: vk::PhysicalDeviceType) -> &'static str {
    match t {
        vk::PhysicalDeviceType::CPU => "cpu",
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete-gpu",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated-gpu",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual-gpu",
        _ => "other",
    }
}

fn has_ext(exts: &[vk::ExtensionProperties], name: &CStr) -> bool {
    exts.iter()
        .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
}

fn describe(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    index: usize,
    instance_api: u32,
) -> DeviceInfo {
    // SAFETY: pd comes from this instance; the p_next chains below only hold structs valid for
    // the device's API version or advertised extensions.
    unsafe {
        let exts = instance
            .enumerate_device_extension_properties(pd)
            .unwrap_or_default();
        let base = instance.get_physical_device_properties(pd);
        let api = base.api_version.min(instance_api);
        let has_driver_props =
            api >= vk::API_VERSION_1_2 || has_ext(&exts, ash::khr::driver_properties::NAME);
        let has_int_dot_ext = has_ext(&exts, ash::khr::shader_integer_dot_product::NAME);
        let int_dot_ok = api >= vk::API_VERSION_1_3 || has_int_dot_ext;
        let has_f16_ext = has_ext(&exts, ash::khr::shader_float16_int8::NAME);
        let f16_ok = api >= vk::API_VERSION_1_2 || has_f16_ext;
        let has_core_builtins_ext = has_ext(&exts, ash::arm::shader_core_builtins::NAME);
        let pipeline_statistics = has_ext(&exts, ash::khr::pipeline_executable_properties::NAME);
        let has_atomic_float_ext = has_ext(&exts, ash::ext::shader_atomic_float::NAME);

        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        let mut dot_props = vk::PhysicalDeviceShaderIntegerDotProductProperties::default();
        let mut cores = vk::PhysicalDeviceShaderCoreBuiltinsPropertiesARM::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup);
        if has_driver_props {
            props2 = props2.push_next(&mut driver);
        }
        if int_dot_ok {
            props2 = props2.push_next(&mut dot_props);
        }
        if has_core_builtins_ext {
            props2 = props2.push_next(&mut cores);
        }
        instance.get_physical_device_properties2(pd, &mut props2);
        let props = props2.properties;

        let mut storage16 = vk::PhysicalDevice16BitStorageFeatures::default();
        let mut f16 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
        let mut dot = vk::PhysicalDeviceShaderIntegerDotProductFeatures::default();
        let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        let mut feats2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut storage16);
        if f16_ok {
            feats2 = feats2.push_next(&mut f16);
        }
        if int_dot_ok {
            feats2 = feats2.push_next(&mut dot);
        }
        if has_atomic_float_ext {
            feats2 = feats2.push_next(&mut atomic_float);
        }
        instance.get_physical_device_features2(pd, &mut feats2);

        let queues = instance.get_physical_device_queue_family_properties(pd);
        let compute_ts = queues
            .iter()
            .find(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .is_some_and(|q| q.timestamp_valid_bits > 0);
        let timestamps = compute_ts && props.limits.timestamp_compute_and_graphics == vk::TRUE;

        DeviceInfo {
            index,
            name: cstr(&props.device_name),
            kind: kind_name(props.device_type).into(),
            driver_name: if has_driver_props {
                cstr(&driver.driver_name)
            } else {
                String::new()
            },
            driver_info: if has_driver_props {
                cstr(&driver.driver_info)
            } else {
                String::new()
            },
            driver_id: if has_driver_props {
                format!("{:?}", driver.driver_id)
            } else {
                "unknown".into()
            },
            driver_version: driver_version_string(props.vendor_id, props.driver_version),
            api_version: version_string(props.api_version),
            vendor_id: props.vendor_id,
            device_id: props.device_id,
            fp16: f16_ok
                && f16.shader_float16 == vk::TRUE
                && storage16.storage_buffer16_bit_access == vk::TRUE,
            int8_dot: int_dot_ok && dot.shader_integer_dot_product == vk::TRUE,
            int8_dot_accelerated: int_dot_ok
                && dot_props.integer_dot_product4x8_bit_packed_signed_accelerated == vk::TRUE,
            float_atomic_add: has_atomic_float_ext
                && atomic_float.shader_buffer_float32_atomic_add == vk::TRUE,
            subgroup_size: subgroup.subgroup_size,
            max_shared_memory: props.limits.max_compute_shared_memory_size,
            max_workgroup_invocations: props.limits.max_compute_work_group_invocations,
            max_storage_buffer_range: u64::from(props.limits.max_storage_buffer_range),
            timestamp_period_ns: timestamps.then_some(props.limits.timestamp_period),
            pipeline_statistics,
            shader_cores: has_core_builtins_ext.then_some(ShaderCores {
                core_mask: cores.shader_core_mask,
                core_count: cores.shader_core_count,
                warps_per_core: cores.shader_warps_per_core,
            }),
            has_int_dot_ext,
            has_f16_ext,
            has_core_builtins_ext,
            api_raw: api,
        }
    }
}

/// An opened device with one compute queue.
pub struct Gpu {
    pub info: DeviceInfo,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub queue_family: u32,
    pub memory: vk::PhysicalDeviceMemoryProperties,
    pub exec_props: Option<ash::khr::pipeline_executable_properties::Device>,
    pub command_pool: vk::CommandPool,
    /// Map device memory directly (UMA / CPU devices) instead of staging through host memory.
    pub direct_map: bool,
}

impl Gpu {
    pub fn open(inst: &Instance, index: usize) -> Result<Gpu, VkError> {
        let info = inst.devices[index].clone();
        let pd = inst.physical(index);
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
            if info.int8_dot && info.api_raw < vk::API_VERSION_1_3 && info.has_int_dot_ext {
                ext_names.push(ash::khr::shader_integer_dot_product::NAME.as_ptr());
            }
            if info.fp16 && info.api_raw < vk::API_VERSION_1_2 && info.has_f16_ext {
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
                queue_family,
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

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub fn dev(index: usize, name: &str, kind: &str, driver_id: &str) -> DeviceInfo {
        DeviceInfo {
            index,
            name: name.into(),
            kind: kind.into(),
            driver_name: String::new(),
            driver_info: String::new(),
            driver_id: driver_id.into(),
            driver_version: "1.0.0".into(),
            api_version: "1.3.0".into(),
            vendor_id: 0,
            device_id: 0,
            fp16: true,
            int8_dot: false,
            int8_dot_accelerated: false,
            float_atomic_add: false,
            subgroup_size: 16,
            max_shared_memory: 32768,
            max_workgroup_invocations: 1024,
            max_storage_buffer_range: 1 << 27,
            timestamp_period_ns: Some(1.0),
            pipeline_statistics: false,
            shader_cores: None,
            has_int_dot_ext: false,
            has_f16_ext: false,
            has_core_builtins_ext: false,
            api_raw: vk::API_VERSION_1_3,
        }
    }

    pub fn device(name: &str, kind: &str, driver_id: &str) -> DeviceInfo {
        dev(0, name, kind, driver_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tests_support::dev;

    #[test]
    fn prefers_panvk_then_gpu_over_cpu() {
        let list = vec![
            dev(
                0,
                "llvmpipe (LLVM 15.0.6, 256 bits)",
                "cpu",
                "MESA_LLVMPIPE",
            ),
            dev(1, "NVIDIA H200", "discrete-gpu", "NVIDIA_PROPRIETARY"),
        ];
        assert_eq!(pick_device(&list, None), Ok(1));
        let list = vec![
            dev(0, "llvmpipe", "cpu", "MESA_LLVMPIPE"),
            dev(1, "Some iGPU", "integrated-gpu", "OTHER"),
            dev(2, "Mali-G610 (Panfrost)", "integrated-gpu", "MESA_PANVK"),
        ];
        assert_eq!(pick_device(&list, None), Ok(2));
        assert_eq!(pick_device(&list[..1], None), Ok(0));
    }

    #[test]
    fn explicit_choice_by_index_or_name() {
        let list = vec![
            dev(0, "llvmpipe", "cpu", "MESA_LLVMPIPE"),
            dev(1, "Mali-G610", "integrated-gpu", "MESA_PANVK"),
        ];
        assert_eq!(pick_device(&list, Some("0")), Ok(0));
        assert_eq!(pick_device(&list, Some("LLVM")), Ok(0));
        let err = pick_device(&list, Some("7")).unwrap_err();
        assert!(err.contains("only 2 Vulkan devices"), "{err}");
        let err = pick_device(&list, Some("radeon")).unwrap_err();
        assert!(
            err.contains("matches no device") && err.contains("1: Mali-G610"),
            "{err}"
        );
        let err = pick_device(&list, Some("l")).unwrap_err();
        assert!(err.contains("several"), "{err}");
        assert!(pick_device(&[], None).is_err());
    }

    #[test]
    fn nvidia_driver_versions_are_decoded() {
        // 580.159.4 encoded the NVIDIA way.
        let v = (580 << 22) | (159 << 14) | (4 << 6);
        assert_eq!(driver_version_string(0x10de, v), "580.159.4");
        assert_eq!(
            driver_version_string(0x10005, vk::make_api_version(0, 0, 0, 1)),
            "0.0.1"
        );
    }
}
