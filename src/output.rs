//! Shared output conventions: data on stdout, progress and logs on stderr, colour only on a
//! terminal and never with `NO_COLOR` (https://no-color.org) or `TERM=dumb`, JSON with a
//! `schema_version` and nothing else on stdout.
//!
//! Low in the crate: imports only [`crate::validate`], so any module may print through it.
//! How an error fills its [`ErrorReport`] is [`crate::error`]'s (which imports this module).

use std::io::Write;

/// Version of every `--json` document rvl prints. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// How human output may be decorated.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    pub color: bool,
}

impl Style {
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

/// Progress reporting for long work, decided once from the settings
/// ([`crate::settings::Settings::progress_style`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A progress bar redrawn on stderr (a terminal).
    Bar,
    /// One line when a stage starts and ends (a log file or pipe).
    Lines,
    /// Nothing (tests, `--json` runs without a terminal).
    Quiet,
}

impl Progress {
    /// Whether anything at all is reported.
    pub fn shown(self) -> bool {
        self != Progress::Quiet
    }
}

/// What a verb hands back to `main`: data that renders both ways and knows its exit status.
/// `main` prints it once, as text or inside an [`Envelope`].
pub trait Outcome: serde::Serialize {
    /// The documented exit status of this outcome (see [`crate::exit`]).
    fn exit_code(&self) -> i32;
    /// Human output for stdout (short and scannable).
    fn human(&self, style: Style) -> String;
}

/// The one shape of every `--json` document: the same four fields first, then the verb's own
/// (flattened, so a verb's fields never nest under a key). Errors come in it too, with an
/// `error` object as the verb's fields. Schema: docs/json.md.
#[derive(Debug, serde::Serialize)]
pub struct Envelope<'a, T: serde::Serialize> {
    pub schema_version: u32,
    pub rvl_version: &'static str,
    /// The verb: "doctor", "setup", "status", "smoke-bench" or "report".
    pub command: &'a str,
    pub exit_code: i32,
    #[serde(flatten)]
    pub body: &'a T,
}

impl<'a, T: serde::Serialize> Envelope<'a, T> {
    pub fn new(command: &'a str, exit_code: i32, body: &'a T) -> Self {
        Envelope {
            schema_version: SCHEMA_VERSION,
            rvl_version: env!("CARGO_PKG_VERSION"),
            command,
            exit_code,
            body,
        }
    }
}

/// The verb fields of an error envelope.
#[derive(Debug, serde::Serialize)]
pub struct ErrorBody {
    pub error: ErrorReport,
}

#[derive(Debug, serde::Serialize)]
pub struct ErrorReport {
    /// Stable name of the error's kind ([`crate::error::Error::kind`]), "other" when untyped.
    pub kind: &'static str,
    /// The sentence a person reads.
    pub message: String,
    /// What led to it, outermost first.
    pub causes: Vec<String>,
}

// `ErrorReport::from_error` is in `crate::error`, which knows an error's chain.
impl ErrorReport {
    /// The error for a person: the sentence, then one line per cause. Messages quote paths
    /// and text from the inspected tree, so control bytes are escaped here, for the terminal;
    /// the JSON document keeps the exact strings.
    pub fn human(&self) -> String {
        let mut out = format!("rvl: error: {}\n", escape_control(&self.message));
        for cause in &self.causes {
            out.push_str(&format!("  caused by: {}\n", escape_control(cause)));
        }
        out
    }
}

/// Control bytes (other than newline and tab) and bidirectional text controls as `\u{..}`
/// escapes, so text taken from a hostile file cannot move the cursor, recolour a terminal or
/// reorder what is read when printed.
pub fn escape_control(text: &str) -> String {
    let unsafe_char = |c: char| crate::validate::is_unsafe_char(c) && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if unsafe_char(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// [`escape_control`] for a field printed on one line: newlines are escaped too, so a value
/// read from an image cannot start a line that looks like rvl's own (`✓ gpu-driver …`).
pub fn escape_line(text: &str) -> String {
    escape_control(&text.replace('\n', "\\n"))
}

/// Print text on stdout. A closed stdout (`rvl doctor | head -1`) ends the output quietly,
/// as `cat` does: the reader has what it wanted, and the verb's status still stands.
/// The non-ASCII signs rvl's human output uses, spelt in ASCII (for `LANG=C` terminals).
const ASCII_SIGNS: &[(char, &str)] = &[
    ('✓', "ok"),
    ('✗', "x"),
    ('→', "->"),
    ('←', "<-"),
    ('…', "..."),
    ('≥', ">="),
    ('≤', "<="),
    ('—', "-"),
    ('–', "-"),
    ('−', "-"),
    ('×', "x"),
    ('±', "+/-"),
    ('·', "."),
];

/// `text` with rvl's own signs spelt in ASCII; anything else (a file name) is left as it is.
pub fn to_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match ASCII_SIGNS.iter().find(|(sign, _)| *sign == c) {
            Some((_, ascii)) => out.push_str(ascii),
            None => out.push(c),
        }
    }
    out
}

pub fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Print a JSON document on stdout (pretty, one trailing newline).
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
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

