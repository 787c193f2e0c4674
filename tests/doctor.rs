//! `rvl doctor` end to end: the built binary on the fake roots in tests/fixtures/roots/.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/roots")
        .join(name)
}

/// Firmware fixtures are 24-byte header stubs; this manifest makes them "known releases".
fn stub_manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stub-manifest.yaml")
}

/// Run `rvl doctor` with a clean environment (no VK_*, XDG_*, HOME from the developer's shell)
/// plus `env`.
fn doctor_with_env(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("rvl");
    cmd.env_clear()
        .envs(env.iter().copied())
        .arg("doctor")
        .args(args);
    cmd.output().unwrap()
}

fn doctor(args: &[&str]) -> Output {
    doctor_with_env(&[], args)
}

/// `rvl doctor --root ROOT --no-vulkan --json EXTRA...` with `env`: the JSON document and the
/// exit status.
fn doctor_json_env(root: &Path, env: &[(&str, &str)], extra: &[&str]) -> (Value, i32) {
    let mut args = vec!["--root", root.to_str().unwrap(), "--no-vulkan", "--json"];
    args.extend_from_slice(extra);
    let out = doctor_with_env(env, &args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not only JSON ({e}):\n{stdout}"));
    (doc, out.status.code().unwrap())
}

fn doctor_json_at(root: &Path, extra: &[&str]) -> (Value, i32) {
    doctor_json_env(root, &[], extra)
}

/// The same on a fixture root, with the stub manifest.
fn doctor_json(root: &str, extra: &[&str]) -> (Value, i32) {
    let manifest = stub_manifest();
    let mut args = vec!["--manifest", manifest.to_str().unwrap()];
    args.extend_from_slice(extra);
    doctor_json_at(&fixture(root), &args)
}

fn statuses(doc: &Value) -> BTreeMap<String, String> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn check<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
}

fn summary(doc: &Value, id: &str) -> String {
    check(doc, id)["summary"].as_str().unwrap().to_string()
}

