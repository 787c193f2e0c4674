//! Rollback that never destroys what changed after setup (issue 10): three-way per path, only
//! setup's own edits undone in the files it shares with the admin, refusals named with their own
//! exit status, no boot default pointed at a missing kernel, `--dry-run`, `--run ID`, `--status`.

mod common;

use std::process::Command;

use common::roots::{assert_same, snapshot, Board};
use common::{fixture_dir, setup, Output};
use rvl::exit;

const UBOOT_MENU: &str = "boltzmann-uboot-menu";
const VENDOR_KERNEL: &str = "boot/vmlinuz-6.1.75-npu-port";

impl Board {
    /// `rvl setup ARGS --user USER` (an image's access step takes its user from --user;
    /// the image's passwd gets the user first, as `useradd` would have).
    fn run_as(&self, user: &str, args: &[&str]) -> Output {
        let passwd = self.fx.read("etc/passwd");
        if !passwd.lines().any(|l| l.starts_with(&format!("{user}:"))) {
            self.fx.write(
                "etc/passwd",
                format!("{passwd}{user}:x:1100:1100::/home/{user}:/bin/sh\n"),
            );
        }
        setup(&self.fx, &self.a.manifest)
            .args(args)
            .args(&["--user", user])
            .run()
    }

    fn run(&self, args: &[&str]) -> Output {
        setup(&self.fx, &self.a.manifest).args(args).run()
    }

    fn apply(&self, user: &str, only: &str) {
        self.run_as(user, &["--board", "boltzmann", "--only", only, "--yes"])
            .expect_code(exit::OK);
    }

    fn original(&self, rel: &str) -> String {
        std::fs::read_to_string(fixture_dir(UBOOT_MENU).join(rel)).unwrap()
    }

    /// What u-boot-update does after a kernel package is removed: regenerate extlinux.conf
    /// from the kernels left in /boot (the fixture's stand-in, run on the root).
    fn regenerate_extlinux(&self) {
        let ok = Command::new("sh")
            .arg(self.fx.join("usr/sbin/u-boot-update"))
            .env("RVL_ROOT", self.fx.path())
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
    }
}

fn default_line(extlinux: &str) -> &str {
    extlinux
        .lines()
        .find(|l| l.starts_with("default "))
        .unwrap_or("")
}

#[test]
fn a_group_line_added_after_setup_survives_rollback_and_only_setups_member_goes() {
    let b = Board::new(UBOOT_MENU);
    b.apply("alice", "access");
    assert!(b.fx.read("etc/group").contains("render:x:105:alice\n"));
    let mut group = b.fx.read("etc/group");
    group.push_str("docker:x:999:alice\n");
    b.fx.write("etc/group", &group);

    b.run(&["--rollback", "--yes"])
        .expect_code(exit::OK)
        .expect_stdout("undid setup's edits in /etc/group");
    let want = format!("{}docker:x:999:alice\n", b.original("etc/group"));
    assert_eq!(b.fx.read("etc/group"), want);
    // gshadow did not change after setup: its saved copy is back byte for byte.
    assert_eq!(b.fx.read("etc/gshadow"), b.original("etc/gshadow"));
}

#[test]
fn rollback_never_points_the_default_at_a_kernel_that_was_removed() {
    let b = Board::new(UBOOT_MENU);
    b.apply("rock", "kernel");
    b.fx.remove(VENDOR_KERNEL);
    b.regenerate_extlinux();
    let regenerated = b.fx.read("boot/extlinux/extlinux.conf");
    assert_eq!(default_line(&regenerated), "default l0");

    let out = b
        .run(&["--rollback", "--yes"])
        .expect_code(exit::ROLLBACK_INCOMPLETE)
        .expect_stdout("/boot/extlinux/extlinux.conf")
        .expect_stdout("/boot/vmlinuz-6.1.75-npu-port, which is missing");
    let ext = b.fx.read("boot/extlinux/extlinux.conf");
    assert_eq!(ext, regenerated, "the current default stays: {out}");
    assert!(ext.contains("label l0\n\tmenu label Debian GNU/Linux 12 (bookworm) 7.0.0-rc3-marfrit-A1\n\tlinux /boot/vmlinuz-7.0.0-rc3-marfrit-A1"));
    // The rest of the run was undone: rvl's u-boot-menu fragment is gone.
    assert!(!b.fx.join("etc/u-boot-menu/conf.d/rvl.conf").exists());
    // The refused path is still listed, so it can be dealt with later.
    let status = b.run(&["--status", "--json"]).stdout_json();
    assert_eq!(
        status["applied"][0]["entries"][0]["path"],
        "/boot/extlinux/extlinux.conf"
    );
    assert!(
        status["applied"][0]["partly_rolled_back"].is_u64(),
        "{status}"
    );
    b.run(&["--status"])
        .expect_code(exit::OK)
        .expect_stdout(": kernel (1 path), partly rolled back at ")
        .expect_stdout("  /boot/extlinux/extlinux.conf\n");
}

