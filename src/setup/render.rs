//! Human output of a plan: numbered steps, one line per action, the diff of every text file.

use std::fmt::Write;

use super::action::{Action, BuildToolKind, Verify};
use super::plan::Plan;
use crate::manifest::Origin;
use crate::output::{escape_line, Style};

pub fn plan_text(plan: &Plan, root_desc: &str, style: Style) -> String {
    let mut s = String::new();
    if plan.is_done() {
        let _ = writeln!(
            s,
            "{} {} is set up for {}: nothing to do.",
            style.green("✓"),
            escape_line(root_desc),
            escape_line(&plan.board)
        );
    } else if plan.is_empty() {
        let _ = writeln!(
            s,
            "Nothing setup can apply for {} on {}:",
            style.bold(&escape_line(&plan.board)),
            escape_line(root_desc)
        );
    } else {
        let _ = writeln!(
            s,
            "Plan for {} on {}:",
            style.bold(&escape_line(&plan.board)),
            escape_line(root_desc)
        );
        for (i, step) in plan.steps.iter().enumerate() {
            let _ = writeln!(
                s,
                "\n{:>2}. {} — {}",
                i + 1,
                style.bold(&escape_line(&step.step)),
                escape_line(&step.summary)
            );
            for a in &step.actions {
                action_text(&mut s, a, style);
            }
        }
    }
    blocked_text(&mut s, plan, style);
    if !plan.notes.is_empty() {
        let _ = writeln!(s);
        for n in &plan.notes {
            let _ = writeln!(s, "{} {}", style.yellow("note:"), escape_line(n));
        }
    }
    s
}

/// One "✗ STEP blocked" line per step setup cannot carry out, with what unblocks it.
pub fn blocked_text(s: &mut String, plan: &Plan, style: Style) {
    if plan.blocked.is_empty() {
        return;
    }
    let _ = writeln!(s);
    for b in &plan.blocked {
        // Why and fix may quote the image's files (a setting's value, a tool's message).
        let _ = writeln!(
            s,
            "{} {} blocked: {}",
            style.red("✗"),
            escape_line(&b.step),
            escape_line(&b.why)
        );
        let _ = writeln!(s, "    fix: {}", escape_line(&b.fix));
    }
}

fn action_text(s: &mut String, a: &Action, style: Style) {
    match a {
        Action::WriteFile {
            path,
            diff,
            new_file,
            ..
        } => {
            let verb = if *new_file { "create" } else { "edit" };
            let _ = writeln!(s, "    {verb} {}", escape_line(path));
            diff_text(s, diff, style);
        }
        Action::InstallOverlay {
            path,
            name,
            size,
            sha256,
            ..
        } => {
            let _ = writeln!(
                s,
                "    install {} (rvl's overlay {}, compiled by dtc: {size} bytes, sha256 {})",
                escape_line(path),
                escape_line(name),
                escape_line(&sha256[..16.min(sha256.len())])
            );
        }
        Action::RenameFile { from, to } => {
            let _ = writeln!(s, "    rename {} -> {}", escape_line(from), escape_line(to));
        }
        Action::Symlink { path, target, was } => {
            let _ = writeln!(
                s,
                "    link {} -> {} (was {})",
                escape_line(path),
                escape_line(target),
                escape_line(was.as_deref().unwrap_or("absent"))
            );
        }
        Action::InstallArtifact {
            path,
            url,
            size,
            sha256,
            was_sha256,
            description,
            ..
        } => {
            let _ = writeln!(
                s,
                "    install {} ({}, {size} bytes, sha256 {})",
                escape_line(path),
                escape_line(description),
                escape_line(sha256.get(..16).unwrap_or(sha256))
            );
            let _ = writeln!(s, "      from {}", escape_line(url));
            if let Some(w) = was_sha256 {
                let _ = writeln!(
                    s,
                    "      replacing a file with unknown sha256 {}",
                    escape_line(w.get(..16).unwrap_or(w))
                );
            }
        }
        Action::RunTool {
            tool,
            args,
            changes,
            preview,
            verify,
            on_board,
        } => {
            let cmd = std::iter::once(tool.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            if *on_board {
                let _ = writeln!(
                    s,
                    "    leave `sudo {}` for the board (rvl does not run an image's programs on this machine)",
                    escape_line(&cmd)
                );
                return;
            }
            let _ = writeln!(
                s,
                "    run `{}` (rewrites {})",
                escape_line(&cmd),
                escape_line(&changes.join(", "))
            );
            if let Some(p) = preview {
                diff_text(s, p, style);
            }
            if let Some(Verify::ExtlinuxDefaultBoots { path, release }) = verify {
                let _ = writeln!(
                    s,
                    "      then check that `default` in {} boots {}",
                    escape_line(path),
                    escape_line(release)
                );
            }
        }
        Action::BuildSource {
            origin,
            size,
            system,
            prefix,
            patches,
            ..
        } => {
            let from = match origin {
                Origin::Url(url) => format!("download {url}"),
                Origin::Pip(pip) => format!("pip download {}", pip.requirement),
            };
            let size = size.map_or("size not pinned".to_string(), |n| format!("{n} bytes"));
            let _ = writeln!(
                s,
                "    {} ({size}, sha256 checked), unpack",
                escape_line(&from)
            );
            if patches.is_empty() {
                let _ = writeln!(s, "    no patches in the series");
            } else {
                let _ = writeln!(s, "    apply {}", escape_line(&patches.join(", ")));
            }
            let _ = writeln!(
                s,
                "    build with {system} and install into {}",
                escape_line(prefix)
            );
        }
        Action::InstallPackages { packages, purpose } => {
            let _ = writeln!(
                s,
                "    apt-get install --no-install-recommends {} ({purpose}; marked automatic, so `apt autoremove` takes them back)",
                packages.join(" ")
            );
        }
        Action::BuildTool {
            tool,
            version,
            dir,
            archives,
        } => {
            for a in archives {
                let _ = writeln!(
                    s,
                    "    download {} ({} bytes, sha256 checked)",
                    a.url, a.size
                );
            }
            let what = match tool {
                BuildToolKind::MesonVenv => format!("install meson {version} into a venv at {dir}"),
                BuildToolKind::SpirvTools => {
                    format!("build SPIRV-Tools {version} static (cmake + ninja) into {dir}")
                }
            };
            let _ = writeln!(s, "    {what} (a build-only cache, kept for later builds)");
        }
        Action::InstallArchive {
            archive, prefix, ..
        } => {
            let _ = writeln!(
                s,
                "    check {} ({} bytes, sha256 {}), unpack into {prefix}",
                escape_line(&archive.file),
                archive.size,
                &archive.sha256[..16]
            );
        }
        Action::InstallPrebuilt { url, prefix, .. } => {
            let _ = writeln!(
                s,
                "    download {} (sha256 checked) and unpack into {}",
                escape_line(url),
                escape_line(prefix)
            );
        }
    }
}

/// A diff of a file from the image: each line escaped, then coloured.
fn diff_text(s: &mut String, diff: &str, style: Style) {
    for line in diff.lines() {
        let line = &escape_line(line);
        let painted = if line.starts_with("+++") || line.starts_with("---") {
            style.dim(line)
        } else if line.starts_with('+') {
            style.green(line)
        } else if line.starts_with('-') {
            style.red(line)
        } else if line.starts_with("@@") {
            style.dim(line)
        } else {
            line.to_string()
        };
        let _ = writeln!(s, "      {painted}");
    }
}
