//! What rvl observed on a system: plain data, gathered once by [`crate::host::gather`], read by
//! the pure checks in [`crate::doctor`] and setup's planner, embedded in `rvl doctor --json`.
//! Paths are in-root. No IO here.
//!
//! The bottom layer of the crate: this module and its submodules import nothing from `crate::`
//! but each other, so any module may use them and none of them can close a cycle (ripgrep keeps
//! its crates one-way the same way). The data types the inventory embeds live in the submodules,
//! each named after the module that gives the data its meaning; that module re-exports them at
//! their old paths (`crate::icd::IcdFacts` is [`icd::IcdFacts`]) and keeps the methods that
//! need its knowledge, in an `impl` block of its own (as [`crate::host::env`] reads the process
//! environment into [`Env`]):
//!
//! | submodule | types | re-exported by |
//! |---|---|---|
//! | [`icd`] | [`IcdFacts`], its manifests and search path | [`crate::icd`] |
//! | [`vulkan`] | [`VulkanProbe`], [`DeviceInfo`](vulkan::DeviceInfo) | [`crate::vulkan::info`] |
//! | [`firmware`] | [`FirmwareFacts`], the CSF header | [`crate::firmware`] |
//! | [`boot`] | [`BootLayout`], [`UbootMenu`] | [`crate::profile`], [`crate::bootcfg::ubootmenu`] |
//! | [`devfreq`] | [`Devfreq`] | [`crate::host::devfreq`] |
//!
//! [`Env`] and [`DeviceTree`] are re-exported by [`crate::host::env`] and
//! [`crate::host::devicetree`]. Serde attributes and field order are the `--json` contract
//! (docs/json.md): moving a type here changes neither.

pub mod boot;
pub mod devfreq;
pub mod firmware;
pub mod icd;
pub mod vulkan;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use boot::{BootLayout, UbootMenu};
use devfreq::Devfreq;
use firmware::FirmwareFacts;
use icd::IcdFacts;
use vulkan::VulkanProbe;

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
    pub boot: BootFacts,
    pub env: Env,
    /// rvl's llama.cpp builds and any stock llama-server.
    #[serde(default)]
    pub llama: LlamaFacts,
    /// rvl's Mesa (panvk) builds.
    #[serde(default)]
    pub mesa: MesaFacts,
    /// The image's `/etc/os-release`: which distribution and release (it decides what setup can
    /// build there). None when the file is missing or unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<OsFacts>,
    /// Facts only a running system can give (ioctls, access checks, Vulkan); empty otherwise.
    pub live_facts: LiveFacts,
}

/// The fields of os-release(5) rvl reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsFacts {
    /// `ID`, e.g. `debian`, `ubuntu`.
    pub id: String,
    /// `VERSION_ID`, e.g. `12`, `24.04`; empty for rolling releases.
    pub version_id: String,
    /// `PRETTY_NAME`, for messages.
    pub pretty_name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// Running release from proc/sys/kernel/osrelease.
    pub release: Option<String>,
    /// Why osrelease is there but could not be read (permission, size, file type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_error: Option<String>,
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
    /// devfreq nodes of these devices (clock scaling; panthor registers one per GPU).
    #[serde(default)]
    pub devfreq: Vec<Devfreq>,
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

