//! Setup's own edits to the line-oriented files it shares with the admin (`/etc/group`,
//! `/etc/gshadow`, `armbianEnv.txt`, the u-boot-menu fragment, extlinux's `default`), kept as
//! data. When such a file changed after setup, rollback undoes only these edits and keeps every
//! other line, instead of putting back a backup that would erase the later change. Pure: text
//! in, text out; the caller reads and writes.

use serde::{Deserialize, Serialize};

use super::paths::{GROUP_FILE, GSHADOW_FILE, RVL_CONF};
use crate::bootcfg::armbian::{ArmbianEnv, ARMBIAN_ENV};
use crate::bootcfg::extlinux::Extlinux;
use crate::bootcfg::ubootmenu::EXTLINUX_CONF;

/// One edit setup made, in the terms of the file's format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "kebab-case")]
pub enum Edit {
    /// `member` was added to the member list (4th field) of `group`.
    MemberAdded { group: String, member: String },
    /// A whole line (without its ending) was added.
    LineAdded { line: String },
    /// `key=` went from `old` to `new` (None: no such line).
    KeySet {
        key: String,
        old: Option<String>,
        new: Option<String>,
    },
    /// `token` was added to the space-separated value of `key` (Armbian's `overlays=`).
    TokenAdded { key: String, token: String },
    /// extlinux's `default` went from the label booting `old_kernel` to one booting `new_kernel`.
    DefaultSet {
        old_label: Option<String>,
        old_kernel: Option<String>,
        new_label: String,
        new_kernel: Option<String>,
    },
}

/// How a file setup edits is structured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `name:password:gid:members`.
    Group,
    /// `key=value` lines (armbianEnv.txt, a u-boot-menu fragment).
    KeyValue,
    /// extlinux.conf: only the `default` line is setup's; the rest is generated or the admin's.
    Extlinux,
}

/// The format of a path setup edits line-wise; None for every other path (restored whole).
pub fn format_of(path: &str) -> Option<Format> {
    match path {
        GROUP_FILE | GSHADOW_FILE => Some(Format::Group),
        ARMBIAN_ENV | RVL_CONF => Some(Format::KeyValue),
        EXTLINUX_CONF => Some(Format::Extlinux),
        _ => None,
    }
}

