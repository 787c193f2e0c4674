//! Files rvl is handed by name (`--manifest`, `--profiles`, `--compare`, `--save`) and setup's
//! own state file, when they are hostile: FIFOs must not hang a run, and a `--save` that cannot
//! be written is refused before any benchmarking. Each run gets a deadline, so a regression is a
//! failure, not a hung test suite.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Fixture;
use rvl::exit;

/// How long a run that should fail at once may take (debug build, loaded CI).
const DEADLINE: Duration = Duration::from_secs(30);

struct Ran {
    code: i32,
    stderr: String,
}

/// `rvl ARGS` with an empty environment, killed when it passes the deadline (then the test
/// fails, naming the command).
fn run_with_deadline(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rvl"));
    cmd.env_clear()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(p) = std::env::var_os("PATH") {
        cmd.env("PATH", p);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return Ran {
                code: status.code().expect("not killed by a signal"),
                stderr,
            };
        }
        if start.elapsed() > DEADLINE {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("rvl {args:?} still running after {DEADLINE:?}: a read blocked");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mkfifo(path: &Path) -> PathBuf {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
    path.to_path_buf()
}

#[test]
fn a_fifo_as_the_manifest_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("manifest.yaml"));
    let fx = Fixture::copy("boltzmann-mainline");
    let ran = run_with_deadline(
        &[
            "doctor",
            "--root",
            fx.path().to_str().unwrap(),
            "--manifest",
            fifo.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(ran.code, exit::BAD_INPUT, "{}", ran.stderr);
    assert!(ran.stderr.contains("not a regular file"), "{}", ran.stderr);
}

#[test]
fn a_fifo_in_the_profiles_directory_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy("profiles/rock-5a.yaml", dir.path().join("a.yaml")).unwrap();
    mkfifo(&dir.path().join("b.yaml"));
    let fx = Fixture::copy("boltzmann-mainline");
    let ran = run_with_deadline(
        &[
            "doctor",
            "--root",
            fx.path().to_str().unwrap(),
            "--profiles",
            dir.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(ran.code, exit::BAD_INPUT, "{}", ran.stderr);
    assert!(ran.stderr.contains("b.yaml"), "{}", ran.stderr);
}

#[test]
fn a_fifo_as_the_compare_file_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("before.json"));
    let ran = run_with_deadline(
        &["smoke-bench", "--compare", fifo.to_str().unwrap()],
        &[("RVL_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1")],
    );
    assert_eq!(ran.code, exit::BAD_INPUT, "{}", ran.stderr);
    assert!(ran.stderr.contains("not a regular file"), "{}", ran.stderr);
}

#[test]
fn a_fifo_planted_as_setups_state_file_is_refused_without_hanging() {
    let fx = Fixture::copy("boltzmann-mainline");
    std::fs::create_dir_all(fx.join("var/lib/rvl")).unwrap();
    mkfifo(&fx.join("var/lib/rvl/state.json"));
    let ran = run_with_deadline(
        &["setup", "--root", fx.path().to_str().unwrap(), "--status"],
        &[],
    );
    assert_ne!(ran.code, exit::OK, "{}", ran.stderr);
    assert!(ran.stderr.contains("not a regular file"), "{}", ran.stderr);
}

#[test]
fn an_unwritable_save_path_is_refused_before_vulkan_is_even_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("missing-dir/result.json");
    // No Vulkan here: today's order would stop at loading it (NO_VULKAN) or, with a device,
    // bench for minutes and only then fail to save.
    let ran = run_with_deadline(
        &["smoke-bench", "--save", save.to_str().unwrap()],
        &[("RVL_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1")],
    );
    assert_eq!(ran.code, exit::USAGE, "{}", ran.stderr);
    assert!(ran.stderr.contains("--save"), "{}", ran.stderr);
    assert!(!save.exists());
}

