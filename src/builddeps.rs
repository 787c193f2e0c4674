//! What building Mesa 26's panvk needs on a Debian-family release, and where each piece comes
//! from: the release's own packages where they are new enough, else a pinned source rvl builds
//! into `/opt/rvl/build/` (meson from PyPI in a venv; SPIRV-Tools with SPIRV-Headers, static).
//!
//! Decided from the image's own `apt-cache policy` for a fixed list of names ([`policy_names`]),
//! so a board with `-updates` or backports enabled gets what its apt would install. Pure: the
//! text comes in, the decision goes out. Measured basis: `shared/research/wave3-anchors.md`
//! ("Building Mesa 26.2's panvk on releases that predate it").

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::bootcfg::kver::dpkg_compare;
use crate::osrelease::OsRelease;

/// Oldest LLVM whose LLVMSPIRVLib Mesa 26 accepts (`_llvmspirvlib_min_version`).
pub const LLVM_MIN: u32 = 15;
/// Newest LLVM major asked about.
pub const LLVM_MAX: u32 = 22;
/// Mesa 26's `meson_version`.
pub const MESON_MIN: &str = "1.4.0";
/// Mesa 26's `SPIRV-Tools` requirement for mesa_clc.
pub const SPIRV_TOOLS_MIN: &str = "2024.1";
/// Mesa 26's `python_version_req`.
pub const PYTHON_MIN: &str = "3.10";
/// Mesa 26's libdrm requirement for panfrost.
pub const LIBDRM_MIN: &str = "2.4.109";
/// SPIRV-Tools 2025.1's `cmake_minimum_required`.
pub const CMAKE_MIN: &str = "3.22.1";

/// Packages every build needs from the release, with what each is for.
pub const BASE_PACKAGES: &[(&str, &str)] = &[
    ("python3", "Mesa's code generators (Python >= 3.10)"),
    ("python3-mako", "Mesa's code generators"),
    ("python3-yaml", "Mesa's code generators"),
    ("python3-packaging", "Mesa's code generators"),
    ("ninja-build", "the build"),
    ("gcc", "the build"),
    ("g++", "the build"),
    ("pkg-config", "finding libraries"),
    ("patch", "applying rvl's series"),
    ("bison", "Mesa's parsers"),
    ("flex", "Mesa's parsers"),
    ("glslang-tools", "Mesa's build"),
    ("libdrm-dev", "panvk (libdrm >= 2.4.109)"),
    ("libexpat1-dev", "panvk"),
    ("zlib1g-dev", "panvk"),
    ("libzstd-dev", "panvk"),
    ("libelf-dev", "Mesa's build"),
];

/// The LLVM packages of one major, in the order they are named.
pub fn llvm_packages(major: u32) -> [String; 5] {
    [
        format!("llvm-{major}-dev"),
        format!("libclang-cpp{major}-dev"),
        format!("libclang-{major}-dev"),
        format!("libclc-{major}-dev"),
        format!("libllvmspirvlib-{major}-dev"),
    ]
}

/// The release packages rvl asks `apt-cache policy` about besides the LLVM ones
/// (scripts/panvk-lab/apt-policy-fixture.sh asks the same, in this order).
const POLICY_BASE: &[&str] = &[
    "python3",
    "python3-venv",
    "python3-mako",
    "python3-yaml",
    "python3-packaging",
    "meson",
    "ninja-build",
    "gcc",
    "g++",
    "pkg-config",
    "patch",
    "cmake",
    "bison",
    "flex",
    "glslang-tools",
    "libdrm-dev",
    "libexpat1-dev",
    "zlib1g-dev",
    "libzstd-dev",
    "libelf-dev",
    "spirv-tools",
];

/// Every name rvl asks `apt-cache policy` about, in a fixed order.
pub fn policy_names() -> Vec<String> {
    let mut names: Vec<String> = POLICY_BASE.iter().map(|s| s.to_string()).collect();
    for major in (LLVM_MIN..=LLVM_MAX).rev() {
        names.extend(llvm_packages(major));
    }
    names
}

