//! `--save FILE` / `--compare FILE`: keep a run's JSON and set a later run beside it, e.g. before
//! and after a driver patch. The saved file is the `--json` document; comparison matches stacks
//! by ubatch, precision and label.

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::report::Report;
use crate::error::Error;
use crate::output::Style;

// One writer for every saved result (the prefill bench's too).
pub use crate::saved::{check_writable, save};

/// Read a saved result: the `--json` document of this version (the envelope, whose
/// `schema_version` and report fields are at the top level) or a file saved by an earlier
/// one (`schema_version` + the report fields). Anything else is a clear BAD_INPUT error
/// naming the file.
pub fn load(path: &Path) -> Result<Value, Error> {
    let text = crate::host::root::read_regular_string(path, crate::host::root::INPUT_CAP)
        .map_err(|e| Error::BadInput(format!("--compare {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string())
}

/// [`load`]'s checks on text already read; `name` is what errors call the file.
pub fn parse(text: &str, name: &str) -> Result<Value, Error> {
    let bad = |msg: String| Error::BadInput(format!("--compare {name}: {msg}"));
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    let tool_ok = doc
        .get("tool")
        .and_then(Value::as_str)
        .is_some_and(|t| t.starts_with("rvl smoke-bench"));
    let version = doc.get("schema_version").and_then(Value::as_u64);
    if !tool_ok || doc.get("ubatches").and_then(Value::as_array).is_none() {
        return Err(bad(
            "not a result saved by rvl smoke-bench --save (expected keys \"tool\", \"schema_version\", \"ubatches\")".into(),
        ));
    }
    if version != Some(u64::from(crate::output::SCHEMA_VERSION)) {
        return Err(bad(format!(
            "schema_version {:?}, this rvl reads {}",
            version,
            crate::output::SCHEMA_VERSION
        )));
    }
    Ok(doc)
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub ubatch: u32,
    pub precision: String,
    pub label: String,
    pub before_status: Option<String>,
    pub after_status: String,
    pub before_tokens_per_s: Option<f64>,
    pub after_tokens_per_s: Option<f64>,
    /// after / before - 1
    pub change: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline_device: String,
    /// Set when the saved run measured another model or run size: the numbers do not compare.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    pub rows: Vec<Row>,
}

pub fn compare(baseline: &Value, report: &Report) -> Comparison {
    let now = serde_json::to_value(report).unwrap_or(Value::Null);
    let stacks = |doc: &Value| -> Vec<(u32, String, String, String, Option<f64>)> {
        doc.get("ubatches")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|u| {
                let ub = u.get("ubatch").and_then(Value::as_u64).unwrap_or(0) as u32;
                u.get("stacks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(move |s| {
                        let text =
                            |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
                        (
                            ub,
                            text("precision"),
                            text("label"),
                            text("status"),
                            s.get("predicted_tokens_per_s").and_then(Value::as_f64),
                        )
                    })
            })
            .collect()
    };
    let before = stacks(baseline);
    let rows = stacks(&now)
        .into_iter()
        .map(|(ub, p, l, status, tps)| {
            let old = before.iter().find(|b| b.0 == ub && b.1 == p && b.2 == l);
            let old_tps = old.and_then(|b| b.4);
            Row {
                ubatch: ub,
                precision: p,
                label: l,
                before_status: old.map(|b| b.3.clone()),
                after_status: status,
                before_tokens_per_s: old_tps,
                after_tokens_per_s: tps,
                change: match (old_tps, tps) {
                    (Some(a), Some(b)) if a > 0.0 => Some(b / a - 1.0),
                    _ => None,
                },
            }
        })
        .collect();
    let text = |doc: &Value, ptr: &str| {
        doc.pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let (old_model, new_model) = (text(baseline, "/model/name"), text(&now, "/model/name"));
    let (old_size, new_size) = (text(baseline, "/size"), text(&now, "/size"));
    let warning = (old_model != new_model || old_size != new_size).then(|| {
        format!("the saved run measured {old_model} ({old_size}), this one {new_model} ({new_size}): the numbers do not compare")
    });
    Comparison {
        warning,
        baseline_device: baseline
            .pointer("/device/name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        rows,
    }
}

pub fn render(c: &Comparison, style: Style) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{}",
        style.bold(&format!(
            "compared with the saved run (device {})",
            c.baseline_device
        ))
    );
    if let Some(w) = &c.warning {
        let _ = writeln!(o, "{}", style.yellow(&format!("warning: {w}")));
    }
    let _ = writeln!(
        o,
        "{:>6}  {:<22} {:>14} {:>14} {:>8}",
        "ubatch", "stack", "before t/s", "now t/s", "change"
    );
    for r in &c.rows {
        let cell = |status: Option<&str>, tps: Option<f64>| match (status, tps) {
            (_, Some(t)) => crate::output::sig3(t),
            (Some(s), None) => s.to_string(),
            (None, None) => "-".into(),
        };
        let change = r
            .change
            .map(|x| format!("{:+.0}%", x * 100.0))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:>6}  {:<22} {:>14} {:>14} {:>8}",
            r.ubatch,
            format!("{} {}", r.precision, r.label),
            cell(r.before_status.as_deref(), r.before_tokens_per_s),
            cell(Some(&r.after_status), r.after_tokens_per_s),
            change
        );
    }
    let _ = writeln!(
        o,
        "each figure is one run, with no spread measured: run --compare again with the same file to see how far this machine's runs differ before reading a change as real"
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;

    #[test]
    fn load_rejects_foreign_and_malformed_files_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\n \"a\": 1,\n oops\n}").unwrap();
        let e = load(&bad).unwrap_err();
        assert_eq!(e.exit_code(), exit::BAD_INPUT);
        assert!(e.to_string().contains("line 3"), "{e}");
        let other = dir.path().join("other.json");
        std::fs::write(&other, "{\"schema_version\": 1}").unwrap();
        let e = load(&other).unwrap_err();
        assert!(
            e.to_string()
                .contains("not a result saved by rvl smoke-bench"),
            "{e}"
        );
        let future = dir.path().join("future.json");
        std::fs::write(
            &future,
            "{\"tool\": \"rvl smoke-bench 9\", \"schema_version\": 99, \"ubatches\": []}",
        )
        .unwrap();
        assert!(load(&future)
            .unwrap_err()
            .to_string()
            .contains("schema_version Some(99)"));
        let e = load(&dir.path().join("missing.json")).unwrap_err();
        assert_eq!(e.exit_code(), exit::BAD_INPUT);
    }

    #[test]
    fn load_reads_the_envelope_and_the_previous_format() {
        let dir = tempfile::tempdir().unwrap();
        // This version: the envelope, with the report's fields flattened into it.
        let now = dir.path().join("now.json");
        std::fs::write(
            &now,
            r#"{"schema_version": 1, "rvl_version": "0.1.0", "command": "smoke-bench",
                "exit_code": 0, "tool": "rvl smoke-bench 0.1.0", "device": {"name": "x"},
                "ubatches": [{"ubatch": 8, "stacks": []}]}"#,
        )
        .unwrap();
        let doc = load(&now).unwrap();
        assert_eq!(doc["ubatches"][0]["ubatch"], 8);
        // The previous version: schema_version first, then the report, no envelope fields.
        let old = dir.path().join("old.json");
        std::fs::write(
            &old,
            r#"{"schema_version": 1, "tool": "rvl smoke-bench 0.1.0", "device": {"name": "y"},
                "ubatches": [{"ubatch": 16, "stacks": []}]}"#,
        )
        .unwrap();
        let doc = load(&old).unwrap();
        assert_eq!(doc["device"]["name"], "y");
    }
}
