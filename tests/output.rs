//! Output conventions every verb shares: a closed stdout ends quietly.

mod common;

use std::process::{Command, Stdio};

use common::fixture_dir;

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
