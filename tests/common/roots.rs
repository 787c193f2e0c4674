//! Fixture roots: a private copy of a tree from `tests/fixtures/roots/` (doctor) or
//! `tests/fixtures/setup/` (setup) with small edit helpers; a snapshot of a tree (every file's
//! bytes and mode, every link's target) to compare states byte for byte; and a manifest whose
//! artifacts a loopback server this test started serves.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use super::http::{sha256_hex, Reply, Server};
use super::run::{rvl, Rvl};

pub const STATE_DIR: &str = "var/lib/rvl";

/// Where a checked-in fixture root lives: `tests/fixtures/roots/NAME` or
/// `tests/fixtures/setup/NAME` (the names do not overlap).
pub fn fixture_dir(name: &str) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let found: Vec<PathBuf> = ["roots", "setup"]
        .iter()
        .map(|d| fixtures.join(d).join(name))
        .filter(|p| p.is_dir())
        .collect();
    match found.as_slice() {
        [one] => one.clone(),
        _ => panic!("fixture root {name:?}: found {found:?}"),
    }
}

/// A file under `tests/fixtures/` (firmware headers, the stub manifest, ...).
pub fn fixture_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// A private, writable copy of a fixture root at `<tempdir>/root`, removed on drop. Links are
/// copied as links (some roots hold sysfs link cycles). Pass it to `Rvl::root`.
pub struct Fixture {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    pub fn copy(name: &str) -> Fixture {
        let fx = Fixture::empty();
        copy_tree(&fixture_dir(name), &fx.root);
        fx
    }

