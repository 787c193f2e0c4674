//! `rvl smoke-bench` in a binary built without the `bench` feature: the flags still parse,
//! and the verb exits with NO_VULKAN saying how the binary was built.

use serde::Serialize;

use crate::cli;
use crate::error::Error;
use crate::output::{Outcome, Style};
use crate::settings::Settings;

/// No outcome is possible without the feature: this type has no values.
#[derive(Debug, Serialize)]
pub enum BenchOutcome {}

impl Outcome for BenchOutcome {
    fn exit_code(&self) -> i32 {
        match *self {}
    }
    fn human(&self, _style: Style) -> String {
        match *self {}
    }
}

pub fn run(_args: &cli::BenchArgs, _settings: &Settings) -> anyhow::Result<BenchOutcome> {
    Err(Error::NoVulkan(format!(
        "smoke-bench is not available: {}",
        crate::vulkan::UNAVAILABLE.unwrap_or("the bench feature is off")
    ))
    .into())
}

/// The GEMM prediction `smoke-bench --gguf` sets beside its measurement needs rvl's Vulkan.
pub fn predict(
    _shapes: &crate::prefill::gguf::Shapes,
    _ubatches: &[u32],
    _size: crate::prefill::plan::SweepSize,
    _precision: Option<&str>,
    _device: Option<usize>,
    _settings: &Settings,
    _progress: bool,
) -> Result<(String, Vec<crate::prefill::report::GemmPoint>), Error> {
    Err(Error::NoVulkan(
        crate::vulkan::UNAVAILABLE
            .unwrap_or("the bench feature is off")
            .to_string(),
    ))
}
