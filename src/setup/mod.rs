//! `rvl setup`: plan, apply and roll back the board's move to the open GPU stack.
//!
//! Flow: facts (read through the root) → plan (pure) → shown with diffs → confirmed → downloads
//! verified → one journaled transaction → a second plan that must be empty. `--rollback` undoes
//! the applied transactions three-way (see `rollback.rs`: what changed since setup is kept);
//! `--status` shows them, the rolled-back ones and any interrupted run.

pub mod action;
pub mod apply;
pub mod archive;
pub mod builder;
pub mod buildtools;
pub mod edits;
pub mod facts;
pub mod fault;
pub mod fsops;
pub mod journal;
pub mod journal_check;
pub mod lock;
pub mod outcome;
pub mod overlays;
pub mod patches;
pub mod paths;
pub mod plan;
pub mod render;
pub mod rollback;
pub mod steps;
pub mod target;

use std::os::unix::fs::MetadataExt;

use crate::bootcfg::armbian::ARMBIAN_ENV;
use crate::bootcfg::ubootmenu::EXTLINUX_CONF;
use crate::error::Error;
use crate::host::gather::SetupProbe;
use crate::host::{self, Root};
use crate::manifest::Manifest;
use crate::profile::Profiles;
use crate::settings::{RvlVars, Settings};
use crate::{cli, fetch, output};
use outcome::{ApplyReport, Place, PlanReport, RollbackReport, SetupOutcome, StatusReport};

/// Run `rvl setup` in the mode its flags name. What it prints on the way (the plan before the
/// confirmation prompt, progress on stderr) is for people; the outcome is printed by `main`.
pub fn run(args: &cli::SetupArgs, settings: &Settings) -> anyhow::Result<SetupOutcome> {
    fault::configure(settings.vars.fault.as_deref());
    let root = Root::open_dir(&args.system.root)?;
    if args.status {
        return status(&root);
    }
    if args.rollback {
        return rollback(&root, args);
    }
    let run = Run::prepare(args, settings, root)?;
    if args.dry_run {
        run.plan_only()
    } else {
        run.apply()
    }
}

/// A planning run: what it knows before it reads the system, and how it plans from it.
struct Run<'a> {
    args: &'a cli::SetupArgs,
    settings: &'a Settings,
    root: Root,
    place: Place,
    target: target::Target,
    manifest: Manifest,
    series: patches::Series,
    opts: action::Options,
}

impl<'a> Run<'a> {
    /// Check the flags, choose the board, load the manifest and the patch series.
    fn prepare(
        args: &'a cli::SetupArgs,
        settings: &'a Settings,
        root: Root,
    ) -> anyhow::Result<Self> {
        plan::check_only(&args.only)?;
        let profiles = Profiles::load(args.system.profiles.as_deref())?;
        let target = target::choose(&profiles, args.system.board.as_deref(), &root)?;
        let manifest = Manifest::load_or_builtin(args.manifest.as_deref())?;
        let opts = action::Options {
            only: args.only.clone(),
            mesa_from: match args.mesa_from {
                cli::MesaFrom::Source => action::MesaSource::Source,
                cli::MesaFrom::Prebuilt => action::MesaSource::Prebuilt,
            },
            mesa_archive: local_archive(args)?,
        };
        let series =
            patches::Series::load(settings.vars.patches_dir.as_deref(), &built_projects(&opts))?;
        Ok(Run {
            args,
            settings,
            place: Place::of(&root),
            root,
            target,
            manifest,
            series,
            opts,
        })
    }

    /// Read the facts and plan from them.
    fn plan(&self) -> anyhow::Result<plan::Plan> {
        let overlay = overlays::for_board(&self.target.board);
        let mut facts = gather(&self.root, &self.manifest, self.settings, overlay);
        if self.opts.wants("mesa") && self.opts.mesa_from == action::MesaSource::Source {
            let tools = apply::Tools {
                stand_ins: self.settings.vars.root_tools.clone(),
            };
            facts.apt_policy =
                apply::apt_policy(&self.root, &tools, &crate::builddeps::policy_names());
        }
        // Compiled on the host from rvl's embedded source, never from the image.
        let compiled = overlay.map(|o| {
            let dtc = overlays::find_dtc(self.settings.vars.dtc.as_deref());
            overlays::compile(o, dtc.as_deref())
        });
        plan::plan(
            &facts,
            &self.target,
            &self.manifest,
            &self.series,
            &self.opts,
            compiled.as_ref(),
        )
    }

    /// `--dry-run`: the plan, and a note about an interrupted run.
    fn plan_only(&self) -> anyhow::Result<SetupOutcome> {
        let mut p = self.plan()?;
        if let Some(j) = journal::StateDir::new(&self.root).load_journal()? {
            p.notes.push(format!(
                "an interrupted {} run ({}) is pending; the next apply or rollback finishes it",
                j.kind, j.id
            ));
        }
        Ok(SetupOutcome::Plan(PlanReport {
            plan: p,
            place: self.place.clone(),
        }))
    }

