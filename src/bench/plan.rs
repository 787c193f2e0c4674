//! What a smoke-bench run will do, decided from the command line before any device work:
//! model, ubatch list, precisions, size (quick / default / full) and its time budget.

use super::kernels::Precision;
use super::model::{self, Model};
use crate::cli::BenchArgs;

/// The sweep and its limit are shared with `smoke-bench --gguf` (in crate::llama, which builds
/// without the bench feature).
pub use crate::llama::{MAX_UBATCH, UBATCH_SWEEP as DEFAULT_UBATCHES};

/// The sweep's size, shared with `smoke-bench --gguf`'s prediction (built without this feature).
pub use crate::prefill::plan::SweepSize as Size;

#[derive(Debug, Clone)]
pub struct Plan {
    pub model: &'static Model,
    pub ubatches: Vec<u32>,
    /// Precisions asked for; None means "every one the device supports" (fp32 only on CPU devices).
    pub precisions: Option<Vec<Precision>>,
    pub size: Size,
    pub cpu: bool,
}

impl Plan {
    pub fn from_args(args: &BenchArgs) -> Result<Plan, String> {
        let model = model::preset(&args.model)?;
        let ubatches = crate::llama::ubatch_list(&args.ubatch)?;
        let precisions = if args.precision.is_empty() {
            None
        } else {
            let mut list = args
                .precision
                .iter()
                .map(|p| Precision::parse(p).map_err(|e| format!("--precision: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            list.sort_unstable();
            list.dedup();
            Some(list)
        };
        Ok(Plan {
            model,
            ubatches,
            precisions,
            size: Size::from_flags(args.quick, args.full),
            cpu: !args.no_cpu,
        })
    }

    /// Seconds of device work the run aims for (the CPU baseline and the peak come on top).
    pub fn budget_s(&self) -> f64 {
        match self.size {
            Size::Quick => 8.0,
            Size::Default => 40.0,
            Size::Full => f64::INFINITY,
        }
    }

    /// Timed repetitions per measurement (the median is reported).
    pub fn reps(&self) -> usize {
        match self.size {
            Size::Quick => 1,
            Size::Default => 3,
            Size::Full => 5,
        }
    }

    /// On CPU devices (lavapipe) real model matrices take minutes per GEMM; quick and default
    /// runs compute only this many outputs of each and scale the time (labelled as such).
    pub fn output_cap(&self, cpu_device: bool) -> Option<u32> {
        match (cpu_device, self.size) {
            (false, _) | (true, Size::Full) => None,
            (true, Size::Quick) => Some(256),
            (true, Size::Default) => Some(1024),
        }
    }

    /// This ubatch's share of the budget for one precision: proportional to its FLOPs.
    pub fn share_s(&self, ubatch: u32, precisions: usize) -> f64 {
        let total: u32 = self.ubatches.iter().sum();
        self.budget_s() * f64::from(ubatch) / f64::from(total.max(1)) / precisions.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<Plan, String> {
        let mut argv = vec!["rvl", "smoke-bench"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        match cli.command {
            crate::cli::Command::SmokeBench(a) => Plan::from_args(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_are_qwen3b_and_the_full_sweep() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.model.name, "qwen2.5-3b");
        assert_eq!(p.ubatches, DEFAULT_UBATCHES);
        assert_eq!(p.precisions, None);
        assert_eq!(p.size, Size::Default);
        assert!(p.cpu);
    }

    #[test]
    fn lists_are_validated_sorted_and_deduplicated() {
        let p = plan(&[
            "--ubatch",
            "512,64,64",
            "--precision",
            "q4_0,fp32",
            "--quick",
            "--no-cpu",
        ])
        .unwrap();
        assert_eq!(p.ubatches, vec![64, 512]);
        assert_eq!(p.precisions, Some(vec![Precision::Fp32, Precision::Q4_0]));
        assert_eq!(p.size, Size::Quick);
        assert!(!p.cpu);
        assert!(plan(&["--ubatch", "0"])
            .unwrap_err()
            .contains("between 1 and"));
        assert!(plan(&["--precision", "fp8"])
            .unwrap_err()
            .contains("unknown precision"));
        assert!(plan(&["--model", "nope"])
            .unwrap_err()
            .contains("unknown model preset"));
    }

    #[test]
    fn budget_shares_follow_the_work() {
        let p = plan(&["--ubatch", "16,48"]).unwrap();
        assert!((p.share_s(48, 1) - 3.0 * p.share_s(16, 1)).abs() < 1e-9);
        assert!(plan(&["--full"]).unwrap().budget_s().is_infinite());
        assert_eq!(plan(&["--quick"]).unwrap().output_cap(true), Some(256));
        assert_eq!(plan(&["--quick"]).unwrap().output_cap(false), None);
        assert_eq!(plan(&["--full"]).unwrap().output_cap(true), None);
    }
}
