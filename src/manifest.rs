//! The artifact manifest (`firmware-manifest/manifest.yaml`): every file rvl may download or
//! recognise, pinned by size and sha256. The doctor uses the firmware entries to name the version
//! it finds; setup uses all of it to download and verify before installing anything.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The manifest built into the binary.
const BUILTIN: &str = include_str!("../firmware-manifest/manifest.yaml");
const BUILTIN_NAME: &str = "firmware-manifest/manifest.yaml (built in)";
pub const SCHEMA: u32 = 1;
/// The most a source archive without a pinned `size` may download to (Mesa's tarball is 69 MB).
pub const SOURCE_MAX_SIZE: u64 = 512 << 20;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema: u32,
    #[serde(default)]
    pub firmware: Vec<Firmware>,
    #[serde(default)]
    pub sources: Vec<Source>,
    #[serde(default)]
    pub prebuilt: Vec<Prebuilt>,
    /// Build-only tools setup brings where the image's release has none new enough.
    #[serde(default)]
    pub build_tools: Vec<BuildTool>,
}

/// A known CSF firmware blob.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Firmware {
    pub id: String,
    pub version: String,
    /// Path under `/lib/firmware`.
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// CSF interface version the firmware reports (`CSF FW using interface vX.Y.Z`).
    #[serde(default)]
    pub interface: Option<String>,
    #[serde(default)]
    pub fw_git_sha: Option<String>,
    /// Where setup downloads it from; entries without one are only recognised.
    #[serde(default)]
    pub url: Option<String>,
    pub licence: String,
    pub source: String,
    /// True for blobs panthor loads; false for the vendor (kbase) blob.
    pub for_panthor: bool,
    /// The one setup installs.
    #[serde(default)]
    pub recommended: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildSystem {
    Meson,
    Cmake,
}

/// The tool's own spelling, for people ("CMake", not the enum's "Cmake").
impl std::fmt::Display for BuildSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BuildSystem::Meson => "Meson",
            BuildSystem::Cmake => "CMake",
        })
    }
}

/// A source release that setup downloads, patches and builds.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(try_from = "RawSource")]
pub struct Source {
    pub id: String,
    pub version: String,
    /// Where the archive comes from.
    #[serde(flatten)]
    pub origin: Origin,
    /// None: no source gives the archive's length (Mesa's release notes give only digests);
    /// the sha256 alone pins it and the download is capped at [`SOURCE_MAX_SIZE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    pub sha256: String,
    /// Directory inside the archive that holds the tree to build.
    pub tree: String,
    pub build: BuildSystem,
    /// For a Vulkan driver: the `api_version` its own build writes into its ICD manifest
    /// (Mesa: `vk_icd_gen.py --api-version 1.4` with the tree's vk.xml header version), which
    /// rvl's ICD manifest repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vulkan_api: Option<String>,
    pub licence: String,
    pub provenance: String,
}

/// Where a source archive is fetched from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// An https URL, fetched by `crate::fetch`.
    Url(String),
    /// A source distribution on the Python package index, fetched with pip (`crate::fetch::pip`),
    /// so the manifest names no registry host.
    Pip(PipSource),
}

/// `pip download` of one pinned sdist.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipSource {
    /// `name==version`: exactly one release.
    pub requirement: String,
    /// The file pip saves (`llama_cpp_python-0.3.36.tar.gz`).
    pub filename: String,
    /// Distribution pip imports to read the sdist's metadata (its pyproject build backend);
    /// setup checks it is installed before downloading.
    #[serde(default)]
    pub backend: Option<String>,
}

/// A source entry as written, before "exactly one of `url` and `pip`" is checked. Checking it
/// while deserializing lets the error carry the entry's line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    id: String,
    version: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    pip: Option<PipSource>,
    #[serde(default)]
    size: Option<u64>,
    sha256: String,
    tree: String,
    build: BuildSystem,
    #[serde(default)]
    vulkan_api: Option<String>,
    licence: String,
    provenance: String,
}

