//! Doctor's outcome as data ([`Report`], or the check list), and its human rendering. `main`
//! prints it, as text or inside the JSON envelope.

use serde::Serialize;

use super::checks;
use super::context::{Context, ProfileSource};
use super::finding::{Finding, Status};
use crate::inventory::Inventory;
use crate::output::{escape_line, Outcome, Style};

/// What `rvl doctor` hands back: the findings, or the list of checks (`--list-checks`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum DoctorOutcome {
    Report(Box<Report>),
    CheckList { checks: Vec<CheckInfo> },
}

#[derive(Debug, Serialize)]
pub struct CheckInfo {
    pub id: &'static str,
    pub title: &'static str,
}

/// The findings of one run, with what they were judged against.
#[derive(Debug, Serialize)]
pub struct Report {
    pub board: Board,
    pub kernel: Kernel,
    pub summary: Counts,
    pub checks: Vec<Finding>,
    pub inventory: Inventory,
    /// The exit status the findings give (the envelope carries it as `exit_code`).
    #[serde(skip)]
    pub code: i32,
    /// `-v`: the evidence goes under each check's line (JSON always carries it).
    #[serde(skip)]
    pub verbose: bool,
}

#[derive(Debug, Serialize)]
pub struct Board {
    pub id: Option<String>,
    pub name: Option<String>,
    pub detected_by: Option<ProfileSource>,
    pub model: Option<String>,
    pub compatible: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Kernel {
    pub release: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Counts {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
}

impl Counts {
    fn of(findings: &[Finding]) -> Self {
        let count = |s: Status| findings.iter().filter(|f| f.status == s).count();
        Counts {
            pass: count(Status::Pass),
            warn: count(Status::Warn),
            fail: count(Status::Fail),
            skip: count(Status::Skip),
        }
    }
}

impl Report {
    /// With `-v`, the human rendering shows every check's evidence.
    pub fn verbose(mut self, on: bool) -> Self {
        self.verbose = on;
        self
    }

    pub fn new(ctx: &Context, findings: Vec<Finding>, code: i32) -> Self {
        let dt = ctx.inv.devicetree.as_ref();
        Report {
            board: Board {
                id: ctx.profile.map(|p| p.id.clone()),
                name: ctx.profile.map(|p| p.name.clone()),
                detected_by: ctx.source,
                model: dt.and_then(|d| d.model.clone()),
                compatible: dt.map(|d| d.compatible.clone()).unwrap_or_default(),
            },
            kernel: Kernel {
                release: ctx.inv.kernel.release.clone(),
            },
            summary: Counts::of(&findings),
            checks: findings,
            inventory: ctx.inv.clone(),
            code,
            verbose: false,
        }
    }

    /// One line per check, the fix indented under problems, a summary line.
    fn human(&self, style: Style) -> String {
        let mut out = String::new();
        let board = match (&self.board.name, &self.board.id) {
            (Some(name), Some(id)) => format!("{name} (profile {id})"),
            _ => "no RK3588 board profile".to_string(),
        };
        let kernel = self.kernel.release.as_deref().unwrap_or("unknown");
        // Every field may come from the inspected image: escaped before any colour is added.
        let header = escape_line(&format!("rvl doctor: {board}, kernel {kernel}"));
        out.push_str(&style.bold(&header));
        out.push('\n');
        let width = self.checks.iter().map(|f| f.id.len()).max().unwrap_or(0);
        for f in &self.checks {
            out.push_str(&finding_lines(f, width, style));
            if self.verbose {
                out.push_str(&evidence_lines(f, width, style));
            }
        }
        out.push_str(&self.summary_line(style));
        out.push('\n');
        out
    }

    fn summary_line(&self, style: Style) -> String {
        let c = &self.summary;
        let line = format!(
            "{} failed, {} warning{}, {} passed, {} skipped{}",
            c.fail,
            c.warn,
            if c.warn == 1 { "" } else { "s" },
            c.pass,
            c.skip,
            // Already shown with -v: only the JSON has more.
            if self.verbose {
                " (details: --json)"
            } else {
                " (details: -v or --json)"
            }
        );
        if c.fail > 0 {
            style.red(&line)
        } else if c.warn > 0 {
            style.yellow(&line)
        } else {
            style.green(&line)
        }
    }
}

fn glyph(status: Status, style: Style) -> String {
    match status {
        Status::Pass => style.green("✓"),
        Status::Warn => style.yellow("!"),
        Status::Fail => style.red("✗"),
        Status::Skip => style.dim("-"),
    }
}

/// A check's line, and its fix under it when the check warned or failed.
fn finding_lines(f: &Finding, width: usize, style: Style) -> String {
    let summary = if f.status == Status::Skip {
        style.dim(&format!("skipped: {}", escape_line(&f.summary)))
    } else {
        escape_line(&f.summary)
    };
    let mut out = format!("{} {:width$}  {summary}\n", glyph(f.status, style), f.id);
    if f.status >= Status::Warn {
        if let Some(fix) = &f.fix {
            out.push_str(&format!("  {:width$}  fix: {}\n", "", escape_line(fix)));
        }
    }
    out
}

/// `-v`: what the check read, one dimmed line each, indented under the check's line. Evidence
/// quotes the inspected tree, so each line is escaped like every other field.
fn evidence_lines(f: &Finding, width: usize, style: Style) -> String {
    f.evidence
        .iter()
        .map(|e| format!("  {:width$}  {}\n", "", style.dim(&escape_line(e))))
        .collect()
}

impl DoctorOutcome {
    pub fn check_list() -> Self {
        DoctorOutcome::CheckList {
            checks: checks::ALL
                .iter()
                .map(|c| CheckInfo {
                    id: c.id,
                    title: c.title,
                })
                .collect(),
        }
    }
}

impl Outcome for DoctorOutcome {
    fn exit_code(&self) -> i32 {
        match self {
            DoctorOutcome::Report(r) => r.code,
            DoctorOutcome::CheckList { .. } => crate::exit::OK,
        }
    }

    fn human(&self, style: Style) -> String {
        match self {
            DoctorOutcome::Report(r) => r.human(style),
            DoctorOutcome::CheckList { checks } => {
                let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
                checks
                    .iter()
                    .map(|c| format!("{:width$}  {}\n", c.id, c.title))
                    .collect()
            }
        }
    }
}
