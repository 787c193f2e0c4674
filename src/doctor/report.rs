//! Rendering findings: a short human screen, or the `--json` document.

use serde_json::{json, Value};

use super::checks;
use super::context::Context;
use super::finding::{Finding, Status};
use crate::output::{Style, SCHEMA_VERSION};

fn glyph(status: Status, style: Style) -> String {
    match status {
        Status::Pass => style.green("✓"),
        Status::Warn => style.yellow("!"),
        Status::Fail => style.red("✗"),
        Status::Skip => style.dim("-"),
    }
}

fn count(findings: &[Finding], status: Status) -> usize {
    findings.iter().filter(|f| f.status == status).count()
}

/// One line per check, the fix indented under problems, a summary line.
pub fn human(ctx: &Context, findings: &[Finding], style: Style) -> String {
    let mut out = String::new();
    let board = match ctx.profile {
        Some(p) => format!("{} (profile {})", p.name, p.id),
        None => "no RK3588 board profile".to_string(),
    };
    let kernel = ctx.inv.kernel.release.as_deref().unwrap_or("unknown");
    out.push_str(&style.bold(&format!("rvl doctor: {board}, kernel {kernel}")));
    out.push('\n');
    let width = findings.iter().map(|f| f.id.len()).max().unwrap_or(0);
    for f in findings {
        let summary = if f.status == Status::Skip {
            style.dim(&format!("skipped: {}", f.summary))
        } else {
            f.summary.clone()
        };
        out.push_str(&format!(
            "{} {:width$}  {summary}\n",
            glyph(f.status, style),
            f.id
        ));
        if f.status >= Status::Warn {
            if let Some(fix) = &f.fix {
                out.push_str(&format!("  {:width$}  fix: {fix}\n", ""));
            }
        }
    }
    let (fail, warn) = (count(findings, Status::Fail), count(findings, Status::Warn));
    let line = format!(
        "{fail} failed, {warn} warning{}, {} passed, {} skipped (details: --json)",
        if warn == 1 { "" } else { "s" },
        count(findings, Status::Pass),
        count(findings, Status::Skip)
    );
    out.push_str(&if fail > 0 {
        style.red(&line)
    } else if warn > 0 {
        style.yellow(&line)
    } else {
        style.green(&line)
    });
    out.push('\n');
    out
}

/// The `--json` document (schema_version 1).
pub fn json(ctx: &Context, findings: &[Finding], exit_code: i32) -> Value {
    let dt = ctx.inv.devicetree.as_ref();
    json!({
        "schema_version": SCHEMA_VERSION,
        "rvl_version": env!("CARGO_PKG_VERSION"),
        "board": {
            "id": ctx.profile.map(|p| p.id.clone()),
            "name": ctx.profile.map(|p| p.name.clone()),
            "detected_by": ctx.source,
            "model": dt.and_then(|d| d.model.clone()),
            "compatible": dt.map(|d| d.compatible.clone()).unwrap_or_default(),
        },
        "kernel": { "release": ctx.inv.kernel.release },
        "summary": {
            "pass": count(findings, Status::Pass),
            "warn": count(findings, Status::Warn),
            "fail": count(findings, Status::Fail),
            "skip": count(findings, Status::Skip),
        },
        "exit_code": exit_code,
        "checks": findings,
        "inventory": ctx.inv,
    })
}

pub fn print_check_list(as_json: bool) -> anyhow::Result<()> {
    if as_json {
        let list: Vec<Value> = checks::ALL
            .iter()
            .map(|c| json!({"id": c.id, "title": c.title}))
            .collect();
        crate::output::print_json(&json!({"schema_version": SCHEMA_VERSION, "checks": list}))
    } else {
        let width = checks::ALL.iter().map(|c| c.id.len()).max().unwrap_or(0);
        for c in checks::ALL {
            println!("{:width$}  {}", c.id, c.title);
        }
        Ok(())
    }
}
