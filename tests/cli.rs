//! Command-line contract shared by every verb: usage errors exit 2, help and version work.

use assert_cmd::Command;
use predicates::prelude::*;

fn rvl() -> Command {
    Command::cargo_bin("rvl").unwrap()
}

#[test]
fn help_lists_the_three_verbs() {
    rvl()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("doctor"))
        .stdout(predicate::str::contains("setup"))
        .stdout(predicate::str::contains("smoke-bench"));
}

#[test]
fn usage_errors_exit_2() {
    rvl().arg("frobnicate").assert().code(2);
    rvl().args(["doctor", "--no-such-flag"]).assert().code(2);
    rvl()
        .args(["setup", "--rollback", "--status"])
        .assert()
        .code(2);
    rvl()
        .args(["smoke-bench", "--quick", "--full"])
        .assert()
        .code(2);
    rvl()
        .args(["smoke-bench", "--ubatch", "16,abc"])
        .assert()
        .code(2);
}

#[test]
fn version_matches_the_package() {
    rvl()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains(env!("CARGO_PKG_VERSION")));
}
