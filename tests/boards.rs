//! `--board` takes the name on the box: a profile id, a product name the profile lists as an
//! alias, or a device-tree compatible; a near miss is answered with the board it belongs to,
//! and the shell completions offer the board names.

mod common;

use std::process::Command as Process;

use common::roots::Board;
use common::{fixture_dir, rvl, setup};
use rvl::exit;

/// The profile doctor picks for `--board NAME` on a board root (exit status aside).
fn doctor_board(name: &str) -> serde_json::Value {
    let out = rvl(&[
        "doctor",
        "--no-vulkan",
        "--json",
        "--only",
        "board",
        "--board",
        name,
    ])
    .root(fixture_dir("boltzmann-mainline"))
    .run();
    assert_ne!(out.code(), exit::USAGE, "--board {name}: {out}");
    out.stdout_json()["board"]["id"].clone()
}

#[test]
fn a_board_is_found_by_the_name_on_its_box() {
    for (name, id) in [
        ("rock-5-itx", "boltzmann"),
        ("radxa,rock-5-itx", "boltzmann"),
        ("rock5-itx", "boltzmann"),
        ("ROCK 5 ITX", "boltzmann"),
        ("rock-5-itx+", "boltzmann"),
        ("genbook", "ampere"),
        ("cm5-genbook", "ampere"),
        ("coolpi,pi-cm5-genbook", "ampere"),
        ("boltzmann", "boltzmann"),
        ("rock-5a", "rock-5a"),
    ] {
        assert_eq!(doctor_board(name), id, "--board {name}");
    }
}

#[test]
fn setup_plans_for_a_board_named_by_its_product_name() {
    let b = Board::new("boltzmann-extlinux");
    let out = setup(&b.fx, &b.a.manifest)
        .args(&[
            "--board",
            "rock-5-itx",
            "--only",
            "firmware",
            "--dry-run",
            "--json",
        ])
        .run()
        .expect_code(exit::OK);
    assert_eq!(out.stdout_json()["plan"]["board"], "boltzmann");
}

#[test]
fn a_mistyped_product_name_suggests_the_board_it_belongs_to() {
    for (name, meant) in [
        ("rock5itx", "boltzmann"),
        ("rock-5-itz", "boltzmann"),
        ("genbok", "ampere"),
    ] {
        let out = rvl(&["setup", "--dry-run", "--board", name])
            .root(fixture_dir("boltzmann-mainline"))
            .run()
            .expect_code(exit::USAGE);
        assert!(
            out.stderr().contains(&format!("did you mean `{meant}`")),
            "{name}: {out}"
        );
    }
}

/// What bash completes for the words of `line`, the cursor on the last word.
fn bash_complete(line: &str) -> Vec<String> {
    let script = rvl(&["generate", "completions", "bash"]).run();
    let words: Vec<&str> = line.split(' ').collect();
    let cword = words.len() - 1;
    let prog = format!(
        "{}\nCOMP_WORDS=({}); COMP_CWORD={cword}; _rvl rvl \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.stdout(),
        words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = Process::new("bash").arg("-c").arg(prog).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_board_names_not_file_names() {
    assert_eq!(bash_complete("rvl setup --board bol"), ["boltzmann"]);
    let gen = bash_complete("rvl doctor --board gen");
    assert!(gen.contains(&"genbook".to_string()), "{gen:?}");
    assert!(gen.contains(&"generic-rk3588".to_string()), "{gen:?}");
    let rock = bash_complete("rvl status --board rock-5-i");
    assert!(rock.contains(&"rock-5-itx".to_string()), "{rock:?}");
    // Not the files of the current directory (Cargo.toml, README.md, …).
    let all = bash_complete("rvl setup --board ");
    assert!(all.contains(&"ampere".to_string()), "{all:?}");
    assert!(!all.iter().any(|w| w.contains('.')), "{all:?}");
}
