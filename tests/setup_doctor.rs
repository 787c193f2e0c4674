//! After `rvl setup` applies the whole plan, `rvl doctor` on the same root has nothing left to
//! fail, on every boot layout setup can fix: what setup cannot change before a reboot (the
//! running kernel, the live device tree) is a warning that says "reboot", never a failure
//! whose fix is a setup step that would now do nothing.

mod common;

use std::fs;

use common::http::{sha256_hex, Reply};
use common::roots::{self, artifacts, Artifacts};
use common::{fixture_file, have_dtc, rvl, setup, Fixture};
use rvl::exit;

/// The test manifest, serving the header of the real 2026 CSF firmware (so the doctor reads a
/// real header) and a prebuilt panvk archive (so the whole plan runs without meson).
fn full_artifacts() -> Artifacts {
    let firmware = fs::read(fixture_file("firmware/arch10.8-mali_csffw-2026-header.bin")).unwrap();
    let a = artifacts(&firmware, None, &[]);
    let archive = roots::tar(&[("lib/libvulkan_panfrost.so", b"\x7fELF", 0o755)]);
    let url = a
        .server
        .route("/pre/mesa-panvk.tar", Reply::Body(archive.clone()));
    let mut yaml = fs::read_to_string(&a.manifest).unwrap();
    yaml.push_str(&format!(
        "prebuilt:\n  - id: mesa-panvk-aarch64\n    version: \"26.1.6\"\n    arch: aarch64\n    url: {url}\n    size: {}\n    sha256: {}\n    provenance: test\n",
        archive.len(),
        sha256_hex(&archive)
    ));
    fs::write(&a.manifest, yaml).unwrap();
    a
}

/// Apply the whole plan on a copy of `fixture`, then run the doctor as a fresh login shell
/// would: with the `VK_DRIVER_FILES` that setup's `/etc/profile.d/rvl-vulkan.sh` exports.
/// Returns the doctor's findings (`checks`).
fn doctor_after_setup(fixture: &str, board: &str) -> Vec<serde_json::Value> {
    let fx = Fixture::copy(fixture);
    // The lock and state live in var/lib/rvl; the doctor fixtures have no var/lib to hold them.
    fs::create_dir_all(fx.join("var/lib")).unwrap();
    let a = full_artifacts();
    let setup_run = |extra: &str| {
        setup(&fx, &a.manifest)
            .args(&["--board", board, "--mesa-from", "prebuilt", extra])
            .env("SUDO_USER", "rock")
            .run()
    };
    setup_run("--yes").expect_code(exit::OK);
    setup_run("--dry-run")
        .expect_code(exit::OK)
        .expect_stdout("nothing to do");
    let profile = fx.read("etc/profile.d/rvl-vulkan.sh");
    let driver_files = profile
        .lines()
        .find_map(|l| l.strip_prefix("export VK_DRIVER_FILES="))
        .expect("setup exports VK_DRIVER_FILES for login shells");
    let out = rvl(&["doctor", "--json", "--board", board, "--manifest"])
        .arg(&a.manifest)
        .root(&fx)
        .env("SUDO_USER", "rock")
        .env("VK_DRIVER_FILES", driver_files)
        .run();
    let doc = out.stdout_json();
    doc["checks"].as_array().unwrap().clone()
}

fn status<'a>(checks: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    let c = checks.iter().find(|c| c["id"] == id).unwrap();
    &c["status"]
}

/// No check fails, and no fix sends the user back to a setup step that has nothing left to do.
/// What stays is what only a reboot changes (the running kernel and live device tree: warnings
/// whose fix is `sudo reboot` on the board) and what a `--root` doctor cannot probe (render-node access,
/// XDG_RUNTIME_DIR and the Vulkan device are live-only and skip).
fn assert_all_green_but_the_reboot(fixture: &str, board: &str) {
    if !have_dtc() {
        return;
    }
    let checks = doctor_after_setup(fixture, board);
    let all = serde_json::to_string_pretty(&checks).unwrap();
    // llama.cpp is a source build the test manifest does not pin (setup skips it with a note),
    // so its check still says "not installed"; tests/doctor.rs covers it after an install.
    let llama = checks.iter().find(|c| c["id"] == "llama-cpp").unwrap();
    assert_eq!(llama["status"], "warn", "{fixture}: {all}");
    for c in checks.iter().filter(|c| c["id"] != "llama-cpp") {
        assert_ne!(c["status"], "fail", "{fixture}: {all}");
        if c["status"] == "warn" {
            assert_eq!(
                c["fix"], "on the board that boots this image: sudo reboot",
                "{fixture}: the only warning left is the reboot: {all}"
            );
        }
        assert!(
            !c["fix"].to_string().contains("rvl setup"),
            "{fixture}: a fix names a setup step after the whole plan ran: {all}"
        );
    }
    for id in ["board", "firmware", "vulkan-icd"] {
        assert_eq!(status(&checks, id), "pass", "{fixture} {id}: {all}");
    }
}

#[test]
fn after_setup_on_u_boot_menu_the_doctor_fails_nothing() {
    assert_all_green_but_the_reboot("boltzmann-uboot-menu", "boltzmann");
}

#[test]
fn after_setup_on_hand_written_extlinux_the_doctor_fails_nothing() {
    assert_all_green_but_the_reboot("boltzmann-extlinux", "boltzmann");
}

#[test]
fn after_setup_on_armbian_the_doctor_fails_nothing() {
    assert_all_green_but_the_reboot("ampere-armbian", "ampere");
}

#[test]
fn after_setup_on_ampere_with_the_gpu_disabled_the_doctor_fails_nothing() {
    assert_all_green_but_the_reboot("ampere-gpu-disabled", "ampere");
    if !have_dtc() {
        return;
    }
    // Running mainline already: the kernel passes, and the GPU waits for rvl's overlay.
    let checks = doctor_after_setup("ampere-gpu-disabled", "ampere");
    assert_eq!(status(&checks, "kernel"), "pass");
    let gpu = checks.iter().find(|c| c["id"] == "gpu-driver").unwrap();
    assert_eq!(gpu["status"], "warn", "{gpu}");
    assert!(gpu["summary"]
        .as_str()
        .unwrap()
        .contains("rvl's overlay rvl-rk3588-coolpi-cm5-gpu enables &gpu on the next boot"));
}
