//! Vulkan ICD manifests: where the loader looks (Vulkan-Loader docs/LoaderDriverInterface.md,
//! "Driver Discovery on Linux") and what one manifest says. Mesa's panvk manifest is
//! `panfrost_icd.<cpu>.json`; it is recognised by its `library_path`, not its file name.
//!
//! Pure rules over the data types of [`crate::inventory::icd`] (re-exported here); imports
//! only the inventory.

pub use crate::inventory::icd::{IcdFacts, Manifest, ManifestFile, SearchMode, SearchPath};
use crate::inventory::Env;

/// The library every panvk manifest names.
pub const PANVK_LIBRARY: &str = "libvulkan_panfrost.so";
/// The variable whose manifest list replaces the loader's search (what setup sets, and what
/// the doctor advises when several panvk manifests load).
pub const DRIVER_FILES_VAR: &str = "VK_DRIVER_FILES";

/// The loader's search list for this environment.
pub fn search_path(env: &Env) -> SearchPath {
    let split = |v: &str| -> Vec<String> {
        v.split(':')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let added = env
        .get("VK_ADD_DRIVER_FILES")
        .map(split)
        .unwrap_or_default();
    for var in [DRIVER_FILES_VAR, "VK_ICD_FILENAMES"] {
        if let Some(v) = env.get(var) {
            let mut entries = added.clone();
            entries.extend(split(v));
            return SearchPath {
                mode: SearchMode::Override,
                variable: Some(var.to_string()),
                entries,
            };
        }
    }
    let home = env.get("HOME");
    let config_home = env
        .get("XDG_CONFIG_HOME")
        .map(str::to_string)
        .or_else(|| home.map(|h| format!("{h}/.config")));
    let data_home = env
        .get("XDG_DATA_HOME")
        .map(str::to_string)
        .or_else(|| home.map(|h| format!("{h}/.local/share")));
    let config_dirs = env.get("XDG_CONFIG_DIRS").unwrap_or("/etc/xdg");
    let data_dirs = env
        .get("XDG_DATA_DIRS")
        .unwrap_or("/usr/local/share:/usr/share");

    let mut bases: Vec<String> = Vec::new();
    bases.extend(config_home);
    bases.extend(split(config_dirs));
    bases.push("/usr/local/etc".to_string());
    bases.push("/etc".to_string());
    bases.extend(data_home);
    bases.extend(split(data_dirs));
    let mut entries = added;
    for b in bases {
        let dir = format!("{}/vulkan/icd.d", b.trim_end_matches('/'));
        if !entries.contains(&dir) {
            entries.push(dir);
        }
    }
    SearchPath {
        mode: SearchMode::Standard,
        variable: None,
        entries,
    }
}

/// Why the loader's driver filters (`VK_LOADER_DRIVERS_SELECT` / `VK_LOADER_DRIVERS_DISABLE`,
/// comma-separated globs on the manifest file name, `~all~` for every driver) hide a manifest,
/// or None when it stays enabled. Select wins over disable, as in the loader.
pub fn filtered_out(env: &Env, manifest_path: &str) -> Option<String> {
    let name = manifest_path.rsplit('/').next().unwrap_or(manifest_path);
    let matches = |var: &str| {
        env.get(var).map(|v| {
            v.split(',')
                .map(str::trim)
                .any(|g| g == "~all~" || glob_match(g, name))
        })
    };
    if let Some(selected) = matches("VK_LOADER_DRIVERS_SELECT") {
        return (!selected).then(|| {
            format!(
                "VK_LOADER_DRIVERS_SELECT={} does not select {name}",
                env.get("VK_LOADER_DRIVERS_SELECT").unwrap_or("")
            )
        });
    }
    matches("VK_LOADER_DRIVERS_DISABLE")
        .filter(|d| *d)
        .map(|_| {
            format!(
                "VK_LOADER_DRIVERS_DISABLE={} disables {name}",
                env.get("VK_LOADER_DRIVERS_DISABLE").unwrap_or("")
            )
        })
}

/// Shell-style glob with `*` and `?` (what the loader's filters accept).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Parse a manifest. The error says what is wrong, in words a user can act on.
pub fn parse_manifest(text: &str) -> Result<Manifest, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let icd = v
        .get("ICD")
        .ok_or("no \"ICD\" object (is this a layer manifest?)")?;
    let field = |name: &str| icd.get(name).and_then(|x| x.as_str()).map(str::to_string);
    let library_path = field("library_path")
        .filter(|p| !p.is_empty())
        .ok_or("\"ICD\" has no \"library_path\" string")?;
    Ok(Manifest {
        library_path,
        api_version: field("api_version"),
        library_arch: field("library_arch"),
    })
}

/// True when a manifest's library is panvk.
pub fn is_panvk(library_path: &str) -> bool {
    library_path.rsplit('/').next() == Some(PANVK_LIBRARY)
}

impl ManifestFile {
    /// True when the manifest names panvk's library.
    pub fn panvk(&self) -> bool {
        self.manifest
            .as_ref()
            .is_some_and(|m| is_panvk(&m.library_path))
    }
}

/// panvk manifests the user's environment hides from the loader, with why.
pub fn hidden_panvk<'a>(icd: &'a IcdFacts, env: &Env) -> Vec<(&'a str, String)> {
    icd.manifests
        .iter()
        .filter(|m| m.panvk())
        .filter_map(|m| filtered_out(env, &m.path).map(|why| (m.path.as_str(), why)))
        .collect()
}

