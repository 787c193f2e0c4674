//! `rvl doctor` end to end: the built binary on the fake roots in tests/fixtures/roots/.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{fixture_dir, fixture_file, rvl, Fixture, Rvl};
use rvl::exit;
use serde_json::Value;

/// `rvl doctor --no-vulkan --json --root ROOT`, with rvl's built-in manifest.
fn doctor(root: impl AsRef<Path>) -> Rvl {
    rvl(&["doctor", "--no-vulkan", "--json"]).root(root)
}

/// The same on a checked-in fixture root, with the stub manifest: it makes the fixtures' 24-byte
/// firmware stubs "known releases". Both are named relative to the checkout, as a person would
/// type them there, so the fixes (which repeat `--root` and `--manifest`) read the same in
/// every checkout and in the snapshots.
fn doctor_on(name: &str) -> Rvl {
    assert!(fixture_dir(name).is_dir());
    rvl(&["doctor", "--no-vulkan", "--json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .root(format!("tests/fixtures/roots/{name}"))
        .args(&["--manifest", "tests/fixtures/stub-manifest.yaml"])
}

/// Run, check the exit status, return the JSON document.
fn report(cmd: Rvl, code: i32) -> Value {
    cmd.run().expect_code(code).stdout_json()
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
        .unwrap_or_else(|| panic!("no check {id}: {doc:#}"))
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

/// Check `id` has `status` and its summary says `needle`.
fn expect_check(doc: &Value, id: &str, status: &str, needle: &str) {
    let c = check(doc, id);
    assert_eq!(c["status"], status, "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains(needle),
        "summary lacks {needle:?}: {c:#}"
    );
}

/// `text` contains every needle.
fn says(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "{n:?} missing in:\n{text}");
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

/// Doctor's report with only the boot-default check, on `root`.
fn boot_default(root: &Fixture) -> Value {
    doctor(root)
        .args(&["--only", "boot-default"])
        .run()
        .stdout_json()
}

#[test]
fn json_shape() {
    let doc = report(doctor_on("boltzmann-mainline"), exit::OK);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["board"]["id"], "boltzmann");
    assert_eq!(doc["board"]["model"], "Radxa ROCK 5 ITX");
    assert_eq!(
        doc["board"]["compatible"],
        serde_json::json!(["radxa,rock-5-itx", "rockchip,rk3588"])
    );
    assert_eq!(doc["kernel"]["release"], "7.0.0-rc3-marfrit-A1");
    assert_eq!(doc["exit_code"], exit::OK);
    for c in doc["checks"].as_array().unwrap() {
        for key in ["id", "status", "summary", "evidence", "fix"] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
        assert!(c["evidence"].is_array());
    }
    assert!(doc["inventory"]["gpu"]["devices"].is_array());
}

/// A fixture root, the exit status doctor gives it, what the named checks report, and what
/// their summary or fix says: `(check, "summary" | "fix", needles)`. Each root's findings are
/// also its snapshot.
struct Scenario {
    root: &'static str,
    code: i32,
    statuses: &'static [(&'static str, &'static str)],
    says: &'static [(&'static str, &'static str, &'static [&'static str])],
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        root: "boltzmann-mainline",
        code: exit::OK,
        statuses: &[
            ("board", "pass"),
            ("kernel", "pass"),
            ("gpu-driver", "pass"),
            ("render-node", "pass"),
            ("firmware", "pass"),
            ("vulkan-icd", "pass"),
            ("xdg-runtime-dir", "skip"),
            ("boot-default", "pass"),
            ("vulkan-device", "skip"),
            ("gpu-clock", "pass"),
            ("llama-cpp", "warn"),
        ],
        says: &[
            ("firmware", "summary", &["2026 LTS", "interface v1.5.0"]),
            (
                "gpu-clock",
                "summary",
                &["top OPP 1000 MHz", "simple_ondemand"],
            ),
            ("llama-cpp", "summary", &["no llama.cpp installed by rvl"]),
            (
                "llama-cpp",
                "fix",
                &["rvl setup --root tests/fixtures/roots/boltzmann-mainline --board boltzmann --manifest tests/fixtures/stub-manifest.yaml --only llama-cpp"],
            ),
        ],
    },
    Scenario {
        root: "llama-patched",
        code: exit::OK,
        statuses: &[("gpu-driver", "pass"), ("llama-cpp", "pass")],
        says: &[(
            "llama-cpp",
            "summary",
            &[
                "llama.cpp 0.3.36",
                "/opt/rvl/llama.cpp-0.3.36-rvl1",
                // n/n: the fixture's stamp lists the whole series (checked below by count).
                "(patch level ",
                "Mali tiles patch in",
            ],
        )],
    },
    Scenario {
        root: "llama-stock-only",
        code: exit::OK,
        statuses: &[("llama-cpp", "warn")],
        says: &[
            (
                "llama-cpp",
                "summary",
                &["only a stock llama.cpp (/usr/bin/llama-server)"],
            ),
            ("llama-cpp", "fix", &["--only llama-cpp"]),
        ],
    },
    Scenario {
        root: "boltzmann-vendor-kbase",
        code: exit::PROBLEMS,
        statuses: &[
            ("board", "pass"),
            ("kernel", "fail"),
            ("gpu-driver", "fail"),
            ("render-node", "skip"),
            ("boot-default", "warn"),
        ],
        says: &[
            ("gpu-driver", "summary", &["kbase"]),
            (
                "boot-default",
                "summary",
                &["6.1.75-npu-port (extlinux label l1)"],
            ),
            // Armbian-style DT (gpu-panthor@ disabled) on a u-boot-menu system: the overlay
            // goes into u-boot-menu's configuration; and the mainline route.
            (
                "gpu-driver",
                "fix",
                &["rockchip-rk3588-panthor-gpu.dtbo", "U_BOOT_FDT_OVERLAYS"],
            ),
            (
                "kernel",
                "fix",
                &[
                    "rvl setup --root tests/fixtures/roots/boltzmann-vendor-kbase --board boltzmann --manifest tests/fixtures/stub-manifest.yaml --only kernel",
                    "boots 7.0.0-rc3-marfrit-A1",
                ],
            ),
        ],
    },
    // The GPU node is disabled.
    Scenario {
        root: "ampere-gpu-disabled",
        code: exit::PROBLEMS,
        statuses: &[
            ("board", "pass"),
            ("kernel", "pass"),
            ("gpu-driver", "fail"),
            ("render-node", "skip"),
        ],
        says: &[
            ("gpu-driver", "summary", &["/gpu@fb000000 is disabled"]),
            // rvl ships the overlay for ampere: the fix is the setup step that installs it.
            (
                "gpu-driver",
                "fix",
                &["rvl setup --root tests/fixtures/roots/ampere-gpu-disabled --board ampere --manifest tests/fixtures/stub-manifest.yaml --only gpu-overlay"],
            ),
        ],
    },
    // Panthor's probe failed for missing firmware.
    Scenario {
        root: "panthor-missing-firmware",
        code: exit::PROBLEMS,
        statuses: &[
            ("kernel", "pass"),
            ("gpu-driver", "fail"),
            ("firmware", "fail"),
        ],
        says: &[
            ("gpu-driver", "summary", &["firmware"]),
            ("firmware", "fix", &["--only firmware"]),
        ],
    },
    // Firmware only in the wrong arch directory.
    Scenario {
        root: "firmware-wrong-arch",
        code: exit::PROBLEMS,
        statuses: &[("board", "pass"), ("firmware", "fail")],
        says: &[(
            "firmware",
            "summary",
            &[
                "arch10.10",
                "/lib/firmware/arm/mali/arch10.8/mali_csffw.bin",
            ],
        )],
    },
    // Two panvk ICDs warn; warnings alone do not fail.
    Scenario {
        root: "duplicate-icds",
        code: exit::OK,
        statuses: &[("board", "pass"), ("vulkan-icd", "warn")],
        says: &[("vulkan-icd", "fix", &["VK_DRIVER_FILES="])],
    },
    // Radxa's BSP layout names the Radxa overlay.
    Scenario {
        root: "radxa-bsp-kbase",
        code: exit::PROBLEMS,
        statuses: &[("kernel", "fail"), ("gpu-driver", "fail")],
        says: &[
            ("gpu-driver", "summary", &["fb000000.gpu-mali"]),
            ("gpu-driver", "fix", &["rk3588-mali-enable"]),
        ],
    },
    // An x86 host is reported, not crashed on.
    Scenario {
        root: "x86-host",
        code: exit::PROBLEMS,
        statuses: &[],
        says: &[("board", "summary", &["no device tree"])],
    },
    // boltzmann-mainline with max_freq written down to 600 MHz.
    Scenario {
        root: "gpu-clock-capped",
        code: exit::OK,
        statuses: &[("gpu-driver", "pass"), ("gpu-clock", "warn")],
        says: &[
            (
                "gpu-clock",
                "summary",
                &["max_freq is capped at 600 MHz, below the top OPP 1000 MHz"],
            ),
            (
                "gpu-clock",
                "fix",
                &["echo 1000000000 | sudo tee /sys/class/devfreq/fb000000.gpu/max_freq"],
            ),
        ],
    },
    // Armbian's BSP panthor device is found by its compatible; renderD128 is the display
    // controller, panthor's node is renderD129.
    Scenario {
        root: "armbian-vendor-panthor",
        code: exit::OK,
        statuses: &[
            ("kernel", "warn"),
            ("gpu-driver", "pass"),
            ("render-node", "pass"),
            ("boot-default", "warn"),
        ],
        says: &[
            ("gpu-driver", "summary", &["fb000000.gpu-panthor"]),
            ("render-node", "summary", &["/dev/dri/renderD129"]),
        ],
    },
    // Turing RK1 on a mainline kernel whose RK1 device tree enables &gpu: the healthy stack.
    Scenario {
        root: "turing-rk1-mainline",
        code: exit::OK,
        statuses: &[
            ("board", "pass"),
            ("kernel", "pass"),
            ("gpu-driver", "pass"),
            ("render-node", "pass"),
            ("firmware", "pass"),
            ("vulkan-icd", "pass"),
        ],
        says: &[("board", "summary", &["profile turing-rk1"])],
    },
    // Turing RK1 on 6.12: panthor is in the kernel, but that release's RK1 DT has no &gpu block.
    Scenario {
        root: "turing-rk1-gpu-disabled",
        code: exit::PROBLEMS,
        statuses: &[
            ("board", "pass"),
            ("kernel", "fail"),
            ("gpu-driver", "fail"),
            ("render-node", "skip"),
        ],
        says: &[
            (
                "kernel",
                "summary",
                &["6.12.48+deb13-arm64 is older than mainline 6.13"],
            ),
            ("gpu-driver", "summary", &["/gpu@fb000000 is disabled"]),
            (
                "gpu-driver",
                "fix",
                &["boot mainline ≥ 6.13", "mali-supply = <&vdd_gpu_s0>"],
            ),
        ],
    },
];

#[test]
fn each_fixture_root_reports_its_scenario() {
    for sc in SCENARIOS {
        eprintln!("root {}", sc.root);
        let doc = report(doctor_on(sc.root), sc.code);
        expect(&doc, sc.statuses);
        for (id, field, needles) in sc.says {
            let text = check(&doc, id)[*field]
                .as_str()
                .unwrap_or_else(|| panic!("{}: {id} has no {field}", sc.root));
            says(text, needles);
        }
        insta::assert_json_snapshot!(sc.root, findings(&doc));
    }
}

#[test]
fn duplicate_icds_are_the_orange_pi_5s_and_strict_fails() {
    let doc = report(doctor_on("duplicate-icds"), exit::OK);
    assert_eq!(doc["board"]["id"], "orangepi-5");
    doctor_on("duplicate-icds")
        .arg("--strict")
        .run()
        .expect_code(exit::PROBLEMS);
}

#[test]
fn x86_host_has_no_board_and_skips_every_other_check() {
    let doc = report(doctor_on("x86-host"), exit::PROBLEMS);
    assert_eq!(doc["board"]["id"], Value::Null);
    let s = statuses(&doc);
    assert!(
        s.iter()
            .filter(|(id, _)| *id != "board")
            .all(|(_, st)| st == "skip"),
        "{s:?}"
    );
}

#[test]
fn board_flag_overrides_detection() {
    let doc = doctor_on("x86-host")
        .args(&["--board", "boltzmann"])
        .run()
        .stdout_json();
    assert_eq!(doc["board"]["id"], "boltzmann");
    assert_eq!(doc["board"]["detected_by"], "flag");
    expect(&doc, &[("board", "warn"), ("gpu-driver", "fail")]);
}

#[test]
fn broken_inputs_never_panic() {
    let doc = report(doctor_on("broken-inputs"), exit::PROBLEMS);
    expect(
        &doc,
        &[
            ("kernel", "warn"),
            ("firmware", "fail"),
            ("vulkan-icd", "fail"),
        ],
    );
    says(
        &check(&doc, "vulkan-icd")["evidence"].to_string(),
        &["not valid JSON"],
    );
    // The human renderer copes with the same garbage, in sentences: no Rust debug values.
    let human = rvl(&["doctor", "--no-vulkan"])
        .root(fixture_dir("broken-inputs"))
        .run()
        .expect_code(exit::PROBLEMS);
    for line in human.stdout().lines() {
        assert!(
            !line.contains("Error {") && !line.contains("kind:"),
            "a debug value reaches the user: {line}"
        );
    }
    says(
        &check(&doc, "firmware")["summary"].to_string(),
        &["mali_csffw.bin.zst", "zstd"],
    );
}

#[test]
fn fifo_and_unreadable_files_do_not_hang_or_panic() {
    let fx = Fixture::empty();
    fx.write(
        "sys/firmware/devicetree/base/compatible",
        b"radxa,rock-5-itx\0",
    );
    std::fs::create_dir_all(fx.join("proc/sys/kernel")).unwrap();
    for fifo in [
        "proc/sys/kernel/osrelease",
        "sys/firmware/devicetree/base/model",
    ] {
        assert!(std::process::Command::new("mkfifo")
            .arg(fx.join(fifo))
            .status()
            .unwrap()
            .success());
    }
    fx.write("boot/config-x", "CONFIG_DRM_PANTHOR=y\n");
    std::fs::set_permissions(
        fx.join("boot/config-x"),
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    let doc = report(doctor(&fx), exit::PROBLEMS);
    assert_eq!(doc["board"]["id"], "boltzmann");
}

#[test]
fn human_output_is_short_plain_and_has_fixes() {
    let out = rvl(&["doctor", "--no-vulkan"])
        .root(fixture_dir("boltzmann-vendor-kbase"))
        .run()
        .expect_code(exit::PROBLEMS);
    let text = out.stdout();
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
        lines.iter().any(|l| l.trim_start().starts_with(
            "fix: on the board that boots this image: add the rockchip-rk3588-panthor-gpu.dtbo"
        )),
        "{text}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("4 failed, 2 warnings, 1 passed"),
        "{text}"
    );
}

#[test]
fn only_runs_the_named_checks() {
    let doc = report(
        doctor_on("boltzmann-vendor-kbase").args(&["--only", "board,vulkan-icd"]),
        exit::PROBLEMS,
    );
    assert_eq!(
        statuses(&doc).keys().collect::<Vec<_>>(),
        vec!["board", "vulkan-icd"]
    );
    doctor_on("boltzmann-vendor-kbase")
        .args(&["--only", "board"])
        .run()
        .expect_code(exit::OK);
}

#[test]
fn usage_errors_exit_2() {
    let root = fixture_dir("boltzmann-mainline");
    let root = root.to_str().unwrap();
    for args in [
        vec!["--root", root, "--only", "nope"],
        vec!["--root", root, "--board", "no-such-board"],
        vec!["--root", "/definitely/not/here"],
        vec!["--bogus-flag"],
    ] {
        let out = rvl(&["doctor"]).args(&args).run().expect_code(exit::USAGE);
        assert!(out.stdout().is_empty(), "{out}");
    }
}

#[test]
fn list_checks_names_every_id() {
    let out = rvl(&["doctor", "--list-checks"])
        .run()
        .expect_code(exit::OK);
    let text = out.stdout();
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
    let out = rvl(&["doctor"])
        .root(fixture_dir("boltzmann-mainline"))
        .arg("--profiles")
        .arg(dir.path())
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("mine.yaml:5")
        .expect_stderr("wheels");
    assert!(out.stdout().is_empty(), "{out}");
}

#[test]
fn profiles_dir_replaces_the_builtin_set() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/boltzmann.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("itx.yaml"),
        text.replace("id: boltzmann", "id: my-itx"),
    )
    .unwrap();
    let doc = doctor(fixture_dir("boltzmann-mainline"))
        .arg("--profiles")
        .arg(dir.path())
        .run()
        .stdout_json();
    assert_eq!(doc["board"]["id"], "my-itx");
}

