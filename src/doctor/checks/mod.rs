//! The checks, in the order they run and print. Each is a pure function of a [`Context`].

use super::context::Context;
use super::finding::Finding;

mod board;
mod firmware;
mod gpu_driver;
mod kernel;
mod render_node;
mod vulkan_device;
mod vulkan_icd;
mod xdg;

pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub run: fn(&Context) -> Finding,
}

pub const ALL: &[Check] = &[
    Check {
        id: "board",
        title: "which board profile matches the device tree",
        run: board::check,
    },
    Check {
        id: "kernel",
        title: "running kernel: mainline with panthor, or vendor BSP",
        run: kernel::check,
    },
    Check {
        id: "gpu-driver",
        title: "which driver owns the GPU (panthor, kbase, none) and its device-tree status",
        run: gpu_driver::check,
    },
    Check {
        id: "render-node",
        title: "the panthor DRM render node and whether this user can open it",
        run: render_node::check,
    },
    Check {
        id: "firmware",
        title: "CSF firmware file panthor loads (path, header, version, initramfs)",
        run: firmware::check,
    },
    Check {
        id: "vulkan-icd",
        title: "Vulkan ICD manifests for panvk in the loader's search order",
        run: vulkan_icd::check,
    },
    Check {
        id: "xdg-runtime-dir",
        title: "XDG_RUNTIME_DIR set, owned by the user, mode 0700",
        run: xdg::check,
    },
    Check {
        id: "vulkan-device",
        title: "panvk device through the Vulkan loader (live only)",
        run: vulkan_device::check,
    },
];

pub fn by_id(id: &str) -> Option<&'static Check> {
    ALL.iter().find(|c| c.id == id)
}

/// Common early exit: GPU checks mean nothing without an RK3588 profile.
pub(crate) fn needs_profile(ctx: &Context, id: &str) -> Option<Finding> {
    ctx.profile
        .is_none()
        .then(|| Finding::skip(id, "not an RK3588 board (see board)"))
}
