//! Downloads as `rvl setup` makes them, against a loopback server that misbehaves: a body that
//! drips a byte at a time (never silent long enough to stall), a URL whose last segment is
//! longer than a file name may be. Rate and grace are set through `RVL_FETCH_MIN_RATE` and
//! `RVL_FETCH_GRACE_SECS` so that each test runs in seconds.

mod common;

use std::fs;
use std::time::{Duration, Instant};

use common::http::Reply;
use common::roots::{artifacts, assert_same, firmware_bytes, snapshot, Artifacts, STATE_DIR};
use common::{setup, Fixture};
use rvl::exit;

/// The test manifest with the firmware served from `path` on its loopback server, as `reply`.
fn firmware_at(a: &Artifacts, path: &str, reply: Reply) -> std::path::PathBuf {
    let url = a.server.route(path, reply);
    a.manifest_with_firmware_url(&url, "moved.yaml")
}

/// A byte every 20 ms (50 B/s) of the 4100-byte firmware: 82 s to the end, and never 5 s of
/// silence. On 4201ed1 nothing but the stall timeout bounded a download, so this ran to the
/// end (at a byte a second: 68 minutes); now it ends after the 1 s grace, below 1000 B/s.
#[test]
fn a_server_that_drips_bytes_is_cut_off_by_the_rate_floor_with_exit_6_naming_the_url() {
    let fx = Fixture::copy("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let manifest = firmware_at(
        &a,
        "/slow/mali_csffw.bin",
        Reply::Drip {
            body: firmware_bytes(),
            every: Duration::from_millis(20),
        },
    );
    let before = snapshot(fx.path());
    let started = Instant::now();
    let out = setup(&fx, &manifest)
        .args(&["--board", "boltzmann", "--only", "firmware", "--yes"])
        .env("RVL_FETCH_MIN_RATE", "1000")
        .env("RVL_FETCH_GRACE_SECS", "1")
        .run_within(Duration::from_secs(40))
        .expect_code(exit::DOWNLOAD)
        .expect_stderr(&format!("{}/slow/mali_csffw.bin: ", a.server.base))
        .expect_stderr("slower than the 1000 bytes/s allowed after the first 1 s");
    assert!(started.elapsed() < Duration::from_secs(30), "{out}");
    assert_eq!(
        a.server.hits("/slow/mali_csffw.bin"),
        1,
        "too slow is not retried"
    );
    // Nothing installed; the cache holds no partial file.
    let cache = fx.join(STATE_DIR).join("cache");
    let left: Vec<_> = fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert_same(&before, &snapshot(fx.path()));
}

/// A last URL segment of 300 bytes: on 4201ed1 the cache file was named after it and the
/// download failed with "File name too long" (exit 1); cache files are named by sha256 now.
#[test]
fn a_url_whose_last_segment_is_longer_than_a_file_name_downloads_under_its_hash() {
    let fx = Fixture::copy("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let long = format!("/fw/{}.bin", "m".repeat(300));
    let manifest = firmware_at(&a, &long, Reply::Body(firmware_bytes()));
    setup(&fx, &manifest)
        .args(&["--board", "boltzmann", "--only", "firmware", "--yes"])
        .run()
        .expect_code(exit::OK);
    assert_eq!(
        fs::read(fx.join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin")).unwrap(),
        firmware_bytes()
    );
    let sha = common::http::sha256_hex(&firmware_bytes());
    let cached: Vec<String> = fs::read_dir(fx.join(STATE_DIR).join("cache"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(cached, vec![sha]);
}

#[test]
fn a_rate_setting_that_is_not_a_number_is_a_usage_error_naming_it() {
    let fx = Fixture::copy("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    setup(&fx, &a.manifest)
        .args(&["--board", "boltzmann", "--only", "firmware", "--yes"])
        .env("RVL_FETCH_MIN_RATE", "16k")
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("RVL_FETCH_MIN_RATE=\"16k\": expected a whole number");
}