#[test]
fn builtin_panthor_needs_its_firmware_in_the_initramfs() {
    let doc = report(
        doctor_on("builtin-panthor-initramfs-missing").args(&["--only", "kernel,firmware"]),
        exit::PROBLEMS,
    );
    expect(&doc, &[("kernel", "pass")]);
    expect_check(&doc, "firmware", "fail", "initramfs");
    says(
        &fix(&doc, "firmware"),
        &["update-initramfs -u -k 7.0.0-rc3-marfrit-A1"],
    );

    // zstd firmware under updates/, carried by an xz-compressed initramfs.
    let doc = report(
        doctor_on("builtin-panthor-initramfs-ok").args(&["--only", "firmware"]),
        exit::OK,
    );
    expect_check(
        &doc,
        "firmware",
        "pass",
        "/lib/firmware/updates/arm/mali/arch10.8/mali_csffw.bin.zst",
    );
}

#[test]
fn compressed_firmware_needs_loader_support() {
    let fx = Fixture::copy("builtin-panthor-initramfs-ok");
    fx.edit(
        "boot/config-7.0.0-rc3-marfrit-A1",
        "CONFIG_FW_LOADER_COMPRESS_ZSTD=y\n",
        "",
    );
    let doc = report(doctor(&fx).args(&["--only", "firmware"]), exit::PROBLEMS);
    says(
        &summary(&doc, "firmware"),
        &["CONFIG_FW_LOADER_COMPRESS_ZSTD"],
    );
}

