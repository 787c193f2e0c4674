//! What `rvl smoke-bench` hands back to `main`: the sweep's report (with the comparison when
//! `--compare` was given), or the `--probe-limits` result. Both render as a table for people
//! and as the verb fields of the JSON envelope.

use std::fmt::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::compare::{self, Comparison};
use super::probe::{self, ProbeResult};
use super::render;
use super::report::Report;
use crate::exit;
use crate::output::{Outcome, Style};

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum BenchOutcome {
    Sweep(Box<SweepOutcome>),
    Limits(ProbeResult),
}

/// A sweep's report and what was done with it.
#[derive(Debug, Serialize)]
pub struct SweepOutcome {
    #[serde(flatten)]
    pub report: Report,
    /// Against the `--compare` file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Where `--save` wrote the document (said in human output only).
    #[serde(skip)]
    pub saved: Option<PathBuf>,
}

impl SweepOutcome {
    /// PROBLEMS when a kernel was wrong or a step failed.
    pub fn exit_code(&self) -> i32 {
        if self.report.problems {
            exit::PROBLEMS
        } else {
            exit::OK
        }
    }
}

impl Outcome for BenchOutcome {
    fn exit_code(&self) -> i32 {
        match self {
            BenchOutcome::Sweep(s) => s.exit_code(),
            BenchOutcome::Limits(_) => exit::OK,
        }
    }

    fn human(&self, style: Style) -> String {
        match self {
            BenchOutcome::Limits(r) => probe::render(r, style),
            BenchOutcome::Sweep(s) => {
                let mut out = render::render(&s.report, style);
                if let Some(c) = &s.comparison {
                    out.push_str(&compare::render(c, style));
                }
                if let Some(path) = &s.saved {
                    let _ = writeln!(out, "saved: {}", path.display());
                }
                out
            }
        }
    }
}
