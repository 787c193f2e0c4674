//! Every verb's `--json` document, errors included, against the JSON Schema in docs/json.md.
//! The schema is read from the document itself, so the docs and the code cannot drift apart.

mod common;

use std::path::Path;

use common::{fixture_dir, rvl};
use serde_json::Value;

/// The ```json block of docs/json.md, compiled.
fn schema() -> jsonschema::Validator {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .unwrap();
    let start = doc
        .find("```json\n")
        .expect("docs/json.md has a ```json block")
        + 8;
    let len = doc[start..].find("\n```").expect("the block is closed");
    let schema: Value = serde_json::from_str(&doc[start..start + len]).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema is a valid JSON Schema")
}

/// Run rvl, parse stdout as one JSON document, check it against the schema and against the
/// process: the envelope's exit_code is the real exit status.
fn checked(args: &[&str]) -> Value {
    let out = rvl(args).env("RVL_FETCH_ATTEMPTS", "1").run();
    let doc = out.stdout_json();
    let errors: Vec<String> = schema()
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the document breaks docs/json.md's schema:\n{}\n{out}",
        errors.join("\n")
    );
    assert_eq!(
        doc["exit_code"],
        out.code(),
        "exit_code in the envelope differs from the exit status: {out}"
    );
    doc
}

#[test]
fn the_schema_rejects_a_document_without_the_envelope() {
    let s = schema();
    assert!(!s.is_valid(&serde_json::json!({"checks": []})));
    assert!(!s.is_valid(&serde_json::json!({
        "schema_version": 1, "rvl_version": "0.1.0", "command": "doctor", "exit_code": 2,
        "error": {"kind": "no-such-kind", "message": "x", "causes": []}
    })));
    assert!(s.is_valid(&serde_json::json!({
        "schema_version": 1, "rvl_version": "0.1.0", "command": "doctor", "exit_code": 2,
        "error": {"kind": "usage", "message": "x", "causes": []}
    })));
}

#[test]
fn doctor_documents_follow_the_schema() {
    for name in ["boltzmann-mainline", "boltzmann-vendor-kbase", "x86-host"] {
        let root = fixture_dir(name);
        let doc = checked(&["doctor", "--root", root.to_str().unwrap(), "--json"]);
        assert_eq!(doc["command"], "doctor");
    }
    let doc = checked(&["doctor", "--list-checks", "--json"]);
    assert!(doc["checks"].as_array().unwrap().len() >= 9);
    let doc = checked(&["doctor", "--only", "nope", "--json"]);
    assert_eq!(doc["error"]["kind"], "usage");
    assert_eq!(doc["exit_code"], rvl::exit::USAGE);
}
