//! `state.json` and `journal.json` are read back from the root, which may be an image someone
//! else made: every entry is checked before rollback acts on it. An entry must name a path that
//! setup itself creates or edits ([`touches`], the one list); it may delete ("was: absent") only
//! what setup owns; a recorded mode is one setup records (no setuid, setgid or sticky bit, not
//! world-writable); ids and backup names are the ones setup makes. Anything else refuses the
//! whole file, naming it, before anything is changed.

use std::path::{Component, Path};

use super::fsops::RECORDED_MODE_MASK;
use super::journal::{Applied, Before, Entry, Journal, State, SCHEMA};
use super::paths;
use crate::bootcfg::armbian::ARMBIAN_ENV;
use crate::bootcfg::ubootmenu::EXTLINUX_CONF;
use crate::error::Error;

/// How far setup's own changes to a path go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Touch {
    /// An ancestor directory of such paths: setup may create it, and remove it when empty.
    Dir,
    /// A system file setup edits: rollback may restore it, never delete it.
    Edits,
    /// A boot link setup repoints or creates (Armbian's `/boot/Image`): rollback may delete it
    /// only while it is still a link ([`may_delete`]).
    Link,
    /// A file or tree setup creates: rollback may delete it.
    Owns,
}

/// Never journaled, even as directories setup created (removal when empty would still be wrong).
const NEVER_REMOVED: &[&str] = &["/", "/boot"];

/// Where setup installs what it builds (`paths::prefix_for`).
const RVL_PREFIX: &str = "/opt/rvl/";
/// Where the firmware step installs (`firmware::standard_path`; `/lib` may be a link to `/usr/lib`).
const FIRMWARE_DIRS: &[&str] = &["/lib/firmware/", "/usr/lib/firmware/"];
/// Where device-tree overlays live (the gpu-overlay step renames `X.dtbo` to `X.dtbo.disabled`).
const OVERLAY_DIRS: &[&str] = &["/boot/dtbo/", "/boot/overlay-user/"];

/// What setup does to the in-root `path`, derived from the paths its steps name; `None` for a
/// path setup never touches.
pub fn touches(path: &str) -> Option<Touch> {
    let owned_files = [
        paths::RVL_CONF,
        paths::RVL_OVERLAYS_CONF,
        paths::ICD_FILE,
        paths::ENVIRONMENT_D_FILE,
        paths::PROFILE_D_FILE,
        paths::LLAMA_WRAPPERS[0].0,
        paths::LLAMA_WRAPPERS[1].0,
    ];
    let edited_files = [
        paths::GROUP_FILE,
        paths::GSHADOW_FILE,
        EXTLINUX_CONF,
        ARMBIAN_ENV,
    ];
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let under = |dir: &str| path.starts_with(dir) && path.len() > dir.len();
    let direct = |dir: &str| under(dir) && !path[dir.len()..].contains('/');
    let found = if owned_files.contains(&path) || under(RVL_PREFIX) {
        Some(Touch::Owns)
    } else if FIRMWARE_DIRS.iter().any(|d| under(d)) {
        // The CSF firmware is the one file setup installs there; other firmware is not its.
        Some(if name.starts_with("mali") {
            Touch::Owns
        } else {
            Touch::Dir
        })
    } else if OVERLAY_DIRS.iter().any(|d| direct(d)) {
        // A disabled overlay and an overlay rvl installs are setup's; another one is restored only.
        if name.ends_with(".dtbo.disabled") || name.starts_with("rvl") {
            Some(Touch::Owns)
        } else if name.ends_with(".dtbo") {
            Some(Touch::Edits)
        } else {
            None
        }
    } else if paths::ARMBIAN_BOOT_LINKS.contains(&path) {
        Some(Touch::Link)
    } else if edited_files.contains(&path) {
        Some(Touch::Edits)
    } else if direct("/boot/") && name.starts_with("initrd.img-") {
        // update-initramfs regenerates it for the firmware step (and creates it if missing).
        Some(Touch::Owns)
    } else {
        None
    };
    found.or_else(|| {
        let is_ancestor = |of: &str| of.starts_with(path) && of[path.len()..].starts_with('/');
        let ancestor = owned_files
            .iter()
            .chain(edited_files.iter())
            .copied()
            .chain([RVL_PREFIX, "/boot/dtbo/", "/boot/overlay-user/"])
            .any(is_ancestor)
            || FIRMWARE_DIRS.iter().any(|d| is_ancestor(d));
        (ancestor && !NEVER_REMOVED.contains(&path)).then_some(Touch::Dir)
    })
}

