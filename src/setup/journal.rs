//! Transactions over the system: a journal written before the first change, a backup of every
//! file before it is replaced, and an undo that restores byte for byte. At commit each entry is
//! sealed with what setup left there, so a later `--rollback` (see `rollback.rs`) can tell
//! setup's changes from the admin's.
//!
//! State lives under `/var/lib/rvl` in the root (never next to the files it protects: kmod
//! reads every `*.conf` in `modprobe.d`, the Vulkan loader every `*.json` in `icd.d`):
//! - `journal.json`: the run in progress. It names every path before that path is touched.
//!   Finding it at start means a run was interrupted: an interrupted apply is undone, an
//!   interrupted rollback is finished.
//! - `state.json`: the applied transactions, oldest first, each with what it changed.
//! - `backups/<id>/<path>`: the pre-images (mode and owner are in the journal entry).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::edits::Edit;
use super::fsops::{self, Meta, Node};
use super::journal_check;
use super::rollback::{self, After};
use crate::digest::sha256_hex;
use crate::error::Error;
use crate::host::Root;

/// The state directory, as an in-root path.
pub const STATE_DIR: &str = "/var/lib/rvl";
/// 2: entries carry `after` (what setup left) and `edits`; 1 (no `after`) is still read, and
/// its entries are restored whole, as rvl did then.
pub const SCHEMA: u32 = 2;
/// Largest journal, state file or backup setup reads back (a planted FIFO or `/dev/zero` must
/// neither hang nor exhaust memory).
const STATE_CAP: u64 = 64 << 20;
/// Largest file setup backs up (config files, boot links' targets are tiny; an initramfs is not).
const BACKUP_CAP: u64 = 1 << 30;

/// What a path was before the transaction touched it: what undo brings back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "was", rename_all = "kebab-case")]
pub enum Before {
    /// Nothing: setup created it (a file, a link, or a whole install prefix). Undo removes it.
    Absent,
    /// A directory setup created. Undo removes it only when it is empty again.
    AbsentDir,
    /// A regular file, saved under `backups/`.
    File {
        backup: String,
        sha256: String,
        #[serde(flatten)]
        meta: Meta,
    },
    /// A symbolic link with this target.
    Symlink { target: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// In-root path, parents resolved.
    pub path: String,
    pub step: String,
    pub before: Before,
    /// What setup left there when the run committed (none in schema 1 and in a journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<After>,
    /// Setup's own edits, for a file it edits line-wise (see `edits.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<Vec<Edit>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    Apply,
    Rollback,
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunKind::Apply => "apply",
            RunKind::Rollback => "rollback",
        })
    }
}

/// `journal.json`: the run in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    pub schema_version: u32,
    pub id: String,
    pub kind: RunKind,
    pub steps: Vec<String>,
    pub entries: Vec<Entry>,
    /// A rollback's runs, newest first (empty in an apply's journal, or: every run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// A rollback with `--force`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

/// One applied transaction in `state.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub id: String,
    pub steps: Vec<String>,
    pub entries: Vec<Entry>,
    /// Set when a rollback undid the rest of this run but refused `entries` (seconds since the
    /// epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partly_rolled_back: Option<u64>,
}

/// A run that was rolled back completely, for `--status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolledBack {
    pub id: String,
    pub steps: Vec<String>,
    pub paths: Vec<String>,
    /// When, in seconds since the epoch.
    pub at: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub schema_version: u32,
    pub transactions: Vec<Applied>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rolled_back: Vec<RolledBack>,
}

/// Where the state files of one root live on the host.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: Root,
}

impl StateDir {
    pub fn new(root: &Root) -> Self {
        StateDir { root: root.clone() }
    }

    /// Host path of a file in the state directory (for messages and for tools that take a
    /// path: call [`StateDir::ensure`] first, which refuses a state directory behind a link).
    pub fn host(&self, rel: &str) -> PathBuf {
        self.root.join(self.path(rel))
    }