fn body(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

fn members(field: &str) -> Vec<&str> {
    field.split(',').filter(|m| !m.is_empty()).collect()
}

/// The edits that turn `before` into `after`, or None when the change is not one this format
/// can express (then rollback cannot undo it line-wise).
pub fn derive(format: Format, before: &str, after: &str) -> Option<Vec<Edit>> {
    match format {
        Format::Group => derive_group(before, after),
        Format::KeyValue => derive_key_value(before, after),
        Format::Extlinux => Some(derive_extlinux(before, after)),
    }
}

fn derive_group(before: &str, after: &str) -> Option<Vec<Edit>> {
    let old: Vec<&str> = before.lines().map(body).collect();
    let mut edits = Vec::new();
    let mut seen = Vec::new();
    for line in after.lines().map(body) {
        if let Some(i) = old.iter().position(|l| *l == line) {
            seen.push(i);
            continue;
        }
        let f: Vec<&str> = line.split(':').collect();
        let same_group = old.iter().position(|l| {
            let g: Vec<&str> = l.split(':').collect();
            f.len() == 4 && g.len() == 4 && g[..3] == f[..3]
        });
        match same_group {
            Some(i) => {
                let was = members(old[i].split(':').nth(3).unwrap_or(""));
                let now = members(f[3]);
                if !was.iter().all(|m| now.contains(m)) {
                    return None;
                }
                for m in now.iter().filter(|m| !was.contains(m)) {
                    edits.push(Edit::MemberAdded {
                        group: f[0].to_string(),
                        member: m.to_string(),
                    });
                }
                seen.push(i);
            }
            None => edits.push(Edit::LineAdded {
                line: line.to_string(),
            }),
        }
    }
    // Setup never removes a line from the group files.
    (0..old.len()).all(|i| seen.contains(&i)).then_some(edits)
}

fn derive_key_value(before: &str, after: &str) -> Option<Vec<Edit>> {
    let (old, new) = (ArmbianEnv::parse(before), ArmbianEnv::parse(after));
    let is_pair = |l: &str| {
        l.split_once('=')
            .is_some_and(|(k, _)| !k.trim().is_empty() && !k.trim_start().starts_with('#'))
    };
    let mut edits = Vec::new();
    let mut old_other: Vec<&str> = before.lines().map(body).filter(|l| !is_pair(l)).collect();
    for line in after.lines().map(body).filter(|l| !is_pair(l)) {
        match old_other.iter().position(|l| *l == line) {
            Some(i) => {
                old_other.remove(i);
            }
            None => edits.push(Edit::LineAdded {
                line: line.to_string(),
            }),
        }
    }
    if !old_other.is_empty() {
        return None;
    }
    let mut keys: Vec<&str> = old.pairs().chain(new.pairs()).map(|(k, _)| k).collect();
    keys.dedup();
    let mut done = Vec::new();
    for key in keys {
        if done.contains(&key) {
            continue;
        }
        done.push(key);
        let (was, now) = (old.get(key), new.get(key));
        if was == now {
            continue;
        }
        let was_tokens: Vec<&str> = was.unwrap_or("").split_whitespace().collect();
        let now_tokens: Vec<&str> = now.unwrap_or("").split_whitespace().collect();
        let appended = key.ends_with("overlays")
            && now.is_some()
            && now_tokens.len() > was_tokens.len()
            && now_tokens[..was_tokens.len()] == was_tokens[..];
        if appended {
            for t in &now_tokens[was_tokens.len()..] {
                edits.push(Edit::TokenAdded {
                    key: key.to_string(),
                    token: t.to_string(),
                });
            }
        } else {
            edits.push(Edit::KeySet {
                key: key.to_string(),
                old: was.map(str::to_string),
                new: now.map(str::to_string),
            });
        }
    }
    Some(edits)
}

fn derive_extlinux(before: &str, after: &str) -> Vec<Edit> {
    let (old, new) = (Extlinux::parse(before), Extlinux::parse(after));
    let (Some(new_entry), old_entry) = (new.default_entry(), old.default_entry()) else {
        return Vec::new();
    };
    let old_kernel = old_entry.and_then(|e| e.linux.clone());
    if old_entry.map(|e| &e.label) == Some(&new_entry.label) && old_kernel == new_entry.linux {
        return Vec::new();
    }
    vec![Edit::DefaultSet {
        old_label: old_entry.map(|e| e.label.clone()),
        old_kernel,
        new_label: new_entry.label.clone(),
        new_kernel: new_entry.linux.clone(),
    }]
}

/// Undo `edits` in `current`, keeping every other line. `kernel_exists` tells whether an
/// in-root kernel path is there (a default is never pointed at a missing kernel). Err says why
/// an edit cannot be undone (a later change to the same key, a missing kernel).
pub fn undo(
    current: &str,
    edits: &[Edit],
    kernel_exists: &dyn Fn(&str) -> bool,
) -> Result<String, String> {
    let mut lines: Vec<String> = current.split_inclusive('\n').map(str::to_string).collect();
    for edit in edits.iter().rev() {
        match edit {
            Edit::MemberAdded { group, member } => {
                for l in lines.iter_mut() {
                    let b = body(l);
                    let f: Vec<&str> = b.split(':').collect();
                    if f.len() == 4 && f[0] == group {
                        let kept: Vec<&str> =
                            members(f[3]).into_iter().filter(|m| m != member).collect();
                        let ending = l[b.len()..].to_string();
                        *l = format!("{}:{}{ending}", f[..3].join(":"), kept.join(","));
                    }
                }
            }
            Edit::LineAdded { line } => {
                if let Some(i) = lines.iter().rposition(|l| body(l) == line) {
                    lines.remove(i);
                }
            }
            Edit::KeySet { key, old, new } => undo_key(&mut lines, key, old, new)?,
            Edit::TokenAdded { key, token } => {
                let mut env = ArmbianEnv::parse(&lines.concat());
                if let Some(v) = env.get(key) {
                    let kept: Vec<&str> = v.split_whitespace().filter(|t| t != token).collect();
                    let kept = kept.join(" ");
                    env.set(key, &kept);
                    lines = env
                        .render()
                        .split_inclusive('\n')
                        .map(str::to_string)
                        .collect();
                }
            }
            Edit::DefaultSet {
                old_label,
                old_kernel,
                new_kernel,
                ..
            } => {
                let text = lines.concat();
                let text = undo_default(&text, old_label, old_kernel, new_kernel, kernel_exists)?;
                lines = text.split_inclusive('\n').map(str::to_string).collect();
            }
        }
    }
    Ok(lines.concat())
}

fn undo_key(
    lines: &mut Vec<String>,
    key: &str,
    old: &Option<String>,
    new: &Option<String>,
) -> Result<(), String> {
    let env = ArmbianEnv::parse(&lines.concat());
    let now = env.get(key).map(str::to_string);
    if now == *old {
        return Ok(());
    }
    if now != *new {
        return Err(format!(
            "{key} is now {}, changed after setup set it to {}",
            now.as_deref().unwrap_or("unset"),
            new.as_deref().unwrap_or("unset")
        ));
    }
    let at = lines.iter().rposition(|l| {
        l.split_once('=')
            .is_some_and(|(k, _)| k.trim() == key && !k.trim_start().starts_with('#'))
    });
    match (old, at) {
        (None, Some(i)) => {
            lines.remove(i);
        }
        (Some(v), _) => {
            let mut env = ArmbianEnv::parse(&lines.concat());
            env.set(key, v);
            *lines = env
                .render()
                .split_inclusive('\n')
                .map(str::to_string)
                .collect();
        }
        (None, None) => {}
    }
    Ok(())
}

/// Point `default` back at the label that boots the kernel it booted before setup, if that
/// kernel is still there; a default someone changed since is theirs and stays.
fn undo_default(
    text: &str,
    old_label: &Option<String>,
    old_kernel: &Option<String>,
    new_kernel: &Option<String>,
    kernel_exists: &dyn Fn(&str) -> bool,
) -> Result<String, String> {
    let mut e = Extlinux::parse(text);
    let Some(current) = e.default_entry().cloned() else {
        return Ok(text.to_string());
    };
    if current.linux != *new_kernel {
        return Ok(text.to_string());
    }
    let Some(kernel) = old_kernel else {
        return Err(format!(
            "the default before setup booted no kernel; the default stays {}",
            current.label
        ));
    };
    if !kernel_exists(kernel) {
        return Err(format!(
            "the default before setup booted {kernel}, which is missing now; the default stays {} ({})",
            current.label,
            current.linux.as_deref().unwrap_or("?")
        ));
    }
    let boots = |en: &&crate::bootcfg::extlinux::Entry| en.linux.as_deref() == Some(kernel);
    let label = e
        .entries()
        .iter()
        .filter(boots)
        .find(|en| Some(&en.label) == old_label.as_ref())
        .or_else(|| e.entries().iter().find(boots))
        .map(|en| en.label.clone());
    let Some(label) = label else {
        return Err(format!(
            "no label boots {kernel} any more (the default before setup); the default stays {}",
            current.label
        ));
    };
    e.set_default(&label);
    Ok(e.render())
}

/// The kernel an extlinux.conf boots by default, when it names one.
pub fn extlinux_default_kernel(text: &str) -> Option<String> {
    Extlinux::parse(text)
        .default_entry()
        .and_then(|e| e.linux.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUP: &str = "root:x:0:\nvideo:x:44:bob\nrender:x:105:\n";

    fn always(_: &str) -> bool {
        true
    }

    #[test]
    fn a_member_added_by_setup_is_removed_and_a_later_group_line_stays() {
        let setup = "root:x:0:\nvideo:x:44:bob,alice\nrender:x:105:alice\n";
        let edits = derive(Format::Group, GROUP, setup).unwrap();
        assert_eq!(edits.len(), 2, "{edits:?}");
        let later = format!("{setup}docker:x:999:alice\n")
            .replace("render:x:105:alice", "render:x:105:alice,carol");
        let undone = undo(&later, &edits, &always).unwrap();
        assert_eq!(
            undone,
            "root:x:0:\nvideo:x:44:bob\nrender:x:105:carol\ndocker:x:999:alice\n"
        );
    }

    #[test]
    fn a_removed_group_line_is_not_an_edit_setup_makes() {
        assert_eq!(derive(Format::Group, GROUP, "root:x:0:\n"), None);
        assert_eq!(
            derive(
                Format::Group,
                GROUP,
                "root:x:0:\nvideo:x:44:\nrender:x:105:\n"
            ),
            None
        );
    }

    #[test]
    fn an_overlay_token_is_removed_and_a_key_set_later_is_a_conflict() {
        let before = "verbosity=1\noverlays=uart1\n";
        let after = "verbosity=1\noverlays=uart1 panthor-gpu\n";
        let edits = derive(Format::KeyValue, before, after).unwrap();
        let later = "verbosity=7\noverlays=uart1 panthor-gpu i2c0\nextra=1\n";
        assert_eq!(
            undo(later, &edits, &always).unwrap(),
            "verbosity=7\noverlays=uart1 i2c0\nextra=1\n"
        );
        let conf = "# rvl\nU_BOOT_DEFAULT=\"l0\"\n";
        let edits = derive(Format::KeyValue, "", conf).unwrap();
        assert_eq!(
            undo(&format!("{conf}# mine\n"), &edits, &always).unwrap(),
            "# mine\n"
        );
        let changed = "# rvl\nU_BOOT_DEFAULT=\"l1\"\n";
        let err = undo(changed, &edits, &always).unwrap_err();
        assert!(err.contains("U_BOOT_DEFAULT is now \"l1\""), "{err}");
    }

    fn ext(default: &str, kernels: &[&str]) -> String {
        let mut s = format!("default {default}\n");
        for (i, k) in kernels.iter().enumerate() {
            s.push_str(&format!("label l{i}\n\tlinux /boot/vmlinuz-{k}\n"));
        }
        s
    }

    #[test]
    fn the_default_goes_back_to_the_old_kernel_only_while_it_exists() {
        let edits = derive(
            Format::Extlinux,
            &ext("l1", &["7", "6"]),
            &ext("l0", &["7", "6"]),
        )
        .unwrap();
        // A newer kernel shifted the labels: the old kernel is now l2.
        let later = ext("l1", &["8", "7", "6"]);
        let undone = undo(&later, &edits, &always).unwrap();
        assert!(undone.starts_with("default l2\n"), "{undone}");
        let gone = ext("l0", &["7"]);
        let err = undo(&gone, &edits, &|k| k != "/boot/vmlinuz-6").unwrap_err();
        assert!(err.contains("/boot/vmlinuz-6, which is missing"), "{err}");
        // A default someone changed since is theirs.
        let theirs = ext("l0", &["8", "7", "6"]);
        assert_eq!(undo(&theirs, &edits, &always).unwrap(), theirs);
    }
}
