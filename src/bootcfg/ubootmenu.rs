//! Debian's u-boot-menu configuration: shell fragments that `u-boot-update` sources in this
//! order, the last assignment winning: `/etc/default/u-boot`, then
//! `/usr/share/u-boot-menu/conf.d/*.conf` (packages), then `/etc/u-boot-menu/conf.d/*.conf`
//! (the admin; rvl writes `rvl.conf` there).
//!
//! We do not run a shell. Plain assignments are read; a value built from a command substitution
//! or a variable, or one assigned inside an `if`/`case`/loop, is kept but marked as not
//! statically known, so callers can say so instead of guessing.
//!
//! The merged settings' types are [`crate::inventory::boot`]'s (re-exported here).

use super::kver;
pub use crate::inventory::boot::{Assignment, Setting, UbootMenu};

pub const DEFAULTS_FILE: &str = "/etc/default/u-boot";
pub const PACKAGE_CONF_DIR: &str = "/usr/share/u-boot-menu/conf.d";
pub const ADMIN_CONF_DIR: &str = "/etc/u-boot-menu/conf.d";
/// Where u-boot-update writes its output.
pub const EXTLINUX_CONF: &str = "/boot/extlinux/extlinux.conf";
/// u-boot-menu's built-in default for `U_BOOT_DEFAULT`.
pub const BUILTIN_DEFAULT_LABEL: &str = "l0";

/// Parse the assignments of a shell fragment. Never fails; lines that are not assignments are
/// ignored.
pub fn parse_assignments(text: &str) -> Vec<Assignment> {
    let mut depth: usize = 0;
    let mut out = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line
            .split(|c: char| c.is_whitespace() || c == ';')
            .next()
            .unwrap_or("");
        match first {
            "if" | "case" | "for" | "while" | "until" => {
                depth += 1;
                continue;
            }
            "fi" | "esac" | "done" => {
                depth = depth.saturating_sub(1);
                continue;
            }
            _ => {}
        }
        let body = line
            .strip_prefix("export ")
            .map(str::trim_start)
            .unwrap_or(line);
        let Some(eq) = body.find('=') else { continue };
        let name = &body[..eq];
        if !is_shell_name(name) {
            continue;
        }
        let (value, literal) = shell_value(&body[eq + 1..]);
        out.push(Assignment {
            name: name.to_string(),
            value,
            literal,
            conditional: depth > 0,
            line: idx + 1,
        });
    }
    out
}

fn is_shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Unquote one shell word (the first one); report whether it is a literal.
fn shell_value(rest: &str) -> (String, bool) {
    let mut out = String::new();
    let mut literal = true;
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    out.push(c);
                }
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                out.push(n);
                            }
                        }
                        '$' | '`' => {
                            literal = false;
                            out.push(c);
                        }
                        _ => out.push(c),
                    }
                }
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '$' | '`' => {
                literal = false;
                out.push(c);
            }
            c if c.is_whitespace() || c == ';' || c == '#' => break,
            c => out.push(c),
        }
    }
    (out, literal)
}

/// Paths whose presence means u-boot-menu is in charge of extlinux.conf.
pub const INSTALLED_MARKERS: [&str; 3] = [
    "/usr/sbin/u-boot-update",
    "/usr/share/u-boot-menu",
    ADMIN_CONF_DIR,
];

/// The fragments u-boot-update sources, in its order, given the names in its two conf.d
/// directories (any order; only `*.conf` count).
pub fn conf_files(package_names: &[String], admin_names: &[String]) -> Vec<String> {
    let mut files = vec![DEFAULTS_FILE.to_string()];
    for (dir, names) in [
        (PACKAGE_CONF_DIR, package_names),
        (ADMIN_CONF_DIR, admin_names),
    ] {
        let mut names: Vec<&String> = names.iter().filter(|n| n.ends_with(".conf")).collect();
        names.sort();
        files.extend(names.into_iter().map(|n| format!("{dir}/{n}")));
    }
    files
}

/// What reading one fragment gave.
pub enum Fragment<'a> {
    Text(&'a str),
    Missing,
    Unreadable,
}

impl UbootMenu {
    /// Merge the fragments in the order given (see [`conf_files`]); the last assignment wins.
    pub fn merge<'a>(fragments: impl IntoIterator<Item = (String, Fragment<'a>)>) -> Self {
        let mut menu = UbootMenu::default();
        for (file, fragment) in fragments {
            match fragment {
                Fragment::Text(text) => {
                    for a in parse_assignments(text) {
                        menu.settings.insert(
                            a.name.clone(),
                            Setting {
                                file: file.clone(),
                                assignment: a,
                            },
                        );
                    }
                    menu.files.push(file);
                }
                Fragment::Missing => {}
                Fragment::Unreadable => menu.unreadable.push(file),
            }
        }
        menu
    }

    pub fn get(&self, name: &str) -> Option<&Setting> {
        self.settings.get(name)
    }

    /// The label u-boot-update will write as `default` (u-boot-menu's own default is `l0`).
    pub fn default_label(&self) -> &str {
        self.get("U_BOOT_DEFAULT")
            .map(|s| s.assignment.value.as_str())
            .unwrap_or(BUILTIN_DEFAULT_LABEL)
    }
}