    /// In-root path of a file in the state directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        Path::new(STATE_DIR).join(rel)
    }

    /// Create the state directory (or the subdirectory `rel` of it) with no link on the way:
    /// a symlinked `/var/lib/rvl` would put state, backups and the lock outside the root.
    pub fn ensure_dir(&self, rel: &str) -> anyhow::Result<()> {
        let dir = self.path(rel);
        fsops::create_dirs(&self.root, &dir).map_err(|e| write_error(&self.root.join(&dir), e))?;
        Ok(())
    }

    fn ensure(&self) -> anyhow::Result<()> {
        self.ensure_dir("")
    }

    pub fn load_journal(&self) -> anyhow::Result<Option<Journal>> {
        let path = self.path("journal.json");
        let j: Option<Journal> = load_json(&self.root, &path)?;
        j.map(|j| journal_check::journal(&self.root.join(&path), j))
            .transpose()
            .map_err(anyhow::Error::from)
    }

    pub fn load_state(&self) -> anyhow::Result<State> {
        let path = self.path("state.json");
        let st: Option<State> = load_json(&self.root, &path)?;
        Ok(match st {
            // Read as the current schema from here on: new entries are written as such.
            Some(st) => State {
                schema_version: SCHEMA,
                ..journal_check::state(&self.root.join(&path), st)?
            },
            None => State {
                schema_version: SCHEMA,
                ..State::default()
            },
        })
    }

    fn save_journal(&self, j: &Journal) -> anyhow::Result<()> {
        save_json(&self.root, &self.path("journal.json"), j)
    }

    pub(super) fn save_state(&self, s: &State) -> anyhow::Result<()> {
        let path = self.path("state.json");
        if s.transactions.is_empty() && s.rolled_back.is_empty() {
            return fsops::remove_file(&self.root, &path)
                .map_err(|e| write_error(&self.root.join(&path), e));
        }
        save_json(&self.root, &path, s)
    }

    fn clear_journal(&self) -> anyhow::Result<()> {
        let path = self.path("journal.json");
        fsops::remove_file(&self.root, &path).map_err(|e| write_error(&self.root.join(&path), e))
    }

    pub(super) fn drop_backups(&self, id: &str) {
        // Best effort: stale backups waste space but never change behaviour. The id was
        // checked to be one setup makes (journal_check), so this stays in backups/.
        let _ = fsops::remove_all(&self.root, &self.path(&format!("backups/{id}")));
    }
}

fn load_json<T: serde::de::DeserializeOwned>(
    root: &Root,
    in_root: &Path,
) -> anyhow::Result<Option<T>> {
    let path = &root.join(in_root);
    let text = match fsops::read(root, in_root, STATE_CAP) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("cannot read", path, e).into()),
        Ok(t) => String::from_utf8_lossy(&t).into_owned(),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::Journal(format!(
                "{}: line {}, column {}: {e}; setup's state is damaged (move the file away to start over)",
                path.display(),
                e.line(),
                e.column()
            ))
        .into()
    })
}

fn save_json<T: Serialize>(root: &Root, path: &Path, value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    fsops::write_atomic(root, path, &text, Meta::new_file(0o644))
        .map_err(|e| write_error(&root.join(path), e))
}

fn write_error(path: &Path, e: io::Error) -> anyhow::Error {
    Error::io("cannot write", path, e).into()
}

fn new_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{secs}-{}", std::process::id())
}

/// An apply in progress. Every change goes through it, so each is journaled first.
pub struct Txn {
    state: StateDir,
    journal: Journal,
}

impl Txn {
    /// Write the journal (before any change) and return the open transaction.
    pub fn begin(root: &Root, steps: &[String]) -> anyhow::Result<Txn> {
        let state = StateDir::new(root);
        state.ensure()?;
        let journal = Journal {
            schema_version: SCHEMA,
            id: new_id(),
            kind: RunKind::Apply,
            steps: steps.to_vec(),
            entries: Vec::new(),
            targets: Vec::new(),
            force: false,
        };
        state.save_journal(&journal)?;
        Ok(Txn { state, journal })
    }

    pub fn root(&self) -> &Root {
        &self.state.root
    }

    pub fn id(&self) -> &str {
        &self.journal.id
    }

    /// Resolve the parents of an in-root path; the journal and every change use this form.
    pub fn canonical(&self, path: &str) -> anyhow::Result<String> {
        let p = self
            .root()
            .canonicalize_parent(path)
            .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        Ok(p.to_string_lossy().into_owned())
    }

