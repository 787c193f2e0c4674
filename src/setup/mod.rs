//! `rvl setup`: plan, apply and roll back the board's move to the open GPU stack.
//!
//! Flow: facts (read through the root) → plan (pure) → shown with diffs → confirmed → downloads
//! verified → one journaled transaction → a second plan that must be empty. `--rollback` undoes
//! every applied transaction byte for byte; `--status` shows them and any interrupted run.

pub mod action;
pub mod apply;
pub mod archive;
pub mod builder;
pub mod facts;
pub mod fault;
pub mod fsops;
pub mod journal;
pub mod lock;
pub mod patches;
pub mod paths;
pub mod plan;
pub mod render;
pub mod steps;
pub mod target;

use std::os::unix::fs::MetadataExt;

use serde_json::json;

use crate::error::Error;
use crate::host::Root;
use crate::manifest::Manifest;
use crate::output;
use crate::profile::Profiles;
use crate::settings::{RvlVars, Settings};
use crate::{cli, exit, fetch};

pub fn run(args: &cli::SetupArgs, settings: &Settings) -> anyhow::Result<i32> {
    fault::configure(settings.vars.fault.as_deref());
    let root = Root::open_dir(&args.system.root)?;
    if args.status {
        return status(&root, args.json);
    }
    if args.rollback {
        return rollback(&root, args.json);
    }
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
    };
    let series =
        patches::Series::load(settings.vars.patches_dir.as_deref(), &built_projects(&opts))?;
    let make_plan = || -> anyhow::Result<plan::Plan> {
        let facts = gather(&root, &manifest, settings);
        plan::plan(&facts, &target, &manifest, &series, &opts)
    };
    let style = settings.style;
    let root_desc = describe_root(&root);

    if args.dry_run {
        let mut p = make_plan()?;
        if let Some(j) = journal::StateDir::new(&root).load_journal()? {
            p.notes.push(format!(
                "an interrupted {} run ({}) is pending; the next apply or rollback finishes it",
                j.kind, j.id
            ));
        }
        if args.json {
            output::print_json(&json!({
                "schema_version": output::SCHEMA_VERSION,
                "command": "setup",
                "mode": "plan",
                "plan": p,
            }))?;
        } else {
            print!("{}", render::plan_text(&p, &root_desc, style));
        }
        return Ok(exit::OK);
    }

    require_write_access(&root)?;
    let _lock = lock::Lock::acquire(&root)?;
    let recovered = journal::recover(&root)?;
    if recovered != journal::Recovery::Nothing && !args.json {
        eprintln!("rvl: {recovered}");
    }
    let p = make_plan()?;
    if p.is_empty() {
        if args.json {
            output::print_json(&json!({
                "schema_version": output::SCHEMA_VERSION,
                "command": "setup",
                "mode": "apply",
                "applied": false,
                "recovered": recovered,
                "plan": p,
            }))?;
        } else {
            print!("{}", render::plan_text(&p, &root_desc, style));
        }
        return Ok(exit::OK);
    }
    if !args.json {
        print!("{}", render::plan_text(&p, &root_desc, style));
    }
    confirm(args.yes, settings)?;
    let fetch_opts = fetch::Options {
        progress: fetch::Progress::Auto,
        ..fetch_options(&settings.vars)
    };
    let cache = apply::prefetch(&root, &p, &fetch_opts)?;
    let outcome = apply::apply(&root, &p, &cache, &series, false)?;
    let after = make_plan()?;
    if args.json {
        output::print_json(&json!({
            "schema_version": output::SCHEMA_VERSION,
            "command": "setup",
            "mode": "apply",
            "applied": true,
            "recovered": recovered,
            "plan": p,
            "outcome": outcome,
            "remaining": after.step_names(),
        }))?;
    } else {
        println!(
            "\n{} applied {} step{} ({}); undo with: rvl setup --rollback{}",
            style.green("✓"),
            outcome.steps.len(),
            if outcome.steps.len() == 1 { "" } else { "s" },
            outcome.steps.join(", "),
            root_flag(&root)
        );
        if !after.is_empty() {
            println!(
                "{} a new plan still lists: {} (see `rvl setup --dry-run`)",
                style.yellow("!"),
                after.step_names().join(", ")
            );
        }
        if outcome
            .steps
            .iter()
            .any(|s| s == "kernel" || s == "gpu-overlay")
        {
            println!("Reboot to start the new kernel / device tree.");
        }
    }
    Ok(exit::OK)
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