    /// plan → confirm → prefetch → apply → re-plan, under the lock, after recovery.
    fn apply(&self) -> anyhow::Result<SetupOutcome> {
        require_write_access(&self.root)?;
        let _lock = lock::Lock::acquire(&self.root)?;
        let recovered = recover(&self.root, self.args.json)?;
        let p = self.plan()?;
        let mut report = ApplyReport {
            applied: false,
            recovered,
            plan: p,
            outcome: None,
            remaining: None,
            place: self.place.clone(),
        };
        if report.plan.is_empty() {
            return Ok(SetupOutcome::Apply(report));
        }
        if !self.args.json {
            output::print_text(&render::plan_text(
                &report.plan,
                &self.place.desc,
                self.settings.style,
            ));
        }
        confirm(self.args.yes, self.settings)?;
        let progress = self.settings.progress_style(self.args.json);
        let fetch_opts = fetch::Options {
            progress,
            ..fetch_options(&self.settings.vars)
        };
        let cache = apply::prefetch(&self.root, &report.plan, &fetch_opts)?;
        let tools = apply::Tools {
            stand_ins: self.settings.vars.root_tools.clone(),
        };
        let done = apply::apply(
            &self.root,
            &report.plan,
            &cache,
            &self.series,
            progress,
            &tools,
        )?;
        report.applied = true;
        report.outcome = Some(done);
        report.remaining = Some(self.plan()?.step_names());
        Ok(SetupOutcome::Apply(report))
    }
}

/// Most bytes a `--mesa-archive` may have (a panvk prefix packs to about 10 MB).
const MESA_ARCHIVE_MAX: u64 = 512 << 20;

/// `--mesa-archive FILE` with the sha256 it must have: `--mesa-sha256`, else the first word of
/// `FILE.sha256` (what `sha256sum` and scripts/build-panvk-deb.sh write).
fn local_archive(args: &cli::SetupArgs) -> anyhow::Result<Option<action::LocalArchive>> {
    let Some(file) = &args.mesa_archive else {
        return Ok(None);
    };
    if args.mesa_from != cli::MesaFrom::Prebuilt {
        return Err(Error::Usage(
            "--mesa-archive installs a prebuilt panvk: add --mesa-from prebuilt".into(),
        )
        .into());
    }
    let meta = std::fs::metadata(file)
        .map_err(|e| Error::BadInput(format!("--mesa-archive {}: {e}", file.display())))?;
    if !meta.is_file() || meta.len() == 0 || meta.len() > MESA_ARCHIVE_MAX {
        return Err(Error::BadInput(format!(
            "--mesa-archive {}: expected a .tar.xz of at most {} MiB, found {}",
            file.display(),
            MESA_ARCHIVE_MAX >> 20,
            if meta.is_file() {
                format!("{} bytes", meta.len())
            } else {
                "no regular file".into()
            }
        ))
        .into());
    }
    let sha256 = match &args.mesa_sha256 {
        Some(s) => s.clone(),
        None => {
            let mut side = file.clone().into_os_string();
            side.push(".sha256");
            let side = std::path::PathBuf::from(side);
            let text = crate::host::root::read_regular_string(&side, 4096).map_err(|e| {
                Error::Usage(format!(
                    "--mesa-archive {}: no sha256 to verify it by ({}: {e}); pass --mesa-sha256 HEX, or put the `sha256sum` line next to it",
                    file.display(),
                    side.display()
                ))
            })?;
            text.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        }
    };
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::BadInput(format!(
            "--mesa-archive {}: the sha256 must be 64 hex digits, got `{}`",
            file.display(),
            crate::output::escape_control(&sha256)
        ))
        .into());
    }
    let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
    Ok(Some(action::LocalArchive {
        file: abs.to_string_lossy().into_owned(),
        sha256: sha256.to_ascii_lowercase(),
        size: meta.len(),
    }))
}

/// Finish an interrupted run first (the caller holds the lock); say so on stderr.
fn recover(root: &Root, as_json: bool) -> anyhow::Result<journal::Recovery> {
    let recovered = journal::recover(root)?;
    if recovered != journal::Recovery::Nothing && !as_json {
        eprintln!("rvl: {recovered}");
    }
    Ok(recovered)
}

/// The projects whose patch series this run may need: those of the build steps it plans.
fn built_projects(opts: &action::Options) -> Vec<&'static str> {
    let mut projects = Vec::new();
    if opts.wants("mesa") && opts.mesa_from == action::MesaSource::Source {
        projects.push("mesa");
    }
    if opts.wants("llama-cpp") {
        projects.push("llama.cpp");
    }
    projects
}