#[test]
fn paths_changed_after_setup_are_refused_by_name_and_force_restores_them() {
    let b = Board::new(UBOOT_MENU);
    b.apply("rock", "kernel,firmware");
    let fw = "lib/firmware/arm/mali/arch10.8/mali_csffw.bin";
    b.fx.write(fw, "a firmware the admin installed later");
    b.fx.write("etc/u-boot-menu/conf.d/rvl.conf", "U_BOOT_DEFAULT=\"l1\"\n");
    let out = b
        .run(&["--rollback", "--yes", "--json"])
        .expect_code(exit::ROLLBACK_INCOMPLETE);
    let v = out.stdout_json();
    let mut refused: Vec<&str> = v["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    refused.sort();
    assert_eq!(
        refused,
        ["/etc/u-boot-menu/conf.d/rvl.conf", &format!("/{fw}")[..]],
        "{out}"
    );
    b.run(&["--rollback", "--yes", "--dry-run"])
        .expect_stdout(&format!("would leave /{fw}: changed since setup wrote it"))
        .expect_stdout("U_BOOT_DEFAULT is now \"l1\", changed after setup set it to \"l0\"");
    // extlinux.conf did not change after setup: its saved copy is back.
    assert_eq!(
        b.fx.read("boot/extlinux/extlinux.conf"),
        b.original("boot/extlinux/extlinux.conf")
    );
    assert_eq!(b.fx.read(fw), "a firmware the admin installed later");
    b.run(&["--rollback", "--yes", "--force"])
        .expect_code(exit::OK);
    assert!(!b.fx.join("etc/u-boot-menu/conf.d/rvl.conf").exists());
    assert!(!b.fx.join(fw).exists());
}

#[test]
fn rollback_dry_run_shows_the_plan_with_diffs_and_changes_nothing() {
    let b = Board::new(UBOOT_MENU);
    b.apply("alice", "access");
    let mut group = b.fx.read("etc/group");
    group.push_str("docker:x:999:alice\n");
    b.fx.write("etc/group", &group);

    b.run(&["--rollback", "--yes", "--dry-run"])
        .expect_code(exit::OK)
        .expect_stdout("would undo setup's edits in /etc/group")
        .expect_stdout("-render:x:105:alice")
        .expect_stdout("+render:x:105:");
    assert_eq!(b.fx.read("etc/group"), group);
    let v = b
        .run(&["--rollback", "--yes", "--dry-run", "--json"])
        .stdout_json();
    assert_eq!(v["dry_run"], true);
    let paths = v["runs"][0]["paths"].as_array().unwrap();
    let g = paths.iter().find(|p| p["path"] == "/etc/group").unwrap();
    assert_eq!(g["action"], "undo-edits");
    assert!(
        g["diff"].as_str().unwrap().contains("+render:x:105:\n"),
        "{g}"
    );
    assert_eq!(b.fx.read("etc/group"), group);
    assert_eq!(
        b.run(&["--status", "--json"]).stdout_json()["applied"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn one_run_is_undone_alone_unless_a_later_run_depends_on_it() {
    let b = Board::new(UBOOT_MENU);
    b.apply("alice", "access");
    b.apply("bob", "access");
    b.apply("rock", "kernel");
    let st = b.run(&["--status", "--json"]).stdout_json();
    let ids: Vec<String> = st["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{st}");

    // alice's run: bob's later run edited /etc/group too.
    b.run(&["--rollback", "--yes", "--run", &ids[0]])
        .expect_code(exit::ROLLBACK_INCOMPLETE)
        .expect_stderr(&format!("the later run {} also changed /etc/group", ids[1]));
    assert!(b.fx.read("etc/group").contains("render:x:105:alice,bob\n"));

    // The kernel run shares nothing with the others.
    b.run(&["--rollback", "--yes", "--run", &ids[2]])
        .expect_code(exit::OK);
    assert_eq!(
        b.fx.read("boot/extlinux/extlinux.conf"),
        b.original("boot/extlinux/extlinux.conf")
    );
    assert!(b.fx.read("etc/group").contains("render:x:105:alice,bob\n"));

    b.run(&["--rollback", "--yes", "--run", &ids[1]])
        .expect_code(exit::OK);
    b.run(&["--rollback", "--yes", "--run", &ids[0]])
        .expect_code(exit::OK);
    assert_eq!(b.fx.read("etc/group"), b.original("etc/group"));

    let out = b.run(&["--status"]).expect_code(exit::OK);
    for id in &ids {
        assert!(out.stdout().contains(&format!("run {id} at ")), "{out}");
    }
    assert!(out.stdout().contains("rolled back at "), "{out}");
    let v = b.run(&["--status", "--json"]).stdout_json();
    assert_eq!(v["rolled_back"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["applied"], serde_json::json!([]));
    b.run(&["--rollback", "--yes", "--run", "no-such-run"])
        .expect_code(exit::USAGE)
        .expect_stderr("no applied run no-such-run");
}

#[test]
fn armbian_boot_links_stay_together_on_the_kernel_that_boots_when_the_old_one_is_gone() {
    let b = Board::new("ampere-armbian");
    b.run_as("rock", &["--board", "ampere", "--only", "kernel", "--yes"])
        .expect_code(exit::OK);
    let mainline = "vmlinuz-7.0.0-rc3-marfrit-A1";
    assert_eq!(
        std::fs::read_link(b.fx.join("boot/Image")).unwrap(),
        std::path::Path::new(mainline)
    );
    b.fx.remove("boot/vmlinuz-6.1.75-vendor-rk35xx");
    b.run(&["--rollback", "--yes"])
        .expect_code(exit::ROLLBACK_INCOMPLETE)
        .expect_stdout(
            "left /boot/Image: it would point at vmlinuz-6.1.75-vendor-rk35xx, which is missing",
        );
    for (link, to) in [
        ("boot/Image", mainline),
        ("boot/uInitrd", "uInitrd-7.0.0-rc3-marfrit-A1"),
        ("boot/dtb", "dtb-7.0.0-rc3-marfrit-A1"),
    ] {
        assert_eq!(
            std::fs::read_link(b.fx.join(link)).unwrap(),
            std::path::Path::new(to),
            "{link}"
        );
    }
}

#[test]
fn rollback_without_a_terminal_or_yes_refuses_as_apply_does() {
    let b = Board::new("boltzmann-extlinux");
    b.run(&["--board", "boltzmann", "--only", "kernel,firmware", "--yes"])
        .expect_code(exit::OK);
    let applied = snapshot(b.fx.path());
    // stdin is not a terminal here: the same refusal as `setup` without --yes.
    setup(&b.fx, &b.a.manifest)
        .arg("--rollback")
        .run()
        .expect_code(exit::NOT_CONFIRMED)
        .expect_stderr("not rolling back: no terminal to ask for confirmation; pass --yes");
    assert_same(&applied, &snapshot(b.fx.path()));
    // With nothing to roll back there is nothing to confirm.
    b.run(&["--rollback", "--yes"]).expect_code(exit::OK);
    setup(&b.fx, &b.a.manifest)
        .arg("--rollback")
        .run()
        .expect_code(exit::OK)
        .expect_stdout("Nothing to roll back");
}
