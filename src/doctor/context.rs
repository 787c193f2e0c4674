//! Everything a check may look at: the inventory, the board profile, and how rvl was run.

use crate::inventory::Inventory;
use crate::manifest::Manifest;
use crate::profile::Profile;
pub use crate::profile::ProfileSource;

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

    /// `sudo rvl setup --board <id> --only <steps>`: setup changes the system, so the fix a
    /// person copies must carry the sudo it needs (rvl is in /usr/bin, on sudo's PATH).
    pub fn setup(&self, steps: &str) -> String {
        format!("sudo rvl setup --board {} --only {steps}", self.board_id())
    }

    /// Why a live-only probe did not run, or None when it may run.
    pub fn not_live_reason(&self) -> Option<&'static str> {
        (!self.inv.live).then_some("not the running system (--root is not /)")
    }
}