/// panvk manifests the loader will load: not hidden, and their library exists. Exactly one is
/// the healthy case (doctor's `vulkan-icd`).
pub fn usable_panvk<'a>(icd: &'a IcdFacts, env: &Env) -> Vec<&'a ManifestFile> {
    icd.manifests
        .iter()
        .filter(|m| m.panvk() && m.library_found.is_some())
        .filter(|m| filtered_out(env, &m.path).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_search_order() {
        let env = Env::from_pairs([("HOME", "/home/u")]);
        let s = search_path(&env);
        assert_eq!(s.mode, SearchMode::Standard);
        assert_eq!(
            s.entries,
            vec![
                "/home/u/.config/vulkan/icd.d",
                "/etc/xdg/vulkan/icd.d",
                "/usr/local/etc/vulkan/icd.d",
                "/etc/vulkan/icd.d",
                "/home/u/.local/share/vulkan/icd.d",
                "/usr/local/share/vulkan/icd.d",
                "/usr/share/vulkan/icd.d",
            ]
        );
    }

    #[test]
    fn xdg_variables_and_added_files() {
        let env = Env::from_pairs([
            ("XDG_DATA_DIRS", "/opt/share:/usr/share/"),
            ("XDG_CONFIG_DIRS", "/cfg"),
            ("VK_ADD_DRIVER_FILES", "/x/my_icd.json"),
        ]);
        let s = search_path(&env);
        assert_eq!(s.entries[0], "/x/my_icd.json");
        assert!(s.entries.contains(&"/opt/share/vulkan/icd.d".to_string()));
        assert!(s.entries.contains(&"/cfg/vulkan/icd.d".to_string()));
        assert!(!s.entries.iter().any(|e| e.contains("/etc/xdg")));
    }

    #[test]
    fn driver_files_replace_the_search() {
        let env = Env::from_pairs([
            ("VK_ICD_FILENAMES", "/a.json"),
            ("VK_DRIVER_FILES", "/b.json:/c"),
        ]);
        let s = search_path(&env);
        assert_eq!(s.mode, SearchMode::Override);
        assert_eq!(s.variable.as_deref(), Some("VK_DRIVER_FILES"));
        assert_eq!(s.entries, vec!["/b.json", "/c"]);
    }

    #[test]
    fn mesa_manifests_new_and_old() {
        let new = include_str!("../tests/fixtures/vulkan/icd.d/panfrost_icd.aarch64.json");
        let m = parse_manifest(new).unwrap();
        assert!(is_panvk(&m.library_path));
        assert_eq!(m.library_arch.as_deref(), Some("64"));
        let old = include_str!("../tests/fixtures/vulkan/icd.d-old/panfrost_icd.aarch64.json");
        let m = parse_manifest(old).unwrap();
        assert_eq!(m.api_version.as_deref(), Some("1.0.230"));
        assert_eq!(m.library_arch, None);
    }

    #[test]
    fn broken_manifests_say_why() {
        assert!(parse_manifest("{\"ICD\": {\"library_path\": \"/usr/lib/li")
            .unwrap_err()
            .starts_with("not valid JSON"));
        assert!(parse_manifest("{\"layer\": {}}")
            .unwrap_err()
            .contains("ICD"));
        assert!(parse_manifest("{\"ICD\": {\"library_path\": 3}}")
            .unwrap_err()
            .contains("library_path"));
        assert!(parse_manifest("[]").is_err());
    }

    #[test]
    fn globs() {
        assert!(glob_match("*panfrost*", "panfrost_icd.aarch64.json"));
        assert!(glob_match(
            "panfrost_icd.*.json",
            "panfrost_icd.aarch64.json"
        ));
        assert!(glob_match("?anfrost*", "panfrost_icd.aarch64.json"));
        assert!(!glob_match("*lvp*", "panfrost_icd.aarch64.json"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a", ""));
    }

    #[test]
    fn loader_driver_filters() {
        let p = "/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json";
        assert_eq!(filtered_out(&Env::default(), p), None);
        let e = Env::from_pairs([("VK_LOADER_DRIVERS_DISABLE", "*lvp*, *panfrost*")]);
        assert!(filtered_out(&e, p).unwrap().contains("disables"));
        let e = Env::from_pairs([("VK_LOADER_DRIVERS_DISABLE", "~all~")]);
        assert!(filtered_out(&e, p).is_some());
        let e = Env::from_pairs([
            ("VK_LOADER_DRIVERS_SELECT", "*panfrost*"),
            ("VK_LOADER_DRIVERS_DISABLE", "~all~"),
        ]);
        assert_eq!(filtered_out(&e, p), None, "select wins");
        let e = Env::from_pairs([("VK_LOADER_DRIVERS_SELECT", "*lvp*")]);
        assert!(filtered_out(&e, p).unwrap().contains("does not select"));
    }

    #[test]
    fn panvk_is_matched_on_the_library_basename() {
        assert!(is_panvk("/usr/lib/aarch64-linux-gnu/libvulkan_panfrost.so"));
        assert!(is_panvk("libvulkan_panfrost.so"));
        assert!(!is_panvk("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"));
        assert!(!is_panvk("/x/libvulkan_panfrost.so.1"));
    }
}
