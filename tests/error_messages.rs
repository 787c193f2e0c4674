//! Errors read by the person who hit them: the file, line and key of a bad YAML file instead of
//! the parser library's advice to its callers, and a cause said once (not "X … caused by: X").

mod common;

use std::fs;

use common::{fixture_dir, rvl, setup, Fixture};
use rvl::exit;

#[test]
fn a_duplicate_key_or_a_second_document_in_a_manifest_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "schema: 1\nschema: 1\nfirmware: []\n",
            "dup.yaml:2:1: key `schema` appears twice in one mapping",
        ),
        (
            "schema: 1\nfirmware:\n  - id: a\n    id: b\n",
            "dup.yaml:4:5: key `id` appears twice in one mapping",
        ),
        (
            "schema: 1\n---\nschema: 1\n",
            "dup.yaml:3:1: a second YAML document (after `---`) starts here; the file must hold one",
        ),
    ] {
        let path = dir.path().join("dup.yaml");
        fs::write(&path, text).unwrap();
        let out = rvl(&["doctor", "--no-vulkan", "--manifest"])
            .arg(&path)
            .root(fixture_dir("boltzmann-mainline"))
            .run()
            .expect_code(exit::BAD_INPUT)
            .expect_stderr(want);
        for internal in ["DuplicateKeyPolicy", "Options", "from_str_multiple"] {
            assert!(!out.stderr().contains(internal), "{internal}: {out}");
        }
    }
}

#[test]
fn a_duplicate_key_in_a_profile_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/boltzmann.yaml"),
    )
    .unwrap();
    let first = text.lines().find(|l| l.starts_with("name:")).unwrap();
    fs::write(
        dir.path().join("boltzmann.yaml"),
        text.replacen(first, &format!("{first}\n{first}"), 1),
    )
    .unwrap();
    let out = rvl(&["doctor", "--no-vulkan", "--profiles"])
        .arg(dir.path())
        .root(fixture_dir("boltzmann-mainline"))
        .run()
        .expect_code(exit::BAD_INPUT)
        .expect_stderr("boltzmann.yaml:")
        .expect_stderr(": key `name` appears twice in one mapping");
    assert!(!out.stderr().contains("DuplicateKeyPolicy"), "{out}");
}

/// `/var/lib/rvl` a file: the lock cannot be opened. On 4201ed1: "cannot open the lock …:
/// /var/lib/rvl is not a directory" and then "caused by: /var/lib/rvl is not a directory".
#[test]
fn a_cause_the_message_already_says_is_not_repeated() {
    let fx = Fixture::copy("boltzmann-uboot-menu");
    fs::create_dir_all(fx.join("var/lib")).unwrap();
    fs::write(fx.join("var/lib/rvl"), "").unwrap();
    let a = common::roots::artifacts(&common::roots::firmware_bytes(), None, &[]);
    let out = setup(&fx, &a.manifest)
        .args(&["--board", "boltzmann", "--only", "kernel", "--yes"])
        .run()
        .expect_stderr("/var/lib/rvl is not a directory");
    assert_eq!(
        out.stderr().matches("is not a directory").count(),
        1,
        "{out}"
    );
    assert!(!out.stderr().contains("caused by"), "{out}");
    let json = setup(&fx, &a.manifest)
        .args(&[
            "--board",
            "boltzmann",
            "--only",
            "kernel",
            "--yes",
            "--json",
        ])
        .run()
        .stdout_json();
    assert_eq!(json["error"]["causes"], serde_json::json!([]), "{json}");
}
