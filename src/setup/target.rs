//! What setup moves a board to: the facts a board profile gives the planner. Until the shared
//! board profiles (`profile.rs`) land on main, the two target boards are described here; the
//! planner only sees this struct, so switching to profiles is a change in [`Target::for_board`].

use serde::Serialize;

use crate::{error, exit};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub board: String,
    /// The mainline kernel setup boots: the highest installed release containing this text.
    pub kernel_match: String,
    /// What to install when no such kernel is in /boot (named in the error).
    pub kernel_package: String,
    /// Releases that are vendor (kbase) kernels: they start with one of these.
    pub vendor_kernel_prefixes: Vec<String>,
    /// Armbian overlay that turns panthor on for a vendor kernel (`overlays=`).
    pub armbian_panthor_overlay: String,
    /// Radxa overlay that turns kbase (mali) on; dropping it leaves panthor the GPU's driver.
    pub radxa_kbase_overlay: String,
}

impl Target {
    pub fn for_board(board: &str) -> anyhow::Result<Target> {
        let common = |board: &str| Target {
            board: board.to_string(),
            // linux-rk3588-marfrit-A1 (research/rk3588-stack.md §5.1); its exact `uname -r`
            // is not known off the board, so match the package's local version.
            kernel_match: "marfrit".into(),
            kernel_package: "linux-rk3588-marfrit-A1".into(),
            vendor_kernel_prefixes: vec!["5.10.".into(), "6.1.".into()],
            armbian_panthor_overlay: "panthor-gpu".into(),
            radxa_kbase_overlay: "rk3588-mali-enable".into(),
        };
        match board {
            "boltzmann" | "ampere" => Ok(common(board)),
            other => Err(error::fail(
                exit::UNSUPPORTED,
                format!("no setup target for board `{other}` (known: boltzmann, ampere)"),
            )),
        }
    }

    pub fn is_vendor_kernel(&self, release: &str) -> bool {
        self.vendor_kernel_prefixes
            .iter()
            .any(|p| release.starts_with(p.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_boards_and_a_clear_error_for_others() {
        assert_eq!(Target::for_board("ampere").unwrap().board, "ampere");
        let err = Target::for_board("rock5b").unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::UNSUPPORTED);
        assert!(err.to_string().contains("`rock5b`"));
        let t = Target::for_board("boltzmann").unwrap();
        assert!(t.is_vendor_kernel("6.1.75-npu-port"));
        assert!(!t.is_vendor_kernel("7.0.0-rc3-marfrit-A1"));
    }
}
