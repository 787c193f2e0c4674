//! What a `smoke-bench --gguf` run will do, from the flags, before anything runs: the ubatch
//! sweep, the cases (each ubatch on the GPU, then on the CPU), and each case's llama-bench
//! command line. Pure.

use std::path::PathBuf;
use std::time::Duration;

use super::report::Side;
use crate::cli::BenchArgs;

pub const DEFAULT_PROMPT: u32 = 512;
/// A pp512 on the board's CPU takes ~25 s per repetition; five of those fit with room.
pub const DEFAULT_CASE_TIMEOUT_S: u64 = 300;
/// Timed repetitions per case (llama-bench's default is 5): three give a mean and a spread
/// and keep a full CPU sweep on the board within minutes.
pub const REPETITIONS: u32 = 3;
/// Longest prompt accepted (llama-bench allocates a context of this size).
pub const MAX_PROMPT: u32 = 1 << 16;
/// Every layer: more than any model has (llama.cpp caps it at the model's count).
pub const ALL_LAYERS: &str = "99";

/// How big a GEMM sweep is: `--quick`, the default, or `--full`. smoke-bench's own sweep
/// (bench::plan::Size, this type) and the prediction `--gguf` sets beside its measurement take
/// it from the same flags; it lives here because `--gguf` builds without the bench feature. For
/// the prediction the default screens far more kernels than `--quick` on a fast GPU, where the
/// quick budget skips the shared-memory tiles that win (on an H200, measured/predicted 3.06 /
/// 3.53 at ubatch 64 / 512 with the quick sweep, 1.06 / 0.93 with the default one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepSize {
    Quick,
    Default,
    Full,
}

impl SweepSize {
    /// From the `--quick` and `--full` flags (clap keeps them apart).
    pub fn from_flags(quick: bool, full: bool) -> SweepSize {
        if quick {
            SweepSize::Quick
        } else if full {
            SweepSize::Full
        } else {
            SweepSize::Default
        }
    }

    /// The word the human output uses ("quick run"), as the flag spells it.
    pub fn word(self) -> &'static str {
        match self {
            SweepSize::Quick => "quick",
            SweepSize::Default => "default",
            SweepSize::Full => "full",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub model: PathBuf,
    /// The size of the GEMM prediction's sweep.
    pub sweep: SweepSize,
    pub prompt: u32,
    pub ubatches: Vec<u32>,
    pub cpu: bool,
    pub threads: usize,
    pub timeout: Duration,
    /// RPC workers the GPU cases use besides this board (`--rpc`), checked by
    /// [`crate::rpc::workers`].
    pub rpc: Vec<crate::rpc::Endpoint>,
}

impl Plan {
    /// `threads`: the CPU runs' thread count ([`big_cores`]).
    pub fn from_args(args: &BenchArgs, threads: usize) -> Result<Plan, String> {
        let model = args
            .gguf
            .clone()
            .ok_or_else(|| "--gguf is required for a prefill run".to_string())?;
        let ubatches = crate::llama::ubatch_list(&args.ubatch)?;
        let prompt = args.prompt.unwrap_or(DEFAULT_PROMPT);
        if prompt == 0 || prompt > MAX_PROMPT {
            return Err(format!(
                "--prompt {prompt}: the prompt must be between 1 and {MAX_PROMPT} tokens"
            ));
        }
        let rpc = if args.rpc.is_empty() {
            Vec::new()
        } else {
            crate::rpc::workers(&args.rpc)?
        };
        let timeout = args.case_timeout.unwrap_or(DEFAULT_CASE_TIMEOUT_S);
        if timeout == 0 {
            return Err("--case-timeout 0: give each run at least 1 second".into());
        }
        Ok(Plan {
            model,
            sweep: SweepSize::from_flags(args.quick, args.full),
            prompt,
            ubatches,
            cpu: !args.no_cpu,
            threads: threads.max(1),
            timeout: Duration::from_secs(timeout),
            rpc,
        })
    }

    /// Every case in run order: per ubatch the GPU, then (unless --no-cpu) the CPU.
    pub fn cases(&self) -> Vec<(u32, Side)> {
        self.ubatches
            .iter()
            .flat_map(|&u| {
                std::iter::once((u, Side::Gpu)).chain(self.cpu.then_some((u, Side::Cpu)))
            })
            .collect()
    }

