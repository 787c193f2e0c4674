//! `rvl setup` end to end on fake roots: plan contents, apply, an empty second plan, a rollback
//! that restores the tree byte for byte, foreign lines that survive, refusals that change nothing.

mod common;

use std::fs;
use std::path::Path;

use common::http::sha256_hex;
use common::roots::{self, artifacts, assert_same, firmware_bytes, snapshot, Board};
use common::{fixture_dir, fixture_file, have_dtc, rvl, setup, step_names, Fixture, Output};
use rvl::exit;

const BASIC: &str = "kernel,gpu-overlay,firmware,access";
const MAINLINE: &str = "7.0.0-rc3-marfrit-A1";
/// rvl's overlay for the CoolPi CM5 boards (ampere), as installed.
const CM5_OVERLAY: &str = "rvl-rk3588-coolpi-cm5-gpu";

impl Board {
    fn root(&self) -> &Path {
        self.fx.path()
    }

    /// `rvl setup ARGS` on this root with this manifest.
    fn run(&self, args: &[&str]) -> Output {
        setup(&self.fx, &self.a.manifest).args(args).run()
    }

    /// The same as `rock` under sudo (the access step adds SUDO_USER to the render group).
    fn run_as_rock(&self, args: &[&str]) -> Output {
        setup(&self.fx, &self.a.manifest)
            .args(args)
            .env("SUDO_USER", "rock")
            .run()
    }

    /// The `--dry-run --json` plan for `--board BOARD --only ONLY`.
    fn json_plan(&self, board: &str, only: &str) -> serde_json::Value {
        self.run_as_rock(&["--board", board, "--only", only, "--dry-run", "--json"])
            .expect_code(exit::OK)
            .stdout_json()
    }
}

/// Apply, check the second plan is empty, roll back, check the tree is what it was.
fn round_trip(fixture_name: &str, board: &str, check_applied: impl Fn(&Path)) {
    round_trip_of(fixture_name, board, BASIC, check_applied)
}

fn round_trip_of(fixture_name: &str, board: &str, steps: &str, check_applied: impl Fn(&Path)) {
    let b = Board::new(fixture_name);
    let root = b.root();
    let before = snapshot(root);

    let plan = b.json_plan(board, steps);
    assert!(step_names(&plan).contains(&"kernel".to_string()), "{plan}");
    assert_same(&before, &snapshot(root)); // --dry-run changes nothing
    assert!(
        !root.join(roots::STATE_DIR).exists(),
        "--dry-run must not create state"
    );

    b.run_as_rock(&["--board", board, "--only", steps, "--yes"])
        .expect_code(exit::OK)
        .expect_stdout("applied");
    check_applied(root);
    let fw = root.join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin");
    assert_eq!(fs::read(&fw).unwrap(), firmware_bytes());
    assert!(fs::read_to_string(root.join("etc/group"))
        .unwrap()
        .contains("render:x:105:rock\n"));

    let again = b.json_plan(board, steps);
    assert!(
        step_names(&again).is_empty(),
        "second plan not empty: {again}"
    );

    b.run(&["--rollback", "--yes"])
        .expect_code(exit::OK)
        .expect_stdout("rolled back");
    assert_same(&before, &snapshot(root));
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
                fixture_dir("boltzmann-uboot-menu").join("etc/u-boot-menu/conf.d/50-vendor.conf")
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
            fixture_dir("boltzmann-extlinux").join("boot/extlinux/extlinux.conf"),
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
    // Without dtc the gpu-overlay step is blocked (tested below); the rest round-trips.
    let steps = if have_dtc() {
        BASIC
    } else {
        "kernel,firmware,access"
    };
    round_trip_of("ampere-armbian", "ampere", steps, |root| {
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
        // Mainline leaves ampere's GPU off: rvl's overlay is loaded as a user overlay, and
        // armbianEnv.txt gains that one line only.
        let orig =
            fs::read_to_string(fixture_dir("ampere-armbian").join("boot/armbianEnv.txt")).unwrap();
        let now = fs::read_to_string(root.join("boot/armbianEnv.txt")).unwrap();
        if steps == BASIC {
            assert_eq!(now, format!("{orig}user_overlays={CM5_OVERLAY}\n"));
            assert!(root
                .join(format!("boot/overlay-user/{CM5_OVERLAY}.dtbo"))
                .is_file());
        } else {
            assert_eq!(now, orig);
        }
    });
}

