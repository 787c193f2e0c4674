//! Shared output conventions: data on stdout, progress and logs on stderr, colour only on a
//! terminal and never with `NO_COLOR` (https://no-color.org) or `TERM=dumb`, JSON with a
//! `schema_version` and nothing else on stdout.

use std::io::{IsTerminal, Write};

/// Version of every `--json` document rvl prints. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// How human output may be decorated.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// Decide from the environment whether stdout gets colour.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Style {
            color: !no_color && !dumb && std::io::stdout().is_terminal(),
        }
    }

    pub fn plain() -> Self {
        Style { color: false }
    }

    /// Wrap `text` in an ANSI SGR sequence when colour is on.
    pub fn paint(&self, sgr: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    pub fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    pub fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    pub fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    pub fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
}

/// Print a JSON document on stdout (pretty, one trailing newline).
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// True when stdin and stderr are terminals, i.e. a person can answer a prompt.
pub fn can_prompt() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The last `n` non-blank lines of a tool's output, indented, for an error message.
pub fn indented_tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indented_tail_keeps_the_last_non_blank_lines() {
        assert_eq!(indented_tail("a\n\nb\nc\n\n", 2), "    b\n    c");
        assert_eq!(indented_tail("", 3), "");
        assert_eq!(indented_tail("only", 5), "    only");
    }
}
