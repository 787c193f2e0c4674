//! The one function that fills a [`DeviceInfo`]: properties, features and limits of a
//! physical device, with the KHR/EXT fallbacks for drivers below Vulkan 1.2/1.3.

use std::ffi::{c_char, CStr};

use ash::vk;

use super::info::{compute_units, CoreCounts, DeviceInfo, Nanos, ShaderCores};

/// What opening the device needs to know beyond the description: which features come from
/// extensions rather than the core API.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Enables {
    /// The API version both the instance and the device support.
    pub api: u32,
    pub int_dot_ext: bool,
    pub f16_ext: bool,
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

/// Describe device `pd` (number `index`) of an instance created for `instance_api` (at least
/// 1.1, so the `*2` queries exist).
pub(super) fn describe(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    index: usize,
    instance_api: u32,
) -> (DeviceInfo, Enables) {
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
        let has_sm_builtins_ext = has_ext(&exts, ash::nv::shader_sm_builtins::NAME);
        let has_amd_cores_ext = has_ext(&exts, ash::amd::shader_core_properties::NAME);

        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        let mut dot_props = vk::PhysicalDeviceShaderIntegerDotProductProperties::default();
        let mut cores = vk::PhysicalDeviceShaderCoreBuiltinsPropertiesARM::default();
        let mut sms = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
        let mut amd_cores = vk::PhysicalDeviceShaderCorePropertiesAMD::default();
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
        if has_sm_builtins_ext {
            props2 = props2.push_next(&mut sms);
        }
        if has_amd_cores_ext {
            props2 = props2.push_next(&mut amd_cores);
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
        let shader_float16 = f16_ok && f16.shader_float16 == vk::TRUE;
        let int8_dot = int_dot_ok && dot.shader_integer_dot_product == vk::TRUE;

        let counts = CoreCounts {
            nv_sms: has_sm_builtins_ext.then_some(sms.shader_sm_count),
            amd: has_amd_cores_ext.then_some((
                amd_cores.shader_engine_count,
                amd_cores.shader_arrays_per_engine_count,
                amd_cores.compute_units_per_shader_array,
            )),
            arm_cores: has_core_builtins_ext.then_some(cores.shader_core_count),
        };

        let info = DeviceInfo {
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
            fp16: shader_float16 && storage16.storage_buffer16_bit_access == vk::TRUE,
            int8_dot,
            int8_dot_accelerated: int_dot_ok
                && dot_props.integer_dot_product4x8_bit_packed_signed_accelerated == vk::TRUE,
            float_atomic_add: has_atomic_float_ext
                && atomic_float.shader_buffer_float32_atomic_add == vk::TRUE,
            subgroup_size: subgroup.subgroup_size,
            max_shared_memory: props.limits.max_compute_shared_memory_size,
            max_workgroup_invocations: props.limits.max_compute_work_group_invocations,
            max_storage_buffer_range: u64::from(props.limits.max_storage_buffer_range),
            timestamp_period_ns: timestamps.then_some(Nanos(props.limits.timestamp_period)),
            pipeline_statistics,
            shader_cores: has_core_builtins_ext.then_some(ShaderCores {
                core_mask: cores.shader_core_mask,
                core_count: cores.shader_core_count,
                warps_per_core: cores.shader_warps_per_core,
            }),
            compute_units: compute_units(&counts),
            shader_float16,
            shader_int8: f16_ok && f16.shader_int8 == vk::TRUE,
            integer_dot_product: int8_dot,
            max_compute_shared_memory: props.limits.max_compute_shared_memory_size,
        };
        let enables = Enables {
            api,
            int_dot_ext: has_int_dot_ext,
            f16_ext: has_f16_ext,
        };
        (info, enables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
