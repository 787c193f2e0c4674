//! `rvl status` end to end: the built binary on fixture roots, before and after a setup apply.

mod common;

use common::roots::{artifacts, assert_same, firmware_bytes, snapshot};
use common::{fixture_dir, fixture_file, rvl, setup, Fixture, Rvl};
use rvl::exit;
use serde_json::Value;

const MAINLINE: &str = "7.0.0-rc3-marfrit-A1";
const BSP: &str = "6.1.75-npu-port";

/// `rvl status --root ROOT` with the stub manifest (it names the fixtures' firmware stubs).
fn status(root: impl AsRef<std::path::Path>) -> Rvl {
    rvl(&["status", "--manifest"])
        .arg(fixture_file("stub-manifest.yaml"))
        .root(root)
}

fn json(root: impl AsRef<std::path::Path>) -> Value {
    status(root)
        .arg("--json")
        .run()
        .expect_code(exit::OK)
        .stdout_json()
}

fn line<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(label))
        .unwrap_or_else(|| panic!("no {label} line:\n{text}"))
}

#[test]
fn a_mainline_board_shows_each_layer_of_the_stack_on_one_screen() {
    let out = status(fixture_dir("boltzmann-mainline"))
        .run()
        .expect_code(exit::OK);
    let text = out.stdout();
    assert!(text.lines().count() <= 24, "one screen: {text}");
    assert!(
        text.starts_with("rvl status: profile boltzmann\n"),
        "{text}"
    );
    let kernel = line(text, "kernel");
    assert!(
        kernel.contains(&format!("running {MAINLINE}"))
            && kernel.contains(&format!("next boot {MAINLINE} (extlinux label l0)")),
        "{kernel}"
    );
    assert!(
        line(text, "rescue").contains(&format!("{BSP} (extlinux label l1)")),
        "{text}"
    );
    assert!(
        line(text, "driver").contains("panthor on fb000000.gpu"),
        "{text}"
    );
    let fw = line(text, "firmware");
    assert!(
        fw.contains("arch10.8/mali_csffw.bin: 2026 LTS (test stub), header 0.3, version hash 0x"),
        "{fw}"
    );
    assert!(line(text, "mesa").contains("the distribution's"), "{text}");
    assert!(line(text, "llama.cpp").contains("not installed"), "{text}");
    assert!(line(text, "setup").contains("nothing applied"), "{text}");

    let doc = json(fixture_dir("boltzmann-mainline"));
    assert_eq!(doc["command"], "status");
    assert_eq!(doc["kernel"]["next_boot"]["release"], MAINLINE);
    assert_eq!(doc["kernel"]["rescue"]["via"], "extlinux label l1");
    assert_eq!(doc["gpu"]["driver"], "panthor");
    assert_eq!(doc["vulkan"]["mesa"]["from"], "distro");
    assert!(doc["llama_cpp"].is_null(), "{doc:#}");
}

#[test]
fn a_vendor_board_shows_kbase_bound_and_no_firmware() {
    let doc = json(fixture_dir("boltzmann-vendor-kbase"));
    assert_eq!(doc["kernel"]["running"], BSP);
    assert_eq!(doc["gpu"]["driver"], "mali");
    assert!(doc["firmware"].is_null(), "{doc:#}");
    assert_eq!(doc["vulkan"]["mesa"]["from"], "none");
    // The mainline entry is the way back when the running kernel is the one booting next.
    assert_eq!(doc["kernel"]["rescue"]["release"], MAINLINE);
}

