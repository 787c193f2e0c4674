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
    // Where smoke-bench --gguf records its last run per model, for rvl serve.
    "XDG_STATE_HOME",
    "VK_DRIVER_FILES",
    "VK_ICD_FILENAMES",
    "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "PAN_I_WANT_A_BROKEN_VULKAN_DRIVER",
    // Under sudo, the user whose render-node access matters.
    "SUDO_USER",
    // Where a stock llama-server would be found (doctor's llama-cpp check).
    "PATH",
    // A device choice of the user's that rvl serve keeps.
    "GGML_VK_VISIBLE_DEVICES",
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

/// Where [`from_image`] looks, in the order a login session applies them (later wins).
pub const IMAGE_FILES: &str = "etc/environment, etc/environment.d/*.conf, etc/profile.d/*.sh";

/// The environment a login on the image under `root` would have, as far as its files say:
/// `/etc/environment`, then `/etc/environment.d/*.conf`, then the simple `export NAME=VALUE`
/// lines of `/etc/profile.d/*.sh` (sorted; a value that needs expansion is skipped). Under a
/// foreign `--root` the checks use this, never the environment of the shell running rvl.
/// The environment the checks judge: this process's on the live system; under a foreign
/// `--root`, the image's own login environment ([`from_image`]), since that is what its Vulkan
/// loader will read.
pub fn for_root(root: &super::Root, process: &Env) -> Env {
    if root.is_live() {
        process.clone()
    } else {
        from_image(root)
    }
}

pub fn from_image(root: &super::Root) -> Env {
    let mut vars: Vec<(String, String)> = Vec::new();
    let mut read = |path: &str| {
        if let Ok(b) = root.read_capped(path, 1 << 20) {
            vars.extend(parse_assignments(&String::from_utf8_lossy(&b)));
        }
    };
    read("/etc/environment");
    for (dir, ext) in [("/etc/environment.d", ".conf"), ("/etc/profile.d", ".sh")] {
        for name in root.list_dir(dir).unwrap_or_default() {
            if name.ends_with(ext) {
                read(&format!("{dir}/{name}"));
            }
        }
    }
    Env::from_pairs(
        vars.into_iter()
            .filter(|(k, _)| NAMES.contains(&k.as_str())),
    )
}

/// `NAME=VALUE` lines, `export ` allowed in front, one level of matching quotes taken off.
/// Anything a shell would have to evaluate (`$`, backticks, `\`, `;`, a command) is skipped:
/// the value is then unknown, and guessing it would be worse than leaving it out.
pub fn parse_assignments(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
            let (name, value) = line.split_once('=')?;
            let name_ok = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !name_ok {
                return None;
            }
            let value = value.trim_end();
            let unquoted = match value.as_bytes() {
                [q @ (b'"' | b'\''), .., last] if q == last && value.len() >= 2 => {
                    &value[1..value.len() - 1]
                }
                _ => value,
            };
            let needs_shell = unquoted.chars().any(|c| {
                matches!(
                    c,
                    '$' | '`' | '\\' | ';' | '"' | '\'' | '&' | '|' | '<' | '>'
                ) || c.is_control()
            });
            let bare_space = unquoted == value && value.contains(char::is_whitespace);
            (!needs_shell && !bare_space).then(|| (name.to_string(), unquoted.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_assignments_take_simple_values_and_skip_what_needs_a_shell() {
        let text = "# comment\nexport VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl.json\nXDG_DATA_DIRS=\"/usr/share:/opt/share\"\nPATH=$PATH:/x\nexport A=`id`\n1X=y\nB=a b\nif true; then\n";
        assert_eq!(
            parse_assignments(text),
            vec![
                (
                    "VK_DRIVER_FILES".to_string(),
                    "/etc/vulkan/icd.d/rvl.json".to_string()
                ),
                (
                    "XDG_DATA_DIRS".to_string(),
                    "/usr/share:/opt/share".to_string()
                ),
            ]
        );
    }

    #[test]
    fn empty_values_read_as_unset() {
        let e = Env::from_pairs([("HOME", "/home/u"), ("VK_DRIVER_FILES", "")]);
        assert_eq!(e.get("HOME"), Some("/home/u"));
        assert_eq!(e.get("VK_DRIVER_FILES"), None);
        assert_eq!(e.get("XDG_RUNTIME_DIR"), None);
    }
}