#[test]
fn uncompressed_firmware_wins_over_updates_zst() {
    // The loader tries every directory without a suffix before any .zst.
    let fx = Fixture::copy("builtin-panthor-initramfs-ok");
    fx.write(
        "lib/firmware/arm/mali/arch10.8/mali_csffw.bin",
        std::fs::read(fixture_file("firmware/arch10.8-mali_csffw-2024-header.bin")).unwrap(),
    );
    let doc = doctor(&fx)
        .args(&["--only", "firmware"])
        .run()
        .stdout_json();
    assert_eq!(
        doc["inventory"]["firmware"]["found"]["path"],
        "/lib/firmware/arm/mali/arch10.8/mali_csffw.bin"
    );
}

#[test]
fn vk_driver_files_override_is_honoured() {
    // Under --root the image's login environment counts (etc/environment.d), not this shell's.
    let fx = Fixture::copy("duplicate-icds");
    fx.write(
        "etc/environment.d/90-vk.conf",
        "VK_DRIVER_FILES=/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json\n",
    );
    let doc = report(doctor(fx.path()).args(&["--only", "vulkan-icd"]), exit::OK);
    expect(&doc, &[("vulkan-icd", "pass")]);

    let fx = Fixture::copy("duplicate-icds");
    fx.write("etc/environment", "VK_ICD_FILENAMES=/nowhere/lvp.json\n");
    let doc = doctor(fx.path())
        .args(&["--only", "vulkan-icd"])
        .run()
        .stdout_json();
    expect_check(&doc, "vulkan-icd", "fail", "VK_ICD_FILENAMES");
}

