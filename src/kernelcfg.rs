//! Kernel facts as text: the release string (`uname -r`), the kernel configuration
//! (`/proc/config.gz`, `/boot/config-<release>`), and the fragment in `kernel/panthor.config`
//! the mainline kernel must satisfy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The requirement fragment, embedded so the binary needs no data directory.
pub const PANTHOR_FRAGMENT: &str = include_str!("../kernel/panthor.config");

/// A parsed `x.y.z` kernel version (the leading digits of a release string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KernelVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl KernelVersion {
    /// "7.0.0-rc3-marfrit-A1" → 7.0.0; "6.1.75-npu-port" → 6.1.75; garbage → None.
    pub fn parse(release: &str) -> Option<Self> {
        let head: String = release
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mut parts = head.split('.').filter(|s| !s.is_empty());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        Some(KernelVersion {
            major,
            minor,
            patch,
        })
    }
}

impl std::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Release strings of Rockchip BSP ("vendor") kernels: Radxa `-rk2410`, Armbian `-vendor-rk35xx`,
/// ubuntu-rockchip `-rockchip`, Orange Pi `-rockchip-rk3588`, legacy `-legacy-rk35xx`.
pub fn looks_like_vendor_release(release: &str) -> bool {
    let r = release.to_ascii_lowercase();
    ["-rk", "rockchip", "vendor", "legacy", "bsp"]
        .iter()
        .any(|m| r.contains(m))
}

/// A kernel configuration: option name (with `CONFIG_`) → value ("y", "m", "\"…\"", or "n"
/// for `# CONFIG_X is not set`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelConfig {
    pub options: BTreeMap<String, String>,
}

impl KernelConfig {
    /// Never fails: lines that are neither `CONFIG_X=v` nor `# CONFIG_X is not set` are ignored.
    pub fn parse(text: &str) -> Self {
        let mut options = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# ") {
                if let Some(name) = rest.strip_suffix(" is not set") {
                    if name.starts_with("CONFIG_") && !name.contains(' ') {
                        options.insert(name.to_string(), "n".to_string());
                    }
                }
                continue;
            }
            if let Some((name, value)) = line.split_once('=') {
                if name.starts_with("CONFIG_") && !name.contains(char::is_whitespace) {
                    let value = value.split_whitespace().next().unwrap_or("");
                    options.insert(name.to_string(), value.to_string());
                }
            }
        }
        KernelConfig { options }
    }

    /// The value of an option; unset options read as "n", as Kconfig treats them.
    pub fn get(&self, name: &str) -> &str {
        self.options.get(name).map(String::as_str).unwrap_or("n")
    }
}

/// One unmet line of a requirement fragment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmet {
    pub option: String,
    pub wanted: String,
    pub actual: String,
}

/// Check `config` against a fragment: `=y` needs y, `=m` accepts m or y, `=n`/not set needs
/// it off, any other value must match exactly.
pub fn unmet(fragment: &KernelConfig, config: &KernelConfig) -> Vec<Unmet> {
    fragment
        .options
        .iter()
        .filter_map(|(option, wanted)| {
            let actual = config.get(option);
            let ok = match wanted.as_str() {
                "m" => actual == "m" || actual == "y",
                w => actual == w,
            };
            (!ok).then(|| Unmet {
                option: option.clone(),
                wanted: wanted.clone(),
                actual: actual.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_release_strings() {
        let v = |s| KernelVersion::parse(s);
        assert_eq!(
            v("7.0.0-rc3-marfrit-A1"),
            Some(KernelVersion {
                major: 7,
                minor: 0,
                patch: 0
            })
        );
        assert_eq!(v("6.1.75-npu-port").unwrap().to_string(), "6.1.75");
        assert_eq!(v("6.10").unwrap().to_string(), "6.10.0");
        assert!(v("6.10.0").unwrap() > v("6.9.12").unwrap());
        assert_eq!(v("garbage"), None);
        assert_eq!(v(""), None);
        assert_eq!(v("99999999999999.1"), None);
    }

    #[test]
    fn vendor_release_markers() {
        assert!(looks_like_vendor_release("6.1.84-8-rk2410"));
        assert!(looks_like_vendor_release("6.1.0-1025-rockchip"));
        assert!(looks_like_vendor_release("6.1.75-vendor-rk35xx"));
        assert!(!looks_like_vendor_release("7.0.0-rc3-marfrit-A1"));
        assert!(!looks_like_vendor_release("6.12.9-arm64"));
    }

    #[test]
    fn config_lines_and_not_set_comments() {
        let c = KernelConfig::parse(
            "#\n# Automatically generated\nCONFIG_DRM_PANTHOR=m\nCONFIG_LOCALVERSION=\"-x\"\n\
             # CONFIG_DRM_PANFROST is not set\n# a comment = not an option\nCONFIG_BROKEN\n",
        );
        assert_eq!(c.get("CONFIG_DRM_PANTHOR"), "m");
        assert_eq!(c.get("CONFIG_LOCALVERSION"), "\"-x\"");
        assert_eq!(c.get("CONFIG_DRM_PANFROST"), "n");
        assert_eq!(c.get("CONFIG_MISSING"), "n");
        assert_eq!(c.options.len(), 3);
    }

    #[test]
    fn fragment_rules_m_accepts_y() {
        let frag = KernelConfig::parse("CONFIG_A=m\nCONFIG_B=y\n# CONFIG_C is not set\n");
        let cfg = KernelConfig::parse("CONFIG_A=y\nCONFIG_B=m\nCONFIG_C=y\n");
        let bad: Vec<_> = unmet(&frag, &cfg).into_iter().map(|u| u.option).collect();
        assert_eq!(bad, vec!["CONFIG_B", "CONFIG_C"]);
        let good = KernelConfig::parse("CONFIG_A=m\nCONFIG_B=y\n");
        assert!(unmet(&frag, &good).is_empty());
    }

    #[test]
    fn shipped_fragment_requires_panthor() {
        let frag = KernelConfig::parse(PANTHOR_FRAGMENT);
        assert_eq!(frag.get("CONFIG_DRM_PANTHOR"), "m");
        assert!(frag.options.len() >= 5);
    }
}
