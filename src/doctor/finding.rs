//! The result of one check: a status, a one-line summary, the evidence read, and a fix.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Skip,
    Warn,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub status: Status,
    pub summary: String,
    pub evidence: Vec<String>,
    /// A command or `rvl setup` step; present whenever the status is warn or fail.
    pub fix: Option<String>,
}

impl Finding {
    pub fn new(id: &str, status: Status, summary: impl Into<String>) -> Self {
        Finding {
            id: id.to_string(),
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            fix: None,
        }
    }

    pub fn pass(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Pass, summary)
    }
    pub fn warn(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Warn, summary)
    }
    pub fn fail(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Fail, summary)
    }
    pub fn skip(id: &str, reason: impl Into<String>) -> Self {
        Self::new(id, Status::Skip, reason)
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    pub fn evidence(mut self, lines: impl IntoIterator<Item = String>) -> Self {
        self.evidence.extend(lines);
        self
    }
}
