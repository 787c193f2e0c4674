//! Device-tree overlays rvl ships as source (`kernel/overlays/*.dts`), for boards whose mainline
//! device tree leaves `&gpu` disabled. They are embedded in the binary and compiled with
//! `dtc -@` when setup plans (so `--dry-run` already knows whether `dtc` is there), then
//! installed the way the image's boot layout expects (see `steps::gpu_overlay`).
//!
//! The doctor names `rvl setup --only gpu-overlay` only for a board listed here, so it never
//! suggests a fix setup cannot carry out.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An overlay source embedded in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlay {
    /// The installed file's stem. It starts with `rvl`: the journal validator lets rollback
    /// delete only rvl's own overlays in the overlay directories.
    pub name: &'static str,
    /// The profile ids it is for.
    pub boards: &'static [&'static str],
    /// The `.dts` text.
    pub source: &'static str,
}

/// Every shipped overlay.
pub const OVERLAYS: &[Overlay] = &[Overlay {
    name: "rvl-rk3588-coolpi-cm5-gpu",
    boards: &["ampere", "coolpi-cm5-evb"],
    source: include_str!("../../kernel/overlays/rvl-rk3588-coolpi-cm5-gpu.dts"),
}];

/// The overlay that enables the GPU on this board's mainline device tree, if rvl ships one.
pub fn for_board(board: &str) -> Option<&'static Overlay> {
    OVERLAYS.iter().find(|o| o.boards.contains(&board))
}

/// What the Debian package that has `dtc` is called (the blocked step's fix names it).
pub const DTC_PACKAGE: &str = "device-tree-compiler";

/// An overlay and what compiling it gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub overlay: &'static Overlay,
    pub dtb: Result<Vec<u8>, CompileError>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// No `dtc` to run.
    NoDtc(String),
    /// `dtc` ran and refused the source (a bug in rvl's overlay).
    Failed(String),
}

/// `dtc`: `RVL_DTC` when set (tests point it at a missing file), else the first on PATH.
pub fn find_dtc(var: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = var {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("dtc"))
        .find(|p| p.is_file())
}

/// Compile an overlay's source with `dtc -@ -I dts -O dtb`. It runs on the host, not in the
/// image: the input is rvl's own embedded source, never a file of the tree being set up.
pub fn compile(overlay: &'static Overlay, dtc: Option<&Path>) -> Compiled {
    let dtb = match dtc {
        None => Err(CompileError::NoDtc(
            "`dtc` (the device-tree compiler) is not installed".into(),
        )),
        Some(dtc) => run_dtc(dtc, overlay.source),
    };
    Compiled { overlay, dtb }
}

fn run_dtc(dtc: &Path, source: &str) -> Result<Vec<u8>, CompileError> {
    let started = Command::new(dtc)
        .args(["-@", "-q", "-I", "dts", "-O", "dtb", "-o", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = started
        .map_err(|e| CompileError::NoDtc(format!("{} could not be started: {e}", dtc.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(source.as_bytes())
            .map_err(|e| CompileError::Failed(format!("writing to dtc: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| CompileError::Failed(format!("dtc: {e}")))?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(CompileError::Failed(format!(
            "dtc refused rvl's overlay ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_overlay_is_an_rvl_named_plugin_that_enables_the_gpu() {
        for o in OVERLAYS {
            assert!(o.name.starts_with("rvl-"), "{}", o.name);
            assert!(o.source.contains("/plugin/;"), "{}", o.name);
            assert!(o.source.contains("&gpu {"), "{}", o.name);
            assert!(o.source.contains("status = \"okay\";"), "{}", o.name);
            assert!(o.source.contains("mali-supply = <&"), "{}", o.name);
        }
        assert_eq!(
            for_board("ampere").map(|o| o.name),
            Some("rvl-rk3588-coolpi-cm5-gpu")
        );
        assert!(for_board("boltzmann").is_none());
    }

    #[test]
    fn every_board_whose_mainline_dt_leaves_the_gpu_off_has_an_overlay() {
        let profiles = crate::profile::Profiles::builtin().unwrap();
        for p in profiles.all() {
            if p.mainline_enables_gpu == Some(false) {
                assert!(for_board(&p.id).is_some(), "{}", p.id);
            }
        }
    }

    #[test]
    fn each_overlay_points_mali_supply_at_the_regulator_its_boards_profiles_name() {
        let profiles = crate::profile::Profiles::builtin().unwrap();
        for o in OVERLAYS {
            for board in o.boards {
                let p = profiles.by_id(board).unwrap();
                let label = p.gpu.supply.as_deref().expect("gpu.supply");
                assert!(
                    o.source.contains(&format!("mali-supply = <&{label}>;")),
                    "{} for {board}",
                    o.name
                );
            }
        }
    }

    #[test]
    fn a_missing_dtc_is_reported_as_such() {
        let c = compile(&OVERLAYS[0], None);
        assert!(matches!(c.dtb, Err(CompileError::NoDtc(_))));
        assert_eq!(find_dtc(Some(Path::new("/nonexistent/dtc"))), None);
    }
}
