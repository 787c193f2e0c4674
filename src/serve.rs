//! `rvl serve MODEL.gguf [--rpc HOST:PORT,…] [-- EXTRA]`: start rvl's `llama-server` with the
//! settings that work on panvk; `rvl serve --rpc-worker [--host ADDR] [--port N]`: start
//! llama.cpp's RPC worker (`ggml-rpc-server`) on this board's GPU, for a head on another board.
//! The plans are pure ([`plan`], [`worker_plan`]): the newest complete build from rvl's prefix,
//! the environment rvl's stack needs ([`crate::llama::launch_env`]), for llama-server the
//! ubatch (the fastest that ran in this model's last `smoke-bench --gguf` run with the same
//! workers, else the one the build survives), for the worker its listen address (loopback
//! unless named: [`crate::rpc::listen`]). The verb gathers the same inventory doctor does,
//! refuses when doctor's blocking checks fail, checks that each `--rpc` worker answers, prints
//! the command line, and then (without `--print`) execs it, so signals and the exit status are
//! the tool's own. With `--max-clock` rvl stays: it pins the GPU's clock, runs the tool in its
//! own process group, passes SIGINT/SIGTERM/SIGHUP on to it, waits, restores devfreq and exits
//! with the tool's status.

use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use crate::clockpin::{self, OnSignal};

use crate::doctor::checks;
use crate::doctor::context::Context;
use crate::doctor::finding::{Finding, Status};
use crate::error::Error;
use crate::host::{self, Root};
use crate::inventory::{Inventory, LlamaInstall};
use crate::llama::{self, Tiles};
use crate::manifest::Manifest;
use crate::output::{escape_control, Outcome, Style};
use crate::profile::Profiles;
use crate::rpc::{Endpoint, Listen};
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
/// The device a worker serves: ggml's first Vulkan device, panvk once GGML_VK_VISIBLE_DEVICES
/// names it (ggml numbers only the visible devices).
pub const WORKER_DEVICE: &str = "Vulkan0";

/// What `rvl serve` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// llama-server on MODEL (the head, when it has `--rpc` workers).
    LlamaServer,
    /// ggml-rpc-server, a worker for another board's head.
    RpcWorker,
}

#[derive(Debug, serde::Serialize)]
pub struct ServeOutcome {
    pub role: Role,
    /// The whole command line, shell-quoted, environment assignments first. Not `command`:
    /// the envelope's `command` is the verb, and the body is flattened beside it.
    pub command_line: String,
    /// The variables rvl sets (the rest of the environment is rvl's own, passed on).
    pub env: BTreeMap<String, String>,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// llama-server: where `--ubatch-size` came from: the record of a `smoke-bench --gguf`
    /// run (its path), or the build's rule ("tiles patch" / "stock build").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ubatch_from: Option<String>,
    /// llama-server: the RPC workers the model is spread over besides this board (`HOST:PORT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc: Option<Vec<String>>,
    /// rpc-worker: the address and port it listens on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// With `--max-clock`: the tool's exit status (128 + the signal that ended it).
    #[serde(skip)]
    pub exit: Option<i32>,
    /// The command line was printed before the tool started.
    #[serde(skip)]
    pub printed: bool,
}

/// The ubatch a recorded `smoke-bench --gguf` run of this model chose, and the record's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    pub ubatch: u32,
    pub record: String,
}

impl Outcome for ServeOutcome {
    fn exit_code(&self) -> i32 {
        self.exit.unwrap_or(exit::OK)
    }

    fn human(&self, _style: Style) -> String {
        if self.printed {
            return String::new();
        }
        format!("{}\n", escape_control(&self.command_line))
    }
}

