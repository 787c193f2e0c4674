//! Mesa 26 on the releases boards actually run (issue 25). Each test root gets a release's
//! `/etc/os-release` and its real `apt-cache policy` (tests/fixtures/apt-policy/, answered by the
//! stand-in apt-cache); the stand-in apt-get marks what it "installs". The build tools are tiny
//! stand-ins: a meson wheel whose `meson` runs this machine's meson, and a SPIRV-Tools cmake
//! project with the real one's targets (building everything else fails) and pkg-config file.
//! Also: an interrupted build resumes, and `--mesa-archive` installs a prebuilt panvk.
//! Needs meson, ninja, cmake, a C compiler and python3-venv (CI installs them; see .ci/run).

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::http::{sha256_hex, Reply, Server};
use common::roots::{self, assert_same, snapshot};
use common::{rvl, setup, Fixture, Rvl};
use rvl::exit;
use rvl::setup::fault::FAULT_EXIT;

const VERSION: &str = "26.1.6";
const PREFIX: &str = "opt/rvl/mesa-26.1.6-rvl1";
const MESON_DIR: &str = "opt/rvl/build/meson-1.7.0";
const SPIRV_DIR: &str = "opt/rvl/build/spirv-tools-2025.1~rc1";

fn os_release(id: &str, version_id: &str, pretty: &str) -> String {
    format!("PRETTY_NAME=\"{pretty}\"\nID={id}\nVERSION_ID=\"{version_id}\"\n")
}

/// (codename, os-release)
const RELEASES: [(&str, &str, &str, &str); 5] = [
    ("bullseye", "debian", "11", "Debian GNU/Linux 11 (bullseye)"),
    ("bookworm", "debian", "12", "Debian GNU/Linux 12 (bookworm)"),
    ("trixie", "debian", "13", "Debian GNU/Linux 13 (trixie)"),
    ("jammy", "ubuntu", "22.04", "Ubuntu 22.04.5 LTS"),
    ("noble", "ubuntu", "24.04", "Ubuntu 24.04.3 LTS"),
];

/// A copy of a board root that is `codename`, with that release's apt policy.
fn release_root(codename: &str) -> Fixture {
    let (_, id, v, pretty) = RELEASES.iter().find(|r| r.0 == codename).unwrap();
    let fx = Fixture::copy("boltzmann-extlinux");
    fx.write("etc/os-release", os_release(id, v, pretty));
    let policy = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/apt-policy/{codename}.txt")),
    )
    .unwrap();
    fx.write("var/lib/rvl-test/apt-policy.txt", policy);
    fx
}

fn tar_xz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let tar = roots::tar(files);
    let mut out = Vec::new();
    let mut enc = xz2::write::XzEncoder::new(&mut out, 1);
    enc.write_all(&tar).unwrap();
    enc.finish().unwrap();
    out
}

fn tar_gz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&roots::tar(files)).unwrap();
    gz.finish().unwrap()
}

/// The stand-in Mesa: it needs every option rvl passes declared, and, when `spirv` is set,
/// SPIRV-Tools >= 2024.1 through pkg-config, linked static into the driver (so the pinned
/// build must be position-independent, as the real driver needs it).
fn mesa_tarball(spirv: bool) -> Vec<u8> {
    let options: String = rvl::setup::steps::MESA_OPTIONS
        .iter()
        .map(|o| {
            let name = o.trim_start_matches("-D").split('=').next().unwrap();
            format!("option('{name}', type: 'string', value: '')\n")
        })
        .collect();
    let dep = if spirv {
        "spv = dependency('SPIRV-Tools', version: '>= 2024.1', static: true)\n"
    } else {
        "spv = []\n"
    };
    let build = format!(
        "project('mesa', 'c', version: '{VERSION}')\n{dep}\
         shared_library('vulkan_panfrost', 'src/panvk.c', dependencies: spv, install: true)\n"
    );
    let c = if spirv {
        "int spvfake(void);\nint panvk_probe(void) { return spvfake(); }\n"
    } else {
        "int panvk_probe(void) { return 1; }\n"
    };
    tar_xz(&[
        ("mesa-26.1.6/meson.build", build.as_bytes(), 0o644),
        ("mesa-26.1.6/meson_options.txt", options.as_bytes(), 0o644),
        ("mesa-26.1.6/src/panvk.c", c.as_bytes(), 0o644),
    ])
}

