//! `rvl smoke-bench --max-clock` on a fake devfreq tree (`RVL_DEVFREQ_ROOT`): the GPU is held at
//! its top OPP while measuring and the node is put back afterwards, on a normal exit and on
//! SIGTERM; without a node it refuses before measuring anything.
#![cfg(feature = "bench")]

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::rvl;
use rvl::exit;

const NODE: &str = "sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu";

/// The kernel's layout: the class entry is a link to the device's node.
fn devfreq_tree(governors: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let node = d.path().join(NODE);
    fs::create_dir_all(&node).unwrap();
    for (f, v) in [
        ("governor", "simple_ondemand"),
        ("available_governors", governors),
        ("available_frequencies", "300000000 600000000 1000000000"),
        ("cur_freq", "300000000"),
        ("min_freq", "300000000"),
        ("max_freq", "1000000000"),
    ] {
        fs::write(node.join(f), format!("{v}\n")).unwrap();
    }
    fs::create_dir_all(d.path().join("sys/class/devfreq")).unwrap();
    std::os::unix::fs::symlink(
        format!("/{NODE}"),
        d.path().join("sys/class/devfreq/fb000000.gpu"),
    )
    .unwrap();
    d
}

fn attr(root: &Path, name: &str) -> String {
    fs::read_to_string(root.join(NODE).join(name)).unwrap()
}

fn quick_args() -> Vec<&'static str> {
    vec![
        "smoke-bench",
        "--model",
        "tiny",
        "--no-cpu",
        "--ubatch",
        "8",
        "--quick",
        "--precision",
        "fp32",
        "--max-clock",
    ]
}

#[test]
fn the_performance_governor_holds_the_clock_while_measuring_and_the_old_one_comes_back() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let tree = devfreq_tree("simple_ondemand performance");
    let mut args = quick_args();
    args.push("--json");
    let doc = rvl(&args)
        .env("RVL_DEVFREQ_ROOT", tree.path())
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    let pin = &doc["clock_pin"];
    assert_eq!(pin["change"]["attribute"], "governor", "{doc:#}");
    assert_eq!(pin["change"]["from"], "simple_ondemand");
    assert_eq!(pin["change"]["to"], "performance");
    // Read while measuring: the node said performance before and after the fp32 peak.
    let samples = pin["samples"].as_array().unwrap();
    assert!(
        samples
            .iter()
            .any(|s| s[0] == "before the fp32 peak"
                && s[1].as_str().unwrap().contains("performance")),
        "{pin:#}"
    );
    assert!(samples.iter().any(|s| s[0] == "after the sweep"), "{pin:#}");
    assert_eq!(attr(tree.path(), "governor"), "simple_ondemand\n");
}

#[test]
fn without_the_performance_governor_min_freq_goes_to_the_top_and_back_even_on_sigterm() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let tree = devfreq_tree("simple_ondemand powersave");
    // The whole sweep, so there is time to interrupt it while the clock is held.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rvl"))
        .args([
            "smoke-bench",
            "--model",
            "tiny",
            "--no-cpu",
            "--ubatch",
            "8,16,32,64",
            "--max-clock",
        ])
        .env("RVL_DEVFREQ_ROOT", tree.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let held = line.contains("GPU clock held at the top: min_freq 300000000 -> 1000000000");
        seen.push(line);
        if held {
            break;
        }
    }
    assert!(
        seen.last().unwrap().contains("held at the top"),
        "{seen:#?}"
    );
    assert_eq!(
        attr(tree.path(), "min_freq"),
        "1000000000\n",
        "not pinned while measuring"
    );
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(128 + 15), "{rest:#?}");
    assert!(
        rest.iter()
            .any(|l| l.contains("signal 15: GPU min_freq restored to 300000000")),
        "{rest:#?}"
    );
    assert_eq!(attr(tree.path(), "min_freq"), "300000000\n");
}

#[test]
fn without_a_gpu_devfreq_node_it_refuses_before_measuring() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let out = rvl(&quick_args())
        .env("RVL_DEVFREQ_ROOT", empty.path())
        .run()
        .expect_code(exit::UNSUPPORTED)
        .expect_stderr("no GPU devfreq node");
    assert!(!out.stderr().contains("arithmetic peak"), "{out}");
}

#[test]
fn a_max_freq_capped_below_the_top_is_refused_with_the_fix() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let tree = devfreq_tree("simple_ondemand");
    fs::write(tree.path().join(NODE).join("max_freq"), "600000000\n").unwrap();
    rvl(&quick_args())
        .env("RVL_DEVFREQ_ROOT", tree.path())
        .run()
        .expect_code(exit::UNSUPPORTED)
        .expect_stderr("capped at 600 MHz");
    assert_eq!(attr(tree.path(), "min_freq"), "300000000\n");
}

#[test]
fn every_peak_records_the_clock_before_and_after_its_timed_runs_even_unpinned() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let tree = devfreq_tree("simple_ondemand performance");
    let mut args = quick_args();
    args.retain(|a| *a != "--max-clock");
    args.push("--json");
    let doc = rvl(&args)
        .env("RVL_DEVFREQ_ROOT", tree.path())
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    assert!(doc.get("clock_pin").is_none(), "{doc:#}");
    let peaks = doc["peak"].as_array().unwrap();
    assert!(!peaks.is_empty());
    for p in peaks {
        assert_eq!(p["cur_freq_before_hz"], 300_000_000u64, "{p:#}");
        assert_eq!(p["cur_freq_after_hz"], 300_000_000u64, "{p:#}");
    }
    // Nothing was written: the governor is as it was.
    assert_eq!(attr(tree.path(), "governor"), "simple_ondemand\n");
}
