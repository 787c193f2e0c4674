//! Transactions over the system: a journal written before the first change, a backup of every
//! file before it is replaced, and an undo that restores byte for byte.
//!
//! State lives under `/var/lib/rvl` in the root (never next to the files it protects: kmod
//! reads every `*.conf` in `modprobe.d`, the Vulkan loader every `*.json` in `icd.d`):
//! - `journal.json`: the run in progress. It names every path before that path is touched.
//!   Finding it at start means a run was interrupted: an interrupted apply is undone, an
//!   interrupted rollback is finished.
//! - `state.json`: the applied transactions, oldest first, each with what it changed.
//! - `backups/<id>/<path>`: the pre-images (mode and owner are in the journal entry).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fsops::{self, Meta};
use crate::digest::sha256_hex;
use crate::error::Error;
use crate::host::Root;

/// The state directory, as an in-root path.
pub const STATE_DIR: &str = "/var/lib/rvl";
const SCHEMA: u32 = 1;

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
}

/// One applied transaction in `state.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub id: String,
    pub steps: Vec<String>,
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub schema_version: u32,
    pub transactions: Vec<Applied>,
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

    pub fn host(&self, rel: &str) -> PathBuf {
        self.root.join(Path::new(STATE_DIR).join(rel))
    }

    fn ensure(&self) -> anyhow::Result<()> {
        let dir = self.host("");
        fs::create_dir_all(&dir).map_err(|e| write_error(&dir, e))?;
        Ok(())
    }

    pub fn load_journal(&self) -> anyhow::Result<Option<Journal>> {
        load_json(&self.host("journal.json"))
    }

    pub fn load_state(&self) -> anyhow::Result<State> {
        Ok(load_json(&self.host("state.json"))?.unwrap_or(State {
            schema_version: SCHEMA,
            transactions: Vec::new(),
        }))
    }

    fn save_journal(&self, j: &Journal) -> anyhow::Result<()> {
        save_json(&self.host("journal.json"), j)
    }

    fn save_state(&self, s: &State) -> anyhow::Result<()> {
        let path = self.host("state.json");
        if s.transactions.is_empty() {
            return fsops::remove_file(&path).map_err(|e| write_error(&path, e));
        }
        save_json(&path, s)
    }

    fn clear_journal(&self) -> anyhow::Result<()> {
        let path = self.host("journal.json");
        fsops::remove_file(&path).map_err(|e| write_error(&path, e))
    }

    fn drop_backups(&self, id: &str) {
        // Best effort: stale backups waste space but never change behaviour.
        let _ = fs::remove_dir_all(self.host(&format!("backups/{id}")));
    }
}

fn load_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Option<T>> {
    let text = match crate::host::root::read_regular_string(path, crate::host::root::INPUT_CAP) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("cannot read", path, e).into()),
        Ok(t) => t,
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

