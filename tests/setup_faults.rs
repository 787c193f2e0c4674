//! Crash safety: stop `rvl setup` at every write and after every step (RVL_FAULT), then prove
//! that each path is either in its old or its new state (never torn), that `--status` reports
//! the interrupted run, that the next run recovers and reaches exactly the state an
//! uninterrupted run reaches, and that rollback still restores the original tree.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::roots::{
    artifacts, assert_same, changed, firmware_bytes, fixture, rvl, snapshot, Node,
};
use predicates::prelude::*;

const FAULT_EXIT: i32 = 99;

struct Case {
    fixture: &'static str,
    board: &'static str,
    only: &'static str,
}

const CASES: [Case; 3] = [
    Case {
        fixture: "boltzmann-uboot-menu",
        board: "boltzmann",
        only: "kernel,firmware,access",
    },
    Case {
        fixture: "boltzmann-extlinux",
        board: "boltzmann",
        only: "kernel,firmware,access",
    },
    Case {
        fixture: "ampere-armbian",
        board: "ampere",
        only: "kernel,firmware,access",
    },
];

fn apply(root: &Path, manifest: &Path, c: &Case, fault: Option<&str>) -> std::process::Output {
    let mut cmd = rvl(root, manifest);
    cmd.args(["--board", c.board, "--only", c.only, "--yes"])
        .env("SUDO_USER", "rock");
    if let Some(f) = fault {
        cmd.env("RVL_FAULT", f);
    }
    cmd.output().unwrap()
}

/// The state an uninterrupted apply reaches.
fn new_state(c: &Case, manifest: &Path) -> BTreeMap<String, Node> {
    let (_d, root) = fixture(c.fixture);
    let out = apply(&root, manifest, c, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    snapshot(&root)
}

/// Every path is as it was or as the finished run leaves it (temp files aside).
fn assert_old_or_new(
    now: &BTreeMap<String, Node>,
    old: &BTreeMap<String, Node>,
    new: &BTreeMap<String, Node>,
    at: &str,
) {
    for path in changed(now, old) {
        if path.contains(".rvl-new") {
            continue; // a staged temp file is not the path itself; recovery removes it
        }
        assert_eq!(
            now.get(&path),
            new.get(&path),
            "{at}: {path} is neither its old nor its new state"
        );
    }
}

/// Recover with a second run and check it ends where an uninterrupted run ends; then roll back.
fn recover_and_check(
    root: &Path,
    manifest: &Path,
    c: &Case,
    old: &BTreeMap<String, Node>,
    new: &BTreeMap<String, Node>,
    at: &str,
) {
    let out = apply(root, manifest, c, None);
    assert!(
        out.status.success(),
        "{at}: the run after the crash failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = snapshot(root);
    assert!(
        changed(&after, new).is_empty(),
        "{at}: recovered tree differs at {:?}",
        changed(&after, new)
    );
    rvl(root, manifest).arg("--rollback").assert().success();
    assert_same(old, &snapshot(root));
}

#[test]
fn a_crash_at_any_write_leaves_old_or_new_and_the_next_run_recovers() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    for c in &CASES {
        let old = snapshot(&common::roots::fixture_dir(c.fixture));
        let new = new_state(c, &a.manifest);
        let mut crashed = 0;
        for n in 1.. {
            let (_d, root) = fixture(c.fixture);
            let at = format!("{} at-write:{n}", c.fixture);
            let out = apply(&root, &a.manifest, c, Some(&format!("at-write:{n}")));
            if out.status.code() == Some(0) {
                break; // n is past the last write: the run completed
            }
            assert_eq!(
                out.status.code(),
                Some(FAULT_EXIT),
                "{at}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            crashed += 1;
            assert_old_or_new(&snapshot(&root), &old, &new, &at);
            recover_and_check(&root, &a.manifest, c, &old, &new, &at);
            assert!(n < 200, "{at}: the fault never stopped firing");
        }
        assert!(crashed >= 8, "{}: only {crashed} write points", c.fixture);
    }
}

#[test]
fn a_crash_after_each_step_is_reported_and_undone_by_the_next_run() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    for c in &CASES {
        let old = snapshot(&common::roots::fixture_dir(c.fixture));
        let new = new_state(c, &a.manifest);
        for step in c.only.split(',') {
            let (_d, root) = fixture(c.fixture);
            let at = format!("{} after-step:{step}", c.fixture);
            let out = apply(&root, &a.manifest, c, Some(&format!("after-step:{step}")));
            assert_eq!(out.status.code(), Some(FAULT_EXIT), "{at}");
            assert_old_or_new(&snapshot(&root), &old, &new, &at);
            rvl(&root, &a.manifest)
                .arg("--status")
                .assert()
                .success()
                .stdout(predicate::str::contains("interrupted apply run"));
            recover_and_check(&root, &a.manifest, c, &old, &new, &at);
        }
    }
}

#[test]
fn rollback_after_a_crash_restores_the_original_tree() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let c = &CASES[0];
    let old = snapshot(&common::roots::fixture_dir(c.fixture));
    let (_d, root) = fixture(c.fixture);
    let out = apply(&root, &a.manifest, c, Some("after-step:firmware"));
    assert_eq!(out.status.code(), Some(FAULT_EXIT));
    rvl(&root, &a.manifest).arg("--rollback").assert().success();
    assert_same(&old, &snapshot(&root));
}

#[test]
fn a_crash_in_the_middle_of_a_rollback_is_finished_next_time() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let c = &CASES[0];
    let old = snapshot(&common::roots::fixture_dir(c.fixture));
    let (_d, root) = fixture(c.fixture);
    assert!(apply(&root, &a.manifest, c, None).status.success());
    let out = rvl(&root, &a.manifest)
        .arg("--rollback")
        .env("RVL_FAULT", "at-write:3")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(FAULT_EXIT));
    rvl(&root, &a.manifest)
        .arg("--status")
        .assert()
        .stdout(predicate::str::contains("interrupted rollback run"));
    rvl(&root, &a.manifest).arg("--rollback").assert().success();
    assert_same(&old, &snapshot(&root));
}
