//! The plan: an ordered list of steps, each a list of actions that are plain data (what file
//! gets which bytes, which link points where, which tool runs and what it may change). Made by
//! a pure function of (facts, target, manifest, options); shown with a diff per file; carried
//! out by `apply`. Right after a successful apply, planning again gives an empty plan.

use serde::Serialize;

pub use super::facts::Facts;
use super::steps;
use super::target::Target;
use crate::cli::MesaFrom;
use crate::manifest::{BuildSystem, Manifest, Origin};
use crate::{error, exit};

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

#[derive(Debug, Clone)]
pub struct Options {
    /// Steps to plan (empty: all).
    pub only: Vec<String>,
    pub mesa_from: MesaFrom,
}

impl Options {
    pub fn wants(&self, step: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == step)
    }

    /// True when the user named this step with `--only`.
    pub fn named(&self, step: &str) -> bool {
        self.only.iter().any(|s| s == step)
    }
}

/// A check run after a tool, so a generator that did something unexpected fails the step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "check", rename_all = "kebab-case")]
pub enum Verify {
    /// `default` in this extlinux.conf must name a label whose `linux` line boots `release`.
    ExtlinuxDefaultBoots { path: String, release: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    /// Create or replace a text file.
    WriteFile {
        path: String,
        mode: u32,
        #[serde(skip)]
        content: String,
        /// Unified diff from the current content (empty old side for a new file).
        diff: String,
        new_file: bool,
    },
    /// Rename a file (Radxa disables an overlay as `X.dtbo` -> `X.dtbo.disabled`).
    RenameFile { from: String, to: String },
    /// Point a link somewhere else.
    Symlink {
        path: String,
        target: String,
        was: Option<String>,
    },
    /// Download a pinned file and install it.
    InstallArtifact {
        path: String,
        url: String,
        sha256: String,
        size: u64,
        mode: u32,
        was_sha256: Option<String>,
        description: String,
    },
    /// Run a system tool (found in the root); `changes` are backed up first.
    RunTool {
        tool: String,
        args: Vec<String>,
        changes: Vec<String>,
        /// What the tool is expected to change, as a diff (when predictable).
        preview: Option<String>,
        verify: Option<Verify>,
    },
    /// Download, verify, unpack, patch, build and install a source release into its prefix.
    BuildSource {
        project: String,
        version: String,
        /// `"url": …` or `"pip": {…}` in JSON.
        #[serde(flatten)]
        origin: Origin,
        sha256: String,
        size: u64,
        tree: String,
        system: BuildSystem,
        prefix: String,
        options: Vec<String>,
        patches: Vec<String>,
    },
    /// Download a pinned prebuilt archive and unpack it as the prefix.
    InstallPrebuilt {
        url: String,
        sha256: String,
        size: u64,
        prefix: String,
    },
}

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
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn step_names(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.step.clone()).collect()
    }
}

/// Check `--only` names before anything else happens.
pub fn check_only(only: &[String]) -> anyhow::Result<()> {
    for s in only {
        if !STEP_NAMES.contains(&s.as_str()) {
            return Err(error::fail(
                exit::USAGE,
                format!(
                    "--only: unknown step `{s}` (steps: {})",
                    STEP_NAMES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Compute the plan. Pure: everything it knows comes from its arguments.
pub fn plan(
    facts: &Facts,
    target: &Target,
    manifest: &Manifest,
    opts: &Options,
) -> anyhow::Result<Plan> {
    check_only(&opts.only)?;
    let mut plan = Plan {
        board: target.board.clone(),
        steps: Vec::new(),
        notes: Vec::new(),
    };
    let ctx = steps::Ctx {
        facts,
        target,
        manifest,
        opts,
    };
    for name in STEP_NAMES {
        if !opts.wants(name) {
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

/// Unified diff of two texts, with file names in the header.
pub fn diff(path: &str, old: Option<&str>, new: &str) -> String {
    let old_text = old.unwrap_or("");
    let old_name = if old.is_some() {
        format!("a{path}")
    } else {
        "/dev/null".to_string()
    };
    similar::TextDiff::from_lines(old_text, new)
        .unified_diff()
        .context_radius(2)
        .header(&old_name, &format!("b{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_only_step_is_a_usage_error() {
        let err = check_only(&["kernel".into(), "kernal".into()]).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::USAGE);
        assert!(err.to_string().contains("`kernal`"));
    }

    #[test]
    fn diff_shows_only_the_changed_line_with_context() {
        let d = diff("/e", Some("a\nb\nc\nd\ne\nf\n"), "a\nb\nc\nD\ne\nf\n");
        assert!(d.contains("--- a/e\n+++ b/e\n"), "{d}");
        assert!(d.contains("-d\n+D\n"), "{d}");
        assert!(!d.contains(" a\n"), "context is two lines: {d}");
        let n = diff("/n", None, "x\n");
        assert!(n.contains("--- /dev/null") && n.contains("+x"), "{n}");
    }
}
