//! `rvl setup` runs as root on trees it does not own (a mounted image, a board's disk). Each test
//! plants links or forged files in a copy of a fixture root and checks that nothing outside
//! `--root` is written, chmodded, deleted or executed, and that forged state is refused.

mod common;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use common::http::sha256_hex;
use common::roots::{artifacts, assert_same, firmware_bytes, snapshot, Artifacts};
use common::{setup, setup_without_stand_ins, Fixture, Output};
use rvl::exit;

const RVL_CONF: &str = "etc/u-boot-menu/conf.d/rvl.conf";

/// A copy of the u-boot-menu fixture, the test manifest, and a directory next to the root
/// (inside the test's tempdir, outside `--root`) that must stay as it is.
struct Planted {
    fx: Fixture,
    a: Artifacts,
    outside: PathBuf,
}

impl Planted {
    fn new() -> Planted {
        let fx = Fixture::copy("boltzmann-uboot-menu");
        let outside = fx.parent().join("outside");
        fs::create_dir(&outside).unwrap();
        Planted {
            a: artifacts(&firmware_bytes(), None, &[]),
            fx,
            outside,
        }
    }

    fn root(&self) -> &Path {
        self.fx.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        setup(&self.fx, &self.a.manifest).args(args).run()
    }

    fn kernel(&self) -> Output {
        self.run(&["--board", "boltzmann", "--only", "kernel", "--yes"])
    }

