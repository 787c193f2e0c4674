//! Output conventions every verb shares: a closed stdout ends quietly.

mod common;

use std::process::{Command, Stdio};

use common::{fixture_dir, rvl};

/// `rvl doctor | head -1`: the reader goes away before rvl writes. rvl must not report a
/// broken pipe as an error or a bug; it ends with the verb's own status.
#[test]
fn a_closed_stdout_ends_quietly_in_both_modes() {
    for json in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rvl"));
        cmd.arg("doctor").arg("--root").arg(fixture_dir("x86-host"));
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end at once: every write rvl makes meets EPIPE.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(rvl::exit::PROBLEMS),
            "json={json}: x86-host fails the board check, and that stays the status: {stderr}"
        );
        assert!(
            stderr.is_empty(),
            "json={json}: nothing on stderr for a closed stdout: {stderr}"
        );
    }
}

/// An unknown board's device tree carries escape sequences (a terminal title, a colour, a
/// C1 CSI): the human output shows them escaped, the JSON keeps the exact bytes.
#[test]
fn control_bytes_from_the_image_are_escaped_for_people_and_kept_in_json() {
    let fx = common::Fixture::empty();
    fx.write(
        "sys/firmware/devicetree/base/compatible",
        "evil\u{1b}]0;pwned\u{7},board\0",
    );
    fx.write(
        "sys/firmware/devicetree/base/model",
        "Evil\u{1b}[31m\u{9b}2J Board\nfake line\0",
    );
    let human = common::rvl(&["doctor", "--no-vulkan"]).root(&fx).run();
    let text = human.stdout();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
        "raw control bytes reach the terminal: {text:?}"
    );
    assert!(text.contains(r"\u{1b}]0;pwned\u{7}"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("fake line")), "{text}");
    let json = common::rvl(&["doctor", "--no-vulkan", "--json"])
        .root(&fx)
        .run()
        .stdout_json();
    assert!(
        json.to_string().contains(r"evil\u001b]0;pwned\u0007"),
        "{json}"
    );
}

#[test]
fn under_lang_c_human_output_is_ascii() {
    let out = rvl(&["doctor", "--no-vulkan"])
        .root(fixture_dir("boltzmann-mainline"))
        .args(&["--manifest", "tests/fixtures/stub-manifest.yaml"])
        .env("LANG", "C")
        .run();
    let text = out.stdout();
    assert!(text.is_ascii(), "non-ASCII under LANG=C:\n{text}");
    assert!(text.contains("ok board"), "{text}");
    // A UTF-8 locale keeps the signs (LC_ALL comes first).
    let utf8 = rvl(&["doctor", "--no-vulkan"])
        .root(fixture_dir("boltzmann-mainline"))
        .args(&["--manifest", "tests/fixtures/stub-manifest.yaml"])
        .env("LANG", "C")
        .env("LC_ALL", "en_US.UTF-8")
        .run();
    assert!(utf8.stdout().contains("✓ board"), "{utf8}");
}