    /// llama-bench's command line for one case. pp only (`-n 0`); the logical batch holds the
    /// whole prompt and is never below the ubatch (llama.cpp clamps the ubatch to it).
    pub fn argv(&self, bench: &str, ubatch: u32, side: Side) -> Vec<String> {
        let mut a: Vec<String> = vec![
            bench.to_string(),
            "-m".into(),
            self.model.to_string_lossy().into_owned(),
            "-p".into(),
            self.prompt.to_string(),
            "-n".into(),
            "0".into(),
            "-b".into(),
            ubatch.max(self.prompt).to_string(),
            "-ub".into(),
            ubatch.to_string(),
            "-r".into(),
            REPETITIONS.to_string(),
            "-o".into(),
            "json".into(),
        ];
        match side {
            Side::Gpu => {
                a.extend(["-ngl".into(), ALL_LAYERS.into()]);
                // The workers take their share of the layers beside this board's GPU.
                if !self.rpc.is_empty() {
                    a.extend(["-rpc".into(), crate::rpc::join(&self.rpc)]);
                }
            }
            // `-ngl 0` alone is not a CPU run: ggml's scheduler still offloads batches of 32+
            // tokens to the Vulkan device. `-dev none` gives llama.cpp no GPU at all.
            Side::Cpu => a.extend([
                "-ngl".into(),
                "0".into(),
                "-dev".into(),
                "none".into(),
                "-t".into(),
                self.threads.to_string(),
            ]),
        }
        a
    }
}

/// Threads for the CPU runs: the big cores, those with the highest `cpu_capacity` (RK3588:
/// the four Cortex-A76 of eight cores). When every core is alike, or the kernel gives no
/// capacities, all `available` ones.
pub fn big_cores(capacities: &[Option<u32>], available: usize) -> usize {
    let known: Vec<u32> = capacities.iter().flatten().copied().collect();
    match known.iter().max() {
        Some(&max) if known.len() == capacities.len() && known.iter().any(|&c| c != max) => {
            known.iter().filter(|&&c| c == max).count()
        }
        _ => available.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<Plan, String> {
        let mut argv = vec!["rvl", "smoke-bench", "--gguf", "/m/tiny.gguf"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        match cli.command {
            crate::cli::Command::SmokeBench(a) => Plan::from_args(&a, 4),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_are_pp512_over_the_ubatch_sweep_gpu_then_cpu() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.prompt, 512);
        assert_eq!(p.ubatches, crate::llama::UBATCH_SWEEP);
        assert_eq!(p.timeout, Duration::from_secs(300));
        assert_eq!(
            &p.cases()[..3],
            &[(16, Side::Gpu), (16, Side::Cpu), (32, Side::Gpu)]
        );
        let p = plan(&["--ubatch", "64,16,64", "--no-cpu", "--prompt", "128"]).unwrap();
        assert_eq!(p.cases(), vec![(16, Side::Gpu), (64, Side::Gpu)]);
    }

    #[test]
    fn gpu_runs_offload_every_layer_and_cpu_runs_get_no_device_and_the_big_cores() {
        let p = plan(&["--prompt", "128"]).unwrap();
        assert_eq!(
            p.argv("lb", 256, Side::Gpu).join(" "),
            "lb -m /m/tiny.gguf -p 128 -n 0 -b 256 -ub 256 -r 3 -o json -ngl 99"
        );
        assert_eq!(
            p.argv("lb", 16, Side::Cpu).join(" "),
            "lb -m /m/tiny.gguf -p 128 -n 0 -b 128 -ub 16 -r 3 -o json -ngl 0 -dev none -t 4"
        );
    }

    #[test]
    fn rpc_workers_join_the_gpu_runs_only() {
        let p = plan(&["--prompt", "64", "--rpc", "127.0.0.1:5,rk1-2:6"]).unwrap();
        assert_eq!(
            p.argv("lb", 16, Side::Gpu).join(" "),
            "lb -m /m/tiny.gguf -p 64 -n 0 -b 64 -ub 16 -r 3 -o json -ngl 99 -rpc 127.0.0.1:5,rk1-2:6"
        );
        assert!(!p.argv("lb", 16, Side::Cpu).contains(&"-rpc".to_string()));
        assert!(plan(&["--rpc", "0.0.0.0:1"])
            .unwrap_err()
            .contains("not the address of a worker"));
        let e = crate::cli::Cli::try_parse_from(["rvl", "smoke-bench", "--rpc", "a:1"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--gguf"), "{e}");
    }

    #[test]
    fn bad_numbers_are_usage_errors_and_gguf_only_flags_need_gguf() {
        assert!(plan(&["--prompt", "0"])
            .unwrap_err()
            .contains("between 1 and"));
        assert!(plan(&["--case-timeout", "0"])
            .unwrap_err()
            .contains("at least 1 second"));
        assert!(plan(&["--ubatch", "0"])
            .unwrap_err()
            .contains("between 1 and"));
        assert!(plan(&["--probe-limits"]).is_err());
        assert!(plan(&["--precision", "fp16"]).is_err());
        let e = crate::cli::Cli::try_parse_from(["rvl", "smoke-bench", "--prompt", "5"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--gguf"), "{e}");
    }

    #[test]
    fn big_cores_are_the_highest_capacity_ones() {
        let rk3588 = [414, 414, 414, 414, 1024, 1024, 1024, 1024].map(Some);
        assert_eq!(big_cores(&rk3588, 8), 4);
        assert_eq!(big_cores(&[Some(1024); 4], 4), 4);
        assert_eq!(big_cores(&[], 16), 16);
        assert_eq!(big_cores(&[Some(1024), None], 2), 2);
    }
}
