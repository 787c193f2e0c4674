//! `rvl smoke-bench --quick` keeps its word: `--help` says "about 15 s on lavapipe", and the
//! run, as a new user starts it (the default model, every default ubatch, the CPU baseline),
//! must finish within twice that on lavapipe. Its own test binary, so no other test shares the
//! cores while it is timed (cargo runs test binaries one after another). Issue 15 asked for
//! this bound after a run of 52 s; the screening budget then skipped nothing for time.
#![cfg(feature = "bench")]

mod common;

use std::time::{Duration, Instant};

use common::rvl;
use rvl::exit;

/// What `--help` promises for `--quick` on lavapipe.
const STATED: Duration = Duration::from_secs(15);

#[test]
fn a_quick_run_on_lavapipe_ends_within_twice_the_time_its_help_states() {
    if common::vulkan_instance().is_none() {
        return;
    }
    let help = rvl(&["smoke-bench", "--help"]).run();
    assert!(
        help.stdout().contains("about 15 s on lavapipe"),
        "--help no longer states 15 s; update STATED: {}",
        help.stdout()
    );
    let started = Instant::now();
    let out = rvl(&["smoke-bench", "--quick"]).run().expect_code(exit::OK);
    let took = started.elapsed();
    assert!(
        took <= 2 * STATED,
        "--quick took {:.1} s, over twice the {} s --help states",
        took.as_secs_f64(),
        STATED.as_secs()
    );
    // The budget is what keeps it short: what it skipped for time is said in the human output.
    assert!(
        out.stdout().contains("skipped for time:") && out.stdout().contains("--full runs them all"),
        "{}",
        out.stdout()
    );
}
