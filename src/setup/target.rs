//! What setup moves a board to, taken from its board profile (`profiles/<board>.yaml`): the
//! mainline kernel it should boot, how to recognise a vendor kernel, and the overlay names that
//! switch the GPU driver. The planner sees only this struct.

use serde::Serialize;

use crate::bootcfg::kver::compare_releases;
use crate::error::Error;
use crate::hint::Invocation;
use crate::host;
use crate::profile::{Profile, Profiles};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub board: String,
    /// The exact mainline release the profile pins, if it pins one.
    pub mainline_release: Option<String>,
    /// What to install to get it (named in the error when it is missing).
    pub mainline_package: Option<String>,
    /// Oldest mainline version with panthor: any installed release at least this new will do
    /// when no exact one is pinned.
    pub min_mainline: String,
    /// The vendor (BSP) kernel release the profile knows for this board.
    pub vendor_release: Option<String>,
    /// Armbian overlay that turns panthor on for a vendor kernel (`overlays=`).
    pub armbian_panthor_overlay: Option<String>,
    /// Radxa overlay that turns kbase on; dropping it leaves panthor the GPU's driver.
    pub radxa_kbase_overlay: Option<String>,
    /// Whether the board's mainline device tree enables the GPU (None: unknown).
    pub mainline_enables_gpu: Option<bool>,
}

impl Target {
    pub fn from_profile(p: &Profile) -> Target {
        Target {
            board: p.id.clone(),
            mainline_release: p.kernel.mainline.as_ref().map(|k| k.release.clone()),
            mainline_package: p.kernel.mainline.as_ref().and_then(|k| k.package.clone()),
            min_mainline: p.kernel.min_mainline.clone(),
            vendor_release: p.kernel.vendor.as_ref().map(|k| k.release.clone()),
            armbian_panthor_overlay: p.overlays.armbian_panthor.clone(),
            radxa_kbase_overlay: p.overlays.radxa_kbase.clone(),
            mainline_enables_gpu: p.mainline_enables_gpu,
        }
    }

    /// The installed release setup should boot: the pinned one, else the highest release at
    /// least `min_mainline` (`installed` is highest first).
    pub fn pick_kernel<'a>(&self, installed: &'a [String]) -> Option<&'a str> {
        let found = match &self.mainline_release {
            Some(r) => installed.iter().find(|i| *i == r),
            None => installed
                .iter()
                .find(|i| compare_releases(i, &self.min_mainline).is_ge()),
        };
        found.map(String::as_str)
    }

    /// Why the kernel step is blocked on a board that lacks that kernel, and what to install.
    pub fn kernel_blocked(&self, hint: &Invocation) -> (String, String) {
        match (&self.mainline_release, &self.mainline_package) {
            (Some(r), Some(p)) => (
                format!("the mainline kernel {r} is not installed (no /boot/vmlinuz-{r})"),
                format!(
                    "{}, then run setup again",
                    hint.on_board(&format!("sudo apt install {p}"))
                ),
            ),
            (Some(r), None) => (
                format!("the mainline kernel {r} is not installed (no /boot/vmlinuz-{r})"),
                format!("install the kernel {r}, then run setup again"),
            ),
            _ => (
                format!("no mainline kernel {} or newer is installed", self.min_mainline),
                format!(
                    "install a kernel {} or newer built with CONFIG_DRM_PANTHOR, then run setup again",
                    self.min_mainline
                ),
            ),
        }
    }

    /// A vendor (kbase) kernel: the profile's vendor release, or anything older than the
    /// first mainline release with panthor. Ordered like `linux-version sort` (what
    /// u-boot-update numbers its labels by); the doctor's `release_is_mainline` compares x.y.z
    /// instead. They agree on real `uname -r` strings (tested below), so a kernel setup boots is
    /// one the doctor calls mainline.
    pub fn is_vendor_kernel(&self, release: &str) -> bool {
        self.vendor_release.as_deref() == Some(release)
            || compare_releases(release, &self.min_mainline).is_lt()
    }
}

/// Why the running machine is not a board setup can move (no device tree, or not an aarch64
/// system), or None. `arch` is this rvl's architecture (`std::env::consts::ARCH`).
pub fn not_a_board(has_device_tree: bool, arch: &str) -> Option<String> {
    match (has_device_tree, arch) {
        (true, "aarch64") => None,
        (false, "aarch64") => Some("this machine has no device tree".into()),
        (true, a) => Some(format!("this machine is {a}, not aarch64")),
        (false, a) => Some(format!(
            "this machine is {a}, not aarch64, and has no device tree"
        )),
    }
}

