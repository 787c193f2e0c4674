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
    man.render_synopsis_section(&mut buf).map_err(io)?;
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
        sub_man.render_synopsis_section(&mut part).map_err(io)?;
        sub_man.render_options_section(&mut part).map_err(io)?;
        buf.extend_from_slice(demote_sections(&String::from_utf8_lossy(&part)).as_bytes());
    }
    render_exit_statuses(&mut buf).map_err(io)?;
    man.render_version_section(&mut buf).map_err(io)?;
    Ok(buf)
}

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
    fn a_verbs_sections_become_subsections() {
        assert_eq!(demote_sections(".SH SYNOPSIS\nx\n"), ".SS synopsis\nx\n");
    }
}