    /// Remember what `path` is now (backing a file up) before it is changed. A path already
    /// recorded in this transaction keeps its first pre-image.
    pub fn record(&mut self, path: &str, step: &str) -> anyhow::Result<()> {
        let path = self.canonical(path)?;
        if self.journal.entries.iter().any(|e| e.path == path) {
            return Ok(());
        }
        let at = Path::new(&path);
        let before =
            match fsops::probe(self.root(), at).map_err(|e| anyhow::anyhow!("{path}: {e}"))? {
                Node::Missing => Before::Absent,
                Node::Link(target) => Before::Symlink {
                    target: target.to_string_lossy().into_owned(),
                },
                Node::File(mut meta) => {
                    // What rollback will restore: never world-writable (journal_check refuses
                    // a state file that says otherwise).
                    meta.mode &= fsops::RECORDED_MODE_MASK;
                    let data = fsops::read(self.root(), at, BACKUP_CAP)
                        .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
                    let backup = format!("backups/{}{}", self.journal.id, path);
                    let bpath = self.state.path(&backup);
                    let bhost = self.root().join(&bpath);
                    if let Some(dir) = bpath.parent() {
                        fsops::create_dirs(self.root(), dir).map_err(|e| write_error(&bhost, e))?;
                    }
                    fsops::write_atomic(self.root(), &bpath, &data, meta)
                        .map_err(|e| write_error(&bhost, e))?;
                    Before::File {
                        backup,
                        sha256: sha256_hex(&data),
                        meta,
                    }
                }
                Node::Dir | Node::Other => {
                    return Err(Error::StepFailed(format!(
                        "{path} is a directory or device where setup expected a file"
                    ))
                    .into())
                }
            };
        self.push(Entry {
            path,
            step: step.to_string(),
            before,
            after: None,
            edits: None,
        })
    }

    fn push(&mut self, entry: Entry) -> anyhow::Result<()> {
        self.journal.entries.push(entry);
        self.state.save_journal(&self.journal)
    }

    /// Create the missing parent directories of `path`, each journaled before it is made.
    pub fn ensure_parent(&mut self, path: &str, step: &str) -> anyhow::Result<()> {
        let path = PathBuf::from(self.canonical(path)?);
        let mut missing = Vec::new();
        let mut cur = path.parent();
        while let Some(dir) = cur {
            if fsops::probe(self.root(), dir)? != Node::Missing {
                break;
            }
            missing.push(dir.to_path_buf());
            cur = dir.parent();
        }
        for dir in missing.into_iter().rev() {
            let s = dir.to_string_lossy().into_owned();
            self.push(Entry {
                path: s.clone(),
                step: step.to_string(),
                before: Before::AbsentDir,
                after: None,
                edits: None,
            })?;
            fsops::create_dir(self.root(), &dir)
                .map_err(|e| write_error(&self.root().join(&dir), e))?;
        }
        Ok(())
    }

    /// Write a file (creating its parents), journaled and backed up first.
    pub fn write_file(
        &mut self,
        path: &str,
        data: &[u8],
        mode: u32,
        step: &str,
    ) -> anyhow::Result<()> {
        self.ensure_parent(path, step)?;
        self.record(path, step)?;
        let at = PathBuf::from(self.canonical(path)?);
        let host = self.root().join(&at);
        // Keep the owner and mode of a file that is being edited; new files get `mode`.
        let meta = match fsops::probe(self.root(), &at)? {
            Node::File(m) => m,
            _ => Meta::new_file(mode),
        };
        fsops::write_atomic(self.root(), &at, data, meta).map_err(|e| write_error(&host, e))
    }

    /// Point a link at `target`, journaled first.
    pub fn symlink(&mut self, path: &str, target: &str, step: &str) -> anyhow::Result<()> {
        self.ensure_parent(path, step)?;
        self.record(path, step)?;
        let at = PathBuf::from(self.canonical(path)?);
        fsops::symlink_atomic(self.root(), &at, Path::new(target))
            .map_err(|e| write_error(&self.root().join(&at), e))
    }

