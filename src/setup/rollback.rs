//! Three-way rollback. Each journal entry keeps what a path was before setup (`before`) and what
//! setup left there (`after`, sealed at commit). Per path, rollback compares the tree now with both:
//! - as before: nothing to do (also what makes an interrupted rollback safe to repeat);
//! - as setup left it: put the backup back (or remove what setup created);
//! - changed since, in a file setup edits line-wise: undo only setup's own edits ([`edits`]);
//! - changed since, anything else: refuse that path (`--force` restores it anyway).
//!
//! A boot default is never pointed at a kernel that is missing, forced or not. Refused paths
//! stay in `state.json` with their backups, so a later `--rollback --force` can still restore
//! them; everything else of the run is undone.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::action::diff;
use super::edits::{self, Edit};
use super::fsops::{self, Meta};
use super::journal::{self, Applied, Before, Entry, RolledBack, StateDir};
use super::paths::ARMBIAN_BOOT_LINKS;
use crate::bootcfg::ubootmenu::EXTLINUX_CONF;
use crate::digest::sha256_hex;
use crate::error::Error;
use crate::host::Root;

/// What setup left at a path when its run committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "is", rename_all = "kebab-case")]
pub enum After {
    Absent,
    /// A directory (an install prefix or a parent setup made); its content is setup's.
    Dir,
    File {
        sha256: String,
    },
    Symlink {
        target: String,
    },
}

/// What a path is now.
enum Now {
    Absent,
    Dir,
    File { data: Vec<u8>, meta: Meta },
    Link(String),
    Other,
}

/// Files larger than this are compared but never shown as a diff.
const DIFF_CAP: usize = 1 << 20;
/// Setup's files are small; firmware and a few boot files are the largest.
const READ_CAP: u64 = 512 << 20;

/// What is at `path` now, looked at without following any link on the way (a parent swapped
/// for a link since setup is an error, so rollback refuses that path instead of reading, or
/// deleting, whatever the link points at).
fn observe(root: &Root, path: &str) -> io::Result<Now> {
    let at = Path::new(path);
    Ok(match fsops::probe(root, at)? {
        fsops::Node::Missing => Now::Absent,
        fsops::Node::Link(target) => Now::Link(target.to_string_lossy().into_owned()),
        fsops::Node::Dir => Now::Dir,
        fsops::Node::File(meta) => Now::File {
            data: fsops::read(root, at, READ_CAP)?,
            meta,
        },
        fsops::Node::Other => Now::Other,
    })
}

/// Record what setup left at `e.path`, and its line-wise edits where the format allows.
pub fn seal(state: &StateDir, e: &mut Entry) -> anyhow::Result<()> {
    let now = observe(&state.root, &e.path).map_err(|err| anyhow::anyhow!("{}: {err}", e.path))?;
    e.after = Some(match &now {
        Now::Absent => After::Absent,
        Now::Dir | Now::Other => After::Dir,
        Now::File { data, .. } => After::File {
            sha256: sha256_hex(data),
        },
        Now::Link(t) => After::Symlink { target: t.clone() },
    });
    e.edits = None;
    if let (Some(format), Now::File { data, .. }) = (edits::format_of(&e.path), &now) {
        let before = match &e.before {
            Before::Absent => Some(String::new()),
            Before::File { backup, .. } => fsops::read(&state.root, &state.path(backup), READ_CAP)
                .ok()
                .and_then(|d| String::from_utf8(d).ok()),
            _ => None,
        };
        let after = std::str::from_utf8(data).ok();
        if let (Some(b), Some(a)) = (before, after) {
            e.edits = edits::derive(format, &b, a);
        }
    }
    Ok(())
}

/// What rollback does (or would do) to one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Act {
    /// Already as it was before setup.
    Nothing,
    /// Put the saved copy (or link) back.
    Restore,
    /// Remove what setup created (a directory only when empty).
    Remove,
    /// Undo setup's own edits, keeping every later line.
    UndoEdits,
    /// Left as it is; `reason` says why.
    Refuse,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathUndo {
    pub path: String,
    pub step: String,
    pub action: Act,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unified diff from the current content to what rollback writes (text files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(skip)]
    rewrite: Option<String>,
}