/// On the running system, setup changes the machine it runs on: refuse (exit 5) where that is
/// not an RK3588 board, even with `--board`, which names a profile, not a machine. An image
/// (`--root`) is planned for whatever board it is. `lab` is `RVL_LAB_MACHINE`: `1` lets a lab's
/// chroot stand in for a board; any other value is a usage error.
pub fn check_machine(
    root: &crate::host::Root,
    board: Option<&str>,
    lab: Option<&str>,
) -> anyhow::Result<()> {
    match lab {
        None => {}
        Some("1") => return Ok(()),
        Some(other) => {
            return Err(Error::Usage(format!(
                "RVL_LAB_MACHINE={}: expected 1 (let setup change this machine, a lab's stand-in for a board) or leave it unset",
                crate::output::escape_control(other)
            ))
            .into())
        }
    }
    if !root.is_live() {
        return Ok(());
    }
    let dt = host::devicetree::read(root).is_some();
    let Some(why) = not_a_board(dt, std::env::consts::ARCH) else {
        return Ok(());
    };
    let forced = board
        .map(|b| format!(" (--board {b} names the board's profile, not this machine)"))
        .unwrap_or_default();
    Err(Error::Unsupported(format!(
        "{why}, so it is not an RK3588 board, and rvl setup changes the machine it runs on{forced}; run it on the board, or point --root at the board's image (its mounted SD card or disk)"
    ))
    .into())
}

/// The target for `--board`, or for the board the root's device tree names. The rule is the
/// doctor's ([`Profiles::select`]); unlike the doctor, setup cannot go on without a profile, and
/// an unknown board is "unsupported" here (exit 5), not a usage error.
pub fn choose(
    profiles: &Profiles,
    board: Option<&str>,
    root: &crate::host::Root,
) -> anyhow::Result<Target> {
    let compatible = host::devicetree::read(root).map(|dt| dt.compatible);
    match profiles.select(board, compatible.as_deref()) {
        Ok(Some((profile, _))) => Ok(Target::from_profile(profile)),
        Ok(None) => Err(Error::Unsupported(format!(
            "cannot tell which board this is from its device tree; pass --board NAME (known: {})",
            profiles.known_ids()
        ))
        .into()),
        // A --board value that names no profile is a usage error, as in `rvl doctor`.
        Err(unknown) => Err(Error::Usage(unknown.to_string()).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};

    fn target(board: &str) -> Target {
        Target::from_profile(Profiles::builtin().unwrap().by_id(board).unwrap())
    }

    #[test]
    fn pinned_release_or_the_newest_new_enough_one() {
        let installed = vec![
            "7.1.0".to_string(),
            "7.0.0-rc3-marfrit-A1".to_string(),
            "6.1.75-npu-port".to_string(),
        ];
        assert_eq!(
            target("boltzmann").pick_kernel(&installed),
            Some("7.0.0-rc3-marfrit-A1")
        );
        assert_eq!(target("ampere").pick_kernel(&installed), Some("7.1.0"));
        assert_eq!(target("ampere").pick_kernel(&installed[2..]), None);
    }

    #[test]
    fn vendor_kernels_are_the_known_one_or_older_than_panthor() {
        let t = target("boltzmann");
        assert!(t.is_vendor_kernel("6.1.75-npu-port"));
        assert!(t.is_vendor_kernel("6.1.84-8-rk2410"));
        assert!(!t.is_vendor_kernel("7.0.0-rc3-marfrit-A1"));
        assert!(!t.is_vendor_kernel("6.12.1"));
    }

    #[test]
    fn setup_and_the_doctor_agree_on_which_releases_are_vendor_kernels() {
        let profiles = Profiles::builtin().unwrap();
        for board in ["boltzmann", "ampere", "rock-5b", "generic-rk3588"] {
            let profile = profiles.by_id(board).unwrap();
            let t = Target::from_profile(profile);
            for release in [
                "6.1.75-npu-port",
                "6.1.84-8-rk2410",
                "6.1.0-1025-rockchip",
                "6.9.12",
                "6.10.0-rc1",
                "6.10.0",
                "6.12.1",
                "6.16.8-edge-rockchip64",
                "7.0.0-rc3-marfrit-A1",
            ] {
                assert_eq!(
                    t.is_vendor_kernel(release),
                    !crate::doctor::checks::kernel::release_is_mainline(release, Some(profile)),
                    "{board}: {release}"
                );
            }
        }
    }

    #[test]
    fn advice_names_the_package_when_known() {
        let (why, fix) = target("boltzmann").kernel_blocked(&Invocation::live(true));
        assert!(
            why.contains("7.0.0-rc3-marfrit-A1 is not installed"),
            "{why}"
        );
        assert!(
            fix.starts_with("sudo apt install linux-rk3588-marfrit-A1"),
            "{fix}"
        );
        assert!(target("ampere")
            .kernel_blocked(&Invocation::live(true))
            .0
            .contains("6.10 or newer"));
    }

    #[test]
    fn only_an_aarch64_machine_with_a_device_tree_is_a_board() {
        assert_eq!(not_a_board(true, "aarch64"), None);
        assert!(not_a_board(false, "aarch64")
            .unwrap()
            .contains("no device tree"));
        let pc = not_a_board(false, "x86_64").unwrap();
        assert!(
            pc.contains("x86_64") && pc.contains("no device tree"),
            "{pc}"
        );
        assert!(not_a_board(true, "x86_64").unwrap().contains("not aarch64"));
    }

    #[test]
    fn unknown_board_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let root = crate::host::Root::new(d.path());
        let profiles = Profiles::builtin().unwrap();
        let err = choose(&profiles, Some("rock5x"), &root).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::USAGE);
        assert!(err.to_string().contains("`rock5x`"));
        let err = choose(&profiles, None, &root).unwrap_err();
        assert!(err.to_string().contains("pass --board"));
    }
}