/// One package as `apt-cache policy` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackageState {
    /// The installed version (`Installed:`), None for `(none)`.
    pub installed: Option<String>,
    /// The version apt would install (`Candidate:`), None for `(none)`.
    pub candidate: Option<String>,
}

/// `apt-cache policy NAMES…` output, parsed: packages apt does not know are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy(pub BTreeMap<String, PackageState>);

/// Most packages read from one policy text (rvl asks about fewer than 60).
const POLICY_MAX_PACKAGES: usize = 1000;

/// Parse `LC_ALL=C apt-cache policy` output. Unknown lines are ignored (the version table).
pub fn parse_policy(text: &str) -> Policy {
    let mut map = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if !line.starts_with(' ') {
            current = line
                .strip_suffix(':')
                .filter(|n| {
                    !n.is_empty()
                        && n.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"+-.:".contains(&b))
                })
                .map(str::to_string);
            if let Some(name) = &current {
                if map.len() >= POLICY_MAX_PACKAGES {
                    break;
                }
                map.entry(name.clone())
                    .or_insert_with(PackageState::default);
            }
            continue;
        }
        let Some(name) = &current else { continue };
        let t = line.trim();
        let value = |v: &str| {
            let v = v.trim();
            (v != "(none)" && !v.is_empty()).then(|| v.to_string())
        };
        if let Some(v) = t.strip_prefix("Installed:") {
            map.get_mut(name).expect("inserted above").installed = value(v);
        } else if let Some(v) = t.strip_prefix("Candidate:") {
            map.get_mut(name).expect("inserted above").candidate = value(v);
        }
    }
    Policy(map)
}

impl Policy {
    /// The version apt would end up with: the installed one, else the candidate.
    pub fn version(&self, name: &str) -> Option<&str> {
        let p = self.0.get(name)?;
        p.installed.as_deref().or(p.candidate.as_deref())
    }

    pub fn installed(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|p| p.installed.is_some())
    }

    /// Whether apt has this package at all (installed or installable).
    pub fn available(&self, name: &str) -> bool {
        self.version(name).is_some()
    }
}

/// A Debian version without its epoch and revision, for comparing with an upstream minimum:
/// `1:15.0.6-4+b1` → `15.0.6`, `2025.1~rc1-1` → `2025.1~rc1`.
pub fn upstream(version: &str) -> &str {
    let v = version.split_once(':').map_or(version, |(_, v)| v);
    v.rsplit_once('-').map_or(v, |(u, _)| u)
}

/// `version` (a Debian version) is at least `min` (an upstream one). A pre-release of the
/// minimum (`2024.1~rc1`) does not count.
pub fn at_least(version: &str, min: &str) -> bool {
    dpkg_compare(upstream(version), min) != Ordering::Less
}

/// Where a build tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFrom {
    /// The release's package, at this version.
    Distro(String),
    /// rvl's pinned source (the manifest's `build_tools`), because the release has only this
    /// version (None: not at all).
    Pinned { release_has: Option<String> },
}

impl ToolFrom {
    pub fn pinned(&self) -> bool {
        matches!(self, ToolFrom::Pinned { .. })
    }
}

/// What the mesa step needs on one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The LLVM major whose llvm-config, libclc and LLVMSPIRVLib the build uses.
    pub llvm: u32,
    pub meson: ToolFrom,
    pub spirv_tools: ToolFrom,
    /// Every release package the build needs, in a stable order.
    pub packages: Vec<String>,
    /// Those of them not installed now (what apt-get installs).
    pub missing: Vec<String>,
}

impl Resolved {
    /// `/usr/bin/llvm-config-N`: Debian and Ubuntu install one per major; the unversioned
    /// name exists only with the `llvm` metapackage.
    pub fn llvm_config(&self) -> String {
        format!("/usr/bin/llvm-config-{}", self.llvm)
    }
}

/// The newest LLVM major whose five packages apt has, or None.
pub fn newest_llvm(policy: &Policy) -> Option<u32> {
    (LLVM_MIN..=LLVM_MAX)
        .rev()
        .find(|m| llvm_packages(*m).iter().all(|p| policy.available(p)))
}

