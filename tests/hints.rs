//! The commands rvl prints for a person to paste change the system that was looked at, never
//! the machine rvl runs on: under `--root` every rvl command repeats `--root` (and the
//! `--board`/`--profiles`/`--manifest` that decide a plan), a tree the user owns gets no
//! `sudo`, a command that is not rvl's is marked as the board's, and an apply into an image
//! does not say "Reboot".

mod common;

use std::fs;

use common::roots::{copy_tree, Board};
use common::{rvl, setup, Fixture};
use rvl::exit;

/// Every rvl command (from `rvl ` to the end of the sentence) in `text`.
fn rvl_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("rvl setup").or_else(|| rest.find("rvl doctor")) {
        let tail = &rest[i..];
        let end = tail.find([';', '(', '`', '\n']).unwrap_or(tail.len());
        out.push(tail[..end].trim_end().to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn doctor_fixes_for_an_image_repeat_its_root_profiles_and_manifest_without_sudo() {
    let fx = Fixture::copy("boltzmann-vendor-kbase");
    let other = tempfile::tempdir().unwrap();
    let profiles = other.path().join("my profiles");
    copy_tree(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles")),
        &profiles,
    );
    let manifest = other.path().join("m.yaml");
    fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/stub-manifest.yaml"
        ),
        &manifest,
    )
    .unwrap();
    let out = rvl(&["doctor", "--no-vulkan", "--json"])
        .root(&fx)
        .arg("--profiles")
        .arg(&profiles)
        .arg("--manifest")
        .arg(&manifest)
        .run()
        .expect_code(exit::PROBLEMS);
    let doc = out.stdout_json();
    let root = fx.path().display().to_string();
    let mut seen = 0;
    for c in doc["checks"].as_array().unwrap() {
        let Some(fix) = c["fix"].as_str() else {
            continue;
        };
        assert!(
            !fix.contains("sudo rvl"),
            "{}: a tree the user owns: {fix}",
            c["id"]
        );
        for cmd in rvl_commands(fix) {
            seen += 1;
            for needle in [
                format!("--root {root}"),
                "--board boltzmann".to_string(),
                format!("--profiles '{}'", profiles.display()),
                format!("--manifest {}", manifest.display()),
            ] {
                assert!(
                    cmd.contains(&needle),
                    "{}: {cmd:?} lacks {needle:?}",
                    c["id"]
                );
            }
        }
        // A command that is not rvl's is for the board, not for this machine.
        if fix.contains("u-boot-update") || fix.contains("reboot") {
            assert!(fix.contains("on the board that boots this image"), "{fix}");
        }
    }
    assert!(seen >= 4, "{doc:#}");
}

#[test]
fn setup_into_an_image_names_its_undo_with_the_root_and_says_no_reboot() {
    let b = Board::new("boltzmann-extlinux");
    let out = setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel,firmware", "--yes"])
        .run()
        .expect_code(exit::OK);
    let root = b.fx.path().display();
    let out = out
        .expect_stdout(&format!("undo with: rvl setup --root {root} --rollback"))
        .expect_stdout(&format!("The image at {root} boots the new kernel"));
    let text = out.stdout();
    assert!(!text.contains("sudo"), "a tree the user owns: {text}");
    assert!(
        !text.contains("Reboot"),
        "this machine was not changed: {text}"
    );
}

#[test]
fn a_rollback_error_names_the_status_command_for_the_same_root() {
    let b = Board::new("boltzmann-extlinux");
    setup(&b.fx, &b.a.manifest)
        .args(&["--board", "boltzmann", "--only", "firmware", "--yes"])
        .run()
        .expect_code(exit::OK);
    rvl(&["setup", "--rollback", "--run", "123", "--yes"])
        .root(&b.fx)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr(&format!(
            "no applied run 123; `rvl setup --root {} --status` lists them",
            b.fx.path().display()
        ));
}
