//! Crash safety: stop `rvl setup` at every write and after every step (RVL_FAULT), then prove
//! that each path is either in its old or its new state (never torn), that `--status` reports
//! the interrupted run, that the next run recovers and reaches exactly the state an
//! uninterrupted run reaches, and that rollback still restores the original tree.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::roots::{artifacts, assert_same, changed, firmware_bytes, snapshot, Artifacts, Node};
use common::{fixture_dir, setup, Fixture, Output};
use rvl::exit;
use rvl::setup::fault::FAULT_EXIT;

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

fn apply(root: &Path, manifest: &Path, c: &Case, fault: Option<&str>) -> Output {
    let cmd = setup(root, manifest)
        .args(&["--board", c.board, "--only", c.only, "--yes"])
        .env("SUDO_USER", "rock");
    match fault {
        Some(f) => cmd.env("RVL_FAULT", f),
        None => cmd,
    }
    .run()
}

/// What a case is checked against: the manifest, the fixture's tree and the tree an
/// uninterrupted apply reaches.
struct States {
    a: Artifacts,
    old: BTreeMap<String, Node>,
    new: BTreeMap<String, Node>,
}

impl States {
    fn of(c: &Case) -> States {
        let a = artifacts(&firmware_bytes(), None, &[]);
        let fx = Fixture::copy(c.fixture);
        apply(fx.path(), &a.manifest, c, None).expect_code(exit::OK);
        States {
            old: snapshot(&fixture_dir(c.fixture)),
            new: snapshot(fx.path()),
            a,
        }
    }
}

/// Every path is as it was or as the finished run leaves it (temp files aside).
fn assert_old_or_new(now: &BTreeMap<String, Node>, s: &States, at: &str) {
    for path in changed(now, &s.old) {
        if path.contains(".rvl-new") {
            continue; // a staged temp file is not the path itself; recovery removes it
        }
        assert_eq!(
            now.get(&path),
            s.new.get(&path),
            "{at}: {path} is neither its old nor its new state"
        );
    }
}

/// Recover with a second run and check it ends where an uninterrupted run ends; then roll back.
fn recover_and_check(root: &Path, c: &Case, s: &States, at: &str) {
    let out = apply(root, &s.a.manifest, c, None);
    assert_eq!(
        out.code(),
        exit::OK,
        "{at}: the run after the crash failed: {out}"
    );
    let after = snapshot(root);
    assert!(
        changed(&after, &s.new).is_empty(),
        "{at}: recovered tree differs at {:?}",
        changed(&after, &s.new)
    );
    rollback(root, &s.a.manifest);
    assert_same(&s.old, &snapshot(root));
}

fn rollback(root: &Path, manifest: &Path) {
    setup(root, manifest)
        .args(&["--rollback", "--yes"])
        .run()
        .expect_code(exit::OK);
}

#[test]
fn a_crash_at_any_write_leaves_old_or_new_and_the_next_run_recovers() {
    for c in &CASES {
        let s = States::of(c);
        let mut crashed = 0;
        for n in 1.. {
            let fx = Fixture::copy(c.fixture);
            let at = format!("{} at-write:{n}", c.fixture);
            let out = apply(fx.path(), &s.a.manifest, c, Some(&format!("at-write:{n}")));
            if out.code() == exit::OK {
                break; // n is past the last write: the run completed
            }
            assert_eq!(out.code(), FAULT_EXIT, "{at}: {out}");
            crashed += 1;
            assert_old_or_new(&snapshot(fx.path()), &s, &at);
            recover_and_check(fx.path(), c, &s, &at);
            assert!(n < 200, "{at}: the fault never stopped firing");
        }
        assert!(crashed >= 8, "{}: only {crashed} write points", c.fixture);
    }
}

#[test]
fn a_crash_after_each_step_is_reported_and_undone_by_the_next_run() {
    for c in &CASES {
        let s = States::of(c);
        for step in c.only.split(',') {
            let fx = Fixture::copy(c.fixture);
            let at = format!("{} after-step:{step}", c.fixture);
            let out = apply(
                fx.path(),
                &s.a.manifest,
                c,
                Some(&format!("after-step:{step}")),
            );
            assert_eq!(out.code(), FAULT_EXIT, "{at}: {out}");
            assert_old_or_new(&snapshot(fx.path()), &s, &at);
            setup(&fx, &s.a.manifest)
                .arg("--status")
                .run()
                .expect_code(exit::OK)
                .expect_stdout("interrupted apply run");
            recover_and_check(fx.path(), c, &s, &at);
        }
    }
}

#[test]
fn rollback_after_a_crash_restores_the_original_tree() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let c = &CASES[0];
    let fx = Fixture::copy(c.fixture);
    apply(fx.path(), &a.manifest, c, Some("after-step:firmware")).expect_code(FAULT_EXIT);
    rollback(fx.path(), &a.manifest);
    assert_same(&snapshot(&fixture_dir(c.fixture)), &snapshot(fx.path()));
}

/// The first case applied, then a rollback of it crashed at its third write.
fn rollback_stopped_at_its_third_write() -> (Artifacts, &'static Case, Fixture) {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let c = &CASES[0];
    let fx = Fixture::copy(c.fixture);
    apply(fx.path(), &a.manifest, c, None).expect_code(exit::OK);
    setup(&fx, &a.manifest)
        .args(&["--rollback", "--yes"])
        .env("RVL_FAULT", "at-write:3")
        .run()
        .expect_code(FAULT_EXIT);
    (a, c, fx)
}

