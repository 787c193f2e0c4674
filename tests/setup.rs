//! `rvl setup` end to end on fake roots: plan contents, apply, an empty second plan, a rollback
//! that restores the tree byte for byte, foreign lines that survive, refusals that change nothing.

mod common;

use std::fs;
use std::path::Path;

use common::http::sha256_hex;
use common::roots::{self, artifacts, assert_same, firmware_bytes, fixture, rvl, snapshot};
use predicates::prelude::*;

const BASIC: &str = "kernel,gpu-overlay,firmware,access";
const MAINLINE: &str = "7.0.0-rc3-marfrit-A1";

fn json_plan(root: &Path, manifest: &Path, board: &str, only: &str) -> serde_json::Value {
    let out = rvl(root, manifest)
        .args(["--board", board, "--only", only, "--dry-run", "--json"])
        .env("SUDO_USER", "rock")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON only")
}

fn step_names(plan: &serde_json::Value) -> Vec<String> {
    plan["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap().to_string())
        .collect()
}

/// Apply, check the second plan is empty, roll back, check the tree is what it was.
fn round_trip(fixture_name: &str, board: &str, check_applied: impl Fn(&Path)) {
    let (_d, root) = fixture(fixture_name);
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = snapshot(&root);

    let plan = json_plan(&root, &a.manifest, board, BASIC);
    assert!(step_names(&plan).contains(&"kernel".to_string()), "{plan}");
    assert_same(&before, &snapshot(&root)); // --dry-run changes nothing
    assert!(
        !root.join(roots::STATE_DIR).exists(),
        "--dry-run must not create state"
    );

    rvl(&root, &a.manifest)
        .args(["--board", board, "--only", BASIC, "--yes"])
        .env("SUDO_USER", "rock")
        .assert()
        .success()
        .stdout(predicate::str::contains("applied"));
    check_applied(&root);
    let fw = root.join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin");
    assert_eq!(fs::read(&fw).unwrap(), firmware_bytes());
    assert!(fs::read_to_string(root.join("etc/group"))
        .unwrap()
        .contains("render:x:105:rock\n"));

    let again = json_plan(&root, &a.manifest, board, BASIC);
    assert!(
        step_names(&again).is_empty(),
        "second plan not empty: {again}"
    );

    rvl(&root, &a.manifest)
        .arg("--rollback")
        .assert()
        .success()
        .stdout(predicate::str::contains("rolled back"));
    assert_same(&before, &snapshot(&root));
}

#[test]
fn boltzmann_uboot_menu_round_trip() {
    round_trip("boltzmann-uboot-menu", "boltzmann", |root| {
        let conf = fs::read_to_string(root.join("etc/u-boot-menu/conf.d/rvl.conf")).unwrap();
        assert!(conf.contains("U_BOOT_DEFAULT=\"l0\"\n"), "{conf}");
        let ext = fs::read_to_string(root.join("boot/extlinux/extlinux.conf")).unwrap();
        assert!(ext.contains("\ndefault l0\n"), "{ext}");
        // The BSP kernel stays bootable, the admin's own file is untouched.
        assert!(ext.contains("linux /boot/vmlinuz-6.1.75-npu-port"));
        assert_eq!(
            fs::read(root.join("etc/u-boot-menu/conf.d/50-vendor.conf")).unwrap(),
            fs::read(
                roots::fixture_dir("boltzmann-uboot-menu")
                    .join("etc/u-boot-menu/conf.d/50-vendor.conf")
            )
            .unwrap()
        );
        // panthor is built in: the initramfs of the mainline kernel was refreshed with the firmware.
        let initrd = fs::read_to_string(root.join(format!("boot/initrd.img-{MAINLINE}"))).unwrap();
        assert!(initrd.contains(&sha256_hex(&firmware_bytes())), "{initrd}");
        assert!(fs::read_to_string(root.join("etc/gshadow"))
            .unwrap()
            .contains("render:!::rock\n"));
    });
}

#[test]
fn hand_written_extlinux_round_trip_keeps_every_other_byte() {
    round_trip("boltzmann-extlinux", "boltzmann", |root| {
        let orig = fs::read_to_string(
            roots::fixture_dir("boltzmann-extlinux").join("boot/extlinux/extlinux.conf"),
        )
        .unwrap();
        let now = fs::read_to_string(root.join("boot/extlinux/extlinux.conf")).unwrap();
        assert_eq!(now, orig.replace("\ndefault bsp\n", "\ndefault mainline\n"));
        // panthor is a module here: no initramfs refresh.
        assert!(
            fs::read_to_string(root.join(format!("boot/initrd.img-{MAINLINE}")))
                .unwrap()
                .contains("(stand-in)")
        );
    });
}

#[test]
fn ampere_armbian_round_trip_repoints_the_boot_links() {
    round_trip("ampere-armbian", "ampere", |root| {
        for (link, target) in [
            ("boot/Image", format!("vmlinuz-{MAINLINE}")),
            ("boot/uInitrd", format!("uInitrd-{MAINLINE}")),
            ("boot/dtb", format!("dtb-{MAINLINE}")),
        ] {
            assert_eq!(
                fs::read_link(root.join(link)).unwrap().to_string_lossy(),
                target
            );
        }
        // The old kernel's files are all still there.
        assert!(root.join("boot/vmlinuz-6.1.75-vendor-rk35xx").exists());
        // Mainline needs no overlay: armbianEnv.txt is untouched.
        assert_eq!(
            fs::read(root.join("boot/armbianEnv.txt")).unwrap(),
            fs::read(roots::fixture_dir("ampere-armbian").join("boot/armbianEnv.txt")).unwrap()
        );
    });
}

#[test]
fn gpu_overlay_on_the_armbian_vendor_kernel_adds_panthor_and_keeps_foreign_lines() {
    let (_d, root) = fixture("ampere-armbian");
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .args(["--board", "ampere", "--only", "gpu-overlay", "--yes"])
        .assert()
        .success();
    let orig = fs::read_to_string(roots::fixture_dir("ampere-armbian").join("boot/armbianEnv.txt"))
        .unwrap();
    let now = fs::read_to_string(root.join("boot/armbianEnv.txt")).unwrap();
    assert_eq!(
        now,
        orig.replace(
            "overlays=rk3588-uart7-m2\n",
            "overlays=rk3588-uart7-m2 panthor-gpu\n"
        )
    );
}

#[test]
fn plan_shows_a_diff_per_file_and_writes_nothing() {
    let (_d, root) = fixture("boltzmann-uboot-menu");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = snapshot(&root);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC, "--dry-run"])
        .env("SUDO_USER", "rock")
        .assert()
        .success()
        .stdout(predicate::str::contains("+U_BOOT_DEFAULT=\"l0\""))
        .stdout(predicate::str::contains("-default l1"))
        .stdout(predicate::str::contains("+default l0"))
        .stdout(predicate::str::contains(
            "run `update-initramfs -u -k 7.0.0-rc3-marfrit-A1`",
        ))
        .stdout(predicate::str::contains("-render:x:105:"))
        .stdout(predicate::str::contains("+render:x:105:rock"));
    assert_same(&before, &snapshot(&root));
}

