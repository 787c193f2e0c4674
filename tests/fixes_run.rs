//! Doctor never names a fix that setup refuses: on every fixture root, each `rvl …` command a
//! fix names runs as a dry run, as printed, and setup plans it: no usage error, no
//! "unsupported", no bad input, and no step it was asked for comes back blocked (a fix that
//! cannot work yet says what to do first instead of naming the command).

mod common;

use std::path::Path;

use common::rvl;
use rvl::exit;

/// Every fixture root, relative to the checkout (so the fixes name it that way).
fn roots() -> Vec<String> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for dir in ["roots", "setup"] {
        for e in std::fs::read_dir(base.join(dir)).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            // setup/bin holds the tool stand-ins, not a root.
            if e.path().is_dir() && name != "bin" {
                out.push(format!("tests/fixtures/{dir}/{name}"));
            }
        }
    }
    out.sort();
    out
}

/// The rvl commands in a fix: from `rvl ` up to the end of its clause (`(`, `)`, `;`, `, `).
fn rvl_commands(fix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = fix;
    while let Some(i) = rest.find("rvl setup ") {
        let tail = &rest[i + "rvl ".len()..];
        let end = [tail.find([';', '(', ')', '`']), tail.find(", ")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(tail.len());
        let words: Vec<String> = tail[..end].split_whitespace().map(str::to_string).collect();
        assert!(
            !words.iter().any(|w| w.contains('\'')),
            "a quoted word; this test splits on spaces: {fix}"
        );
        out.push(words);
        rest = &tail[end..];
    }
    out
}

#[test]
fn every_rvl_command_a_fix_names_is_planned_by_setup() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for root in roots() {
        let doc = rvl(&["doctor", "--no-vulkan", "--json", "--root", &root])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .run()
            .stdout_json();
        for c in doc["checks"].as_array().unwrap() {
            let Some(fix) = c["fix"].as_str() else {
                continue;
            };
            for words in rvl_commands(fix) {
                let args: Vec<&str> = words.iter().map(String::as_str).collect();
                let only = args
                    .iter()
                    .position(|a| *a == "--only")
                    .map(|i| args[i + 1].split(',').collect::<Vec<_>>())
                    .unwrap_or_default();
                let out = rvl(&args)
                    .args(&["--dry-run", "--json"])
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .run();
                checked += 1;
                let line = format!("{root}: {}: `rvl {}`", c["id"], args.join(" "));
                match out.code() {
                    exit::OK => {}
                    exit::BLOCKED => {
                        let plan = out.stdout_json();
                        for b in plan["plan"]["blocked"].as_array().unwrap() {
                            let step = b["step"].as_str().unwrap();
                            if only.contains(&step) {
                                wrong.push(format!("{line}: {step} blocked: {}", b["why"]));
                            }
                        }
                    }
                    code => wrong.push(format!("{line}: exit {code}: {}", out.stderr())),
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} fixes named rvl setup");
    assert!(
        wrong.is_empty(),
        "fixes setup refuses:\n{}",
        wrong.join("\n")
    );
}
