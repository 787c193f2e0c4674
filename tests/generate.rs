//! `rvl generate`: completions and the man page come from the real CLI definition, so they
//! name every verb and flag; the exit-status table agrees with the constants and the README.

mod common;

use std::process::Command as Process;

use clap::CommandFactory;
use common::rvl;
use rvl::exit;

/// Every visible verb with its visible long flags, read from the clap definition itself.
fn verbs_and_flags() -> Vec<(String, Vec<String>)> {
    rvl::cli::Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| {
            let flags = s
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            (s.get_name().to_string(), flags)
        })
        .collect()
}

#[test]
fn every_shell_completion_names_every_verb_and_flag() {
    for shell in ["bash", "zsh", "fish"] {
        let out = rvl(&["generate", "completions", shell])
            .run()
            .expect_code(exit::OK);
        let script = out.stdout();
        for (verb, flags) in verbs_and_flags() {
            assert!(script.contains(&verb), "{shell}: no {verb}");
            for flag in flags {
                // fish spells long flags as `-l root`, the others as `--root`.
                let fish = format!("-l {}", &flag[2..]);
                assert!(
                    script.contains(&flag) || script.contains(&fish),
                    "{shell}: no {flag} for {verb}"
                );
            }
        }
    }
}

#[test]
fn bash_completion_completes_the_verbs_and_a_verbs_flags() {
    let out = rvl(&["generate", "completions", "bash"]).run();
    let script = out.stdout();
    let complete = |words: &str, cword: usize| {
        let prog = format!(
            "{script}\nCOMP_WORDS=({words}); COMP_CWORD={cword}; _rvl rvl \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = Process::new("bash").arg("-c").arg(prog).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let verbs = complete("rvl ''", 1);
    for verb in ["doctor", "setup", "smoke-bench", "generate"] {
        assert!(verbs.lines().any(|l| l == verb), "{verbs}");
    }
    let flags = complete("rvl setup --roo", 2);
    assert_eq!(flags.lines().collect::<Vec<_>>(), ["--root"], "{flags}");
}

#[test]
fn the_man_page_documents_every_verb_flag_and_exit_status() {
    let out = rvl(&["generate", "man"]).run().expect_code(exit::OK);
    let page = out.stdout();
    assert!(
        page.starts_with(".ie") || page.contains(".TH rvl 1"),
        "{page}"
    );
    for (verb, flags) in verbs_and_flags() {
        let title = format!("rvl {verb}");
        assert!(
            page.contains(&title) || page.contains(&title.replace('-', "\\-")),
            "no {verb}"
        );
        for flag in flags {
            // roff escapes the dashes of option names.
            let escaped = flag.replace('-', "\\-");
            assert!(
                page.contains(&flag) || page.contains(&escaped),
                "no {flag} for {verb}"
            );
        }
    }
    for (code, _) in exit::TABLE {
        assert!(page.contains(&format!("\\fB{code}\\fR")), "no exit {code}");
    }
}

#[test]
fn the_man_page_renders_with_man() {
    if Process::new("man").arg("--version").output().is_err() {
        eprintln!("skipped: man is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("rvl.1");
    let generated = rvl(&["generate", "man"]).run();
    std::fs::write(&page, generated.stdout()).unwrap();
    let out = Process::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("SMOKE-BENCH") && text.contains("EXIT STATUS"),
        "{text}"
    );
}

#[test]
fn the_exit_table_lists_each_status_once_and_matches_the_readme() {
    let codes: Vec<i32> = exit::TABLE.iter().map(|(c, _)| *c).collect();
    let mut sorted = codes.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(codes, sorted, "TABLE out of order or with repeats");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("## Exit status")
        .nth(1)
        .expect("README has an Exit status section");
    let documented: Vec<i32> = section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("| ")?.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(
        documented, codes,
        "README's exit table and exit::TABLE differ"
    );
}

/// The doctor's kernel fixes name `rvl generate kernel-config`, not a path of the source tree
/// that an installed rvl does not have; what it prints is the fragment the check compares with.
#[test]
fn kernel_config_prints_the_fragment_the_kernel_check_uses() {
    let out = rvl(&["generate", "kernel-config"])
        .run()
        .expect_code(exit::OK);
    assert_eq!(out.stdout(), rvl::kernelcfg::PANTHOR_FRAGMENT);
    assert!(out.stdout().contains("CONFIG_DRM_PANTHOR=m"), "{out}");
}
