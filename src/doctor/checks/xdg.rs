//! `xdg-runtime-dir`: set, a directory, owned by this user, mode 0700. A warning only: the
//! failure is libwayland's message, Vulkan compute works without it.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;

const ID: &str = "xdg-runtime-dir";
const FIX: &str = "export XDG_RUNTIME_DIR=/run/user/$(id -u) (log in through logind, e.g. not `su`, so the directory exists with mode 0700)";

pub fn check(ctx: &Context) -> Finding {
    if let Some(why) = ctx.not_live_reason() {
        return Finding::skip(ID, why);
    }
    let Some(x) = &ctx.inv.live_facts.xdg_runtime_dir else {
        return Finding::warn(
            ID,
            "XDG_RUNTIME_DIR is not set (libwayland will print an error)",
        )
        .fix(FIX);
    };
    let euid = ctx.inv.live_facts.user.as_ref().map(|u| u.euid);
    let ev = vec![format!(
        "{}: exists {}, owner {}, mode {}",
        x.path,
        x.exists,
        x.owner.map(|o| o.to_string()).unwrap_or_else(|| "?".into()),
        x.mode
            .map(|m| format!("{m:04o}"))
            .unwrap_or_else(|| "?".into())
    )];
    let problem = if !x.exists {
        Some(format!("XDG_RUNTIME_DIR={} does not exist", x.path))
    } else if !x.is_dir {
        Some(format!("XDG_RUNTIME_DIR={} is not a directory", x.path))
    } else if euid.is_some() && x.owner != euid {
        Some(format!(
            "XDG_RUNTIME_DIR={} belongs to uid {}, not this user",
            x.path,
            x.owner.unwrap_or(u32::MAX)
        ))
    } else if x.mode != Some(0o700) {
        Some(format!(
            "XDG_RUNTIME_DIR={} has mode {:04o}, not 0700",
            x.path,
            x.mode.unwrap_or(0)
        ))
    } else {
        None
    };
    match problem {
        Some(p) => Finding::warn(ID, p).evidence(ev).fix(FIX),
        None => Finding::pass(ID, format!("{} (0700, yours)", x.path)).evidence(ev),
    }
}
