//! One planner per step. Each looks at the facts and returns the actions that bring the system
//! to the target, or none when it is there already (that is what makes a second plan empty).

use super::action::{
    diff, Action, BuildToolKind, MesaSource, Options, ToolArchive, Toolchain, Verify,
};
use super::facts::Facts;
use super::overlays::{CompileError, Compiled, DTC_PACKAGE};
use super::patches::Series;
use super::paths::{
    prefix_for, tool_dir, ARMBIAN_USER_OVERLAY_DIR, BUILD_STAMP, BUILD_TOOLS_DIR,
    CANDIDATES_SUFFIX, DTBO_DIR, ENVIRONMENT_D_FILE, GROUP_FILE, GSHADOW_FILE, ICD_FILE,
    LLAMA_WRAPPERS, OS_RELEASE, PASSWD_FILE, PROFILE_D_FILE, RVL_CONF, RVL_OVERLAYS_CONF,
    TOOL_STAMP,
};
use super::target::Target;
use crate::bootcfg::{armbian, extlinux::Extlinux, ubootmenu};
use crate::builddeps;
use crate::error::Error;
use crate::icd::{DRIVER_FILES_VAR, PANVK_LIBRARY};
use crate::manifest::{BuildSystem, Manifest, Source};
use crate::profile::BootLayout;

/// Configure options that build only panvk (no GL, no other drivers). Mesa 26 compiles
/// panfrost's precompiled compute kernels with its own OpenCL C compiler (mesa_clc), so LLVM,
/// clang and libclc are needed at build time; the list is the native lab's
/// (scripts/panvk-lab/build-mesa.sh) less what only the lab wants (drm-shim, tests).
pub const MESA_OPTIONS: &[&str] = &[
    "-Dvulkan-drivers=panfrost",
    "-Dgallium-drivers=",
    "-Dplatforms=",
    "-Dglx=disabled",
    "-Degl=disabled",
    "-Dgbm=disabled",
    "-Dgles1=disabled",
    "-Dgles2=disabled",
    "-Dopengl=false",
    "-Dllvm=enabled",
    "-Dvalgrind=disabled",
    "-Dlibunwind=disabled",
    "-Dvideo-codecs=",
];
/// llama.cpp with the Vulkan backend and nothing that needs the network: the tools
/// (llama-bench, llama-server and, with the RPC backend, the RPC worker ggml-rpc-server, which
/// `cmake --install` installs) and the tests, for test-backend-ops (the patch series' cases are
/// run with it on the board). `rvl serve --rpc-worker` / `--rpc` spread a model over boards.
pub const LLAMA_OPTIONS: &[&str] = &[
    "-DGGML_VULKAN=ON",
    "-DGGML_RPC=ON",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=ON",
];
/// Binaries llama.cpp's build leaves in `<build>/bin/` that `cmake --install` does not
/// install; setup copies them into the prefix's `bin/` itself.
pub const LLAMA_BUILD_ONLY_BINARIES: &[&str] = &["test-backend-ops"];
/// What rvl's llama.cpp prefix must have in `bin/` once installed (a build lacking one fails).
pub const LLAMA_BINARIES: &[&str] = &[
    "llama-bench",
    "llama-server",
    "test-backend-ops",
    crate::rpc::RPC_SERVER,
];

/// Binaries a project's build leaves behind that setup copies into the prefix itself.
pub fn build_only_binaries(project: &str) -> &'static [&'static str] {
    if project == "llama.cpp" {
        LLAMA_BUILD_ONLY_BINARIES
    } else {
        &[]
    }
}

/// Binaries the installed prefix must have in `bin/`.
pub fn required_binaries(project: &str) -> &'static [&'static str] {
    if project == "llama.cpp" {
        LLAMA_BINARIES
    } else {
        &[]
    }
}

/// A wrapper on PATH (`/usr/local/bin/rvl-llama-server`): execs `<prefix>/bin/<binary>` with
/// rvl's ICD picked when setup installed one and the user chose no ICD themselves (the rule
/// `rvl serve` follows), so the distro's panfrost ICD is not picked by accident.
pub fn llama_wrapper(prefix: &str, binary: &str) -> String {
    let exe = crate::shell::quote(&format!("{prefix}/bin/{binary}")).into_owned();
    format!(
        "#!/bin/sh\n\
         # Written by rvl setup (llama-cpp step); `rvl setup --rollback` removes it.\n\
         if [ -z \"${DRIVER_FILES_VAR}\" ] && [ -z \"$VK_ICD_FILENAMES\" ] && [ -e {ICD_FILE} ]; then\n\
         \x20 {DRIVER_FILES_VAR}={ICD_FILE}\n\
         \x20 export {DRIVER_FILES_VAR}\n\
         fi\n\
         exec {exe} \"$@\"\n"
    )
}

/// What building panvk from the Mesa 26 tarball needs, as Debian 13 (trixie) names it, for a
/// release whose apt policy rvl did not read (on Debian 12, Ubuntu 22.04 and 24.04 the mesa step
/// installs what is missing itself and brings meson and SPIRV-Tools where they are too old:
/// `crate::builddeps`).
pub const MESA_BUILD_DEPS: &str = "sudo apt install meson ninja-build gcc g++ pkg-config patch python3-mako python3-yaml python3-packaging bison flex glslang-tools libdrm-dev libexpat1-dev zlib1g-dev libzstd-dev libelf-dev llvm-19-dev libclang-cpp19-dev libclang-19-dev libclc-19-dev libllvmspirvlib-19-dev spirv-tools";
/// What building llama.cpp with Vulkan needs on Debian.
pub const LLAMA_BUILD_DEPS: &str =
    "sudo apt install cmake ninja-build gcc g++ patch libvulkan-dev glslc";

/// The build dependency hint for a project.
pub fn build_deps(project: &str) -> &'static str {
    if project == "mesa" {
        MESA_BUILD_DEPS
    } else {
        LLAMA_BUILD_DEPS
    }
}

pub struct Ctx<'a> {
    pub facts: &'a Facts,
    /// The patch series, loaded before planning.
    pub patches: &'a Series,
    pub target: &'a Target,
    pub manifest: &'a Manifest,
    pub opts: &'a Options,
    /// The board's shipped overlay, compiled (None: rvl ships none for it).
    pub overlay: Option<&'a Compiled>,
}

#[derive(Default)]
pub struct Planned {
    pub summary: String,
    pub actions: Vec<Action>,
    pub notes: Vec<String>,
    /// Set when the step cannot do its job here: (why, what to do). Its actions are then empty.
    pub blocked: Option<(String, String)>,
}

impl Planned {
    fn blocked(why: impl Into<String>, fix: impl Into<String>) -> Planned {
        Planned {
            blocked: Some((why.into(), fix.into())),
            ..Planned::default()
        }
    }
}

