//! `rvl doctor`: gather an inventory, pick the board profile, run pure checks, render.

pub mod checks;
pub mod context;
pub mod finding;
pub mod report;

use crate::error::Error;
use crate::host::{self, Root};
use crate::manifest::Manifest;
use crate::profile::{Profile, Profiles};
use crate::settings::Settings;
use crate::{cli, exit};

use context::Context;
use finding::{Finding, Status};
pub use report::DoctorOutcome;

/// G610's firmware, used when no profile says otherwise (e.g. an x86 host).
const DEFAULT_FIRMWARE: &str = "arm/mali/arch10.8/mali_csffw.bin";

/// The firmware file the inventory looks for: the profile's, else the G610's.
pub fn firmware_for(profile: Option<&Profile>) -> &str {
    profile
        .map(|p| p.gpu.firmware.as_str())
        .unwrap_or(DEFAULT_FIRMWARE)
}

pub fn run(args: &cli::DoctorArgs, settings: &Settings) -> anyhow::Result<DoctorOutcome> {
    if args.list_checks {
        return Ok(DoctorOutcome::check_list());
    }
    let selected = select_checks(&args.only)?;
    let profiles = Profiles::load(args.system.profiles.as_deref()).map_err(Error::from)?;
    let manifest = Manifest::load_or_builtin(args.manifest.as_deref())?;
    let root = Root::open_dir(&args.system.root).map_err(Error::from)?;
    let chosen = profiles
        .choose_for(args.system.board.as_deref(), &root)
        .map_err(Error::from)?;
    let (profile, source) = (chosen.map(|(p, _)| p), chosen.map(|(_, s)| s));
    // Loading Vulkan costs hundreds of milliseconds: only when the check will use it.
    let wants_vulkan =
        !args.no_vulkan && profile.is_some() && selected.iter().any(|c| c.id == "vulkan-device");
    // `--list-devices` loads Vulkan in a child: the same rule as the loader in-process.
    let wants_llama =
        !args.no_vulkan && profile.is_some() && selected.iter().any(|c| c.id == "llama-cpp");
    // A foreign root is another system: its login environment, not this shell's, decides
    // what its Vulkan loader reads.
    let env = host::env::for_root(&root, &settings.env);
    let inv = host::gather(
        &root,
        &env,
        &host::GatherOptions {
            firmware: firmware_for(profile),
            live: true,
            vulkan: wants_vulkan,
            // The loader smoke-bench uses too (RVL_VULKAN_LIBRARY when set).
            vulkan_library: settings.vars.vulkan_library.as_deref(),
            llama_devices: wants_llama,
        },
    );
    let ctx = Context {
        inv: &inv,
        profile,
        source,
        manifest: &manifest,
        no_vulkan: args.no_vulkan,
        hint: root.invocation(
            args.system.board.as_deref(),
            args.system.profiles.as_deref(),
            args.manifest.as_deref(),
        ),
    };
    let findings: Vec<Finding> = selected.iter().map(|c| (c.run)(&ctx)).collect();
    let code = exit_code(&findings, args.strict);
    Ok(DoctorOutcome::Report(Box::new(
        report::Report::new(&ctx, findings, code).verbose(args.verbose),
    )))
}

/// The checks `--only` names, in their normal order; all of them when none are named.
fn select_checks(only: &[String]) -> anyhow::Result<Vec<&'static checks::Check>> {
    for id in only {
        if checks::by_id(id.trim()).is_none() {
            let known: Vec<_> = checks::ALL.iter().map(|c| c.id).collect();
            return Err(Error::Usage(format!(
                "--only: unknown check `{id}`{} (known: {})",
                crate::output::did_you_mean(id.trim(), known.iter().copied()),
                known.join(", ")
            ))
            .into());
        }
    }
    Ok(checks::ALL
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| o.trim() == c.id))
        .collect())
}

/// 0 when nothing failed (warnings too with `strict`), 1 otherwise.
pub fn exit_code(findings: &[Finding], strict: bool) -> i32 {
    let bad = |f: &Finding| f.status == Status::Fail || (strict && f.status == Status::Warn);
    if findings.iter().any(bad) {
        exit::PROBLEMS
    } else {
        exit::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error;

    #[test]
    fn exit_codes_follow_fail_and_strict() {
        let p = Finding::pass("a", "");
        let w = Finding::warn("b", "");
        let f = Finding::fail("c", "");
        assert_eq!(exit_code(&[p.clone(), w.clone()], false), exit::OK);
        assert_eq!(exit_code(&[p.clone(), w], true), exit::PROBLEMS);
        assert_eq!(exit_code(&[p, f], false), exit::PROBLEMS);
        assert_eq!(exit_code(&[Finding::skip("d", "")], true), exit::OK);
    }

    #[test]
    fn only_validates_ids_and_keeps_order() {
        let ids = |v: &[&str]| {
            select_checks(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map(|cs| cs.iter().map(|c| c.id).collect::<Vec<_>>())
        };
        assert_eq!(
            ids(&["firmware", "board"]).unwrap(),
            vec!["board", "firmware"]
        );
        assert_eq!(ids(&[]).unwrap().len(), checks::ALL.len());
        let err = ids(&["nope"]).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::USAGE);
    }
}
