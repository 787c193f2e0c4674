//! The environment variables the checks depend on, read once. Checks get this snapshot, never
//! the process environment, so tests can hand them any environment.

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
    // Under sudo, the user whose render-node access matters.
    "SUDO_USER",
];

pub use crate::inventory::Env;

/// Reading the process environment is IO, so it lives here; the type is plain data.
impl Env {
    /// The variables in [`NAMES`] that are set in this process (called once, by `Settings`).
    pub fn from_process() -> Self {
        Self::from_pairs(
            NAMES
                .iter()
                .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v))),
        )
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
