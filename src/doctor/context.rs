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

    /// Why setup's mesa step is blocked on this image (its release cannot build the pinned
    /// Mesa), or None. A fix that names the mesa step says this instead of a command that
    /// setup would only refuse.
    pub fn mesa_blocked(&self) -> Option<String> {
        let os = self.inv.os.as_ref()?;
        crate::builddeps::release_blocker(&crate::osrelease::OsRelease {
            id: os.id.clone(),
            version_id: os.version_id.clone(),
            pretty_name: os.pretty_name.clone(),
        })
    }

    /// The fix for a missing or stale panvk: setup's mesa and icd steps, or, where the mesa
    /// step is blocked, why and what unblocks it.
    pub fn setup_panvk(&self) -> String {
        match self.mesa_blocked() {
            Some(why) => format!(
                "{why}; upgrade the image to a release that can, then run {}",
                self.setup("mesa,icd")
            ),
            None => self.setup("mesa,icd"),
        }
    }

    /// Why a live-only probe did not run, or None when it may run.
    pub fn not_live_reason(&self) -> Option<&'static str> {
        (!self.inv.live).then_some("not the running system (--root is not /)")
    }
}