    /// An empty root, for trees a test builds itself.
    pub fn empty() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir(&root).unwrap();
        Fixture { dir, root }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The temporary directory holding `root` (and nothing else).
    pub fn parent(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` (relative, no leading `/`) inside the root.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Write a file, creating its directories.
    pub fn write(&self, rel: &str, data: impl AsRef<[u8]>) {
        let path = self.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap_or_else(|e| panic!("write {rel}: {e}"));
    }

    /// Replace `from` by `to` in a file; `from` must be there.
    pub fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
        assert!(text.contains(from), "{rel} has no {from:?}:\n{text}");
        self.write(rel, text.replace(from, to));
    }

    /// Remove a file, link or directory tree; it must be there.
    pub fn remove(&self, rel: &str) {
        let path = self.join(rel);
        let m = fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("remove {rel}: {e}"));
        if m.is_dir() {
            fs::remove_dir_all(&path).unwrap();
        } else {
            fs::remove_file(&path).unwrap();
        }
    }
}

impl AsRef<Path> for Fixture {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

pub fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let from = e.path();
        let to = dst.join(e.file_name());
        let m = fs::symlink_metadata(&from).unwrap();
        if m.is_symlink() {
            symlink(fs::read_link(&from).unwrap(), &to).unwrap();
        } else if m.is_dir() {
            copy_tree(&from, &to);
        } else {
            fs::copy(&from, &to).unwrap();
            fs::set_permissions(&to, m.permissions()).unwrap();
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File { data: Vec<u8>, mode: u32 },
    Link(PathBuf),
    Dir(u32),
}

/// Everything under `root` except setup's own state directory.
pub fn snapshot(root: &Path) -> BTreeMap<String, Node> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Node>) {
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == STATE_DIR {
            continue;
        }
        let m = fs::symlink_metadata(&path).unwrap();
        let mode = m.permissions().mode() & 0o7777;
        if m.is_symlink() {
            out.insert(rel, Node::Link(fs::read_link(&path).unwrap()));
        } else if m.is_dir() {
            out.insert(rel, Node::Dir(mode));
            walk(root, &path, out);
        } else {
            out.insert(
                rel,
                Node::File {
                    data: fs::read(&path).unwrap(),
                    mode,
                },
            );
        }
    }
}

/// Paths whose state differs between two snapshots.
pub fn changed(a: &BTreeMap<String, Node>, b: &BTreeMap<String, Node>) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

pub fn assert_same(a: &BTreeMap<String, Node>, b: &BTreeMap<String, Node>) {
    let diff = changed(a, b);
    assert!(diff.is_empty(), "trees differ at: {diff:?}");
}

/// The fake CSF firmware the test manifest pins.
pub fn firmware_bytes() -> Vec<u8> {
    let mut v = vec![0x6e, 0x3a, 0xf1, 0xc3];
    v.extend((0..4096u32).map(|i| (i % 251) as u8));
    v
}

/// A tar archive of `files` (path, bytes, mode).
pub fn tar(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_cksum();
        b.append_data(&mut h, path, *data).unwrap();
    }
    b.into_inner().unwrap()
}

/// A loopback server plus a manifest file naming what it serves.
pub struct Artifacts {
    pub server: Server,
    pub manifest: PathBuf,
    _dir: tempfile::TempDir,
}

impl Artifacts {
    /// A copy of the manifest, named `name` beside it, whose firmware `url:` value is `value`
    /// (YAML as written: quote it for escapes).
    pub fn manifest_with_firmware_url(&self, value: &str, name: &str) -> PathBuf {
        let text = fs::read_to_string(&self.manifest).unwrap();
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("url: http://127.0.0.1"))
            .unwrap();
        let forged = text.replacen(line, &format!("    url: {value}"), 1);
        let path = self.manifest.with_file_name(name);
        fs::write(&path, forged).unwrap();
        path
    }
}

/// Extra `sources:` entries: (id, version, file name, bytes, tree, build).
pub type SourceEntry<'a> = (&'a str, &'a str, &'a str, &'a [u8], &'a str, &'a str);

pub fn artifacts(
    firmware: &[u8],
    firmware_sha: Option<&str>,
    sources: &[SourceEntry],
) -> Artifacts {
    let server = Server::start();
    let fw_url = server.route("/fw/mali_csffw.bin", Reply::Body(firmware.to_vec()));
    let sha = firmware_sha
        .map(str::to_string)
        .unwrap_or_else(|| sha256_hex(firmware));
    let mut yaml = format!(
        "schema: 1\nfirmware:\n  - id: csffw-test\n    version: \"test\"\n    path: arm/mali/arch10.8/mali_csffw.bin\n    size: {}\n    sha256: {sha}\n    url: {fw_url}\n    licence: test\n    source: test\n    for_panthor: true\n    recommended: true\nsources:\n",
        firmware.len()
    );
    if sources.iter().all(|s| s.0 != "mesa") {
        // The planner needs a pinned Mesa even when the mesa step is not run.
        yaml.push_str("  - id: mesa\n    version: \"26.1.6\"\n    url: https://archive.mesa3d.org/mesa-26.1.6.tar.xz\n    size: 77770828\n    sha256: 5296b88a0f1e012e2cb9ada150a2bbadf728ca81e5a4fb2ab43c83a4d2158606\n    tree: mesa-26.1.6\n    build: meson\n    licence: MIT\n    provenance: test\n");
    }
    for (id, version, file, data, tree, build) in sources {
        let url = server.route(&format!("/src/{file}"), Reply::Body(data.to_vec()));
        yaml.push_str(&format!(
            "  - id: {id}\n    version: \"{version}\"\n    url: {url}\n    size: {}\n    sha256: {}\n    tree: {tree}\n    build: {build}\n    licence: test\n    provenance: test\n",
            data.len(),
            sha256_hex(data)
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.yaml");
    fs::write(&manifest, yaml).unwrap();
    Artifacts {
        server,
        manifest,
        _dir: dir,
    }
}

/// `rvl setup --root ROOT --manifest MANIFEST`, downloads retried once and a stall given up
/// after 5 s, system tools from the stand-ins in `tests/fixtures/setup/bin/` (rvl never runs
/// the root's own; [`setup_without_stand_ins`] shows what happens then).
pub fn setup(root: impl AsRef<Path>, manifest: &Path) -> Rvl {
    setup_without_stand_ins(root, manifest).env("RVL_ROOT_TOOLS", fixture_file("setup/bin"))
}

/// [`setup`] as a user runs it: no `RVL_ROOT_TOOLS`.
pub fn setup_without_stand_ins(root: impl AsRef<Path>, manifest: &Path) -> Rvl {
    rvl(&["setup"])
        .root(root)
        .arg("--manifest")
        .arg(manifest)
        .env("RVL_FETCH_ATTEMPTS", "2")
        .env("RVL_FETCH_STALL_SECS", "5")
}

/// rvl's llama.cpp prefix in a fixture root, as setup leaves it: executables in `bin/` (the
/// RPC worker ggml-rpc-server among them) and the build stamp, its patch list taken from
/// `patches/llama.cpp/series` (all of it when `patched`, none otherwise), so the stamp matches
/// the series this rvl embeds.
pub fn plant_llama(fx: &Fixture, prefix: &str, patched: bool) {
    let rel = prefix.trim_start_matches('/');
    for bin in [
        "llama-server",
        "llama-bench",
        "test-backend-ops",
        "ggml-rpc-server",
    ] {
        let p = format!("{rel}/bin/{bin}");
        fx.write(&p, "#!/bin/sh\nexit 0\n");
        fs::set_permissions(fx.join(&p), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/llama.cpp");
    let patches: Vec<serde_json::Value> = if patched {
        fs::read_to_string(dir.join("series"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|n| {
                serde_json::json!({
                    "name": format!("llama.cpp/{}", n.trim()),
                    "sha256": sha256_hex(&fs::read(dir.join(n.trim())).unwrap()),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let stamp = serde_json::json!({
        "project": "llama.cpp",
        "version": "0.3.36",
        "source_sha256": "ab".repeat(32),
        "patches": patches,
        "options": [],
    });
    fx.write(
        &format!("{rel}/share/rvl/build.json"),
        serde_json::to_vec_pretty(&stamp).unwrap(),
    );
}

/// A copy of a setup fixture root and the test manifest (firmware served on loopback).
pub struct Board {
    pub fx: Fixture,
    pub a: Artifacts,
}

impl Board {
    pub fn new(fixture: &str) -> Board {
        Board {
            fx: Fixture::copy(fixture),
            a: artifacts(&firmware_bytes(), None, &[]),
        }
    }
}
