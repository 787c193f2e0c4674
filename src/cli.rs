//! Command-line definitions (clap derive). Parsing only: no behaviour lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "rvl",
    version,
    about = "Make the Mali-G610 GPU of RK3588 boards an LLM prefill accelerator \
             (panthor + Mesa panvk + llama.cpp Vulkan)",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check, one by one, whether this board can run panvk, and how to fix what is wrong
    Doctor(DoctorArgs),
    /// Plan and apply (or roll back) the move to the open GPU stack
    Setup(SetupArgs),
    /// Measure Vulkan GEMM at llama.cpp's prefill shapes against the CPU
    SmokeBench(BenchArgs),
    /// Show the stack as it stands: kernels, driver, firmware, ICD and Mesa, llama.cpp, setup's runs
    Status(StatusArgs),
    /// Start rvl's llama-server on MODEL with the settings that work on panvk (across boards:
    /// --rpc-worker on each worker, --rpc on the head)
    Serve(ServeArgs),
    /// Bundle what a bug report needs (doctor, logs, boot and ICD files) into one .tar.gz
    Report(ReportArgs),
    /// Print shell completions or the man page (the .deb ships both)
    Generate {
        #[command(subcommand)]
        what: GenerateWhat,
    },
}

#[derive(Debug, Subcommand)]
pub enum GenerateWhat {
    /// A completion script for SHELL (bash, zsh, fish, elvish, powershell)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The man page, rvl.1, in roff
    Man,
    /// The kernel config fragment panthor needs on an RK3588 (merge it with the kernel's
    /// scripts/kconfig/merge_config.sh); doctor's kernel check compares against it
    KernelConfig,
}

impl Command {
    /// The verb as the user typed it, for the JSON envelope's `command`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Doctor(_) => "doctor",
            Command::Setup(_) => "setup",
            Command::SmokeBench(_) => "smoke-bench",
            Command::Status(_) => "status",
            Command::Report(_) => "report",
            Command::Serve(_) => "serve",
            Command::Generate { .. } => "generate",
        }
    }

    /// Whether `--json` was given: the output, errors included, is one JSON document.
    pub fn json(&self) -> bool {
        match self {
            Command::Doctor(a) => a.json,
            Command::Setup(a) => a.json,
            Command::SmokeBench(a) => a.json,
            Command::Status(a) => a.json,
            Command::Report(a) => a.json,
            Command::Serve(a) => a.json,
            Command::Generate { .. } => false,
        }
    }
}

/// Options shared by every verb that looks at the system.
#[derive(Debug, Args, Clone)]
pub struct SystemArgs {
    /// Treat DIR as the file-system root (a fake tree for tests, or a mounted image)
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,

    /// Use the board profiles in DIR instead of the built-in ones
    #[arg(long, value_name = "DIR")]
    pub profiles: Option<PathBuf>,

