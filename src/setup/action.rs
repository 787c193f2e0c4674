//! What a plan is made of: actions as plain data (what file gets which bytes, which link points
//! where, which tool runs and what it may change), the checks run after a tool, and the
//! options the planner takes. Imports nothing else from `setup`.

use serde::Serialize;

use crate::hint::Invocation;
use crate::manifest::{BuildSystem, Origin};

/// Where panvk comes from (the CLI's `--mesa-from`, converted at the edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MesaSource {
    /// Build the pinned Mesa release with rvl's patch series.
    Source,
    /// Unpack the manifest's prebuilt archive.
    Prebuilt,
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Steps to plan (empty: all).
    pub only: Vec<String>,
    pub mesa_from: MesaSource,
    /// `--mesa-candidates`: build panvk with the candidate patches as well, into its own prefix,
    /// and register that build.
    pub mesa_candidates: bool,
    /// How setup was pointed at the system: the commands a blocked step's fix names repeat it.
    pub hint: Invocation,
    /// `--user NAME`: whom the access step adds to the `render` group.
    pub user: Option<String>,
    /// System tools that run on this machine for this root: every tool on the running system;
    /// for an image only the stand-ins `RVL_ROOT_TOOLS` names (tests). The others are left for
    /// the board, and the plan says so.
    pub tools_here: Vec<String>,
    /// `--mesa-archive`: a prebuilt panvk archive on this machine, with the sha256 it must have.
    pub mesa_archive: Option<LocalArchive>,
}

/// A file on this machine that setup installs, pinned by the user (`--mesa-sha256` or the
/// `FILE.sha256` next to it) instead of the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalArchive {
    /// Host path (absolute).
    pub file: String,
    pub sha256: String,
    pub size: u64,
}

impl Options {
    /// Whether `tool` runs here (see [`Options::tools_here`]).
    pub fn runs_here(&self, tool: &str) -> bool {
        self.tools_here.iter().any(|t| t == tool)
    }
}

/// The system tools setup may run: u-boot-menu's generator and initramfs-tools'.
pub const TOOLS: [&str; 2] = ["u-boot-update", "update-initramfs"];

impl Options {
    pub fn wants(&self, step: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == step)
    }

    /// True when the user named this step with `--only`.
    pub fn named(&self, step: &str) -> bool {
        self.only.iter().any(|s| s == step)
    }
}

