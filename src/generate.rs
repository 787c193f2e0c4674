//! `rvl generate`: shell completions and the man page, made from the same clap definitions
//! the binary parses with, so they cannot drift from the real flags. Packaging (the .deb)
//! runs it at build time; a user can run it for a shell rvl was not packaged for.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateWhat};
use crate::error::Error;

/// Write what was asked for to `out`.
pub fn run(what: &GenerateWhat, out: &mut dyn Write) -> anyhow::Result<()> {
    let bytes = match what {
        GenerateWhat::Completions { shell } => completions(*shell),
        GenerateWhat::Man => man_page()?,
        GenerateWhat::KernelConfig => crate::kernelcfg::PANTHOR_FRAGMENT.as_bytes().to_vec(),
    };
    out.write_all(&bytes)
        .map_err(|e| Error::io("cannot write the generated file", "stdout", e))?;
    Ok(())
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rvl", &mut buf);
    buf
}

/// `rvl.1` in roff: the top-level page with every verb's options appended, so one `man rvl`
/// shows everything (the verbs are few and a page each would scatter them).
pub fn man_page() -> anyhow::Result<Vec<u8>> {
    let cmd = Cli::command();
    let mut buf = Vec::new();
    let io = |e| Error::Internal(format!("rendering the man page failed: {e}"));
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut buf).map_err(io)?;
    man.render_name_section(&mut buf).map_err(io)?;
    render_synopsis(&mut buf, &cmd, ".SH SYNOPSIS").map_err(io)?;
    man.render_description_section(&mut buf).map_err(io)?;
    man.render_options_section(&mut buf).map_err(io)?;
    for sub in cmd.get_subcommands() {
        let sub = sub.clone().bin_name(format!("rvl {}", sub.get_name()));
        let sub_man = clap_mangen::Man::new(sub.clone());
        writeln!(buf, ".SH \"{}\"", sub.get_name().to_uppercase()).map_err(io)?;
        if let Some(about) = sub.get_about() {
            writeln!(buf, "{}", roff_escape(&about.to_string())).map_err(io)?;
        }
        let mut part = Vec::new();
        render_synopsis(&mut part, &sub, ".SS synopsis").map_err(io)?;
        sub_man.render_options_section(&mut part).map_err(io)?;
        buf.extend_from_slice(demote_sections(&String::from_utf8_lossy(&part)).as_bytes());
    }
    for (title, body) in [
        ("EXAMPLES", EXAMPLES),
        ("FILES", FILES),
        ("ENVIRONMENT", ENVIRONMENT),
    ] {
        writeln!(buf, ".SH {title}").map_err(io)?;
        for (term, text) in body {
            writeln!(
                buf,
                ".TP\n\\fB{}\\fR\n{}",
                roff_escape(term),
                roff_escape(text)
            )
            .map_err(io)?;
        }
    }
    render_exit_statuses(&mut buf).map_err(io)?;
    writeln!(buf, ".SH \"SEE ALSO\"\n{}", SEE_ALSO).map_err(io)?;
    man.render_version_section(&mut buf).map_err(io)?;
    Ok(buf)
}

/// A synopsis that shows each option's value (clap_mangen's lists `[--root]` bare).
fn render_synopsis(buf: &mut Vec<u8>, cmd: &clap::Command, heading: &str) -> std::io::Result<()> {
    let dash = |t: &str| t.replace('-', "\\-");
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    let mut line = format!("\\fB{}\\fR", dash(name));
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| arg.get_id().as_str().to_uppercase(), |v| v.to_string());
        let value = format!("\\fI{}\\fR", dash(&value));
        let word = match (arg.get_short(), arg.get_long()) {
            (_, Some(long)) if arg.get_action().takes_values() => {
                format!("\\fB\\-\\-{}\\fR {value}", dash(long))
            }
            (Some(short), Some(long)) => {
                format!("\\fB\\-{short}\\fR|\\fB\\-\\-{}\\fR", dash(long))
            }
            (None, Some(long)) => format!("\\fB\\-\\-{}\\fR", dash(long)),
            (Some(short), None) => format!("\\fB\\-{short}\\fR"),
            (None, None) => value,
        };
        if arg.is_required_set() {
            line.push_str(&format!(" {word}"));
        } else {
            line.push_str(&format!(" [{word}]"));
        }
    }
    if cmd.has_subcommands() {
        line.push_str(" \\fIVERB\\fR");
    }
    writeln!(buf, "{heading}\n{line}")
}