#[test]
fn gpu_overlay_on_the_armbian_vendor_kernel_adds_panthor_and_keeps_foreign_lines() {
    let b = Board::new("ampere-armbian");
    b.run(&["--board", "ampere", "--only", "gpu-overlay", "--yes"])
        .expect_code(exit::OK);
    let orig =
        fs::read_to_string(fixture_dir("ampere-armbian").join("boot/armbianEnv.txt")).unwrap();
    assert_eq!(
        b.fx.read("boot/armbianEnv.txt"),
        orig.replace(
            "overlays=rk3588-uart7-m2\n",
            "overlays=rk3588-uart7-m2 panthor-gpu\n"
        )
    );
}

#[test]
fn plan_shows_a_diff_per_file_and_writes_nothing() {
    let b = Board::new("boltzmann-uboot-menu");
    let before = snapshot(b.root());
    b.run_as_rock(&["--board", "boltzmann", "--only", BASIC, "--dry-run"])
        .expect_code(exit::OK)
        .expect_stdout("+U_BOOT_DEFAULT=\"l0\"")
        .expect_stdout("-default l1")
        .expect_stdout("+default l0")
        .expect_stdout("run `update-initramfs -u -k 7.0.0-rc3-marfrit-A1`")
        .expect_stdout("-render:x:105:")
        .expect_stdout("+render:x:105:rock");
    assert_same(&before, &snapshot(b.root()));
}

#[test]
fn json_plan_is_json_only_with_schema_version() {
    let v = Board::new("boltzmann-extlinux").json_plan("boltzmann", BASIC);
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
    let b = Board::new("boltzmann-uboot-menu");
    let before = snapshot(b.root());
    b.run(&["--board", "boltzmann", "--only", BASIC])
        .expect_code(exit::NOT_CONFIRMED)
        .expect_stderr("pass --yes");
    assert_same(&before, &snapshot(b.root()));
}

#[test]
fn a_missing_mainline_kernel_blocks_its_step_only_and_names_the_package_to_install() {
    // ampere's profile pins no release: any mainline kernel new enough would do.
    for (fixture, board, says) in [
        (
            "boltzmann-extlinux",
            "boltzmann",
            "sudo apt install linux-rk3588-marfrit-A1",
        ),
        (
            "ampere-armbian",
            "ampere",
            "no mainline kernel 6.10 or newer is installed",
        ),
    ] {
        let b = Board::new(fixture);
        b.fx.remove(&format!("boot/vmlinuz-{MAINLINE}"));
        b.run(&["--board", board, "--only", "kernel,firmware", "--dry-run"])
            .expect_code(exit::BLOCKED)
            .expect_stdout("✗ kernel blocked: ")
            .expect_stdout(says)
            .expect_stdout("install the G610 CSF firmware");
        let v = b
            .run(&[
                "--board",
                board,
                "--only",
                "kernel,firmware",
                "--dry-run",
                "--json",
            ])
            .expect_code(exit::BLOCKED)
            .stdout_json();
        assert_eq!(v["exit_code"], exit::BLOCKED);
        assert_eq!(step_names(&v), ["firmware"], "{v}");
        assert_eq!(v["plan"]["blocked"][0]["step"], "kernel", "{v}");
        let all = format!(
            "{} {}",
            v["plan"]["blocked"][0]["why"], v["plan"]["blocked"][0]["fix"]
        );
        assert!(all.contains(says), "{v}");
        // Applying does the rest of the plan and still exits blocked.
        b.run(&["--board", board, "--only", "kernel,firmware", "--yes"])
            .expect_code(exit::BLOCKED)
            .expect_stdout("applied 1 step (firmware)")
            .expect_stdout("✗ kernel blocked: ");
        assert!(b
            .fx
            .join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin")
            .exists());
    }
}