#[test]
fn a_crash_in_the_middle_of_a_rollback_is_finished_next_time() {
    let (a, c, fx) = rollback_stopped_at_its_third_write();
    setup(&fx, &a.manifest)
        .arg("--status")
        .run()
        .expect_stdout("interrupted rollback run");
    rollback(fx.path(), &a.manifest);
    assert_same(&snapshot(&fixture_dir(c.fixture)), &snapshot(fx.path()));
}

/// A rollback that undoes setup's edits line-wise (a group line was added after setup), stopped
/// at each of its writes: every path is as before the rollback or as the finished rollback
/// leaves it, and the next `--rollback` finishes it with the later line kept.
#[test]
fn a_crash_at_any_write_of_a_line_wise_rollback_is_finished_next_time() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let c = &CASES[0];
    let prepare = || {
        let fx = Fixture::copy(c.fixture);
        let passwd = fx.read("etc/passwd");
        fx.write(
            "etc/passwd",
            format!("{passwd}alice:x:1001:1001::/home/alice:/bin/sh\n"),
        );
        setup(&fx, &a.manifest)
            .args(&["--board", c.board, "--only", "kernel,access", "--yes"])
            .args(&["--user", "alice"])
            .run()
            .expect_code(exit::OK);
        let mut group = fx.read("etc/group");
        group.push_str("docker:x:999:alice\n");
        fx.write("etc/group", group);
        fx
    };
    let done = prepare();
    rollback(done.path(), &a.manifest);
    let finished = snapshot(done.path());
    let want_group = format!(
        "{}docker:x:999:alice\n",
        std::fs::read_to_string(fixture_dir(c.fixture).join("etc/group")).unwrap()
    );
    assert_eq!(done.read("etc/group"), want_group);
    let mut n = 1;
    loop {
        let fx = prepare();
        let s = States {
            old: snapshot(fx.path()),
            new: finished.clone(),
            a: artifacts(&firmware_bytes(), None, &[]),
        };
        let at = format!("rollback at-write:{n}");
        let out = setup(&fx, &a.manifest)
            .args(&["--rollback", "--yes"])
            .env("RVL_FAULT", format!("at-write:{n}"))
            .run();
        if out.code() == exit::OK {
            assert!(
                n > 3,
                "{at}: the rollback made too few writes to test: {out}"
            );
            break;
        }
        assert_eq!(out.code(), FAULT_EXIT, "{at}: {out}");
        assert_old_or_new(&snapshot(fx.path()), &s, &at);
        rollback(fx.path(), &a.manifest);
        assert_same(&finished, &snapshot(fx.path()));
        n += 1;
    }
}

/// The run that finishes a rollback stopped by a crash says what it put back; on 4201ed1 it
/// printed "Nothing to roll back: setup has not changed …" on stdout (the finished work went
/// to one line on stderr).
#[test]
fn the_run_that_finishes_an_interrupted_rollback_says_what_it_put_back() {
    let (a, c, fx) = rollback_stopped_at_its_third_write();
    let out = setup(&fx, &a.manifest)
        .args(&["--rollback", "--yes"])
        .run()
        .expect_code(exit::OK)
        .expect_stdout("finished the rollback that was interrupted (run ")
        .expect_stdout("✓ rolled back");
    assert!(!out.stdout().contains("Nothing to roll back"), "{out}");
    assert!(
        out.stdout().contains("  ✓ restored /") || out.stdout().contains("  ✓ removed /"),
        "{out}"
    );
    let json = setup(&fx, &a.manifest)
        .args(&["--rollback", "--json"])
        .run();
    assert!(
        json.stdout_json()["runs"].as_array().unwrap().is_empty(),
        "{json}"
    );
    assert_same(&snapshot(&fixture_dir(c.fixture)), &snapshot(fx.path()));
}

/// A full disk or a read-only file system under the root, at the journal (the first file a run
/// writes) and at a later file of a step: the step-failure status, the cause said once in
/// words, nothing changed. On 4201ed1 these exited 1 ("problems found") with "No space left on
/// device (os error 28): No space left on device (os error 28)".
#[test]
fn no_space_or_a_read_only_file_system_during_apply_is_a_step_failure_said_once() {
    let a = artifacts(&firmware_bytes(), None, &[]);
    let c = &CASES[0];
    for (fault, words) in [
        ("enospc-at-file:1", "No space left on device"),
        ("enospc-at-file:3", "No space left on device"),
        ("erofs-at-file:3", "Read-only file system"),
    ] {
        let fx = Fixture::copy(c.fixture);
        let before = snapshot(fx.path());
        let out = apply(fx.path(), &a.manifest, c, Some(fault))
            .expect_code(exit::STEP_FAILED)
            .expect_stderr(words);
        assert_eq!(out.stderr().matches(words).count(), 1, "{fault}: {out}");
        assert!(!out.stderr().contains("(os error"), "{fault}: {out}");
        assert!(!out.stderr().contains("caused by"), "{fault}: {out}");
        let mut after = snapshot(fx.path());
        let mut before = before.clone();
        // The state directory may keep the lock file; the system itself is unchanged.
        after.retain(|p, _| !p.starts_with("var/lib/rvl"));
        before.retain(|p, _| !p.starts_with("var/lib/rvl"));
        assert_same(&before, &after);
    }
}
