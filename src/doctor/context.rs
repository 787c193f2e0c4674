//! Everything a check may look at: the inventory, the board profile, and how rvl was run.

use crate::hint::Invocation;
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
    /// How rvl was pointed at the system: every rvl command a fix names repeats it.
    pub hint: Invocation,
}

impl Context<'_> {
    /// The board id for fix commands ("rvl setup --board <id>").
    pub fn board_id(&self) -> &str {
        self.profile.map(|p| p.id.as_str()).unwrap_or("<board>")
    }

    /// `[sudo ]rvl setup [--root R] --board <id> [--profiles P] [--manifest M] --only <steps>`:
    /// the command that changes the system that was looked at, with the sudo it needs (rvl is
    /// in /usr/bin, on sudo's PATH), and never another one.
    pub fn setup(&self, steps: &str) -> String {
        self.invocation().setup(&format!("--only {steps}"))
    }

    /// How fixes name rvl: the run's own options, with the board doctor chose.
    pub fn invocation(&self) -> Invocation {
        self.hint
            .clone()
            .with_board(self.profile.map(|p| p.id.as_str()))
    }

    /// A command that is not rvl's, for the board: as it is on the running system; for an
    /// image, marked as one to run on the board that boots it.
    pub fn on_board(&self, cmd: &str) -> String {
        self.hint.on_board(cmd)
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
    /// Names no command while the mesa step is blocked: setup would refuse it, and after the
    /// upgrade doctor names the command itself.
    pub fn setup_panvk(&self) -> String {
        match self.mesa_blocked() {
            Some(why) => format!(
                "{why}; upgrade the image to Debian 13 (trixie) or Ubuntu 25.04 or newer, then run rvl doctor again for the setup step"
            ),
            None => self.setup("mesa,icd"),
        }
    }

    /// The fix that makes rvl's panvk the one ICD the loader uses: setup's icd step when the
    /// pinned panvk is installed (it only writes the ICD and `VK_DRIVER_FILES`), else the
    /// mesa step too, which the icd step needs.
    pub fn setup_icd(&self) -> String {
        let installed = crate::setup::steps::mesa_prefix(self.manifest).is_some_and(|prefix| {
            self.inv
                .mesa
                .installs
                .iter()
                .any(|i| i.prefix == prefix && i.stamp.is_some())
        });
        if installed {
            self.setup("icd")
        } else {
            self.setup_panvk()
        }
    }

    /// Why a live-only probe did not run, or None when it may run.
    pub fn not_live_reason(&self) -> Option<&'static str> {
        (!self.inv.live).then_some("not the running system (--root is not /)")
    }
}