#[test]
fn sixteen_thousand_icd_manifests_are_deduplicated_in_linear_time() {
    let fx = Fixture::copy("duplicate-icds");
    let dir = fx.join("usr/share/vulkan/icd.d");
    let body = std::fs::read(dir.join("panfrost_icd.aarch64.json")).unwrap();
    for i in 0..16_000 {
        std::fs::write(dir.join(format!("panfrost_icd.{i}.json")), &body).unwrap();
    }
    let start = Instant::now();
    let ran = run_with_deadline(
        &["doctor", "--root", fx.path().to_str().unwrap(), "--json"],
        &[],
    );
    let took = start.elapsed();
    eprintln!("doctor on 16k manifests: {took:?}");
    assert!(
        ran.code == exit::OK || ran.code == exit::PROBLEMS,
        "{}",
        ran.stderr
    );
    // Quadratic de-duplication took 15 s here; the reads themselves take about 2 s even
    // in a debug build on a loaded machine.
    assert!(took < Duration::from_secs(10), "doctor took {took:?}");
}

/// `rvl doctor --json` on a fixture copy; the finding `id` from its checks.
fn doctor_check(fx: &Fixture, id: &str) -> serde_json::Value {
    let out = common::rvl(&["doctor", "--json"])
        .root(fx.path())
        .arg("--manifest")
        .arg(common::fixture_file("stub-manifest.yaml"))
        .run();
    let doc = out.stdout_json();
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id} check: {doc}"))
        .clone()
}

#[test]
fn an_oversized_osrelease_is_reported_as_too_large_and_gets_no_reboot_fix() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write("proc/sys/kernel/osrelease", "7".repeat(5000));
    let boot = doctor_check(&fx, "boot-default");
    assert!(
        !boot["fix"].as_str().unwrap_or("").contains("reboot"),
        "{boot}"
    );
    assert!(
        boot["summary"].as_str().unwrap().contains("too large"),
        "{boot}"
    );
    let kernel = doctor_check(&fx, "kernel");
    assert!(
        kernel["summary"].as_str().unwrap().contains("too large"),
        "{kernel}"
    );
}

#[test]
fn an_oversized_or_fifo_extlinux_conf_is_reported_as_what_it_is_not_as_missing() {
    for (plant, expected) in [("big", "too large"), ("fifo", "not a regular file")] {
        let fx = Fixture::copy("boltzmann-mainline");
        let conf = fx.join("boot/extlinux/extlinux.conf");
        std::fs::remove_file(&conf).unwrap();
        if plant == "big" {
            std::fs::write(&conf, "#".repeat((1 << 20) + 1)).unwrap();
        } else {
            mkfifo(&conf);
        }
        let boot = doctor_check(&fx, "boot-default");
        assert_eq!(boot["status"], "fail", "{plant}: {boot}");
        let summary = boot["summary"].as_str().unwrap();
        assert!(summary.contains(expected), "{plant}: {boot}");
        assert!(summary.contains("extlinux.conf"), "{plant}: {boot}");
        assert!(
            !summary.contains("not found") && !summary.contains("no /boot"),
            "{boot}"
        );
    }
}

#[test]
fn a_driver_name_with_shell_syntax_is_quoted_in_the_fix_command() {
    let fx = Fixture::copy("boltzmann-mainline");
    let evil = "x;reboot;#";
    std::fs::create_dir_all(fx.join(&format!("sys/bus/platform/drivers/{evil}"))).unwrap();
    let link = fx.join("sys/devices/platform/fb000000.gpu/driver");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(format!("../../../bus/platform/drivers/{evil}"), &link).unwrap();
    let gpu = doctor_check(&fx, "gpu-driver");
    assert_eq!(gpu["status"], "fail", "{gpu}");
    let fix = gpu["fix"].as_str().unwrap();
    assert!(
        fix.contains("sudo tee '/sys/bus/platform/drivers/x;reboot;#/unbind'"),
        "{fix}"
    );
    // Pasted into a shell, the command up to ", then" runs nothing but echo and tee.
    let cmd = fix.split(", then").next().unwrap();
    assert!(
        !cmd.replace("'/sys/bus/platform/drivers/x;reboot;#/unbind'", "")
            .contains(';'),
        "{cmd}"
    );
}

