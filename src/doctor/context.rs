//! Everything a check may look at: the inventory, the board profile, and how rvl was run.

use crate::inventory::Inventory;
use crate::manifest::Manifest;
use crate::profile::Profile;

/// How the profile was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileSource {
    DeviceTree,
    /// `--board NAME`.
    Flag,
}

pub struct Context<'a> {
    pub inv: &'a Inventory,
    pub profile: Option<&'a Profile>,
    pub source: Option<ProfileSource>,
    /// Known artifacts (firmware hashes).
    pub manifest: &'a Manifest,
    /// `--no-vulkan` was given.
    pub no_vulkan: bool,
}

impl Context<'_> {
    /// The board id for fix commands ("rvl setup --board <id>").
    pub fn board_id(&self) -> &str {
        self.profile.map(|p| p.id.as_str()).unwrap_or("<board>")
    }

    /// `rvl setup --board <id> --only <steps>`.
    pub fn setup(&self, steps: &str) -> String {
        format!("rvl setup --board {} --only {steps}", self.board_id())
    }

    /// Why a live-only probe did not run, or None when it may run.
    pub fn not_live_reason(&self) -> Option<&'static str> {
        (!self.inv.live).then_some("not the running system (--root is not /)")
    }
}
