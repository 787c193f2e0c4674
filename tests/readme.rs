//! README.md's examples are checked against the binary, so they cannot go stale:
//! - a fenced block after `<!-- output: ARGS -->` is exactly what `rvl ARGS` prints on stdout,
//!   run from the repository root;
//! - a fenced block after `<!-- json: ARGS -->` is an abbreviated `--json` document: every key
//!   and value it shows is in the real one (`…` stands for what is left out);
//! - every `rvl VERB … --flag` in a code block or an inline code span names a flag VERB has.
//!
//! `RVL_BLESS=1 cargo test --test readme` rewrites the `output:` blocks from the binary.
//! (The quick start's commands are run by `scripts/readme-quickstart.sh`.)

mod common;

use std::path::Path;

use clap::CommandFactory;
use common::rvl;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");

/// One checked example: its marker kind, its arguments, and where its block's body sits.
struct Example {
    kind: String,
    args: Vec<String>,
    /// Byte range of the block's body (between the fence lines).
    body: std::ops::Range<usize>,
    line: usize,
}

fn examples(text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut offset = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut starts = Vec::with_capacity(lines.len());
    for l in &lines {
        starts.push(offset);
        offset += l.len();
    }
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.trim().strip_prefix("<!-- ") else {
            continue;
        };
        let Some(rest) = rest.strip_suffix(" -->") else {
            continue;
        };
        let Some((kind, args)) = rest.split_once(": ") else {
            continue;
        };
        if kind != "output" && kind != "json" {
            continue;
        }
        assert!(
            lines.get(i + 1).is_some_and(|f| f.starts_with("```")),
            "README.md:{}: `{kind}:` marker not followed by a fenced block",
            i + 1
        );
        let close = (i + 2..lines.len())
            .find(|&k| lines[k].trim_end() == "```")
            .unwrap_or_else(|| panic!("README.md:{}: unclosed block", i + 2));
        out.push(Example {
            kind: kind.to_string(),
            args: args.split_whitespace().map(str::to_string).collect(),
            body: starts[i + 2]..starts[close],
            line: i + 1,
        });
    }
    out
}

fn run(args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = rvl(&args)
        .env("LANG", "C.UTF-8")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .run();
    assert!(
        matches!(out.code(), 0 | 1 | 11),
        "`rvl {}` failed: {}",
        args.join(" "),
        out.stderr()
    );
    out.stdout().to_string()
}

#[test]
fn every_output_example_is_what_the_binary_prints() {
    let text = std::fs::read_to_string(README).unwrap();
    let bless = std::env::var_os("RVL_BLESS").is_some();
    let mut blessed = text.clone();
    let mut stale = Vec::new();
    // Back to front, so blessing one block leaves the offsets of the earlier ones valid.
    let mut checked = 0;
    for ex in examples(&text).iter().rev().filter(|e| e.kind == "output") {
        let real = run(&ex.args);
        checked += 1;
        if text[ex.body.clone()] != real {
            stale.push(format!(
                "README.md:{}: `rvl {}` now prints:\n{real}",
                ex.line,
                ex.args.join(" ")
            ));
            blessed.replace_range(ex.body.clone(), &real);
        }
    }
    assert!(checked >= 3, "README has {checked} output examples");
    if bless && !stale.is_empty() {
        std::fs::write(README, blessed).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "{}\n(RVL_BLESS=1 cargo test --test readme rewrites them)",
        stale.join("\n")
    );
}

/// The example made parseable: `{…}` and `[…]` become the string "…", a trailing `, …` goes.
fn parse_abbreviated(body: &str) -> serde_json::Value {
    let mut s = body.replace("{…}", "\"…\"").replace("[…]", "\"…\"");
    while let Some(i) = s.find(", …") {
        s.replace_range(i..i + ", …".len(), "");
    }
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("README's JSON example: {e}\n{s}"))
}

/// Every key and value `shown` has is in `real`; "…" matches anything.
fn covered(shown: &serde_json::Value, real: &serde_json::Value, at: &str) -> Result<(), String> {
    use serde_json::Value;
    match (shown, real) {
        (Value::String(s), _) if s == "…" => Ok(()),
        (Value::Object(a), Value::Object(b)) => a.iter().try_for_each(|(k, v)| match b.get(k) {
            Some(r) => covered(v, r, &format!("{at}/{k}")),
            None => Err(format!("{at}/{k} is not in the real document")),
        }),
        (Value::Array(a), Value::Array(b)) => a.iter().enumerate().try_for_each(|(i, v)| {
            b.get(i)
                .ok_or_else(|| format!("{at}/{i} is not in the real document"))
                .and_then(|r| covered(v, r, &format!("{at}/{i}")))
        }),
        _ if shown == real => Ok(()),
        _ => Err(format!("{at}: README shows {shown}, rvl prints {real}")),
    }
}

