//! `llama-cpp`: which llama.cpp rvl installed (prefix, version, patch level from the build
//! stamp setup writes last), whether rvl's Mali tiles patch is in it, that its binaries are
//! there and executable, and (live only) that `llama-bench --list-devices` runs and its Vulkan
//! backend lists a device. Under `--root` only files are looked at. Only a stock llama.cpp
//! (without the patch, ubatch > 64 fails on panvk) and a prefix without `test-backend-ops`
//! (smoke-bench then has no llama.cpp columns and `--gguf` no correctness check) are warnings.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::llama::{self, Tiles};

const ID: &str = "llama-cpp";

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let facts = &ctx.inv.llama;
    let mut ev: Vec<String> = facts
        .installs
        .iter()
        .filter(|i| i.stamp.is_none())
        .map(|i| match &i.stamp_error {
            Some(e) => format!("{}: unreadable build stamp: {e}", i.prefix),
            None => format!(
                "{}: no build stamp (an unfinished build; not used)",
                i.prefix
            ),
        })
        .collect();
    ev.extend(facts.stock.iter().map(|s| format!("stock llama.cpp: {s}")));
    let Some(inst) = llama::newest(facts) else {
        let summary = match facts.stock.first() {
            Some(s) => format!(
                "only a stock llama.cpp ({s}): without rvl's Mali tiles patch, ubatch > 64 fails on panvk"
            ),
            None => "no llama.cpp installed by rvl".to_string(),
        };
        return Finding::warn(ID, summary)
            .evidence(ev)
            .fix(ctx.setup("llama-cpp"));
    };
    let stamp = inst.stamp.as_ref().expect("newest() has a stamp");
    let level = llama::patch_level(stamp, &llama::rvl_series());
    ev.push(format!(
        "{}: llama.cpp {} (source sha256 {})",
        inst.prefix,
        stamp.version,
        stamp
            .source_sha256
            .get(..16)
            .unwrap_or(&stamp.source_sha256)
    ));
    ev.extend(level.lines.iter().cloned());
    ev.extend(llama::int_dot_line(stamp.int_dot_matmul).map(str::to_string));
    let mut missing = Vec::new();
    for (ok, path) in [
        (inst.server_executable, inst.server()),
        (inst.bench_executable, inst.bench()),
    ] {
        ev.push(format!(
            "{path}: {}",
            if ok {
                "executable"
            } else {
                "missing or not executable"
            }
        ));
        if !ok {
            missing.push(path);
        }
    }
    let what = format!(
        "llama.cpp {} at {} (patch level {}/{})",
        stamp.version, inst.prefix, level.current, level.of
    );
    // A stamp says "complete": a missing binary is damage setup will not repair on its own.
    let rebuild = format!(
        "{} && {}",
        ctx.hint.remove_tree(&inst.prefix),
        ctx.setup("llama-cpp")
    );
    if !missing.is_empty() {
        return Finding::fail(ID, format!("{what}: {} missing", missing.join(", ")))
            .evidence(ev)
            .fix(rebuild);
    }
    // llama.cpp's own op tests: smoke-bench's llama.cpp columns and --gguf's correctness check.
    let tbo = inst.test_backend_ops();
    ev.push(format!(
        "{tbo}: {}",
        if inst.test_backend_ops_executable {
            "executable (smoke-bench's llama.cpp CPU and Vulkan columns, --gguf's correctness check)"
        } else {
            "missing or not executable"
        }
    ));
    let problem = match level.key {
        Tiles::Current => None,
        Tiles::Older => Some("an older revision of rvl's Mali tiles patch"),
        Tiles::Missing => Some("without rvl's Mali tiles patch (ubatch > 64 fails on panvk)"),
    };
    let problem = problem.or(
        (!inst.test_backend_ops_executable)
            .then_some("without test-backend-ops (smoke-bench cannot set llama.cpp's kernels beside rvl's or check the GPU's results)"),
    );
    // The live part: does the build run, and does its Vulkan backend see a device?
    let devices = match &facts.list_devices {
        None => {
            let why = if !ctx.inv.live {
                "under --root: files only, binaries not run"
            } else if ctx.no_vulkan {
                "--no-vulkan: binaries not run"
            } else {
                "llama-bench --list-devices did not run"
            };
            ev.push(why.to_string());
            None
        }
        Some(d) => {
            ev.push(format!("{} --list-devices:", d.binary));
            ev.extend(d.devices.iter().map(|l| format!("  {l}")));
            if let Some(e) = &d.error {
                return Finding::fail(ID, format!("{what}: llama-bench does not run: {e}"))
                    .evidence(ev)
                    .fix(rebuild);
            }
            let vulkan: Vec<&String> = d
                .devices
                .iter()
                .filter(|l| l.starts_with("Vulkan"))
                .collect();
            if vulkan.is_empty() {
                return Finding::fail(ID, format!("{what}: its Vulkan backend lists no device"))
                    .evidence(ev)
                    .fix(format!(
                        "see the vulkan-icd and vulkan-device checks; {}",
                        ctx.setup_panvk()
                    ));
            }
            Some(vulkan[0].clone())
        }
    };
    let with_device = devices.map(|d| format!("; {d}")).unwrap_or_default();
    match problem {
        Some(p) => Finding::warn(ID, format!("{what}, {p}{with_device}"))
            .evidence(ev)
            .fix(rebuild),
        None => Finding::pass(ID, format!("{what}, Mali tiles patch in{with_device}")).evidence(ev),
    }
}