fn write(path: &str, old: Option<&str>, new: String, mode: u32) -> Option<Action> {
    (old != Some(new.as_str())).then(|| Action::WriteFile {
        path: path.to_string(),
        mode,
        diff: diff(path, old, &new),
        new_file: old.is_none(),
        content: new,
    })
}

/// The release the boot configuration starts by default now.
pub fn default_release(facts: &Facts) -> Option<String> {
    match facts.layout {
        Some(BootLayout::UBootMenu) | Some(BootLayout::Extlinux) => facts
            .file(ubootmenu::EXTLINUX_CONF)
            .map(Extlinux::parse)
            .and_then(|e| e.default_entry().and_then(|d| d.kernel_release())),
        Some(BootLayout::Armbian) => facts
            .link("/boot/Image")
            .and_then(|t| t.rsplit('/').next())
            .and_then(|n| n.strip_prefix("vmlinuz-"))
            .map(str::to_string),
        None => None,
    }
}

pub fn rvl_conf_text(release: &str, label: &str) -> String {
    format!(
        "# Written by `rvl setup`: boot the mainline kernel {release} by default.\n\
         # u-boot-update numbers kernels highest release first (l0, l0r, l1, ...), so this label\n\
         # shifts when kernels come and go; `rvl setup` recomputes it. Undo: rvl setup --rollback\n\
         U_BOOT_DEFAULT=\"{label}\"\n"
    )
}

pub fn kernel(ctx: &Ctx) -> anyhow::Result<Planned> {
    let facts = ctx.facts;
    // A missing kernel blocks this step only: the rest of the plan does not need it.
    let Some(release) = facts.target_kernel(ctx.target) else {
        let (why, fix) = ctx.target.kernel_blocked(&ctx.opts.hint);
        return Ok(Planned::blocked(why, fix));
    };
    let current = default_release(facts);
    let mut out = Planned {
        summary: format!(
            "boot {release} by default (now {}; it stays installed and in the boot menu)",
            current.as_deref().unwrap_or("unknown")
        ),
        ..Planned::default()
    };
    let boots_target = current.as_deref() == Some(release);
    match facts.layout {
        Some(BootLayout::UBootMenu) => {
            let label = ubootmenu::label_for_release(&facts.installed_kernels, release)
                .expect("the wanted kernel is one of the installed ones");
            let conf = rvl_conf_text(release, &label);
            let conf_old = facts.file(RVL_CONF);
            let stale_conf = conf_old.is_some_and(|c| c != conf);
            if boots_target && !stale_conf {
                return Ok(out);
            }
            out.actions.extend(write(RVL_CONF, conf_old, conf, 0o644));
            let old = facts.file(ubootmenu::EXTLINUX_CONF);
            if !ctx.opts.runs_here("u-boot-update") {
                // An image: its u-boot-update is not run here, so setup sets `default` in the
                // generated file itself (rvl.conf keeps it when the board next runs it), and
                // the plan shows exactly that edit.
                let text = old.unwrap_or_default();
                let mut e = Extlinux::parse(text);
                let Some(label) = e
                    .entries_for_release(release)
                    .map(|en| en.label.clone())
                    .next()
                else {
                    return Ok(Planned::blocked(
                        format!("{}: no label boots {release} yet (u-boot-update has not run since it was installed)", ubootmenu::EXTLINUX_CONF),
                        format!(
                            "{}, then run setup again",
                            ctx.opts.hint.on_board("sudo u-boot-update")
                        ),
                    ));
                };
                e.set_default(&label);
                out.actions
                    .extend(write(ubootmenu::EXTLINUX_CONF, old, e.render(), 0o644));
                out.actions.push(u_boot_update(ctx, None, None));
                return Ok(out);
            }
            let preview = old.map(|text| {
                let mut e = Extlinux::parse(text);
                e.set_default(&label);
                diff(ubootmenu::EXTLINUX_CONF, Some(text), &e.render())
            });
            out.actions.push(u_boot_update(
                ctx,
                preview,
                Some(Verify::ExtlinuxDefaultBoots {
                    path: ubootmenu::EXTLINUX_CONF.into(),
                    release: release.into(),
                }),
            ));
        }
        Some(BootLayout::Extlinux) => {
            if boots_target {
                return Ok(out);
            }
            let text = facts.file(ubootmenu::EXTLINUX_CONF).unwrap_or_default();
            let mut e = Extlinux::parse(text);
            let Some(label) = e
                .entries_for_release(release)
                .map(|en| en.label.clone())
                .next()
            else {
                return Ok(Planned::blocked(
                    format!("{}: no label boots {release}", ubootmenu::EXTLINUX_CONF),
                    "add one (copy the current kernel's label block and change its linux, initrd and fdtdir lines), then run setup again",
                ));
            };
            e.set_default(&label);
            out.actions
                .extend(write(ubootmenu::EXTLINUX_CONF, Some(text), e.render(), 0o644));
        }
        Some(BootLayout::Armbian) => {
            // Armbian boots whatever /boot/Image, /boot/uInitrd and /boot/dtb point at.
            for (link, file) in [
                ("/boot/Image", format!("vmlinuz-{release}")),
                ("/boot/uInitrd", format!("uInitrd-{release}")),
                ("/boot/dtb", format!("dtb-{release}")),
            ] {
                let exists = facts.is_present(&format!("/boot/{file}"));
                if link == "/boot/Image" && !exists {
                    return Ok(Planned::blocked(
                        format!("/boot/{file} is missing"),
                        format!("reinstall the {release} kernel package, then run setup again"),
                    ));
                }
                if exists && facts.link(link) != Some(file.as_str()) {
                    out.actions.push(Action::Symlink {
                        path: link.into(),
                        was: facts.link(link).map(str::to_string),
                        target: file,
                    });
                }
            }
        }
        None => {
            return Ok(Planned::blocked(
                "cannot tell how this image boots: found none of /boot/armbianEnv.txt, u-boot-menu (/usr/sbin/u-boot-update), /boot/extlinux/extlinux.conf",
                "set the default kernel by hand in the boot loader's configuration",
            ))
        }
    }
    Ok(out)
}

/// kbase's device node: while it exists, the vendor driver owns the GPU.
pub const KBASE_DEVICE: &str = "/dev/mali0";

/// What unblocks a vendor kernel whose overlays setup cannot switch: booting mainline.
fn boot_mainline_fix(ctx: &Ctx) -> String {
    match ctx.facts.target_kernel(ctx.target) {
        Some(release) => format!(
            "boot the mainline kernel instead: {} (boots {release})",
            ctx.opts.hint.setup("--only kernel")
        ),
        None => format!(
            "{}; it boots the mainline kernel, where panthor drives the GPU",
            ctx.target.kernel_blocked(&ctx.opts.hint).1
        ),
    }
}

