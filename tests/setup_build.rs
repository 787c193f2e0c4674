//! The source-build path end to end: tiny stand-in meson (Mesa) and cmake (llama.cpp) projects,
//! packed into tarballs by the test and served on loopback, go through download, sha256,
//! safe unpack, patch series, build and install into their prefixes; then `icd` registers the
//! result. Includes a patch that does not apply and archives that try to escape.
//! Needs meson, ninja, cmake and a C compiler (CI installs them; see .ci/run).

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use common::roots::{artifacts, assert_same, firmware_bytes, fixture, rvl, snapshot};
use predicates::prelude::*;

const MESA_PREFIX: &str = "opt/rvl/mesa-26.1.6-rvl1";
const LLAMA_PREFIX: &str = "opt/rvl/llama.cpp-b9999-rvl1";

/// Pack `files` (path, content, mode) into a .tar.xz.
fn tar_xz(files: &[(&str, &str, u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_cksum();
        b.append_data(&mut h, path, data.as_bytes()).unwrap();
    }
    xz(&b.into_inner().unwrap())
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A tar with one hostile entry written through the raw header (the builder refuses these).
fn hostile_tar_xz(name: &str, kind: tar::EntryType, link: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut ok = tar::Header::new_gnu();
    ok.set_size(2);
    ok.set_mode(0o644);
    ok.set_cksum();
    b.append_data(&mut ok, "mesa-26.1.6/meson.build", &b"x\n"[..])
        .unwrap();
    let mut h = tar::Header::new_gnu();
    {
        let g = h.as_gnu_mut().unwrap();
        g.name[..name.len()].copy_from_slice(name.as_bytes());
        g.linkname[..link.len()].copy_from_slice(link.as_bytes());
    }
    h.set_entry_type(kind);
    h.set_mode(0o644);
    h.set_size(if kind == tar::EntryType::Regular {
        4
    } else {
        0
    });
    h.set_cksum();
    let data: &[u8] = if kind == tar::EntryType::Regular {
        b"evil"
    } else {
        b""
    };
    b.append(&h, data).unwrap();
    xz(&b.into_inner().unwrap())
}

const PANVK_C: &str = "int panvk_probe(void) { return 1; }\n";

fn mesa_tarball() -> Vec<u8> {
    tar_xz(&[
        (
            "mesa-26.1.6/meson.build",
            "project('mesa', 'c', version: '26.1.6')\n\
             if get_option('vulkan-drivers') != 'panfrost'\n  error('stand-in: expected -Dvulkan-drivers=panfrost')\nendif\n\
             shared_library('vulkan_panfrost', 'src/panvk.c', install: true)\n",
            0o644,
        ),
        (
            "mesa-26.1.6/meson_options.txt",
            "option('vulkan-drivers', type: 'string', value: '')\n\
             option('gallium-drivers', type: 'string', value: '')\n\
             option('platforms', type: 'string', value: '')\n\
             option('glx', type: 'string', value: '')\n\
             option('egl', type: 'string', value: '')\n\
             option('gbm', type: 'string', value: '')\n\
             option('llvm', type: 'string', value: '')\n\
             option('video-codecs', type: 'string', value: '')\n",
            0o644,
        ),
        ("mesa-26.1.6/src/panvk.c", PANVK_C, 0o644),
    ])
}

fn llama_tarball() -> Vec<u8> {
    tar_xz(&[
        (
            "llama.cpp-b9999/CMakeLists.txt",
            "cmake_minimum_required(VERSION 3.13)\nproject(llama C)\n\
             option(GGML_VULKAN \"\" OFF)\n\
             if(NOT GGML_VULKAN)\n  message(FATAL_ERROR \"stand-in: expected -DGGML_VULKAN=ON\")\nendif()\n\
             add_executable(llama-cli main.c)\ninstall(TARGETS llama-cli)\n",
            0o644,
        ),
        ("llama.cpp-b9999/main.c", "int main(void) { return 0; }\n", 0o644),
    ])
}

const GOOD_PATCH: &str = "--- a/src/panvk.c\n+++ b/src/panvk.c\n@@ -1 +1,2 @@\n int panvk_probe(void) { return 1; }\n+const char rvl_patched[] = \"rvl-patched-marker\";\n";
const BAD_PATCH: &str = "--- a/src/panvk.c\n+++ b/src/panvk.c\n@@ -1 +1 @@\n-int something_else(void) { return 0; }\n+int x;\n";

fn patches_dir(mesa: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("mesa")).unwrap();
    for (name, text) in mesa {
        fs::write(d.path().join("mesa").join(name), text).unwrap();
    }
    d
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn lib(root: &Path) -> PathBuf {
    root.join(MESA_PREFIX).join("lib/libvulkan_panfrost.so")
}

#[test]
fn mesa_builds_patched_panvk_into_its_prefix_and_icd_registers_it() {
    let (_d, root) = fixture("boltzmann-uboot-menu");
    let tarball = mesa_tarball();
    let a = artifacts(
        &firmware_bytes(),
        None,
        &[(
            "mesa",
            "26.1.6",
            "mesa-26.1.6.tar.xz",
            &tarball,
            "mesa-26.1.6",
            "meson",
        )],
    );
    let p = patches_dir(&[("0001-mark.patch", GOOD_PATCH)]);
    let before = snapshot(&root);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "mesa,icd", "--dry-run"])
        .env("RVL_PATCHES_DIR", p.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("apply mesa/0001-mark.patch"));
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "mesa,icd", "--yes"])
        .env("RVL_PATCHES_DIR", p.path())
        .assert()
        .success();
    let so = fs::read(lib(&root)).unwrap();
    assert!(
        contains(&so, b"rvl-patched-marker"),
        "the patch was not built in"
    );
    let icd: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("etc/vulkan/icd.d/rvl_panvk.aarch64.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        icd["ICD"]["library_path"],
        format!("/{MESA_PREFIX}/lib/libvulkan_panfrost.so")
    );
    assert!(
        fs::read_to_string(root.join("etc/environment.d/90-rvl-vulkan.conf"))
            .unwrap()
            .contains("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json")
    );
    // Build log kept; no staging or work directories left.
    let log = fs::read_to_string(root.join("var/lib/rvl/logs/mesa-26.1.6.log")).unwrap();
    assert!(
        log.contains("== patch -p1 < mesa/0001-mark.patch") && log.contains("== build"),
        "{log}"
    );
    assert!(!root.join("opt/rvl/.stage-mesa-26.1.6-rvl1").exists());
    assert!(!root.join("var/lib/rvl/work").join("mesa-26.1.6").exists());
    // Second plan empty; the tarball is served once (cached).
    let out = rvl(&root, &a.manifest)
        .args([
            "--board",
            "boltzmann",
            "--only",
            "mesa,icd",
            "--dry-run",
            "--json",
        ])
        .env("RVL_PATCHES_DIR", p.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["plan"]["steps"].as_array().unwrap().is_empty(), "{v}");
    assert_eq!(a.server.hits("/src/mesa-26.1.6.tar.xz"), 1);
    // Rollback removes the prefix, /opt/rvl and the ICD files.
    rvl(&root, &a.manifest).arg("--rollback").assert().success();
    assert_same(&before, &snapshot(&root));
}