const EXAMPLES: &[(&str, &str)] = &[
    (
        "rvl doctor",
        "Check this board's GPU stack: kernel, firmware, Mesa, ICD, Vulkan device, clock.",
    ),
    (
        "sudo rvl setup --board boltzmann --dry-run",
        "Show what setup would change on a Radxa ROCK 5 ITX+, with diffs; nothing is written.",
    ),
    (
        "sudo rvl setup --board boltzmann --yes",
        "Apply that plan (kernel, firmware, patched panvk, ICD, environment) in one transaction.",
    ),
    (
        "sudo rvl setup --rollback",
        "Put back everything the last applied run changed.",
    ),
    (
        "rvl setup --root /mnt/img --board boltzmann --yes",
        "Set up a mounted image instead of this system (no sudo on a tree you own).",
    ),
    (
        "rvl smoke-bench --gguf model.gguf",
        "Measure llama.cpp's prefill on the GPU and the CPU, checking the GPU's answers first.",
    ),
    (
        "rvl serve model.gguf",
        "Start llama-server with the ubatch and environment smoke-bench found to work.",
    ),
    (
        "rvl report -o bug.tar.gz",
        "Write a bundle for a bug report (host names, MACs and secrets replaced).",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "/var/lib/rvl/journal.json, /var/lib/rvl/state.json",
        "What setup changed, path by path, for --rollback and --status.",
    ),
    (
        "/var/lib/rvl/backups/",
        "The files setup replaced, with their modes and owners.",
    ),
    (
        "/var/lib/rvl/cache/",
        "Verified downloads, named by sha256.",
    ),
    (
        "/var/lib/rvl/lock",
        "Held while setup runs (one run at a time).",
    ),
    (
        "/var/lib/rvl/logs/",
        "Build logs of the mesa and llama-cpp steps.",
    ),
    (
        "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
        "The ICD of the patched panvk setup installs.",
    ),
    (
        "/etc/environment.d/90-rvl-vulkan.conf",
        "VK_DRIVER_FILES and the panvk variables for every login.",
    ),
    (
        "$XDG_STATE_HOME/rvl/prefill/",
        "smoke-bench --gguf results, read by rvl serve (~/.local/state without XDG_STATE_HOME).",
    ),
];

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RVL_FETCH_ATTEMPTS, RVL_FETCH_STALL_SECS",
        "Tries per download (4) and seconds of silence before a try ends (60).",
    ),
    (
        "RVL_FETCH_MIN_RATE, RVL_FETCH_GRACE_SECS",
        "The lowest average rate a try may keep (16384 bytes/s) once it has run this long (60 s).",
    ),
    (
        "RVL_VULKAN_LIBRARY",
        "Load this libvulkan instead of the system loader.",
    ),
    (
        "RVL_PATCHES_DIR",
        "Read the Mesa and llama.cpp patch series from DIR instead of the built-in copy.",
    ),
    (
        "RVL_BENCH_TILES",
        "Extra tile shapes for smoke-bench to try (BMxBNxBKxTMxTN[xSPLIT][p],...).",
    ),
    (
        "RVL_DTC",
        "The device-tree compiler setup runs instead of dtc from PATH.",
    ),
    (
        "RVL_ROOT_TOOLS",
        "For tests: a directory of host tools that act on the tree RVL_ROOT names.",
    ),
    (
        "NO_COLOR, TERM=dumb",
        "No colour; a locale that is not UTF-8 (LANG=C) also gives ASCII marks.",
    ),
];

const SEE_ALSO: &str = "\\fBvulkaninfo\\fR(1), \\fBllama-server\\fR(1), \\fBansible\\fR(1); /usr/share/doc/rvl/README.md";

/// The documented exit statuses, from the same table the binary uses.
fn render_exit_statuses(buf: &mut Vec<u8>) -> std::io::Result<()> {
    writeln!(buf, ".SH \"EXIT STATUS\"")?;
    for (code, meaning) in crate::exit::TABLE {
        writeln!(buf, ".TP\n\\fB{code}\\fR\n{}", roff_escape(meaning))?;
    }
    Ok(())
}

/// A verb's own SYNOPSIS and OPTIONS become subsections of its section (`.SH` → `.SS`).
fn demote_sections(roff: &str) -> String {
    roff.lines()
        .map(|l| match l.strip_prefix(".SH ") {
            Some(title) => format!(".SS {}\n", title.trim_matches('"').to_lowercase()),
            None => format!("{l}\n"),
        })
        .collect()
}

/// Roff treats a leading `.` or `'` as a request and `\` as an escape.
fn roff_escape(text: &str) -> String {
    let body = text.replace('\\', "\\\\");
    match body.chars().next() {
        Some('.') | Some('\'') => format!("\\&{body}"),
        _ => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_escape_neutralises_requests_and_backslashes() {
        assert_eq!(roff_escape(".TH x"), "\\&.TH x");
        assert_eq!(roff_escape("a\\b"), "a\\\\b");
        assert_eq!(roff_escape("plain"), "plain");
    }

    #[test]
    fn the_page_shows_option_values_and_the_sections_a_packager_expects() {
        let page = String::from_utf8(man_page().unwrap()).unwrap();
        for section in [
            ".SH SYNOPSIS",
            ".SH EXAMPLES",
            ".SH FILES",
            ".SH ENVIRONMENT",
            ".SH \"EXIT STATUS\"",
            ".SH \"SEE ALSO\"",
        ] {
            assert!(page.contains(section), "{section} missing");
        }
        // Each verb's synopsis names what an option takes (clap_mangen's shows `[--root]`).
        assert!(
            page.contains("[\\fB\\-\\-root\\fR \\fIDIR\\fR]"),
            "{}",
            page.lines()
                .filter(|l| l.contains("root"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(page.contains("[\\fB\\-y\\fR|\\fB\\-\\-yes\\fR]"));
        assert!(!page.contains("[\\fB\\-\\-root\\fR]"));
    }

    #[test]
    fn a_verbs_sections_become_subsections() {
        assert_eq!(demote_sections(".SH SYNOPSIS\nx\n"), ".SS synopsis\nx\n");
    }
}