/// u-boot-menu's `u-boot-update`, which regenerates extlinux.conf from its configuration.
/// Left for the board when it does not run here (an image): then it changes nothing here, so
/// there is nothing to preview or verify.
fn u_boot_update(ctx: &Ctx, preview: Option<String>, verify: Option<Verify>) -> Action {
    let here = ctx.opts.runs_here("u-boot-update");
    Action::RunTool {
        tool: "u-boot-update".into(),
        args: vec![],
        changes: if here {
            vec![ubootmenu::EXTLINUX_CONF.into()]
        } else {
            Vec::new()
        },
        preview: preview.filter(|_| here),
        verify: verify.filter(|_| here),
        on_board: !here,
    }
}

pub fn gpu_overlay(ctx: &Ctx) -> anyhow::Result<Planned> {
    let facts = ctx.facts;
    // The kernel that boots after this plan: the mainline one when the kernel step runs (and
    // is not blocked), else the one the boot configuration starts now.
    let after = facts
        .target_kernel(ctx.target)
        .filter(|_| ctx.opts.wants("kernel"))
        .map(str::to_string)
        .or_else(|| default_release(facts));
    let mut out = Planned::default();
    let Some(after) = after.filter(|r| ctx.target.is_vendor_kernel(r)) else {
        if ctx.target.mainline_enables_gpu == Some(false) {
            return Ok(enable_gpu(ctx));
        } else if ctx.opts.named("gpu-overlay") {
            out.notes.push(
                "gpu-overlay: nothing to do, the kernel that boots is not a vendor (kbase) kernel"
                    .into(),
            );
        }
        return Ok(out);
    };
    out.summary =
        format!("let panthor drive the GPU on the vendor kernel {after} (device-tree overlay)");
    let kbase_now = facts.is_present(KBASE_DEVICE);
    match facts.layout {
        Some(BootLayout::Armbian) => match &ctx.target.armbian_panthor_overlay {
            Some(overlay) => {
                let old = facts.file(armbian::ARMBIAN_ENV).unwrap_or_default();
                let mut env = armbian::ArmbianEnv::parse(old);
                if env.add_overlay(overlay) {
                    out.actions
                        .extend(write(armbian::ARMBIAN_ENV, Some(old), env.render(), 0o644));
                }
            }
            None => {
                return Ok(Planned::blocked(
                    format!(
                        "the {} profile names no Armbian overlay that enables panthor on {after}",
                        ctx.target.board
                    ),
                    boot_mainline_fix(ctx),
                ))
            }
        },
        Some(BootLayout::UBootMenu) => {
            let dtbo = ctx
                .target
                .radxa_kbase_overlay
                .as_ref()
                .map(|o| format!("/boot/dtbo/{o}.dtbo"));
            match dtbo {
                Some(dtbo) if facts.is_present(&dtbo) => {
                    out.actions.push(Action::RenameFile {
                        from: dtbo.clone(),
                        to: format!("{dtbo}.disabled"),
                    });
                    out.actions.push(u_boot_update(ctx, None, None));
                }
                // kbase is on, and not by an overlay setup knows how to switch off: the
                // vendor device tree itself gives kbase the GPU.
                _ if kbase_now => {
                    return Ok(Planned::blocked(
                        format!(
                            "kbase owns the GPU ({KBASE_DEVICE} exists), and not through an overlay setup can switch off ({})",
                            dtbo.map_or("the profile names none".to_string(), |d| format!("no {d}"))
                        ),
                        boot_mainline_fix(ctx),
                    ))
                }
                _ => {}
            }
        }
        _ => {
            return Ok(Planned::blocked(
                format!("this image's overlay mechanism is unknown, so setup cannot switch the GPU driver of {after}"),
                boot_mainline_fix(ctx),
            ))
        }
    }
    Ok(out)
}

/// The installed overlay file for a boot layout (the paths the gather step hashes).
pub fn overlay_paths(name: &str) -> [String; 2] {
    [
        format!("{ARMBIAN_USER_OVERLAY_DIR}/{name}.dtbo"),
        format!("{DTBO_DIR}/{name}.dtbo"),
    ]
}