#[test]
fn a_patch_that_does_not_apply_is_named_and_nothing_is_installed() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let tarball = mesa_tarball();
    let a = artifacts(
        &firmware_bytes(),
        None,
        &[(
            "mesa",
            "26.1.6",
            "mesa-26.1.6.tar.xz",
            &tarball,
            "mesa-26.1.6",
            "meson",
        )],
    );
    let p = patches_dir(&[
        ("0001-mark.patch", GOOD_PATCH),
        ("0002-bad.patch", BAD_PATCH),
    ]);
    let before = snapshot(&root);
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "mesa", "--yes"])
        .env("RVL_PATCHES_DIR", p.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("step mesa failed"))
        .stderr(predicate::str::contains(
            "patch mesa/0002-bad.patch does not apply",
        ));
    assert_same(&before, &snapshot(&root));
}

#[test]
fn an_empty_or_missing_series_builds_the_plain_release() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let tarball = mesa_tarball();
    let a = artifacts(
        &firmware_bytes(),
        None,
        &[(
            "mesa",
            "26.1.6",
            "mesa-26.1.6.tar.xz",
            &tarball,
            "mesa-26.1.6",
            "meson",
        )],
    );
    let p = tempfile::tempdir().unwrap(); // no mesa/ inside
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "mesa", "--yes"])
        .env("RVL_PATCHES_DIR", p.path())
        .assert()
        .success();
    let so = fs::read(lib(&root)).unwrap();
    assert!(!contains(&so, b"rvl-patched-marker"));
    let stamp = fs::read_to_string(root.join(MESA_PREFIX).join("share/rvl/build.json")).unwrap();
    assert!(stamp.contains("\"patches\": []"), "{stamp}");
}