    /// Rename a file inside the root (both paths journaled: undo removes `to`, restores `from`).
    pub fn rename(&mut self, from: &str, to: &str, step: &str) -> anyhow::Result<()> {
        self.record(from, step)?;
        self.ensure_parent(to, step)?;
        self.record(to, step)?;
        let src = PathBuf::from(self.canonical(from)?);
        let dst = PathBuf::from(self.canonical(to)?);
        fsops::rename_into_place(self.root(), &src, &dst)
            .map_err(|e| write_error(&self.root().join(&dst), e))
    }

    /// Move a staged directory tree (in-root path, same file system) to `path`, which must not
    /// exist.
    pub fn install_tree(&mut self, staged: &Path, path: &str, step: &str) -> anyhow::Result<()> {
        self.ensure_parent(path, step)?;
        self.record(path, step)?;
        let at = PathBuf::from(self.canonical(path)?);
        fsops::rename_into_place(self.root(), staged, &at)
            .map_err(|e| write_error(&self.root().join(&at), e))
    }

    /// Make the transaction permanent: append it to `state.json`, then drop the journal.
    pub fn commit(self) -> anyhow::Result<Applied> {
        let mut state = self.state.load_state()?;
        let mut entries = self.journal.entries.clone();
        // What setup left at each path: what a later rollback compares the tree with.
        for e in &mut entries {
            rollback::seal(&self.state, e)?;
        }
        let applied = Applied {
            id: self.journal.id.clone(),
            steps: self.journal.steps.clone(),
            entries,
            partly_rolled_back: None,
        };
        if !applied.entries.is_empty() {
            state.transactions.push(applied.clone());
            self.state.save_state(&state)?;
        }
        self.state.clear_journal()?;
        Ok(applied)
    }

    /// Undo every change of this transaction (a step failed).
    pub fn abort(self) -> anyhow::Result<()> {
        undo_entries(&self.state, &self.journal.entries)?;
        self.state.drop_backups(&self.journal.id);
        self.state.clear_journal()
    }
}

/// Put every entry back the way it was, newest first. Safe to repeat.
fn undo_entries(state: &StateDir, entries: &[Entry]) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for e in entries.iter().rev() {
        if let Err(err) = undo_one(state, e) {
            failed.push(format!("{}: {err}", e.path));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::RollbackIncomplete(format!(
            "could not restore everything; still changed:\n  {}",
            failed.join("\n  ")
        ))
        .into())
    }
}

pub(super) fn undo_one(state: &StateDir, e: &Entry) -> io::Result<()> {
    let root = &state.root;
    let at = Path::new(&e.path);
    fsops::remove_debris(root, at)?;
    let now = fsops::probe(root, at)?;
    match &e.before {
        // Checked at load too; asked again here because only now is it known what is there.
        Before::Absent if !journal_check::may_delete(&e.path, matches!(now, Node::Link(_))) => {
            Err(io::Error::other(format!(
                "not removed: setup did not create what is at {} now",
                e.path
            )))
        }
        Before::Absent => match now {
            Node::Dir => fsops::remove_tree(root, at),
            Node::Missing => Ok(()),
            _ => fsops::remove_file(root, at),
        },
        Before::AbsentDir => fsops::remove_dir_if_empty(root, at).map(|_| ()),
        Before::Symlink { target } => {
            if now == Node::Link(PathBuf::from(target)) {
                return Ok(());
            }
            if now == Node::Dir {
                fsops::remove_tree(root, at)?;
            }
            fsops::symlink_atomic(root, at, Path::new(target))
        }
        Before::File {
            backup,
            sha256,
            meta,
        } => {
            let unchanged = now == Node::File(*meta)
                && fsops::read(root, at, BACKUP_CAP).is_ok_and(|d| sha256_hex(&d) == *sha256);
            if unchanged {
                return Ok(());
            }
            let data = fsops::read(root, &state.path(backup), BACKUP_CAP)?;
            if sha256_hex(&data) != *sha256 {
                return Err(io::Error::other(format!(
                    "backup {backup} does not match its recorded sha256"
                )));
            }
            if now == Node::Dir {
                fsops::remove_tree(root, at)?;
            }
            fsops::write_atomic(root, at, &data, *meta)
        }
    }
}