/// How the next kernel is chosen on this system, as far as files say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootFacts {
    /// `/boot/extlinux/extlinux.conf`, when present.
    pub extlinux: Option<ExtlinuxFacts>,
    /// Why extlinux.conf is there but could not be read (permission, size, file type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extlinux_error: Option<String>,
    /// Debian u-boot-menu, when installed (it regenerates extlinux.conf).
    pub uboot_menu: Option<UbootMenuFacts>,
    /// Armbian's boot.scr setup (`/boot/armbianEnv.txt` + the `/boot/Image` link).
    pub armbian: Option<ArmbianFacts>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtlinuxFacts {
    pub path: String,
    /// The `default` line's label.
    pub default_label: Option<String>,
    /// The entry U-Boot boots without intervention.
    pub default_entry: Option<BootEntry>,
    pub entries: Vec<BootEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootEntry {
    pub label: String,
    pub linux: Option<String>,
    /// Release taken from the `linux` path (`vmlinuz-<release>`).
    pub release: Option<String>,
    pub line: usize,
    /// The entry's `fdtoverlays` line: overlays U-Boot applies before booting it.
    #[serde(default)]
    pub fdtoverlays: Option<String>,
    /// What the entry names that is not in the root, as `keyword path` (`initrd /boot/x`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UbootMenuFacts {
    /// The label u-boot-update writes as `default` next time it runs.
    pub default_label: String,
    /// `file:line` of the `U_BOOT_DEFAULT` assignment, none when u-boot-menu's own `l0` applies.
    pub default_from: Option<String>,
    /// False when the value comes from a command or variable, or sits inside an `if`.
    pub default_known: bool,
    /// Kernels in /boot, highest first: `l0`, `l1`, … in u-boot-update's numbering.
    pub kernels: Vec<String>,
    /// `U_BOOT_FDT_OVERLAYS`, when set.
    pub fdt_overlays: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmbianFacts {
    pub overlays: Vec<String>,
    /// `user_overlays=`: `/boot/overlay-user/NAME.dtbo` files boot.scr applies.
    #[serde(default)]
    pub user_overlays: Vec<String>,
    pub overlay_prefix: Option<String>,
    pub fdtfile: Option<String>,
    /// Target of the `/boot/Image` link, and the release it names.
    pub image: Option<String>,
    pub image_release: Option<String>,
    /// `/boot/Image` is a link to a file that is not there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub image_missing: bool,
}

/// Facts only the running system gives (see [`crate::host::live`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveFacts {
    /// Present only when the live probes ran.
    pub user: Option<UserFacts>,
    pub render: Vec<RenderAccess>,
    pub xdg_runtime_dir: Option<XdgFacts>,
    /// Present only when the Vulkan probe ran.
    pub vulkan: Option<VulkanProbe>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFacts {
    /// The user the checks are about: this process's, or under sudo the invoking user's.
    pub euid: u32,
    /// Effective and supplementary group ids.
    pub groups: Vec<u32>,
    /// Under `sudo`, the invoking user (`SUDO_USER`): the one who will run llama.cpp. Root's
    /// own `access(2)` always passes, so the render-node check judges this user instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sudo_user: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderAccess {
    /// "/dev/dri/renderD128".
    pub dev_path: String,
    /// Driver name DRM_IOCTL_VERSION returned.
    pub ioctl_driver: Option<String>,
    pub ioctl_error: Option<String>,
    pub mode: Option<u32>,
    pub gid: Option<u32>,
    /// Group name of `gid` from /etc/group.
    pub group: Option<String>,
    /// Owner of the node.
    #[serde(default)]
    pub uid: Option<u32>,
    /// This user may open the node read/write: `access(R_OK | W_OK)`, or under sudo the
    /// node's mode bits judged for the invoking user.
    pub read_write: bool,
    pub access_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XdgFacts {
    pub path: String,
    pub exists: bool,
    pub is_dir: bool,
    pub owner: Option<u32>,
    pub mode: Option<u32>,
}

/// The device tree as the kernel exposes it (`/proc/device-tree`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceTree {
    /// In-root directory the tree was read from.
    pub base: String,
    pub model: Option<String>,
    pub compatible: Vec<String>,
    /// Every top-level node that is (or could be) the Mali GPU, sorted by path.
    pub gpu_nodes: Vec<DtNode>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DtNode {
    /// Node path as the kernel names it, e.g. "/gpu@fb000000".
    pub path: String,
    pub compatible: Vec<String>,
    /// The `status` property; absent means enabled.
    pub status: Option<String>,
}

impl DtNode {
    pub fn enabled(&self) -> bool {
        matches!(self.status.as_deref(), None | Some("okay") | Some("ok"))
    }
}

/// The environment variables the checks depend on, read once. Checks get this snapshot, never
/// the process environment, so tests can hand them any environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A variable's value; an empty value counts as unset (as the Vulkan loader and rustup do).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformGpu {
    /// Device name, e.g. "fb000000.gpu".
    pub name: String,
    /// In-root sysfs path the device link resolves to.
    pub path: String,
    pub compatible: Vec<String>,
    /// Name of the bound driver ("panthor", "mali"), none when unbound.
    pub driver: Option<String>,
    /// `gpuinfo` as kbase exposes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpuinfo: Option<String>,
}

impl PlatformGpu {
    /// True when panthor can drive this node (its binding, not kbase's).
    pub fn panthor_capable(&self) -> bool {
        self.compatible
            .iter()
            .any(|c| c == "arm,mali-valhall-csf" || c == "rockchip,rk3588-mali")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderNode {
    /// "renderD128".
    pub name: String,
    /// In-root sysfs path of the device behind it.
    pub device: Option<String>,
    /// Driver bound to that device.
    pub driver: Option<String>,
    /// "/dev/dri/renderD128".
    pub dev_path: String,
    pub dev_exists: bool,
}

/// What setup's planner reads, gathered by [`crate::host::gather::setup_facts`].
///
/// Not the doctor's [`Inventory`] on purpose: the planner needs the whole text of every file it
/// may edit (to diff and rewrite it), link targets as written, the hash of the raw file at the
/// path it installs to, and the configs of the *installed* kernels; the inventory keeps parsed
/// summaries of the running system. Both are read by the same `host` readers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SetupFacts {
    pub running_kernel: Option<String>,
    /// Releases with an image in /boot, highest first.
    pub installed_kernels: Vec<String>,
    /// How this image chooses its kernel; None when setup cannot tell.
    pub layout: Option<BootLayout>,
    /// u-boot-menu's merged settings, when it is installed.
    pub menu: Option<UbootMenu>,
    /// Text of every file the planner may read or edit (None: absent or unreadable).
    pub files: BTreeMap<String, Option<String>>,
    /// Targets of the links the planner may repoint (None: not a link / absent).
    pub links: BTreeMap<String, Option<String>>,
    /// sha256 of files the planner compares by hash (firmware).
    pub hashes: BTreeMap<String, Option<String>>,
    /// Paths whose existence matters (install prefixes, kernel artefacts, overlays).
    pub present: BTreeMap<String, bool>,
    /// `CONFIG_DRM_PANTHOR` per installed kernel (`y`, `m`, `n`; None: no config or not in it).
    pub panthor_config: BTreeMap<String, Option<String>>,
    /// The user who ran `sudo rvl setup` (`SUDO_USER`), for the `access` step.
    pub invoking_user: Option<String>,
    /// `apt-cache policy` of the mesa step's build dependencies (`crate::builddeps`), when the
    /// image's apt could be asked (live, or a stand-in under `--root`).
    pub apt_policy: Option<String>,
}

impl SetupFacts {
    pub fn file(&self, path: &str) -> Option<&str> {
        self.files.get(path).and_then(|o| o.as_deref())
    }

    pub fn link(&self, path: &str) -> Option<&str> {
        self.links.get(path).and_then(|o| o.as_deref())
    }

    pub fn is_present(&self, path: &str) -> bool {
        self.present.get(path).copied().unwrap_or(false)
    }

    pub fn panthor_builtin(&self, release: &str) -> bool {
        self.panthor_config
            .get(release)
            .is_some_and(|v| v.as_deref() == Some("y"))
    }
}

/// llama.cpp on the system: rvl's builds under `/opt/rvl/llama.cpp-*` and any other
/// `llama-server` on PATH (gathered by [`crate::host::llama`], judged by doctor's `llama-cpp`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlamaFacts {
    /// rvl's prefixes, newest version first (complete or not: the stamp says).
    pub installs: Vec<LlamaInstall>,
    /// `llama-server` executables outside rvl's prefixes (PATH, /usr/bin, /usr/local/bin).
    pub stock: Vec<String>,
    /// rvl's Vulkan ICD manifest (setup's `icd` step) is installed.
    pub rvl_icd: bool,
    /// `/run/user/UID` for this user when XDG_RUNTIME_DIR is unset and it exists (live only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdg_fallback: Option<String>,
    /// `llama-bench --list-devices` of the newest complete install (live only, when asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_devices: Option<LlamaDevices>,
    /// `smoke-bench --gguf` records (the state directory of the environment's user) with a
    /// ubatch whose GPU results were wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrong_results: Vec<WrongResults>,
}

/// A `smoke-bench --gguf` record with wrong GPU results (doctor's `vulkan-device` warns).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrongResults {
    /// The record's in-root path.
    pub record: String,
    /// The model file it measured.
    pub model: String,
    pub ubatches: Vec<u32>,
    /// The first failing product at the first of them, as test-backend-ops reported it.
    pub first_failure: String,
}

/// One of rvl's llama.cpp prefixes (where its binaries are: [`crate::llama`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlamaInstall {
    /// In-root prefix, e.g. `/opt/rvl/llama.cpp-0.3.36-rvl1`.
    pub prefix: String,
    /// The build stamp setup writes last; None: the build never finished.
    pub stamp: Option<LlamaStamp>,
    /// Why the stamp is there but could not be read or parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp_error: Option<String>,
    /// `bin/llama-server` is a regular file with an execute bit.
    pub server_executable: bool,
    /// `bin/llama-bench` likewise.
    pub bench_executable: bool,
    /// `bin/test-backend-ops` likewise (smoke-bench's llama.cpp columns and correctness check).
    #[serde(default)]
    pub test_backend_ops_executable: bool,
    /// `bin/ggml-rpc-server` likewise: llama.cpp's RPC worker, built with `-DGGML_RPC=ON`
    /// (builds before rvl enabled RPC have none, and their llama-server has no `--rpc`).
    #[serde(default)]
    pub rpc_server_executable: bool,
}