/// Read the facts through the root: the files setup owns or edits, the boot links, the
/// firmware's hash and the install stamps of the pinned builds.
fn gather(
    root: &Root,
    manifest: &Manifest,
    settings: &Settings,
    overlay: Option<&overlays::Overlay>,
) -> facts::Facts {
    let texts = [
        paths::RVL_CONF,
        paths::RVL_OVERLAYS_CONF,
        EXTLINUX_CONF,
        ARMBIAN_ENV,
        paths::GROUP_FILE,
        paths::GSHADOW_FILE,
        paths::ICD_FILE,
        paths::ENVIRONMENT_D_FILE,
        paths::PROFILE_D_FILE,
        paths::OS_RELEASE,
    ]
    .map(String::from)
    .into_iter()
    .chain(paths::LLAMA_WRAPPERS.map(|(w, _)| w.to_string()))
    .collect();
    let probe = SetupProbe {
        texts,
        links: paths::ARMBIAN_BOOT_LINKS.map(String::from).to_vec(),
        hashes: manifest
            .recommended_firmware()
            .map(|f| crate::firmware::standard_path(&f.path))
            .into_iter()
            .chain(
                overlay
                    .into_iter()
                    .flat_map(|o| steps::overlay_paths(o.name)),
            )
            .collect(),
        present: [
            steps::probe_paths(manifest),
            vec![steps::KBASE_DEVICE.into()],
        ]
        .concat(),
        listed_dirs: vec!["/boot".into(), "/boot/dtbo".into()],
        sudo_user: settings.vars.sudo_user.clone(),
    };
    host::gather::setup_facts(root, &probe)
}

/// Network settings; `RVL_FETCH_STALL_SECS` / `RVL_FETCH_ATTEMPTS` shorten them for tests.
fn fetch_options(vars: &RvlVars) -> fetch::Options {
    let mut o = fetch::Options::default();
    if let Some(s) = vars
        .fetch_stall_secs
        .as_deref()
        .and_then(|v| v.parse().ok())
    {
        o.stall_timeout = std::time::Duration::from_secs(s);
    }
    if let Some(n) = vars.fetch_attempts.as_deref().and_then(|v| v.parse().ok()) {
        o.attempts = n;
        o.backoff = std::time::Duration::from_millis(50);
    }
    o
}

/// Changing the system needs root, unless `--root` is a tree the user owns.
fn require_write_access(root: &Root) -> anyhow::Result<()> {
    if fsops::is_root() {
        return Ok(());
    }
    let uid = rustix::process::geteuid().as_raw();
    let owned = !root.is_live() && std::fs::metadata(root.base()).is_ok_and(|m| m.uid() == uid);
    if owned {
        Ok(())
    } else {
        Err(Error::NeedsRoot(
            "setup changes the system: run it as root (sudo rvl setup ...), or use --dry-run to look".into(),
        )
        .into())
    }
}

fn confirm(yes: bool, settings: &Settings) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    if !settings.can_prompt() {
        return Err(Error::NotConfirmed(
            "not applying: no terminal to ask for confirmation; pass --yes to apply (nothing was changed)".into(),
        )
        .into());
    }
    let ok = dialoguer::Confirm::new()
        .with_prompt("Apply this plan?")
        .default(false)
        .interact()
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(Error::NotConfirmed("not applying: declined (nothing was changed)".into()).into())
    }
}

/// `--rollback`: undo the applied runs (all, or `--run ID`), newest first; `--dry-run` only
/// says what that would do.
fn rollback(root: &Root, args: &cli::SetupArgs) -> anyhow::Result<SetupOutcome> {
    let opts = rollback::Options {
        force: args.force,
        run: args.run.clone(),
        dry_run: args.dry_run,
    };
    let place = Place::of(root);
    if opts.dry_run {
        let pending = journal::StateDir::new(root).load_journal()?;
        let runs = journal::rollback(root, &opts)?;
        return Ok(SetupOutcome::Rollback(RollbackReport::new(
            true,
            journal::Recovery::Nothing,
            pending.map(|j| {
                format!(
                    "an interrupted {} run ({}) is pending; the rollback finishes it first",
                    j.kind, j.id
                )
            }),
            runs,
            place,
        )));
    }
    require_write_access(root)?;
    let _lock = lock::Lock::acquire(root)?;
    let recovered = recover(root, args.json)?;
    let runs = journal::rollback(root, &opts)?;
    Ok(SetupOutcome::Rollback(RollbackReport::new(
        false, recovered, None, runs, place,
    )))
}

/// `--status`: the runs setup applied or rolled back, and any interrupted run.
fn status(root: &Root) -> anyhow::Result<SetupOutcome> {
    let dir = journal::StateDir::new(root);
    let st = dir.load_state()?;
    Ok(SetupOutcome::Status(StatusReport {
        applied: st.transactions,
        rolled_back: st.rolled_back,
        interrupted: dir.load_journal()?,
        place: Place::of(root),
    }))
}