/// What `recover` found and did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "recovered")]
pub enum Recovery {
    Nothing,
    /// An apply was interrupted; its changes were undone.
    UndidApply {
        id: String,
        entries: usize,
    },
    /// A rollback was interrupted; it was finished.
    FinishedRollback {
        id: String,
        /// What finishing it did, per run (for the human report; `--json` has them in `runs`).
        #[serde(skip)]
        runs: Vec<rollback::RunUndo>,
    },
    /// The apply had been committed; only the journal was left.
    AlreadyCommitted {
        id: String,
    },
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovery::Nothing => f.write_str("no interrupted run"),
            Recovery::UndidApply { id, entries } => write!(
                f,
                "an interrupted apply ({id}) was undone: {entries} path(s) put back"
            ),
            Recovery::FinishedRollback { id, .. } => {
                write!(f, "an interrupted rollback ({id}) was finished")
            }
            Recovery::AlreadyCommitted { id } => {
                write!(
                    f,
                    "the last apply ({id}) had completed; its journal was cleared"
                )
            }
        }
    }
}

/// Deal with an interrupted run (the caller holds the lock).
pub fn recover(root: &Root) -> anyhow::Result<Recovery> {
    let state = StateDir::new(root);
    let _ = fsops::remove_debris(root, &state.path("journal.json"));
    let _ = fsops::remove_debris(root, &state.path("state.json"));
    let Some(journal) = state.load_journal()? else {
        return Ok(Recovery::Nothing);
    };
    match journal.kind {
        RunKind::Apply => {
            let st = state.load_state()?;
            if st.transactions.iter().any(|t| t.id == journal.id) {
                state.clear_journal()?;
                return Ok(Recovery::AlreadyCommitted { id: journal.id });
            }
            undo_entries(&state, &journal.entries)?;
            state.drop_backups(&journal.id);
            state.clear_journal()?;
            Ok(Recovery::UndidApply {
                id: journal.id,
                entries: journal.entries.len(),
            })
        }
        RunKind::Rollback => {
            let ids = if journal.targets.is_empty() {
                rollback::select(&state.load_state()?, &rollback::Options::default())?
            } else {
                journal.targets.clone()
            };
            let runs = rollback::finish(&state, &ids, journal.force)?;
            state.clear_journal()?;
            Ok(Recovery::FinishedRollback {
                id: journal.id,
                runs,
            })
        }
    }
}