/// rvl's Mesa builds under /opt/rvl (gathered by [`crate::host::mesa`]; `vulkan-icd` and
/// `vulkan-device` tell rvl's patched panvk from a stock one by the stamp of the prefix the
/// active ICD's library lives in).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MesaFacts {
    /// Newest version first (complete or not: the stamp says).
    pub installs: Vec<BuildInstall>,
}

/// An install prefix and its build stamp.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInstall {
    /// In-root prefix, e.g. `/opt/rvl/mesa-26.2.4-rvl1`.
    pub prefix: String,
    /// The build stamp setup writes last; None: the build never finished.
    pub stamp: Option<LlamaStamp>,
    /// Why the stamp is there but could not be read or parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp_error: Option<String>,
}

/// What setup's `share/rvl/build.json` holds (the fields doctor reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlamaStamp {
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub source_sha256: String,
    #[serde(default)]
    pub patches: Vec<StampPatch>,
    /// llama.cpp: whether ggml's Vulkan shaders were built with integer dot product (the int-dot
    /// matmul for quantised prefill): the build's glslc must know GL_EXT_integer_dot_product
    /// (Debian 12's 2023.2 does not). None: the build did not say (older stamps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int_dot_matmul: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StampPatch {
    /// `llama.cpp/0001-….patch`.
    pub name: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlamaDevices {
    /// The binary that was run.
    pub binary: String,
    /// Why it did not run or exited badly (timeout, signal, status, with its last stderr line).
    pub error: Option<String>,
    /// The device lines it printed, e.g. `Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)`.
    pub devices: Vec<String>,
}
