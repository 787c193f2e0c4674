//! `rvl serve MODEL.gguf [-- EXTRA]`: start rvl's `llama-server` with the settings that work on
//! panvk. The plan is pure ([`plan`]): the newest complete build from rvl's prefix, the
//! environment rvl's stack needs ([`crate::llama::launch_env`]), the ubatch: the fastest that
//! ran in this model's last `smoke-bench --gguf` run, else the one the build survives. The verb gathers the same inventory doctor does, refuses when doctor's blocking
//! checks fail, prints the command line, and then (without `--print`) execs it, so signals and
//! the exit status are llama-server's own.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;

use crate::doctor::checks;
use crate::doctor::context::Context;
use crate::doctor::finding::{Finding, Status};
use crate::error::Error;
use crate::host::{self, Root};
use crate::inventory::Inventory;
use crate::llama::{self, Tiles};
use crate::manifest::Manifest;
use crate::output::{escape_control, Outcome, Style};
use crate::profile::Profiles;
use crate::settings::Settings;
use crate::shell::quote;
use crate::{cli, exit};

/// The checks whose failure means llama-server cannot use the GPU at all: no driver bound, no
/// firmware for it, no panvk ICD for the loader, no render node to open. Warnings (an older
/// Mesa, XDG_RUNTIME_DIR, the boot default) do not stop it; neither do kernel or board, whose
/// failures show up in these.
pub const BLOCKING: &[&str] = &["gpu-driver", "firmware", "vulkan-icd", "render-node"];

/// Tokens per ubatch with rvl's tiles patch: llama.cpp's own default, fastest on the board.
const UBATCH_PATCHED: u32 = 512;
/// Without the patch, the largest ubatch panvk (Mesa ≤ 26.1) survives.
const UBATCH_STOCK: u32 = 64;

#[derive(Debug, serde::Serialize)]
pub struct ServeOutcome {
    /// The whole command line, shell-quoted, environment assignments first. Not `command`:
    /// the envelope's `command` is the verb, and the body is flattened beside it.
    pub command_line: String,
    /// The variables rvl sets (the rest of the environment is rvl's own, passed on).
    pub env: BTreeMap<String, String>,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Where `--ubatch-size` came from: the record of a `smoke-bench --gguf` run (its path), or
    /// the build's rule ("tiles patch" / "stock build").
    pub ubatch_from: String,
}

/// The ubatch a recorded `smoke-bench --gguf` run of this model chose, and the record's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    pub ubatch: u32,
    pub record: String,
}

impl Outcome for ServeOutcome {
    fn exit_code(&self) -> i32 {
        exit::OK
    }

    fn human(&self, _style: Style) -> String {
        format!("{}\n", escape_control(&self.command_line))
    }
}

