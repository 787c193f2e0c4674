//! What `rvl setup` hands back to `main`: one typed value per mode, printed once, as text or
//! inside the JSON envelope (which adds `schema_version`, `rvl_version`, `command` and
//! `exit_code`). The plan shown before the confirmation prompt is printed by setup itself;
//! this is the final word.

use std::fmt::Write;

use serde::Serialize;

use super::apply;
use super::journal::{Applied, Journal, Recovery, RolledBack};
use super::plan::Plan;
use super::render;
use super::rollback::{self, Act, RunUndo};
use crate::exit;
use crate::hint::Invocation;
use crate::host::Root;
use crate::output::{escape_control, escape_line, Outcome, Style};

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
    /// `--download-only`: the artifacts now in `--cache DIR`.
    Download(DownloadReport),
}

#[derive(Debug, Clone, Serialize)]
pub struct DownloadReport {
    /// The `--cache` directory.
    pub cache: String,
    pub files: Vec<CachedFile>,
}

/// One verified artifact in the `--cache` directory.
#[derive(Debug, Clone, Serialize)]
pub struct CachedFile {
    /// The step that uses it.
    pub step: String,
    /// Its name in the directory.
    pub file: String,
    /// The URL (or `pip download REQ`) it came from.
    pub from: String,
    pub sha256: String,
    /// False when the directory already held it, verified.
    pub fetched: bool,
}

impl DownloadReport {
    fn human(&self, style: Style) -> String {
        let mut s = String::new();
        for f in &self.files {
            let _ = writeln!(
                s,
                "{} {}: {}{}",
                style.green("✓"),
                f.step,
                escape_control(&f.from),
                if f.fetched { "" } else { " (already there)" }
            );
        }
        let _ = writeln!(
            s,
            "{} in {}, sha256 checked; copy it to the board and run: sudo rvl setup --board BOARD --cache {}",
            plural(self.files.len(), "file", "files"),
            escape_control(&self.cache),
            crate::shell::quote(&self.cache)
        );
        s
    }
}

/// How the root is named in human output (never in JSON).
#[derive(Debug, Clone, Default)]
pub struct Place {
    /// "this system" or "root DIR".
    pub desc: String,
    /// How setup was run: the commands the output suggests repeat its `--root` (and board).
    pub hint: Invocation,
}