/// A mainline kernel whose device tree leaves `&gpu` disabled: install rvl's overlay that
/// enables it, the way the boot layout loads overlays. Blocked when rvl ships none for the
/// board or `dtc` is missing, never "nothing to do" while the GPU stays off.
fn enable_gpu(ctx: &Ctx) -> Planned {
    let board = &ctx.target.board;
    let Some(compiled) = ctx.overlay else {
        return Planned::blocked(
            format!("{board}'s mainline device tree leaves the GPU node disabled, and rvl ships no overlay that enables &gpu for it"),
            "write a device-tree overlay that sets mali-supply (the board's GPU regulator) and status = \"okay\" on &gpu, and add it to the boot configuration",
        );
    };
    let name = compiled.overlay.name;
    let dtb = match &compiled.dtb {
        Ok(dtb) => dtb,
        Err(CompileError::NoDtc(_))
            if overlay_paths(name)
                .iter()
                .any(|p| ctx.facts.hashes.get(p).is_some_and(Option::is_some)) =>
        {
            // Installed by an earlier run; without dtc it cannot be compared, only kept.
            let mut out = Planned::default();
            out.notes.push(format!("gpu-overlay: rvl's overlay {name} is installed; without dtc ({DTC_PACKAGE}) setup cannot check that it is current"));
            return out;
        }
        Err(CompileError::NoDtc(why)) => {
            return Planned::blocked(
                format!("{board}'s mainline device tree leaves &gpu disabled and rvl's overlay {name} must be compiled, but {why}"),
                format!("sudo apt install {DTC_PACKAGE}, then run setup again"),
            )
        }
        Err(CompileError::Failed(why)) => {
            return Planned::blocked(
                why.clone(),
                "report this as a bug in rvl (the overlay source is rvl's own)",
            )
        }
    };
    let facts = ctx.facts;
    let sha256 = crate::digest::sha256_hex(dtb);
    let mut out = Planned {
        summary: format!("enable the GPU: install rvl's device-tree overlay {name} (&gpu: mali-supply, status = \"okay\")"),
        ..Planned::default()
    };
    let install = |out: &mut Planned, path: &str| {
        if facts.hashes.get(path).cloned().flatten().as_deref() != Some(sha256.as_str()) {
            out.actions.push(Action::InstallOverlay {
                path: path.to_string(),
                name: name.to_string(),
                size: dtb.len() as u64,
                sha256: sha256.clone(),
                dtb: dtb.clone(),
            });
        }
    };
    let [armbian_path, dtbo_path] = overlay_paths(name);
    match facts.layout {
        Some(BootLayout::Armbian) => {
            install(&mut out, &armbian_path);
            let old = facts.file(armbian::ARMBIAN_ENV).unwrap_or_default();
            let mut env = armbian::ArmbianEnv::parse(old);
            if env.add_to_list("user_overlays", name) {
                out.actions
                    .extend(write(armbian::ARMBIAN_ENV, Some(old), env.render(), 0o644));
            }
        }
        Some(BootLayout::UBootMenu) => {
            let setting = |key: &str| {
                facts
                    .menu
                    .as_ref()
                    .and_then(|m| m.get(key))
                    .map(|s| (s.assignment.value.clone(), s.file.clone()))
            };
            if let Some((dir, file)) = setting("U_BOOT_FDT_OVERLAYS_DIR") {
                if dir.trim_end_matches('/') != DTBO_DIR {
                    return Planned::blocked(
                        format!("{file} sets U_BOOT_FDT_OVERLAYS_DIR={dir}; rvl installs its overlay in {DTBO_DIR}/"),
                        format!("copy {dtbo_path} into {dir} and add {name}.dtbo to U_BOOT_FDT_OVERLAYS by hand, or drop that setting"),
                    );
                }
            }
            install(&mut out, &dtbo_path);
            let file = format!("{name}.dtbo");
            let mut list: Vec<String> = setting("U_BOOT_FDT_OVERLAYS")
                .map(|(v, _)| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default();
            if !list.contains(&file) {
                // Keep the overlays the admin's fragments name: the last assignment wins.
                list.push(file);
                let text = format!(
                    "# Written by `rvl setup`: rvl's overlay that enables the GPU on this board's mainline\n\
                     # device tree, with the overlays the other fragments named. Undo: rvl setup --rollback\n\
                     U_BOOT_FDT_OVERLAYS=\"{}\"\n",
                    list.join(" ")
                );
                out.actions.extend(write(
                    RVL_OVERLAYS_CONF,
                    facts.file(RVL_OVERLAYS_CONF),
                    text,
                    0o644,
                ));
            }
            if !out.actions.is_empty() {
                out.actions.push(u_boot_update(ctx, None, None));
            }
        }
        Some(BootLayout::Extlinux) => {
            let text = facts.file(ubootmenu::EXTLINUX_CONF).unwrap_or_default();
            let mut e = Extlinux::parse(text);
            let Some(entry) = e.default_entry().cloned() else {
                return Planned::blocked(
                    format!("{} has no default entry to add the overlay to", ubootmenu::EXTLINUX_CONF),
                    "add a label for the mainline kernel and make it the default, then run setup again",
                );
            };
            install(&mut out, &dtbo_path);
            // Paths in extlinux.conf are relative to the partition it is on: follow the kernel's.
            let on_root = entry.linux.as_deref().is_none_or(|l| l.starts_with("/boot/"));
            let listed = if on_root {
                dtbo_path.clone()
            } else {
                format!("/dtbo/{name}.dtbo")
            };
            if e.add_fdtoverlay(&entry.label, &listed) {
                out.actions
                    .extend(write(ubootmenu::EXTLINUX_CONF, Some(text), e.render(), 0o644));
            }
        }
        None => {
            return Planned::blocked(
                "cannot tell how this image boots, so not where its overlays go",
                format!("install {dtbo_path} (from `rvl setup --dry-run --json`'s source) the way the boot loader loads overlays"),
            )
        }
    }
    out
}

pub fn firmware(ctx: &Ctx) -> anyhow::Result<Planned> {
    let mut out = Planned::default();
    let Some(fw) = ctx.manifest.recommended_firmware() else {
        out.notes.push(
            "firmware: the manifest recommends no panthor firmware; nothing installed".into(),
        );
        return Ok(out);
    };
    let path = crate::firmware::standard_path(&fw.path);
    let have = ctx.facts.hashes.get(&path).cloned().flatten();
    let known_good = have
        .as_deref()
        .and_then(|h| ctx.manifest.firmware_by_sha256(h));
    if known_good.is_some_and(|f| f.for_panthor) {
        return Ok(out);
    }
    let Some(url) = fw.url.clone() else {
        return Err(Error::Manifest(format!(
            "manifest: firmware `{}` has no url to download it from",
            fw.id
        ))
        .into());
    };
    out.summary = match &have {
        None => format!("install the G610 CSF firmware ({})", fw.version),
        Some(_) => format!(
            "replace an unknown {path} with the pinned firmware ({})",
            fw.version
        ),
    };
    out.actions.push(Action::InstallArtifact {
        path,
        url,
        sha256: fw.sha256.clone(),
        size: fw.size,
        mode: 0o644,
        was_sha256: have,
        description: fw.version.clone(),
    });
    // A built-in panthor probes before the root file system is mounted: the firmware must be
    // in the initramfs of the kernel that will boot.
    if let Some(release) = ctx.facts.target_kernel(ctx.target) {
        if ctx.facts.panthor_builtin(release) {
            let here = ctx.opts.runs_here("update-initramfs");
            out.actions.push(Action::RunTool {
                tool: "update-initramfs".into(),
                args: vec!["-u".into(), "-k".into(), release.into()],
                changes: if here {
                    vec![format!("/boot/initrd.img-{release}")]
                } else {
                    Vec::new()
                },
                preview: None,
                verify: None,
                on_board: !here,
            });
        }
    }
    Ok(out)
}

/// Paths whose presence the planner checks (complete install prefixes).
pub fn probe_paths(manifest: &Manifest, series: &Series) -> Vec<String> {
    mesa_prefix_for(manifest, series)
        .into_iter()
        .chain(llama_source(manifest).map(|s| prefix_for("llama.cpp", &s.version)))
        .map(|p| format!("{p}/{BUILD_STAMP}"))
        .chain(tool_probe_paths(manifest))
        .collect()
}

pub fn mesa_source(m: &Manifest) -> Option<&Source> {
    m.source("mesa")
}

pub fn llama_source(m: &Manifest) -> Option<&Source> {
    m.source("llama.cpp").or_else(|| m.source("llama-cpp"))
}

/// The prefix panvk is (or will be) installed in: the series-only build.
pub fn mesa_prefix(m: &Manifest) -> Option<String> {
    mesa_source(m).map(|s| prefix_for("mesa", &s.version))
}

/// The prefix of the build `series` makes: the series-only prefix, or where its Mesa patches
/// include candidates (`--mesa-candidates`), one named after them
/// (`/opt/rvl/mesa-26.2.4-rvl1-candidates-1a2b3c4d`: the first 8 hex digits of the sha256 of
/// their names and bytes), so a new revision of a candidate is a new build beside the old one
/// and never mistaken for it.
pub fn mesa_prefix_for(m: &Manifest, series: &Series) -> Option<String> {
    let prefix = mesa_prefix(m)?;
    let candidates: Vec<_> = series
        .get("mesa")
        .iter()
        .filter(|p| super::patches::is_candidate(&p.name))
        .collect();
    if candidates.is_empty() {
        return Some(prefix);
    }
    let mut id = String::new();
    for p in candidates {
        id.push_str(&format!(
            "{} {}\n",
            crate::digest::sha256_hex(&p.data),
            p.name
        ));
    }
    let tag = crate::digest::sha256_hex(id.as_bytes());
    Some(format!("{prefix}{CANDIDATES_SUFFIX}-{}", &tag[..8]))
}

fn build_action(
    project: &str,
    s: &Source,
    prefix: &str,
    options: &[&str],
    patches: Vec<String>,
) -> Action {
    Action::BuildSource {
        project: project.into(),
        version: s.version.clone(),
        origin: s.origin.clone(),
        sha256: s.sha256.clone(),
        size: s.size,
        tree: s.tree.clone(),
        system: s.build,
        prefix: prefix.to_string(),
        options: options.iter().map(|o| o.to_string()).collect(),
        patches,
        toolchain: Toolchain::default(),
    }
}

fn patch_names(ctx: &Ctx, project: &str) -> Vec<String> {
    ctx.patches
        .get(project)
        .iter()
        .map(|p| p.name.clone())
        .collect()
}

pub fn mesa(ctx: &Ctx) -> anyhow::Result<Planned> {
    let mut out = Planned::default();
    let Some(src) = mesa_source(ctx.manifest) else {
        return Err(Error::Manifest("manifest: no `mesa` source is pinned".into()).into());
    };
    let prefix = mesa_prefix_for(ctx.manifest, ctx.patches).expect("the source is pinned");
    if ctx.facts.is_present(&format!("{prefix}/{BUILD_STAMP}")) {
        return Ok(out);
    }
    match ctx.opts.mesa_from {
        MesaSource::Source => {
            if src.build != BuildSystem::Meson {
                return Err(
                    Error::Manifest("manifest: Mesa must be built with meson".into()).into(),
                );
            }
            // "26.2.4" → 26, the numbers being what prefixes are ordered by too.
            let major = crate::llama::version_key(&src.version)
                .first()
                .copied()
                .unwrap_or(0);
            let mut toolchain = Toolchain::default();
            let mut deps_actions = Vec::new();
            if major >= 26 {
                match mesa_build_deps(ctx, &src.version)? {
                    Deps::Blocked(why) => return Ok(Planned::blocked(why, MESA_BLOCKED_FIX)),
                    Deps::Resolved {
                        actions,
                        toolchain: tc,
                        notes,
                    } => {
                        deps_actions = actions;
                        toolchain = tc;
                        out.notes.extend(notes);
                    }
                    Deps::Unknown(note) => out.notes.push(note),
                }
            }
            let patches = patch_names(ctx, "mesa");
            let tried = patches
                .iter()
                .filter(|n| super::patches::is_candidate(n))
                .count();
            let series = patches.len() - tried;
            out.summary = format!(
                "build panvk from Mesa {} ({}{}) into {prefix}",
                src.version,
                crate::output::count(series, "patch"),
                match tried {
                    0 => String::new(),
                    n => format!(" and {}", crate::output::count(n, "candidate")),
                }
            );
            if tried > 0 {
                out.notes.push(format!(
                    "--mesa-candidates: the candidate patches change panvk's shader compiler and were measured in the lab, never run on a G610; check the result with `rvl smoke-bench --gguf MODEL` (it compares llama.cpp's GPU results with the CPU's), and go back to the series-only build with {}",
                    ctx.opts.hint.setup("--only mesa,icd")
                ));
            }
            out.actions.extend(deps_actions);
            let mut build = build_action("mesa", src, &prefix, MESA_OPTIONS, patches);
            if let Action::BuildSource { toolchain: tc, .. } = &mut build {
                *tc = toolchain;
            }
            out.actions.push(build);
        }
        MesaSource::Prebuilt if ctx.opts.mesa_archive.is_some() => {
            let archive = ctx.opts.mesa_archive.clone().expect("checked by the guard");
            let name = archive
                .file
                .rsplit('/')
                .next()
                .unwrap_or(&archive.file)
                .to_string();
            out.summary = format!(
                "install prebuilt panvk (Mesa {}) from {} into {prefix}",
                src.version,
                crate::output::escape_control(&name)
            );
            out.actions.push(Action::InstallArchive {
                archive,
                version: src.version.clone(),
                prefix,
            });
        }
        MesaSource::Prebuilt => {
            let Some(pre) = ctx.manifest.prebuilt.iter().find(|p| {
                p.id.starts_with("mesa") && p.arch == "aarch64" && p.version == src.version
            }) else {
                // The flag asks for what the manifest does not have: a usage error, not a
                // board this action does not support.
                return Err(Error::Usage(format!(
                    "--mesa-from prebuilt: the manifest pins no prebuilt Mesa {} for aarch64; build it from source instead ({}), or pass --mesa-archive FILE with an archive scripts/build-panvk-deb.sh made",
                    src.version,
                    ctx.opts.hint.setup("--only mesa,icd")
                ))
                .into());
            };
            out.summary = format!(
                "install prebuilt panvk (Mesa {}) into {prefix}",
                src.version
            );
            out.actions.push(Action::InstallPrebuilt {
                url: pre.url.clone(),
                sha256: pre.sha256.clone(),
                size: pre.size,
                prefix,
            });
        }
    }
    Ok(out)
}

/// What unblocks a mesa step the release cannot build.
pub const MESA_BLOCKED_FIX: &str = "move the board to Debian 12 or Ubuntu 22.04 or newer; or build panvk on a PC (scripts/build-panvk-deb.sh --arm64) and install it with rvl setup --mesa-from prebuilt --mesa-archive FILE";

/// Measured costs of the mesa step's parts, for the plan (docs/build-deps.md). Minutes: on 2 idle
/// x86-64 cores (wave3-anchors.md; the bookworm lab, on 2 cores shared with other builds, took
/// 36 + 39 min). MiB: the bookworm lab (scripts/panvk-lab/bookworm-setup.sh).
pub mod cost {
    /// SPIRV-Tools' static libraries: minutes, MiB of scratch while building, MiB kept.
    pub const SPIRV_TOOLS: (u32, u32, u32) = (13, 250, 13);
    /// meson's venv.
    pub const MESON_VENV: (u32, u32, u32) = (1, 0, 35);
    /// panvk: minutes, MiB of scratch (unpacked tree + build directory), MiB installed.
    pub const MESA: (u32, u32, u32) = (11, 900, 20);
}

/// The build dependencies of Mesa 26 on this image.
enum Deps {
    /// The release cannot build it: why.
    Blocked(String),
    /// What to install and build first, where the build finds it, and what to tell people.
    Resolved {
        actions: Vec<Action>,
        toolchain: Toolchain,
        notes: Vec<String>,
    },
    /// rvl cannot tell (not a Debian-family image, or no apt policy and an unknown release):
    /// the build uses PATH, as before.
    Unknown(String),
}

fn mesa_build_deps(ctx: &Ctx, mesa_version: &str) -> anyhow::Result<Deps> {
    let Some(os) = ctx.facts.file(OS_RELEASE).map(crate::osrelease::parse) else {
        return Ok(Deps::Unknown(format!(
            "mesa: no {OS_RELEASE}: build dependencies are not checked ({MESA_BUILD_DEPS})"
        )));
    };
    if let Some(why) = builddeps::release_blocker(&os) {
        return Ok(Deps::Blocked(why));
    }
    let policy = ctx
        .facts
        .apt_policy
        .as_deref()
        .map(builddeps::parse_policy)
        .filter(|p| !p.0.is_empty());
    let (resolved, checked) = match &policy {
        Some(p) => match builddeps::resolve(&os, p) {
            Ok(r) => (r, true),
            Err(why) => return Ok(Deps::Blocked(why)),
        },
        None => match builddeps::known(&os).and_then(resolve_known) {
            Some(r) => (r, false),
            None => {
                return Ok(Deps::Unknown(format!(
                    "mesa: cannot tell which build dependencies {} has (no apt policy): the build uses what is on PATH ({MESA_BUILD_DEPS})",
                    builddeps::release_name(&os)
                )))
            }
        },
    };
    let name = builddeps::release_name(&os);
    let mut actions = Vec::new();
    let mut toolchain = Toolchain {
        llvm_config: Some(resolved.llvm_config()),
        ..Toolchain::default()
    };
    let mut notes = vec![format!(
        "mesa: building Mesa {mesa_version} on {name}{}:",
        if checked {
            ", from its apt policy"
        } else {
            " (its apt was not asked: the image's programs never run under --root; this is what the release ships)"
        }
    )];
    let llvm = resolved.llvm;
    notes.push(format!(
        "  LLVM {llvm} with libclang-cpp, libclc and LLVMSPIRVLib: the release's packages ({})",
        builddeps::llvm_packages(llvm).join(" ")
    ));
    let (mut minutes, mut scratch, mut kept) = (cost::MESA.0, cost::MESA.1, cost::MESA.2);
    match &resolved.meson {
        builddeps::ToolFrom::Distro(v) => notes.push(format!("  meson {v}: the release's package")),
        builddeps::ToolFrom::Pinned { release_has } => {
            let tool = match build_tool(ctx.manifest, "meson") {
                Ok(b) => b,
                Err(why) => return Ok(Deps::Blocked(why)),
            };
            let dir = tool_dir("meson", &tool.version);
            notes.push(format!(
                "  meson {}: pinned PyPI wheel in a venv at {dir} (the release has {}; Mesa needs >= {})",
                tool.version,
                release_has.as_deref().unwrap_or("none"),
                builddeps::MESON_MIN
            ));
            toolchain.meson = Some(format!("{dir}/bin/meson"));
            if !ctx.facts.is_present(&format!("{dir}/{TOOL_STAMP}")) {
                actions.push(Action::BuildTool {
                    tool: BuildToolKind::MesonVenv,
                    version: tool.version.clone(),
                    dir,
                    archives: vec![tool_archive(tool)],
                });
                minutes += cost::MESON_VENV.0;
                kept += cost::MESON_VENV.2;
            }
        }
    }
    match &resolved.spirv_tools {
        builddeps::ToolFrom::Distro(v) => {
            notes.push(format!("  SPIRV-Tools {v}: the release's package"))
        }
        builddeps::ToolFrom::Pinned { release_has } => {
            let tools = match build_tool(ctx.manifest, "spirv-tools") {
                Ok(b) => b,
                Err(why) => return Ok(Deps::Blocked(why)),
            };
            let headers = match build_tool(ctx.manifest, "spirv-headers") {
                Ok(b) => b,
                Err(why) => return Ok(Deps::Blocked(why)),
            };
            let dir = tool_dir("spirv-tools", &tools.version);
            notes.push(format!(
                "  SPIRV-Tools {} with SPIRV-Headers {}: pinned source, built static into {dir} (the release has {}; Mesa needs >= {})",
                tools.version,
                headers.version,
                release_has.as_deref().unwrap_or("none"),
                builddeps::SPIRV_TOOLS_MIN
            ));
            toolchain.pkg_config_path = vec![format!("{dir}/lib/pkgconfig")];
            if !ctx.facts.is_present(&format!("{dir}/{TOOL_STAMP}")) {
                actions.push(Action::BuildTool {
                    tool: BuildToolKind::SpirvTools,
                    version: tools.version.clone(),
                    dir,
                    archives: vec![tool_archive(tools), tool_archive(headers)],
                });
                minutes += cost::SPIRV_TOOLS.0;
                scratch = scratch.max(cost::SPIRV_TOOLS.1);
                kept += cost::SPIRV_TOOLS.2;
            }
        }
    }
    if checked && !resolved.missing.is_empty() {
        notes.push(format!(
            "  apt-get installs {} release package{}: {}",
            resolved.missing.len(),
            if resolved.missing.len() == 1 { "" } else { "s" },
            resolved.missing.join(" ")
        ));
        actions.insert(
            0,
            Action::InstallPackages {
                packages: resolved.missing.clone(),
                purpose: format!("build Mesa {mesa_version} with LLVM {llvm}"),
            },
        );
    } else if !checked {
        notes.push(format!(
            "  release packages it needs: {}",
            resolved.packages.join(" ")
        ));
    }
    notes.push(format!(
        "  cost: about {minutes} min (2 idle x86-64 cores; up to 3x that on a busy or slower machine), {scratch} MiB of scratch under /var/lib/rvl/work while it builds, {kept} MiB kept (/opt/rvl/build is a cache: `sudo rm -rf {BUILD_TOOLS_DIR}` frees it once panvk is installed)"
    ));
    Ok(Deps::Resolved {
        actions,
        toolchain,
        notes,
    })
}

/// The plan's expectation for a known release whose apt was not asked (under `--root`).
fn resolve_known(k: &builddeps::Known) -> Option<builddeps::Resolved> {
    let llvm = k.llvm?;
    let tool = |pinned: bool| {
        if pinned {
            builddeps::ToolFrom::Pinned { release_has: None }
        } else {
            builddeps::ToolFrom::Distro("the release's".into())
        }
    };
    let mut packages: Vec<String> = builddeps::BASE_PACKAGES
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    packages.extend(builddeps::llvm_packages(llvm));
    Some(builddeps::Resolved {
        llvm,
        meson: tool(k.meson_pinned),
        spirv_tools: tool(k.spirv_tools_pinned),
        packages,
        missing: Vec::new(),
    })
}

/// A pinned build tool, or why the mesa step is blocked without it (a manifest given with
/// `--manifest` may pin none; the other steps still plan).
fn build_tool<'m>(m: &'m Manifest, id: &str) -> Result<&'m crate::manifest::BuildTool, String> {
    m.build_tool(id).ok_or_else(|| {
        format!("the manifest pins no `{id}` in build_tools, and this release's is too old to build Mesa 26")
    })
}