fn fix(doc: &Value, id: &str) -> String {
    check(doc, id)["fix"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn expect(doc: &Value, pairs: &[(&str, &str)]) {
    let got = statuses(doc);
    for (id, status) in pairs {
        assert_eq!(
            got.get(*id).map(String::as_str),
            Some(*status),
            "check {id}: {:#}",
            check(doc, id)
        );
    }
}

/// The findings without the inventory, for snapshots.
fn findings(doc: &Value) -> Value {
    serde_json::json!({
        "board": doc["board"],
        "kernel": doc["kernel"],
        "summary": doc["summary"],
        "exit_code": doc["exit_code"],
        "checks": doc["checks"],
    })
}

#[test]
fn json_shape() {
    let (doc, code) = doctor_json("boltzmann-mainline", &[]);
    assert_eq!(code, 0);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["board"]["id"], "boltzmann");
    assert_eq!(doc["board"]["model"], "Radxa ROCK 5 ITX");
    assert_eq!(
        doc["board"]["compatible"],
        serde_json::json!(["radxa,rock-5-itx", "rockchip,rk3588"])
    );
    assert_eq!(doc["kernel"]["release"], "7.0.0-rc3-marfrit-A1");
    assert_eq!(doc["exit_code"], 0);
    for c in doc["checks"].as_array().unwrap() {
        for key in ["id", "status", "summary", "evidence", "fix"] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
        assert!(c["evidence"].is_array());
    }
    assert!(doc["inventory"]["gpu"]["devices"].is_array());
}

#[test]
fn boltzmann_mainline_is_healthy() {
    let (doc, code) = doctor_json("boltzmann-mainline", &[]);
    expect(
        &doc,
        &[
            ("board", "pass"),
            ("kernel", "pass"),
            ("gpu-driver", "pass"),
            ("render-node", "pass"),
            ("firmware", "pass"),
            ("vulkan-icd", "pass"),
            ("xdg-runtime-dir", "skip"),
            ("boot-default", "pass"),
            ("vulkan-device", "skip"),
        ],
    );
    assert_eq!(code, 0);
    let fw = summary(&doc, "firmware");
    assert!(
        fw.contains("2026 LTS") && fw.contains("interface v1.5.0"),
        "{fw}"
    );
    insta::assert_json_snapshot!("boltzmann-mainline", findings(&doc));
}

#[test]
fn boltzmann_vendor_kernel_with_kbase() {
    let (doc, code) = doctor_json("boltzmann-vendor-kbase", &[]);
    expect(
        &doc,
        &[
            ("board", "pass"),
            ("kernel", "fail"),
            ("gpu-driver", "fail"),
            ("render-node", "skip"),
            ("boot-default", "warn"),
        ],
    );
    assert_eq!(code, 1);
    assert!(summary(&doc, "gpu-driver").contains("kbase"));
    assert!(summary(&doc, "boot-default").contains("6.1.75-npu-port (extlinux label l1)"));
    // Armbian-style DT (gpu-panthor@ disabled) on a u-boot-menu system: the overlay goes into
    // u-boot-menu's configuration; and the mainline route.
    let gpu_fix = fix(&doc, "gpu-driver");
    assert!(
        gpu_fix.contains("rockchip-rk3588-panthor-gpu.dtbo")
            && gpu_fix.contains("U_BOOT_FDT_OVERLAYS"),
        "{gpu_fix}"
    );
    assert!(fix(&doc, "kernel").contains("rvl setup --board boltzmann --only kernel"));
    assert!(fix(&doc, "kernel").contains("boots 7.0.0-rc3-marfrit-A1"));
    insta::assert_json_snapshot!("boltzmann-vendor-kbase", findings(&doc));
}

#[test]
fn ampere_gpu_node_disabled() {
    let (doc, code) = doctor_json("ampere-gpu-disabled", &[]);
    expect(
        &doc,
        &[
            ("board", "pass"),
            ("kernel", "pass"),
            ("gpu-driver", "fail"),
            ("render-node", "skip"),
        ],
    );
    assert_eq!(code, 1);
    assert!(summary(&doc, "gpu-driver").contains("/gpu@fb000000 is disabled"));
    assert!(fix(&doc, "gpu-driver").contains("--board ampere --only gpu-overlay"));
    insta::assert_json_snapshot!("ampere-gpu-disabled", findings(&doc));
}

#[test]
fn panthor_probe_failed_for_missing_firmware() {
    let (doc, code) = doctor_json("panthor-missing-firmware", &[]);
    expect(
        &doc,
        &[
            ("kernel", "pass"),
            ("gpu-driver", "fail"),
            ("firmware", "fail"),
        ],
    );
    assert_eq!(code, 1);
    assert!(summary(&doc, "gpu-driver").contains("firmware"));
    assert!(fix(&doc, "firmware").contains("--only firmware"));
    insta::assert_json_snapshot!("panthor-missing-firmware", findings(&doc));
}

#[test]
fn firmware_only_in_the_wrong_arch_directory() {
    let (doc, code) = doctor_json("firmware-wrong-arch", &[]);
    expect(&doc, &[("board", "pass"), ("firmware", "fail")]);
    assert_eq!(code, 1);
    let text = summary(&doc, "firmware");
    assert!(text.contains("arch10.10"), "{text}");
    assert!(
        text.contains("/lib/firmware/arm/mali/arch10.8/mali_csffw.bin"),
        "{text}"
    );
    insta::assert_json_snapshot!("firmware-wrong-arch", findings(&doc));
}

#[test]
fn duplicate_icds_warn_and_strict_fails() {
    let (doc, code) = doctor_json("duplicate-icds", &[]);
    expect(&doc, &[("board", "pass"), ("vulkan-icd", "warn")]);
    assert_eq!(doc["board"]["id"], "orangepi-5");
    assert_eq!(code, 0, "warnings alone do not fail");
    assert!(fix(&doc, "vulkan-icd").contains("VK_DRIVER_FILES="));
    let (_, strict) = doctor_json("duplicate-icds", &["--strict"]);
    assert_eq!(strict, 1);
    insta::assert_json_snapshot!("duplicate-icds", findings(&doc));
}

#[test]
fn radxa_bsp_layout_names_the_radxa_overlay() {
    let (doc, code) = doctor_json("radxa-bsp-kbase", &[]);
    expect(&doc, &[("kernel", "fail"), ("gpu-driver", "fail")]);
    assert_eq!(code, 1);
    assert!(summary(&doc, "gpu-driver").contains("fb000000.gpu-mali"));
    assert!(fix(&doc, "gpu-driver").contains("rk3588-mali-enable"));
    insta::assert_json_snapshot!("radxa-bsp-kbase", findings(&doc));
}

#[test]
fn x86_host_is_reported_not_crashed() {
    let (doc, code) = doctor_json("x86-host", &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["board"]["id"], Value::Null);
    assert!(summary(&doc, "board").contains("no device tree"));
    let s = statuses(&doc);
    assert!(
        s.iter()
            .filter(|(id, _)| *id != "board")
            .all(|(_, st)| st == "skip"),
        "{s:?}"
    );
    insta::assert_json_snapshot!("x86-host", findings(&doc));
}

#[test]
fn board_flag_overrides_detection() {
    let (doc, _) = doctor_json("x86-host", &["--board", "boltzmann"]);
    assert_eq!(doc["board"]["id"], "boltzmann");
    assert_eq!(doc["board"]["detected_by"], "flag");
    expect(&doc, &[("board", "warn"), ("gpu-driver", "fail")]);
}

#[test]
fn broken_inputs_never_panic() {
    let (doc, code) = doctor_json("broken-inputs", &[]);
    assert_eq!(code, 1);
    expect(
        &doc,
        &[
            ("kernel", "warn"),
            ("firmware", "fail"),
            ("vulkan-icd", "fail"),
        ],
    );
    let icd = check(&doc, "vulkan-icd")["evidence"].to_string();
    assert!(icd.contains("not valid JSON"), "{icd}");
    // The human renderer copes with the same garbage.
    let out = doctor(&[
        "--root",
        fixture("broken-inputs").to_str().unwrap(),
        "--no-vulkan",
    ]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn fifo_and_unreadable_files_do_not_hang_or_panic() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir_all(r.join("proc/sys/kernel")).unwrap();
    std::fs::create_dir_all(r.join("sys/firmware/devicetree/base")).unwrap();
    std::fs::write(
        r.join("sys/firmware/devicetree/base/compatible"),
        b"radxa,rock-5-itx\0",
    )
    .unwrap();
    for fifo in [
        "proc/sys/kernel/osrelease",
        "sys/firmware/devicetree/base/model",
    ] {
        assert!(std::process::Command::new("mkfifo")
            .arg(r.join(fifo))
            .status()
            .unwrap()
            .success());
    }
    std::fs::create_dir_all(r.join("boot")).unwrap();
    let cfg = r.join("boot/config-x");
    std::fs::write(&cfg, "CONFIG_DRM_PANTHOR=y\n").unwrap();
    std::fs::set_permissions(&cfg, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let (doc, code) = doctor_json_at(r, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["board"]["id"], "boltzmann");
}

#[test]
fn human_output_is_short_plain_and_has_fixes() {
    let out = doctor(&[
        "--root",
        fixture("boltzmann-vendor-kbase").to_str().unwrap(),
        "--no-vulkan",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("rvl doctor: Radxa ROCK 5 ITX"),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("✗ gpu-driver")),
        "{text}"
    );
    assert!(lines.iter().any(|l| l.starts_with("✓ board")), "{text}");
    assert!(
        lines.iter().any(|l| l
            .trim_start()
            .starts_with("fix: add the rockchip-rk3588-panthor-gpu.dtbo")),
        "{text}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("4 failed, 1 warning, 1 passed"),
        "{text}"
    );
}

#[test]
fn only_runs_the_named_checks() {
    let (doc, code) = doctor_json("boltzmann-vendor-kbase", &["--only", "board,vulkan-icd"]);
    assert_eq!(
        statuses(&doc).keys().collect::<Vec<_>>(),
        vec!["board", "vulkan-icd"]
    );
    assert_eq!(code, 1);
    let (_, code) = doctor_json("boltzmann-vendor-kbase", &["--only", "board"]);
    assert_eq!(code, 0);
}

#[test]
fn usage_errors_exit_2() {
    let root = fixture("boltzmann-mainline");
    let root = root.to_str().unwrap();
    for args in [
        vec!["--root", root, "--only", "nope"],
        vec!["--root", root, "--board", "no-such-board"],
        vec!["--root", "/definitely/not/here"],
        vec!["--bogus-flag"],
    ] {
        let out = doctor(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn list_checks_names_every_id() {
    let out = doctor(&["--list-checks"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for id in [
        "board",
        "kernel",
        "gpu-driver",
        "render-node",
        "firmware",
        "vulkan-icd",
        "xdg-runtime-dir",
        "boot-default",
        "vulkan-device",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(id)),
            "{id} missing:\n{text}"
        );
    }
}

#[test]
fn bad_profile_file_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "id: mine\nname: Mine\nmatch: [\"x,y\"]\nsoc: rk3588\nwheels: 4\n",
    )
    .unwrap();
    let root = fixture("boltzmann-mainline");
    let out = doctor(&[
        "--root",
        root.to_str().unwrap(),
        "--profiles",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("mine.yaml:5"), "{err}");
    assert!(err.contains("wheels"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn profiles_dir_replaces_the_builtin_set() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/boltzmann.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("itx.yaml"),
        text.replace("id: boltzmann", "id: my-itx"),
    )
    .unwrap();
    let root = fixture("boltzmann-mainline");
    let (doc, _) = doctor_json_at(&root, &["--profiles", dir.path().to_str().unwrap()]);
    assert_eq!(doc["board"]["id"], "my-itx");
}

/// A writable copy of a fixture root (links kept as links).
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(fixture(name))
        .arg(dir.path().join("r"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    dir
}

#[test]
fn builtin_panthor_needs_its_firmware_in_the_initramfs() {
    let (doc, code) = doctor_json(
        "builtin-panthor-initramfs-missing",
        &["--only", "kernel,firmware"],
    );
    expect(&doc, &[("kernel", "pass"), ("firmware", "fail")]);
    assert_eq!(code, 1);
    assert!(summary(&doc, "firmware").contains("initramfs"));
    assert!(fix(&doc, "firmware").contains("update-initramfs -u -k 7.0.0-rc3-marfrit-A1"));

    // zstd firmware under updates/, carried by an xz-compressed initramfs.
    let (doc, code) = doctor_json("builtin-panthor-initramfs-ok", &["--only", "firmware"]);
    expect(&doc, &[("firmware", "pass")]);
    assert_eq!(code, 0);
    assert!(summary(&doc, "firmware")
        .contains("/lib/firmware/updates/arm/mali/arch10.8/mali_csffw.bin.zst"));
}

#[test]
fn compressed_firmware_needs_loader_support() {
    let dir = copy_fixture("builtin-panthor-initramfs-ok");
    let r = dir.path().join("r");
    let cfg = r.join("boot/config-7.0.0-rc3-marfrit-A1");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("CONFIG_FW_LOADER_COMPRESS_ZSTD=y\n", "");
    std::fs::write(&cfg, text).unwrap();
    let (doc, code) = doctor_json_at(&r, &["--only", "firmware"]);
    assert_eq!(code, 1);
    assert!(summary(&doc, "firmware").contains("CONFIG_FW_LOADER_COMPRESS_ZSTD"));
}

#[test]
fn uncompressed_firmware_wins_over_updates_zst() {
    // The loader tries every directory without a suffix before any .zst.
    let dir = copy_fixture("builtin-panthor-initramfs-ok");
    let r = dir.path().join("r");
    let plain = r.join("lib/firmware/arm/mali/arch10.8");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/firmware/arch10.8-mali_csffw-2024-header.bin"),
        plain.join("mali_csffw.bin"),
    )
    .unwrap();
    let (doc, _) = doctor_json_at(&r, &["--only", "firmware"]);
    assert_eq!(
        doc["inventory"]["firmware"]["found"]["path"],
        "/lib/firmware/arm/mali/arch10.8/mali_csffw.bin"
    );
}

#[test]
fn vk_driver_files_override_is_honoured() {
    let root = fixture("duplicate-icds");
    let (doc, code) = doctor_json_env(
        &root,
        &[(
            "VK_DRIVER_FILES",
            "/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json",
        )],
        &["--only", "vulkan-icd"],
    );
    assert_eq!(code, 0);
    expect(&doc, &[("vulkan-icd", "pass")]);

    let (doc, _) = doctor_json_env(
        &root,
        &[("VK_ICD_FILENAMES", "/nowhere/lvp.json")],
        &["--only", "vulkan-icd"],
    );
    expect(&doc, &[("vulkan-icd", "fail")]);
    assert!(summary(&doc, "vulkan-icd").contains("VK_ICD_FILENAMES"));
}

/// On the running machine (root "/") the vulkan-device check loads the real loader. CI has
/// lavapipe and no panvk: the check must say so instead of crashing.
#[test]
fn live_vulkan_probe_reports_devices_without_panvk() {
    let out = doctor(&[
        "--board",
        "generic-rk3588",
        "--only",
        "vulkan-device",
        "--json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = check(&doc, "vulkan-device");
    let summary = c["summary"].as_str().unwrap();
    if summary.contains("(panvk,") {
        return; // run on a real panvk machine: nothing more to assert here
    }
    assert_eq!(c["status"], "fail", "{c:#}");
    if std::env::var_os("RVL_REQUIRE_VULKAN").is_some() {
        assert!(
            summary.contains("no panvk device") && summary.contains("llvmpipe"),
            "{summary}"
        );
    } else {
        assert!(
            summary.contains("no panvk device") || summary.contains("Vulkan unusable"),
            "{summary}"
        );
    }
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn unknown_firmware_build_is_a_warning_with_the_builtin_manifest() {
    let root = fixture("boltzmann-mainline");
    let (doc, code) = doctor_json_at(&root, &["--only", "firmware"]);
    assert_eq!(code, 0);
    expect(&doc, &[("firmware", "warn")]);
    assert!(summary(&doc, "firmware").contains("not a release rvl knows"));
}

#[test]
fn vendor_blob_at_the_panthor_path_fails() {
    let dir = copy_fixture("boltzmann-mainline");
    let r = dir.path().join("r");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/firmware/vendor-flat-mali_csffw-2022-header.bin"),
        r.join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin"),
    )
    .unwrap();
    let m = stub_manifest();
    let (doc, code) = doctor_json_at(
        &r,
        &["--only", "firmware", "--manifest", m.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    assert!(summary(&doc, "firmware").contains("not a panthor firmware"));
}

fn boot_default(r: &Path) -> Value {
    let (doc, _) = doctor_json_at(r, &["--only", "boot-default"]);
    check(&doc, "boot-default").clone()
}

#[test]
fn boot_default_reboot_pending_and_u_boot_menu_drift() {
    // Mainline is the extlinux default but the vendor kernel still runs: reboot.
    let dir = copy_fixture("boltzmann-vendor-kbase");
    let r = dir.path().join("r");
    let conf = r.join("boot/extlinux/extlinux.conf");
    let text = std::fs::read_to_string(&conf)
        .unwrap()
        .replace("default l1\n", "default l0\n");
    std::fs::write(&conf, text).unwrap();
    let c = boot_default(&r);
    assert_eq!(c["status"], "warn", "{c:#}");
    assert!(c["summary"].as_str().unwrap().contains("reboot"));
    assert_eq!(c["fix"], "sudo reboot");
    // …and u-boot-menu would write l1 back on the next kernel install.
    assert!(c["evidence"].to_string().contains("U_BOOT_DEFAULT=l1"));

    // Healthy system whose u-boot-menu config points elsewhere.
    let dir = copy_fixture("boltzmann-mainline");
    let r = dir.path().join("r");
    std::fs::create_dir_all(r.join("etc/u-boot-menu/conf.d")).unwrap();
    std::fs::write(
        r.join("etc/u-boot-menu/conf.d/zz.conf"),
        "U_BOOT_DEFAULT=l1\n",
    )
    .unwrap();
    let c = boot_default(&r);
    assert_eq!(c["status"], "warn", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("switches the default to l1 (6.1.75-npu-port)"),
        "{c:#}"
    );

    // A computed value cannot be predicted: say so.
    std::fs::write(
        r.join("etc/u-boot-menu/conf.d/zz.conf"),
        "U_BOOT_DEFAULT=\"$(cat /etc/pick)\"\n",
    )
    .unwrap();
    let c = boot_default(&r);
    assert_eq!(c["status"], "warn", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("computed at run time"),
        "{c:#}"
    );
}

#[test]
fn boot_default_naming_a_missing_label_fails() {
    let dir = copy_fixture("boltzmann-mainline");
    let r = dir.path().join("r");
    let conf = r.join("boot/extlinux/extlinux.conf");
    let text = std::fs::read_to_string(&conf)
        .unwrap()
        .replace("default l0\n", "default l7\n");
    std::fs::write(&conf, text).unwrap();
    let c = boot_default(&r);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert!(c["summary"]
        .as_str()
        .unwrap()
        .contains("\"l7\" names no label"));
    assert!(c["fix"].as_str().unwrap().contains("u-boot-update"));
}

#[test]
fn armbian_boot_follows_the_image_link() {
    let (doc, _) = doctor_json("ampere-gpu-disabled", &["--only", "boot-default"]);
    let c = check(&doc, "boot-default");
    assert_eq!(c["status"], "pass", "{c:#}");
    assert!(c["summary"]
        .as_str()
        .unwrap()
        .contains("6.16.8-edge-rockchip64 (/boot/Image)"));
}

#[test]
fn armbian_vendor_layout_gets_the_armbian_env_fix() {
    let dir = copy_fixture("boltzmann-vendor-kbase");
    let r = dir.path().join("r");
    for p in [
        "usr/sbin/u-boot-update",
        "usr/share/u-boot-menu",
        "etc/u-boot-menu",
        "boot/extlinux",
    ] {
        let p = r.join(p);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    std::fs::write(
        r.join("boot/armbianEnv.txt"),
        "overlay_prefix=rockchip-rk3588\noverlays=\n",
    )
    .unwrap();
    let (doc, _) = doctor_json_at(&r, &["--only", "gpu-driver"]);
    let f = fix(&doc, "gpu-driver");
    assert!(
        f.starts_with("add panthor-gpu to overlays= in /boot/armbianEnv.txt"),
        "{f}"
    );
}

#[test]
fn unknown_rk3588_board_uses_the_generic_profile_and_others_are_refused() {
    let dir = copy_fixture("boltzmann-mainline");
    let r = dir.path().join("r");
    let compat = r.join("sys/firmware/devicetree/base/compatible");
    std::fs::write(&compat, b"friendlyarm,nanopi-r6s\0rockchip,rk3588s\0").unwrap();
    let (doc, code) = doctor_json_at(&r, &["--only", "board"]);
    assert_eq!(doc["board"]["id"], "generic-rk3588");
    expect(&doc, &[("board", "warn")]);
    assert_eq!(code, 0);

    std::fs::write(&compat, b"raspberrypi,4-model-b\0brcm,bcm2711\0").unwrap();
    let (doc, code) = doctor_json_at(&r, &[]);
    assert_eq!(doc["board"]["id"], Value::Null);
    assert!(summary(&doc, "board").contains("not an RK3588 board"));
    assert_eq!(code, 1);
}

#[test]
fn loader_driver_filters_can_hide_panvk() {
    let (doc, code) = doctor_json_env(
        &fixture("boltzmann-mainline"),
        &[("VK_LOADER_DRIVERS_DISABLE", "*panfrost*")],
        &["--only", "vulkan-icd"],
    );
    assert_eq!(code, 1);
    let c = check(&doc, "vulkan-icd");
    assert!(c["summary"].as_str().unwrap().contains("hidden"), "{c:#}");
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .starts_with("unset VK_LOADER_DRIVERS_DISABLE"),
        "{c:#}"
    );
}

#[test]
fn next_boot_leaving_mainline_fails() {
    let dir = copy_fixture("boltzmann-mainline");
    let r = dir.path().join("r");
    let conf = r.join("boot/extlinux/extlinux.conf");
    let text = std::fs::read_to_string(&conf)
        .unwrap()
        .replace("default l0\n", "default l1\n");
    std::fs::write(&conf, text).unwrap();
    let c = boot_default(&r);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("leaves panthor's kernel"),
        "{c:#}"
    );
}

#[test]
fn armbian_bsp_panthor_device_is_found_by_compatible() {
    let (doc, code) = doctor_json("armbian-vendor-panthor", &[]);
    expect(
        &doc,
        &[
            ("kernel", "warn"),
            ("gpu-driver", "pass"),
            ("render-node", "pass"),
            ("boot-default", "warn"),
        ],
    );
    assert_eq!(code, 0);
    assert!(summary(&doc, "gpu-driver").contains("fb000000.gpu-panthor"));
    // renderD128 is the display controller; panthor's node is renderD129.
    assert!(summary(&doc, "render-node").contains("/dev/dri/renderD129"));
    insta::assert_json_snapshot!("armbian-vendor-panthor", findings(&doc));
}
