//! rvl's Mesa (panvk) builds under /opt/rvl and their build stamps, read through the one
//! [`Root`]. Nothing is run: which driver the loader picks is the ICD facts' business.

use super::Root;
use crate::inventory::{BuildInstall, MesaFacts};
use crate::llama::PREFIX_PARENT;

/// Setup's Mesa prefixes are `/opt/rvl/mesa-VERSION-rvlN` (setup/paths.rs `prefix_for`).
pub const PREFIX_NAME: &str = "mesa-";

pub fn facts(root: &Root) -> MesaFacts {
    let mut names: Vec<String> = root
        .list_dir(PREFIX_PARENT)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(PREFIX_NAME))
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(crate::llama::version_key(n)));
    MesaFacts {
        installs: names
            .into_iter()
            .map(|n| {
                let prefix = format!("{PREFIX_PARENT}/{n}");
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
