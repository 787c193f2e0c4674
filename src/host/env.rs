//! The environment variables the checks depend on, read once. Checks get this snapshot, never
//! the process environment, so tests can hand them any environment.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every variable rvl doctor looks at.
pub const NAMES: &[&str] = &[
    "HOME",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
    "VK_DRIVER_FILES",
    "VK_ICD_FILENAMES",
    "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "PAN_I_WANT_A_BROKEN_VULKAN_DRIVER",
];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    pub fn from_process() -> Self {
        Self::from_pairs(
            NAMES
                .iter()
                .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v))),
        )
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_read_as_unset() {
        let e = Env::from_pairs([("HOME", "/home/u"), ("VK_DRIVER_FILES", "")]);
        assert_eq!(e.get("HOME"), Some("/home/u"));
        assert_eq!(e.get("VK_DRIVER_FILES"), None);
        assert_eq!(e.get("XDG_RUNTIME_DIR"), None);
    }
}
