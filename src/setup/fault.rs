//! Fault injection for the crash-safety tests: `RVL_FAULT=after-step:NAME` stops the process
//! right after step NAME finished, `RVL_FAULT=at-write:N` stops it during the N-th change to the
//! system (after the new content is on disk in its temp file, before it is renamed into place,
//! the worst moment for a crash), `RVL_FAULT=after-phase:LABEL:PHASE` stops it right after a
//! build's phase (`mesa-26.2.4:build`: ninja done, nothing installed yet). The process exits at once with [`FAULT_EXIT`], without
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
    /// `after-phase:LABEL:PHASE`: right after a build's phase finished (`mesa-26.2.4:build`),
    /// as a Ctrl-C between ninja and the install would.
    AfterPhase(String),
}

/// Parse a fault spec; `None` for an empty or unknown one (a typo must not look like a crash).
pub fn parse(spec: &str) -> Option<Fault> {
    let (kind, arg) = spec.trim().split_once(':')?;
    match kind {
        "after-step" if !arg.is_empty() => Some(Fault::AfterStep(arg.to_string())),
        "at-write" => arg.parse().ok().filter(|n| *n > 0).map(Fault::AtWrite),
        "after-phase" if arg.contains(':') => Some(Fault::AfterPhase(arg.to_string())),
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

/// Called after each phase of a build finished (`label` as `mesa-26.2.4`, `phase` as `build`).
pub fn phase_done(label: &str, phase: &str) {
    if matches!(configured(), Some(Fault::AfterPhase(s)) if *s == format!("{label}:{phase}")) {
        crash(&format!("after {label}: {phase}"));
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
        assert_eq!(
            parse("after-phase:mesa-26.2.4:build"),
            Some(Fault::AfterPhase("mesa-26.2.4:build".into()))
        );
        assert_eq!(parse("after-phase:build"), None);
    }
}