/// Undo the runs `opts` selects, newest first (the caller holds the lock and has recovered),
/// or with `dry_run` only say what that would do.
pub fn rollback(root: &Root, opts: &rollback::Options) -> anyhow::Result<Vec<rollback::RunUndo>> {
    let state = StateDir::new(root);
    let st = state.load_state()?;
    let ids = rollback::select(&st, opts)?;
    if opts.dry_run || ids.is_empty() {
        return rollback::plan(&state, &ids, opts.force);
    }
    state.save_journal(&Journal {
        schema_version: SCHEMA,
        id: new_id(),
        kind: RunKind::Rollback,
        steps: Vec::new(),
        entries: Vec::new(),
        targets: ids.clone(),
        force: opts.force,
    })?;
    let done = rollback::finish(&state, &ids, opts.force)?;
    state.clear_journal()?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};
    use std::fs;
    use std::os::unix::fs::symlink;

    fn all() -> rollback::Options {
        rollback::Options::default()
    }

    fn root_with_files() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("etc/vulkan/icd.d")).unwrap();
        fs::write(
            d.path().join("etc/vulkan/icd.d/rvl_panvk.aarch64.json"),
            b"blacklist x\n",
        )
        .unwrap();
        fs::create_dir_all(d.path().join("boot")).unwrap();
        fs::create_dir_all(d.path().join("var/lib")).unwrap();
        fs::write(d.path().join("boot/vmlinuz-6.1"), b"kernel").unwrap();
        symlink("vmlinuz-6.1", d.path().join("boot/Image")).unwrap();
        let root = Root::new(d.path());
        (d, root)
    }

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(p) = stack.pop() {
            for e in fs::read_dir(&p).unwrap() {
                let e = e.unwrap();
                let path = e.path();
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if rel.starts_with("var/lib/rvl") {
                    continue;
                }
                let m = fs::symlink_metadata(&path).unwrap();
                if m.is_symlink() {
                    out.push((
                        rel,
                        fs::read_link(&path)
                            .unwrap()
                            .into_os_string()
                            .into_encoded_bytes(),
                    ));
                } else if m.is_dir() {
                    out.push((rel + "/", Vec::new()));
                    stack.push(path);
                } else {
                    out.push((rel, fs::read(&path).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn rollback_restores_files_links_and_removes_additions() {
        let (d, root) = root_with_files();
        let before = snapshot(d.path());
        let mut t = Txn::begin(&root, &["x".into()]).unwrap();
        t.write_file(
            "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
            b"changed\n",
            0o644,
            "x",
        )
        .unwrap();
        t.write_file(
            "/etc/u-boot-menu/conf.d/rvl.conf",
            b"U_BOOT_DEFAULT=l1\n",
            0o644,
            "x",
        )
        .unwrap();
        t.symlink("/boot/Image", "vmlinuz-7.0", "x").unwrap();
        t.commit().unwrap();
        assert_ne!(snapshot(d.path()), before);
        // No backup copy sits where kmod would read it.
        assert_eq!(
            fs::read_dir(d.path().join("etc/vulkan/icd.d"))
                .unwrap()
                .count(),
            1
        );
        let undone = rollback(&root, &all()).unwrap();
        assert_eq!(undone[0].paths.len(), 5, "{undone:?}");
        assert_eq!(undone[0].refused().count(), 0, "{undone:?}");
        assert_eq!(snapshot(d.path()), before);
        let st = StateDir::new(&root).load_state().unwrap();
        assert!(st.transactions.is_empty());
        assert_eq!(st.rolled_back[0].paths.len(), 5);
        assert!(rollback(&root, &all()).unwrap().is_empty());
    }

    #[test]
    fn interrupted_apply_is_undone_by_recover() {
        let (d, root) = root_with_files();
        let before = snapshot(d.path());
        let mut t = Txn::begin(&root, &["x".into()]).unwrap();
        t.write_file(
            "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
            b"changed\n",
            0o600,
            "x",
        )
        .unwrap();
        t.write_file(
            "/etc/environment.d/90-rvl-vulkan.conf",
            b"new\n",
            0o644,
            "x",
        )
        .unwrap();
        drop(t); // the process "died": journal still there
        assert!(d.path().join("var/lib/rvl/journal.json").exists());
        assert!(matches!(
            recover(&root).unwrap(),
            Recovery::UndidApply { entries: 3, .. }
        ));
        assert_eq!(snapshot(d.path()), before);
        assert_eq!(recover(&root).unwrap(), Recovery::Nothing);
    }

    #[test]
    fn mode_is_restored_with_content() {
        use std::os::unix::fs::PermissionsExt;
        let (d, root) = root_with_files();
        let p = d.path().join("etc/vulkan/icd.d/rvl_panvk.aarch64.json");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file(
            "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
            b"changed\n",
            0o644,
            "x",
        )
        .unwrap();
        t.commit().unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        rollback(&root, &all()).unwrap();
        assert_eq!(
            Meta::of(&root, Path::new("/etc/vulkan/icd.d/rvl_panvk.aarch64.json"))
                .unwrap()
                .mode,
            0o600
        );
        assert_eq!(fs::read(&p).unwrap(), b"blacklist x\n");
    }

    #[test]
    fn writes_follow_parent_links_inside_the_root() {
        let (d, root) = root_with_files();
        fs::create_dir_all(d.path().join("usr/lib/firmware")).unwrap();
        symlink("/usr/lib", d.path().join("lib")).unwrap();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file("/lib/firmware/arm/mali_fw.bin", b"fw", 0o644, "firmware")
            .unwrap();
        let applied = t.commit().unwrap();
        assert_eq!(
            fs::read(d.path().join("usr/lib/firmware/arm/mali_fw.bin")).unwrap(),
            b"fw"
        );
        assert_eq!(
            applied.entries.last().unwrap().path,
            "/usr/lib/firmware/arm/mali_fw.bin"
        );
    }

    #[test]
    fn damaged_state_is_bad_input_naming_the_file() {
        let (d, root) = root_with_files();
        fs::create_dir_all(d.path().join("var/lib/rvl")).unwrap();
        fs::write(d.path().join("var/lib/rvl/state.json"), b"{ nope").unwrap();
        let err = rollback(&root, &all()).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::BAD_INPUT);
        assert!(err.to_string().contains("state.json: line 1"), "{err}");
    }

    #[test]
    fn tampered_backup_is_reported_not_restored() {
        let (d, root) = root_with_files();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file(
            "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
            b"changed\n",
            0o644,
            "x",
        )
        .unwrap();
        let applied = t.commit().unwrap();
        let Before::File { backup, .. } = &applied.entries[0].before else {
            panic!()
        };
        fs::write(d.path().join("var/lib/rvl").join(backup), b"evil").unwrap();
        let runs = rollback(&root, &all()).unwrap();
        let refused: Vec<_> = runs[0].refused().collect();
        assert!(
            refused[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("does not match its recorded sha256"),
            "{refused:?}"
        );
        assert_eq!(
            StateDir::new(&root)
                .load_state()
                .unwrap()
                .transactions
                .len(),
            1,
            "the refused path stays rolled-back-able"
        );
        assert_eq!(
            fs::read(d.path().join("etc/vulkan/icd.d/rvl_panvk.aarch64.json")).unwrap(),
            b"changed\n"
        );
    }

    #[test]
    fn a_boot_link_is_never_pointed_back_at_a_missing_kernel() {
        let (d, root) = root_with_files();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.symlink("/boot/Image", "vmlinuz-7.0", "kernel").unwrap();
        t.commit().unwrap();
        fs::remove_file(d.path().join("boot/vmlinuz-6.1")).unwrap();
        let runs = rollback(&root, &all()).unwrap();
        let refused: Vec<_> = runs[0].refused().collect();
        assert_eq!(refused[0].path, "/boot/Image");
        assert!(
            refused[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("vmlinuz-6.1, which is missing"),
            "{refused:?}"
        );
        assert_eq!(
            fs::read_link(d.path().join("boot/Image")).unwrap(),
            Path::new("vmlinuz-7.0")
        );
    }

    #[test]
    fn a_file_changed_after_setup_is_refused_unless_forced() {
        let (d, root) = root_with_files();
        let conf = d.path().join("etc/vulkan/icd.d/rvl_panvk.aarch64.json");
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file(
            "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
            b"setup\n",
            0o644,
            "x",
        )
        .unwrap();
        t.commit().unwrap();
        fs::write(&conf, b"admin\n").unwrap();
        let runs = rollback(&root, &all()).unwrap();
        assert_eq!(runs[0].refused().count(), 1);
        assert_eq!(fs::read(&conf).unwrap(), b"admin\n");
        let forced = rollback::Options {
            force: true,
            ..all()
        };
        let runs = rollback(&root, &forced).unwrap();
        assert_eq!(runs[0].refused().count(), 0, "{runs:?}");
        assert_eq!(fs::read(&conf).unwrap(), b"blacklist x\n");
    }

    #[test]
    fn a_newer_schema_is_refused_and_schema_1_is_still_read() {
        let (d, root) = root_with_files();
        let dir = d.path().join("var/lib/rvl");
        fs::create_dir_all(&dir).unwrap();
        let v1 = r#"{"schema_version":1,"transactions":[{"id":"1-1","steps":["x"],"entries":[{"path":"/etc/environment.d/90-rvl-vulkan.conf","step":"x","before":{"was":"absent"}}]}]}"#;
        fs::write(dir.join("state.json"), v1).unwrap();
        fs::create_dir_all(d.path().join("etc/environment.d")).unwrap();
        fs::write(
            d.path().join("etc/environment.d/90-rvl-vulkan.conf"),
            b"edited later",
        )
        .unwrap();
        // Schema 1 has no `after`: its entries are restored as rvl did then.
        assert_eq!(rollback(&root, &all()).unwrap()[0].refused().count(), 0);
        assert!(!d
            .path()
            .join("etc/environment.d/90-rvl-vulkan.conf")
            .exists());
        fs::write(dir.join("state.json"), v1.replace(":1,", ":99,")).unwrap();
        let err = rollback(&root, &all()).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::BAD_INPUT);
        assert!(err.to_string().contains("schema_version 99"), "{err}");
    }
}