/// Name for messages: `PRETTY_NAME`, else `ID VERSION_ID`.
pub fn release_name(os: &OsRelease) -> String {
    if os.pretty_name.is_empty() {
        format!("{} {}", os.id, os.version_id)
    } else {
        os.pretty_name.clone()
    }
}

/// Decide the build's dependencies from the release's apt policy. Err: why this release cannot
/// build Mesa 26 (a sentence naming what is missing or too old).
pub fn resolve(os: &OsRelease, policy: &Policy) -> Result<Resolved, String> {
    let name = release_name(os);
    let too_old = |what: &str, have: &str, min: &str| {
        format!(
            "{name} cannot build Mesa 26: its {what} is {have}, older than the {min} Mesa 26 needs"
        )
    };
    let python = policy.version("python3").ok_or_else(|| {
        format!("{name} cannot build Mesa 26: apt has no python3 (run `sudo apt-get update`?)")
    })?;
    if !at_least(python, PYTHON_MIN) {
        return Err(too_old("Python", upstream(python), PYTHON_MIN));
    }
    let Some(llvm) = newest_llvm(policy) else {
        let partial: Vec<String> = (LLVM_MIN..=LLVM_MAX)
            .rev()
            .filter(|m| policy.available(&format!("llvm-{m}-dev")))
            .map(|m| m.to_string())
            .collect();
        let had = if partial.is_empty() {
            "it has no LLVM >= 15".to_string()
        } else {
            format!(
                "it has LLVM {} but not with its libclc and LLVMSPIRVLib (libllvmspirvlib-N-dev)",
                partial.join(", ")
            )
        };
        return Err(format!(
            "{name} cannot build Mesa 26: panvk's precompiled kernels need LLVM >= {LLVM_MIN} with matching libclang-cpp, libclc and LLVMSPIRVLib, and {had}"
        ));
    };
    if let Some(drm) = policy.version("libdrm-dev") {
        if !at_least(drm, LIBDRM_MIN) {
            return Err(too_old("libdrm", upstream(drm), LIBDRM_MIN));
        }
    }
    let meson = match policy.version("meson") {
        Some(v) if at_least(v, MESON_MIN) => ToolFrom::Distro(upstream(v).to_string()),
        other => ToolFrom::Pinned {
            release_has: other.map(|v| upstream(v).to_string()),
        },
    };
    let spirv_tools = match policy.version("spirv-tools") {
        Some(v) if at_least(v, SPIRV_TOOLS_MIN) => ToolFrom::Distro(upstream(v).to_string()),
        other => ToolFrom::Pinned {
            release_has: other.map(|v| upstream(v).to_string()),
        },
    };
    let mut packages: Vec<String> = BASE_PACKAGES.iter().map(|(p, _)| p.to_string()).collect();
    packages.extend(llvm_packages(llvm));
    match &meson {
        ToolFrom::Distro(_) => packages.push("meson".into()),
        ToolFrom::Pinned { .. } => packages.push("python3-venv".into()),
    }
    match &spirv_tools {
        ToolFrom::Distro(_) => packages.push("spirv-tools".into()),
        ToolFrom::Pinned { .. } => {
            match policy.version("cmake") {
                Some(v) if !at_least(v, CMAKE_MIN) => {
                    return Err(format!(
                        "{name} cannot build Mesa 26: SPIRV-Tools >= {SPIRV_TOOLS_MIN} must be built from source, and that needs CMake >= {CMAKE_MIN}; this release has {}",
                        upstream(v)
                    ))
                }
                _ => {}
            }
            packages.push("cmake".into());
        }
    }
    let unknown: Vec<&str> = packages
        .iter()
        .filter(|p| !policy.available(p))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "{name}: apt has no {} (enable the release's main{} component and run `sudo apt-get update`)",
            unknown.join(", "),
            if os.id == "ubuntu" { " and universe" } else { "" }
        ));
    }
    let missing = packages
        .iter()
        .filter(|p| !policy.installed(p))
        .cloned()
        .collect();
    Ok(Resolved {
        llvm,
        meson,
        spirv_tools,
        packages,
        missing,
    })
}