/// A SPIRV-Tools stand-in with the real project's targets and outputs: the three static
/// libraries (source/, source/opt/, source/link/), SPIRV-Tools.pc in the build directory, the
/// four public headers. `everything` fails when built, so only the named targets may be.
fn spirv_tools_tarball() -> Vec<u8> {
    let top = "cmake_minimum_required(VERSION 3.13)\nproject(spvfake C)\n\
        if(NOT EXISTS \"${SPIRV-Headers_SOURCE_DIR}/include/spirv/unified1/spirv.h\")\n\
          message(FATAL_ERROR \"stand-in: SPIRV-Headers_SOURCE_DIR must name the headers\")\nendif()\n\
        if(NOT SPIRV_SKIP_EXECUTABLES)\n  message(FATAL_ERROR \"stand-in: expected -DSPIRV_SKIP_EXECUTABLES=ON\")\nendif()\n\
        add_subdirectory(source)\n\
        file(WRITE ${CMAKE_BINARY_DIR}/SPIRV-Tools.pc \"prefix=${CMAKE_INSTALL_PREFIX}\\nlibdir=\\${prefix}/lib\\nincludedir=\\${prefix}/include\\nName: SPIRV-Tools\\nDescription: stand-in\\nVersion: 2025.1\\nLibs: -L\\${libdir} -lSPIRV-Tools-opt -lSPIRV-Tools -lSPIRV-Tools-link\\nCflags: -I\\${includedir}\\n\")\n\
        add_custom_target(spirv-tools-pkg-config)\n\
        add_custom_target(everything ALL COMMAND false)\n";
    let source = "add_library(SPIRV-Tools-static STATIC a.c)\n\
        set_target_properties(SPIRV-Tools-static PROPERTIES OUTPUT_NAME SPIRV-Tools)\n\
        add_subdirectory(opt)\nadd_subdirectory(link)\n";
    let t = "KhronosGroup-SPIRV-Tools-f289d04";
    let files: Vec<(String, Vec<u8>)> = vec![
        (format!("{t}/CMakeLists.txt"), top.into()),
        (format!("{t}/source/CMakeLists.txt"), source.into()),
        (
            format!("{t}/source/a.c"),
            b"int spvfake(void) { return 7; }\n".to_vec(),
        ),
        (
            format!("{t}/source/opt/CMakeLists.txt"),
            b"add_library(SPIRV-Tools-opt STATIC b.c)\n".to_vec(),
        ),
        (
            format!("{t}/source/opt/b.c"),
            b"int spvopt(void) { return 1; }\n".to_vec(),
        ),
        (
            format!("{t}/source/link/CMakeLists.txt"),
            b"add_library(SPIRV-Tools-link STATIC c.c)\n".to_vec(),
        ),
        (
            format!("{t}/source/link/c.c"),
            b"int spvlink(void) { return 1; }\n".to_vec(),
        ),
        (
            format!("{t}/include/spirv-tools/libspirv.h"),
            b"/* stand-in */\n".to_vec(),
        ),
        (
            format!("{t}/include/spirv-tools/libspirv.hpp"),
            b"/* stand-in */\n".to_vec(),
        ),
        (
            format!("{t}/include/spirv-tools/optimizer.hpp"),
            b"/* stand-in */\n".to_vec(),
        ),
        (
            format!("{t}/include/spirv-tools/linker.hpp"),
            b"/* stand-in */\n".to_vec(),
        ),
    ];
    let refs: Vec<(&str, &[u8], u32)> = files
        .iter()
        .map(|(p, d)| (p.as_str(), d.as_slice(), 0o644))
        .collect();
    tar_gz(&refs)
}

fn spirv_headers_tarball() -> Vec<u8> {
    tar_gz(&[(
        "spirv-headers-1.6.1+1.4.309.0/include/spirv/unified1/spirv.h",
        b"/* stand-in */\n",
        0o644,
    )])
}