impl Place {
    pub fn of(root: &Root, hint: Invocation) -> Place {
        let desc = if root.is_live() {
            "this system".to_string()
        } else {
            // The directory is the user's, and may hold any byte: escaped for the terminal
            // (the commands the output suggests quote it as one shell word).
            format!("root {}", escape_line(&root.base().display().to_string()))
        };
        Place { desc, hint }
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
    /// True for `--rollback --dry-run`: `runs` is the plan, nothing was changed.
    pub dry_run: bool,
    pub recovered: Recovery,
    /// Per run, newest first: what was (or would be) done to each path, with diffs.
    pub runs: Vec<RunUndo>,
    /// Paths put back, removed or with setup's edits undone.
    pub restored: Vec<String>,
    /// Paths left as they are (each run's `paths` says why); they stay in `--status`.
    pub refused: Vec<String>,
    #[serde(skip)]
    pub note: Option<String>,
    #[serde(skip)]
    pub place: Place,
}

impl RollbackReport {
    pub fn new(
        dry_run: bool,
        recovered: Recovery,
        note: Option<String>,
        runs: Vec<RunUndo>,
        place: Place,
    ) -> Self {
        let paths = || runs.iter().flat_map(|r| r.paths.iter());
        let restored = paths()
            .filter(|p| matches!(p.action, Act::Restore | Act::Remove | Act::UndoEdits))
            .map(|p| p.path.clone())
            .collect();
        let refused = paths()
            .filter(|p| p.action == Act::Refuse)
            .map(|p| p.path.clone())
            .collect();
        RollbackReport {
            dry_run,
            recovered,
            runs,
            restored,
            refused,
            note,
            place,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// Runs that can still be rolled back (all their paths, or those a rollback refused).
    pub applied: Vec<Applied>,
    /// Runs rolled back completely.
    pub rolled_back: Vec<RolledBack>,
    pub interrupted: Option<Journal>,
    #[serde(skip)]
    pub place: Place,
}

impl Outcome for SetupOutcome {
    fn exit_code(&self) -> i32 {
        match self {
            SetupOutcome::Rollback(r) if !r.dry_run && !r.refused.is_empty() => {
                exit::ROLLBACK_INCOMPLETE
            }
            SetupOutcome::Plan(PlanReport { plan, .. })
            | SetupOutcome::Apply(ApplyReport { plan, .. })
                if !plan.blocked.is_empty() =>
            {
                exit::BLOCKED
            }
            _ => exit::OK,
        }
    }

    fn human(&self, style: Style) -> String {
        match self {
            SetupOutcome::Plan(r) => render::plan_text(&r.plan, &r.place.desc, style),
            SetupOutcome::Apply(r) => r.human(style),
            SetupOutcome::Rollback(r) => r.human(style),
            SetupOutcome::Status(r) => r.human(),
            SetupOutcome::Download(r) => r.human(style),
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
            "\n{} applied {} ({}); undo with: {}",
            style.green("✓"),
            plural(outcome.steps.len(), "step", "steps"),
            outcome.steps.join(", "),
            self.place.hint.setup_journal("--rollback")
        );
        for d in &outcome.deferred {
            let _ = writeln!(s, "{} {}", style.yellow("!"), d);
        }
        let remaining = self.remaining.as_deref().unwrap_or_default();
        if !remaining.is_empty() {
            let _ = writeln!(
                s,
                "{} a new plan still lists: {} (see `{}`)",
                style.yellow("!"),
                remaining.join(", "),
                self.place.hint.read_only("setup", "--dry-run", true)
            );
        }
        render::blocked_text(&mut s, &self.plan, style);
        if outcome
            .steps
            .iter()
            .any(|s| s == "kernel" || s == "gpu-overlay")
        {
            let _ = writeln!(
                s,
                "{}",
                self.place
                    .hint
                    .reboot_advice("the new kernel / device tree")
            );
        }
        s
    }
}

impl RollbackReport {
    fn human(&self, style: Style) -> String {
        let mut s = String::new();
        if let Some(n) = &self.note {
            let _ = writeln!(s, "{} {}", style.yellow("!"), escape_control(n));
        }
        if self.runs.is_empty() {
            let _ = writeln!(
                s,
                "Nothing to roll back: setup has not changed {}.",
                self.place.desc
            );
            return s;
        }
        let (would, did) = if self.dry_run {
            ("would", "Rollback would")
        } else {
            ("", "")
        };
        if self.dry_run {
            let _ = writeln!(
                s,
                "{did} do this on {} (nothing changed yet):",
                self.place.desc
            );
        }
        for run in &self.runs {
            let _ = writeln!(
                s,
                "run {} ({}):",
                escape_control(&run.id),
                escape_control(&run.steps.join(", "))
            );
            for p in &run.paths {
                let path = escape_control(&p.path);
                let verb = match p.action {
                    Act::Nothing => continue,
                    Act::Restore => "restore",
                    Act::Remove => "remove",
                    Act::UndoEdits => "undo setup's edits in",
                    Act::Refuse => "",
                };
                if p.action == Act::Refuse {
                    let _ = writeln!(
                        s,
                        "  {} {} {path}: {}",
                        style.yellow("!"),
                        if self.dry_run { "would leave" } else { "left" },
                        escape_control(p.reason.as_deref().unwrap_or(""))
                    );
                } else if self.dry_run {
                    let _ = writeln!(s, "  {would} {verb} {path}");
                } else {
                    let _ = writeln!(s, "  {} {} {path}", style.green("✓"), past(verb));
                }
                if self.dry_run {
                    if let Some(d) = &p.diff {
                        for line in escape_control(d).lines() {
                            let _ = writeln!(s, "    {line}");
                        }
                    }
                }
            }
        }
        if !self.refused.is_empty() && !self.dry_run {
            let _ = writeln!(
                s,
                "{} rollback incomplete: {} left as {} (see above); `{}` lists them, `{}` puts the saved copies back",
                style.yellow("!"),
                plural(self.refused.len(), "path", "paths"),
                if self.refused.len() == 1 { "it is" } else { "they are" },
                self.place.hint.read_only("setup", "--status", false),
                self.place.hint.setup_journal("--rollback --force")
            );
        } else if !self.dry_run {
            let _ = writeln!(s, "{} rolled back", style.green("✓"));
        }
        s
    }
}

fn past(verb: &str) -> &str {
    match verb {
        "restore" => "restored",
        "remove" => "removed",
        _ => "undid setup's edits in",
    }
}

fn run_time(id: &str) -> String {
    rollback::id_secs(id)
        .map(rollback::utc)
        .unwrap_or_else(|| "?".into())
}

impl StatusReport {
    fn human(&self) -> String {
        let mut s = String::new();
        if self.applied.is_empty() && self.rolled_back.is_empty() {
            let _ = writeln!(s, "setup has not changed {}.", self.place.desc);
        }
        for t in self.applied.iter().rev() {
            let state = match t.partly_rolled_back {
                Some(at) => format!(
                    "partly rolled back at {}; these were refused (`{}` puts them back)",
                    rollback::utc(at),
                    self.place.hint.setup_journal("--rollback --force")
                ),
                None => "not rolled back".to_string(),
            };
            let _ = writeln!(
                s,
                "run {} at {}: {} ({}), {state}",
                escape_control(&t.id),
                run_time(&t.id),
                escape_control(&t.steps.join(", ")),
                plural(t.entries.len(), "path", "paths")
            );
            for e in &t.entries {
                let _ = writeln!(s, "  {}", escape_control(&e.path));
            }
        }
        for t in self.rolled_back.iter().rev() {
            let _ = writeln!(
                s,
                "run {} at {}: {} ({}), rolled back at {}",
                escape_control(&t.id),
                run_time(&t.id),
                escape_control(&t.steps.join(", ")),
                plural(t.paths.len(), "path", "paths"),
                rollback::utc(t.at)
            );
        }
        if let Some(j) = &self.interrupted {
            let _ = writeln!(
                s,
                "! an interrupted {} run ({}, {} touched) is pending: the next `{}` or `{}` finishes it",
                j.kind,
                escape_control(&j.id),
                plural(j.entries.len(), "path", "paths"),
                self.place.hint.setup(""),
                self.place.hint.setup_journal("--rollback")
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
            place: Place::of(&Root::new("/tmp/x"), Invocation::default()),
        });
        let v = serde_json::to_value(&out).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["applied", "mode", "plan", "recovered"]);
        assert_eq!(v["mode"], "apply");
        let status = SetupOutcome::Status(StatusReport {
            applied: Vec::new(),
            rolled_back: Vec::new(),
            interrupted: None,
            place: Place::of(&Root::new("/tmp/x"), Invocation::default()),
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