/// duplicate-icds has two panvk manifests; naming one in VK_DRIVER_FILES resolves the warning.
const ONE_ICD: &str = "/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json";

fn vulkan_icd_with(fx: &Fixture, host_env: Option<&str>) -> serde_json::Value {
    let mut cmd = common::rvl(&["doctor", "--json", "--only", "vulkan-icd"])
        .root(fx.path())
        .arg("--manifest")
        .arg(common::fixture_file("stub-manifest.yaml"));
    if let Some(v) = host_env {
        cmd = cmd.env("VK_DRIVER_FILES", v);
    }
    let doc = cmd.run().stdout_json();
    doc["checks"][0].clone()
}

#[test]
fn the_hosts_vk_driver_files_does_not_decide_vulkan_icd_for_a_foreign_root() {
    let fx = Fixture::copy("duplicate-icds");
    let without = vulkan_icd_with(&fx, None);
    assert_eq!(without["status"], "warn", "{without}");
    let with_host_var = vulkan_icd_with(&fx, Some(ONE_ICD));
    assert_eq!(with_host_var["status"], "warn", "{with_host_var}");
    let ev = with_host_var["evidence"].to_string();
    assert!(ev.contains("the image's"), "{ev}");
}

#[test]
fn the_images_environment_d_decides_vulkan_icd_for_a_foreign_root() {
    let fx = Fixture::copy("duplicate-icds");
    fx.write(
        "etc/environment.d/90-rvl-vulkan.conf",
        format!("VK_DRIVER_FILES={ONE_ICD}\n"),
    );
    let f = vulkan_icd_with(&fx, None);
    assert_eq!(f["status"], "pass", "{f}");
    let fx = Fixture::copy("duplicate-icds");
    fx.write(
        "etc/profile.d/rvl-vulkan.sh",
        format!("export VK_DRIVER_FILES={ONE_ICD}\n"),
    );
    let f = vulkan_icd_with(&fx, None);
    assert_eq!(f["status"], "pass", "{f}");
}

#[test]
fn a_manifest_firmware_path_that_climbs_out_is_refused_before_setup_plans_anything() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("evil.yaml");
    let text = std::fs::read_to_string("firmware-manifest/manifest.yaml")
        .unwrap()
        .replace(
            "path: arm/mali/arch10.8/mali_csffw.bin",
            "path: ../../../../etc/passwd",
        );
    std::fs::write(&manifest, text).unwrap();
    let fx = Fixture::copy("boltzmann-mainline");
    let before = common::roots::snapshot(fx.path());
    common::rvl(&["setup", "--dry-run", "--yes", "--only", "firmware"])
        .root(fx.path())
        .arg("--manifest")
        .arg(&manifest)
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("evil.yaml: firmware `csffw-arch10.8-2026`: path");
    common::roots::assert_same(&before, &common::roots::snapshot(fx.path()));
}

#[test]
fn a_profile_overlay_with_a_newline_cannot_reach_armbian_env() {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir("profiles").unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    let ampere = dir.path().join("ampere.yaml");
    let text = std::fs::read_to_string(&ampere).unwrap().replace(
        "armbian_panthor: panthor-gpu",
        "armbian_panthor: \"panthor-gpu\\nextraargs=init=/bin/sh\"",
    );
    std::fs::write(&ampere, text).unwrap();
    let fx = Fixture::copy("ampere-gpu-disabled");
    common::rvl(&["setup", "--dry-run", "--yes", "--board", "ampere"])
        .root(fx.path())
        .arg("--profiles")
        .arg(dir.path())
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("ampere.yaml")
        .expect_stderr("overlays.armbian_panthor");
}
