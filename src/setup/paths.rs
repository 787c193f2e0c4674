//! The files and directories `rvl setup` owns or edits on a system (in-root paths). Imports
//! nothing: the planner, the facts reader and apply all name paths from here.

/// u-boot-menu fragment rvl writes (the admin's conf.d, read last by u-boot-update).
pub const RVL_CONF: &str = "/etc/u-boot-menu/conf.d/rvl.conf";
/// u-boot-menu fragment with rvl's `U_BOOT_FDT_OVERLAYS` (apart from rvl.conf, which the
/// kernel step rewrites whole; it sorts before it, after the usual admin names).
pub const RVL_OVERLAYS_CONF: &str = "/etc/u-boot-menu/conf.d/rvl-overlays.conf";
/// Where u-boot-menu (`U_BOOT_FDT_OVERLAYS_DIR`'s default) and rvl's extlinux entries take
/// overlays from.
pub const DTBO_DIR: &str = "/boot/dtbo";
/// Armbian's `user_overlays=NAME` loads `/boot/overlay-user/NAME.dtbo`.
pub const ARMBIAN_USER_OVERLAY_DIR: &str = "/boot/overlay-user";
/// The group database the `access` step edits.
pub const GROUP_FILE: &str = "/etc/group";
/// The user database the `access` step reads (whose access it grants; never edited).
pub const PASSWD_FILE: &str = "/etc/passwd";
/// Its shadow, edited alongside when present.
pub const GSHADOW_FILE: &str = "/etc/gshadow";
/// Our Vulkan ICD manifest (the loader reads every `*.json` in this directory).
pub const ICD_FILE: &str = "/etc/vulkan/icd.d/rvl_panvk.aarch64.json";
/// systemd user sessions read this (environment.d(5)).
/// The image's distribution and release (read only: the mesa step's toolchain check).
pub const OS_RELEASE: &str = "/etc/os-release";
pub const ENVIRONMENT_D_FILE: &str = "/etc/environment.d/90-rvl-vulkan.conf";
/// Login shells (ssh) read this.
pub const PROFILE_D_FILE: &str = "/etc/profile.d/rvl-vulkan.sh";
/// Wrappers on PATH for rvl's llama.cpp build (the `llama-cpp` step writes them; each execs
/// the prefix's binary of the same name with rvl's ICD picked, as `rvl serve` does).
pub const LLAMA_WRAPPERS: [(&str, &str); 2] = [
    ("/usr/local/bin/rvl-llama-server", "llama-server"),
    ("/usr/local/bin/rvl-llama-bench", "llama-bench"),
];
/// The links Armbian boots through, which the `kernel` step may repoint.
pub const ARMBIAN_BOOT_LINKS: [&str; 3] = ["/boot/Image", "/boot/uInitrd", "/boot/dtb"];
/// Revision of rvl's build of a pinned source; bump when the patch series or options change,
/// so the new build goes into a new prefix next to the old one.
pub const BUILD_REVISION: u32 = 1;
/// Added to the name of a Mesa prefix built with the candidate patches as well
/// (`/opt/rvl/mesa-26.2.4-rvl1-candidates-d301a45e`), so it lives beside the series-only build.
pub const CANDIDATES_SUFFIX: &str = "-candidates";
/// Written into an install prefix last, so its presence means "complete".
pub const BUILD_STAMP: &str = "share/rvl/build.json";

/// Install prefix of rvl's build of a source.
pub fn prefix_for(project: &str, version: &str) -> String {
    format!("/opt/rvl/{project}-{version}-rvl{BUILD_REVISION}")
}

/// Where the mesa step keeps build-only tools (meson's venv, static SPIRV-Tools): a cache that
/// outlives a failed or interrupted build, never on the loader's or a user's path.
pub const BUILD_TOOLS_DIR: &str = "/opt/rvl/build";
/// Written into a build tool's directory last, so its presence means "complete".
pub const TOOL_STAMP: &str = ".rvl-tool.json";

/// Directory of a build tool (`/opt/rvl/build/meson-1.7.0`).
pub fn tool_dir(tool: &str, version: &str) -> String {
    format!("{BUILD_TOOLS_DIR}/{tool}-{version}")
}
