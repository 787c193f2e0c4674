//! `board`: which profile matched, the model and compatible list it matched on.

use crate::doctor::context::{Context, ProfileSource};
use crate::doctor::finding::Finding;

const ID: &str = "board";

pub fn check(ctx: &Context) -> Finding {
    let dt = ctx.inv.devicetree.as_ref();
    let model = dt
        .and_then(|d| d.model.clone())
        .unwrap_or_else(|| "(no model)".into());
    let mut evidence = Vec::new();
    match dt {
        Some(d) => {
            evidence.push(format!("device tree: {}", d.base));
            evidence.push(format!("model: {model}"));
            evidence.push(format!("compatible: {}", d.compatible.join(", ")));
        }
        None => evidence
            .push("no device tree at /proc/device-tree or /sys/firmware/devicetree/base".into()),
    }
    let off_board_fix = "rvl is for RK3588 boards: run it on the board, or point --root at a \
                         copy of its file system; --board NAME forces a profile";
    let Some(profile) = ctx.profile else {
        let summary = match dt {
            None => "no device tree: not an ARM board (x86 PC, VM or container?)".to_string(),
            Some(d) if d.compatible.is_empty() => {
                "device tree without a compatible list: board unknown".to_string()
            }
            Some(d) => format!(
                "not an RK3588 board: {} ({})",
                model,
                d.compatible.first().map(String::as_str).unwrap_or("")
            ),
        };
        return Finding::fail(ID, summary)
            .evidence(evidence)
            .fix(off_board_fix);
    };
    evidence.push(format!("profile: {} ({})", profile.id, profile.name));
    let compatible = dt.map(|d| d.compatible.as_slice()).unwrap_or_default();
    let dt_agrees = compatible.iter().any(|c| profile.matches.contains(c));
    match ctx.source {
        Some(ProfileSource::Flag) if !dt_agrees => {
            let says = match dt {
                Some(_) => format!("the device tree says {model}"),
                None => "there is no device tree".to_string(),
            };
            Finding::warn(
                ID,
                format!("profile {} forced with --board, but {says}", profile.id),
            )
            .evidence(evidence)
            .fix(format!(
                "check that --board {} is right for this board; drop --board to detect it",
                profile.id
            ))
        }
        Some(ProfileSource::Flag) => {
            Finding::pass(ID, format!("{model} → profile {} (--board)", profile.id))
                .evidence(evidence)
        }
        _ if profile.fallback => Finding::warn(
            ID,
            format!("{model}: unknown RK3588 board, using the generic profile"),
        )
        .evidence(evidence)
        .fix("add a profile for this board (profiles/README.md) or pass --board NAME"),
        _ => Finding::pass(ID, format!("{model} → profile {}", profile.id)).evidence(evidence),
    }
}
