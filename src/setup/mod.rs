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
    if args.download_only {
        return download_only(args, settings);
    }
    let root = Root::open_dir(&args.system.root).map_err(Error::from)?;
    if args.status {
        return status(&root, hint(&root, args));
    }
    if args.rollback {
        return rollback(&root, args, settings);
    }
    let run = Run::prepare(args, settings, root)?;
    if args.dry_run {
        run.plan_only()
    } else {
        run.apply()
    }
}

/// How setup was pointed at the system, for the commands its output suggests.
fn hint(root: &Root, args: &cli::SetupArgs) -> crate::hint::Invocation {
    root.invocation(
        args.system.board.as_deref(),
        args.system.profiles.as_deref(),
        args.manifest.as_deref(),
    )
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
        target::check_machine(
            &root,
            args.system.board.as_deref(),
            settings.vars.lab_machine.as_deref(),
        )?;
        let profiles = Profiles::load(args.system.profiles.as_deref()).map_err(Error::from)?;
        let target = target::choose(&profiles, args.system.board.as_deref(), &root)?;
        let manifest = Manifest::load_or_builtin(args.manifest.as_deref())?;
        let hint = hint(&root, args).with_board(Some(&target.board));
        let opts = action::Options {
            hint: hint.clone(),
            user: args.user.clone(),
            // On the running system every tool runs from PATH; for an image only the
            // stand-ins of RVL_ROOT_TOOLS do (tests): the others are the board's to run.
            tools_here: action::TOOLS
                .iter()
                .filter(|t| {
                    root.is_live()
                        || settings
                            .vars
                            .root_tools
                            .as_ref()
                            .is_some_and(|d| d.join(t).is_file())
                })
                .map(|t| t.to_string())
                .collect(),
            only: args.only.clone(),
            mesa_from: match args.mesa_from {
                cli::MesaFrom::Source => action::MesaSource::Source,
                cli::MesaFrom::Prebuilt => action::MesaSource::Prebuilt,
            },
            mesa_archive: local_archive(args)?,
            mesa_candidates: args.mesa_candidates,
        };
        if args.mesa_candidates && args.mesa_from == cli::MesaFrom::Prebuilt {
            return Err(Error::Usage(
                "--mesa-candidates builds panvk from source with the candidate patches; a prebuilt archive carries the series only (leave out --mesa-from prebuilt)".into(),
            )
            .into());
        }
        let candidates: &[&str] = if args.mesa_candidates { &["mesa"] } else { &[] };
        let series = patches::Series::load(
            settings.vars.patches_dir.as_deref(),
            &loaded_projects(&opts),
            candidates,
        )?;
        Ok(Run {
            args,
            settings,
            place: Place::of(&root, hint),
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
        let mut facts = gather(
            &self.root,
            &self.manifest,
            &self.series,
            self.settings,
            overlay,
        );
        if self.opts.wants("mesa") && self.opts.mesa_from == action::MesaSource::Source {
            let tools = apply::Tools {
                stand_ins: self.settings.vars.root_tools.clone(),
                hint: self.opts.hint.clone(),
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

    /// What to do about a download that cannot connect: fetch the same files where there is
    /// network, then point setup here at them.
    fn offline_fix(&self) -> String {
        let mut elsewhere = String::from("rvl setup --download-only --cache DIR");
        if let Some(m) = &self.args.manifest {
            elsewhere.push_str(" --manifest ");
            elsewhere.push_str(&crate::shell::quote(&m.display().to_string()));
        }
        if self.args.mesa_from == cli::MesaFrom::Prebuilt {
            elsewhere.push_str(" --mesa-from prebuilt");
        }
        format!(
            "on a machine with network: `{elsewhere}`, copy DIR here, then: {}",
            self.opts.hint.setup("--cache DIR")
        )
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
            self.settings.print(&render::plan_text(
                &report.plan,
                &self.place.desc,
                self.settings.style,
            ));
        }
        confirm(self.args.yes, self.settings, Confirm::Apply)?;
        let progress = self.settings.progress_style(self.args.json);
        let fetch_opts = fetch::Options {
            progress,
            ..fetch_options(&self.settings.vars)?
        };
        let fetched = apply::prefetch(
            &self.root,
            &report.plan,
            &fetch_opts,
            self.args.cache.as_deref(),
        )?;
        // Offline: the steps that needed a download are blocked, the others apply.
        for (step, why) in fetched.offline {
            let fix = self.offline_fix();
            report.plan.block(&step, why, fix);
        }
        if report.plan.is_empty() {
            return Ok(SetupOutcome::Apply(report));
        }
        let cache = fetched.cache;
        let tools = apply::Tools {
            stand_ins: self.settings.vars.root_tools.clone(),
            hint: self.opts.hint.clone(),
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

/// `--download-only --cache DIR`: every artifact the wanted steps may need (whatever the
/// board has already), downloaded into DIR under the names setup's cache uses and checked
/// against the manifest's sha256. Needs no board and changes no system.
fn download_only(args: &cli::SetupArgs, settings: &Settings) -> anyhow::Result<SetupOutcome> {
    plan::check_only(&args.only)?;
    let dir = args
        .cache
        .as_deref()
        .expect("clap: --download-only requires --cache");
    let manifest = Manifest::load_or_builtin(args.manifest.as_deref())?;
    let wants = |step: &str| args.only.is_empty() || args.only.iter().any(|s| s == step);
    let mut want: Vec<(&str, apply::Artifact)> = Vec::new();
    if wants("firmware") {
        if let Some(fw) = manifest.recommended_firmware() {
            if let Some(url) = &fw.url {
                want.push((
                    "firmware",
                    apply::Artifact {
                        origin: crate::manifest::Origin::Url(url.clone()),
                        sha256: fw.sha256.clone(),
                        size: Some(fw.size),
                    },
                ));
            }
        }
    }
    if wants("mesa") {
        match args.mesa_from {
            cli::MesaFrom::Source => {
                want.extend(manifest.source("mesa").map(|s| ("mesa", s.into())));
                // Where the board's release has no new enough meson or SPIRV-Tools, setup
                // builds them from these (which it needs depends on the board: fetch all).
                want.extend(manifest.build_tools.iter().map(|t| {
                    (
                        "mesa",
                        apply::Artifact {
                            origin: crate::manifest::Origin::Url(t.url.clone()),
                            sha256: t.sha256.clone(),
                            size: Some(t.size),
                        },
                    )
                }));
            }
            cli::MesaFrom::Prebuilt => want.extend(
                manifest
                    .prebuilt
                    .iter()
                    .filter(|p| p.arch == "aarch64")
                    .map(|p| {
                        (
                            "mesa",
                            apply::Artifact {
                                origin: crate::manifest::Origin::Url(p.url.clone()),
                                sha256: p.sha256.clone(),
                                size: Some(p.size),
                            },
                        )
                    }),
            ),
        }
    }
    if wants("llama-cpp") {
        want.extend(
            manifest
                .source("llama.cpp")
                .map(|s| ("llama-cpp", s.into())),
        );
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create", dir, e))?;
    let opts = fetch::Options {
        progress: settings.progress_style(args.json),
        ..fetch_options(&settings.vars)?
    };
    let mut files = Vec::new();
    for (step, art) in want {
        let dest = dir.join(art.name());
        let fetched = art.from_local(dir).ok().flatten().is_none();
        art.download(&dest, &opts)?;
        files.push(outcome::CachedFile {
            step: step.to_string(),
            file: art.name(),
            from: art.what(),
            sha256: art.sha256.clone(),
            fetched,
        });
    }
    Ok(SetupOutcome::Download(outcome::DownloadReport {
        cache: dir.display().to_string(),
        files,
    }))
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

/// The projects whose patch series this run may need: those of the build steps it plans, and
/// Mesa's with `--mesa-candidates` (the icd step finds the build by them: its prefix is named
/// after the candidates).
fn loaded_projects(opts: &action::Options) -> Vec<&'static str> {
    let mut projects = Vec::new();
    if (opts.wants("mesa") && opts.mesa_from == action::MesaSource::Source) || opts.mesa_candidates
    {
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
    series: &patches::Series,
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
        paths::PASSWD_FILE,
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
            steps::probe_paths(manifest, series),
            vec![steps::KBASE_DEVICE.into()],
        ]
        .concat(),
        listed_dirs: vec!["/boot".into(), "/boot/dtbo".into()],
        // The person behind `sudo` is this machine's: an image's users are its own.
        sudo_user: root
            .is_live()
            .then(|| settings.vars.sudo_user.clone())
            .flatten(),
    };
    host::gather::setup_facts(root, &probe)
}

/// Network settings: `RVL_FETCH_STALL_SECS`, `RVL_FETCH_ATTEMPTS`, `RVL_FETCH_MIN_RATE` and
/// `RVL_FETCH_GRACE_SECS` change them (tests shorten them); a value that is not a whole number
/// is a usage error naming the variable.
fn fetch_options(vars: &RvlVars) -> anyhow::Result<fetch::Options> {
    fn number(name: &str, value: Option<&str>) -> Result<Option<u64>, Error> {
        value
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| Error::Usage(format!("{name}={v:?}: expected a whole number")))
            })
            .transpose()
    }
    use std::time::Duration;
    let mut o = fetch::Options::default();
    if let Some(s) = number("RVL_FETCH_STALL_SECS", vars.fetch_stall_secs.as_deref())? {
        o.stall_timeout = Duration::from_secs(s);
    }
    if let Some(n) = number("RVL_FETCH_ATTEMPTS", vars.fetch_attempts.as_deref())? {
        o.attempts = u32::try_from(n).unwrap_or(u32::MAX);
        o.backoff = Duration::from_millis(50);
    }
    if let Some(r) = number("RVL_FETCH_MIN_RATE", vars.fetch_min_rate.as_deref())? {
        o.min_rate = r;
    }
    if let Some(s) = number("RVL_FETCH_GRACE_SECS", vars.fetch_grace_secs.as_deref())? {
        o.rate_grace = Duration::from_secs(s);
    }
    Ok(o)
}

/// Changing the system needs root, unless `--root` is a tree the user owns.
fn require_write_access(root: &Root) -> anyhow::Result<()> {
    if !root.needs_root_to_change() {
        Ok(())
    } else {
        Err(Error::NeedsRoot(
            "setup changes the system: run it as root (sudo rvl setup ...), or use --dry-run to look".into(),
        )
        .into())
    }
}

/// What is being confirmed: apply and rollback ask and refuse alike.
#[derive(Clone, Copy)]
enum Confirm {
    Apply,
    Rollback,
}

/// Go on only with `--yes` or a "yes" typed on a terminal; without a terminal, refuse (exit 9)
/// with nothing changed.
fn confirm(yes: bool, settings: &Settings, what: Confirm) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    let (verb, flag_does, prompt) = match what {
        Confirm::Apply => ("applying", "apply", "Apply this plan?"),
        Confirm::Rollback => (
            "rolling back",
            "roll back; --rollback --dry-run shows what it would do",
            "Roll back these runs?",
        ),
    };
    if !settings.can_prompt() {
        return Err(Error::NotConfirmed(format!(
            "not {verb}: no terminal to ask for confirmation; pass --yes to {flag_does} (nothing was changed)"
        ))
        .into());
    }
    let ok = dialoguer::Confirm::new()
        .with_prompt(prompt)
        .default(false)
        .interact()
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(Error::NotConfirmed(format!("not {verb}: declined (nothing was changed)")).into())
    }
}

/// `--rollback`: undo the applied runs (all, or `--run ID`), newest first; `--dry-run` only
/// says what that would do.
fn rollback(
    root: &Root,
    args: &cli::SetupArgs,
    settings: &Settings,
) -> anyhow::Result<SetupOutcome> {
    let place = Place::of(root, hint(root, args));
    let opts = rollback::Options {
        force: args.force,
        run: args.run.clone(),
        dry_run: args.dry_run,
        hint: place.hint.clone(),
    };
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
    // As apply: shown, then confirmed on a terminal; --yes needs no preview.
    if !args.yes {
        let preview = journal::rollback(
            root,
            &rollback::Options {
                dry_run: true,
                ..opts.clone()
            },
        )?;
        if !preview.is_empty() {
            if !args.json && settings.can_prompt() {
                let shown =
                    RollbackReport::new(true, recovered.clone(), None, preview, place.clone());
                settings.print(&output::Outcome::human(
                    &SetupOutcome::Rollback(shown),
                    settings.style,
                ));
            }
            confirm(false, settings, Confirm::Rollback)?;
        }
    }
    let mut runs = journal::rollback(root, &opts)?;
    // What finishing an interrupted rollback did is this run's work too: listed first, so
    // the report says what was put back instead of "Nothing to roll back".
    let note = match &recovered {
        journal::Recovery::FinishedRollback { id, runs: finished } => {
            runs.splice(0..0, finished.iter().cloned());
            Some(format!(
                "finished the rollback that was interrupted (run {id}); what it put back is listed below"
            ))
        }
        _ => None,
    };
    Ok(SetupOutcome::Rollback(RollbackReport::new(
        false, recovered, note, runs, place,
    )))
}

/// `--status`: the runs setup applied or rolled back, and any interrupted run.
fn status(root: &Root, hint: crate::hint::Invocation) -> anyhow::Result<SetupOutcome> {
    let dir = journal::StateDir::new(root);
    let st = dir.load_state()?;
    Ok(SetupOutcome::Status(StatusReport {
        applied: st.transactions,
        rolled_back: st.rolled_back,
        interrupted: dir.load_journal()?,
        place: Place::of(root, hint),
    }))
}
