//! What rvl observed on a system: plain data, gathered once by [`crate::host::gather`], read by
//! the pure checks in [`crate::doctor`], embedded in `rvl doctor --json`. Paths are in-root.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::firmware::FirmwareFacts;
use crate::host::devicetree::DeviceTree;
use crate::host::env::Env;
use crate::host::live::LiveFacts;
use crate::host::sysfs::{PlatformGpu, RenderNode};
use crate::icd::IcdFacts;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// True when the root is the running system ("/"), so live probes were possible.
    pub live: bool,
    /// None when the system has no device tree (x86 PCs, most containers).
    pub devicetree: Option<DeviceTree>,
    pub kernel: KernelFacts,
    pub gpu: GpuFacts,
    pub render_nodes: Vec<RenderNode>,
    pub firmware: FirmwareFacts,
    pub vulkan_icd: IcdFacts,
    pub env: Env,
    /// Facts only a running system can give (ioctls, access checks, Vulkan); empty otherwise.
    pub live_facts: LiveFacts,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// Running release from proc/sys/kernel/osrelease.
    pub release: Option<String>,
    /// The kernel configuration, when readable.
    pub config: Option<KernelConfigFacts>,
    /// GPU-related modules present in /sys/module (loaded or built in with a sysfs entry).
    pub modules: Vec<String>,
    /// kbase's MODULE_VERSION, which exists even when kbase is built in.
    pub kbase_version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelConfigFacts {
    /// Where it was read ("/proc/config.gz" or "/boot/config-<release>").
    pub source: String,
    /// The options the checks look at (the full config has thousands).
    pub options: BTreeMap<String, String>,
}

impl KernelConfigFacts {
    /// Value of an option, "n" when unset.
    pub fn get(&self, name: &str) -> &str {
        self.options.get(name).map(String::as_str).unwrap_or("n")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuFacts {
    /// Platform devices with a Mali compatible.
    pub devices: Vec<PlatformGpu>,
    /// kbase's character device.
    pub dev_mali0: bool,
}

impl GpuFacts {
    /// The device panthor drives or should drive: a panthor-capable one, bound ones first.
    pub fn panthor_device(&self) -> Option<&PlatformGpu> {
        let capable = || self.devices.iter().filter(|d| d.panthor_capable());
        capable()
            .find(|d| d.driver.as_deref() == Some("panthor"))
            .or_else(|| capable().next())
    }

    /// A device kbase ("mali") has bound.
    pub fn kbase_device(&self) -> Option<&PlatformGpu> {
        self.devices
            .iter()
            .find(|d| d.driver.as_deref() == Some("mali"))
    }
}