/// A meson 1.7.0 wheel whose `meson` says 1.7.0 to `--version`, logs how it was called to
/// `RVL_TEST_MESON_LOG`, and otherwise runs this machine's meson.
fn meson_wheel() -> Vec<u8> {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("w.whl");
    let script = r#"
import base64, hashlib, sys, zipfile
files = {
    "rvlfakemeson.py": (
        "import os, sys\n"
        "def main():\n"
        "    if sys.argv[1:] == ['--version']:\n"
        "        print('1.7.0'); return 0\n"
        "    log = os.environ.get('RVL_TEST_MESON_LOG')\n"
        "    if log:\n"
        "        open(log, 'a').write(sys.argv[1] + '\\n')\n"
        "    os.execvp('meson', ['meson'] + sys.argv[1:])\n"
    ),
    "meson-1.7.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: meson\nVersion: 1.7.0\n",
    "meson-1.7.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: rvl-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "meson-1.7.0.dist-info/entry_points.txt": "[console_scripts]\nmeson = rvlfakemeson:main\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("meson-1.7.0.dist-info/RECORD,,")
    z.writestr("meson-1.7.0.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let ok = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&out)
        .status()
        .unwrap()
        .success();
    assert!(ok, "making the stand-in wheel");
    fs::read(out).unwrap()
}

/// The loopback server and a manifest pinning the stand-in Mesa and build tools.
struct Pins {
    server: Server,
    manifest: PathBuf,
    _dir: tempfile::TempDir,
}

fn pins(mesa: &[u8]) -> Pins {
    let server = Server::start();
    let mut yaml = String::from("schema: 1\nsources:\n");
    let url = server.route("/src/mesa-26.1.6.tar.xz", Reply::Body(mesa.to_vec()));
    yaml.push_str(&format!(
        "  - id: mesa\n    version: \"{VERSION}\"\n    url: {url}\n    size: {}\n    sha256: {}\n    tree: mesa-26.1.6\n    build: meson\n    licence: test\n    provenance: test\n",
        mesa.len(),
        sha256_hex(mesa)
    ));
    yaml.push_str("build_tools:\n");
    for (id, version, file, data, tree) in [
        (
            "meson",
            "1.7.0",
            "meson-1.7.0-py3-none-any.whl",
            meson_wheel(),
            None,
        ),
        (
            "spirv-tools",
            "2025.1~rc1",
            "spirv-tools_2025.1~rc1.orig.tar.gz",
            spirv_tools_tarball(),
            Some("KhronosGroup-SPIRV-Tools-f289d04"),
        ),
        (
            "spirv-headers",
            "1.4.309.0",
            "spirv-headers_1.6.1+1.4.309.0.orig.tar.gz",
            spirv_headers_tarball(),
            Some("spirv-headers-1.6.1+1.4.309.0"),
        ),
    ] {
        let url = server.route(&format!("/tools/{file}"), Reply::Body(data.clone()));
        yaml.push_str(&format!(
            "  - id: {id}\n    version: \"{version}\"\n    url: {url}\n    size: {}\n    sha256: {}\n{}    licence: test\n    provenance: test\n",
            data.len(),
            sha256_hex(&data),
            tree.map_or(String::new(), |t| format!("    tree: {t}\n"))
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.yaml");
    fs::write(&manifest, yaml).unwrap();
    Pins {
        server,
        manifest,
        _dir: dir,
    }
}

fn mesa(fx: &Fixture, p: &Pins, only: &str) -> Rvl {
    setup(fx, &p.manifest)
        .args(&["--board", "boltzmann", "--only", only])
        .env("RVL_PATCHES_DIR", fx.parent())
}

fn plan_json(fx: &Fixture, p: &Pins) -> serde_json::Value {
    mesa(fx, p, "mesa")
        .args(&["--dry-run", "--json"])
        .run()
        .expect_code(exit::OK)
        .stdout_json()
}

fn kinds(plan: &serde_json::Value) -> Vec<String> {
    plan["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["actions"].as_array().unwrap().iter())
        .map(|a| {
            let k = a["kind"].as_str().unwrap().to_string();
            match a["tool"].as_str() {
                Some(t) => format!("{k}:{t}"),
                None => k,
            }
        })
        .collect()
}

fn build_source(plan: &serde_json::Value) -> serde_json::Value {
    plan["plan"]["steps"][0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "build-source")
        .unwrap()
        .clone()
}

#[test]
fn debian_11_is_blocked_before_anything_is_downloaded_with_the_reason_it_cannot_build() {
    let fx = release_root("bullseye");
    let p = pins(&mesa_tarball(false));
    let before = snapshot(fx.path());
    let out = mesa(&fx, &p, "mesa,icd")
        .arg("--yes")
        .run()
        .expect_code(exit::BLOCKED);
    let text = out.stdout().to_string() + out.stderr();
    assert!(
        text.contains("Debian GNU/Linux 11 (bullseye) cannot build Mesa 26: it has no LLVM >= 15 with LLVMSPIRVLib"),
        "{text}"
    );
    assert!(
        text.contains("Debian 12 or Ubuntu 22.04 or newer"),
        "{text}"
    );
    assert!(text.contains("--mesa-archive"), "{text}");
    assert!(
        p.server.seen().is_empty(),
        "blocked, yet something was downloaded"
    );
    assert_same(&before, &snapshot(fx.path()));
}

#[test]
fn each_release_plans_its_build_dependencies_from_its_apt_policy() {
    let p = pins(&mesa_tarball(false));
    // (release, LLVM, action kinds, meson from the venv, SPIRV-Tools' pkg-config dir)
    let cases = [
        (
            "bookworm",
            15,
            vec![
                "install-packages",
                "build-tool:meson-venv",
                "build-tool:spirv-tools",
                "build-source",
            ],
            true,
            true,
        ),
        (
            "trixie",
            19,
            vec!["install-packages", "build-source"],
            false,
            false,
        ),
        (
            "jammy",
            15,
            vec![
                "install-packages",
                "build-tool:meson-venv",
                "build-tool:spirv-tools",
                "build-source",
            ],
            true,
            true,
        ),
        (
            "noble",
            20,
            vec!["install-packages", "build-tool:meson-venv", "build-source"],
            true,
            false,
        ),
    ];
    for (codename, llvm, want, venv, spirv) in cases {
        let fx = release_root(codename);
        let plan = plan_json(&fx, &p);
        assert_eq!(kinds(&plan), want, "{codename}: {plan}");
        let tc = &build_source(&plan)["toolchain"];
        assert_eq!(
            tc["llvm_config"],
            format!("/usr/bin/llvm-config-{llvm}"),
            "{codename}"
        );
        assert_eq!(tc["meson"].is_string(), venv, "{codename}: {tc}");
        assert_eq!(tc["pkg_config_path"].is_array(), spirv, "{codename}: {tc}");
        let packages = plan["plan"]["steps"][0]["actions"][0]["packages"]
            .as_array()
            .unwrap();
        assert!(
            packages
                .iter()
                .any(|p| p == &format!("libllvmspirvlib-{llvm}-dev")),
            "{codename}: {packages:?}"
        );
        // The plan says where each piece comes from and what it costs.
        let notes = plan["plan"]["notes"].to_string();
        assert!(
            notes.contains(&format!(
                "LLVM {llvm} with libclang-cpp, libclc and LLVMSPIRVLib: the release's packages"
            )),
            "{notes}"
        );
        assert!(notes.contains("cost: about"), "{notes}");
        if venv {
            assert!(
                notes.contains("meson 1.7.0: pinned PyPI wheel in a venv"),
                "{notes}"
            );
        }
    }
}

#[test]
fn the_text_plan_names_each_dependency_where_it_comes_from_disk_and_time() {
    let fx = release_root("bookworm");
    let p = pins(&mesa_tarball(false));
    let out = mesa(&fx, &p, "mesa")
        .arg("--dry-run")
        .run()
        .expect_code(exit::OK);
    for want in [
        "building Mesa 26.1.6 on Debian GNU/Linux 12 (bookworm), from its apt policy",
        "meson 1.7.0: pinned PyPI wheel in a venv at /opt/rvl/build/meson-1.7.0 (the release has 1.0.1; Mesa needs >= 1.4.0)",
        "SPIRV-Tools 2025.1~rc1 with SPIRV-Headers 1.4.309.0: pinned source, built static into /opt/rvl/build/spirv-tools-2025.1~rc1 (the release has 2023.1; Mesa needs >= 2024.1)",
        "apt-get installs 24 release packages:",
        "MiB of scratch",
        "apt-get install --no-install-recommends",
    ] {
        assert!(out.stdout().contains(want), "missing `{want}`:\n{}", out.stdout());
    }
}

#[test]
fn under_root_without_apt_the_plan_says_what_the_release_needs_and_installs_nothing() {
    let fx = release_root("bookworm");
    fs::remove_file(fx.join("var/lib/rvl-test/apt-policy.txt")).unwrap();
    let p = pins(&mesa_tarball(false));
    let plan = plan_json(&fx, &p);
    assert_eq!(
        kinds(&plan),
        [
            "build-tool:meson-venv",
            "build-tool:spirv-tools",
            "build-source"
        ]
    );
    let notes = plan["plan"]["notes"].to_string();
    assert!(notes.contains("its apt was not asked"), "{notes}");
    assert!(notes.contains("release packages it needs:"), "{notes}");
}

/// Debian 12 end to end: apt-get installs what is missing, meson's venv and SPIRV-Tools are made
/// in /opt/rvl/build, and Mesa is configured with them. A crash after Mesa's ninja leaves
/// nothing installed; the tools stay; the next run resumes the build instead of starting over.
#[test]
fn on_debian_12_setup_brings_its_build_tools_and_an_interrupted_build_resumes() {
    if !common::have_build_tools() {
        return;
    }
    let fx = release_root("bookworm");
    let p = pins(&mesa_tarball(true));
    let meson_log = fx.parent().join("meson-calls.log");
    let run = |fault: Option<&str>| {
        let cmd = mesa(&fx, &p, "mesa,icd")
            .arg("--yes")
            .env("RVL_TEST_MESON_LOG", &meson_log);
        match fault {
            Some(f) => cmd.env("RVL_FAULT", f),
            None => cmd,
        }
        .run()
    };
    let out = run(Some("after-phase:mesa-26.1.6:build")).expect_code(FAULT_EXIT);
    let err = out.stderr();
    for want in [
        "mesa: apt-get install (log: ",
        "spirv-tools-2025.1~rc1: build (log: ",
        "spirv-tools-2025.1~rc1: build done in ",
        "mesa-26.1.6: configure (log: ",
        "mesa-26.1.6: build done in ",
    ] {
        assert!(err.contains(want), "missing `{want}`:\n{err}");
    }
    let apt = fx.read("var/lib/rvl-test/apt-get.log");
    assert!(
        apt.contains("apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 python3 ")
            && apt.contains(" llvm-15-dev ")
            && apt.contains("(DEBIAN_FRONTEND=noninteractive)"),
        "{apt}"
    );
    assert!(apt.contains("apt-mark auto python3 "), "{apt}");
    // The tools are complete and stamped; Mesa is not installed; its build is kept.
    for dir in [MESON_DIR, SPIRV_DIR] {
        assert!(fx.join(&format!("{dir}/.rvl-tool.json")).is_file(), "{dir}");
    }
    for f in [
        "lib/libSPIRV-Tools.a",
        "lib/libSPIRV-Tools-opt.a",
        "lib/libSPIRV-Tools-link.a",
        "include/spirv-tools/libspirv.h",
    ] {
        assert!(fx.join(&format!("{SPIRV_DIR}/{f}")).is_file(), "{f}");
    }
    let pc = fx.read(&format!("{SPIRV_DIR}/lib/pkgconfig/SPIRV-Tools.pc"));
    assert!(
        pc.contains(&format!("prefix={}", fx.join(SPIRV_DIR).display())),
        "{pc}"
    );
    assert!(
        !fx.join(PREFIX).exists(),
        "an interrupted build installed something"
    );
    assert!(!fx.join("etc/vulkan/icd.d/rvl_panvk.aarch64.json").exists());
    assert!(fx
        .join("var/lib/rvl/work/mesa-26.1.6/build/build.ninja")
        .is_file());
    // The venv's meson configured Mesa (not this machine's, which is not >= 1.4 on Debian 12).
    assert_eq!(
        fs::read_to_string(&meson_log).unwrap().lines().next(),
        Some("setup")
    );
    // The next plan builds no tool again and installs no package again.
    let plan = plan_json(&fx, &p);
    assert_eq!(kinds(&plan), ["build-source"], "{plan}");
    // It resumes: no unpacking, no configure, the same build directory.
    let out = run(None).expect_code(exit::OK);
    let err = out.stderr();
    assert!(err.contains("resuming the interrupted build"), "{err}");
    assert!(!err.contains("mesa-26.1.6: configure"), "{err}");
    assert!(fx
        .join(&format!("{PREFIX}/lib/libvulkan_panfrost.so"))
        .is_file());
    assert!(fx.join("etc/vulkan/icd.d/rvl_panvk.aarch64.json").is_file());
    assert!(!fx.join("var/lib/rvl/work/mesa-26.1.6").exists());
    // The source was downloaded once; a second plan is empty.
    assert_eq!(p.server.hits("/src/mesa-26.1.6.tar.xz"), 1);
    let again = mesa(&fx, &p, "mesa,icd")
        .args(&["--dry-run", "--json"])
        .run()
        .stdout_json();
    assert!(
        again["plan"]["steps"].as_array().unwrap().is_empty(),
        "{again}"
    );
    // Rollback removes panvk and the ICD; the build tools stay as a cache.
    setup(&fx, &p.manifest)
        .args(&["--rollback", "--yes"])
        .run()
        .expect_code(exit::OK);
    assert!(!fx.join(PREFIX).exists());
    assert!(fx.join(&format!("{SPIRV_DIR}/.rvl-tool.json")).is_file());
}

#[test]
fn a_failed_apt_get_names_the_fix_and_installs_nothing() {
    let fx = release_root("trixie");
    let p = pins(&mesa_tarball(false));
    let out = mesa(&fx, &p, "mesa,icd")
        .arg("--yes")
        .env("RVL_TEST_APT_FAIL", "1")
        .run()
        .expect_code(exit::STEP_FAILED);
    let err = out.stderr();
    assert!(err.contains("step mesa failed"), "{err}");
    assert!(
        err.contains("run `sudo apt-get update` and setup again"),
        "{err}"
    );
    assert!(err.contains("404  Not Found"), "{err}");
    assert!(!fx.join(PREFIX).exists());
}

// ---- --mesa-archive: a prebuilt panvk made elsewhere (scripts/build-panvk-deb.sh)

/// A prebuilt panvk prefix as the build script packs it.
fn panvk_archive(stamp: Option<serde_json::Value>) -> Vec<u8> {
    let mut files: Vec<(String, Vec<u8>)> = vec![(
        "lib/libvulkan_panfrost.so".into(),
        b"\x7fELF stand-in panvk".to_vec(),
    )];
    if let Some(s) = stamp {
        files.push((
            "share/rvl/build.json".into(),
            serde_json::to_vec(&s).unwrap(),
        ));
    }
    let refs: Vec<(&str, &[u8], u32)> = files
        .iter()
        .map(|(p, d)| (p.as_str(), d.as_slice(), 0o644))
        .collect();
    tar_xz(&refs)
}

/// The stamp rvl's own build writes, with this rvl's mesa series (so doctor sees series n/n).
fn rvl_stamp(version: &str) -> serde_json::Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/mesa");
    let patches: Vec<serde_json::Value> = fs::read_to_string(dir.join("series"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|n| {
            serde_json::json!({
                "name": format!("mesa/{}", n.trim()),
                "sha256": sha256_hex(&fs::read(dir.join(n.trim())).unwrap()),
            })
        })
        .collect();
    serde_json::json!({"project": "mesa", "version": version, "source_sha256": "ab".repeat(32), "patches": patches, "options": [], "built_by": "build-panvk-deb.sh", "arch": "aarch64"})
}

fn write_archive(dir: &Path, data: &[u8], sidecar: Option<&str>) -> PathBuf {
    let f = dir.join("panvk-26.1.6-rvl1-aarch64.tar.xz");
    fs::write(&f, data).unwrap();
    if let Some(sha) = sidecar {
        fs::write(
            dir.join("panvk-26.1.6-rvl1-aarch64.tar.xz.sha256"),
            format!("{sha}  panvk-26.1.6-rvl1-aarch64.tar.xz\n"),
        )
        .unwrap();
    }
    f
}

fn prebuilt(fx: &Fixture, p: &Pins, archive: &Path) -> Rvl {
    setup(fx, &p.manifest)
        .args(&[
            "--board",
            "boltzmann",
            "--only",
            "mesa,icd",
            "--mesa-from",
            "prebuilt",
            "--mesa-archive",
        ])
        .arg(archive)
}

#[test]
fn a_prebuilt_archive_is_verified_installed_and_named_by_doctor_with_its_series() {
    let fx = release_root("bullseye"); // it needs no build: even a release that cannot build takes it
    let p = pins(&mesa_tarball(false));
    let d = tempfile::tempdir().unwrap();
    let data = panvk_archive(Some(rvl_stamp(VERSION)));
    let file = write_archive(d.path(), &data, Some(&sha256_hex(&data)));
    prebuilt(&fx, &p, &file)
        .arg("--dry-run")
        .run()
        .expect_code(exit::OK)
        .expect_stdout(
            "install prebuilt panvk (Mesa 26.1.6) from panvk-26.1.6-rvl1-aarch64.tar.xz",
        );
    prebuilt(&fx, &p, &file)
        .arg("--yes")
        .run()
        .expect_code(exit::OK);
    assert_eq!(
        fs::read(fx.join(&format!("{PREFIX}/lib/libvulkan_panfrost.so"))).unwrap(),
        b"\x7fELF stand-in panvk"
    );
    let stamp: serde_json::Value =
        serde_json::from_str(&fx.read(&format!("{PREFIX}/share/rvl/build.json"))).unwrap();
    assert_eq!(stamp["prebuilt"]["sha256"], sha256_hex(&data));
    assert_eq!(stamp["built_by"], "build-panvk-deb.sh");
    assert!(
        p.server.seen().is_empty(),
        "an offline install downloaded something"
    );
    let doc = rvl(&["doctor", "--json", "--board", "boltzmann"])
        .root(fx.path())
        .run()
        .stdout_json();
    let icd = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "vulkan-icd")
        .unwrap()
        .clone();
    assert_eq!(icd["status"], "pass", "{icd}");
    let series = rvl::mesa::rvl_series().len();
    assert!(
        icd["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("series {series}/{series}")),
        "{icd}"
    );
}

#[test]
fn a_prebuilt_archive_that_does_not_match_its_sha256_or_names_another_mesa_installs_nothing() {
    let fx = release_root("bookworm");
    let p = pins(&mesa_tarball(false));
    let d = tempfile::tempdir().unwrap();
    let before = snapshot(fx.path());
    // Wrong sha256.
    let data = panvk_archive(Some(rvl_stamp(VERSION)));
    let file = write_archive(d.path(), &data, Some(&"0".repeat(64)));
    let out = prebuilt(&fx, &p, &file)
        .arg("--yes")
        .run()
        .expect_code(exit::DOWNLOAD);
    assert!(out.stderr().contains("sha256 mismatch"), "{}", out.stderr());
    // No sha256 at all.
    fs::remove_file(d.path().join("panvk-26.1.6-rvl1-aarch64.tar.xz.sha256")).unwrap();
    let out = prebuilt(&fx, &p, &file)
        .arg("--yes")
        .run()
        .expect_code(exit::USAGE);
    assert!(
        out.stderr().contains("no sha256 to verify it by"),
        "{}",
        out.stderr()
    );
    // Another Mesa's build, or no stamp: refused after the sha256 passed.
    for data in [
        panvk_archive(Some(rvl_stamp("26.2.4"))),
        panvk_archive(None),
    ] {
        let file = write_archive(d.path(), &data, None);
        let out = prebuilt(&fx, &p, &file)
            .args(&["--yes", "--mesa-sha256", &sha256_hex(&data)])
            .run()
            .expect_code(exit::STEP_FAILED);
        let err = out.stderr();
        assert!(err.contains("step mesa failed"), "{err}");
        assert!(
            err.contains("names mesa 26.2.4, not mesa 26.1.6")
                || err.contains("has no share/rvl/build.json"),
            "{err}"
        );
    }
    // --mesa-archive needs --mesa-from prebuilt.
    setup(&fx, &p.manifest)
        .args(&["--board", "boltzmann", "--only", "mesa", "--mesa-archive"])
        .arg(&file)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("add --mesa-from prebuilt");
    let now = snapshot(fx.path());
    let changed: Vec<String> = roots::changed(&before, &now)
        .into_iter()
        .filter(|p| !p.starts_with("var/lib/rvl"))
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
}