#[test]
fn rvls_own_mesa_and_llama_cpp_prefixes_show_their_patch_level() {
    let fx = Fixture::copy("boltzmann-mainline");
    let mesa = "opt/rvl/mesa-26.1.6-rvl1";
    fx.write(&format!("{mesa}/lib/libvulkan_panfrost.so"), "stand-in");
    fx.write(
        &format!("{mesa}/share/rvl/build.json"),
        r#"{"project": "mesa", "version": "26.1.6", "source_sha256": "x",
            "patches": [{"name": "mesa/0001-tls.patch", "sha256": "y"},
                        {"name": "mesa/0002-\u001b[31mred.patch", "sha256": "z"}]}"#,
    );
    fx.write(
        "etc/vulkan/icd.d/rvl_panvk.aarch64.json",
        format!(
            r#"{{"file_format_version": "1.0.0", "ICD": {{"library_path": "/{mesa}/lib/libvulkan_panfrost.so", "api_version": "1.4.0"}}}}"#
        ),
    );
    // A llama.cpp prefix without its stamp: an install that never finished.
    fx.write("opt/rvl/llama.cpp-b6000-rvl1/bin/llama-cli", "stand-in");
    let before = snapshot(fx.path());
    let doc = json(&fx);
    let m = &doc["vulkan"]["mesa"];
    assert_eq!(m["from"], "rvl", "{doc:#}");
    assert_eq!(m["build"]["prefix"], format!("/{mesa}"));
    assert_eq!(m["build"]["version"], "26.1.6");
    assert_eq!(m["build"]["patches"][0], "mesa/0001-tls.patch");
    assert_eq!(m["build"]["complete"], true);
    assert_eq!(doc["llama_cpp"]["complete"], false, "{doc:#}");

    let text = status(&fx).run().expect_code(exit::OK).stdout().to_string();
    let mesa_line = line(&text, "mesa");
    assert!(
        mesa_line.contains("rvl build 26.1.6 (2 patches: mesa/0001-tls.patch, mesa/0002-"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "a patch name's escape reaches the terminal: {text}"
    );
    assert!(
        line(&text, "llama.cpp").contains("did not finish"),
        "{text}"
    );
    // Status only reads.
    assert_same(&before, &snapshot(fx.path()));
}

#[test]
fn after_a_setup_apply_status_shows_the_run_and_the_next_boot_kernel() {
    let fx = Fixture::copy("boltzmann-extlinux");
    let a = artifacts(&firmware_bytes(), None, &[]);
    let before = json(&fx);
    assert_eq!(before["kernel"]["next_boot"]["release"], BSP);
    assert!(before["setup"]["applied"].as_array().unwrap().is_empty());

    setup(&fx, &a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel,firmware", "--yes"])
        .run()
        .expect_code(exit::OK);
    let snap = snapshot(fx.path());
    let doc = json(&fx);
    assert_same(&snap, &snapshot(fx.path()));
    assert_eq!(doc["kernel"]["running"], BSP);
    assert_eq!(doc["kernel"]["next_boot"]["via"], "extlinux label mainline");
    assert_eq!(doc["kernel"]["next_boot"]["release"], MAINLINE);
    // The kernel running now is the one to pick if mainline does not come up.
    assert_eq!(doc["kernel"]["rescue"]["via"], "extlinux label bsp");
    let runs = doc["setup"]["applied"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{doc:#}");
    assert_eq!(runs[0]["steps"], serde_json::json!(["kernel", "firmware"]));
    assert!(runs[0]["paths"].as_u64().unwrap() >= 2, "{doc:#}");
    assert!(runs[0]["at"].as_str().unwrap().ends_with(" UTC"), "{doc:#}");
    let text = status(&fx).run().expect_code(exit::OK).stdout().to_string();
    let setup_line = line(&text, "setup");
    assert!(
        setup_line.contains(runs[0]["id"].as_str().unwrap())
            && setup_line.contains("UTC: kernel, firmware ("),
        "{text}"
    );
}

#[test]
fn status_works_without_a_board_and_refuses_a_missing_root() {
    let doc = json(fixture_dir("x86-host"));
    assert!(doc["board"].is_null());
    assert!(doc["gpu"].is_null());
    rvl(&["status"])
        .root("/nonexistent/rvl-root")
        .run()
        .expect_code(exit::USAGE);
}

#[test]
fn a_missing_boot_configuration_is_said_once_not_again_as_no_rescue() {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.remove("boot/extlinux/extlinux.conf");
    let out = status(fx.path()).run().expect_code(exit::OK);
    let text = out.stdout();
    assert!(
        line(text, "kernel").contains("next boot unknown (no extlinux.conf or armbianEnv.txt)"),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("rescue")),
        "the missing file is named twice:\n{text}"
    );
}
