//! Command-line contract shared by every verb: usage errors exit 2, help and version work.

mod common;

use common::rvl;
use rvl::exit;

#[test]
fn help_lists_the_three_verbs() {
    rvl(&["--help"])
        .run()
        .expect_code(exit::OK)
        .expect_stdout("doctor")
        .expect_stdout("setup")
        .expect_stdout("smoke-bench");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["doctor", "--no-such-flag"],
        &["setup", "--rollback", "--status"],
        &["smoke-bench", "--quick", "--full"],
        &["smoke-bench", "--ubatch", "16,abc"],
    ] {
        rvl(args).run().expect_code(exit::USAGE);
    }
}

#[test]
fn version_matches_the_package() {
    rvl(&["--version"])
        .run()
        .expect_code(exit::OK)
        .expect_stdout(env!("CARGO_PKG_VERSION"));
}