fn tool_archive(b: &crate::manifest::BuildTool) -> ToolArchive {
    ToolArchive {
        id: b.id.clone(),
        url: b.url.clone(),
        sha256: b.sha256.clone(),
        size: b.size,
        tree: b.tree.clone(),
    }
}

/// Stamps of the build tools the manifest pins (their presence is a fact the planner reads).
pub fn tool_probe_paths(m: &Manifest) -> Vec<String> {
    m.build_tools
        .iter()
        .filter(|b| b.id != "spirv-headers")
        .map(|b| format!("{}/{TOOL_STAMP}", tool_dir(&b.id, &b.version)))
        .collect()
}

/// The ICD manifest setup writes, serialized by serde: a prefix is data, never JSON syntax, so a
/// quote or backslash in it stays inside the `library_path` string.
pub fn icd_json(prefix: &str, api_version: &str) -> String {
    #[derive(serde::Serialize)]
    struct Icd<'a> {
        // The loader reads library_path; api_version is informational for it, and repeats what
        // the built driver's own manifest says (the manifest's `vulkan_api`).
        api_version: &'a str,
        library_arch: &'a str,
        library_path: String,
    }
    #[derive(serde::Serialize)]
    struct File<'a> {
        #[serde(rename = "ICD")]
        icd: Icd<'a>,
        file_format_version: &'a str,
    }
    let file = File {
        icd: Icd {
            api_version,
            library_arch: "64",
            library_path: format!("{prefix}/lib/{PANVK_LIBRARY}"),
        },
        file_format_version: "1.0.1",
    };
    let mut text = serde_json::to_string_pretty(&file).expect("plain strings serialize");
    text.push('\n');
    text
}