    /// A file outside the root, mode 0600.
    fn victim(&self, name: &str) -> PathBuf {
        let p = self.outside.join(name);
        fs::write(&p, b"keep\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        p
    }

    fn state(&self) -> PathBuf {
        self.root().join("var/lib/rvl")
    }

    /// Write a forged `state.json`.
    fn forge_state(&self, state: serde_json::Value) {
        fs::create_dir_all(self.state()).unwrap();
        fs::write(self.state().join("state.json"), state.to_string()).unwrap();
    }
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_planted_link_at_the_temp_name_is_never_followed() {
    let t = Planted::new();
    let victim = t.victim("victim");
    symlink(
        &victim,
        t.root().join("etc/u-boot-menu/conf.d/.rvl.conf.rvl-new"),
    )
    .unwrap();
    t.kernel().expect_code(exit::OK);
    assert_eq!(fs::read(&victim).unwrap(), b"keep\n");
    assert_eq!(mode(&victim), 0o600);
    let conf = t.fx.read(RVL_CONF);
    assert!(conf.contains("U_BOOT_DEFAULT=\"l0\""), "{conf}");
    assert!(!fs::symlink_metadata(t.root().join(RVL_CONF))
        .unwrap()
        .is_symlink());
}

#[test]
fn rollback_never_deletes_through_a_parent_swapped_for_a_link() {
    let t = Planted::new();
    t.kernel().expect_code(exit::OK);
    // After setup, conf.d becomes a link to a directory outside the root holding an rvl.conf.
    let elsewhere = t.outside.join("conf.d");
    fs::rename(t.root().join("etc/u-boot-menu/conf.d"), &elsewhere).unwrap();
    symlink(&elsewhere, t.root().join("etc/u-boot-menu/conf.d")).unwrap();
    t.run(&["--rollback", "--yes"])
        .expect_code(exit::ROLLBACK_INCOMPLETE)
        .expect_stdout("/etc/u-boot-menu/conf.d is a symbolic link");
    assert!(elsewhere.join("rvl.conf").exists());
    assert!(elsewhere.join("50-vendor.conf").exists());
}

#[test]
fn a_symlinked_state_directory_is_refused_and_nothing_lands_outside() {
    let t = Planted::new();
    fs::create_dir_all(t.root().join("var/lib")).unwrap();
    symlink(&t.outside, t.state()).unwrap();
    let before = snapshot(t.root());
    t.kernel()
        .expect_code(exit::PROBLEMS)
        .expect_stderr("var/lib/rvl is a symbolic link");
    assert_eq!(fs::read_dir(&t.outside).unwrap().count(), 0);
    assert_same(&before, &snapshot(t.root()));
}

#[test]
fn forged_deletes_of_boot_or_the_root_are_refused_before_anything_changes() {
    for path in ["/boot", "/", "/etc/passwd", "/boot/../etc"] {
        let t = Planted::new();
        let before = snapshot(t.root());
        t.forge_state(serde_json::json!({
            "schema_version": 1,
            "transactions": [{"id": "1-1", "steps": ["kernel"], "entries": [
                {"path": path, "step": "kernel", "before": {"was": "absent"}}
            ]}]
        }));
        t.run(&["--rollback", "--yes"])
            .expect_code(exit::BAD_INPUT)
            .expect_stderr("state.json: refused");
        assert!(
            t.root().join("boot/extlinux/extlinux.conf").exists(),
            "{path}"
        );
        assert_same(&before, &snapshot(t.root()));
    }
}

#[test]
fn a_forged_transaction_id_cannot_aim_backups_outside() {
    let t = Planted::new();
    let victim = t.victim("victim");
    t.forge_state(serde_json::json!({
        "schema_version": 1,
        "transactions": [{"id": "../../../../../outside", "steps": ["kernel"], "entries": [
            {"path": "/etc/u-boot-menu/conf.d/rvl.conf", "step": "kernel", "before": {"was": "absent"}}
        ]}]
    }));
    t.run(&["--rollback", "--yes"])
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("transaction id");
    assert!(victim.exists());
}

/// A forged `before.mode` for /etc/group: setuid/setgid, world-writable or sticky. On 4201ed1
/// rollback dropped the setuid bits and left /etc/group world-writable (0777), exit 0; now the
/// state file is refused before anything changes.
#[test]
fn a_forged_setuid_or_world_writable_mode_is_refused_before_anything_changes() {
    for (forged, named) in [
        (
            0o6777,
            "recorded mode 6777 is setuid, setgid, world-writable",
        ),
        (0o666, "recorded mode 666 is world-writable"),
        (0o4644, "recorded mode 4644 is setuid"),
        (0o1644, "recorded mode 1644 is sticky"),
    ] {
        let t = Planted::new();
        let group = t.fx.read("etc/group");
        let backup = t.state().join("backups/1-1/etc/group");
        fs::create_dir_all(backup.parent().unwrap()).unwrap();
        fs::write(&backup, &group).unwrap();
        t.fx.write("etc/group", format!("{group}extra:x:1234:\n"));
        fs::set_permissions(
            t.root().join("etc/group"),
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let me = fs::metadata(t.root()).unwrap();
        use std::os::unix::fs::MetadataExt;
        t.forge_state(serde_json::json!({
            "schema_version": 1,
            "transactions": [{"id": "1-1", "steps": ["access"], "entries": [
                {"path": "/etc/group", "step": "access", "before": {
                    "was": "file", "backup": "backups/1-1/etc/group", "sha256": sha256_hex(group.as_bytes()),
                    "mode": forged, "uid": me.uid(), "gid": me.gid()}}
            ]}]
        }));
        let before = snapshot(t.root());
        t.run(&["--rollback"])
            .expect_code(exit::BAD_INPUT)
            .expect_stderr("state.json: refused: `/etc/group`: ")
            .expect_stderr(named);
        assert_same(&before, &snapshot(t.root()));
        assert_eq!(mode(&t.root().join("etc/group")), 0o644);
    }
}

/// What setup records is what it accepts back: a file found world-writable is backed up with
/// that bit dropped, and rolled back to 0664, not 0666.
#[test]
fn a_world_writable_file_setup_edits_is_recorded_and_restored_without_world_write() {
    let t = Planted::new();
    let group = t.root().join("etc/group");
    fs::set_permissions(&group, fs::Permissions::from_mode(0o666)).unwrap();
    let original = t.fx.read("etc/group");
    setup(&t.fx, &t.a.manifest)
        .args(&["--board", "boltzmann", "--only", "access", "--yes"])
        .env("SUDO_USER", "rock")
        .run()
        .expect_code(exit::OK);
    assert_ne!(t.fx.read("etc/group"), original);
    t.run(&["--rollback", "--yes"]).expect_code(exit::OK);
    assert_eq!(t.fx.read("etc/group"), original);
    assert_eq!(mode(&group), 0o664);
}

#[test]
fn an_unknown_schema_version_is_refused_naming_the_file() {
    let t = Planted::new();
    t.kernel().expect_code(exit::OK);
    let path = t.state().join("state.json");
    let text = fs::read_to_string(&path).unwrap();
    let forged = text.replace(
        &format!("\"schema_version\": {}", rvl::setup::journal::SCHEMA),
        "\"schema_version\": 99",
    );
    assert_ne!(forged, text);
    fs::write(&path, &forged).unwrap();
    let conf = t.fx.read(RVL_CONF);
    t.run(&["--rollback", "--yes"])
        .expect_code(exit::BAD_INPUT)
        .expect_stderr(&format!("{}: schema_version 99", path.display()));
    assert_eq!(t.fx.read(RVL_CONF), conf);
    assert_eq!(fs::read_to_string(&path).unwrap(), forged);
}

#[test]
fn an_image_tool_that_mentions_rvl_root_is_never_run_on_this_machine() {
    let t = Planted::new();
    let marker = t.outside.join("ran");
    let tool = t.root().join("usr/sbin/u-boot-update");
    fs::write(
        &tool,
        format!(
            "#!/bin/sh\n# knows RVL_ROOT, acts on the host anyway\n: \"$RVL_ROOT\"\ntouch {}\n",
            marker.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
    let out = setup_without_stand_ins(&t.fx, &t.a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel", "--yes"])
        .run()
        .expect_code(exit::OK)
        .expect_stdout("leave `sudo u-boot-update` for the board")
        .expect_stdout("was not run");
    assert!(!marker.exists(), "the image's u-boot-update ran");
    // rvl set the default itself, and the pin keeps it when u-boot-update runs on the board.
    let ext = t.fx.read("boot/extlinux/extlinux.conf");
    assert!(ext.contains("\ndefault l0\n"), "{ext}");
    assert!(t.fx.read(RVL_CONF).contains("U_BOOT_DEFAULT=\"l0\""));
    drop(out);
}

#[test]
fn update_initramfs_of_the_image_is_left_for_the_board_with_the_command() {
    let t = Planted::new();
    let marker = t.outside.join("ran");
    let tool = t.root().join("usr/sbin/update-initramfs");
    fs::write(
        &tool,
        format!("#!/bin/sh\n: \"$RVL_ROOT\"\ntouch {}\n", marker.display()),
    )
    .unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
    let v = setup_without_stand_ins(&t.fx, &t.a.manifest)
        .args(&[
            "--board",
            "boltzmann",
            "--only",
            "firmware",
            "--yes",
            "--json",
        ])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert!(!marker.exists());
    let deferred = v["outcome"]["deferred"].to_string();
    assert!(
        deferred.contains("sudo update-initramfs -u -k 7.0.0-rc3-marfrit-A1"),
        "{v}"
    );
}

#[test]
fn a_forged_delete_of_a_boot_link_spares_a_kernel_file_there() {
    let t = Planted::new();
    t.fx.write("boot/Image", b"a kernel, not a link\n");
    t.forge_state(serde_json::json!({
        "schema_version": 1,
        "transactions": [{"id": "1-1", "steps": ["kernel"], "entries": [
            {"path": "/boot/Image", "step": "kernel", "before": {"was": "absent"}}
        ]}]
    }));
    t.run(&["--rollback", "--yes"])
        .expect_code(exit::ROLLBACK_INCOMPLETE)
        .expect_stdout("setup did not create what is at /boot/Image now");
    assert_eq!(t.fx.read("boot/Image"), "a kernel, not a link\n");
}