/// On the running machine (root "/") the vulkan-device check loads the real loader. CI has
/// lavapipe and no panvk: the check must say so instead of crashing.
#[test]
fn live_vulkan_probe_reports_devices_without_panvk() {
    let out = rvl(&[
        "doctor",
        "--board",
        "generic-rk3588",
        "--only",
        "vulkan-device",
        "--json",
    ])
    .run();
    let doc = out.stdout_json();
    let c = check(&doc, "vulkan-device");
    let summary = c["summary"].as_str().unwrap();
    if summary.contains("(panvk,") {
        return; // run on a real panvk machine: nothing more to assert here
    }
    assert_eq!(c["status"], "fail", "{c:#}");
    if std::env::var_os("RVL_REQUIRE_VULKAN").is_some() {
        says(summary, &["no panvk device", "llvmpipe"]);
    } else {
        assert!(
            summary.contains("no panvk device") || summary.contains("Vulkan unusable"),
            "{summary}"
        );
    }
    out.expect_code(exit::PROBLEMS);
}

#[test]
fn unknown_firmware_build_is_a_warning_with_the_builtin_manifest() {
    let doc = report(
        doctor(fixture_dir("boltzmann-mainline")).args(&["--only", "firmware"]),
        exit::OK,
    );
    expect_check(&doc, "firmware", "warn", "not a release rvl knows");
}

