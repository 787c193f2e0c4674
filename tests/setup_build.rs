//! The source-build path end to end: tiny stand-in meson (Mesa) and cmake (llama.cpp) projects,
//! packed into tarballs by the test and served on loopback, go through download, sha256,
//! safe unpack, patch series, build and install into their prefixes; then `icd` registers the
//! result. Includes a patch that does not apply and archives that try to escape.
//! Needs meson, ninja, cmake and a C compiler: without them these tests skip with a SKIPPED
//! line, unless RVL_REQUIRE_BUILD=1 (CI) makes them fail.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use common::roots::{self, artifacts, assert_same, firmware_bytes, snapshot, Artifacts};
use common::{setup, step_names, Fixture, Rvl};
use rvl::exit;

const MESA_PREFIX: &str = "opt/rvl/mesa-26.1.6-rvl1";
const LLAMA_PREFIX: &str = "opt/rvl/llama.cpp-b9999-rvl1";

/// Pack `files` (path, content, mode) into a .tar.xz.
fn tar_xz(files: &[(&str, &str, u32)]) -> Vec<u8> {
    let files: Vec<(&str, &[u8], u32)> = files
        .iter()
        .map(|(path, data, mode)| (*path, data.as_bytes(), *mode))
        .collect();
    xz(&roots::tar(&files))
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

/// A meson_options.txt declaring every `-Dname=` rvl's mesa step passes, as strings.
fn mesa_meson_options() -> String {
    rvl::setup::steps::MESA_OPTIONS
        .iter()
        .map(|o| {
            let name = o.trim_start_matches("-D").split('=').next().unwrap();
            format!("option('{name}', type: 'string', value: '')\n")
        })
        .collect()
}

fn mesa_tarball() -> Vec<u8> {
    tar_xz(&[
        (
            "mesa-26.1.6/meson.build",
            "project('mesa', 'c', version: '26.1.6')\n\
             if get_option('vulkan-drivers') != 'panfrost'\n  error('stand-in: expected -Dvulkan-drivers=panfrost')\nendif\n\
             shared_library('vulkan_panfrost', 'src/panvk.c', install: true)\n",
            0o644,
        ),
        // Every option rvl passes, declared the way meson wants (an unknown -D is fatal to it).
        ("mesa-26.1.6/meson_options.txt", &mesa_meson_options(), 0o644),
        ("mesa-26.1.6/src/panvk.c", PANVK_C, 0o644),
    ])
}

/// The stand-in llama.cpp's CMakeLists.txt: like the real one it puts executables in
/// `<build>/bin/`, installs llama-bench and llama-server, builds and installs the RPC worker
/// ggml-rpc-server only with `GGML_RPC=ON` (tools/rpc), and builds test-backend-ops only with
/// `LLAMA_BUILD_TESTS=ON` and never installs it.
const LLAMA_CMAKE: &str = "cmake_minimum_required(VERSION 3.13)\nproject(llama C)\n\
     option(GGML_VULKAN \"\" OFF)\noption(GGML_RPC \"\" OFF)\noption(LLAMA_BUILD_TESTS \"\" OFF)\n\
     if(NOT GGML_VULKAN)\n  message(FATAL_ERROR \"stand-in: expected -DGGML_VULKAN=ON\")\nendif()\n\
     set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n\
     add_executable(llama-bench main.c)\nadd_executable(llama-server main.c)\n\
     install(TARGETS llama-bench llama-server)\n\
     if(GGML_RPC)\n  add_executable(ggml-rpc-server main.c)\n  install(TARGETS ggml-rpc-server)\nendif()\n\
     if(LLAMA_BUILD_TESTS)\n  add_executable(test-backend-ops main.c)\nendif()\n";

fn llama_tarball() -> Vec<u8> {
    tar_xz(&[
        ("llama.cpp-b9999/CMakeLists.txt", LLAMA_CMAKE, 0o644),
        (
            "llama.cpp-b9999/main.c",
            "int main(void) { return 0; }\n",
            0o644,
        ),
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

/// `rvl setup --board boltzmann --only ONLY` on `root` with `manifest`.
fn boltzmann(root: &Fixture, manifest: &Path, only: &str) -> Rvl {
    setup(root, manifest).args(&["--board", "boltzmann", "--only", only])
}

/// A copy of `fixture` and a manifest whose Mesa source is `tarball`, served on loopback.
fn with_mesa(fixture: &str, tarball: &[u8]) -> (Fixture, Artifacts) {
    let a = artifacts(
        &firmware_bytes(),
        None,
        &[(
            "mesa",
            "26.1.6",
            "mesa-26.1.6.tar.xz",
            tarball,
            "mesa-26.1.6",
            "meson",
        )],
    );
    let fx = Fixture::copy(fixture);
    // Debian 13 builds with its own packages (tests/setup_builddeps.rs covers the releases
    // that need pinned build tools).
    fx.write("etc/os-release", TRIXIE);
    (fx, a)
}

const TRIXIE: &str =
    "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"13\"\nID=debian\n";

#[test]
fn mesa_builds_patched_panvk_into_its_prefix_and_icd_registers_it() {
    if !common::have_build_tools() {
        return;
    }
    let (fx, a) = with_mesa("boltzmann-uboot-menu", &mesa_tarball());
    let root = fx.path();
    let p = patches_dir(&[("0001-mark.patch", GOOD_PATCH)]);
    let before = snapshot(root);
    boltzmann(&fx, &a.manifest, "mesa,icd")
        .arg("--dry-run")
        .env("RVL_PATCHES_DIR", p.path())
        .run()
        .expect_code(exit::OK)
        .expect_stdout("apply mesa/0001-mark.patch")
        .expect_stdout("build with Meson and install into");
    boltzmann(&fx, &a.manifest, "mesa,icd")
        .arg("--yes")
        .env("RVL_PATCHES_DIR", p.path())
        .run()
        .expect_code(exit::OK);
    let so = fs::read(lib(root)).unwrap();
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
    assert!(fx
        .read("etc/environment.d/90-rvl-vulkan.conf")
        .contains("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json"));
    // Build log kept; no staging or work directories left.
    let log = fx.read("var/lib/rvl/logs/mesa-26.1.6.log");
    assert!(
        log.contains("== patch -p1 < mesa/0001-mark.patch") && log.contains("== build"),
        "{log}"
    );
    assert!(!root.join("opt/rvl/.stage-mesa-26.1.6-rvl1").exists());
    assert!(!root.join("var/lib/rvl/work").join("mesa-26.1.6").exists());
    // Rollback removes the prefix, /opt/rvl and the ICD files.
    second_plan_is_empty_and_rollback_restores(&fx, &a.manifest, "mesa,icd", p.path(), &before);
    // The tarball was served once (the second plan used the cache).
    assert_eq!(a.server.hits("/src/mesa-26.1.6.tar.xz"), 1);
}

/// After an apply: a second plan of `only` lists nothing, and `--rollback` brings the root
/// back to `before` byte for byte.
fn second_plan_is_empty_and_rollback_restores(
    fx: &Fixture,
    manifest: &Path,
    only: &str,
    patches: &Path,
    before: &BTreeMap<String, roots::Node>,
) {
    let again = boltzmann(fx, manifest, only)
        .args(&["--dry-run", "--json"])
        .env("RVL_PATCHES_DIR", patches)
        .run()
        .stdout_json();
    assert!(
        again["plan"]["steps"].as_array().unwrap().is_empty(),
        "{again}"
    );
    setup(fx, manifest)
        .args(&["--rollback", "--yes"])
        .run()
        .expect_code(exit::OK);
    assert_same(before, &snapshot(fx.path()));
}

#[test]
fn a_patch_that_does_not_apply_is_named_and_nothing_is_installed() {
    if !common::have_build_tools() {
        return;
    }
    let (fx, a) = with_mesa("boltzmann-extlinux", &mesa_tarball());
    let p = patches_dir(&[
        ("0001-mark.patch", GOOD_PATCH),
        ("0002-bad.patch", BAD_PATCH),
    ]);
    let before = snapshot(fx.path());
    boltzmann(&fx, &a.manifest, "mesa")
        .arg("--yes")
        .env("RVL_PATCHES_DIR", p.path())
        .run()
        .expect_code(exit::STEP_FAILED)
        .expect_stderr("step mesa failed")
        .expect_stderr("patch mesa/0002-bad.patch does not apply");
    assert_same(&before, &snapshot(fx.path()));
}

#[test]
fn an_empty_or_missing_series_builds_the_plain_release() {
    if !common::have_build_tools() {
        return;
    }
    let (fx, a) = with_mesa("boltzmann-extlinux", &mesa_tarball());
    let p = tempfile::tempdir().unwrap(); // no mesa/ inside
    boltzmann(&fx, &a.manifest, "mesa")
        .arg("--yes")
        .env("RVL_PATCHES_DIR", p.path())
        .run()
        .expect_code(exit::OK);
    let so = fs::read(lib(fx.path())).unwrap();
    assert!(!contains(&so, b"rvl-patched-marker"));
    let stamp = fx.read(&format!("{MESA_PREFIX}/share/rvl/build.json"));
    assert!(stamp.contains("\"patches\": []"), "{stamp}");
}

/// The stand-in llama.cpp and a manifest pinning it, served on loopback.
fn with_llama() -> (Fixture, Artifacts) {
    let a = artifacts(
        &firmware_bytes(),
        None,
        &[(
            "llama.cpp",
            "b9999",
            "llama.cpp-b9999.tar.xz",
            &llama_tarball(),
            "llama.cpp-b9999",
            "cmake",
        )],
    );
    (Fixture::copy("boltzmann-extlinux"), a)
}

const WRAPPERS: [(&str, &str); 2] = [
    ("usr/local/bin/rvl-llama-server", "llama-server"),
    ("usr/local/bin/rvl-llama-bench", "llama-bench"),
];

#[test]
fn llama_cpp_builds_with_vulkan_and_its_series_into_its_own_prefix() {
    if !common::have_build_tools() {
        return;
    }
    let (fx, a) = with_llama();
    let p = tempfile::tempdir().unwrap();
    fs::create_dir_all(p.path().join("llama.cpp")).unwrap();
    fs::write(
        p.path().join("llama.cpp/0001-mali-tiles.patch"),
        "--- a/main.c\n+++ b/main.c\n@@ -1 +1,2 @@\n int main(void) { return 0; }\n+const char tiles[] = \"mali-small-tiles\";\n",
    )
    .unwrap();
    boltzmann(&fx, &a.manifest, "llama-cpp")
        .arg("--yes")
        .env("RVL_PATCHES_DIR", p.path())
        .run()
        .expect_code(exit::OK);
    for bin in [
        "llama-bench",
        "llama-server",
        "test-backend-ops",
        "ggml-rpc-server",
    ] {
        let exe = fs::read(fx.join(LLAMA_PREFIX).join("bin").join(bin)).unwrap();
        assert!(contains(&exe, b"mali-small-tiles"), "{bin} lacks the patch");
    }
    let log = fx.read("var/lib/rvl/logs/llama.cpp-b9999.log");
    assert!(log.contains("-DGGML_VULKAN=ON"), "{log}");
    assert!(log.contains("-DGGML_RPC=ON"), "{log}");
    assert!(log.contains("-DLLAMA_BUILD_TESTS=ON"), "{log}");
}

#[test]
fn llama_cpp_puts_wrappers_on_path_that_exec_its_prefix_and_rollback_removes_them_all() {
    if !common::have_build_tools() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let (fx, a) = with_llama();
    let none = tempfile::tempdir().unwrap(); // no series: the stand-in is not llama.cpp
    let root = fx.path();
    let before = snapshot(root);
    let v = boltzmann(&fx, &a.manifest, "llama-cpp")
        .env("RVL_PATCHES_DIR", none.path())
        .args(&["--dry-run", "--json"])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    let plan = v["plan"].to_string();
    for needle in [
        "/usr/local/bin/rvl-llama-server",
        "/usr/local/bin/rvl-llama-bench",
        "-DLLAMA_BUILD_TESTS=ON",
    ] {
        assert!(plan.contains(needle), "{needle} not in the plan: {plan}");
    }
    boltzmann(&fx, &a.manifest, "llama-cpp")
        .env("RVL_PATCHES_DIR", none.path())
        .arg("--dry-run")
        .run()
        .expect_code(exit::OK)
        .expect_stdout("rvl-llama-server")
        .expect_stdout("test-backend-ops");
    boltzmann(&fx, &a.manifest, "llama-cpp")
        .env("RVL_PATCHES_DIR", none.path())
        .arg("--yes")
        .run()
        .expect_code(exit::OK);
    let test_ops = root.join(LLAMA_PREFIX).join("bin/test-backend-ops");
    assert_eq!(
        fs::metadata(&test_ops).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    for (wrapper, bin) in WRAPPERS {
        let path = root.join(wrapper);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o755,
            "{wrapper}"
        );
        let text = fx.read(wrapper);
        assert!(text.starts_with("#!/bin/sh\n"), "{text}");
        assert!(
            text.contains(&format!("exec /{LLAMA_PREFIX}/bin/{bin} \"$@\"\n")),
            "{text}"
        );
        assert!(
            text.contains("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json"),
            "{text}"
        );
        let syntax = std::process::Command::new("sh")
            .arg("-n")
            .arg(&path)
            .status()
            .unwrap();
        assert!(syntax.success(), "{wrapper} is not valid sh");
    }
    // A second plan is empty (wrappers and build in place); rollback removes all of it.
    second_plan_is_empty_and_rollback_restores(&fx, &a.manifest, "llama-cpp", none.path(), &before);
}

/// The stand-in llama.cpp with `from` in its CMakeLists.txt replaced by `to`, built by the
/// llama-cpp step: the step fails saying `why`, and the root is as it was.
fn a_broken_llama_cpp_build_fails_the_step_and_installs_nothing(from: &str, to: &str, why: &str) {
    if !common::have_build_tools() {
        return;
    }
    let cmake = LLAMA_CMAKE.replace(from, to);
    assert_ne!(cmake, LLAMA_CMAKE, "{from}");
    let tarball = tar_xz(&[
        ("llama.cpp-b9999/CMakeLists.txt", &cmake, 0o644),
        (
            "llama.cpp-b9999/main.c",
            "int main(void) { return 0; }\n",
            0o644,
        ),
    ]);
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
    let fx = Fixture::copy("boltzmann-extlinux");
    let none = tempfile::tempdir().unwrap();
    let before = snapshot(fx.path());
    boltzmann(&fx, &a.manifest, "llama-cpp")
        .env("RVL_PATCHES_DIR", none.path())
        .arg("--yes")
        .run()
        .expect_code(exit::STEP_FAILED)
        .expect_stderr("step llama-cpp failed")
        .expect_stderr(why);
    assert_same(&before, &snapshot(fx.path()));
}

#[test]
fn a_llama_cpp_build_without_the_rpc_worker_fails_the_step_and_installs_nothing() {
    // A tree whose RPC backend is switched off whatever the flags say: no ggml-rpc-server.
    a_broken_llama_cpp_build_fails_the_step_and_installs_nothing(
        "if(GGML_RPC)",
        "if(FALSE)",
        "the build installed no bin/ggml-rpc-server",
    );
}

#[test]
fn a_llama_cpp_build_without_test_backend_ops_fails_the_step_and_installs_nothing() {
    a_broken_llama_cpp_build_fails_the_step_and_installs_nothing(
        "if(LLAMA_BUILD_TESTS)",
        "if(FALSE)",
        "the build made no test-backend-ops",
    );
}

#[test]
fn a_wrapper_removed_by_hand_is_planned_again_without_rebuilding() {
    if !common::have_build_tools() {
        return;
    }
    let (fx, a) = with_llama();
    let none = tempfile::tempdir().unwrap(); // no series: the stand-in is not llama.cpp
    boltzmann(&fx, &a.manifest, "llama-cpp")
        .env("RVL_PATCHES_DIR", none.path())
        .arg("--yes")
        .run()
        .expect_code(exit::OK);
    fs::remove_file(fx.path().join(WRAPPERS[1].0)).unwrap();
    let v = boltzmann(&fx, &a.manifest, "llama-cpp")
        .env("RVL_PATCHES_DIR", none.path())
        .args(&["--dry-run", "--json"])
        .run()
        .expect_code(exit::OK)
        .stdout_json();
    let plan = v["plan"].to_string();
    assert!(plan.contains("/usr/local/bin/rvl-llama-bench"), "{plan}");
    assert!(!plan.contains("rvl-llama-server"), "{plan}");
    assert!(!plan.contains("build-source"), "{plan}");
}

#[test]
fn an_archive_entry_climbing_out_is_refused_and_nothing_is_installed() {
    if !common::have_build_tools() {
        return;
    }
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
        let (fx, a) = with_mesa("boltzmann-extlinux", &hostile_tar_xz(name, kind, link));
        let before = snapshot(fx.path());
        boltzmann(&fx, &a.manifest, "mesa")
            .arg("--yes")
            .run()
            .expect_code(exit::STEP_FAILED)
            .expect_stderr("refused")
            .expect_stderr(what);
        assert_same(&before, &snapshot(fx.path()));
        assert!(!fx.parent().join("evil").exists());
    }
}

// llama.cpp from an sdist fetched with pip: a stand-in `python3` first on PATH plays pip.

const SDIST: &str = "llama_cpp_python-0.3.36.tar.gz";
const PIP_REQUIREMENT: &str = "llama-cpp-python==0.3.36";
const PIP_PREFIX: &str = "opt/rvl/llama.cpp-0.3.36-rvl1";

/// The stand-in sdist: the cmake project under `vendor/llama.cpp`, as the real one has it.
fn sdist() -> Vec<u8> {
    let tar = roots::tar(&[
        (
            "llama_cpp_python-0.3.36/vendor/llama.cpp/CMakeLists.txt",
            LLAMA_CMAKE.as_bytes(),
            0o644,
        ),
        (
            "llama_cpp_python-0.3.36/vendor/llama.cpp/main.c",
            b"int main(void) { return 0; }\n",
            0o644,
        ),
        (
            "llama_cpp_python-0.3.36/pyproject.toml",
            b"[project]\n",
            0o644,
        ),
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
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

fn cache_entries(root: &Path) -> Vec<String> {
    fs::read_dir(root.join(roots::STATE_DIR).join("cache"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A fixture root, the stand-in python3 first on PATH, and a manifest pinning its sdist.
struct PipCase {
    fx: Fixture,
    data: Vec<u8>,
    python: tempfile::TempDir,
    manifest: PathBuf,
    _manifest_dir: tempfile::TempDir,
}

impl PipCase {
    /// `sha256`: the pinned digest, the sdist's own when `None`.
    fn new(pip: Pip, sha256: Option<&str>) -> PipCase {
        let data = sdist();
        let sha = sha256.map_or_else(|| common::http::sha256_hex(&data), str::to_string);
        let python = stand_in_python(pip, &data);
        let m = tempfile::tempdir().unwrap();
        let manifest = pip_manifest(m.path(), data.len(), &sha);
        PipCase {
            fx: Fixture::copy("boltzmann-extlinux"),
            data,
            python,
            manifest,
            _manifest_dir: m,
        }
    }

    /// `rvl setup --board boltzmann --only llama-cpp ARGS` with the stand-in first on PATH.
    fn setup(&self, args: &[&str]) -> Rvl {
        let path = format!(
            "{}:{}",
            self.python.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        boltzmann(&self.fx, &self.manifest, "llama-cpp")
            .args(args)
            .env("PATH", path)
    }

    fn calls(&self) -> String {
        fs::read_to_string(self.python.path().join("calls.log")).unwrap_or_default()
    }
}

#[test]
fn llama_cpp_from_pip_is_fetched_verified_and_built_from_the_vendored_tree() {
    if !common::have_build_tools() {
        return;
    }
    let t = PipCase::new(Pip::Works, None);
    let sha = common::http::sha256_hex(&t.data);
    let no_patches = tempfile::tempdir().unwrap();
    t.setup(&["--dry-run"])
        .run()
        .expect_code(exit::OK)
        .expect_stdout(&format!(
            "pip download {PIP_REQUIREMENT} ({} bytes, sha256 checked), unpack",
            t.data.len()
        ))
        // The tool's own name, not the enum's Debug spelling ("Cmake").
        .expect_stdout("build with CMake and install into");
    let v = t.setup(&["--dry-run", "--json"]).run().stdout_json();
    let action = &v["plan"]["steps"][0]["actions"][0];
    assert_eq!(action["pip"]["requirement"], PIP_REQUIREMENT, "{v}");
    assert_eq!(action["pip"]["filename"], SDIST, "{v}");
    assert!(action.get("url").is_none(), "{v}");
    assert_eq!(t.calls(), "", "planning runs no pip");

    t.setup(&["--yes"])
        .env("RVL_PATCHES_DIR", no_patches.path())
        .run()
        .expect_code(exit::OK);
    let root = t.fx.path();
    assert!(root.join(PIP_PREFIX).join("bin/llama-server").is_file());
    let log = t.fx.read("var/lib/rvl/logs/llama.cpp-0.3.36.log");
    assert!(log.contains("-DGGML_VULKAN=ON"), "{log}");
    assert!(log.contains("vendor/llama.cpp"), "{log}");
    // Only the verified sdist stays in the cache; pip's directory is gone.
    assert_eq!(cache_entries(root), vec![format!("{sha}.tar.gz")]);
    let called = t.calls();
    assert_eq!(called.matches(" download ").count(), 1, "{called}");
    assert!(
        called.contains("-m pip show --quiet scikit-build-core"),
        "{called}"
    );
}

#[test]
fn a_pip_download_with_the_wrong_sha256_exits_6_and_leaves_nothing() {
    let zeros = "0".repeat(64);
    let t = PipCase::new(Pip::Works, Some(&zeros));
    let before = snapshot(t.fx.path());
    t.setup(&["--yes"])
        .run()
        .expect_code(exit::DOWNLOAD)
        .expect_stderr(&format!("pip download {PIP_REQUIREMENT}: sha256 mismatch"));
    assert_same(&before, &snapshot(t.fx.path()));
    assert!(!t.fx.join(PIP_PREFIX).exists());
    assert_eq!(cache_entries(t.fx.path()), Vec::<String>::new());
    assert_eq!(t.calls().matches(" download ").count(), 1);
}

#[test]
fn missing_pip_or_build_backend_is_named_with_its_package_before_downloading() {
    for (pip, expected, package) in [
        (
            Pip::Missing,
            "pip is not installed",
            "sudo apt install python3-pip",
        ),
        (
            Pip::NoBackend,
            "pip needs scikit-build-core",
            "sudo apt install python3-scikit-build-core",
        ),
    ] {
        let t = PipCase::new(pip, None);
        let before = snapshot(t.fx.path());
        t.setup(&["--yes"])
            .run()
            .expect_code(exit::PROBLEMS)
            .expect_stderr(expected)
            .expect_stderr(package);
        assert_same(&before, &snapshot(t.fx.path()));
        assert_eq!(cache_entries(t.fx.path()), Vec::<String>::new());
        assert_eq!(t.calls().matches(" download ").count(), 0);
    }
}

/// A candidate patch on top of [`GOOD_PATCH`] (it needs the series' line to apply).
const CANDIDATE_PATCH: &str = "--- a/src/panvk.c\n+++ b/src/panvk.c\n@@ -1,2 +1,3 @@\n int panvk_probe(void) { return 1; }\n const char rvl_patched[] = \"rvl-patched-marker\";\n+const char rvl_candidate[] = \"rvl-candidate-marker\";\n";

/// The ICD's library_path after a setup of `root`.
fn icd_library(root: &Path) -> String {
    let icd: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("etc/vulkan/icd.d/rvl_panvk.aarch64.json")).unwrap(),
    )
    .unwrap();
    icd["ICD"]["library_path"].as_str().unwrap().to_string()
}

#[test]
fn mesa_candidates_build_into_their_own_prefix_and_a_plain_setup_registers_the_series_build_again()
{
    if !common::have_build_tools() {
        return;
    }
    let (fx, a) = with_mesa("boltzmann-uboot-menu", &mesa_tarball());
    let root = fx.path();
    let p = patches_dir(&[("0001-mark.patch", GOOD_PATCH)]);
    fs::create_dir_all(p.path().join("mesa/candidates")).unwrap();
    fs::write(
        p.path().join("mesa/candidates/0001-faster.patch"),
        CANDIDATE_PATCH,
    )
    .unwrap();
    // Named after the candidates: sha256 of "<sha256 of the patch> <name>\n", first 8 digits.
    let id = format!(
        "{} mesa/candidates/0001-faster.patch\n",
        rvl::digest::sha256_hex(CANDIDATE_PATCH.as_bytes())
    );
    let candidates_prefix = format!(
        "{MESA_PREFIX}-candidates-{}",
        &rvl::digest::sha256_hex(id.as_bytes())[..8]
    );
    let before = snapshot(root);
    let run = |args: &[&str]| {
        boltzmann(&fx, &a.manifest, "mesa,icd")
            .args(args)
            .env("RVL_PATCHES_DIR", p.path())
            .run()
    };

    // The plan names the candidate, its prefix, and how to check and leave it.
    run(&["--mesa-candidates", "--dry-run"])
        .expect_code(exit::OK)
        .expect_stdout(&format!(
            "(1 patch and 1 candidate) into /{candidates_prefix}"
        ))
        .expect_stdout("apply mesa/0001-mark.patch, mesa/candidates/0001-faster.patch")
        .expect_stdout("rvl smoke-bench --gguf");
    run(&["--mesa-candidates", "--yes"]).expect_code(exit::OK);
    let so = fs::read(
        root.join(&candidates_prefix)
            .join("lib/libvulkan_panfrost.so"),
    )
    .unwrap();
    assert!(contains(&so, b"rvl-patched-marker") && contains(&so, b"rvl-candidate-marker"));
    assert!(
        !root.join(MESA_PREFIX).exists(),
        "the series-only prefix was built too"
    );
    assert_eq!(
        icd_library(root),
        format!("/{candidates_prefix}/lib/libvulkan_panfrost.so")
    );
    let stamp = fx.read(&format!("{candidates_prefix}/share/rvl/build.json"));
    assert!(
        stamp.contains("mesa/candidates/0001-faster.patch"),
        "{stamp}"
    );
    // Doctor tells the build by its candidate (the loader's ICD points into its prefix).
    let doctor = common::rvl(&[
        "doctor",
        "-v",
        "--only",
        "vulkan-icd",
        "--no-vulkan",
        "--manifest",
    ])
    .arg(&a.manifest)
    .root(root)
    .run()
    .stdout()
    .to_string();
    assert!(doctor.contains("1 candidate patch"), "{doctor}");
    assert!(
        doctor.contains("0001-faster.patch: candidate, applied"),
        "{doctor}"
    );
    // With the flag again: nothing to do.
    let again = run(&["--mesa-candidates", "--dry-run", "--json"]).stdout_json();
    assert!(step_names(&again).is_empty(), "{again}");

    // Without it: the series-only build, and the ICD back on it.
    let plain = run(&["--dry-run", "--json"]).stdout_json();
    assert_eq!(step_names(&plain), ["mesa", "icd"], "{plain}");
    run(&["--yes"]).expect_code(exit::OK);
    let so = fs::read(lib(root)).unwrap();
    assert!(contains(&so, b"rvl-patched-marker") && !contains(&so, b"rvl-candidate-marker"));
    assert_eq!(
        icd_library(root),
        format!("/{MESA_PREFIX}/lib/libvulkan_panfrost.so")
    );
    let again = run(&["--dry-run", "--json"]).stdout_json();
    assert!(step_names(&again).is_empty(), "{again}");
    // Both builds stay: going back to the candidates only rewrites the ICD.
    let back = run(&["--mesa-candidates", "--dry-run", "--json"]).stdout_json();
    assert_eq!(step_names(&back), ["icd"], "{back}");
    // A new revision of the candidate is a new build, not the old one taken for it.
    fs::write(
        p.path().join("mesa/candidates/0001-faster.patch"),
        CANDIDATE_PATCH.replace("rvl-candidate-marker", "rvl-candidate-marker-v2"),
    )
    .unwrap();
    let revised = run(&["--mesa-candidates", "--dry-run", "--json"]).stdout_json();
    assert_eq!(step_names(&revised), ["mesa", "icd"], "{revised}");
    let to = revised["plan"]["steps"][0]["actions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["prefix"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        to.starts_with(&format!("/{MESA_PREFIX}-candidates-"))
            && to != format!("/{candidates_prefix}"),
        "{to}"
    );
    fs::write(
        p.path().join("mesa/candidates/0001-faster.patch"),
        CANDIDATE_PATCH,
    )
    .unwrap();
    // --only icd with the flag finds the candidates' build too.
    let icd_only = boltzmann(&fx, &a.manifest, "icd")
        .args(&["--mesa-candidates", "--dry-run"])
        .env("RVL_PATCHES_DIR", p.path())
        .run()
        .expect_code(exit::OK)
        .stdout()
        .to_string();
    assert!(icd_only.contains(&candidates_prefix), "{icd_only}");

    // Rollback undoes both runs.
    setup(&fx, &a.manifest)
        .args(&["--rollback", "--yes"])
        .run()
        .expect_code(exit::OK);
    assert_same(&before, &snapshot(root));
    assert_eq!(a.server.hits("/src/mesa-26.1.6.tar.xz"), 1);
}

#[test]
fn mesa_candidates_with_a_prebuilt_archive_is_a_usage_error() {
    let (fx, a) = with_mesa("boltzmann-extlinux", &mesa_tarball());
    let before = snapshot(fx.path());
    boltzmann(&fx, &a.manifest, "mesa")
        .args(&["--mesa-candidates", "--mesa-from", "prebuilt", "--dry-run"])
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("--mesa-candidates builds panvk from source");
    assert_same(&before, &snapshot(fx.path()));
}