/// A release rvl knows the answer for, from its archive's apt policy
/// (`tests/fixtures/apt-policy/<codename>.txt`): the table `docs/build-deps.md` shows and a test
/// checks [`resolve`] against. Used for the doctor's fix and, under `--root` where the image's
/// apt is not run, as the plan's expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub id: &'static str,
    pub version_id: &'static str,
    pub codename: &'static str,
    /// The LLVM major used; None: the release cannot build Mesa 26.
    pub llvm: Option<u32>,
    pub meson_pinned: bool,
    pub spirv_tools_pinned: bool,
}

pub const KNOWN: &[Known] = &[
    Known {
        id: "debian",
        version_id: "11",
        codename: "bullseye",
        llvm: None,
        meson_pinned: true,
        spirv_tools_pinned: true,
    },
    Known {
        id: "debian",
        version_id: "12",
        codename: "bookworm",
        llvm: Some(15),
        meson_pinned: true,
        spirv_tools_pinned: true,
    },
    Known {
        id: "debian",
        version_id: "13",
        codename: "trixie",
        llvm: Some(19),
        meson_pinned: false,
        spirv_tools_pinned: false,
    },
    Known {
        id: "ubuntu",
        version_id: "22.04",
        codename: "jammy",
        llvm: Some(15),
        meson_pinned: true,
        spirv_tools_pinned: true,
    },
    Known {
        id: "ubuntu",
        version_id: "24.04",
        codename: "noble",
        llvm: Some(20),
        meson_pinned: true,
        spirv_tools_pinned: false,
    },
];

/// The known row for this release.
pub fn known(os: &OsRelease) -> Option<&'static Known> {
    KNOWN
        .iter()
        .find(|k| k.id == os.id && k.version_id == os.version_id)
}

