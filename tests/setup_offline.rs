//! Setup without network (issue 28, item 6): a download that cannot connect is not retried,
//! the steps that need no download still apply and the others are blocked with the offline
//! route; `--download-only --cache DIR` on a machine with network, then `--cache DIR` on the
//! board, installs the same files, checked by the same sha256s. All on loopback.

mod common;

use std::fs;

use common::roots::{assert_same, firmware_bytes, snapshot, Board};
use common::{rvl, setup};
use rvl::exit;

const FW: &str = "lib/firmware/arm/mali/arch10.8/mali_csffw.bin";

impl Board {
    /// The test manifest with every URL on a loopback port nothing listens on: what a board
    /// without network sees (the connection is refused at once).
    fn go_offline(&self) {
        let text = fs::read_to_string(&self.a.manifest).unwrap();
        fs::write(
            &self.a.manifest,
            text.replace(&self.a.server.base, "http://127.0.0.1:1"),
        )
        .unwrap();
    }
}

#[test]
fn offline_setup_applies_what_needs_no_download_and_blocks_the_rest_without_retrying() {
    let b = Board::new("boltzmann-extlinux");
    b.go_offline();
    let out = setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel,firmware", "--yes"])
        .env("RVL_FETCH_ATTEMPTS", "4")
        .run()
        .expect_code(exit::BLOCKED)
        .expect_stdout("applied 1 step (kernel)")
        .expect_stdout("firmware blocked: cannot download http://127.0.0.1:1/fw/mali_csffw.bin: cannot connect")
        .expect_stdout("rvl setup --download-only --cache DIR");
    assert!(!out.stderr().contains("retrying"), "{out}");
    assert!(b
        .fx
        .read("boot/extlinux/extlinux.conf")
        .contains("default mainline"));
    assert!(!b.fx.join(FW).exists());

    let v = setup(&b.fx, &b.a.manifest)
        .args(&[
            "--board",
            "boltzmann",
            "--only",
            "firmware",
            "--yes",
            "--json",
        ])
        .run()
        .expect_code(exit::BLOCKED)
        .stdout_json();
    assert_eq!(v["applied"], false, "{v}");
    assert_eq!(v["plan"]["blocked"][0]["step"], "firmware", "{v}");
    assert!(v["plan"]["blocked"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("--cache DIR"));
}

#[test]
fn download_only_then_cache_installs_on_an_offline_board_with_the_same_sha256() {
    let b = Board::new("boltzmann-extlinux");
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("rvl-cache");
    let dir_s = dir.to_str().unwrap();
    // On a PC with network: no root, no board needed.
    rvl(&[
        "setup",
        "--download-only",
        "--cache",
        dir_s,
        "--only",
        "firmware",
    ])
    .arg("--manifest")
    .arg(&b.a.manifest)
    .run()
    .expect_code(exit::OK)
    .expect_stdout("firmware: http://")
    .expect_stdout("/fw/mali_csffw.bin\n")
    .expect_stdout("sha256 checked");
    assert_eq!(b.a.server.hits("/fw/mali_csffw.bin"), 1);
    let v = rvl(&["setup", "--download-only", "--cache", dir_s, "--json"])
        .args(&["--only", "firmware"])
        .arg("--manifest")
        .arg(&b.a.manifest)
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert_eq!(v["mode"], "download");
    assert_eq!(v["files"][0]["fetched"], false, "already there: {v}");

    b.go_offline();
    setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "firmware", "--yes"])
        .args(&["--cache", dir_s])
        .run()
        .expect_code(exit::OK)
        .expect_stdout("applied 1 step (firmware)");
    assert_eq!(fs::read(b.fx.join(FW)).unwrap(), firmware_bytes());
    assert_eq!(b.a.server.hits("/fw/mali_csffw.bin"), 1, "nothing fetched");
}

#[test]
fn a_cache_file_that_does_not_match_its_sha256_is_refused_before_anything_changes() {
    let b = Board::new("boltzmann-extlinux");
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    rvl(&[
        "setup",
        "--download-only",
        "--cache",
        dir,
        "--only",
        "firmware",
    ])
    .arg("--manifest")
    .arg(&b.a.manifest)
    .run()
    .expect_code(exit::OK);
    let name = fs::read_dir(cache.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .unwrap();
    // Named by its sha256, never by the URL's last segment.
    assert_eq!(name.file_name().unwrap().len(), 64, "{}", name.display());
    let mut bytes = fs::read(&name).unwrap();
    bytes[10] ^= 1;
    fs::write(&name, bytes).unwrap();
    let before = snapshot(b.fx.path());
    setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel,firmware", "--yes"])
        .args(&["--cache", dir])
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("--cache:")
        .expect_stderr("sha256 mismatch");
    assert_same(&before, &snapshot(b.fx.path()));
}

#[test]
fn download_only_needs_a_cache_and_does_not_mix_with_other_modes() {
    rvl(&["setup", "--download-only"])
        .run()
        .expect_code(exit::USAGE);
    rvl(&["setup", "--download-only", "--cache", "x", "--rollback"])
        .run()
        .expect_code(exit::USAGE);
}
