//! Loading Vulkan and listing its devices: the one loader doctor and smoke-bench share.
//!
//! The loader is dlopened at run time (`ash` feature `loaded`), so a machine without Vulkan gets
//! a clear NO_VULKAN error instead of a binary that does not start. The caller may name another
//! loader file (`RVL_VULKAN_LIBRARY`, read once into [`crate::settings::RvlVars`]): a vendored
//! `libvulkan.so.1`, or a bogus path in tests.

use std::ffi::CStr;
use std::path::Path;

use ash::vk;

use super::describe::{describe, version_string, Enables};
use super::error::result_name;
use super::info::{pick_device, DeviceInfo};
use crate::error::Error;

/// How to load Vulkan.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions<'a> {
    /// Load this libvulkan instead of the system's `libvulkan.so.1`.
    pub library: Option<&'a Path>,
    /// VkApplicationInfo's name ("rvl doctor", "rvl smoke-bench").
    pub app: &'a CStr,
}

/// The Vulkan loader, an instance, and a description of every device it offers.
pub struct Instance {
    /// The dlopened loader; it must stay loaded while the instance lives.
    _entry: ash::Entry,
    pub(super) instance: ash::Instance,
    pub(super) physical: Vec<(vk::PhysicalDevice, Enables)>,
    pub devices: Vec<DeviceInfo>,
}

impl Instance {
    /// Load libvulkan, create an instance and describe every device. Every way this can fail
    /// is [`Error::NoVulkan`] with a message saying what to install or check. No device at all
    /// is not an error here (doctor reports it); [`Instance::choose`] makes it one.
    pub fn load(opts: &LoadOptions) -> Result<Instance, Error> {
        let entry = load_entry(opts.library)?;
        // SAFETY: plain Vulkan calls on a loader we just opened; every pointer lives until the call returns.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .ok()
            .flatten()
            .unwrap_or(vk::API_VERSION_1_0);
        if loader_version < vk::API_VERSION_1_1 {
            return Err(Error::NoVulkan(format!(
                "the Vulkan loader supports only API {}; rvl needs 1.1 or newer",
                version_string(loader_version)
            )));
        }
        let api_version = loader_version.min(vk::API_VERSION_1_3);
        let app = vk::ApplicationInfo::default()
            .application_name(opts.app)
            .api_version(api_version);
        let create = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: create-info structs are valid for the duration of the call.
        let instance = unsafe { entry.create_instance(&create, None) }.map_err(|r| {
            Error::NoVulkan(format!(
                "no Vulkan driver could be used: vkCreateInstance returned {} \
                 (is an ICD installed, e.g. mesa-vulkan-drivers? check VK_DRIVER_FILES / VK_ICD_FILENAMES)",
                result_name(r)
            ))
        })?;
        // SAFETY: instance is valid.
        let handles = match unsafe { instance.enumerate_physical_devices() } {
            Ok(p) => p,
            Err(r) => {
                // SAFETY: no child objects exist yet.
                unsafe { instance.destroy_instance(None) };
                return Err(Error::NoVulkan(format!(
                    "vkEnumeratePhysicalDevices returned {}: the Vulkan driver failed to start",
                    result_name(r)
                )));
            }
        };
        let (devices, enables): (Vec<_>, Vec<_>) = handles
            .iter()
            .enumerate()
            .map(|(i, pd)| describe(&instance, *pd, i, api_version))
            .unzip();
        Ok(Instance {
            _entry: entry,
            instance,
            physical: handles.into_iter().zip(enables).collect(),
            devices,
        })
    }

    /// The device to use: `--device` when given (not matching is a usage error), else the best
    /// one by [`pick_device`]; no device at all is NO_VULKAN.
    pub fn choose(&self, wanted: Option<&str>) -> Result<usize, Error> {
        if self.devices.is_empty() {
            return Err(Error::NoVulkan(
                "the Vulkan loader found no device (no ICD installed or none loaded; \
                 VK_LOADER_DEBUG=all explains why)"
                    .into(),
            ));
        }
        pick_device(&self.devices, wanted).map_err(|e| match wanted {
            Some(_) => Error::Usage(e),
            None => Error::NoVulkan(e),
        })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: devices created from this instance are dropped before it (the bench and the
        // tests drop their Gpu first).
        unsafe { self.instance.destroy_instance(None) };
    }
}

fn load_entry(library: Option<&Path>) -> Result<ash::Entry, Error> {
    // SAFETY: loading the Vulkan loader library runs its initialisers; that is the intended use.
    let loaded = unsafe {
        match library {
            Some(path) => ash::Entry::load_from(path),
            None => ash::Entry::load(),
        }
    };
    loaded.map_err(|e| {
        let which = library
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| "libvulkan.so.1".into());
        Error::NoVulkan(format!(
            "the Vulkan loader ({which}) could not be loaded: {e} \
             (install it: apt-get install libvulkan1, plus a driver such as mesa-vulkan-drivers)"
        ))
    })
}