/// "1.4.354": three dot-separated numbers, as Vulkan versions are written.
fn is_vulkan_version(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

impl TryFrom<RawSource> for Source {
    type Error = String;

    fn try_from(r: RawSource) -> Result<Self, String> {
        let origin = match (r.url, r.pip) {
            (Some(url), None) => Origin::Url(url),
            (None, Some(pip)) => {
                check_pip(&pip).map_err(|e| format!("source `{}`: pip: {e}", r.id))?;
                // pip reports no length before it has fetched the whole file: the pin must.
                if r.size.is_none() {
                    return Err(format!("source `{}`: a pip source needs `size`", r.id));
                }
                Origin::Pip(pip)
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "source `{}`: give either `url` or `pip`, not both",
                    r.id
                ))
            }
            (None, None) => {
                return Err(format!(
                    "source `{}`: needs `url` (https) or `pip` ({{requirement, filename}})",
                    r.id
                ))
            }
        };
        if let Some(v) = r.vulkan_api.as_deref().filter(|v| !is_vulkan_version(v)) {
            return Err(format!(
                "source `{}`: vulkan_api must be MAJOR.MINOR.PATCH (e.g. 1.4.354), got `{v}`",
                r.id
            ));
        }
        Ok(Source {
            id: r.id,
            version: r.version,
            origin,
            size: r.size,
            sha256: r.sha256,
            tree: r.tree,
            build: r.build,
            vulkan_api: r.vulkan_api,
            licence: r.licence,
            provenance: r.provenance,
        })
    }
}

/// A pinned, plain requirement and a bare file name: they end up on pip's command line and in
/// the cache directory, so nothing that reads as an option, a range or a path is accepted.
fn check_pip(pip: &PipSource) -> Result<(), String> {
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with(['-', '.'])
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+!".contains(&b))
    };
    let pinned = pip
        .requirement
        .split_once("==")
        .is_some_and(|(name, version)| plain(name) && plain(version));
    if !pinned {
        return Err(format!(
            "requirement must pin one release as `name==version`, got `{}`",
            pip.requirement
        ));
    }
    let archive = [".tar.gz", ".tgz", ".tar.xz", ".tar"]
        .iter()
        .any(|ext| pip.filename.ends_with(ext));
    if !plain(&pip.filename) || !archive {
        return Err(format!(
            "filename must be a bare .tar.gz, .tar.xz or .tar file name, got `{}`",
            pip.filename
        ));
    }
    if let Some(b) = &pip.backend {
        if !plain(b) {
            return Err(format!("backend must be a package name, got `{b}`"));
        }
    }
    Ok(())
}

/// A build-only tool pinned by its archive: meson's wheel, SPIRV-Tools' and SPIRV-Headers' source.
/// Installed under `/opt/rvl/build/`, never on the loader's or the user's path.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BuildTool {
    /// `meson`, `spirv-tools` or `spirv-headers` (what setup knows how to use).
    pub id: String,
    pub version: String,
    pub url: String,
    pub size: u64,
    pub sha256: String,
    /// Directory inside a source archive that holds the tree (none for a wheel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    pub licence: String,
    pub provenance: String,
}

/// The build tools setup knows how to use.
pub const BUILD_TOOL_IDS: [&str; 3] = ["meson", "spirv-tools", "spirv-headers"];

/// A prebuilt binary archive (an install prefix packed as tar.xz).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Prebuilt {
    pub id: String,
    pub version: String,
    /// CPU architecture the archive is built for (`aarch64`).
    pub arch: String,
    pub url: String,
    pub size: u64,
    pub sha256: String,
    pub provenance: String,
}

impl Manifest {
    pub fn builtin() -> Self {
        Self::parse(BUILTIN, BUILTIN_NAME).expect("the built-in manifest is valid (tested)")
    }

    /// The manifest `--manifest FILE` names, or the built-in one.
    pub fn load_or_builtin(path: Option<&Path>) -> anyhow::Result<Self> {
        match path {
            Some(p) => Self::load(p),
            None => Ok(Self::builtin()),
        }
    }

    /// Load a manifest file. Errors name the file and line and exit with `BAD_INPUT`.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = crate::host::root::read_regular_string(path, crate::host::root::INPUT_CAP)
            .map_err(|e| {
                anyhow::Error::from(Error::Manifest(format!(
                    "cannot read manifest {}: {e}",
                    path.display()
                )))
            })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse and validate manifest text; `name` is used in error messages.
    pub fn parse(text: &str, name: &str) -> anyhow::Result<Self> {
        let manifest: Manifest = serde_saphyr::from_str(text).map_err(|e| {
            let first = e.to_string();
            let first = first
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            anyhow::Error::from(Error::Manifest(format!("{name}: {first}")))
        })?;
        manifest
            .validate()
            .map_err(|msg| anyhow::Error::from(Error::Manifest(format!("{name}: {msg}"))))?;
        Ok(manifest)
    }