/// The ICD's `api_version`: the pinned Mesa's, else the Vulkan version panvk has claimed since
/// Mesa 26 (the loader does not read it).
pub fn icd_api_version(m: &Manifest) -> &str {
    mesa_source(m)
        .and_then(|s| s.vulkan_api.as_deref())
        .unwrap_or("1.4.0")
}

pub fn icd(ctx: &Ctx) -> anyhow::Result<Planned> {
    let mut out = Planned::default();
    let Some(prefix) = mesa_prefix_for(ctx.manifest, ctx.patches) else {
        return Err(Error::Manifest("manifest: no `mesa` source is pinned".into()).into());
    };
    let installed = ctx.facts.is_present(&format!("{prefix}/{BUILD_STAMP}"));
    if !installed && !ctx.opts.wants("mesa") {
        return Ok(Planned::blocked(
            format!(
                "step order: the icd step registers the panvk the mesa step builds, and panvk is not installed in {prefix}; --only leaves the mesa step out"
            ),
            format!(
                "run both, mesa first: {}",
                ctx.opts.hint.setup(if ctx.opts.mesa_candidates {
                    "--only mesa,icd --mesa-candidates"
                } else {
                    "--only mesa,icd"
                })
            ),
        ));
    }
    let f = ctx.facts;
    out.actions.extend(write(
        ICD_FILE,
        f.file(ICD_FILE),
        icd_json(&prefix, icd_api_version(ctx.manifest)),
        0o644,
    ));
    out.actions.extend(write(
        ENVIRONMENT_D_FILE,
        f.file(ENVIRONMENT_D_FILE),
        format!("# Written by rvl setup: Vulkan apps use rvl's panvk, not the distro's panfrost ICD.\n{DRIVER_FILES_VAR}={ICD_FILE}\n"),
        0o644,
    ));
    out.actions.extend(write(
        PROFILE_D_FILE,
        f.file(PROFILE_D_FILE),
        format!("# Written by rvl setup: Vulkan apps use rvl's panvk, not the distro's panfrost ICD.\nexport {DRIVER_FILES_VAR}={ICD_FILE}\n"),
        0o644,
    ));
    out.summary = format!(
        "register rvl's panvk ({ICD_FILE}) and make the loader pick it ({DRIVER_FILES_VAR})"
    );
    Ok(out)
}

