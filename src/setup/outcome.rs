//! What `rvl setup` hands back to `main`: one typed value per mode, printed once, as text or
//! inside the JSON envelope (which adds `schema_version`, `rvl_version`, `command` and
//! `exit_code`). The plan shown before the confirmation prompt is printed by setup itself;
//! this is the final word.

use std::fmt::Write;

use serde::Serialize;

use super::apply;
use super::journal::{Applied, Journal, Recovery};
use super::plan::Plan;
use super::render;
use crate::exit;
use crate::host::Root;
use crate::output::{Outcome, Style};

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum SetupOutcome {
    /// `--dry-run`: the plan, nothing changed.
    Plan(PlanReport),
    /// An apply: nothing to do, or what was applied and what a new plan still lists.
    Apply(ApplyReport),
    /// `--rollback`: the paths put back.
    Rollback(RollbackReport),
    /// `--status`: the applied transactions and any interrupted run.
    Status(StatusReport),
}

/// How the root is named in human output (never in JSON).
#[derive(Debug, Clone, Default)]
pub struct Place {
    /// "this system" or "root DIR".
    pub desc: String,
    /// "" or " --root DIR", for the commands the output suggests.
    pub flag: String,
}

impl Place {
    pub fn of(root: &Root) -> Place {
        if root.is_live() {
            Place {
                desc: "this system".into(),
                flag: String::new(),
            }
        } else {
            Place {
                desc: format!("root {}", root.base().display()),
                flag: format!(" --root {}", root.base().display()),
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    pub plan: Plan,
    #[serde(skip)]
    pub place: Place,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    /// False when the plan was empty.
    pub applied: bool,
    pub recovered: Recovery,
    pub plan: Plan,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<apply::Outcome>,
    /// Steps a plan made right after the apply still lists (empty when all went as planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining: Option<Vec<String>>,
    #[serde(skip)]
    pub place: Place,
}

#[derive(Debug, Clone, Serialize)]
pub struct RollbackReport {
    pub recovered: Recovery,
    pub restored: Vec<String>,
    #[serde(skip)]
    pub place: Place,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub applied: Vec<Applied>,
    pub interrupted: Option<Journal>,
    #[serde(skip)]
    pub place: Place,
}

impl Outcome for SetupOutcome {
    fn exit_code(&self) -> i32 {
        let plan = match self {
            SetupOutcome::Plan(r) => &r.plan,
            SetupOutcome::Apply(r) => &r.plan,
            _ => return exit::OK,
        };
        if plan.blocked.is_empty() {
            exit::OK
        } else {
            exit::BLOCKED
        }
    }

    fn human(&self, style: Style) -> String {
        match self {
            SetupOutcome::Plan(r) => render::plan_text(&r.plan, &r.place.desc, style),
            SetupOutcome::Apply(r) => r.human(style),
            SetupOutcome::Rollback(r) => r.human(),
            SetupOutcome::Status(r) => r.human(),
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl ApplyReport {
    fn human(&self, style: Style) -> String {
        let Some(outcome) = &self.outcome else {
            return render::plan_text(&self.plan, &self.place.desc, style);
        };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n{} applied {} ({}); undo with: rvl setup --rollback{}",
            style.green("✓"),
            plural(outcome.steps.len(), "step", "steps"),
            outcome.steps.join(", "),
            self.place.flag
        );
        for d in &outcome.deferred {
            let _ = writeln!(s, "{} {}", style.yellow("!"), d);
        }
        let remaining = self.remaining.as_deref().unwrap_or_default();
        if !remaining.is_empty() {
            let _ = writeln!(
                s,
                "{} a new plan still lists: {} (see `rvl setup --dry-run`)",
                style.yellow("!"),
                remaining.join(", ")
            );
        }
        render::blocked_text(&mut s, &self.plan, style);
        if outcome
            .steps
            .iter()
            .any(|s| s == "kernel" || s == "gpu-overlay")
        {
            let _ = writeln!(s, "Reboot to start the new kernel / device tree.");
        }
        s
    }
}

impl RollbackReport {
    fn human(&self) -> String {
        if self.restored.is_empty() {
            return format!(
                "Nothing to roll back: setup has not changed {}.\n",
                self.place.desc
            );
        }
        let mut s = "✓ rolled back; restored or removed:\n".to_string();
        for path in &self.restored {
            let _ = writeln!(s, "  {path}");
        }
        s
    }
}

impl StatusReport {
    fn human(&self) -> String {
        let mut s = String::new();
        if self.applied.is_empty() {
            let _ = writeln!(s, "setup has not changed {}.", self.place.desc);
        }
        for t in &self.applied {
            let _ = writeln!(
                s,
                "applied {}: {} ({})",
                t.id,
                t.steps.join(", "),
                plural(t.entries.len(), "path", "paths")
            );
            for e in &t.entries {
                let _ = writeln!(s, "  {}", e.path);
            }
        }
        if let Some(j) = &self.interrupted {
            let _ = writeln!(
                s,
                "! an interrupted {} run ({}, {} touched) is pending: the next `rvl setup` or `rvl setup --rollback` finishes it",
                j.kind,
                j.id,
                plural(j.entries.len(), "path", "paths")
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_plan() -> Plan {
        Plan {
            board: "boltzmann".into(),
            steps: Vec::new(),
            notes: Vec::new(),
            blocked: Vec::new(),
        }
    }

    #[test]
    fn json_fields_follow_the_mode_tag_and_skip_the_place() {
        let out = SetupOutcome::Apply(ApplyReport {
            applied: false,
            recovered: Recovery::Nothing,
            plan: empty_plan(),
            outcome: None,
            remaining: None,
            place: Place::of(&Root::new("/tmp/x")),
        });
        let v = serde_json::to_value(&out).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["applied", "mode", "plan", "recovered"]);
        assert_eq!(v["mode"], "apply");
        let status = SetupOutcome::Status(StatusReport {
            applied: Vec::new(),
            interrupted: None,
            place: Place::of(&Root::new("/tmp/x")),
        });
        let v = serde_json::to_value(&status).unwrap();
        assert_eq!(v["mode"], "status");
        assert!(v["interrupted"].is_null() && v["applied"] == serde_json::json!([]));
        assert_eq!(
            status.human(Style::plain()),
            "setup has not changed root /tmp/x.\n"
        );
    }
}