#[test]
fn vendor_blob_at_the_panthor_path_fails() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write(
        "lib/firmware/arm/mali/arch10.8/mali_csffw.bin",
        std::fs::read(fixture_file(
            "firmware/vendor-flat-mali_csffw-2022-header.bin",
        ))
        .unwrap(),
    );
    let doc = report(
        doctor(&fx)
            .args(&["--only", "firmware", "--manifest"])
            .arg(fixture_file("stub-manifest.yaml")),
        exit::PROBLEMS,
    );
    says(&summary(&doc, "firmware"), &["not a panthor firmware"]);
}

#[test]
fn boot_default_reboot_pending_and_u_boot_menu_drift() {
    // Mainline is the extlinux default but the vendor kernel still runs: reboot.
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    fx.edit(
        "boot/extlinux/extlinux.conf",
        "default l1\n",
        "default l0\n",
    );
    let doc = boot_default(&fx);
    expect_check(&doc, "boot-default", "warn", "reboot");
    let c = check(&doc, "boot-default");
    // For an image, the reboot is the board's: pasted here it would restart this machine.
    assert_eq!(c["fix"], "on the board that boots this image: sudo reboot");
    // …and u-boot-menu would write l1 back on the next kernel install.
    says(&c["evidence"].to_string(), &["U_BOOT_DEFAULT=l1"]);

    // Healthy system whose u-boot-menu config points elsewhere.
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write("etc/u-boot-menu/conf.d/zz.conf", "U_BOOT_DEFAULT=l1\n");
    expect_check(
        &boot_default(&fx),
        "boot-default",
        "warn",
        "switches the default to l1 (6.1.75-npu-port)",
    );

    // A computed value cannot be predicted: say so.
    fx.write(
        "etc/u-boot-menu/conf.d/zz.conf",
        "U_BOOT_DEFAULT=\"$(cat /etc/pick)\"\n",
    );
    expect_check(
        &boot_default(&fx),
        "boot-default",
        "warn",
        "computed at run time",
    );
}

#[test]
fn boot_default_naming_a_missing_label_fails() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.edit(
        "boot/extlinux/extlinux.conf",
        "default l0\n",
        "default l7\n",
    );
    let doc = boot_default(&fx);
    expect_check(&doc, "boot-default", "fail", "\"l7\" names no label");
    says(&fix(&doc, "boot-default"), &["u-boot-update"]);
}

#[test]
fn armbian_boot_follows_the_image_link() {
    let doc = doctor_on("ampere-gpu-disabled")
        .args(&["--only", "boot-default"])
        .run()
        .stdout_json();
    expect_check(
        &doc,
        "boot-default",
        "pass",
        "6.16.8-edge-rockchip64 (/boot/Image)",
    );
}

#[test]
fn armbian_vendor_layout_gets_the_armbian_env_fix() {
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    for p in [
        "usr/sbin/u-boot-update",
        "usr/share/u-boot-menu",
        "etc/u-boot-menu",
        "boot/extlinux",
    ] {
        fx.remove(p);
    }
    fx.write(
        "boot/armbianEnv.txt",
        "overlay_prefix=rockchip-rk3588\noverlays=\n",
    );
    let doc = doctor(&fx)
        .args(&["--only", "gpu-driver"])
        .run()
        .stdout_json();
    let f = fix(&doc, "gpu-driver");
    assert!(
        f.starts_with(
            "on the board that boots this image: add panthor-gpu to overlays= in /boot/armbianEnv.txt"
        ),
        "{f}"
    );
}

#[test]
fn unknown_rk3588_board_uses_the_generic_profile_and_others_are_refused() {
    let fx = Fixture::copy("boltzmann-mainline");
    let compat = "sys/firmware/devicetree/base/compatible";
    fx.write(compat, b"friendlyarm,nanopi-r6s\0rockchip,rk3588s\0");
    let doc = report(doctor(&fx).args(&["--only", "board"]), exit::OK);
    assert_eq!(doc["board"]["id"], "generic-rk3588");
    expect(&doc, &[("board", "warn")]);

    fx.write(compat, b"raspberrypi,4-model-b\0brcm,bcm2711\0");
    let doc = report(doctor(&fx), exit::PROBLEMS);
    assert_eq!(doc["board"]["id"], Value::Null);
    says(&summary(&doc, "board"), &["not an RK3588 board"]);
}

#[test]
fn loader_driver_filters_can_hide_panvk() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write(
        "etc/profile.d/vk.sh",
        "export VK_LOADER_DRIVERS_DISABLE='*panfrost*'\n",
    );
    let doc = report(
        doctor(fx.path()).args(&["--only", "vulkan-icd"]),
        exit::PROBLEMS,
    );
    says(&summary(&doc, "vulkan-icd"), &["hidden"]);
    let f = fix(&doc, "vulkan-icd");
    assert!(f.starts_with("unset VK_LOADER_DRIVERS_DISABLE"), "{f}");
}

