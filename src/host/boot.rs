//! The boot configuration as files on the root show it: u-boot-menu's fragments and the
//! kernels in `/boot`. The formats are parsed (pure) in [`crate::bootcfg`]; reading is here.

use super::Root;
use crate::bootcfg::armbian::ARMBIAN_ENV;
use crate::bootcfg::ubootmenu::{self, Fragment, UbootMenu, EXTLINUX_CONF};
use crate::profile::BootLayout;

/// Is u-boot-menu in charge of extlinux.conf on this root?
pub fn uboot_menu_installed(root: &Root) -> bool {
    ubootmenu::INSTALLED_MARKERS.iter().any(|p| root.exists(p))
}

/// u-boot-menu's merged configuration, as u-boot-update would source it.
pub fn uboot_menu(root: &Root) -> UbootMenu {
    let names = |dir| root.list_dir(dir).unwrap_or_default();
    let files = ubootmenu::conf_files(
        &names(ubootmenu::PACKAGE_CONF_DIR),
        &names(ubootmenu::ADMIN_CONF_DIR),
    );
    let texts: Vec<(String, std::io::Result<String>)> = files
        .into_iter()
        .map(|f| {
            let text = root.read_string(&f);
            (f, text)
        })
        .collect();
    UbootMenu::merge(texts.iter().map(|(f, t)| {
        let fragment = match t {
            Ok(text) => Fragment::Text(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Fragment::Missing,
            Err(_) => Fragment::Unreadable,
        };
        (f.clone(), fragment)
    }))
}

/// How this image chooses its kernel, as its files say (what is on the image wins over the
/// profile's usual layout); None when none of the known mechanisms is there.
pub fn layout(root: &Root) -> Option<BootLayout> {
    if root.exists(ARMBIAN_ENV) {
        Some(BootLayout::Armbian)
    } else if uboot_menu_installed(root) {
        Some(BootLayout::UBootMenu)
    } else if root.exists(EXTLINUX_CONF) {
        Some(BootLayout::Extlinux)
    } else {
        None
    }
}

/// Kernel releases installed in `/boot`, highest first (u-boot-update's `l0`, `l1`, ...).
pub fn installed_kernels(root: &Root) -> Vec<String> {
    ubootmenu::installed_kernels(&root.list_dir("/boot").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn the_menu_is_read_from_the_root_in_u_boot_update_order() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        fs::create_dir_all(b.join("etc/default")).unwrap();
        fs::create_dir_all(b.join("usr/share/u-boot-menu/conf.d")).unwrap();
        fs::create_dir_all(b.join("etc/u-boot-menu/conf.d")).unwrap();
        fs::write(b.join("etc/default/u-boot"), "U_BOOT_DEFAULT=l2\n").unwrap();
        fs::write(
            b.join("usr/share/u-boot-menu/conf.d/radxa.conf"),
            "U_BOOT_TIMEOUT=10\n",
        )
        .unwrap();
        fs::write(
            b.join("etc/u-boot-menu/conf.d/rvl.conf"),
            "U_BOOT_DEFAULT=\"l1\"\n",
        )
        .unwrap();
        let root = Root::new(b);
        assert!(uboot_menu_installed(&root));
        let menu = uboot_menu(&root);
        assert_eq!(menu.default_label(), "l1");
        assert_eq!(menu.files.len(), 3);
        assert_eq!(menu.get("U_BOOT_TIMEOUT").unwrap().assignment.value, "10");
    }

    #[test]
    fn kernels_come_from_boot_and_an_empty_root_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert!(installed_kernels(&root).is_empty());
        assert!(!uboot_menu_installed(&root));
        assert_eq!(uboot_menu(&root).default_label(), "l0");
        fs::create_dir_all(dir.path().join("boot")).unwrap();
        fs::write(dir.path().join("boot/vmlinuz-6.1.75"), "").unwrap();
        fs::write(dir.path().join("boot/vmlinuz-7.0.0"), "").unwrap();
        assert_eq!(installed_kernels(&root), ["7.0.0", "6.1.75"]);
    }
}