#[test]
fn json_plan_is_json_only_with_schema_version() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let v = json_plan(&root, &a.manifest, "boltzmann", BASIC);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(step_names(&v), ["kernel", "firmware", "access"]);
    let kernel = &v["plan"]["steps"][0]["actions"][0];
    assert_eq!(kernel["kind"], "write-file");
    assert!(kernel["diff"]
        .as_str()
        .unwrap()
        .contains("+default mainline"));
}

#[test]
fn without_a_terminal_or_yes_setup_refuses_and_changes_nothing() {
    let (_d, root) = fixture("boltzmann-uboot-menu");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = snapshot(&root);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC])
        .assert()
        .code(9)
        .stderr(predicate::str::contains("pass --yes"));
    assert_same(&before, &snapshot(&root));
}

#[test]
fn a_missing_mainline_kernel_names_the_package_to_install() {
    let (_d, root) = fixture("boltzmann-extlinux");
    fs::remove_file(root.join(format!("boot/vmlinuz-{MAINLINE}"))).unwrap();
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--dry-run"])
        .assert()
        .code(5)
        .stderr(predicate::str::contains(
            "sudo apt install linux-rk3588-marfrit-A1",
        ));
    // ampere's profile pins no release: any mainline kernel new enough would do.
    let (_d, root) = fixture("ampere-armbian");
    fs::remove_file(root.join(format!("boot/vmlinuz-{MAINLINE}"))).unwrap();
    rvl(&root, &a.manifest)
        .args(["--board", "ampere", "--dry-run"])
        .assert()
        .code(5)
        .stderr(predicate::str::contains(
            "no mainline kernel 6.10 or newer is installed",
        ));
}

