//! The facts the planner needs, read through the root in one place. The planner is a pure
//! function of these, the target, the manifest and the options.
//!
//! This is not the doctor's [`crate::inventory::Inventory`] on purpose: the planner needs the
//! whole text of every file it may edit (to diff and rewrite it), link targets as written, the
//! hash of the raw file at the path it installs to, and the configs of the *installed* kernels;
//! the inventory keeps parsed summaries of the running system. The readers they share
//! (kernel release, boot configs, device tree, installed kernels) live in `host` and `bootcfg`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::paths::{
    ARMBIAN_BOOT_LINKS, ENVIRONMENT_D_FILE, GROUP_FILE, GSHADOW_FILE, ICD_FILE, PROFILE_D_FILE,
    RVL_CONF,
};
use super::target::Target;
use crate::bootcfg::{armbian, ubootmenu};
use crate::host::Root;
use crate::kernelcfg::KernelConfig;
use crate::profile::BootLayout;

#[derive(Debug, Clone, Serialize)]
pub struct Facts {
    pub running_kernel: Option<String>,
    /// Releases with an image in /boot, highest first.
    pub installed_kernels: Vec<String>,
    /// How this image chooses its kernel; None when setup cannot tell.
    pub layout: Option<BootLayout>,
    /// u-boot-menu's merged settings, when it is installed.
    pub menu: Option<ubootmenu::UbootMenu>,
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
}

impl Facts {
    pub fn file(&self, path: &str) -> Option<&str> {
        self.files.get(path).and_then(|o| o.as_deref())
    }

    pub fn link(&self, path: &str) -> Option<&str> {
        self.links.get(path).and_then(|o| o.as_deref())
    }

    pub fn is_present(&self, path: &str) -> bool {
        self.present.get(path).copied().unwrap_or(false)
    }

    /// The mainline kernel the target asks for, among the installed ones.
    pub fn target_kernel(&self, target: &Target) -> Option<&str> {
        target.pick_kernel(&self.installed_kernels)
    }

    pub fn panthor_builtin(&self, release: &str) -> bool {
        self.panthor_config
            .get(release)
            .is_some_and(|v| v.as_deref() == Some("y"))
    }
}

/// Paths the planner reads beyond the fixed set, named by the caller (install prefixes).
pub struct Probe<'a> {
    pub firmware_paths: &'a [String],
    pub present_paths: &'a [String],
    /// `SUDO_USER` from the settings.
    pub sudo_user: Option<&'a str>,
}

/// Read everything the planner needs.
pub fn gather(root: &Root, probe: &Probe) -> Facts {
    let running_kernel = crate::host::kernel::running_release(root);
    let installed_kernels = crate::host::boot::installed_kernels(root);
    // The profile names a board's usual layout; what is on the image wins.
    let layout = if root.exists(armbian::ARMBIAN_ENV) {
        Some(BootLayout::Armbian)
    } else if crate::host::boot::uboot_menu_installed(root) {
        Some(BootLayout::UBootMenu)
    } else if root.exists(ubootmenu::EXTLINUX_CONF) {
        Some(BootLayout::Extlinux)
    } else {
        None
    };
    let menu = (layout == Some(BootLayout::UBootMenu)).then(|| crate::host::boot::uboot_menu(root));

    let mut text_paths: Vec<String> = [
        RVL_CONF,
        ubootmenu::EXTLINUX_CONF,
        armbian::ARMBIAN_ENV,
        GROUP_FILE,
        GSHADOW_FILE,
        ICD_FILE,
        ENVIRONMENT_D_FILE,
        PROFILE_D_FILE,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    text_paths.sort();
    let files = text_paths
        .into_iter()
        .map(|p| {
            let text = root.read_string(&p).ok();
            (p, text)
        })
        .collect();

    let links = ARMBIAN_BOOT_LINKS
        .iter()
        .map(|p| {
            let target = root
                .read_link(p)
                .ok()
                .map(|t| t.to_string_lossy().into_owned());
            (p.to_string(), target)
        })
        .collect();

    // The raw bytes at the exact path setup would replace, not the doctor's decompressed
    // image from the loader's whole search: setup compares the file it installs byte for byte.
    let hashes = probe
        .firmware_paths
        .iter()
        .map(|p| {
            let hash = root
                .read_capped(p, 64 << 20)
                .ok()
                .map(|d| crate::digest::sha256_hex(&d));
            (p.clone(), hash)
        })
        .collect();

    let mut present: BTreeMap<String, bool> = probe
        .present_paths
        .iter()
        .map(|p| (p.clone(), root.exists(p)))
        .collect();
    if let Ok(names) = root.list_dir("/boot") {
        for n in names {
            present.insert(format!("/boot/{n}"), true);
        }
    }
    if let Ok(names) = root.list_dir("/boot/dtbo") {
        for n in names {
            present.insert(format!("/boot/dtbo/{n}"), true);
        }
    }

    // Setup boots an installed kernel, not necessarily the running one: it reads each installed
    // release's /boot config, never /proc/config.gz (that is the running kernel's, which the
    // doctor judges).
    let panthor_config = installed_kernels
        .iter()
        .map(|r| {
            let value = crate::host::kernel::boot_config(root, r).and_then(|(_, text)| {
                KernelConfig::parse(&text)
                    .options
                    .remove("CONFIG_DRM_PANTHOR")
            });
            (r.clone(), value)
        })
        .collect();

    let invoking_user = probe
        .sudo_user
        .filter(|u| !u.is_empty() && *u != "root")
        .map(str::to_string);

    Facts {
        running_kernel,
        installed_kernels,
        layout,
        menu,
        files,
        links,
        hashes,
        present,
        panthor_config,
        invoking_user,
    }
}