fn gather(root: &Root, manifest: &Manifest, settings: &Settings) -> facts::Facts {
    let firmware_paths: Vec<String> = manifest
        .recommended_firmware()
        .map(|f| crate::firmware::standard_path(&f.path))
        .into_iter()
        .collect();
    let present_paths = steps::probe_paths(manifest);
    facts::gather(
        root,
        &facts::Probe {
            firmware_paths: &firmware_paths,
            present_paths: &present_paths,
            sudo_user: settings.vars.sudo_user.as_deref(),
        },
    )
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

fn describe_root(root: &Root) -> String {
    if root.is_live() {
        "this system".into()
    } else {
        format!("root {}", root.base().display())
    }
}

fn root_flag(root: &Root) -> String {
    if root.is_live() {
        String::new()
    } else {
        format!(" --root {}", root.base().display())
    }
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
        Err(Error::NeedsRoot("setup changes the system: run it as root (sudo rvl setup ...), or use --dry-run to look".into()).into())
    }
}

fn confirm(yes: bool, settings: &Settings) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    if !settings.can_prompt() {
        return Err(Error::NotConfirmed("not applying: no terminal to ask for confirmation; pass --yes to apply (nothing was changed)".into()).into());
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

fn rollback(root: &Root, as_json: bool) -> anyhow::Result<i32> {
    require_write_access(root)?;
    let _lock = lock::Lock::acquire(root)?;
    let recovered = journal::recover(root)?;
    if recovered != journal::Recovery::Nothing && !as_json {
        eprintln!("rvl: {recovered}");
    }
    let undone = journal::rollback(root)?;
    if as_json {
        output::print_json(&json!({
            "schema_version": output::SCHEMA_VERSION,
            "command": "setup",
            "mode": "rollback",
            "recovered": recovered,
            "restored": undone.iter().map(|e| &e.path).collect::<Vec<_>>(),
        }))?;
    } else if undone.is_empty() {
        println!(
            "Nothing to roll back: setup has not changed {}.",
            describe_root(root)
        );
    } else {
        println!("✓ rolled back; restored or removed:");
        for e in &undone {
            println!("  {}", e.path);
        }
    }
    Ok(exit::OK)
}

fn status(root: &Root, as_json: bool) -> anyhow::Result<i32> {
    let dir = journal::StateDir::new(root);
    let state = dir.load_state()?;
    let pending = dir.load_journal()?;
    if as_json {
        output::print_json(&json!({
            "schema_version": output::SCHEMA_VERSION,
            "command": "setup",
            "mode": "status",
            "applied": state.transactions,
            "interrupted": pending,
        }))?;
        return Ok(exit::OK);
    }
    if state.transactions.is_empty() {
        println!("setup has not changed {}.", describe_root(root));
    }
    for t in &state.transactions {
        println!(
            "applied {}: {} ({} path{})",
            t.id,
            t.steps.join(", "),
            t.entries.len(),
            if t.entries.len() == 1 { "" } else { "s" }
        );
        for e in &t.entries {
            println!("  {}", e.path);
        }
    }
    if let Some(j) = pending {
        println!(
            "! an interrupted {} run ({}, {} path{} touched) is pending: the next `rvl setup` or `rvl setup --rollback` finishes it",
            j.kind,
            j.id,
            j.entries.len(),
            if j.entries.len() == 1 { "" } else { "s" }
        );
    }
    Ok(exit::OK)
}
