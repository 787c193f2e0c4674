//! How the next kernel is chosen, as setup's planner reads it: the boot layout (re-exported by
//! [`crate::profile`]) and Debian u-boot-menu's merged settings (re-exported by
//! [`crate::bootcfg::ubootmenu`], which parses and merges them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an image chooses its kernel (a profile's `boot.layout`, or what setup detects).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootLayout {
    /// Debian u-boot-menu generates /boot/extlinux/extlinux.conf (Radxa, ubuntu-rockchip).
    UBootMenu,
    /// A hand-kept /boot/extlinux/extlinux.conf.
    Extlinux,
    /// Armbian boot.scr + /boot/armbianEnv.txt.
    Armbian,
}

/// One `NAME=value` line of a shell fragment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment {
    pub name: String,
    /// The value with quotes removed; the raw text when not statically known.
    pub value: String,
    /// False when the value uses `$(...)`, backticks or `$VAR`.
    pub literal: bool,
    /// True when the assignment sits inside `if`/`case`/a loop, so it may not run.
    pub conditional: bool,
    /// 1-based line number.
    pub line: usize,
}

/// One variable's effective setting and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub file: String,
    #[serde(flatten)]
    pub assignment: Assignment,
}

/// The merged configuration u-boot-update would see.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UbootMenu {
    /// Files read, in the order u-boot-update sources them.
    pub files: Vec<String>,
    /// Last assignment of each variable.
    pub settings: BTreeMap<String, Setting>,
    /// Files that exist but could not be read.
    pub unreadable: Vec<String>,
}