/// `render:x:105:a,b` with `user` added; None when there is no render group or it has the user.
pub fn add_to_group_line(text: &str, group: &str, user: &str) -> Option<String> {
    let mut changed = false;
    let mut out = String::with_capacity(text.len() + user.len() + 1);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        let ending = &line[body.len()..];
        let fields: Vec<&str> = body.split(':').collect();
        if fields.len() == 4 && fields[0] == group {
            let members: Vec<&str> = fields[3].split(',').filter(|m| !m.is_empty()).collect();
            if members.contains(&user) {
                return None;
            }
            let sep = if members.is_empty() { "" } else { "," };
            out.push_str(&format!("{body}{sep}{user}{ending}"));
            changed = true;
        } else {
            out.push_str(line);
        }
    }
    changed.then_some(out)
}

/// Why the access step has no user to add.
enum Who {
    /// It cannot tell which (a `--user` that the system does not have, several candidates).
    Blocked(String, String),
    /// Nobody to add: a note, not a failure.
    Note(String),
}

/// The accounts a person logs in with: uid 1000 to 59999 (Debian's range for them), a shell
/// that is not `nologin` or `false`.
pub fn login_users(passwd: &str) -> Vec<String> {
    passwd
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            let uid: u32 = f.get(2)?.parse().ok()?;
            let shell = f.get(6).copied().unwrap_or("");
            let login = !shell.ends_with("nologin") && !shell.ends_with("/false");
            ((1000..60000).contains(&uid) && login && !f[0].is_empty()).then(|| f[0].to_string())
        })
        .collect()
}

/// Whose access the step grants: `--user NAME` (which the system's passwd must list); on the
/// running system the person behind `sudo`; in an image its own login user, when it has
/// exactly one. Never this machine's `SUDO_USER` for an image: that person is not the image's.
fn access_user(ctx: &Ctx) -> Result<String, Who> {
    let passwd = ctx.facts.file(PASSWD_FILE);
    let users = passwd.map(login_users).unwrap_or_default();
    let hint = &ctx.opts.hint;
    let listed =
        |name: &str| passwd.is_some_and(|p| p.lines().any(|l| l.split(':').next() == Some(name)));
    if let Some(name) = &ctx.opts.user {
        if !listed(name) {
            return Err(Who::Blocked(
                format!("--user {name}: {PASSWD_FILE} of this system has no such user"),
                format!(
                    "create the user first, or name one it has{}",
                    if users.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", users.join(", "))
                    }
                ),
            ));
        }
        return Ok(name.clone());
    }
    if !hint.is_image() {
        return ctx.facts.invoking_user.clone().ok_or_else(|| {
            Who::Note(format!(
                "access: no invoking user to add to the `render` group (run setup with sudo from your account, or name one: {})",
                hint.setup("--only access --user NAME")
            ))
        });
    }
    match users.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Who::Note(format!(
            "access: this image has no login user (uid 1000 or above in {PASSWD_FILE}) to add to the `render` group; after creating one: {}",
            hint.setup("--only access --user NAME")
        ))),
        several => Err(Who::Blocked(
            format!(
                "this image has several login users ({}); which one uses the GPU?",
                several.join(", ")
            ),
            hint.setup(&format!(
                "--only access --user {}",
                crate::shell::quote(&several[0])
            )),
        )),
    }
}