#[test]
fn next_boot_leaving_mainline_fails() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.edit(
        "boot/extlinux/extlinux.conf",
        "default l0\n",
        "default l1\n",
    );
    expect_check(
        &boot_default(&fx),
        "boot-default",
        "fail",
        "leaves panthor's kernel",
    );
}

#[test]
fn boot_default_fails_when_its_kernel_initrd_or_device_trees_are_missing() {
    for (gone, named) in [
        (
            "boot/vmlinuz-7.0.0-rc3-marfrit-A1",
            "linux /boot/vmlinuz-7.0.0-rc3-marfrit-A1",
        ),
        (
            "boot/initrd.img-7.0.0-rc3-marfrit-A1",
            "initrd /boot/initrd.img-7.0.0-rc3-marfrit-A1",
        ),
        (
            "usr/lib/linux-image-7.0.0-rc3-marfrit-A1",
            "fdtdir /usr/lib/linux-image-7.0.0-rc3-marfrit-A1/",
        ),
    ] {
        let fx = Fixture::copy("boltzmann-mainline");
        fx.remove(gone);
        let out = doctor(&fx)
            .args(&["--only", "boot-default"])
            .run()
            .expect_code(exit::PROBLEMS);
        let doc = out.stdout_json();
        expect_check(&doc, "boot-default", "fail", named);
        expect_check(&doc, "boot-default", "fail", "will not boot it");
        says(&fix(&doc, "boot-default"), &["u-boot-update"]);
    }
}

#[test]
fn armbian_boot_fails_when_the_image_link_dangles() {
    let fx = Fixture::copy("ampere-gpu-disabled");
    fx.remove("boot/vmlinuz-6.16.8-edge-rockchip64");
    let out = doctor(&fx)
        .args(&["--only", "boot-default"])
        .run()
        .expect_code(exit::PROBLEMS);
    expect_check(
        &out.stdout_json(),
        "boot-default",
        "fail",
        "/boot/Image points at vmlinuz-6.16.8-edge-rockchip64, which is missing",
    );
}

