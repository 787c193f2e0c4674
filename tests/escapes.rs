//! Text that reaches the terminal from files and paths rvl is handed: a manifest's fields and
//! the `--root` directory. A control character or a bidirectional control in a manifest field
//! is refused (exit 3); a path the user named is printed with such characters escaped.

mod common;

use std::path::PathBuf;

use common::roots::{artifacts, copy_tree, firmware_bytes};
use common::{fixture_dir, setup, Output};
use rvl::exit;

/// Nothing that drives a terminal or reorders text on stdout or stderr.
fn assert_no_raw_controls(out: &Output) {
    for (name, text) in [("stdout", out.stdout()), ("stderr", out.stderr())] {
        let bad: Vec<char> = text
            .chars()
            .filter(|c| {
                (c.is_control() && *c != '\n' && *c != '\t')
                    || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}')
                    || ('\u{202a}'..='\u{202e}').contains(c)
                    || ('\u{2066}'..='\u{2069}').contains(c)
            })
            .collect();
        assert!(bad.is_empty(), "{name} holds raw {bad:?}: {out}");
    }
}

/// The test manifest with the firmware's `url:` line replaced by `url` (YAML double-quoted,
/// so escapes such as `\e` and `\u202e` become the characters).
fn manifest_with_url(url: &str) -> (common::roots::Artifacts, PathBuf) {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let path = a.manifest_with_firmware_url(&format!("\"{url}\""), "forged.yaml");
    (a, path)
}

#[test]
fn a_manifest_url_with_terminal_escapes_or_bidi_controls_is_refused_naming_the_field() {
    let fx = common::Fixture::copy("boltzmann-uboot-menu");
    for (url, what) in [
        (
            r"https://example.org/\u202efw.bin\e]0;PWNED\a",
            "url must not contain bidirectional text controls (found U+202E)",
        ),
        (
            r"https://example.org/fw.bin\e]0;PWNED\a",
            "url must not contain control characters",
        ),
        (
            r"https://example.org/\u2066fw.bin",
            "url must not contain bidirectional text controls (found U+2066)",
        ),
    ] {
        let (_a, manifest) = manifest_with_url(url);
        let out = setup(&fx, &manifest)
            .args(&["--board", "boltzmann", "--only", "firmware", "--dry-run"])
            .run()
            .expect_code(exit::BAD_INPUT)
            .expect_stderr("firmware `csffw-test`: ")
            .expect_stderr(what);
        assert_no_raw_controls(&out);
    }
}

#[test]
fn a_root_path_with_an_escape_is_printed_escaped_by_dry_run_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("img\u{1b}]0;PWNED\u{7}\u{202e}x");
    copy_tree(&fixture_dir("boltzmann-uboot-menu"), &root);
    let a = artifacts(&firmware_bytes(), None, &[]);
    for args in [
        &["--board", "boltzmann", "--only", "kernel", "--dry-run"][..],
        &["--status"][..],
    ] {
        let out = setup(&root, &a.manifest)
            .args(args)
            .run()
            .expect_code(exit::OK);
        assert_no_raw_controls(&out);
        assert!(
            out.stdout().contains(r"img\u{1b}]0;PWNED\u{7}\u{202e}x"),
            "{args:?}: {out}"
        );
    }
}