#[test]
fn the_board_comes_from_the_device_tree_without_board() {
    let (_d, root) = fixture("ampere-armbian");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let out = rvl(&root, &a.manifest)
        .args(["--only", "kernel,gpu-overlay", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["plan"]["board"], "ampere");
    // ampere's mainline device tree keeps the GPU off: setup says so instead of guessing.
    let notes = v["plan"]["notes"].to_string();
    assert!(notes.contains("leaves the GPU node disabled"), "{notes}");
}

#[test]
fn a_generator_that_ignores_the_pin_fails_the_step_and_everything_is_put_back() {
    let (_d, root) = fixture("boltzmann-uboot-menu");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = snapshot(&root);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC, "--yes"])
        .env("RVL_TEST_UBOOT_UPDATE", "default=l1")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("step kernel failed"))
        .stderr(predicate::str::contains(
            "boots 6.1.75-npu-port, not 7.0.0-rc3-marfrit-A1",
        ))
        .stderr(predicate::str::contains("put back"));
    assert_same(&before, &snapshot(&root));
}

#[test]
fn a_bad_download_exits_6_and_installs_nothing() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), Some(&"0".repeat(64)), &[]);
    let before = snapshot(&root);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC, "--yes"])
        .assert()
        .code(6)
        .stderr(predicate::str::contains("sha256 mismatch"));
    assert_same(&before, &snapshot(&root));
    let cache = root.join(roots::STATE_DIR).join("cache");
    let left: Vec<_> = fs::read_dir(&cache)
        .map(|d| d.count())
        .into_iter()
        .collect();
    assert!(
        left.iter().all(|n| *n == 0),
        "cache holds leftovers: {left:?}"
    );
}

#[test]
fn a_held_lock_exits_7() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let _held = rvl::setup::lock::Lock::acquire(&rvl::host::Root::new(&root)).unwrap();
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC, "--yes"])
        .assert()
        .code(7)
        .stderr(predicate::str::contains("another rvl setup is running"));
}

#[test]
fn status_lists_what_was_applied() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .arg("--status")
        .assert()
        .success()
        .stdout(predicate::str::contains("has not changed"));
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "kernel", "--yes"])
        .assert()
        .success();
    let out = rvl(&root, &a.manifest)
        .args(["--status", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["applied"][0]["steps"][0], "kernel");
    assert_eq!(
        v["applied"][0]["entries"][0]["path"],
        "/boot/extlinux/extlinux.conf"
    );
    assert!(v["interrupted"].is_null());
}

#[test]
fn unknown_board_and_unknown_step_are_clear_errors() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .args(["--board", "rock5b", "--dry-run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no board profile `rock5b`"));
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "kernal", "--dry-run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown step `kernal`"));
    fs::remove_dir_all(root.join("sys/firmware/devicetree")).unwrap();
    rvl(&root, &a.manifest)
        .arg("--dry-run")
        .assert()
        .code(5)
        .stderr(predicate::str::contains("pass --board"));
}

#[test]
fn radxa_vendor_kernel_drops_the_kbase_overlay_and_regenerates() {
    let (_d, root) = fixture("boltzmann-uboot-menu");
    fs::create_dir_all(root.join("boot/dtbo")).unwrap();
    fs::write(root.join("boot/dtbo/rk3588-mali-enable.dtbo"), b"overlay").unwrap();
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = snapshot(&root);
    // Without the kernel step the BSP kernel keeps booting, so the overlay decides the driver.
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "gpu-overlay", "--yes"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "rename /boot/dtbo/rk3588-mali-enable.dtbo -> /boot/dtbo/rk3588-mali-enable.dtbo.disabled",
        ));
    assert!(!root.join("boot/dtbo/rk3588-mali-enable.dtbo").exists());
    assert_eq!(
        fs::read(root.join("boot/dtbo/rk3588-mali-enable.dtbo.disabled")).unwrap(),
        b"overlay"
    );
    rvl(&root, &a.manifest).arg("--rollback").assert().success();
    assert_same(&before, &snapshot(&root));
}