#[test]
fn verbose_shows_each_checks_evidence_under_its_line_and_the_plain_run_does_not() {
    let human = |extra: &[&str]| {
        rvl(&["doctor", "--no-vulkan"])
            .args(extra)
            .root(fixture_dir("boltzmann-vendor-kbase"))
            .run()
            .expect_code(exit::PROBLEMS)
            .stdout()
            .to_string()
    };
    let plain = human(&[]);
    let verbose = human(&["-v"]);
    assert_eq!(human(&["--verbose"]), verbose);
    let doc = report(
        doctor(fixture_dir("boltzmann-vendor-kbase")),
        exit::PROBLEMS,
    );
    let driver: Vec<String> = check(&doc, "gpu-driver")["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    assert!(!driver.is_empty(), "{doc:#}");
    let lines: Vec<&str> = verbose.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("✗ gpu-driver"))
        .unwrap_or_else(|| panic!("{verbose}"));
    for e in &driver {
        // Under its own check's line (before the next check's), indented.
        let found = lines[at + 1..]
            .iter()
            .take_while(|l| l.starts_with(' '))
            .any(|l| l.trim() == e.trim());
        assert!(found, "evidence {e:?} not under gpu-driver:\n{verbose}");
        assert!(
            !plain.lines().any(|l| l.trim() == e.trim()),
            "the plain run shows evidence {e:?}:\n{plain}"
        );
    }
    assert!(verbose.lines().count() > plain.lines().count());
    assert!(
        plain.trim_end().ends_with("(details: -v or --json)"),
        "{plain}"
    );
    assert!(
        verbose.trim_end().ends_with("(details: --json)"),
        "{verbose}"
    );
}

const LLAMA_PREFIX: &str = "/opt/rvl/llama.cpp-0.3.36-rvl1";

#[test]
fn vulkan_icd_names_rvls_panvk_and_whether_its_build_carries_the_queue_tls_series() {
    let icd = |root: &str| {
        // Bound to a name: the copy is removed when the fixture is dropped.
        let fx = Fixture::copy(root);
        let doc = report(doctor(&fx).args(&["--only", "vulkan-icd"]), exit::OK);
        check(&doc, "vulkan-icd").clone()
    };
    let c = icd("panvk-rvl-patched");
    assert_eq!(c["status"], "pass", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &[
            "/opt/rvl/mesa-26.2.4-rvl1/lib/libvulkan_panfrost.so",
            "rvl's panvk (Mesa 26.2.4, queue TLS patch, series 2/2)",
        ],
    );
    says(
        &c["evidence"].to_string(),
        &["0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch: applied"],
    );
    let c = icd("panvk-rvl-stock");
    assert_eq!(c["status"], "pass", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &["rvl's panvk (Mesa 26.2.4, stock, without the queue TLS patch, series 0/2)"],
    );
    // The distribution's panvk is not rvl's: nothing about a series is claimed.
    let c = icd("boltzmann-mainline");
    assert!(
        !c["summary"].as_str().unwrap().contains("rvl's panvk"),
        "{c:#}"
    );
}

/// Patches in rvl's llama.cpp series (patches/llama.cpp/series).
fn llama_series_len() -> usize {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/llama.cpp/series"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count()
}

/// Doctor's llama-cpp check alone on a copy of boltzmann-mainline.
fn llama_check(fx: &Fixture) -> Value {
    let doc = report(doctor(fx).args(&["--only", "llama-cpp"]), exit::OK);
    check(&doc, "llama-cpp").clone()
}

#[test]
fn llama_cpp_passes_with_rvls_patched_build_and_says_under_root_it_read_files_only() {
    let c = llama_check(&Fixture::copy("llama-patched"));
    assert_eq!(c["status"], "pass", "{c:#}");
    let s = c["summary"].as_str().unwrap();
    says(
        s,
        &[
            "llama.cpp 0.3.36",
            LLAMA_PREFIX,
            &format!("patch level {n}/{n}", n = llama_series_len()),
            "Mali tiles patch in",
        ],
    );
    let ev = c["evidence"].to_string();
    says(
        &ev,
        &[
            "0001-vulkan-mali-non-spilling-matmul-tiles.patch: applied",
            "bin/llama-bench: executable",
            "bin/test-backend-ops: executable (smoke-bench's llama.cpp CPU and Vulkan columns",
            "under --root: files only",
        ],
    );
}

#[test]
fn llama_cpp_warns_when_only_a_stock_llama_server_is_on_the_system() {
    let c = llama_check(&Fixture::copy("llama-stock-only"));
    assert_eq!(c["status"], "warn", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &["only a stock llama.cpp", "/usr/bin/llama-server"],
    );
    says(
        c["fix"].as_str().unwrap(),
        &["rvl setup --root ", "--only llama-cpp"],
    );
    // A tree the user owns needs no sudo; and the fix changes that tree, not this machine.
    assert!(!c["fix"].as_str().unwrap().contains("sudo"), "{c:#}");
}

#[test]
fn llama_cpp_warns_with_the_setup_fix_when_none_is_installed() {
    let c = llama_check(&Fixture::copy("boltzmann-mainline"));
    assert_eq!(c["status"], "warn", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &["no llama.cpp installed by rvl"],
    );
    says(c["fix"].as_str().unwrap(), &["--only llama-cpp"]);
}

#[test]
fn llama_cpp_build_without_the_tiles_patch_or_a_binary_is_named() {
    let fx = Fixture::copy("boltzmann-mainline");
    common::plant_llama(&fx, LLAMA_PREFIX, false);
    let c = llama_check(&fx);
    assert_eq!(c["status"], "warn", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &[
            "without rvl's Mali tiles patch",
            &format!("0/{}", llama_series_len()),
        ],
    );
    fx.remove(&format!("{}/bin/llama-server", &LLAMA_PREFIX[1..]));
    let doc = report(doctor(&fx).args(&["--only", "llama-cpp"]), exit::PROBLEMS);
    let c = check(&doc, "llama-cpp");
    assert_eq!(c["status"], "fail", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &["bin/llama-server missing"],
    );
    says(
        c["fix"].as_str().unwrap(),
        &["rm -rf", LLAMA_PREFIX, "--only llama-cpp"],
    );
}

#[test]
fn a_patched_build_without_test_backend_ops_warns_that_smoke_bench_loses_llama_cpp_and_the_check() {
    let fx = Fixture::copy("llama-patched");
    fx.remove(&format!("{}/bin/test-backend-ops", &LLAMA_PREFIX[1..]));
    let c = llama_check(&fx);
    assert_eq!(c["status"], "warn", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &[
            "without test-backend-ops",
            "llama.cpp's kernels beside rvl's",
        ],
    );
    says(
        &c["evidence"].to_string(),
        &["bin/test-backend-ops: missing or not executable"],
    );
    says(
        c["fix"].as_str().unwrap(),
        &["rm -rf", LLAMA_PREFIX, "--only llama-cpp"],
    );
}

#[test]
fn an_unfinished_prefix_without_a_stamp_is_not_taken_for_a_build() {
    let fx = Fixture::copy("boltzmann-mainline");
    common::plant_llama(&fx, LLAMA_PREFIX, true);
    fx.remove(&format!("{}/share/rvl/build.json", &LLAMA_PREFIX[1..]));
    let c = llama_check(&fx);
    assert_eq!(c["status"], "warn", "{c:#}");
    says(&c["evidence"].to_string(), &["no build stamp"]);
}

#[test]
fn the_llama_patched_fixture_stamp_matches_the_patches_this_rvl_embeds() {
    // make-roots.sh writes the stamp from patches/llama.cpp; after a patch edit it must be rerun.
    let fx = Fixture::copy("boltzmann-mainline");
    common::plant_llama(&fx, LLAMA_PREFIX, true);
    let stamp = |root: &Path| -> Value {
        let p = root.join(&LLAMA_PREFIX[1..]).join("share/rvl/build.json");
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    assert_eq!(
        stamp(&fixture_dir("llama-patched"))["patches"],
        stamp(fx.path())["patches"],
        "rerun tests/fixtures/make-roots.sh"
    );
}

const GPU_DEVFREQ: &str = "sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu";

fn gpu_clock(fx: &Fixture) -> Value {
    let doc = report(doctor(fx.path()).args(&["--only", "gpu-clock"]), exit::OK);
    check(&doc, "gpu-clock").clone()
}

#[test]
fn gpu_clock_warns_when_the_powersave_governor_holds_the_gpu_at_its_lowest_opp() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write(&format!("{GPU_DEVFREQ}/governor"), "powersave\n");
    let c = gpu_clock(&fx);
    assert_eq!(c["status"], "warn", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &["governor powersave holds the GPU at min_freq (300 MHz)"],
    );
    says(
        c["fix"].as_str().unwrap(),
        &["echo simple_ondemand | sudo tee /sys/class/devfreq/fb000000.gpu/governor"],
    );
}

#[test]
fn gpu_clock_evidence_gives_the_time_share_at_the_top_opp_from_trans_stat() {
    let fx = Fixture::copy("boltzmann-mainline");
    let doc = report(doctor(fx.path()).args(&["--only", "gpu-clock"]), exit::OK);
    let ev = check(&doc, "gpu-clock")["evidence"].to_string();
    says(
        &ev,
        &[
            "at the top OPP (1000 MHz) 38.5 % of 100.0 s, 8 transitions",
            "governor simple_ondemand",
        ],
    );
    // The inventory carries the node as plain data.
    assert_eq!(
        doc["inventory"]["gpu"]["devfreq"][0]["max_freq"], 1_000_000_000u64,
        "{:#}",
        doc["inventory"]["gpu"]
    );
}

#[test]
fn gpu_clock_warns_that_simple_ondemand_stays_low_for_compute_on_panthor_before_6_10_3() {
    let fx = Fixture::copy("boltzmann-mainline");
    // The fixture's 7.0 counts a job as busy when it is submitted: the governor rises.
    let c = gpu_clock(&fx);
    assert_eq!(c["status"], "pass", "{c:#}");
    says(
        &c["evidence"].to_string(),
        &["panthor in 7.0.0 records a job as busy when it is submitted"],
    );
    // 6.10.2 lacks 896868eded12: jobs sent to a resident group were never counted.
    fx.write("proc/sys/kernel/osrelease", "6.10.2-rockchip\n");
    let c = gpu_clock(&fx);
    assert_eq!(c["status"], "warn", "{c:#}");
    says(
        c["summary"].as_str().unwrap(),
        &[
            "panthor in 6.10.2 does not count jobs sent to a resident group as busy",
            "near min_freq (300 MHz) under compute",
        ],
    );
    says(
        c["fix"].as_str().unwrap(),
        &[
            "echo performance | sudo tee /sys/class/devfreq/fb000000.gpu/governor",
            "sudo rvl serve --max-clock",
        ],
    );
}

#[test]
fn gpu_clock_skips_without_a_devfreq_node() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.remove("sys/class/devfreq");
    let c = gpu_clock(&fx);
    assert_eq!(c["status"], "skip", "{c:#}");
    says(c["summary"].as_str().unwrap(), &["has no devfreq node"]);
}