pub fn access(ctx: &Ctx) -> anyhow::Result<Planned> {
    let mut out = Planned::default();
    out.notes.push(
        "access: over ssh without a login session, Vulkan tools print `XDG_RUNTIME_DIR not set`; \
         run `export XDG_RUNTIME_DIR=/run/user/$(id -u)` (a warning only; render-node access is what matters)"
            .into(),
    );
    let user = match access_user(ctx) {
        Ok(u) => u,
        Err(Who::Blocked(why, fix)) => return Ok(Planned::blocked(why, fix)),
        Err(Who::Note(note)) => {
            out.notes.push(note);
            return Ok(out);
        }
    };
    let user = user.as_str();
    let Some(group) = ctx.facts.file(GROUP_FILE) else {
        out.notes.push(format!(
            "access: {GROUP_FILE} is not readable; add {user} to `render` by hand"
        ));
        return Ok(out);
    };
    let has_group = group.lines().any(|l| l.split(':').next() == Some("render"));
    if !has_group {
        out.notes.push("access: there is no `render` group on this system; render nodes belong to another group".into());
        return Ok(out);
    }
    if let Some(new) = add_to_group_line(group, "render", user) {
        out.actions
            .extend(write(GROUP_FILE, Some(group), new, 0o644));
        if let Some(gs) = ctx.facts.file(GSHADOW_FILE) {
            if let Some(new) = add_to_group_line(gs, "render", user) {
                out.actions
                    .extend(write(GSHADOW_FILE, Some(gs), new, 0o640));
            }
        }
        out.summary = format!(
            "add {user} to the `render` group (open /dev/dri/renderD* without root; log in again)"
        );
    }
    Ok(out)
}

pub fn llama_cpp(ctx: &Ctx) -> anyhow::Result<Planned> {
    let mut out = Planned::default();
    let Some(src) = llama_source(ctx.manifest) else {
        if ctx.opts.named("llama-cpp") {
            return Err(Error::Manifest("manifest: no `llama.cpp` source is pinned".into()).into());
        }
        out.notes
            .push("llama-cpp: skipped, the manifest pins no llama.cpp source".into());
        return Ok(out);
    };
    let prefix = prefix_for("llama.cpp", &src.version);
    // Planned even when the build is there, so a removed or stale wrapper comes back.
    let wrappers: Vec<Action> = LLAMA_WRAPPERS
        .iter()
        .filter_map(|(path, binary)| {
            write(
                path,
                ctx.facts.file(path),
                llama_wrapper(&prefix, binary),
                0o755,
            )
        })
        .collect();
    let names = LLAMA_WRAPPERS.map(|(p, _)| p).join(" and ");
    if ctx.facts.is_present(&format!("{prefix}/{BUILD_STAMP}")) {
        if !wrappers.is_empty() {
            let missing: Vec<&str> = wrappers
                .iter()
                .filter_map(|w| match w {
                    Action::WriteFile { path, .. } => Some(path.as_str()),
                    _ => None,
                })
                .collect();
            out.summary = format!("put {} on PATH for {prefix}", missing.join(" and "));
            out.actions.extend(wrappers);
        }
        return Ok(out);
    }
    if src.build != BuildSystem::Cmake {
        return Err(Error::Manifest("manifest: llama.cpp must be built with cmake".into()).into());
    }
    let patches = patch_names(ctx, "llama.cpp");
    out.summary = format!(
        "build llama.cpp {} with Vulkan ({} patch{}; {}) into {prefix}, and put {names} on PATH",
        src.version,
        patches.len(),
        if patches.len() == 1 { "" } else { "es" },
        LLAMA_BINARIES.join(", ")
    );
    out.actions.push(build_action(
        "llama.cpp",
        src,
        &prefix,
        LLAMA_OPTIONS,
        patches,
    ));
    out.actions.extend(wrappers);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_edit_appends_and_is_idempotent() {
        let g = "root:x:0:\nvideo:x:44:bob\nrender:x:105:\nusers:x:100:\n";
        let new = add_to_group_line(g, "render", "alice").unwrap();
        assert_eq!(
            new,
            "root:x:0:\nvideo:x:44:bob\nrender:x:105:alice\nusers:x:100:\n"
        );
        assert_eq!(add_to_group_line(&new, "render", "alice"), None);
        let two = add_to_group_line(&new, "render", "bob").unwrap();
        assert!(two.contains("render:x:105:alice,bob\n"));
        assert_eq!(add_to_group_line("video:x:44:\n", "render", "a"), None);
    }

    #[test]
    fn a_quote_in_the_prefix_stays_inside_the_wrappers_one_exec_word() {
        let w = llama_wrapper("/opt/rvl/llama.cpp-1'; reboot; '", "llama-server");
        assert!(
            w.ends_with(
                "exec '/opt/rvl/llama.cpp-1'\\''; reboot; '\\''/bin/llama-server' \"$@\"\n"
            ),
            "{w}"
        );
        assert!(w.starts_with("#!/bin/sh\n"), "{w}");
    }

    #[test]
    fn icd_points_into_the_prefix() {
        let j: serde_json::Value =
            serde_json::from_str(&icd_json("/opt/rvl/mesa-1-rvl1", "1.4.354")).unwrap();
        assert_eq!(
            j["ICD"]["library_path"],
            "/opt/rvl/mesa-1-rvl1/lib/libvulkan_panfrost.so"
        );
    }

    #[test]
    fn a_quote_in_the_prefix_cannot_rewrite_the_icds_library_path() {
        let prefix = r#"/opt/rvl/mesa-1", "library_path": "/tmp/evil.so"#;
        let j: serde_json::Value = serde_json::from_str(&icd_json(prefix, "1.4.354")).unwrap();
        assert_eq!(
            j["ICD"]["library_path"],
            format!("{prefix}/lib/libvulkan_panfrost.so")
        );
        assert_eq!(j["ICD"].as_object().unwrap().len(), 3);
    }

    #[test]
    fn the_doctor_reads_setups_icd_as_panvk_where_the_loader_looks() {
        let parsed =
            crate::icd::parse_manifest(&icd_json("/opt/rvl/mesa-1-rvl1", "1.4.354")).unwrap();
        assert!(crate::icd::is_panvk(&parsed.library_path));
        let (dir, _) = ICD_FILE.rsplit_once('/').unwrap();
        let search = crate::icd::search_path(&crate::host::env::Env::default());
        assert!(search.entries.iter().any(|e| e == dir), "{search:?}");
    }
}