/// A clean absolute path: no `.`, `..`, empty component, trailing `/` or NUL.
fn is_clean_absolute(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains('\0')
        && !path.ends_with('/')
        && Path::new(path)
            .components()
            .skip(1)
            .all(|c| matches!(c, Component::Normal(_)))
        && !path.contains("//")
        && !path.split('/').skip(1).any(|c| c == "." || c == "..")
}

/// An id setup makes (`<seconds>-<pid>`): it names a directory under `backups/`.
fn is_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Check one entry of transaction `id`, masking its mode. Err says why, in words.
fn entry(id: &str, e: &mut Entry) -> Result<(), String> {
    if !is_clean_absolute(&e.path) {
        return Err(format!("`{}` is not a clean absolute path", e.path));
    }
    let Some(touch) = touches(&e.path) else {
        return Err(format!("`{}` is not a path setup changes", e.path));
    };
    match &mut e.before {
        Before::Absent if !matches!(touch, Touch::Owns | Touch::Link) => Err(format!(
            "`{}` was recorded as created by setup, but setup never creates it (rollback would delete it)",
            e.path
        )),
        Before::AbsentDir if matches!(touch, Touch::Edits | Touch::Link) => Err(format!(
            "`{}` was recorded as a directory setup created; it is a file setup edits",
            e.path
        )),
        Before::File { .. } | Before::Symlink { .. } if touch == Touch::Dir => Err(format!(
            "`{}` is a directory, not a file setup edits",
            e.path
        )),
        Before::File { backup, meta, .. } => {
            if *backup != format!("backups/{id}{}", e.path) {
                return Err(format!(
                    "`{}`: backup `{backup}` is not where setup keeps it",
                    e.path
                ));
            }
            recorded_mode(&e.path, meta.mode)
        }
        Before::Symlink { target } if target.is_empty() || target.contains('\0') => {
            Err(format!("`{}`: empty link target", e.path))
        }
        _ => Ok(()),
    }
}

/// A mode setup records ([`RECORDED_MODE_MASK`]): restoring any other would hand the file to
/// every user (world-writable `/etc/group`) or make it run as its owner (setuid).
fn recorded_mode(path: &str, mode: u32) -> Result<(), String> {
    let extra = mode & !RECORDED_MODE_MASK;
    if extra == 0 {
        return Ok(());
    }
    let names: Vec<&str> = [
        (0o4000, "setuid"),
        (0o2000, "setgid"),
        (0o1000, "sticky"),
        (0o0002, "world-writable"),
    ]
    .iter()
    .filter(|(bit, _)| extra & bit != 0)
    .map(|(_, name)| *name)
    .collect();
    let what = if names.is_empty() {
        "bits that are not permission bits".to_string()
    } else {
        names.join(", ")
    };
    Err(format!(
        "`{path}`: recorded mode {mode:o} is {what}, which setup never records (it would restore the file that way)"
    ))
}

/// Whether undoing "was: absent" may remove what is at `path` now: anything setup owns, and a
/// boot link only while it is a link (a kernel image file there is not setup's).
pub fn may_delete(path: &str, is_link_now: bool) -> bool {
    match touches(path) {
        Some(Touch::Owns) => true,
        Some(Touch::Link) => is_link_now,
        _ => false,
    }
}

fn entries(file: &Path, id: &str, list: &mut [Entry]) -> Result<(), Error> {
    if !is_id(id) {
        return Err(refused(
            file,
            &format!("transaction id `{id}` is not one setup makes"),
        ));
    }
    for e in list {
        entry(id, e).map_err(|why| refused(file, &why))?;
    }
    Ok(())
}