/// "24.04" → (24, 4); None when it is not numbers.
fn numeric(v: &str) -> Option<(u32, u32)> {
    let mut p = v.split('.');
    let major = p.next()?.parse().ok()?;
    let minor = p.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// Why this release cannot build Mesa 26 at all, from os-release alone, or None when it can
/// (or rvl cannot tell). Debian 11 and Ubuntu 21.10 and older lack an LLVM >= 15 with
/// LLVMSPIRVLib and a Python >= 3.10; Debian 12 and Ubuntu 22.04 and newer build it with
/// pinned build tools where theirs are too old (see [`resolve`], which decides from apt).
pub fn release_blocker(os: &OsRelease) -> Option<String> {
    let v = numeric(&os.version_id)?;
    let too_old = match os.id.as_str() {
        "debian" => v < (12, 0),
        "ubuntu" => v < (22, 4),
        _ => false,
    };
    too_old.then(|| {
        format!(
            "{} cannot build Mesa 26: it has no LLVM >= {LLVM_MIN} with LLVMSPIRVLib and libclc, and its Python is older than {PYTHON_MIN}",
            release_name(os)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_output_parses_installed_candidate_and_none() {
        let p = parse_policy(
            "meson:\n  Installed: (none)\n  Candidate: 1.0.1-5\n  Version table:\n     1.0.1-5 500\n        500 bookworm/main amd64 Packages\n\
             python3:\n  Installed: 3.11.2-1+b1\n  Candidate: 3.11.2-1+b1\n\
             gone:\n  Installed: (none)\n  Candidate: (none)\n",
        );
        assert_eq!(p.version("meson"), Some("1.0.1-5"));
        assert!(!p.installed("meson"));
        assert!(p.installed("python3"));
        assert!(!p.available("gone"));
        assert!(!p.available("never-listed"));
    }

    #[test]
    fn debian_versions_compare_by_their_upstream_part() {
        assert_eq!(upstream("1:15.0.6-4+b1"), "15.0.6");
        assert_eq!(upstream("2025.1~rc1-1~ubuntu0.24.04.2"), "2025.1~rc1");
        assert!(at_least("2025.1~rc1-1", SPIRV_TOOLS_MIN));
        assert!(!at_least("2023.6~rc1-1", SPIRV_TOOLS_MIN));
        assert!(!at_least("2024.1~rc1-1", SPIRV_TOOLS_MIN));
        assert!(at_least("1.7.0-1", MESON_MIN));
        assert!(!at_least("1.3.2-1ubuntu1", MESON_MIN));
        assert!(at_least("3.10.6-1~22.04.1", PYTHON_MIN));
        assert!(!at_least("3.9.2-3", PYTHON_MIN));
    }

    #[test]
    fn the_policy_names_are_the_ones_the_fixture_script_asks_for() {
        let script = include_str!("../scripts/panvk-lab/apt-policy-fixture.sh");
        let start = script.find("names=(").expect("names=( in the script");
        let end = start + script[start..].find(')').unwrap();
        let mut listed: Vec<String> = script[start + 7..end]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let llvm_line = script
            .lines()
            .find(|l| l.contains("names+=(\"llvm-$n-dev\""))
            .expect("the LLVM names line");
        let majors = script
            .lines()
            .find(|l| l.trim_start().starts_with("for n in"))
            .unwrap();
        let majors: Vec<u32> = majors
            .split_whitespace()
            .filter_map(|w| w.trim_end_matches(';').parse().ok())
            .collect();
        assert_eq!(majors, (LLVM_MIN..=LLVM_MAX).rev().collect::<Vec<_>>());
        for m in majors {
            for word in llvm_line.split('"').filter(|w| w.contains("$n")) {
                listed.push(word.replace("$n", &m.to_string()));
            }
        }
        assert_eq!(listed, policy_names());
        // Every package a build may install is asked about.
        for (p, _) in BASE_PACKAGES {
            assert!(POLICY_BASE.contains(p), "{p}");
        }
    }

    #[test]
    fn bookworm_is_blocked_by_release_only_below_12_and_jammy() {
        let os = |id: &str, v: &str| OsRelease {
            id: id.into(),
            version_id: v.into(),
            pretty_name: String::new(),
        };
        assert!(release_blocker(&os("debian", "11"))
            .unwrap()
            .contains("debian 11"));
        assert!(release_blocker(&os("ubuntu", "21.10")).is_some());
        for (id, v) in [
            ("debian", "12"),
            ("debian", "13"),
            ("ubuntu", "22.04"),
            ("ubuntu", "24.04"),
            ("debian", ""),
            ("fedora", "40"),
        ] {
            assert_eq!(release_blocker(&os(id, v)), None, "{id} {v}");
        }
    }

    /// Each fixture is `apt-cache policy` of a fresh image of that release
    /// (scripts/panvk-lab/apt-policy-fixture.sh), `-updates` enabled.
    fn fixture(codename: &str) -> Policy {
        let text = match codename {
            "bullseye" => include_str!("../tests/fixtures/apt-policy/bullseye.txt"),
            "bookworm" => include_str!("../tests/fixtures/apt-policy/bookworm.txt"),
            "trixie" => include_str!("../tests/fixtures/apt-policy/trixie.txt"),
            "jammy" => include_str!("../tests/fixtures/apt-policy/jammy.txt"),
            "noble" => include_str!("../tests/fixtures/apt-policy/noble.txt"),
            other => panic!("no fixture for {other}"),
        };
        parse_policy(text)
    }

    fn os_of(k: &Known) -> OsRelease {
        OsRelease {
            id: k.id.into(),
            version_id: k.version_id.into(),
            pretty_name: format!("{} {} ({})", k.id, k.version_id, k.codename),
        }
    }

    fn row(k: &str) -> &'static Known {
        KNOWN.iter().find(|r| r.codename == k).unwrap()
    }

    /// The CI check that the per-release table is what each release's apt says.
    #[test]
    fn the_known_table_is_what_each_releases_apt_policy_resolves_to() {
        for k in KNOWN {
            let got = resolve(&os_of(k), &fixture(k.codename));
            match (k.llvm, got) {
                (None, Err(_)) => {}
                (Some(llvm), Ok(r)) => {
                    assert_eq!(r.llvm, llvm, "{}", k.codename);
                    assert_eq!(r.meson.pinned(), k.meson_pinned, "{}: meson", k.codename);
                    assert_eq!(
                        r.spirv_tools.pinned(),
                        k.spirv_tools_pinned,
                        "{}: spirv-tools",
                        k.codename
                    );
                }
                (want, got) => panic!("{}: table says {want:?}, apt gives {got:?}", k.codename),
            }
            assert_eq!(
                release_blocker(&os_of(k)).is_some(),
                k.llvm.is_none(),
                "{}: the os-release blocker agrees with the table",
                k.codename
            );
        }
    }

    #[test]
    fn debian_12_builds_with_llvm_15_and_pinned_meson_and_spirv_tools() {
        let r = resolve(&os_of(row("bookworm")), &fixture("bookworm")).unwrap();
        assert_eq!(r.llvm, 15, "19 has no LLVMSPIRVLib on bookworm, 16 neither");
        assert_eq!(r.llvm_config(), "/usr/bin/llvm-config-15");
        assert_eq!(
            r.meson,
            ToolFrom::Pinned {
                release_has: Some("1.0.1".into())
            }
        );
        assert_eq!(
            r.spirv_tools,
            ToolFrom::Pinned {
                release_has: Some("2023.1".into())
            }
        );
        for p in [
            "libllvmspirvlib-15-dev",
            "libclc-15-dev",
            "python3-venv",
            "cmake",
        ] {
            assert!(r.missing.iter().any(|m| m == p), "{p}");
        }
        assert!(!r
            .packages
            .iter()
            .any(|p| p == "meson" || p == "spirv-tools"));
    }

    #[test]
    fn debian_13_builds_with_its_own_packages_and_llvm_19() {
        let r = resolve(&os_of(row("trixie")), &fixture("trixie")).unwrap();
        assert_eq!(r.llvm, 19, "22 has no LLVMSPIRVLib on trixie");
        assert_eq!(r.meson, ToolFrom::Distro("1.7.0".into()));
        assert_eq!(r.spirv_tools, ToolFrom::Distro("2025.1~rc1".into()));
        assert!(!r
            .packages
            .iter()
            .any(|p| p == "cmake" || p == "python3-venv"));
    }

    #[test]
    fn ubuntu_22_04_builds_with_llvm_15_from_updates_and_both_tools_pinned() {
        let r = resolve(&os_of(row("jammy")), &fixture("jammy")).unwrap();
        assert_eq!(r.llvm, 15);
        assert!(r.meson.pinned() && r.spirv_tools.pinned());
    }

    #[test]
    fn ubuntu_24_04_takes_spirv_tools_from_updates_and_pins_only_meson() {
        let r = resolve(&os_of(row("noble")), &fixture("noble")).unwrap();
        assert_eq!(r.llvm, 20);
        assert_eq!(
            r.meson,
            ToolFrom::Pinned {
                release_has: Some("1.3.2".into())
            }
        );
        assert_eq!(r.spirv_tools, ToolFrom::Distro("2025.1~rc1".into()));
    }

    #[test]
    fn debian_11_is_blocked_with_a_true_reason() {
        let why = resolve(&os_of(row("bullseye")), &fixture("bullseye")).unwrap_err();
        assert!(
            why.contains("Python is 3.9.2, older than the 3.10"),
            "{why}"
        );
        // Past Python, LLVM is what stops it: bullseye-updates has LLVM 16 but no LLVMSPIRVLib.
        let mut p = fixture("bullseye");
        p.0.get_mut("python3").unwrap().candidate = Some("3.11.2-1".into());
        let why = resolve(&os_of(row("bullseye")), &p).unwrap_err();
        assert!(
            why.contains("it has LLVM 16 but not with its libclc and LLVMSPIRVLib"),
            "{why}"
        );
    }

    #[test]
    fn what_is_installed_already_is_not_installed_again_and_an_unknown_package_blocks() {
        let mut p = fixture("bookworm");
        p.0.get_mut("gcc").unwrap().installed = Some("4:12.2.0-3".into());
        let r = resolve(&os_of(row("bookworm")), &p).unwrap();
        assert!(!r.missing.iter().any(|m| m == "gcc"));
        assert!(r.packages.iter().any(|m| m == "gcc"));
        p.0.remove("libdrm-dev");
        let why = resolve(&os_of(row("bookworm")), &p).unwrap_err();
        assert!(why.contains("apt has no libdrm-dev"), "{why}");
    }
}
