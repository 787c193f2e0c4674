//! Helpers shared by the integration tests: `run` starts the binary, `roots` copies and
//! snapshots fixture roots, `http` serves artifacts on loopback.

#![allow(dead_code, unused_imports)]

pub mod http;
pub mod llama;
pub mod prefill;
pub mod roots;
pub mod run;

pub use roots::{fixture_dir, fixture_file, plant_llama, setup, setup_without_stand_ins, Fixture};
pub use run::{rvl, Output, Rvl};

/// A Vulkan instance with a usable device (lavapipe here and in CI), or `None` after a
/// SKIPPED line. Under `RVL_REQUIRE_VULKAN=1` (CI) a missing device fails the test instead,
/// so the Vulkan tests cannot pass vacuously.
#[cfg(feature = "bench")]
pub fn vulkan_instance() -> Option<rvl::vulkan::Instance> {
    let opts = rvl::vulkan::LoadOptions {
        library: None,
        app: c"rvl tests",
    };
    match rvl::vulkan::Instance::load(&opts).and_then(|i| i.choose(None).map(|_| i)) {
        Ok(i) => Some(i),
        Err(e) => {
            if std::env::var("RVL_REQUIRE_VULKAN").is_ok_and(|v| v == "1") {
                panic!("RVL_REQUIRE_VULKAN=1 but no Vulkan device is usable: {e:#}");
            }
            eprintln!(
                "SKIPPED: no Vulkan device ({e:#}); set RVL_REQUIRE_VULKAN=1 to make this fail"
            );
            None
        }
    }
}

/// The steps of a setup plan (`--dry-run --json`, or an apply's report), by id.
pub fn step_names(plan: &serde_json::Value) -> Vec<String> {
    plan["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap().to_string())
        .collect()
}

/// Whether `dtc` and `fdtoverlay` (device-tree-compiler) are on PATH. Tests that need them
/// skip with a SKIPPED line when they are not, unless `RVL_REQUIRE_DTC` is set (CI): then a
/// missing tool fails the test, so the overlay tests cannot pass vacuously.
pub fn have_dtc() -> bool {
    let on_path = |tool: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
    };
    if on_path("dtc") && on_path("fdtoverlay") {
        return true;
    }
    if std::env::var_os("RVL_REQUIRE_DTC").is_some() {
        panic!("RVL_REQUIRE_DTC is set but dtc/fdtoverlay are not on PATH (apt install device-tree-compiler)");
    }
    eprintln!("SKIPPED: no dtc/fdtoverlay (apt install device-tree-compiler); set RVL_REQUIRE_DTC=1 to make this fail");
    false
}

/// The build tools the source-build tests run for real: meson and ninja (Mesa), cmake
/// (llama.cpp), a C compiler. Tests that need them skip with a SKIPPED line naming the
/// packages when one is missing, unless `RVL_REQUIRE_BUILD` is set (CI): then it fails.
pub fn have_build_tools() -> bool {
    let on_path = |tool: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
    };
    let missing: Vec<&str> = ["meson", "ninja", "cmake", "cc"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let what = format!(
        "no {} on PATH (apt-get install meson ninja-build cmake gcc)",
        missing.join(", ")
    );
    if std::env::var_os("RVL_REQUIRE_BUILD").is_some() {
        panic!("RVL_REQUIRE_BUILD is set but there is {what}");
    }
    eprintln!("SKIPPED: {what}; set RVL_REQUIRE_BUILD=1 to make this fail");
    false
}

/// The smallest smoke-bench that still sweeps: one fp32 ubatch of the tiny model, as JSON.
pub const TINY_BENCH_JSON: &[&str] = &[
    "smoke-bench",
    "--model",
    "tiny",
    "--ubatch",
    "8",
    "--quick",
    "--no-cpu",
    "--precision",
    "fp32",
    "--json",
];