/// One run, undone (or planned to be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunUndo {
    pub id: String,
    pub steps: Vec<String>,
    pub paths: Vec<PathUndo>,
}

impl RunUndo {
    pub fn refused(&self) -> impl Iterator<Item = &PathUndo> {
        self.paths.iter().filter(|p| p.action == Act::Refuse)
    }
}

/// `--rollback` flags.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub force: bool,
    /// Only this run (`--run ID`); None: every run, newest first.
    pub run: Option<String>,
    pub dry_run: bool,
    /// How setup was pointed at the system, for the commands an error names.
    pub hint: crate::hint::Invocation,
}

fn same_as_before(now: &Now, before: &Before) -> bool {
    match (before, now) {
        (Before::Absent | Before::AbsentDir, Now::Absent) => true,
        (Before::File { sha256, meta, .. }, Now::File { data, meta: m }) => {
            sha256_hex(data) == *sha256 && m == meta
        }
        (Before::Symlink { target }, Now::Link(t)) => t == target,
        _ => false,
    }
}

fn same_as_after(now: &Now, after: &After) -> bool {
    match (after, now) {
        (After::Absent, Now::Absent) => true,
        (After::Dir, Now::Dir | Now::Other) => true,
        (After::File { sha256 }, Now::File { data, .. }) => sha256_hex(data) == *sha256,
        (After::Symlink { target }, Now::Link(t)) => t == target,
        _ => false,
    }
}

fn text(data: &[u8]) -> Option<&str> {
    (data.len() <= DIFF_CAP)
        .then(|| std::str::from_utf8(data).ok())
        .flatten()
}