    /// Use this board profile instead of detecting the board from the device tree: a profile
    /// id (boltzmann), a product name (rock-5-itx, genbook) or a DT compatible (radxa,rock-5-itx)
    #[arg(
        long,
        value_name = "NAME",
        value_parser = crate::profile::BoardNames,
        hide_possible_values = true
    )]
    pub board: Option<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub system: SystemArgs,

    /// Print JSON only (schema_version 1)
    #[arg(long)]
    pub json: bool,

    /// Show each check's evidence under its line
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Run only these checks (comma-separated ids; see --list-checks)
    #[arg(long, value_name = "ID[,ID...]", value_delimiter = ',')]
    pub only: Vec<String>,

    /// Count warnings as failures for the exit status
    #[arg(long)]
    pub strict: bool,

    /// Do not load the Vulkan loader (skips the vulkan-device check)
    #[arg(long)]
    pub no_vulkan: bool,

    /// List the checks with their ids and exit
    #[arg(long)]
    pub list_checks: bool,

    /// Recognise firmware by this artifact manifest instead of the built-in one
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MesaFrom {
    /// Download the pinned Mesa release, patch and build panvk here
    Source,
    /// Install a prebuilt archive: --mesa-archive FILE, else the manifest's
    Prebuilt,
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub system: SystemArgs,

    /// Show the plan and stop (with --rollback: what rollback would do, with diffs)
    #[arg(long, conflicts_with = "status")]
    pub dry_run: bool,

    /// Apply without asking (for scripts)
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Print JSON only (schema_version 1)
    #[arg(long)]
    pub json: bool,

    /// Plan only these steps (comma-separated: kernel, gpu-overlay, firmware, mesa, icd, access, llama-cpp)
    #[arg(long, value_name = "STEP[,STEP...]", value_delimiter = ',')]
    pub only: Vec<String>,

    /// Where panvk comes from
    #[arg(long, value_enum, default_value_t = MesaFrom::Source)]
    pub mesa_from: MesaFrom,

    /// Build panvk with the candidate Mesa patches too (patches/mesa/candidates: measured in the lab, not yet run on a G610), into a prefix of its own, and register that build; setup without it registers the series-only build again
    #[arg(long)]
    pub mesa_candidates: bool,

    /// With --mesa-from prebuilt: install this panvk archive (scripts/build-panvk-deb.sh makes one), verified by sha256
    #[arg(long, value_name = "FILE")]
    pub mesa_archive: Option<PathBuf>,

    /// The sha256 --mesa-archive must have (default: the first word of FILE.sha256)
    #[arg(long, value_name = "HEX", requires = "mesa_archive")]
    pub mesa_sha256: Option<String>,

    /// Use this artifact manifest instead of the built-in one
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,

    /// Undo what setup applied (every run, newest first); paths changed since are kept or only setup's edits undone
    #[arg(long, conflicts_with = "status")]
    pub rollback: bool,

    /// With --rollback: put saved copies back even over changes made after setup
    #[arg(long, requires = "rollback")]
    pub force: bool,

    /// With --rollback: undo only this run (ids from --status)
    #[arg(long, value_name = "ID", requires = "rollback")]
    pub run: Option<String>,

    /// Show what setup has applied and whether a run was interrupted
    #[arg(long)]
    pub status: bool,

    /// The user the access step adds to the render group [default: the user behind sudo; in
    /// an image (--root), its only login user]
    #[arg(long, value_name = "NAME", value_parser = crate::validate::user_name_parser)]
    pub user: Option<String>,

    /// A directory of downloaded artifacts (from --download-only): setup takes each one from
    /// there when its sha256 matches, and downloads only what is missing
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,

    /// Download every artifact the steps may need into --cache DIR (sha256 checked) and stop;
    /// needs no board: run it where there is network, then `setup --cache DIR` on the board
    #[arg(
        long,
        requires = "cache",
        conflicts_with_all = ["rollback", "status", "dry_run"]
    )]
    pub download_only: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub system: SystemArgs,

    /// Print JSON only (schema_version 1)
    #[arg(long)]
    pub json: bool,

    /// Name firmware releases by this artifact manifest instead of the built-in one
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub system: SystemArgs,

    /// Write the bundle here [default: rvl-report-<date>-<time>.tar.gz]
    #[arg(long, short = 'o', value_name = "FILE.tar.gz")]
    pub output: Option<PathBuf>,

    /// Keep host names and MAC addresses (filtered out by default)
    #[arg(long)]
    pub full: bool,

    /// Include this smoke-bench result (a file saved with `smoke-bench --save`)
    #[arg(long, value_name = "FILE")]
    pub bench: Option<PathBuf>,

    /// Do not load the Vulkan loader for the doctor part
    #[arg(long)]
    pub no_vulkan: bool,

    /// Print JSON only (schema_version 1)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Vulkan device to use: its index in the device list or part of its name
    #[arg(long, value_name = "INDEX|NAME")]
    pub device: Option<String>,

    /// Model whose layer shapes are measured: qwen2.5-1.5b, qwen2.5-3b, qwen2.5-7b, llama3.1-8b, tiny
    #[arg(long, value_name = "PRESET", default_value = "qwen2.5-3b")]
    pub model: String,

    /// ubatch sizes (tokens per prefill batch) to sweep
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub ubatch: Vec<u32>,

    /// Precisions to measure (fp32, fp16, int8, q4_0)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub precision: Vec<String>,

    /// A short run (about 15 s on lavapipe)
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,

    /// Record the whole model, every layer
    #[arg(long)]
    pub full: bool,

    /// Skip the CPU baseline
    #[arg(long)]
    pub no_cpu: bool,

    /// Print JSON only (schema_version 1)
    #[arg(long)]
    pub json: bool,

    /// Save the result as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,

    /// Compare with a result saved earlier with --save
    #[arg(long, value_name = "FILE")]
    pub compare: Option<PathBuf>,

    /// Reproduce panvk's per-command-buffer TLS/WLS allocation limit instead of the sweep
    #[arg(long)]
    pub probe_limits: bool,

    /// Hold the GPU at its top OPP while measuring (performance governor, else min_freq), and
    /// put devfreq back afterwards, also on Ctrl-C (root only)
    #[arg(long, conflicts_with_all = ["probe_limits", "gguf"])]
    pub max_clock: bool,

    /// Measure llama.cpp's real prefill on this model with llama-bench, GPU beside CPU, per
    /// ubatch, with rvl's GEMM-only prediction beside it (--quick / --full size its sweep)
    #[arg(long, value_name = "MODEL.gguf", conflicts_with_all = ["probe_limits", "precision", "device", "model"])]
    pub gguf: Option<PathBuf>,

    /// With --gguf: the llama-bench to run [default: bin/llama-bench of rvl's newest llama.cpp]
    #[arg(long, value_name = "PATH", requires = "gguf")]
    pub llama_bench: Option<PathBuf>,

    /// llama.cpp's test-backend-ops (with rvl's patch) for llama.cpp's CPU and Vulkan columns,
    /// and with --gguf for the check of the GPU's results [default: bin/test-backend-ops of rvl's
    /// newest llama.cpp, with --gguf also the one beside --llama-bench]
    #[arg(long, value_name = "PATH", conflicts_with = "probe_limits")]
    pub test_backend_ops: Option<PathBuf>,

    /// With --gguf: prompt tokens per run (llama-bench -p) [default: 512]
    #[arg(long, value_name = "N", requires = "gguf")]
    pub prompt: Option<u32>,

    /// With --gguf: seconds each llama-bench run may take before it is killed [default: 300]
    #[arg(long, value_name = "S", requires = "gguf")]
    pub case_timeout: Option<u64>,

    /// With --gguf: run the GPU cases through these llama.cpp RPC workers too (llama-bench
    /// --rpc; each started with `rvl serve --rpc-worker`)
    #[arg(
        long,
        value_name = "HOST:PORT[,HOST:PORT...]",
        value_delimiter = ',',
        requires = "gguf"
    )]
    pub rpc: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub system: SystemArgs,

    /// The GGUF model llama-server loads
    #[arg(value_name = "MODEL.gguf", required_unless_present = "rpc_worker")]
    pub model: Option<PathBuf>,

    /// Spread the model over these llama.cpp RPC workers too (each started with
    /// `rvl serve --rpc-worker`); rvl checks that each answers before starting llama-server
    #[arg(
        long,
        value_name = "HOST:PORT[,HOST:PORT...]",
        value_delimiter = ',',
        conflicts_with = "rpc_worker"
    )]
    pub rpc: Vec<String>,

    /// Start llama.cpp's RPC worker (ggml-rpc-server) on this board's GPU instead of
    /// llama-server, for a head's --rpc
    #[arg(long, conflicts_with = "model")]
    pub rpc_worker: bool,

    /// With --rpc-worker: the IPv4 address to listen on [default: 127.0.0.1, this board only]
    #[arg(long, value_name = "ADDR")]
    pub host: Option<String>,

    /// With --rpc-worker: the port to listen on [default: 50052]
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,

    /// With --rpc-worker: allow --host 0.0.0.0 (every interface); llama.cpp's RPC has no
    /// authentication
    #[arg(long)]
    pub allow_network: bool,

    /// Print the command line (environment included) and stop
    #[arg(long)]
    pub print: bool,

    /// With --print: print JSON only (schema_version 1)
    #[arg(long, requires = "print")]
    pub json: bool,

    /// Hold the GPU at its top OPP for as long as llama-server (or the RPC worker) runs
    /// (performance governor, else min_freq) and put devfreq back when it exits; Ctrl-C and
    /// SIGTERM go on to the server (root only)
    #[arg(long, conflicts_with = "print")]
    pub max_clock: bool,

    /// More llama-server (or ggml-rpc-server) arguments, after `--` (they come last, so they win)
    #[arg(last = true, value_name = "EXTRA")]
    pub extra: Vec<String>,
}
