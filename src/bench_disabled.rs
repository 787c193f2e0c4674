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