    fn validate(&self) -> Result<(), String> {
        if self.schema != SCHEMA {
            return Err(format!(
                "schema {} is not supported (expected {SCHEMA})",
                self.schema
            ));
        }
        self.check_fields()?;
        let mut ids = HashSet::new();
        let all = self
            .firmware
            .iter()
            .map(|f| (&f.id, &f.sha256, f.size, f.url.as_ref()))
            .chain(self.sources.iter().map(|s| {
                let url = match &s.origin {
                    Origin::Url(url) => Some(url),
                    Origin::Pip(_) => None,
                };
                (&s.id, &s.sha256, s.size.unwrap_or(SOURCE_MAX_SIZE), url)
            }))
            .chain(
                self.prebuilt
                    .iter()
                    .map(|p| (&p.id, &p.sha256, p.size, Some(&p.url))),
            )
            .chain(
                self.build_tools
                    .iter()
                    .map(|b| (&b.id, &b.sha256, b.size, Some(&b.url))),
            );
        for (id, sha, size, url) in all {
            if !ids.insert(id.as_str()) {
                return Err(format!("artifact id `{id}` appears twice"));
            }
            if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "artifact `{id}`: sha256 must be 64 hex digits, got `{sha}`"
                ));
            }
            if size == 0 {
                return Err(format!("artifact `{id}`: size must be greater than 0"));
            }
            if let Some(url) = url {
                // The same rule as the downloader: https, or plain http to loopback (tests).
                if crate::fetch::check_url(url).is_err() {
                    return Err(format!("artifact `{id}`: url must be https, got `{url}`"));
                }
            }
        }
        Ok(())
    }

    /// The shape of every field that becomes a path, a prefix or file content when setup runs as
    /// root (see `crate::validate`); errors name the entry and the field.
    fn check_fields(&self) -> Result<(), String> {
        use crate::validate::{control_free, file_name, relative_path, version};
        type Rule = fn(&str) -> Result<(), String>;
        let check = |kind: &str, id: &str, fields: &[(&str, &str, Rule)]| {
            fields.iter().try_for_each(|(field, value, rule)| {
                rule(value).map_err(|e| format!("{kind} `{id}`: {field} {e}"))
            })
        };
        for f in &self.firmware {
            check(
                "firmware",
                &f.id,
                &[
                    ("id", &f.id, file_name),
                    ("path", &f.path, relative_path),
                    ("version", &f.version, control_free),
                    ("licence", &f.licence, control_free),
                    ("source", &f.source, control_free),
                    (
                        "interface",
                        f.interface.as_deref().unwrap_or(""),
                        control_free,
                    ),
                    (
                        "fw_git_sha",
                        f.fw_git_sha.as_deref().unwrap_or(""),
                        control_free,
                    ),
                ],
            )?;
        }
        for s in &self.sources {
            check(
                "source",
                &s.id,
                &[
                    ("id", &s.id, file_name),
                    ("version", &s.version, version),
                    ("tree", &s.tree, relative_path),
                    ("licence", &s.licence, control_free),
                    ("provenance", &s.provenance, control_free),
                ],
            )?;
        }
        for b in &self.build_tools {
            if !BUILD_TOOL_IDS.contains(&b.id.as_str()) {
                return Err(format!(
                    "build tool `{}`: unknown id (known: {})",
                    b.id,
                    BUILD_TOOL_IDS.join(", ")
                ));
            }
            check(
                "build tool",
                &b.id,
                &[
                    ("version", &b.version, version),
                    ("tree", b.tree.as_deref().unwrap_or("x"), relative_path),
                    ("licence", &b.licence, control_free),
                    ("provenance", &b.provenance, control_free),
                ],
            )?;
        }
        for p in &self.prebuilt {
            check(
                "prebuilt",
                &p.id,
                &[
                    ("id", &p.id, file_name),
                    ("version", &p.version, version),
                    ("arch", &p.arch, file_name),
                    ("provenance", &p.provenance, control_free),
                ],
            )?;
        }
        Ok(())
    }

    /// The firmware entry whose content matches this sha256 (lower-case hex).
    pub fn firmware_by_sha256(&self, sha256: &str) -> Option<&Firmware> {
        self.firmware
            .iter()
            .find(|f| f.sha256.eq_ignore_ascii_case(sha256))
    }

    /// The firmware setup installs for panthor.
    pub fn recommended_firmware(&self) -> Option<&Firmware> {
        self.firmware
            .iter()
            .find(|f| f.recommended && f.for_panthor)
    }

    pub fn build_tool(&self, id: &str) -> Option<&BuildTool> {
        self.build_tools.iter().find(|b| b.id == id)
    }

    pub fn source(&self, id: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.id == id)
    }

    pub fn prebuilt(&self, id: &str) -> Option<&Prebuilt> {
        self.prebuilt.iter().find(|p| p.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code_of;
    use crate::exit;

    #[test]
    fn builtin_manifest_is_valid_and_pins_the_g610_firmware() {
        let m = Manifest::builtin();
        let fw = m.recommended_firmware().unwrap();
        assert_eq!(fw.path, "arm/mali/arch10.8/mali_csffw.bin");
        assert_eq!(fw.size, 282624);
        assert!(m
            .firmware_by_sha256("43C3C36B914C031D88AE152FD89019D8F99AD41D9879FB5AB7496ED13F7B378B")
            .is_some());
        assert_eq!(m.source("mesa").unwrap().build, BuildSystem::Meson);
        let llama = m.source("llama.cpp").unwrap();
        assert_eq!(llama.build, BuildSystem::Cmake);
        assert_eq!(llama.tree, "llama_cpp_python-0.3.36/vendor/llama.cpp");
        let Origin::Pip(pip) = &llama.origin else {
            panic!("llama.cpp comes from pip: {:?}", llama.origin)
        };
        assert_eq!(pip.requirement, "llama-cpp-python==0.3.36");
        assert_eq!(pip.filename, "llama_cpp_python-0.3.36.tar.gz");
        assert_eq!(pip.backend.as_deref(), Some("scikit-build-core"));
    }

    fn source_entry(origin: &str) -> String {
        format!(
            "schema: 1\nsources:\n  - id: ok\n    version: v\n    url: https://x/a.tar.xz\n    size: 1\n    sha256: {sha}\n    tree: t\n    build: cmake\n    licence: l\n    provenance: p\n  - id: s\n    version: v\n{origin}    size: 1\n    sha256: {sha}\n    tree: t\n    build: cmake\n    licence: l\n    provenance: p\n",
            sha = "a".repeat(64)
        )
    }

    #[test]
    fn a_source_needs_exactly_one_of_url_and_pip_and_errors_name_its_line() {
        let pip = "    pip: {requirement: \"a-b==1.0\", filename: a_b-1.0.tar.gz}\n";
        let url = "    url: https://x/b.tar.xz\n";
        let m = Manifest::parse(&source_entry(pip), "m.yaml").unwrap();
        assert_eq!(
            m.source("s").unwrap().origin,
            Origin::Pip(PipSource {
                requirement: "a-b==1.0".into(),
                filename: "a_b-1.0.tar.gz".into(),
                backend: None,
            })
        );
        for (body, expected) in [
            (
                format!("{url}{pip}"),
                "give either `url` or `pip`, not both",
            ),
            (String::new(), "needs `url` (https) or `pip`"),
        ] {
            let err = Manifest::parse(&source_entry(&body), "m.yaml").unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("m.yaml: line 12"), "{msg}");
            assert!(msg.contains(&format!("source `s`: {expected}")), "{msg}");
            assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
        }
    }

    #[test]
    fn a_pip_source_must_pin_one_release_and_name_a_bare_archive() {
        for (pip, expected) in [
            (
                "{requirement: \"a>=1\", filename: a-1.tar.gz}",
                "pin one release",
            ),
            (
                "{requirement: \"--index-url==1\", filename: a-1.tar.gz}",
                "pin one release",
            ),
            (
                "{requirement: \"a==1 ; x\", filename: a-1.tar.gz}",
                "pin one release",
            ),
            (
                "{requirement: \"a==1\", filename: ../a-1.tar.gz}",
                "bare .tar.gz",
            ),
            ("{requirement: \"a==1\", filename: a-1.whl}", "bare .tar.gz"),
            (
                "{requirement: \"a==1\", filename: a-1.tar.gz, backend: \"x y\"}",
                "backend must be a package name",
            ),
            (
                "{requirement: \"a==1\", filename: a-1.tar.gz, index: y}",
                "unknown field `index`",
            ),
        ] {
            let text = source_entry(&format!("    pip: {pip}\n"));
            let msg = Manifest::parse(&text, "m.yaml").unwrap_err().to_string();
            assert!(msg.contains(expected), "{pip}: {msg}");
            assert!(msg.starts_with("m.yaml: line 1"), "{msg}");
        }
    }

    #[test]
    fn a_firmware_path_that_climbs_out_of_lib_firmware_is_refused() {
        let text = BUILTIN.replace("path: mali_csffw.bin", "path: ../../../../etc/passwd");
        assert_ne!(text, BUILTIN);
        let err = Manifest::parse(&text, "m.yaml").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("m.yaml: firmware `csffw-vendor-flat-2022`: path"),
            "{msg}"
        );
        assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
    }

    #[test]
    fn a_mesa_version_with_a_quote_or_a_parent_dir_is_refused() {
        for bad in [r#"26.2.4\", \"x"#, "../../../usr"] {
            let text = BUILTIN.replace("version: \"26.2.4\"", &format!("version: \"{bad}\""));
            assert_ne!(text, BUILTIN);
            let msg = Manifest::parse(&text, "m.yaml").unwrap_err().to_string();
            assert!(msg.starts_with("m.yaml: source `mesa`: version"), "{msg}");
        }
    }

    #[test]
    fn the_build_tools_are_pinned_and_an_unknown_one_is_refused() {
        let m = Manifest::parse(BUILTIN, "m.yaml").unwrap();
        for id in BUILD_TOOL_IDS {
            let b = m.build_tool(id).unwrap();
            assert!(b.size > 0 && b.sha256.len() == 64, "{id}");
            assert!(b.url.starts_with("https://"), "{id}");
        }
        let text = BUILTIN.replace("  - id: spirv-headers\n", "  - id: glslang\n");
        assert_ne!(text, BUILTIN);
        let msg = Manifest::parse(&text, "m.yaml").unwrap_err().to_string();
        assert!(msg.contains("build tool `glslang`: unknown id"), "{msg}");
    }

    #[test]
    fn a_source_without_a_size_is_pinned_by_its_sha256_but_a_pip_one_needs_its_size() {
        let m = Manifest::parse(BUILTIN, "m.yaml").unwrap();
        let mesa = m.source("mesa").unwrap();
        // Ubuntu 26.04's orig tarball gave the length (issue 25).
        assert_eq!(mesa.size, Some(68613948));
        assert_eq!(mesa.vulkan_api.as_deref(), Some("1.4.354"));
        let no_size = BUILTIN.replace("    size: 68613948\n", "");
        assert_ne!(no_size, BUILTIN);
        let m = Manifest::parse(&no_size, "m.yaml").unwrap();
        assert_eq!(m.source("mesa").unwrap().size, None);
        let text = BUILTIN.replace("    size: 76589250\n", "");
        assert_ne!(text, BUILTIN);
        let msg = Manifest::parse(&text, "m.yaml").unwrap_err().to_string();
        assert!(msg.contains("a pip source needs `size`"), "{msg}");
        let text = BUILTIN.replace("vulkan_api: \"1.4.354\"", "vulkan_api: \"1.4\"");
        assert_ne!(text, BUILTIN);
        let msg = Manifest::parse(&text, "m.yaml").unwrap_err().to_string();
        assert!(
            msg.contains("vulkan_api must be MAJOR.MINOR.PATCH"),
            "{msg}"
        );
    }

    #[test]
    fn errors_name_file_line_and_expectation() {
        let err = Manifest::parse("schema: 1\nfirmware:\n  - id: x\n    bogus: 1\n", "m.yaml")
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("m.yaml: line 4"), "{msg}");
        assert!(msg.contains("unknown field `bogus`"), "{msg}");
        assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
    }

    #[test]
    fn validation_rejects_bad_hashes_duplicates_and_plain_http() {
        let fw = |id: &str, sha: &str, url: &str| {
            format!("  - {{id: {id}, version: v, path: p, size: 1, sha256: {sha}, url: \"{url}\", licence: l, source: s, for_panthor: true}}\n")
        };
        let good = "a".repeat(64);
        let cases = [
            (fw("a", "abc", "https://x"), "64 hex digits"),
            (fw("a", &good, "http://x"), "must be https"),
            (
                format!(
                    "{}{}",
                    fw("a", &good, "https://x"),
                    fw("a", &good, "https://y")
                ),
                "appears twice",
            ),
        ];
        for (body, expected) in cases {
            let text = format!("schema: 1\nfirmware:\n{body}");
            let msg = Manifest::parse(&text, "m.yaml").unwrap_err().to_string();
            assert!(msg.contains(expected), "{msg}");
        }
        let loopback = format!(
            "schema: 1\nfirmware:\n{}",
            fw("a", &good, "http://127.0.0.1:8/x")
        );
        assert!(Manifest::parse(&loopback, "m.yaml").is_ok());
        let msg = Manifest::parse("schema: 2\n", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("schema 2 is not supported"), "{msg}");
    }
}