#[test]
fn every_json_example_is_part_of_the_real_document() {
    let text = std::fs::read_to_string(README).unwrap();
    let mut n = 0;
    for ex in examples(&text).iter().filter(|e| e.kind == "json") {
        let shown = parse_abbreviated(&text[ex.body.clone()]);
        let real: serde_json::Value = serde_json::from_str(&run(&ex.args)).unwrap();
        if let Err(e) = covered(&shown, &real, "") {
            panic!("README.md:{}: {e}", ex.line);
        }
        n += 1;
    }
    assert!(n >= 1);
}

/// The verb's long flags, from the clap definition the binary parses with.
fn flags_of(verb: &str) -> Option<Vec<String>> {
    let cmd = rvl::cli::Cli::command();
    let sub = cmd.find_subcommand(verb)?;
    let mut flags: Vec<String> = sub
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    flags.extend(["--help".into(), "--version".into()]);
    Some(flags)
}

/// `rvl VERB …` commands of the README: in code blocks (with their indented continuation lines)
/// and in inline code spans. (line number, verb, the text after the verb)
fn commands(text: &str) -> Vec<(usize, String, String)> {
    let mut out: Vec<(usize, String, String)> = Vec::new();
    let mut in_block = false;
    let verb_at = |s: &str| -> Option<(String, String)> {
        let i = s.find("rvl ")?;
        // `rvl-llama-server` and prose like "rvl is" are not commands.
        if i > 0 && !s[..i].ends_with([' ', '`', '(']) {
            return None;
        }
        let rest = &s[i + 4..];
        let verb: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        flags_of(&verb)?;
        Some((verb.clone(), rest[verb.len()..].to_string()))
    };
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let code = line.split(" # ").next().unwrap_or(line);
            if let Some((verb, rest)) = verb_at(code) {
                out.push((n + 1, verb, rest));
            } else if line.starts_with(' ') && line.trim_start().starts_with('[') {
                if let Some(last) = out.last_mut().filter(|l| l.0 == n) {
                    last.2.push(' ');
                    last.2.push_str(line);
                    last.0 = n + 1;
                }
            }
        } else {
            for span in line.split('`').skip(1).step_by(2) {
                if let Some((verb, rest)) = verb_at(span) {
                    out.push((n + 1, verb, rest));
                }
            }
        }
    }
    out
}

#[test]
fn every_rvl_command_in_the_readme_uses_flags_its_verb_has() {
    let text = std::fs::read_to_string(README).unwrap();
    let cmds = commands(&text);
    assert!(cmds.len() > 20, "found only {} commands", cmds.len());
    let mut wrong = Vec::new();
    for (line, verb, rest) in cmds {
        let known = flags_of(&verb).unwrap();
        // After ` -- ` come another program's arguments (serve's EXTRA).
        let own = rest.split(" -- ").next().unwrap_or(&rest);
        for word in own.split(|c: char| c.is_whitespace() || "[]|,`()".contains(c)) {
            let flag = word.split('=').next().unwrap_or(word);
            if flag.starts_with("--") && flag.len() > 2 && !known.iter().any(|k| k == flag) {
                wrong.push(format!("README.md:{line}: rvl {verb} has no {flag}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_readme_cites_no_file_outside_the_repository() {
    let text = std::fs::read_to_string(README).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (n, line) in text.lines().enumerate() {
        assert!(
            !line.contains("../"),
            "README.md:{}: cites a path outside the clone: {line}",
            n + 1
        );
    }
    // Every docs/ file it names exists.
    for word in text.split(['`', ' ', '(', ')', ',', ';']) {
        let word = word.trim_end_matches(['.', ':']);
        if word.starts_with("docs/") && word.ends_with(".md") {
            assert!(
                root.join(word).is_file(),
                "README names {word}, not in the repository"
            );
        }
    }
}

#[test]
fn the_board_table_lists_every_profile_with_its_matches_and_aliases() {
    let text = std::fs::read_to_string(README).unwrap();
    let profiles = rvl::profile::Profiles::builtin().unwrap();
    let ticked = |v: &[String]| {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for p in profiles.all() {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", p.id)))
            .unwrap_or_else(|| panic!("README's board table has no row for {}", p.id));
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells[2], ticked(&p.matches), "{row}");
        let aliases = if p.aliases.is_empty() {
            "—".to_string()
        } else {
            ticked(&p.aliases)
        };
        assert_eq!(cells[3], aliases, "{row}");
    }
}