/// The command for `model` on this inventory, or why there is none. `measured`: the ubatch of
/// the model's last recorded `smoke-bench --gguf` run, which wins over the build's rule.
pub fn plan(
    inv: &Inventory,
    model: &str,
    extra: &[String],
    measured: Option<&Measured>,
) -> anyhow::Result<ServeOutcome> {
    let Some(inst) = llama::newest(&inv.llama) else {
        return Err(Error::Refused(format!(
            "rvl's llama.cpp is not installed (no {}/{}*/{}); fix: sudo rvl setup --only llama-cpp",
            llama::PREFIX_PARENT,
            llama::PREFIX_NAME,
            crate::setup::paths::BUILD_STAMP
        ))
        .into());
    };
    if !inst.server_executable {
        return Err(Error::Refused(format!(
            "{} is missing or not executable; fix: sudo rm -rf {} && sudo rvl setup --only llama-cpp",
            inst.server(),
            quote(&inst.prefix)
        ))
        .into());
    }
    let stamp = inst.stamp.as_ref().expect("newest() has a stamp");
    // What ran on this board beats any rule. Without a measurement the stack decides: any
    // revision of the tiles patch keeps the large tile from spilling, and rvl's panvk with the
    // queue TLS patch no longer pays 152 MiB per command buffer for it.
    let tls_fixed = crate::mesa::active(inv).is_some_and(|r| r.tls_fixed());
    let (ubatch, ubatch_from) = match (
        measured,
        llama::patch_level(stamp, &llama::rvl_series()).key,
    ) {
        (Some(m), _) => (m.ubatch, format!("smoke-bench --gguf record {}", m.record)),
        (None, Tiles::Missing) if tls_fixed => (UBATCH_PATCHED, "rvl's patched panvk".to_string()),
        (None, Tiles::Missing) => (UBATCH_STOCK, "stock build".to_string()),
        (None, Tiles::Current | Tiles::Older) => (UBATCH_PATCHED, "tiles patch".to_string()),
    };
    let mut argv = vec![
        inst.server(),
        "--model".to_string(),
        model.to_string(),
        // Every layer on the GPU: prefill is what panvk is for.
        "--n-gpu-layers".to_string(),
        "999".to_string(),
        "--ubatch-size".to_string(),
        ubatch.to_string(),
    ];
    argv.extend(extra.iter().cloned());
    let env = llama::launch_env(inv);
    let command_line = env
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .chain(argv.iter().map(|a| quote(a).into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(ServeOutcome {
        command_line,
        env,
        argv,
        ubatch_from,
    })
}

/// The blocking checks that fail, as "id: summary (fix: …)".
pub fn blocking_failures(ctx: &Context) -> Vec<String> {
    BLOCKING
        .iter()
        .filter_map(|id| checks::by_id(id))
        .map(|c| (c.run)(ctx))
        .filter(|f: &Finding| f.status == Status::Fail)
        .map(|f| match &f.fix {
            Some(fix) => format!("{}: {} (fix: {fix})", f.id, f.summary),
            None => format!("{}: {}", f.id, f.summary),
        })
        .collect()
}

pub fn run(args: &cli::ServeArgs, settings: &Settings) -> anyhow::Result<ServeOutcome> {
    let root = Root::open_dir(&args.system.root)?;
    // Another system's binaries are never run here: under --root there is only the command.
    if !root.is_live() && !args.print {
        return Err(Error::Usage(
            "--root: rvl serve only prints another system's command; add --print".into(),
        )
        .into());
    }
    let profiles = Profiles::load(args.system.profiles.as_deref())?;
    let manifest = Manifest::builtin();
    let chosen = profiles.choose_for(args.system.board.as_deref(), &root)?;
    let env = host::env::for_root(&root, &settings.env);
    let inv = host::gather(
        &root,
        &env,
        &host::GatherOptions {
            firmware: crate::doctor::firmware_for(chosen.map(|(p, _)| p)),
            live: true,
            // The panvk device's index for GGML_VK_VISIBLE_DEVICES (live only).
            vulkan: chosen.is_some(),
            vulkan_library: settings.vars.vulkan_library.as_deref(),
            llama_devices: false,
        },
    );
    let ctx = Context {
        inv: &inv,
        profile: chosen.map(|(p, _)| p),
        source: chosen.map(|(_, s)| s),
        manifest: &manifest,
        no_vulkan: false,
    };
    let failing = blocking_failures(&ctx);
    if !failing.is_empty() {
        return Err(Error::Refused(format!(
            "refusing to start llama-server: doctor's blocking checks fail:\n  {}\n(rvl doctor shows the details)",
            failing.join("\n  ")
        ))
        .into());
    }
    let model = args.model.to_string_lossy();
    let measured = llama::newest(&inv.llama)
        .and_then(|i| measured(&root, &settings.env, &args.model, &i.prefix));
    let out = plan(&inv, &model, &args.extra, measured.as_ref())?;
    if let (Some(m), false) = (&measured, args.json) {
        // Stdout is the command alone (for a unit file); where its ubatch came from goes here.
        eprintln!(
            "rvl serve: --ubatch-size {} is the fastest that ran in {}",
            m.ubatch,
            escape_control(&m.record)
        );
    }
    if args.print {
        return Ok(out);
    }
    crate::output::print_text(&out.human(settings.style));
    // exec replaces rvl: llama-server gets the terminal, the signals and the exit status.
    let err = std::process::Command::new(&out.argv[0])
        .args(&out.argv[1..])
        .envs(&out.env)
        .exec();
    Err(Error::Tool(format!("cannot run {}: {err}", out.argv[0])).into())
}

/// The ubatch of `model`'s last `smoke-bench --gguf` run, from its record inside the root (at
/// the state directory of the user running rvl: see [`crate::prefill::saved::record_path`]).
/// A record that is missing, unreadable, of another file or without an ok GPU run gives None
/// (a damaged one says so on stderr): the build's rule applies then. A ubatch with wrong results
/// has no rate, so it is never the one taken; each is named on stderr.
fn measured(
    root: &Root,
    env: &crate::inventory::Env,
    model: &std::path::Path,
    prefix: &str,
) -> Option<Measured> {
    use crate::prefill::saved;
    let name = model.file_name()?.to_string_lossy().into_owned();
    let path = saved::record_path(env, &name)?;
    if !root.exists(&path) {
        return None;
    }
    let text = root
        .read_capped(&path, crate::host::root::INPUT_CAP)
        .map_err(|e| host::root::describe(&e))
        .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8".to_string()));
    let report = match text.map(|t| saved::parse(&t, &path).map_err(|e| e.to_string())) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) | Err(e) => {
            eprintln!(
                "rvl serve: ignoring the smoke-bench record {}: {}",
                escape_control(&path),
                escape_control(&e)
            );
            return None;
        }
    };
    for (ub, first) in crate::prefill::report::wrong_ubatches(&report.ubatches) {
        eprintln!(
            "rvl serve: never ubatch {ub}: wrong results on the GPU in {} ({})",
            escape_control(&path),
            escape_control(&first)
        );
    }
    match saved::serve_ubatch(&report, &name, prefix) {
        Ok(ubatch) => Some(Measured {
            ubatch,
            record: path,
        }),
        Err(why) => {
            eprintln!(
                "rvl serve: not taking the ubatch from {}: {}",
                escape_control(&path),
                escape_control(&why)
            );
            None
        }
    }
}