/// Restoring this entry must not make the board boot a kernel that is not there. Armbian's
/// three links are one unit: a vendor initrd or device tree under a mainline kernel does not
/// boot either, so they stay whenever `/boot/Image` cannot go back.
fn boot_guard(state: &StateDir, e: &Entry, run: &[Entry]) -> Result<(), String> {
    let root = &state.root;
    match &e.before {
        Before::File { backup, .. } if e.path == EXTLINUX_CONF => {
            let saved = fsops::read(&state.root, &state.path(backup), READ_CAP).unwrap_or_default();
            let kernel = edits::extlinux_default_kernel(&String::from_utf8_lossy(&saved));
            match kernel {
                Some(k) if !root.exists(&k) => Err(format!(
                    "its saved copy boots {k} by default, which is missing now; the current default stays"
                )),
                _ => Ok(()),
            }
        }
        Before::Symlink { target } if ARMBIAN_BOOT_LINKS.contains(&e.path.as_str()) => {
            let dir = Path::new(&e.path).parent().unwrap_or(Path::new("/"));
            if !root.exists(dir.join(target)) {
                return Err(format!(
                    "it would point at {target}, which is missing now; the board would not boot, so the link stays"
                ));
            }
            let image = run.iter().find_map(|o| match &o.before {
                Before::Symlink { target } if o.path == "/boot/Image" => Some(target),
                _ => None,
            });
            match image {
                Some(kernel) if e.path != "/boot/Image" && !root.exists(dir.join(kernel)) => {
                    Err(format!(
                        "/boot/Image cannot go back to {kernel}, which is missing now; this link stays with the kernel that boots"
                    ))
                }
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

fn restore_plan(
    state: &StateDir,
    e: &Entry,
    run: &[Entry],
    now: &Now,
) -> (Act, Option<String>, Option<String>) {
    if let Err(why) = boot_guard(state, e, run) {
        return (Act::Refuse, Some(why), None);
    }
    let current = match now {
        Now::File { data, .. } => text(data).map(Some),
        Now::Absent => Some(None),
        _ => None,
    };
    match &e.before {
        Before::Absent | Before::AbsentDir => {
            let d = current
                .flatten()
                .map(|c| diff(&e.path, Some(c), ""))
                .filter(|d| !d.is_empty());
            (Act::Remove, None, d)
        }
        Before::File { backup, .. } => {
            let saved = fsops::read(&state.root, &state.path(backup), READ_CAP).unwrap_or_default();
            let d = match (current, text(&saved)) {
                (Some(c), Some(s)) => Some(diff(&e.path, c, s)).filter(|d| !d.is_empty()),
                _ => None,
            };
            (Act::Restore, None, d)
        }
        Before::Symlink { .. } => (Act::Restore, None, None),
    }
}

/// Decide what rollback does to one entry of a run, looking at the tree now.
pub fn decide(state: &StateDir, e: &Entry, run: &[Entry], force: bool) -> PathUndo {
    let mut out = PathUndo {
        path: e.path.clone(),
        step: e.step.clone(),
        action: Act::Nothing,
        reason: None,
        diff: None,
        rewrite: None,
    };
    let now = match observe(&state.root, &e.path) {
        Ok(n) => n,
        Err(err) => {
            out.action = Act::Refuse;
            out.reason = Some(format!("cannot read it: {err}"));
            return out;
        }
    };
    if matches!(e.before, Before::AbsentDir) {
        out.action = if matches!(now, Now::Absent) {
            Act::Nothing
        } else {
            Act::Remove
        };
        return out;
    }
    if same_as_before(&now, &e.before) {
        return out;
    }
    // Entries of schema 1 carry no `after`: they are restored as rvl 1 did.
    let untouched = e.after.as_ref().is_none_or(|a| same_as_after(&now, a));
    let (action, reason, d) = if untouched {
        restore_plan(state, e, run, &now)
    } else if let (Some(list), Now::File { data, .. }, false) = (&e.edits, &now, force) {
        undo_edits_plan(state, e, list, data, &mut out.rewrite)
    } else if force {
        restore_plan(state, e, run, &now)
    } else {
        (
            Act::Refuse,
            Some(
                "changed since setup wrote it; pass --force to put the saved copy back anyway"
                    .into(),
            ),
            None,
        )
    };
    out.action = action;
    out.reason = reason;
    out.diff = d;
    out
}

fn undo_edits_plan(
    state: &StateDir,
    e: &Entry,
    list: &[Edit],
    data: &[u8],
    rewrite: &mut Option<String>,
) -> (Act, Option<String>, Option<String>) {
    let Ok(current) = std::str::from_utf8(data) else {
        return (
            Act::Refuse,
            Some("changed since setup wrote it and is no longer text".into()),
            None,
        );
    };
    let exists = |k: &str| state.root.exists(k);
    match edits::undo(current, list, &exists) {
        Err(why) => (
            Act::Refuse,
            Some(format!(
                "changed since setup wrote it, and {why}; pass --force to put the saved copy back anyway"
            )),
            None,
        ),
        Ok(new) => {
            let d = Some(diff(&e.path, Some(current), &new)).filter(|d| !d.is_empty());
            *rewrite = Some(new);
            (Act::UndoEdits, None, d)
        }
    }
}

/// Carry out one decision.
fn execute(state: &StateDir, e: &Entry, p: &PathUndo) -> io::Result<()> {
    match p.action {
        Act::Nothing | Act::Refuse => Ok(()),
        Act::Restore | Act::Remove => journal::undo_one(state, e),
        Act::UndoEdits => {
            let (root, at) = (&state.root, Path::new(&e.path));
            let new = p.rewrite.as_deref().unwrap_or_default();
            fsops::remove_debris(root, at)?;
            if matches!(e.before, Before::Absent) && new.trim().is_empty() {
                fsops::remove_file(root, at)
            } else {
                fsops::write_atomic(root, at, new.as_bytes(), Meta::of(root, at)?)
            }
        }
    }
}

/// The runs `opts` selects, newest first; `--run ID` is refused while a later run touched one
/// of its paths (undoing it first would pull the ground from under the later one).
pub fn select(st: &journal::State, opts: &Options) -> anyhow::Result<Vec<String>> {
    let Some(id) = &opts.run else {
        return Ok(st.transactions.iter().rev().map(|t| t.id.clone()).collect());
    };
    let Some(at) = st.transactions.iter().position(|t| t.id == *id) else {
        return Err(Error::Usage(format!(
            "no applied run {id}; `{}` lists them",
            opts.hint.read_only("setup", "--status", false)
        ))
        .into());
    };
    let mine: Vec<&str> = st.transactions[at]
        .entries
        .iter()
        .filter(|e| !matches!(e.before, Before::AbsentDir))
        .map(|e| e.path.as_str())
        .collect();
    for later in &st.transactions[at + 1..] {
        let shared: Vec<&str> = later
            .entries
            .iter()
            .map(|e| e.path.as_str())
            .filter(|p| mine.contains(p))
            .collect();
        if !shared.is_empty() {
            return Err(Error::RollbackIncomplete(format!(
                "nothing was rolled back: the later run {} also changed {}; roll it back first ({})",
                later.id,
                shared.join(", "),
                opts.hint.setup_journal(&format!("--rollback --run {}", crate::shell::quote(&later.id)))
            ))
            .into());
        }
    }
    Ok(vec![id.clone()])
}

/// What rollback would do to these runs, decided against the tree as it is now.
pub fn plan(state: &StateDir, ids: &[String], force: bool) -> anyhow::Result<Vec<RunUndo>> {
    let st = state.load_state()?;
    Ok(ids
        .iter()
        .filter_map(|id| st.transactions.iter().find(|t| t.id == *id))
        .map(|t| RunUndo {
            id: t.id.clone(),
            steps: t.steps.clone(),
            paths: t
                .entries
                .iter()
                .rev()
                .map(|e| decide(state, e, &t.entries, force))
                .collect(),
        })
        .collect())
}

/// Undo these runs, newest first (the journal of this rollback is written already). Refused
/// paths stay in `state.json`; a run with none left moves to the rolled-back history.
pub fn finish(state: &StateDir, ids: &[String], force: bool) -> anyhow::Result<Vec<RunUndo>> {
    let mut done = Vec::new();
    for id in ids {
        let mut st = state.load_state()?;
        let Some(at) = st.transactions.iter().position(|t| t.id == *id) else {
            continue;
        };
        let t: Applied = st.transactions[at].clone();
        let mut run = RunUndo {
            id: t.id.clone(),
            steps: t.steps.clone(),
            paths: Vec::new(),
        };
        let mut kept = Vec::new();
        for e in t.entries.iter().rev() {
            let mut p = decide(state, e, &t.entries, force);
            if let Err(err) = execute(state, e, &p) {
                p.action = Act::Refuse;
                p.reason = Some(format!("could not be put back: {err}"));
                p.diff = None;
            }
            if p.action == Act::Refuse {
                kept.push(e.clone());
            }
            run.paths.push(p);
        }
        kept.reverse();
        if kept.is_empty() {
            st.transactions.remove(at);
            st.rolled_back.push(RolledBack {
                id: t.id.clone(),
                steps: t.steps.clone(),
                paths: t.entries.iter().map(|e| e.path.clone()).collect(),
                at: now_secs(),
            });
            state.save_state(&st)?;
            state.drop_backups(&t.id);
        } else {
            st.transactions[at].entries = kept;
            st.transactions[at].partly_rolled_back = Some(now_secs());
            state.save_state(&st)?;
        }
        done.push(run);
    }
    Ok(done)
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `1733212800-42` → the seconds it starts with (run ids begin with their start time).
pub fn id_secs(id: &str) -> Option<u64> {
    id.split('-').next()?.parse().ok()
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC` (Howard Hinnant's days-to-civil).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_show_their_start_time_in_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_302_468), "2026-12-03 12:54:28 UTC");
        assert_eq!(id_secs("1796302468-77"), Some(1_796_302_468));
        assert_eq!(id_secs("x"), None);
    }
}