fn schema(file: &Path, v: u32) -> Result<(), Error> {
    // Schema 1 (no `after`) is still read: its entries are restored whole.
    if (1..=SCHEMA).contains(&v) {
        return Ok(());
    }
    Err(Error::Journal(format!(
        "{}: schema_version {v} is not one this rvl knows (it reads 1 to {SCHEMA}); it was written by another rvl, or by hand: nothing was changed",
        file.display()
    )))
}

fn refused(file: &Path, why: &str) -> Error {
    Error::Journal(format!(
        "{}: refused: {why}; this file was not written by rvl setup (nothing was changed; move it away to start over)",
        file.display()
    ))
}

/// `state.json`, checked (`file` is its host path, for messages).
pub fn state(file: &Path, mut st: State) -> Result<State, Error> {
    schema(file, st.schema_version)?;
    for Applied {
        id, entries: list, ..
    } in &mut st.transactions
    {
        entries(file, id, list)?;
    }
    Ok(st)
}

/// `journal.json`, checked.
pub fn journal(file: &Path, mut j: Journal) -> Result<Journal, Error> {
    schema(file, j.schema_version)?;
    entries(file, &j.id, &mut j.entries)?;
    Ok(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_setup_owns_edits_and_never_touches() {
        for owned in [
            paths::RVL_CONF,
            paths::ICD_FILE,
            "/opt/rvl/mesa-26.1.6-rvl1",
            "/lib/firmware/arm/mali/arch10.8/mali_csffw.bin",
            "/usr/lib/firmware/arm/mali/arch10.8/mali_csffw.bin",
            "/boot/dtbo/rk3588-panthor.dtbo.disabled",
            "/boot/initrd.img-7.0.0",
            "/usr/local/bin/rvl-llama-server",
            "/usr/local/bin/rvl-llama-bench",
        ] {
            assert_eq!(touches(owned), Some(Touch::Owns), "{owned}");
        }
        assert_eq!(touches("/boot/Image"), Some(Touch::Link));
        assert!(may_delete("/boot/Image", true) && !may_delete("/boot/Image", false));
        assert!(!may_delete("/boot", false) && !may_delete("/", false));
        for edited in ["/etc/group", EXTLINUX_CONF, "/boot/dtbo/x.dtbo"] {
            assert_eq!(touches(edited), Some(Touch::Edits), "{edited}");
        }
        assert_eq!(touches("/lib/firmware/rtl_nic/a.bin"), Some(Touch::Dir));
        for dir in [
            "/opt/rvl",
            "/opt",
            "/etc",
            "/etc/u-boot-menu/conf.d",
            "/etc/vulkan",
            "/lib/firmware/arm",
            "/usr/local/bin",
            "/usr/local",
        ] {
            assert_eq!(touches(dir), Some(Touch::Dir), "{dir}");
        }
        // Only the two wrappers: nothing else on PATH is setup's to restore or delete.
        for other in [
            "/usr/local/bin/llama-server",
            "/usr/local/bin/rvl-llama-cli",
            "/usr/local/bin/rvl-llama-server.bak",
            "/usr/bin/rvl-llama-server",
            "/usr/local/bin/rvl-llama-bench/x",
        ] {
            assert_eq!(touches(other), None, "{other}");
        }
        for never in [
            "/",
            "/boot",
            "/etc/passwd",
            "/boot/vmlinuz-6.1",
            "/usr/bin/sh",
        ] {
            assert_eq!(touches(never), None, "{never}");
        }
    }

    #[test]
    fn unclean_paths_are_not_clean() {
        for bad in [
            "etc/group",
            "/etc/../etc/group",
            "/etc//group",
            "/etc/./group",
            "/etc/",
        ] {
            assert!(!is_clean_absolute(bad), "{bad}");
        }
        assert!(is_clean_absolute("/etc/group"));
    }
}
