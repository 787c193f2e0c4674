//! The plan: an ordered list of steps, each a list of actions that are plain data (what file
//! gets which bytes, which link points where, which tool runs and what it may change). Made by
//! a pure function of (facts, target, manifest, options); shown with a diff per file; carried
//! out by `apply`. Right after a successful apply, planning again gives an empty plan.

use serde::Serialize;

use super::action::{Action, Options};
use super::facts::Facts;
use super::overlays::Compiled;
use super::patches::Series;
use super::steps;
use super::target::Target;
use crate::error::Error;
use crate::manifest::Manifest;

/// Steps that work on what an earlier step makes: (step, the step it needs). When the needed
/// step is blocked in this plan, the step that needs it is blocked too, with the same fix; a
/// step never writes configuration that points at something that was not made (an ICD naming
/// a library that was never built breaks Vulkan for every login).
pub const NEEDS: [(&str, &str); 1] = [("icd", "mesa")];

/// Every step, in the order setup runs them.
pub const STEP_NAMES: [&str; 7] = [
    "kernel",
    "gpu-overlay",
    "firmware",
    "mesa",
    "icd",
    "access",
    "llama-cpp",
];

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub step: String,
    pub summary: String,
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub board: String,
    pub steps: Vec<Step>,
    /// Things the user should know that need no change (skipped steps, guidance).
    pub notes: Vec<String>,
    /// Steps that cannot fix what they are for on this system: why, and what to do first.
    /// The other steps are still planned; setup exits with [`crate::exit::BLOCKED`].
    pub blocked: Vec<Blocked>,
}

/// A step setup cannot carry out here, with the reason and the command or package that unblocks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocked {
    pub step: String,
    pub why: String,
    pub fix: String,
}

impl Plan {
    /// No step has anything to apply (a blocked step has nothing to apply either).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Nothing to apply and nothing blocked: the system is where setup would take it.
    pub fn is_done(&self) -> bool {
        self.steps.is_empty() && self.blocked.is_empty()
    }

    pub fn step_names(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.step.clone()).collect()
    }

    /// Take `step` out of the plan as blocked (why, fix), and with it every planned step that
    /// needs what it makes ([`NEEDS`]), as planning would have.
    pub fn block(&mut self, step: &str, why: String, fix: String) {
        self.steps.retain(|s| s.step != step);
        self.blocked.push(Blocked {
            step: step.to_string(),
            why,
            fix: fix.clone(),
        });
        for (needing, need) in NEEDS {
            if need == step && self.steps.iter().any(|s| s.step == needing) {
                self.block(
                    needing,
                    format!("it needs what the {step} step makes, and the {step} step is blocked"),
                    fix.clone(),
                );
            }
        }
    }
}

/// Check `--only` names before anything else happens.
pub fn check_only(only: &[String]) -> anyhow::Result<()> {
    for s in only {
        if !STEP_NAMES.contains(&s.as_str()) {
            return Err(Error::Usage(format!(
                "--only: unknown step `{s}`{} (steps: {})",
                crate::output::did_you_mean(s, STEP_NAMES.iter().copied()),
                STEP_NAMES.join(", ")
            ))
            .into());
        }
    }
    Ok(())
}

/// Compute the plan. Pure: everything it knows comes from its arguments.
pub fn plan(
    facts: &Facts,
    target: &Target,
    manifest: &Manifest,
    patches: &Series,
    opts: &Options,
    overlay: Option<&Compiled>,
) -> anyhow::Result<Plan> {
    check_only(&opts.only)?;
    let mut plan = Plan {
        board: target.board.clone(),
        steps: Vec::new(),
        notes: Vec::new(),
        blocked: Vec::new(),
    };
    // Each step plans against the files as the steps before it leave them, so two steps that
    // edit one file (kernel and gpu-overlay on extlinux.conf) compose instead of the later
    // one writing back the original with only its own change.
    let mut facts = facts.clone();
    for name in STEP_NAMES {
        if !opts.wants(name) {
            continue;
        }
        let ctx = steps::Ctx {
            facts: &facts,
            patches,
            target,
            manifest,
            opts,
            overlay,
        };
        let blocked_need = NEEDS
            .iter()
            .filter(|(step, _)| *step == name)
            .find_map(|(_, need)| plan.blocked.iter().find(|b| b.step == *need));
        if let Some(b) = blocked_need {
            plan.blocked.push(Blocked {
                step: name.to_string(),
                why: format!(
                    "it needs what the {0} step makes, and the {0} step is blocked",
                    b.step
                ),
                fix: b.fix.clone(),
            });
            continue;
        }
        let planned = match name {
            "kernel" => steps::kernel(&ctx)?,
            "gpu-overlay" => steps::gpu_overlay(&ctx)?,
            "firmware" => steps::firmware(&ctx)?,
            "mesa" => steps::mesa(&ctx)?,
            "icd" => steps::icd(&ctx)?,
            "access" => steps::access(&ctx)?,
            "llama-cpp" => steps::llama_cpp(&ctx)?,
            _ => unreachable!("STEP_NAMES is exhaustive"),
        };
        plan.notes.extend(planned.notes);
        if let Some((why, fix)) = planned.blocked {
            plan.blocked.push(Blocked {
                step: name.to_string(),
                why,
                fix,
            });
        }
        for a in &planned.actions {
            if let Action::WriteFile { path, content, .. } = a {
                facts.files.insert(path.clone(), Some(content.clone()));
            }
        }
        if !planned.actions.is_empty() {
            plan.steps.push(Step {
                step: name.to_string(),
                summary: planned.summary,
                actions: planned.actions,
            });
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};

    #[test]
    fn unknown_only_step_is_a_usage_error() {
        let err = check_only(&["kernel".into(), "kernal".into()]).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::USAGE);
        assert!(
            err.to_string().contains("`kernal`, did you mean `kernel`?"),
            "{err}"
        );
    }

    #[test]
    fn blocking_a_step_after_planning_blocks_the_steps_that_need_it() {
        let step = |name: &str| Step {
            step: name.into(),
            summary: String::new(),
            actions: Vec::new(),
        };
        let mut p = Plan {
            board: "b".into(),
            steps: vec![step("kernel"), step("mesa"), step("icd")],
            notes: Vec::new(),
            blocked: Vec::new(),
        };
        p.block("mesa", "offline".into(), "fetch it".into());
        assert_eq!(p.step_names(), ["kernel"]);
        let blocked: Vec<(&str, &str)> = p
            .blocked
            .iter()
            .map(|b| (b.step.as_str(), b.fix.as_str()))
            .collect();
        assert_eq!(blocked, [("mesa", "fetch it"), ("icd", "fetch it")]);
    }
}