/// A check run after a tool, so a generator that did something unexpected fails the step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "check", rename_all = "kebab-case")]
pub enum Verify {
    /// `default` in this extlinux.conf must name a label whose `linux` line boots `release`.
    ExtlinuxDefaultBoots { path: String, release: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    /// Create or replace a text file.
    WriteFile {
        path: String,
        mode: u32,
        #[serde(skip)]
        content: String,
        /// Unified diff from the current content (empty old side for a new file).
        diff: String,
        new_file: bool,
    },
    /// Rename a file (Radxa disables an overlay as `X.dtbo` -> `X.dtbo.disabled`).
    RenameFile { from: String, to: String },
    /// Point a link somewhere else.
    Symlink {
        path: String,
        target: String,
        was: Option<String>,
    },
    /// Download a pinned file and install it.
    InstallArtifact {
        path: String,
        url: String,
        sha256: String,
        size: u64,
        mode: u32,
        was_sha256: Option<String>,
        description: String,
    },
    /// Install a device-tree overlay rvl compiled from its own source (`kernel/overlays/`).
    InstallOverlay {
        path: String,
        /// The overlay's name (`rvl-…`).
        name: String,
        size: u64,
        sha256: String,
        #[serde(skip)]
        dtb: Vec<u8>,
    },
    /// Run a system tool (found in the root); `changes` are backed up first.
    RunTool {
        tool: String,
        args: Vec<String>,
        changes: Vec<String>,
        /// What the tool is expected to change, as a diff (when predictable).
        preview: Option<String>,
        verify: Option<Verify>,
        /// True for a tool of an image (`--root`): rvl never runs an image's programs on this
        /// machine, so the plan and the apply both leave it for the board (`deferred`).
        #[serde(default)]
        on_board: bool,
    },
    /// Download, verify, unpack, patch, build and install a source release into its prefix.
    BuildSource {
        project: String,
        version: String,
        /// `"url": …` or `"pip": {…}` in JSON.
        #[serde(flatten)]
        origin: Origin,
        sha256: String,
        /// None: the manifest pins no length (the sha256 does; the download is capped).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        tree: String,
        system: BuildSystem,
        prefix: String,
        options: Vec<String>,
        patches: Vec<String>,
        /// Tools that do not come from PATH (Mesa on a release that predates it).
        #[serde(skip_serializing_if = "Toolchain::is_empty")]
        toolchain: Toolchain,
    },
    /// Download a pinned prebuilt archive and unpack it as the prefix.
    InstallPrebuilt {
        url: String,
        sha256: String,
        size: u64,
        prefix: String,
    },
    /// Unpack a prebuilt panvk archive from this machine (`--mesa-archive`) as the prefix,
    /// once its sha256 matched and its own `share/rvl/build.json` names this Mesa.
    InstallArchive {
        #[serde(flatten)]
        archive: LocalArchive,
        /// The Mesa version the archive's stamp must name.
        version: String,
        prefix: String,
    },
    /// Install release packages a build needs with the image's own apt (`apt-get install
    /// --no-install-recommends`), then mark them automatically installed, so `apt autoremove`
    /// takes them back once nothing needs them. Not journaled: packages are apt's business.
    InstallPackages {
        packages: Vec<String>,
        /// What they are for, for people.
        purpose: String,
    },
    /// Build a build-only tool from pinned archives into its cache directory under
    /// `/opt/rvl/build/` (not journaled: a cache that a later run reuses, even after a
    /// failed or interrupted build of what needs it).
    BuildTool {
        tool: BuildToolKind,
        version: String,
        /// `/opt/rvl/build/<tool>-<version>`.
        dir: String,
        archives: Vec<ToolArchive>,
    },
}

/// The build tools setup knows how to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildToolKind {
    /// meson's wheel, installed into a venv (`python3 -m venv`, then its pip, offline).
    MesonVenv,
    /// SPIRV-Tools built static with SPIRV-Headers (cmake + ninja), libraries, headers and
    /// `SPIRV-Tools.pc` copied into the directory.
    SpirvTools,
}

/// One pinned archive a build tool is made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolArchive {
    pub id: String,
    pub url: String,
    pub sha256: String,
    pub size: u64,
    /// Top directory of a source archive (None: a wheel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
}

/// Where a build finds the tools that do not come from PATH (all target paths; empty: PATH).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    /// The meson program (`/opt/rvl/build/meson-1.7.0/bin/meson`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meson: Option<String>,
    /// `llvm-config` of the chosen LLVM (`/usr/bin/llvm-config-15`), given to meson in a native file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llvm_config: Option<String>,
    /// Directories put first on `PKG_CONFIG_PATH` (SPIRV-Tools' `lib/pkgconfig`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pkg_config_path: Vec<String>,
}

impl Toolchain {
    pub fn is_empty(&self) -> bool {
        *self == Toolchain::default()
    }
}

/// Unified diff of two texts, with file names in the header.
pub fn diff(path: &str, old: Option<&str>, new: &str) -> String {
    let old_text = old.unwrap_or("");
    let old_name = if old.is_some() {
        format!("a{path}")
    } else {
        "/dev/null".to_string()
    };
    similar::TextDiff::from_lines(old_text, new)
        .unified_diff()
        .context_radius(2)
        .header(&old_name, &format!("b{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_only_the_changed_line_with_context() {
        let d = diff("/e", Some("a\nb\nc\nd\ne\nf\n"), "a\nb\nc\nD\ne\nf\n");
        assert!(d.contains("--- a/e\n+++ b/e\n"), "{d}");
        assert!(d.contains("-d\n+D\n"), "{d}");
        assert!(!d.contains(" a\n"), "context is two lines: {d}");
        let n = diff("/n", None, "x\n");
        assert!(n.contains("--- /dev/null") && n.contains("+x"), "{n}");
    }
}
