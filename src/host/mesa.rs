//! rvl's Mesa (panvk) builds under /opt/rvl and their build stamps, read through the one
//! [`Root`]. Nothing is run: which driver the loader picks is the ICD facts' business.

use super::Root;
use crate::inventory::{BuildInstall, MesaFacts};

/// Setup's Mesa prefixes are `/opt/rvl/mesa-VERSION-rvlN` (setup/paths.rs `prefix_for`).
pub const PREFIX_NAME: &str = "mesa-";

pub fn facts(root: &Root) -> MesaFacts {
    MesaFacts {
        installs: super::stamp::prefixes(root, PREFIX_NAME)
            .into_iter()
            .map(|prefix| {
                let (stamp, stamp_error) = super::stamp::read(root, &prefix);
                BuildInstall {
                    prefix,
                    stamp,
                    stamp_error,
                }
            })
            .collect(),
    }
}
