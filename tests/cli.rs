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

#[test]
fn a_mistyped_board_gets_the_same_suggestion_from_doctor_and_setup() {
    let root = common::fixture_dir("boltzmann-mainline");
    let doctor = rvl(&["doctor", "--no-vulkan", "--board", "boltzman"])
        .root(&root)
        .run()
        .expect_code(exit::USAGE);
    let setup = rvl(&["setup", "--dry-run", "--board", "boltzman"])
        .root(&root)
        .run()
        .expect_code(exit::USAGE);
    let sentence = |out: &str| {
        out.lines()
            .find(|l| l.contains("boltzman`"))
            .unwrap_or_else(|| panic!("no board error in {out}"))
            .to_string()
    };
    let d = sentence(doctor.stderr());
    assert!(
        d.contains("did you mean `boltzmann` (Radxa ROCK 5 ITX / ITX+)?"),
        "{d}"
    );
    assert_eq!(
        d,
        sentence(setup.stderr()),
        "doctor and setup word it differently"
    );
}

#[test]
fn a_mistyped_step_or_check_gets_did_you_mean() {
    let root = common::fixture_dir("boltzmann-mainline");
    rvl(&["setup", "--dry-run", "--only", "kernal"])
        .root(&root)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("unknown step `kernal`, did you mean `kernel`?");
    rvl(&["doctor", "--only", "firmwar"])
        .root(&root)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("unknown check `firmwar`, did you mean `firmware`?");
}