#[test]
fn llama_cpp_builds_with_vulkan_and_its_series_into_its_own_prefix() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let tarball = llama_tarball();
    let a = artifacts(
        &firmware_bytes(),
        None,
        &[(
            "llama.cpp",
            "b9999",
            "llama.cpp-b9999.tar.xz",
            &tarball,
            "llama.cpp-b9999",
            "cmake",
        )],
    );
    let p = tempfile::tempdir().unwrap();
    fs::create_dir_all(p.path().join("llama.cpp")).unwrap();
    fs::write(
        p.path().join("llama.cpp/0001-mali-tiles.patch"),
        "--- a/main.c\n+++ b/main.c\n@@ -1 +1,2 @@\n int main(void) { return 0; }\n+const char tiles[] = \"mali-small-tiles\";\n",
    )
    .unwrap();
    rvl(&root, &a.manifest)
        .args(["--board", "boltzmann", "--only", "llama-cpp", "--yes"])
        .env("RVL_PATCHES_DIR", p.path())
        .assert()
        .success();
    let bin = fs::read(root.join(LLAMA_PREFIX).join("bin/llama-cli")).unwrap();
    assert!(contains(&bin, b"mali-small-tiles"));
    let log = fs::read_to_string(root.join("var/lib/rvl/logs/llama.cpp-b9999.log")).unwrap();
    assert!(log.contains("-DGGML_VULKAN=ON"), "{log}");
}

