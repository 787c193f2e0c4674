//! The facts the planner needs: [`crate::inventory::SetupFacts`], read through the root by
//! [`crate::host::gather::setup_facts`] (the readers it shares with the doctor live in `host`
//! and `bootcfg`). The planner is a pure function of these, the target, the manifest, the
//! patch series and the options. This module only adds the setup-side view.

use super::target::Target;
pub use crate::inventory::SetupFacts as Facts;

impl Facts {
    /// The mainline kernel the target asks for, among the installed ones.
    pub fn target_kernel(&self, target: &Target) -> Option<&str> {
        target.pick_kernel(&self.installed_kernels)
    }
}