/// ", did you mean `X`?" for the known word closest to a mistyped one (Jaro-Winkler above 0.8,
/// as clap and `--board` use), or "" when none is close enough to help.
pub fn did_you_mean<'a>(typed: &str, known: impl Iterator<Item = &'a str>) -> String {
    known
        .map(|k| (strsim::jaro_winkler(typed, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(", did you mean `{k}`?"))
        .unwrap_or_default()
}

/// `n` and the noun, plural unless `n` is 1: "1 command buffer", "3 command buffers",
/// "2 dispatches". Regular English plurals only; rvl's nouns need no more.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if ["s", "x", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// A measured number with at least 3 significant digits, so small rates do not print as `0.0`
/// (0.0123, 1.23, 12.3, 123; larger values keep every integer digit: 1422).
pub fn sig3(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let decimals = |x: f64| (2 - x.abs().log10().floor() as i32).max(0) as usize;
    let d = decimals(v);
    // Rounding can carry into the next power of ten (9.996 -> 10.00): one digit fewer then.
    let rounded: f64 = format!("{v:.d$}").parse().unwrap_or(v);
    let d = decimals(rounded).min(d);
    format!("{rounded:.d$}")
}

/// A span of time in the largest unit that keeps it readable: 250 ms, 12.3 s, 1.5 min, 32 h,
/// 3.1 days (never "116487 s").
pub fn duration(secs: f64) -> String {
    const MIN: f64 = 60.0;
    const HOUR: f64 = 3600.0;
    const DAY: f64 = 86400.0;
    // One decimal while the number is small, none once it has two digits.
    let unit = |v: f64, name: &str| {
        if v < 10.0 {
            format!("{v:.1} {name}")
        } else {
            format!("{v:.0} {name}")
        }
    };
    if !secs.is_finite() {
        format!("{secs} s")
    } else if secs < 1.0 {
        format!("{:.0} ms", secs * 1e3)
    } else if secs < MIN {
        format!("{} s", sig3(secs))
    } else if secs < HOUR {
        unit(secs / MIN, "min")
    } else if secs < 2.0 * DAY {
        unit(secs / HOUR, "h")
    } else {
        unit(secs / DAY, "days")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_escaped_but_newlines_kept() {
        assert_eq!(escape_control("a\x1b[31mb\nc"), "a\\u{1b}[31mb\nc");
        assert_eq!(escape_control("plain"), "plain");
        assert_eq!(escape_line("a\n\u{9b}b\tc"), "a\\n\\u{9b}b\tc");
    }

    #[test]
    fn an_error_is_escaped_for_the_terminal_but_exact_in_json() {
        let err = anyhow::Error::from(crate::error::Error::Usage("board \x1b]0;pwned\x07".into()))
            .context("reading \x1b[2Jthe tree");
        let report = ErrorReport::from_error(&err);
        assert_eq!(report.message, "reading \x1b[2Jthe tree");
        assert_eq!(report.causes, ["board \x1b]0;pwned\x07"]);
        assert_eq!(
            report.human(),
            "rvl: error: reading \\u{1b}[2Jthe tree\n  caused by: board \\u{1b}]0;pwned\\u{7}\n"
        );
    }

    #[test]
    fn the_envelope_puts_its_fields_before_the_verbs() {
        #[derive(serde::Serialize)]
        struct Body {
            mode: &'static str,
        }
        let text =
            serde_json::to_string(&Envelope::new("setup", 0, &Body { mode: "plan" })).unwrap();
        assert!(
            text.starts_with(r#"{"schema_version":1,"rvl_version":""#),
            "{text}"
        );
        assert!(
            text.ends_with(r#""command":"setup","exit_code":0,"mode":"plan"}"#),
            "{text}"
        );
    }

    #[test]
    fn indented_tail_keeps_the_last_non_blank_lines() {
        assert_eq!(indented_tail("a\n\nb\nc\n\n", 2), "    b\n    c");
        assert_eq!(indented_tail("", 3), "");
        assert_eq!(indented_tail("only", 5), "    only");
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "command buffer"), "1 command buffer");
        assert_eq!(count(0, "command buffer"), "0 command buffers");
        assert_eq!(count(12, "dispatch"), "12 dispatches");
        assert_eq!(count(2, "Vulkan device"), "2 Vulkan devices");
    }

    #[test]
    fn small_rates_keep_three_significant_digits() {
        assert_eq!(sig3(0.0123), "0.0123");
        assert_eq!(sig3(0.1), "0.100");
        assert_eq!(sig3(0.04567), "0.0457");
        assert_eq!(sig3(1.234), "1.23");
        assert_eq!(sig3(12.34), "12.3");
        assert_eq!(sig3(123.4), "123");
        assert_eq!(sig3(1422.4), "1422");
        assert_eq!(sig3(9.996), "10.0");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(-2.5), "-2.50");
    }

    #[test]
    fn durations_use_the_largest_readable_unit() {
        assert_eq!(duration(0.25), "250 ms");
        assert_eq!(duration(1.5), "1.50 s");
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(90.0), "1.5 min");
        assert_eq!(duration(1800.0), "30 min");
        assert_eq!(duration(116487.0), "32 h");
        assert_eq!(duration(5400.0), "1.5 h");
        assert_eq!(duration(3.0 * 86400.0), "3.0 days");
        assert_eq!(duration(40.0 * 86400.0), "40 days");
    }
}