#[test]
fn an_archive_entry_climbing_out_is_refused_and_nothing_is_installed() {
    for (name, kind, link, what) in [
        (
            "mesa-26.1.6/../../evil",
            tar::EntryType::Regular,
            "",
            "escapes the target",
        ),
        (
            "mesa-26.1.6/etc",
            tar::EntryType::Symlink,
            "/etc",
            "absolute path `/etc`",
        ),
    ] {
        let (_d, root) = fixture("boltzmann-extlinux");
        let tarball = hostile_tar_xz(name, kind, link);
        let a = artifacts(
            &firmware_bytes(),
            None,
            &[(
                "mesa",
                "26.1.6",
                "mesa-26.1.6.tar.xz",
                &tarball,
                "mesa-26.1.6",
                "meson",
            )],
        );
        let before = snapshot(&root);
        rvl(&root, &a.manifest)
            .args(["--board", "boltzmann", "--only", "mesa", "--yes"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("refused"))
            .stderr(predicate::str::contains(what));
        assert_same(&before, &snapshot(&root));
        assert!(!root.parent().unwrap().join("evil").exists());
    }
}

// llama.cpp from an sdist fetched with pip: a stand-in `python3` first on PATH plays pip.

const SDIST: &str = "llama_cpp_python-0.3.36.tar.gz";
const PIP_REQUIREMENT: &str = "llama-cpp-python==0.3.36";
const PIP_PREFIX: &str = "opt/rvl/llama.cpp-0.3.36-rvl1";

/// The stand-in sdist: the cmake project under `vendor/llama.cpp`, as the real one has it.
fn sdist() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in [
        (
            "llama_cpp_python-0.3.36/vendor/llama.cpp/CMakeLists.txt",
            "cmake_minimum_required(VERSION 3.13)\nproject(llama C)\n\
             option(GGML_VULKAN \"\" OFF)\n\
             if(NOT GGML_VULKAN)\n  message(FATAL_ERROR \"stand-in: expected -DGGML_VULKAN=ON\")\nendif()\n\
             add_executable(llama-cli main.c)\ninstall(TARGETS llama-cli)\n",
        ),
        (
            "llama_cpp_python-0.3.36/vendor/llama.cpp/main.c",
            "int main(void) { return 0; }\n",
        ),
        ("llama_cpp_python-0.3.36/pyproject.toml", "[project]\n"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, data.as_bytes()).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&b.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

/// How the stand-in python3 behaves.
#[derive(Clone, Copy, PartialEq)]
enum Pip {
    Works,
    Missing,
    NoBackend,
}

/// A directory holding the stand-in `python3`, the sdist it "downloads" and a log of its calls.
/// It only answers the exact command setup must run.
fn stand_in_python(pip: Pip, sdist: &[u8]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let sdist_path = d.path().join("sdist.tar.gz");
    fs::write(&sdist_path, sdist).unwrap();
    let log = d.path().join("calls.log");
    let script = format!(
        "#!/bin/sh\n\
         echo \"$*\" >> '{log}'\n\
         [ \"$1 $2\" = \"-m pip\" ] || {{ echo \"stand-in: unexpected $*\" >&2; exit 2; }}\n\
         if [ {no_pip} = 1 ]; then echo 'python3: No module named pip' >&2; exit 1; fi\n\
         case \"$3\" in\n\
           --version) echo 'pip 0 (stand-in)' ;;\n\
           show) [ {no_backend} = 0 ] && [ \"$4 $5\" = '--quiet scikit-build-core' ] ;;\n\
           download)\n\
             [ \"$4 $5 $6 $7 $8 $9\" = '--no-deps --no-binary :all: --no-build-isolation {PIP_REQUIREMENT} -d' ] \
               || {{ echo \"stand-in: unexpected $*\" >&2; exit 2; }}\n\
             shift 9; cp '{sdist}' \"$1/{SDIST}\"; echo 'Saved {SDIST}' ;;\n\
           *) exit 2 ;;\n\
         esac\n",
        log = log.display(),
        sdist = sdist_path.display(),
        no_pip = u8::from(pip == Pip::Missing),
        no_backend = u8::from(pip == Pip::NoBackend),
    );
    let python = d.path().join("python3");
    fs::write(&python, script).unwrap();
    fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    d
}

fn calls(python_dir: &Path) -> String {
    fs::read_to_string(python_dir.join("calls.log")).unwrap_or_default()
}

/// A manifest pinning Mesa (the planner wants one) and llama.cpp from pip.
fn pip_manifest(dir: &Path, size: usize, sha256: &str) -> PathBuf {
    let path = dir.join("manifest.yaml");
    fs::write(
        &path,
        format!(
            "schema: 1\nsources:\n\
             \x20 - id: mesa\n    version: \"26.1.6\"\n    url: https://archive.mesa3d.org/mesa-26.1.6.tar.xz\n    size: 77770828\n    sha256: 5296b88a0f1e012e2cb9ada150a2bbadf728ca81e5a4fb2ab43c83a4d2158606\n    tree: mesa-26.1.6\n    build: meson\n    licence: MIT\n    provenance: test\n\
             \x20 - id: llama.cpp\n    version: \"0.3.36\"\n    pip: {{requirement: \"{PIP_REQUIREMENT}\", filename: {SDIST}, backend: scikit-build-core}}\n    size: {size}\n    sha256: {sha256}\n    tree: llama_cpp_python-0.3.36/vendor/llama.cpp\n    build: cmake\n    licence: MIT\n    provenance: test\n"
        ),
    )
    .unwrap();
    path
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn cache_entries(root: &Path) -> Vec<String> {
    fs::read_dir(root.join(common::roots::STATE_DIR).join("cache"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn llama_cpp_from_pip_is_fetched_verified_and_built_from_the_vendored_tree() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let data = sdist();
    let sha = common::http::sha256_hex(&data);
    let python = stand_in_python(Pip::Works, &data);
    let m = tempfile::tempdir().unwrap();
    let manifest = pip_manifest(m.path(), data.len(), &sha);
    let no_patches = tempfile::tempdir().unwrap();
    rvl(&root, &manifest)
        .args(["--board", "boltzmann", "--only", "llama-cpp", "--dry-run"])
        .env("PATH", path_with(python.path()))
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "pip download {PIP_REQUIREMENT} ({} bytes, sha256 checked), unpack",
            data.len()
        )));
    let out = rvl(&root, &manifest)
        .args(["--board", "boltzmann", "--only", "llama-cpp", "--dry-run"])
        .arg("--json")
        .env("PATH", path_with(python.path()))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let action = &v["plan"]["steps"][0]["actions"][0];
    assert_eq!(action["pip"]["requirement"], PIP_REQUIREMENT, "{v}");
    assert_eq!(action["pip"]["filename"], SDIST, "{v}");
    assert!(action.get("url").is_none(), "{v}");
    assert_eq!(calls(python.path()), "", "planning runs no pip");

    rvl(&root, &manifest)
        .args(["--board", "boltzmann", "--only", "llama-cpp", "--yes"])
        .env("PATH", path_with(python.path()))
        .env("RVL_PATCHES_DIR", no_patches.path())
        .assert()
        .success();
    assert!(root.join(PIP_PREFIX).join("bin/llama-cli").is_file());
    let log = fs::read_to_string(root.join("var/lib/rvl/logs/llama.cpp-0.3.36.log")).unwrap();
    assert!(log.contains("-DGGML_VULKAN=ON"), "{log}");
    assert!(log.contains("vendor/llama.cpp"), "{log}");
    // Only the verified sdist stays in the cache; pip's directory is gone.
    assert_eq!(
        cache_entries(&root),
        vec![format!("{}-{SDIST}", &sha[..16])]
    );
    let called = calls(python.path());
    assert_eq!(called.matches(" download ").count(), 1, "{called}");
    assert!(
        called.contains("-m pip show --quiet scikit-build-core"),
        "{called}"
    );
}

#[test]
fn a_pip_download_with_the_wrong_sha256_exits_6_and_leaves_nothing() {
    let (_d, root) = fixture("boltzmann-extlinux");
    let data = sdist();
    let python = stand_in_python(Pip::Works, &data);
    let m = tempfile::tempdir().unwrap();
    let manifest = pip_manifest(m.path(), data.len(), &"0".repeat(64));
    let before = snapshot(&root);
    rvl(&root, &manifest)
        .args(["--board", "boltzmann", "--only", "llama-cpp", "--yes"])
        .env("PATH", path_with(python.path()))
        .assert()
        .code(6)
        .stderr(predicate::str::contains(format!(
            "pip download {PIP_REQUIREMENT}: sha256 mismatch"
        )));
    assert_same(&before, &snapshot(&root));
    assert!(!root.join(PIP_PREFIX).exists());
    assert_eq!(cache_entries(&root), Vec::<String>::new());
    assert_eq!(calls(python.path()).matches(" download ").count(), 1);
}

#[test]
fn missing_pip_or_build_backend_is_named_with_its_package_before_downloading() {
    for (pip, expected) in [
        (Pip::Missing, "pip is not installed"),
        (Pip::NoBackend, "pip needs scikit-build-core"),
    ] {
        let (_d, root) = fixture("boltzmann-extlinux");
        let data = sdist();
        let python = stand_in_python(pip, &data);
        let m = tempfile::tempdir().unwrap();
        let manifest = pip_manifest(m.path(), data.len(), &common::http::sha256_hex(&data));
        let before = snapshot(&root);
        let package = if pip == Pip::Missing {
            "sudo apt install python3-pip"
        } else {
            "sudo apt install python3-scikit-build-core"
        };
        rvl(&root, &manifest)
            .args(["--board", "boltzmann", "--only", "llama-cpp", "--yes"])
            .env("PATH", path_with(python.path()))
            .assert()
            .code(1)
            .stderr(predicate::str::contains(expected))
            .stderr(predicate::str::contains(package));
        assert_same(&before, &snapshot(&root));
        assert_eq!(cache_entries(&root), Vec::<String>::new());
        assert_eq!(calls(python.path()).matches(" download ").count(), 0);
    }
}