#[test]
fn the_board_comes_from_the_device_tree_without_board() {
    let b = Board::new("ampere-armbian");
    let out = b
        .run(&["--only", "kernel,gpu-overlay", "--dry-run", "--json"])
        .stdout_json();
    assert_eq!(out["plan"]["board"], "ampere");
    // ampere's mainline device tree keeps the GPU off: setup plans rvl's overlay (or says
    // why it cannot), never nothing.
    if have_dtc() {
        assert_eq!(step_names(&out), ["kernel", "gpu-overlay"], "{out}");
    } else {
        assert_eq!(out["plan"]["blocked"][0]["step"], "gpu-overlay", "{out}");
    }
}

#[test]
fn a_generator_that_ignores_the_pin_fails_the_step_and_everything_is_put_back() {
    let b = Board::new("boltzmann-uboot-menu");
    let before = snapshot(b.root());
    setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", BASIC, "--yes"])
        .env("RVL_TEST_UBOOT_UPDATE", "default=l1")
        .run()
        .expect_code(exit::STEP_FAILED)
        .expect_stderr("step kernel failed")
        .expect_stderr("boots 6.1.75-npu-port, not 7.0.0-rc3-marfrit-A1")
        .expect_stderr("put back");
    assert_same(&before, &snapshot(b.root()));
}

