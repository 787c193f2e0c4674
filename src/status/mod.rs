//! `rvl status`: the stack as it stands, in one screen. The IO is here (doctor's inventory
//! gather, setup's state files read-only, the build stamps in rvl's prefixes); what is shown is
//! decided from that data alone in [`view`].

pub mod view;

use crate::error::Error;
use crate::host::{self, Root};
use crate::manifest::Manifest;
use crate::profile::Profiles;
use crate::settings::Settings;
use crate::setup::journal::StateDir;
use crate::setup::paths::BUILD_STAMP;
use crate::{cli, doctor};

pub use view::StatusOutcome;

/// Where rvl installs its builds; each prefix holds its build stamp (`share/rvl/build.json`).
const RVL_PREFIXES: &str = "/opt/rvl";
/// Stamps are a few hundred bytes; anything larger is not one of ours.
const STAMP_CAP: u64 = 1 << 20;

pub fn run(args: &cli::StatusArgs, settings: &Settings) -> anyhow::Result<StatusOutcome> {
    let profiles = Profiles::load(args.system.profiles.as_deref()).map_err(Error::from)?;
    let manifest = Manifest::load_or_builtin(args.manifest.as_deref())?;
    let root = Root::open_dir(&args.system.root).map_err(Error::from)?;
    let chosen = profiles
        .choose_for(args.system.board.as_deref(), &root)
        .map_err(Error::from)?;
    let profile = chosen.map(|(p, _)| p);
    // As doctor does: a foreign root's own login environment decides its Vulkan loader's view.
    let env = host::env::for_root(&root, &settings.env);
    let inv = host::gather(
        &root,
        &env,
        &host::GatherOptions {
            firmware: doctor::firmware_for(profile),
            // Status reads files only: no ioctls, no Vulkan loader.
            live: false,
            vulkan: false,
            vulkan_library: None,
            // Nor runs llama.cpp's binaries.
            llama_devices: false,
        },
    );
    // Read-only: loading never creates the state directory or takes the lock.
    let dir = StateDir::new(&root);
    let state = dir.load_state()?;
    let interrupted = dir.load_journal()?;
    Ok(StatusOutcome(view::Status::new(&view::Inputs {
        inv: &inv,
        profile,
        manifest: &manifest,
        state: &state,
        interrupted: interrupted.as_ref(),
        builds: builds(&root),
        hint: root.invocation(
            args.system.board.as_deref(),
            args.system.profiles.as_deref(),
            args.manifest.as_deref(),
        ),
    })))
}

/// Every prefix under /opt/rvl with its build stamp (None when missing or unreadable: an
/// incomplete install, which status shows as such).
fn builds(root: &Root) -> Vec<view::Build> {
    let names = root.list_dir(RVL_PREFIXES).unwrap_or_default();
    names
        .into_iter()
        // Staging directories of a build in progress or an aborted one.
        .filter(|n| !n.starts_with('.'))
        .map(|name| {
            let prefix = format!("{RVL_PREFIXES}/{name}");
            let stamp = root
                .read_capped(format!("{prefix}/{BUILD_STAMP}"), STAMP_CAP)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            view::Build { prefix, stamp }
        })
        .collect()
}