#[test]
fn vulkan_icd_names_the_release_that_blocks_the_mesa_step_instead_of_a_command_setup_refuses() {
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    let plain = fix(
        &report(
            doctor(fx.path()).arg("--board").arg("boltzmann"),
            exit::PROBLEMS,
        ),
        "vulkan-icd",
    );
    assert!(plain.contains("--only mesa,icd"), "{plain}");
    assert!(!plain.contains("cannot build"), "{plain}");
    // On a release that cannot build the pinned Mesa, the same command would only be blocked:
    // the fix says why and what to do first (a loop otherwise: doctor -> setup -> blocked).
    fx.write(
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 11 (bullseye)\"\nVERSION_ID=\"11\"\nID=debian\n",
    );
    let doc = report(
        doctor(fx.path()).arg("--board").arg("boltzmann"),
        exit::PROBLEMS,
    );
    let blocked = fix(&doc, "vulkan-icd");
    assert!(
        blocked.starts_with("Debian GNU/Linux 11 (bullseye) cannot build Mesa 26"),
        "{blocked}"
    );
    assert!(blocked.contains("upgrade the image"), "{blocked}");
    assert!(
        !blocked.contains("rvl setup"),
        "setup would refuse it: {blocked}"
    );
    assert_eq!(doc["inventory"]["os"]["version_id"], "11", "{doc:#}");
}

#[test]
fn a_prefill_record_with_wrong_gpu_results_is_gathered_for_vulkan_device_and_links_are_not_followed(
) {
    let fx = Fixture::copy("llama-patched");
    fx.write("etc/environment", "HOME=/home/u\n");
    common::prefill::record_wrong_results(
        "qwen.gguf",
        "16,128",
        "128",
        &fx.join("home/u/.local/state"),
    );
    // A link in the records directory to a record elsewhere is not read.
    std::os::unix::fs::symlink(
        fx.join("home/u/.local/state/rvl/prefill/qwen.gguf.json"),
        fx.join("home/u/.local/state/rvl/prefill/linked.gguf.json"),
    )
    .unwrap();
    let doc = report(doctor(&fx).args(&["--only", "llama-cpp"]), exit::OK);
    let wrong = &doc["inventory"]["llama"]["wrong_results"];
    assert_eq!(wrong.as_array().map(Vec::len), Some(1), "{wrong:#}");
    assert_eq!(
        wrong[0]["record"],
        "/home/u/.local/state/rvl/prefill/qwen.gguf.json"
    );
    assert_eq!(wrong[0]["model"], "qwen.gguf");
    assert_eq!(wrong[0]["ubatches"], serde_json::json!([128]));
    assert!(wrong[0]["first_failure"]
        .as_str()
        .unwrap()
        .starts_with("MUL_MAT(type_a=f16,m=128,n=128,k=128): [MUL_MAT] ERR"));
}
