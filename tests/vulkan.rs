//! One Vulkan layer: doctor's inventory and smoke-bench describe the lavapipe device (or
//! whatever Vulkan device is present) identically, through the library and through the CLI.
//! With RVL_REQUIRE_VULKAN=1 (CI) a missing device fails the tests instead of skipping them.
#![cfg(feature = "bench")]

mod common;

use assert_cmd::Command;
use serde_json::Value;

use rvl::host::{env::Env, gather, GatherOptions, Root};
use rvl::vulkan::DeviceInfo;

/// The bench's view of the devices, or None (skip) when there is no usable device.
fn bench_devices() -> Option<Vec<DeviceInfo>> {
    common::vulkan_instance().map(|i| i.devices.clone())
}

#[test]
fn doctor_inventory_and_bench_describe_devices_the_same() {
    let Some(bench) = bench_devices() else { return };
    let inv = gather(
        &Root::system(),
        &Env::default(),
        &GatherOptions {
            firmware: "arm/mali/arch10.8/mali_csffw.bin",
            live: true,
            vulkan: true,
            vulkan_library: None,
            llama_devices: false,
        },
    );
    let probe = inv.live_facts.vulkan.expect("the Vulkan probe ran");
    assert_eq!(probe.error, None);
    assert_eq!(probe.devices, bench);
}

#[test]
fn doctor_json_and_bench_json_carry_the_same_device_objects() {
    if bench_devices().is_none() {
        return;
    }
    // vulkan-device runs only with a profile; on a non-board host it fails (no panvk), but the
    // inventory still holds what the loader offered.
    let out = Command::cargo_bin("rvl")
        .unwrap()
        .args([
            "doctor",
            "--json",
            "--only",
            "vulkan-device",
            "--board",
            "boltzmann",
        ])
        .output()
        .unwrap();
    let doctor: Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_doctor = &doctor["inventory"]["live_facts"]["vulkan"]["devices"];
    assert!(
        from_doctor.as_array().is_some_and(|d| !d.is_empty()),
        "{doctor}"
    );

    let out = Command::cargo_bin("rvl")
        .unwrap()
        .args(common::TINY_BENCH_JSON)
        .env_remove(rvl::bench::inject::ENV)
        .output()
        .unwrap();
    let bench: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(&bench["devices"], from_doctor);
}

#[test]
fn kernels_a_device_cannot_run_for_one_reason_get_one_note() {
    if bench_devices().is_none() {
        return;
    }
    let out = Command::cargo_bin("rvl")
        .unwrap()
        .args(common::TINY_BENCH_JSON)
        .env_remove(rvl::bench::inject::ENV)
        .output()
        .unwrap();
    let bench: Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes: Vec<&str> = bench["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| n.contains("not run:"))
        .collect();
    let mut reasons: Vec<&str> = notes
        .iter()
        .map(|n| n.split_once("not run:").unwrap().1)
        .collect();
    reasons.sort();
    let before = reasons.len();
    reasons.dedup();
    assert_eq!(before, reasons.len(), "a reason repeated: {notes:#?}");
}