fn save_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    fsops::write_atomic(path, &text, Meta::new_file(0o644)).map_err(|e| write_error(path, e))
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
        let host = self.root().join(&path);
        let before = match fs::symlink_metadata(&host) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Before::Absent,
            Err(e) => return Err(anyhow::anyhow!("{path}: {e}")),
            Ok(m) if m.is_symlink() => Before::Symlink {
                target: fs::read_link(&host)?.to_string_lossy().into_owned(),
            },
            Ok(m) if m.is_file() => {
                let data = fs::read(&host).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
                let meta = Meta::of(&host)?;
                let backup = format!("backups/{}{}", self.journal.id, path);
                let bhost = self.state.host(&backup);
                if let Some(dir) = bhost.parent() {
                    fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
                }
                fsops::write_atomic(&bhost, &data, meta).map_err(|e| write_error(&bhost, e))?;
                Before::File {
                    backup,
                    sha256: sha256_hex(&data),
                    meta,
                }
            }
            Ok(_) => {
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
            if fs::symlink_metadata(self.root().join(dir)).is_ok() {
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
            })?;
            let host = self.root().join(&dir);
            fs::create_dir(&host).map_err(|e| write_error(&host, e))?;
            if let Some(parent) = host.parent() {
                fsops::sync_dir(parent).map_err(|e| write_error(parent, e))?;
            }
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
        let host = self.root().join(self.canonical(path)?);
        // Keep the owner and mode of a file that is being edited; new files get `mode`.
        let meta = match Meta::of(&host) {
            Ok(m) if !fs::symlink_metadata(&host)?.is_symlink() => m,
            _ => Meta::new_file(mode),
        };
        fsops::write_atomic(&host, data, meta).map_err(|e| write_error(&host, e))
    }

    /// Point a link at `target`, journaled first.
    pub fn symlink(&mut self, path: &str, target: &str, step: &str) -> anyhow::Result<()> {
        self.ensure_parent(path, step)?;
        self.record(path, step)?;
        let host = self.root().join(self.canonical(path)?);
        fsops::symlink_atomic(&host, Path::new(target)).map_err(|e| write_error(&host, e))
    }

    /// Rename a file inside the root (both paths journaled: undo removes `to`, restores `from`).
    pub fn rename(&mut self, from: &str, to: &str, step: &str) -> anyhow::Result<()> {
        self.record(from, step)?;
        self.ensure_parent(to, step)?;
        self.record(to, step)?;
        let src = self.root().join(self.canonical(from)?);
        let dst = self.root().join(self.canonical(to)?);
        fsops::rename_into_place(&src, &dst).map_err(|e| write_error(&dst, e))
    }

    /// Move a staged directory tree (host path, same file system) to `path`, which must not exist.
    pub fn install_tree(&mut self, staged: &Path, path: &str, step: &str) -> anyhow::Result<()> {
        self.ensure_parent(path, step)?;
        self.record(path, step)?;
        let host = self.root().join(self.canonical(path)?);
        fsops::rename_into_place(staged, &host).map_err(|e| write_error(&host, e))
    }

    /// Make the transaction permanent: append it to `state.json`, then drop the journal.
    pub fn commit(self) -> anyhow::Result<Applied> {
        let mut state = self.state.load_state()?;
        let applied = Applied {
            id: self.journal.id.clone(),
            steps: self.journal.steps.clone(),
            entries: self.journal.entries.clone(),
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

fn undo_one(state: &StateDir, e: &Entry) -> io::Result<()> {
    let host = state.root.join(&e.path);
    fsops::remove_debris(&host)?;
    let now = fs::symlink_metadata(&host).ok();
    match &e.before {
        Before::Absent => match now {
            Some(m) if m.is_dir() => fsops::remove_tree(&host),
            Some(_) => fsops::remove_file(&host),
            None => Ok(()),
        },
        Before::AbsentDir => fsops::remove_dir_if_empty(&host).map(|_| ()),
        Before::Symlink { target } => {
            if fs::read_link(&host).is_ok_and(|t| t == Path::new(target)) {
                return Ok(());
            }
            if now.is_some_and(|m| m.is_dir() && !m.is_symlink()) {
                fsops::remove_tree(&host)?;
            }
            fsops::symlink_atomic(&host, Path::new(target))
        }
        Before::File {
            backup,
            sha256,
            meta,
        } => {
            let unchanged = now.is_some_and(|m| m.is_file())
                && fs::read(&host).is_ok_and(|d| sha256_hex(&d) == *sha256)
                && Meta::of(&host).is_ok_and(|m| m == *meta);
            if unchanged {
                return Ok(());
            }
            let data = fs::read(state.host(backup))?;
            if sha256_hex(&data) != *sha256 {
                return Err(io::Error::other(format!(
                    "backup {backup} does not match its recorded sha256"
                )));
            }
            if fs::symlink_metadata(&host).is_ok_and(|m| m.is_dir()) {
                fsops::remove_tree(&host)?;
            }
            fsops::write_atomic(&host, &data, *meta)
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
            Recovery::FinishedRollback { id } => {
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
    let _ = fsops::remove_debris(&state.host("journal.json"));
    let _ = fsops::remove_debris(&state.host("state.json"));
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
            finish_rollback(&state)?;
            state.clear_journal()?;
            Ok(Recovery::FinishedRollback { id: journal.id })
        }
    }
}

/// Undo every applied transaction, newest first (the caller holds the lock and has recovered).
/// Returns the paths restored or removed.
pub fn rollback(root: &Root) -> anyhow::Result<Vec<Entry>> {
    let state = StateDir::new(root);
    let st = state.load_state()?;
    if st.transactions.is_empty() {
        return Ok(Vec::new());
    }
    let undone: Vec<Entry> = st
        .transactions
        .iter()
        .rev()
        .flat_map(|t| t.entries.iter().rev().cloned())
        .collect();
    state.save_journal(&Journal {
        schema_version: SCHEMA,
        id: new_id(),
        kind: RunKind::Rollback,
        steps: Vec::new(),
        entries: Vec::new(),
    })?;
    finish_rollback(&state)?;
    state.clear_journal()?;
    Ok(undone)
}

fn finish_rollback(state: &StateDir) -> anyhow::Result<()> {
    let mut st = state.load_state()?;
    while let Some(last) = st.transactions.last().cloned() {
        undo_entries(state, &last.entries)?;
        st.transactions.pop();
        state.save_state(&st)?;
        state.drop_backups(&last.id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};
    use std::os::unix::fs::symlink;

    fn root_with_files() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("etc/modprobe.d")).unwrap();
        fs::write(d.path().join("etc/modprobe.d/a.conf"), b"blacklist x\n").unwrap();
        fs::create_dir_all(d.path().join("boot")).unwrap();
        fs::create_dir_all(d.path().join("var/lib")).unwrap();
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
        t.write_file("/etc/modprobe.d/a.conf", b"changed\n", 0o644, "x")
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
            fs::read_dir(d.path().join("etc/modprobe.d"))
                .unwrap()
                .count(),
            1
        );
        let undone = rollback(&root).unwrap();
        assert_eq!(undone.len(), 5, "{undone:?}");
        assert_eq!(snapshot(d.path()), before);
        assert!(!d.path().join("var/lib/rvl/state.json").exists());
        assert!(rollback(&root).unwrap().is_empty());
    }

    #[test]
    fn interrupted_apply_is_undone_by_recover() {
        let (d, root) = root_with_files();
        let before = snapshot(d.path());
        let mut t = Txn::begin(&root, &["x".into()]).unwrap();
        t.write_file("/etc/modprobe.d/a.conf", b"changed\n", 0o600, "x")
            .unwrap();
        t.write_file("/etc/new.conf", b"new\n", 0o644, "x").unwrap();
        drop(t); // the process "died": journal still there
        assert!(d.path().join("var/lib/rvl/journal.json").exists());
        assert!(matches!(
            recover(&root).unwrap(),
            Recovery::UndidApply { entries: 2, .. }
        ));
        assert_eq!(snapshot(d.path()), before);
        assert_eq!(recover(&root).unwrap(), Recovery::Nothing);
    }

    #[test]
    fn mode_is_restored_with_content() {
        use std::os::unix::fs::PermissionsExt;
        let (d, root) = root_with_files();
        let p = d.path().join("etc/modprobe.d/a.conf");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file("/etc/modprobe.d/a.conf", b"changed\n", 0o644, "x")
            .unwrap();
        t.commit().unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        rollback(&root).unwrap();
        assert_eq!(Meta::of(&p).unwrap().mode, 0o600);
        assert_eq!(fs::read(&p).unwrap(), b"blacklist x\n");
    }

    #[test]
    fn writes_follow_parent_links_inside_the_root() {
        let (d, root) = root_with_files();
        fs::create_dir_all(d.path().join("usr/lib/firmware")).unwrap();
        symlink("/usr/lib", d.path().join("lib")).unwrap();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file("/lib/firmware/arm/fw.bin", b"fw", 0o644, "firmware")
            .unwrap();
        let applied = t.commit().unwrap();
        assert_eq!(
            fs::read(d.path().join("usr/lib/firmware/arm/fw.bin")).unwrap(),
            b"fw"
        );
        assert_eq!(
            applied.entries.last().unwrap().path,
            "/usr/lib/firmware/arm/fw.bin"
        );
    }

    #[test]
    fn damaged_state_is_bad_input_naming_the_file() {
        let (d, root) = root_with_files();
        fs::create_dir_all(d.path().join("var/lib/rvl")).unwrap();
        fs::write(d.path().join("var/lib/rvl/state.json"), b"{ nope").unwrap();
        let err = rollback(&root).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::BAD_INPUT);
        assert!(err.to_string().contains("state.json: line 1"), "{err}");
    }

    #[test]
    fn tampered_backup_is_reported_not_restored() {
        let (d, root) = root_with_files();
        let mut t = Txn::begin(&root, &[]).unwrap();
        t.write_file("/etc/modprobe.d/a.conf", b"changed\n", 0o644, "x")
            .unwrap();
        let applied = t.commit().unwrap();
        let Before::File { backup, .. } = &applied.entries[0].before else {
            panic!()
        };
        fs::write(d.path().join("var/lib/rvl").join(backup), b"evil").unwrap();
        let err = rollback(&root).unwrap_err();
        assert_eq!(error::exit_code_of(&err), exit::ROLLBACK_INCOMPLETE);
        assert_eq!(
            fs::read(d.path().join("etc/modprobe.d/a.conf")).unwrap(),
            b"changed\n"
        );
    }
}