#[test]
fn a_bad_download_exits_6_and_installs_nothing() {
    let fx = Fixture::copy("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), Some(&"0".repeat(64)), &[]);
    let before = snapshot(fx.path());
    setup(&fx, &a.manifest)
        .args(&["--board", "boltzmann", "--only", BASIC, "--yes"])
        .run()
        .expect_code(exit::DOWNLOAD)
        .expect_stderr("sha256 mismatch");
    assert_same(&before, &snapshot(fx.path()));
    let cache = fx.join(roots::STATE_DIR).join("cache");
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
    let b = Board::new("boltzmann-extlinux");
    let _held = rvl::setup::lock::Lock::acquire(&rvl::host::Root::new(b.root())).unwrap();
    b.run(&["--board", "boltzmann", "--only", BASIC, "--yes"])
        .expect_code(exit::LOCKED)
        .expect_stderr("another rvl setup is running");
}

#[test]
fn status_lists_what_was_applied() {
    let b = Board::new("boltzmann-extlinux");
    b.run(&["--status"])
        .expect_code(exit::OK)
        .expect_stdout("has not changed");
    b.run(&["--board", "boltzmann", "--only", "kernel", "--yes"])
        .expect_code(exit::OK);
    let v = b.run(&["--status", "--json"]).stdout_json();
    assert_eq!(v["applied"][0]["steps"][0], "kernel");
    assert_eq!(
        v["applied"][0]["entries"][0]["path"],
        "/boot/extlinux/extlinux.conf"
    );
    assert!(v["interrupted"].is_null());
}

#[test]
fn unknown_board_and_unknown_step_are_clear_errors() {
    let b = Board::new("boltzmann-extlinux");
    b.run(&["--board", "rock5x", "--dry-run"])
        .expect_code(exit::USAGE)
        .expect_stderr("no board profile `rock5x`");
    b.run(&["--board", "boltzmann", "--only", "kernal", "--dry-run"])
        .expect_code(exit::USAGE)
        .expect_stderr("unknown step `kernal`");
    b.fx.remove("sys/firmware/devicetree");
    b.run(&["--dry-run"])
        .expect_code(exit::UNSUPPORTED)
        .expect_stderr("pass --board");
}

#[test]
fn radxa_vendor_kernel_drops_the_kbase_overlay_and_regenerates() {
    let b = Board::new("boltzmann-uboot-menu");
    b.fx.write("boot/dtbo/rk3588-mali-enable.dtbo", b"overlay");
    let before = snapshot(b.root());
    // Without the kernel step the BSP kernel keeps booting, so the overlay decides the driver.
    b.run(&["--board", "boltzmann", "--only", "gpu-overlay", "--yes"])
        .expect_code(exit::OK)
        .expect_stdout(
            "rename /boot/dtbo/rk3588-mali-enable.dtbo -> /boot/dtbo/rk3588-mali-enable.dtbo.disabled",
        );
    assert!(!b.fx.join("boot/dtbo/rk3588-mali-enable.dtbo").exists());
    assert_eq!(
        fs::read(b.fx.join("boot/dtbo/rk3588-mali-enable.dtbo.disabled")).unwrap(),
        b"overlay"
    );
    b.run(&["--rollback", "--yes"]).expect_code(exit::OK);
    assert_same(&before, &snapshot(b.root()));
}

#[test]
fn prebuilt_mesa_is_unpacked_as_the_prefix_when_the_manifest_has_one() {
    let b = Board::new("boltzmann-extlinux");
    let archive = roots::tar(&[("lib/libvulkan_panfrost.so", b"\x7fELF", 0o755)]);
    let url = b.a.server.route(
        "/pre/mesa-panvk.tar",
        common::http::Reply::Body(archive.clone()),
    );
    let mut yaml = fs::read_to_string(&b.a.manifest).unwrap();
    yaml.push_str(&format!(
        "prebuilt:\n  - id: mesa-panvk-aarch64\n    version: \"26.1.6\"\n    arch: aarch64\n    url: {url}\n    size: {}\n    sha256: {}\n    provenance: test\n",
        archive.len(),
        sha256_hex(&archive)
    ));
    fs::write(&b.a.manifest, yaml).unwrap();
    b.run(&[
        "--board",
        "boltzmann",
        "--only",
        "mesa",
        "--mesa-from",
        "prebuilt",
        "--yes",
    ])
    .expect_code(exit::OK);
    assert_eq!(
        fs::read(b.fx.join("opt/rvl/mesa-26.1.6-rvl1/lib/libvulkan_panfrost.so")).unwrap(),
        b"\x7fELF"
    );
}

#[test]
fn refusals_that_a_plan_cannot_get_past_are_named() {
    // (what the test removes from the root, the --only and --mesa-from flags, what stderr says)
    // The manifest has no prebuilt Mesa: the flag asks for what is not there (usage, not an
    // unsupported board), and the error names the command that builds it instead.
    let b = Board::new("boltzmann-extlinux");
    setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--dry-run"])
        .args(&["--only", "mesa", "--mesa-from", "prebuilt"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("no prebuilt Mesa 26.1.6 for aarch64")
        .expect_stderr(&format!(
            "rvl setup --root {} --board boltzmann --manifest {} --only mesa,icd",
            b.fx.path().display(),
            b.a.manifest.display()
        ));
}

#[test]
fn a_step_left_out_by_only_blocks_the_step_that_needs_it_with_the_command_for_both() {
    // The ICD alone needs panvk installed first: a step-order block (exit 11, the rest of the
    // plan runs), never "unsupported board" (exit 5).
    let b = Board::new("boltzmann-extlinux");
    setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--dry-run", "--only", "firmware,icd"])
        .run()
        .expect_code(exit::BLOCKED)
        .expect_stdout("firmware — install the G610 CSF firmware")
        .expect_stdout("✗ icd blocked: step order: the icd step registers the panvk the mesa step builds")
        .expect_stdout(&format!(
            "fix: run both, mesa first: rvl setup --root {} --board boltzmann --manifest {} --only mesa,icd",
            b.fx.path().display(),
            b.a.manifest.display()
        ));
}

#[test]
fn an_image_without_a_known_boot_configuration_blocks_the_kernel_step() {
    let b = Board::new("boltzmann-extlinux");
    b.fx.remove("boot/extlinux/extlinux.conf");
    b.run(&["--board", "boltzmann", "--only", "kernel", "--dry-run"])
        .expect_code(exit::BLOCKED)
        .expect_stdout("✗ kernel blocked: cannot tell how this image boots");
}

#[test]
fn gpu_overlay_on_ampere_with_the_gpu_disabled_installs_rvls_overlay_or_is_blocked() {
    let fx = Fixture::copy("ampere-gpu-disabled");
    // The lock and state live in var/lib/rvl; the doctor fixture has no var/lib to hold them.
    fs::create_dir_all(fx.join("var/lib")).unwrap();
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = snapshot(fx.path());
    let run = |dtc: Option<&str>, extra: &str| {
        let cmd =
            setup(&fx, &a.manifest).args(&["--board", "ampere", "--only", "gpu-overlay", extra]);
        match dtc {
            Some(d) => cmd.env("RVL_DTC", d),
            None => cmd,
        }
        .run()
    };
    // No dtc: blocked with the package to install, never "nothing to do".
    let out = run(Some("/nonexistent/dtc"), "--yes");
    assert!(!out.stdout().contains("nothing to do"), "{out}");
    out.expect_code(exit::BLOCKED)
        .expect_stdout("✗ gpu-overlay blocked: ")
        .expect_stdout("sudo apt install device-tree-compiler");
    assert_same(&before, &snapshot(fx.path()));
    if !have_dtc() {
        return;
    }
    let out = run(None, "--yes");
    assert!(!out.stdout().contains("nothing to do"), "{out}");
    out.expect_code(exit::OK)
        .expect_stdout(&format!("install /boot/overlay-user/{CM5_OVERLAY}.dtbo"));
    assert!(fx
        .read("boot/armbianEnv.txt")
        .ends_with(&format!("\nuser_overlays={CM5_OVERLAY}\n")));
    // Once installed, the step is done; without dtc it is kept, not blocked.
    run(None, "--dry-run")
        .expect_code(exit::OK)
        .expect_stdout("nothing to do");
    run(Some("/nonexistent/dtc"), "--dry-run").expect_code(exit::OK);
    // The installed overlay enables &gpu with the board's real GPU regulator.
    check_overlay_on_the_cm5_base(&fx.join(&format!("boot/overlay-user/{CM5_OVERLAY}.dtbo")));
    setup(&fx, &a.manifest)
        .args(&["--rollback", "--yes"])
        .run()
        .expect_code(exit::OK);
    assert_same(&before, &snapshot(fx.path()));
}

/// Apply an installed overlay to a base DTB compiled from a DTS with the CoolPi CM5's real
/// labels (`gpu`, disabled; the RK806's `vdd_gpu_s0`), as U-Boot would: `&gpu` must end up
/// okay, with mali-supply pointing at that regulator's phandle.
fn check_overlay_on_the_cm5_base(dtbo: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.dtb");
    let merged = dir.path().join("merged.dtb");
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    run(std::process::Command::new("dtc")
        .args(["-@", "-q", "-I", "dts", "-O", "dtb", "-o"])
        .arg(&base)
        .arg(fixture_file("dts/rk3588-coolpi-cm5-base.dts")));
    run(std::process::Command::new("fdtoverlay")
        .arg("-i")
        .arg(&base)
        .arg("-o")
        .arg(&merged)
        .arg(dtbo));
    let get = |node: &str, prop: &str| {
        run(std::process::Command::new("fdtget")
            .arg(&merged)
            .args([node, prop]))
    };
    assert_eq!(get("/gpu@fb000000", "status"), "okay");
    let regulator = "/spi@feb20000/pmic@0/regulators/dcdc-reg1";
    assert_eq!(
        get("/gpu@fb000000", "mali-supply"),
        get(regulator, "phandle")
    );
    assert_eq!(get(regulator, "regulator-name"), "vdd_gpu_s0");
}

#[test]
fn gpu_overlay_on_u_boot_menu_and_plain_extlinux_follows_each_layout() {
    if !have_dtc() {
        return;
    }
    // ampere's board on the other fixtures' boot layouts (any rk3588 root will do: --board).
    let b = Board::new("boltzmann-uboot-menu");
    let before = snapshot(b.root());
    b.run(&["--board", "ampere", "--only", "kernel,gpu-overlay", "--yes"])
        .expect_code(exit::OK);
    check_overlay_on_the_cm5_base(&b.fx.join(&format!("boot/dtbo/{CM5_OVERLAY}.dtbo")));
    let frag = b.fx.read("etc/u-boot-menu/conf.d/rvl-overlays.conf");
    assert!(
        frag.ends_with(&format!("U_BOOT_FDT_OVERLAYS=\"{CM5_OVERLAY}.dtbo\"\n")),
        "{frag}"
    );
    let ext = b.fx.read("boot/extlinux/extlinux.conf");
    assert!(ext.contains("\ndefault l0\n"), "{ext}");
    assert!(
        ext.contains(&format!("\tfdtoverlays /boot/dtbo/{CM5_OVERLAY}.dtbo\n")),
        "{ext}"
    );
    b.run(&[
        "--board",
        "ampere",
        "--only",
        "kernel,gpu-overlay",
        "--dry-run",
    ])
    .expect_code(exit::OK)
    .expect_stdout("nothing to do");
    b.run(&["--rollback", "--yes"]).expect_code(exit::OK);
    assert_same(&before, &snapshot(b.root()));

    // Plain extlinux: the kernel step's new default and the overlay line compose in one file.
    let b = Board::new("boltzmann-extlinux");
    let orig = b.fx.read("boot/extlinux/extlinux.conf");
    b.run(&["--board", "ampere", "--only", "kernel,gpu-overlay", "--yes"])
        .expect_code(exit::OK);
    let ext = b.fx.read("boot/extlinux/extlinux.conf");
    let line = format!("fdtoverlays /boot/dtbo/{CM5_OVERLAY}.dtbo\n");
    assert!(ext.contains("\ndefault mainline\n"), "{ext}");
    assert_eq!(ext.matches(&line).count(), 1, "{ext}");
    let mainline_block = &ext[ext.find("label mainline").unwrap()..];
    assert!(
        mainline_block.contains(&line),
        "on the default entry: {ext}"
    );
    assert_eq!(
        ext.replace(&format!("    {line}"), ""),
        orig.replace("\ndefault bsp\n", "\ndefault mainline\n")
    );
    check_overlay_on_the_cm5_base(&b.fx.join(&format!("boot/dtbo/{CM5_OVERLAY}.dtbo")));
}

#[test]
fn gpu_overlay_on_a_vendor_dt_that_gives_kbase_the_gpu_is_blocked_not_nothing_to_do() {
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    let a = artifacts(&firmware_bytes(), None, &[]);
    // The doctor fails gpu-driver on this root…
    rvl(&["doctor", "--manifest"])
        .arg(&a.manifest)
        .root(&fx)
        .run()
        .expect_code(exit::PROBLEMS)
        .expect_stdout("✗ gpu-driver");
    // …so setup's gpu-overlay must not call it done: it says what would fix it.
    let out = setup(&fx, &a.manifest)
        .args(&["--only", "gpu-overlay", "--dry-run"])
        .run();
    assert!(!out.stdout().contains("nothing to do"), "{}", out.stdout());
    out.expect_code(exit::BLOCKED)
        .expect_stdout("✗ gpu-overlay blocked: kbase owns the GPU")
        .expect_stdout(&format!(
            "rvl setup --root {} --board boltzmann --manifest {} --only kernel",
            fx.path().display(),
            a.manifest.display()
        ));
}

#[test]
fn a_relative_root_works_for_tools_too() {
    let b = Board::new("boltzmann-uboot-menu");
    rvl(&[
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
    .arg(&b.a.manifest)
    .current_dir(b.fx.parent())
    .run()
    .expect_code(exit::OK);
    let ext = fs::read_to_string(b.fx.parent().join("root/boot/extlinux/extlinux.conf")).unwrap();
    assert!(ext.contains("\ndefault l0\n"));
}

#[test]
fn json_apply_prints_one_json_document_with_the_outcome() {
    let b = Board::new("boltzmann-extlinux");
    let apply = ["--board", "boltzmann", "--only", BASIC, "--yes", "--json"];
    let v = b.run_as_rock(&apply).expect_code(exit::OK).stdout_json();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["applied"], true);
    assert_eq!(
        v["outcome"]["steps"],
        serde_json::json!(["kernel", "firmware", "access"])
    );
    assert_eq!(v["remaining"], serde_json::json!([]));
    // Nothing left to do: the same command says so, still as JSON.
    let v = b.run_as_rock(&apply).stdout_json();
    assert_eq!(v["applied"], false);
}

const BULLSEYE: &str =
    "PRETTY_NAME=\"Debian GNU/Linux 11 (bullseye)\"\nVERSION_ID=\"11\"\nID=debian\n";

/// The ICD files the icd step writes; none may exist while panvk was never built.
const ICD_FILES: [&str; 3] = [
    "etc/vulkan/icd.d/rvl_panvk.aarch64.json",
    "etc/environment.d/90-rvl-vulkan.conf",
    "etc/profile.d/rvl-vulkan.sh",
];

#[test]
fn a_blocked_mesa_step_blocks_the_icd_step_in_the_full_plan_and_with_only() {
    // Debian 11's toolchain cannot build Mesa 26: the mesa step is blocked, and an ICD naming
    // a library that was never built would break Vulkan for every login, so icd is blocked
    // with it and nothing of it is written.
    let b = Board::new("boltzmann-extlinux");
    b.fx.write("etc/os-release", BULLSEYE);
    for only in [None, Some("mesa,icd")] {
        let mut args = vec!["--board", "boltzmann", "--dry-run", "--json"];
        if let Some(o) = only {
            args.extend(["--only", o]);
        }
        let v = b.run(&args).expect_code(exit::BLOCKED).stdout_json();
        let blocked: Vec<&str> = v["plan"]["blocked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["step"].as_str().unwrap())
            .collect();
        assert!(blocked.contains(&"mesa") && blocked.contains(&"icd"), "{v}");
        assert!(!step_names(&v).contains(&"icd".to_string()), "{v}");
        let icd = v["plan"]["blocked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == "icd")
            .unwrap();
        assert!(
            icd["why"]
                .as_str()
                .unwrap()
                .contains("mesa step is blocked"),
            "{icd}"
        );
    }
    let out = b
        .run(&["--board", "boltzmann", "--only", "mesa,icd", "--yes"])
        .expect_code(exit::BLOCKED)
        .expect_stdout("✗ mesa blocked: ")
        .expect_stdout("✗ icd blocked: ");
    assert!(!out.stdout().contains("applied"), "{}", out.stdout());
    let full = b
        .run(&["--board", "boltzmann", "--yes"])
        .expect_code(exit::BLOCKED);
    assert!(!full.stdout().contains("(icd)"), "{}", full.stdout());
    for f in ICD_FILES {
        assert!(!b.fx.join(f).exists(), "{f} written though mesa is blocked");
    }
}

#[test]
fn icd_without_panvk_installed_or_planned_is_blocked_with_the_step_order() {
    let b = Board::new("boltzmann-extlinux");
    let before = snapshot(b.root());
    let out = b
        .run(&["--board", "boltzmann", "--only", "kernel,icd", "--yes"])
        .expect_code(exit::BLOCKED)
        .expect_stdout(
            "✗ icd blocked: step order: the icd step registers the panvk the mesa step builds",
        )
        .expect_stdout("--only mesa,icd");
    // The kernel step still ran; icd wrote nothing.
    assert!(out.stdout().contains("(kernel)"), "{}", out.stdout());
    for f in ICD_FILES {
        assert!(!b.fx.join(f).exists(), "{f} written without panvk");
    }
    assert!(roots::changed(&before, &snapshot(b.root()))
        .iter()
        .all(|p| !p.contains("vulkan")));
}

#[test]
fn setup_refuses_a_machine_that_is_not_a_board_even_with_board() {
    // This test runs on the machine itself (no --root): a PC in CI and here.
    if std::env::consts::ARCH == "aarch64" && Path::new("/proc/device-tree").is_dir() {
        eprintln!("SKIPPED: this machine is an aarch64 board with a device tree");
        return;
    }
    for args in [&["--board", "boltzmann", "--dry-run"][..], &["--dry-run"]] {
        let out = rvl(&["setup"])
            .args(args)
            .run()
            .expect_code(exit::UNSUPPORTED);
        let why = out.stderr();
        assert!(why.contains("not an RK3588 board"), "{why}");
        assert!(
            why.contains("--root"),
            "names the way to plan an image: {why}"
        );
        assert!(
            out.stdout().is_empty(),
            "no plan for this machine: {}",
            out.stdout()
        );
    }
    // rvl's labs stand a chroot in for the board: RVL_LAB_MACHINE=1 lets setup plan here, and
    // another value is a usage error, not a silent "yes".
    let out = rvl(&[
        "setup",
        "--board",
        "boltzmann",
        "--only",
        "icd",
        "--dry-run",
    ])
    .env("RVL_LAB_MACHINE", "1")
    .run();
    assert!(
        !out.stderr().contains("not an RK3588 board"),
        "{}",
        out.stderr()
    );
    rvl(&["setup", "--board", "boltzmann", "--dry-run"])
        .env("RVL_LAB_MACHINE", "yes")
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("RVL_LAB_MACHINE=yes: expected 1");
    // An image of a board is planned from any machine.
    let b = Board::new("boltzmann-extlinux");
    b.run(&["--board", "boltzmann", "--only", "firmware", "--dry-run"])
        .expect_code(exit::OK);
}

#[test]
fn the_access_step_of_an_image_adds_the_images_user_not_the_hosts_sudo_user() {
    let b = Board::new("boltzmann-extlinux");
    // alice ran `sudo rvl setup --root …` on her PC; the image's login user is rock.
    let out = setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "access", "--yes"])
        .env("SUDO_USER", "alice")
        .run()
        .expect_code(exit::OK);
    assert!(
        out.stdout().contains("add rock to the `render` group"),
        "{out}"
    );
    let group = b.fx.read("etc/group");
    assert!(group.contains("render:x:105:rock\n"), "{group}");
    assert!(!group.contains("alice"), "{group}");
}

#[test]
fn an_image_with_several_users_needs_user_and_user_must_exist() {
    let b = Board::new("boltzmann-extlinux");
    let passwd = b.fx.read("etc/passwd");
    b.fx.write(
        "etc/passwd",
        format!("{passwd}anna:x:1001:1001::/home/anna:/bin/bash\n"),
    );
    b.run(&["--board", "boltzmann", "--only", "access", "--dry-run"])
        .expect_code(exit::BLOCKED)
        .expect_stdout("several login users (rock, anna)")
        .expect_stdout("--only access --user rock");
    b.run(&[
        "--board",
        "boltzmann",
        "--only",
        "access",
        "--user",
        "anna",
        "--yes",
    ])
    .expect_code(exit::OK);
    assert!(b.fx.read("etc/group").contains("render:x:105:anna\n"));
    b.run(&[
        "--board",
        "boltzmann",
        "--only",
        "access",
        "--user",
        "zed",
        "--dry-run",
    ])
    .expect_code(exit::BLOCKED)
    .expect_stdout("--user zed: /etc/passwd of this system has no such user");
    b.run(&[
        "--board",
        "boltzmann",
        "--only",
        "access",
        "--user",
        "x;reboot",
    ])
    .expect_code(exit::USAGE);
}

#[test]
fn under_root_the_plan_shows_what_apply_does_with_the_images_u_boot_update() {
    // As a user runs it: no RVL_ROOT_TOOLS, so the image's own u-boot-update is not run here.
    let b = Board::new("boltzmann-uboot-menu");
    let plan = common::setup_without_stand_ins(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel", "--dry-run"])
        .run()
        .expect_code(exit::OK);
    let text = plan.stdout();
    // The edit apply makes, with its diff, and the tool left for the board: not "run it".
    assert!(text.contains("edit /boot/extlinux/extlinux.conf"), "{text}");
    assert!(text.contains("+default l0"), "{text}");
    assert!(
        text.contains("leave `sudo u-boot-update` for the board"),
        "{text}"
    );
    assert!(!text.contains("run `u-boot-update`"), "{text}");
    let json = common::setup_without_stand_ins(&b.fx, &b.a.manifest)
        .args(&[
            "--board",
            "boltzmann",
            "--only",
            "kernel",
            "--dry-run",
            "--json",
        ])
        .run()
        .stdout_json();
    let planned: Vec<String> = json["plan"]["steps"][0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["path"].as_str().map(str::to_string))
        .collect();
    let done = common::setup_without_stand_ins(&b.fx, &b.a.manifest)
        .args(&[
            "--board",
            "boltzmann",
            "--only",
            "kernel",
            "--yes",
            "--json",
        ])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    let mut changed: Vec<String> = done["outcome"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    changed.retain(|p| !p.starts_with("/etc/u-boot-menu/conf.d") || planned.contains(p));
    let mut planned_sorted = planned.clone();
    planned_sorted.sort();
    changed.sort();
    assert_eq!(
        changed, planned_sorted,
        "apply changed what the plan listed: {done}"
    );
    assert!(
        done["outcome"]["deferred"]
            .to_string()
            .contains("sudo u-boot-update"),
        "{done}"
    );
    assert!(b
        .fx
        .read("boot/extlinux/extlinux.conf")
        .contains("\ndefault l0\n"));
}
