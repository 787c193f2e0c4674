//! Armbian's `/boot/armbianEnv.txt`: `key=value` lines that U-Boot's `env import -t` reads.
//! `overlays=` is a space-separated list of overlay names, loaded as
//! `dtb/<vendor>/overlay/${overlay_prefix}-${name}.dtbo`.
//!
//! Edits change or append single lines; every other line (comments, unknown keys, spacing,
//! line endings) is kept byte for byte.

pub const ARMBIAN_ENV: &str = "/boot/armbianEnv.txt";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmbianEnv {
    lines: Vec<String>,
}

impl ArmbianEnv {
    pub fn parse(text: &str) -> Self {
        ArmbianEnv {
            lines: text.split_inclusive('\n').map(str::to_string).collect(),
        }
    }

    /// Value of the last `key=` line (U-Boot's import lets later lines win).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).map(|i| value_of(&self.lines[i]))
    }

    /// Every `key=value` pair, in file order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.lines.iter().filter_map(|l| {
            let t = l.trim_end_matches(['\r', '\n']);
            let (k, v) = t.split_once('=')?;
            (!k.trim().is_empty() && !k.trim_start().starts_with('#')).then_some((k.trim(), v))
        })
    }

    /// Set `key` (changing its last line in place, or appending one).
    pub fn set(&mut self, key: &str, value: &str) {
        match self.find(key) {
            Some(i) => {
                let ending = if self.lines[i].ends_with("\r\n") {
                    "\r\n"
                } else if self.lines[i].ends_with('\n') {
                    "\n"
                } else {
                    ""
                };
                self.lines[i] = format!("{key}={value}{ending}");
            }
            None => {
                if let Some(last) = self.lines.last_mut() {
                    if !last.ends_with('\n') {
                        last.push('\n');
                    }
                }
                self.lines.push(format!("{key}={value}\n"));
            }
        }
    }

    pub fn overlays(&self) -> Vec<String> {
        self.list("overlays")
    }

    /// The names of a space-separated list (`overlays=`, `user_overlays=`).
    pub fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| v.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Add an overlay name if it is not listed yet. Returns true when something changed.
    pub fn add_overlay(&mut self, name: &str) -> bool {
        self.add_to_list("overlays", name)
    }

    /// Add a name to a space-separated list if it is not there yet (`user_overlays=` names
    /// `/boot/overlay-user/NAME.dtbo`). Returns true when something changed.
    pub fn add_to_list(&mut self, key: &str, name: &str) -> bool {
        let mut list = self.list(key);
        if list.iter().any(|o| o == name) {
            return false;
        }
        list.push(name.to_string());
        self.set(key, &list.join(" "));
        true
    }

    /// Remove an overlay name. Returns true when something changed.
    pub fn remove_overlay(&mut self, name: &str) -> bool {
        let list = self.overlays();
        let kept: Vec<_> = list.iter().filter(|o| *o != name).cloned().collect();
        if kept.len() == list.len() {
            return false;
        }
        self.set("overlays", &kept.join(" "));
        true
    }

    pub fn render(&self) -> String {
        self.lines.concat()
    }

    fn find(&self, key: &str) -> Option<usize> {
        self.lines.iter().rposition(|l| {
            l.split_once('=')
                .is_some_and(|(k, _)| k.trim() == key && !k.trim_start().starts_with('#'))
        })
    }
}

fn value_of(line: &str) -> &str {
    line.split_once('=')
        .map(|(_, v)| v.trim_end_matches(['\r', '\n']))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "verbosity=1\nbootlogo=false\noverlay_prefix=rockchip-rk3588\nfdtfile=rockchip/rk3588-rock-5-itx.dtb\n# note\noverlays=panthor-gpu\nusbstoragequirks=0x2537:0x1066:u\n";

    #[test]
    fn reads_keys_and_overlays() {
        let env = ArmbianEnv::parse(SAMPLE);
        assert_eq!(env.get("fdtfile"), Some("rockchip/rk3588-rock-5-itx.dtb"));
        assert_eq!(env.overlays(), ["panthor-gpu"]);
        assert_eq!(env.get("missing"), None);
        assert_eq!(env.pairs().count(), 6);
    }

    #[test]
    fn overlay_edits_touch_one_line() {
        let mut env = ArmbianEnv::parse(SAMPLE);
        assert!(!env.add_overlay("panthor-gpu"));
        assert!(env.add_overlay("uart7"));
        assert_eq!(
            env.render(),
            SAMPLE.replace("overlays=panthor-gpu\n", "overlays=panthor-gpu uart7\n")
        );
        assert!(env.remove_overlay("panthor-gpu"));
        assert!(!env.remove_overlay("panthor-gpu"));
        assert_eq!(env.overlays(), ["uart7"]);
    }

    #[test]
    fn appends_missing_key_even_without_final_newline() {
        let mut env = ArmbianEnv::parse("verbosity=1");
        assert!(env.add_overlay("panthor-gpu"));
        assert_eq!(env.render(), "verbosity=1\noverlays=panthor-gpu\n");
    }
}