#[test]
fn prebuilt_mesa_is_unpacked_as_the_prefix_when_the_manifest_has_one() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(4);
    h.set_mode(0o755);
    h.set_cksum();
    b.append_data(&mut h, "lib/libvulkan_panfrost.so", &b"\x7fELF"[..])
        .unwrap();
    let archive = b.into_inner().unwrap();
    let url = a.server.route(
        "/pre/mesa-panvk.tar",
        common::http::Reply::Body(archive.clone()),
    );
    let mut yaml = fs::read_to_string(&a.manifest).unwrap();
    yaml.push_str(&format!(
        "prebuilt:\n  - id: mesa-panvk-aarch64\n    version: \"26.1.6\"\n    arch: aarch64\n    url: {url}\n    size: {}\n    sha256: {}\n    provenance: test\n",
        archive.len(),
        sha256_hex(&archive)
    ));
    fs::write(&a.manifest, yaml).unwrap();
    rvl(&root, &a.manifest)
        .args([
            "--board",
            "boltzmann",
            "--only",
            "mesa",
            "--mesa-from",
            "prebuilt",
            "--yes",
        ])
        .assert()
        .success();
    assert_eq!(
        fs::read(root.join("opt/rvl/mesa-26.1.6-rvl1/lib/libvulkan_panfrost.so")).unwrap(),
        b"\x7fELF"
    );
}

#[test]
fn prebuilt_mesa_without_one_in_the_manifest_says_so() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .args([
            "--board",
            "boltzmann",
            "--only",
            "mesa",
            "--mesa-from",
            "prebuilt",
            "--dry-run",
        ])
        .assert()
        .code(5)
        .stderr(predicate::str::contains(
            "no prebuilt Mesa 26.1.6 for aarch64",
        ));
}

#[test]
fn icd_alone_needs_panvk_installed_first() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "icd", "--dry-run"])
        .assert()
        .code(5)
        .stderr(predicate::str::contains("run the mesa step first"));
}

#[test]
fn an_image_without_a_known_boot_configuration_is_a_clear_error() {
    let (_d, root) = fixture("boltzmann-extlinux");
    fs::remove_file(root.join("boot/extlinux/extlinux.conf")).unwrap();
    let a = artifacts(&firmware_bytes(), None, &[]);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "kernel", "--dry-run"])
        .assert()
        .code(5)
        .stderr(predicate::str::contains("cannot tell how this image boots"));
}

#[test]
fn a_relative_root_works_for_tools_too() {
    let (d, _root) = fixture("boltzmann-uboot-menu");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let mut cmd = assert_cmd::Command::cargo_bin("rvl").unwrap();
    cmd.current_dir(d.path())
        .env_remove("SUDO_USER")
        .env_remove("RVL_FAULT")
        .args([
            "setup",
            "--root",
            "root",
            "--board",
            "boltzmann",
            "--only",
            "kernel",
            "--yes",
        ])
        .arg("--manifest")
        .arg(&a.manifest)
        .assert()
        .success();
    let ext = fs::read_to_string(d.path().join("root/boot/extlinux/extlinux.conf")).unwrap();
    assert!(ext.contains("\ndefault l0\n"));
}

#[test]
fn json_apply_prints_one_json_document_with_the_outcome() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let out = rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC, "--yes", "--json"])
        .env("SUDO_USER", "rock")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON only");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["applied"], true);
    assert_eq!(
        v["outcome"]["steps"],
        serde_json::json!(["kernel", "firmware", "access"])
    );
    assert_eq!(v["remaining"], serde_json::json!([]));
    // Nothing left to do: the same command says so, still as JSON.
    let out = rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", BASIC, "--yes", "--json"])
        .env("SUDO_USER", "rock")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["applied"], false);
}