/// Kernel releases installed in `/boot` (`vmlinuz-*`, `vmlinux-*`), as `linux-version list`
/// finds them, highest first, from the names in `/boot`.
pub fn installed_kernels(boot_names: &[String]) -> Vec<String> {
    let mut releases: Vec<String> = boot_names
        .iter()
        .filter_map(|n| {
            n.strip_prefix("vmlinuz-")
                .or_else(|| n.strip_prefix("vmlinux-"))
                .map(str::to_string)
        })
        .filter(|r| !r.is_empty() && !r.ends_with(".old") && !r.ends_with(".bak"))
        .collect();
    kver::sort_releases_desc(&mut releases);
    releases.dedup();
    releases
}

/// The `lN` label u-boot-update gives `release` among `installed` (any order).
pub fn label_for_release(installed: &[String], release: &str) -> Option<String> {
    let mut sorted = installed.to_vec();
    kver::sort_releases_desc(&mut sorted);
    sorted.dedup();
    sorted
        .iter()
        .position(|r| r == release)
        .map(|i| format!("l{i}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radxa_conf_marks_conditional_and_dynamic_values() {
        let text = "U_BOOT_PROMPT=1\nU_BOOT_TIMEOUT=10\nif ! grep -q \"root=\" /etc/kernel/cmdline; then\n    U_BOOT_PARAMETERS=\"$(cat /etc/kernel/cmdline)\"\nfi\n";
        let a = parse_assignments(text);
        assert_eq!(a.len(), 3);
        assert_eq!(
            (a[0].name.as_str(), a[0].value.as_str()),
            ("U_BOOT_PROMPT", "1")
        );
        assert!(a[0].literal && !a[0].conditional);
        assert_eq!(a[2].name, "U_BOOT_PARAMETERS");
        assert!(!a[2].literal && a[2].conditional);
        assert_eq!(a[2].line, 4);
    }

    #[test]
    fn quoting_export_and_comments() {
        let text = "# c\nexport U_BOOT_DEFAULT=\"l1\" # pin\nU_BOOT_FDT='a b'\nX=un\\ quoted\n1BAD=x\nnot an assignment\n";
        let a = parse_assignments(text);
        let pairs: Vec<_> = a
            .iter()
            .map(|a| (a.name.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("U_BOOT_DEFAULT", "l1"),
                ("U_BOOT_FDT", "a b"),
                ("X", "un quoted")
            ]
        );
    }

    #[test]
    fn admin_conf_d_wins_over_package_and_defaults() {
        let files = conf_files(&["radxa.conf".into(), "x.txt".into()], &["rvl.conf".into()]);
        assert_eq!(
            files,
            [
                DEFAULTS_FILE,
                "/usr/share/u-boot-menu/conf.d/radxa.conf",
                "/etc/u-boot-menu/conf.d/rvl.conf"
            ]
        );
        let texts = [
            "U_BOOT_DEFAULT=l2\nU_BOOT_TIMEOUT=50\n",
            "U_BOOT_TIMEOUT=10\n",
            "U_BOOT_DEFAULT=\"l1\"\n",
        ];
        let menu = UbootMenu::merge(
            files
                .iter()
                .cloned()
                .zip(texts.iter().map(|t| Fragment::Text(t))),
        );
        assert_eq!(menu.default_label(), "l1");
        assert_eq!(
            menu.get("U_BOOT_DEFAULT").unwrap().file,
            "/etc/u-boot-menu/conf.d/rvl.conf"
        );
        assert_eq!(menu.get("U_BOOT_TIMEOUT").unwrap().assignment.value, "10");
        assert_eq!(menu.files.len(), 3);
        let none = UbootMenu::merge([
            (DEFAULTS_FILE.to_string(), Fragment::Missing),
            (
                "/etc/u-boot-menu/conf.d/a.conf".to_string(),
                Fragment::Unreadable,
            ),
        ]);
        assert_eq!(none.default_label(), "l0");
        assert_eq!(none.unreadable, ["/etc/u-boot-menu/conf.d/a.conf"]);
    }

    #[test]
    fn labels_follow_linux_version_sort() {
        let names: Vec<String> = [
            "vmlinuz-6.1.75-npu-port",
            "vmlinuz-7.0.0-rc3-marfrit-A1",
            "initrd.img-6.1.75-npu-port",
            "config-6.1.75-npu-port",
            "vmlinuz-5.0.old",
        ]
        .map(String::from)
        .to_vec();
        let kernels = installed_kernels(&names);
        assert_eq!(kernels, ["7.0.0-rc3-marfrit-A1", "6.1.75-npu-port"]);
        assert_eq!(
            label_for_release(&kernels, "6.1.75-npu-port").as_deref(),
            Some("l1")
        );
        assert_eq!(
            label_for_release(&kernels, "7.0.0-rc3-marfrit-A1").as_deref(),
            Some("l0")
        );
        assert_eq!(label_for_release(&kernels, "5.10"), None);
    }
}
