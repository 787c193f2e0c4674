//! Fault injection for the crash-safety tests: `RVL_FAULT=after-step:NAME` stops the process
//! right after step NAME finished, `RVL_FAULT=at-write:N` stops it during the N-th change to the
//! system (after the new content is on disk in its temp file, before it is renamed into place,
//! the worst moment for a crash). The process exits at once with [`FAULT_EXIT`], without
//! unwinding or cleaning up, as a power cut would leave it (the kernel drops the lock).
//!
//! The spec comes from the settings (`settings.vars.fault`), set once by [`configure`] when
//! setup starts; unconfigured (unit tests, other verbs) means no fault.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Exit status of an injected fault (not one of the documented codes on purpose).
pub const FAULT_EXIT: i32 = 99;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    AfterStep(String),
    AtWrite(u64),
}

/// Parse a fault spec; `None` for an empty or unknown one (a typo must not look like a crash).
pub fn parse(spec: &str) -> Option<Fault> {
    let (kind, arg) = spec.trim().split_once(':')?;
    match kind {
        "after-step" if !arg.is_empty() => Some(Fault::AfterStep(arg.to_string())),
        "at-write" => arg.parse().ok().filter(|n| *n > 0).map(Fault::AtWrite),
        _ => None,
    }
}

static FAULT: OnceLock<Option<Fault>> = OnceLock::new();

/// Set the fault for this process from its spec (`RVL_FAULT`); the first call wins.
pub fn configure(spec: Option<&str>) {
    let _ = FAULT.set(spec.and_then(parse));
}

fn configured() -> Option<&'static Fault> {
    FAULT.get().and_then(Option::as_ref)
}

static WRITES: AtomicU64 = AtomicU64::new(0);

/// Called once per change to the system, just before it becomes visible.
pub fn write_point(what: &std::path::Path) {
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    if configured() == Some(&Fault::AtWrite(n)) {
        crash(&format!("at write {n} ({})", what.display()));
    }
}

/// Called after each step of an apply finished.
pub fn step_done(step: &str) {
    if matches!(configured(), Some(Fault::AfterStep(s)) if s == step) {
        crash(&format!("after step {step}"));
    }
}

fn crash(at: &str) -> ! {
    eprintln!("rvl: injected fault (RVL_FAULT) {at}: stopping now");
    std::process::exit(FAULT_EXIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!(
            parse("after-step:kernel"),
            Some(Fault::AfterStep("kernel".into()))
        );
        assert_eq!(parse("at-write:3"), Some(Fault::AtWrite(3)));
        assert_eq!(parse("at-write:0"), None);
        assert_eq!(parse("at-write:x"), None);
        assert_eq!(parse("after-step:"), None);
        assert_eq!(parse("explode"), None);
    }
}