/// The newest complete install of rvl's llama.cpp, or the refusal that says how to get one.
fn install<'a>(
    inv: &'a Inventory,
    hint: &crate::hint::Invocation,
) -> Result<&'a LlamaInstall, Error> {
    llama::newest(&inv.llama).ok_or_else(|| {
        Error::Refused(format!(
            "rvl's llama.cpp is not installed (no {}/{}*/{}); fix: {}",
            llama::PREFIX_PARENT,
            llama::PREFIX_NAME,
            crate::setup::paths::BUILD_STAMP,
            hint.setup("--only llama-cpp")
        ))
    })
}

/// A binary the install lacks: the prefix is rebuilt (setup leaves a complete prefix alone).
fn missing(inst: &LlamaInstall, bin: &str, why: &str, hint: &crate::hint::Invocation) -> Error {
    Error::Refused(format!(
        "{bin} is missing or not executable{why}; fix: {} && {}",
        hint.remove_tree(&inst.prefix),
        hint.setup("--only llama-cpp")
    ))
}

/// The environment assignments, then the program and its arguments, each shell-quoted.
fn command_line(env: &BTreeMap<String, String>, argv: &[String]) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .chain(argv.iter().map(|a| quote(a).into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command for `model` on this inventory, or why there is none. `measured`: the ubatch of
/// the model's last recorded `smoke-bench --gguf` run (with the same workers), which wins over
/// the build's rule. `rpc`: the workers the model is spread over besides this board.
pub fn plan(
    inv: &Inventory,
    model: &str,
    extra: &[String],
    measured: Option<&Measured>,
    rpc: &[Endpoint],
    hint: &crate::hint::Invocation,
) -> anyhow::Result<ServeOutcome> {
    let inst = install(inv, hint)?;
    if !inst.server_executable {
        return Err(missing(inst, &inst.server(), "", hint).into());
    }
    // The RPC worker is built with the RPC backend: without it this build has no --rpc.
    if !rpc.is_empty() && !inst.rpc_server_executable {
        return Err(missing(
            inst,
            &inst.rpc_server(),
            " (this build of llama.cpp predates rvl's -DGGML_RPC=ON: its llama-server has no --rpc)",
            hint,
        )
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
    if !rpc.is_empty() {
        argv.extend(["--rpc".to_string(), crate::rpc::join(rpc)]);
    }
    argv.extend(extra.iter().cloned());
    let env = llama::launch_env(inv);
    Ok(ServeOutcome {
        role: Role::LlamaServer,
        command_line: command_line(&env, &argv),
        env,
        argv,
        ubatch_from: Some(ubatch_from),
        rpc: Some(rpc.iter().map(Endpoint::to_string).collect()),
        listen: None,
        exit: None,
        printed: false,
    })
}

/// The command that makes this board an RPC worker listening at `listen`: rvl's
/// ggml-rpc-server with the Vulkan device (`--device Vulkan0`: the panvk device, the only one
/// ggml shows once GGML_VK_VISIBLE_DEVICES names it; with no Vulkan device the worker fails
/// rather than quietly serving the CPU) and the environment llama-server gets.
pub fn worker_plan(
    inv: &Inventory,
    listen: &Listen,
    extra: &[String],
    hint: &crate::hint::Invocation,
) -> anyhow::Result<ServeOutcome> {
    let inst = install(inv, hint)?;
    if !inst.rpc_server_executable {
        return Err(missing(
            inst,
            &inst.rpc_server(),
            " (this build of llama.cpp predates rvl's -DGGML_RPC=ON)",
            hint,
        )
        .into());
    }
    let mut argv = vec![
        inst.rpc_server(),
        "--host".to_string(),
        listen.addr.to_string(),
        "--port".to_string(),
        listen.port.to_string(),
        "--device".to_string(),
        WORKER_DEVICE.to_string(),
    ];
    argv.extend(extra.iter().cloned());
    let env = llama::launch_env(inv);
    Ok(ServeOutcome {
        role: Role::RpcWorker,
        command_line: command_line(&env, &argv),
        env,
        argv,
        ubatch_from: None,
        rpc: None,
        listen: Some(listen.to_string()),
        exit: None,
        printed: false,
    })
}

/// What a person is told about a worker's address before it starts (stderr).
pub fn worker_note(listen: &Listen) -> String {
    if listen.is_loopback() {
        format!(
            "rvl serve: the worker listens on {listen}, this board only (a head on another board needs --host with this board's address)"
        )
    } else if listen.is_wildcard() {
        format!(
            "rvl serve: the worker listens on every interface ({listen}, --allow-network): {}",
            crate::rpc::NO_AUTH
        )
    } else {
        format!(
            "rvl serve: the worker listens on {listen}; {}: keep that address on a private network",
            crate::rpc::NO_AUTH
        )
    }
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
    // Flags first: a bad address is a usage error before anything is read. (clap's `requires`
    // counts a flag's default as present, so the worker-only flags are checked here.)
    if !args.rpc_worker {
        let given = [
            ("--host", args.host.is_some()),
            ("--port", args.port.is_some()),
            ("--allow-network", args.allow_network),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
            return Err(Error::Usage(format!(
                "{flag} is for the worker: rvl serve --rpc-worker {flag} …; llama-server's own address goes after --, e.g. rvl serve MODEL -- --host ADDR --port N"
            ))
            .into());
        }
    }
    let listen = if args.rpc_worker {
        Some(
            crate::rpc::listen(args.host.as_deref(), args.port, args.allow_network)
                .map_err(Error::Usage)?,
        )
    } else {
        None
    };
    let workers = if args.rpc.is_empty() {
        Vec::new()
    } else {
        crate::rpc::workers(&args.rpc).map_err(Error::Usage)?
    };
    let root = Root::open_dir(&args.system.root).map_err(Error::from)?;
    // Another system's binaries are never run here: under --root there is only the command,
    // unless the caller names stand-ins (RVL_ROOT_TOOLS, as setup's tools): the tool of the
    // same name in that directory.
    let tool_name = if args.rpc_worker {
        crate::rpc::RPC_SERVER
    } else {
        "llama-server"
    };
    let stand_in: Option<PathBuf> = if root.is_live() {
        None
    } else {
        settings
            .vars
            .root_tools
            .as_ref()
            .map(|d| d.join(tool_name))
            .filter(|p| p.is_file())
    };
    if !root.is_live() && !args.print && stand_in.is_none() {
        return Err(Error::Usage(
            "--root: rvl serve only prints another system's command; add --print".into(),
        )
        .into());
    }
    let profiles = Profiles::load(args.system.profiles.as_deref()).map_err(Error::from)?;
    let manifest = Manifest::builtin();
    let chosen = profiles
        .choose_for(args.system.board.as_deref(), &root)
        .map_err(Error::from)?;
    let hint = root
        .invocation(
            args.system.board.as_deref(),
            args.system.profiles.as_deref(),
            None,
        )
        .with_board(chosen.map(|(p, _)| p.id.as_str()));
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
        hint: hint.clone(),
    };
    let failing = blocking_failures(&ctx);
    if !failing.is_empty() {
        return Err(Error::Refused(format!(
            "refusing to start {tool_name}: doctor's blocking checks fail:\n  {}\n(rvl doctor shows the details)",
            failing.join("\n  ")
        ))
        .into());
    }
    if let Some(listen) = &listen {
        let out = worker_plan(&inv, listen, &args.extra, &hint)?;
        if !args.json {
            eprintln!("{}", worker_note(listen));
        }
        return start(out, args, settings, &root, stand_in);
    }
    let Some(model_path) = args.model.as_deref() else {
        return Err(Error::Usage("rvl serve needs MODEL.gguf (or --rpc-worker)".into()).into());
    };
    let model = model_path.to_string_lossy();
    let rpc: Vec<String> = workers.iter().map(Endpoint::to_string).collect();
    let measured = llama::newest(&inv.llama)
        .and_then(|i| measured(&root, &settings.env, model_path, &i.prefix, &rpc));
    let out = plan(
        &inv,
        &model,
        &args.extra,
        measured.as_ref(),
        &workers,
        &hint,
    )?;
    if let (Some(m), false) = (&measured, args.json) {
        // Stdout is the command alone (for a unit file); where its ubatch came from goes here.
        eprintln!(
            "rvl serve: --ubatch-size {} is the fastest that ran in {}",
            m.ubatch,
            escape_control(&m.record)
        );
    }
    // Stand-ins (tests) have no workers to ask; a live head asks each before it starts.
    if !args.print && !workers.is_empty() && stand_in.is_none() {
        // llama.cpp aborts with a backtrace on a worker it cannot reach; say which, and how
        // to start it, before anything starts.
        let lines = crate::host::rpc::check(&out.argv[0], &out.env, &workers).map_err(|e| {
            Error::Refused(format!(
                "refusing to start llama-server: not every RPC worker is ready:\n  {}",
                e.replace('\n', "\n  ")
            ))
        })?;
        for l in lines {
            eprintln!("rvl serve: worker {}", escape_control(&l));
        }
    }
    if !args.json {
        let int_dot = llama::newest(&inv.llama)
            .and_then(|i| i.stamp.as_ref())
            .and_then(|s| llama::int_dot_line(s.int_dot_matmul));
        if let Some(line) = int_dot {
            eprintln!("rvl serve: {line}");
        }
    }
    start(out, args, settings, &root, stand_in)
}

/// `--print` returns the plan; otherwise print the command line and exec the tool (or, with
/// `--max-clock`, pin the GPU clock, run it and wait).
fn start(
    mut out: ServeOutcome,
    args: &cli::ServeArgs,
    settings: &Settings,
    root: &Root,
    stand_in: Option<PathBuf>,
) -> anyhow::Result<ServeOutcome> {
    if args.print {
        return Ok(out);
    }
    let tool = out.argv[0]
        .rsplit('/')
        .next()
        .unwrap_or("the tool")
        .to_string();
    let program = stand_in.unwrap_or_else(|| PathBuf::from(&out.argv[0]));
    let mut cmd = std::process::Command::new(&program);
    cmd.args(&out.argv[1..]).envs(&out.env);
    if !root.is_live() {
        let base = std::fs::canonicalize(root.base()).unwrap_or_else(|_| root.base().to_path_buf());
        cmd.env("RVL_ROOT", base);
    }
    // The node is pinned (or the run refused) before the tool starts.
    let pin = if args.max_clock {
        let devfreq_root = settings
            .vars
            .devfreq_root
            .as_ref()
            .map_or_else(|| root.clone(), Root::new);
        let child = Arc::new(AtomicI32::new(0));
        let pin = clockpin::pin(&devfreq_root, "serve", OnSignal::Forward(child.clone()))?;
        eprintln!(
            "rvl serve: GPU clock held at the top while {tool} runs: {} {} -> {} (now {})",
            pin.change.attribute,
            pin.change.from,
            pin.change.to,
            pin.now()
        );
        Some((pin, child))
    } else {
        None
    };
    settings.print(&out.human(settings.style));
    let Some((pin, child_pid)) = pin else {
        // exec replaces rvl: the tool gets the terminal, the signals and the exit status.
        let err = cmd.exec();
        return Err(Error::Tool(format!("cannot run {}: {err}", program.display())).into());
    };
    // Its own process group: a Ctrl-C reaches it once, through rvl, not twice.
    cmd.process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Tool(format!("cannot run {}: {e}", program.display())))?;
    child_pid.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
    let status = child.wait();
    child_pid.store(0, Ordering::SeqCst);
    drop(pin);
    let status =
        status.map_err(|e| Error::Tool(format!("waiting for {}: {e}", program.display())))?;
    out.exit = Some(
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
    );
    out.printed = true;
    Ok(out)
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
    rpc: &[String],
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
    match saved::serve_ubatch(&report, &name, prefix, rpc) {
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
