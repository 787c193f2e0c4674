//! Build an [`Inventory`] from a [`Root`]: every read the doctor needs, done once, in one place;
//! and [`setup_facts`], the same readers over the files setup's planner names.
//! Nothing here decides whether something is good or bad; that is `doctor/`'s and setup's job.

use std::collections::BTreeMap;

use std::io::Read;

use super::env::Env;
use super::kernel::CONFIG_CAP;
use super::{devicetree, initramfs, live, sysfs, Root};
use crate::bootcfg::{armbian, extlinux, ubootmenu};
use crate::firmware::{self, Compression, FirmwareFacts, FirmwareFile, InitramfsFacts};
use crate::icd::{self, IcdFacts, ManifestFile};
use crate::inventory::{
    ArmbianFacts, BootEntry, BootFacts, ExtlinuxFacts, GpuFacts, Inventory, KernelConfigFacts,
    KernelFacts, SetupFacts, UbootMenuFacts,
};
use crate::kernelcfg::{KernelConfig, PANTHOR_FRAGMENT};
use crate::profile::BootLayout;

/// Biggest firmware image read (real ones are ~280 KiB).
const FIRMWARE_CAP: u64 = 16 << 20;
/// Directories where a bare library name (`libvulkan_panfrost.so`) is looked up.
const LIB_DIRS: &[&str] = &[
    "/usr/local/lib/aarch64-linux-gnu",
    "/usr/local/lib",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/aarch64-linux-gnu",
    "/lib",
];

pub struct GatherOptions<'a> {
    /// Firmware name panthor requests for this board's GPU.
    pub firmware: &'a str,
    /// Run the live probes (only when the root is "/").
    pub live: bool,
    /// Also load Vulkan (live only).
    pub vulkan: bool,
    /// Load this libvulkan instead of the system's (`RVL_VULKAN_LIBRARY`).
    pub vulkan_library: Option<&'a std::path::Path>,
    /// Also run the newest rvl llama.cpp's `llama-bench --list-devices` (live only).
    pub llama_devices: bool,
}

pub fn gather(root: &Root, env: &Env, opts: &GatherOptions) -> Inventory {
    let kernel = kernel(root);
    let render_nodes = sysfs::render_nodes(root);
    let live = opts.live && root.is_live();
    let live_facts = if live {
        let vulkan = opts.vulkan.then_some(live::VulkanLoad {
            library: opts.vulkan_library,
        });
        live::probe(
            root,
            &render_nodes,
            live::ProbeEnv {
                xdg_runtime_dir: env.get("XDG_RUNTIME_DIR"),
                sudo_user: env.get("SUDO_USER"),
            },
            vulkan,
        )
    } else {
        Default::default()
    };
    let panthor_builtin = kernel
        .config
        .as_ref()
        .is_some_and(|c| c.get("CONFIG_DRM_PANTHOR") == "y");
    let gpus = sysfs::platform_gpus(root);
    let mut inv = Inventory {
        live,
        devicetree: devicetree::read(root),
        gpu: GpuFacts {
            devfreq: gpus
                .iter()
                .filter_map(|g| super::devfreq::read(root, &g.name))
                .collect(),
            devices: gpus,
            dev_mali0: root.symlink_metadata("/dev/mali0").is_ok()
                || root.exists("/sys/class/misc/mali0"),
        },
        firmware: firmware_facts(
            root,
            kernel.release.as_deref(),
            opts.firmware,
            panthor_builtin,
        ),
        vulkan_icd: icd_facts(root, env),
        boot: boot_facts(root),
        render_nodes,
        kernel,
        env: env.clone(),
        llama: Default::default(),
        mesa: Default::default(),
        os: os_release(root),
        live_facts,
    };
    // After the rest: which environment the binaries get depends on the ICD and live facts.
    inv.llama = super::llama::facts(root, &inv);
    inv.mesa = super::mesa::facts(root);
    if opts.llama_devices {
        let bench = crate::llama::newest(&inv.llama)
            .filter(|i| i.bench_executable)
            .map(|i| i.bench());
        if let Some(bench) = bench {
            inv.llama.list_devices = super::llama::list_devices(root, &inv, &bench);
        }
    }
    inv
}

/// `/etc/os-release` (a link to `../usr/lib/os-release` on most images, followed inside the
/// root), capped: the file is a few hundred bytes.
fn os_release(root: &Root) -> Option<crate::inventory::OsFacts> {
    let bytes = root.read_capped("/etc/os-release", 64 * 1024).ok()?;
    let o = crate::osrelease::parse(&String::from_utf8_lossy(&bytes));
    Some(crate::inventory::OsFacts {
        id: o.id,
        version_id: o.version_id,
        pretty_name: o.pretty_name,
    })
}

fn kernel(root: &Root) -> KernelFacts {
    let (release, release_error) = match super::kernel::read_release(root) {
        Ok(r) => (r, None),
        Err(e) => (None, Some(e)),
    };
    KernelFacts {
        config: kernel_config(root, release.as_deref()),
        modules: sysfs::gpu_modules(root),
        kbase_version: sysfs::kbase_version(root),
        release,
        release_error,
    }
}

/// The options the checks read: the fragment's, and the firmware loader's.
fn interesting_option(name: &str) -> bool {
    name.starts_with("CONFIG_FW_LOADER")
        || name == "CONFIG_EXTRA_FIRMWARE"
        || name == "CONFIG_DRM_PANFROST"
        || name.starts_with("CONFIG_MALI")
}

fn kernel_config(root: &Root, release: Option<&str>) -> Option<KernelConfigFacts> {
    let fragment = KernelConfig::parse(PANTHOR_FRAGMENT);
    let from_gz = || {
        let gz = root.read_capped("/proc/config.gz", CONFIG_CAP).ok()?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .take(CONFIG_CAP)
            .read_to_string(&mut text)
            .ok()?;
        Some(("/proc/config.gz".to_string(), text))
    };
    let from_boot = || super::kernel::boot_config(root, release?);
    let (source, text) = from_gz().or_else(from_boot)?;
    let config = KernelConfig::parse(&text);
    let options = config
        .options
        .into_iter()
        .filter(|(k, _)| fragment.options.contains_key(k) || interesting_option(k))
        .collect();
    Some(KernelConfigFacts { source, options })
}

/// Read a firmware file, decompressed, with its size, hash and header verdict.
fn firmware_file(root: &Root, path: &str, compression: Compression) -> FirmwareFile {
    let mut file = FirmwareFile {
        path: path.to_string(),
        compression,
        size: None,
        sha256: None,
        header: None,
        error: None,
    };
    let image = root
        .read_capped(path, FIRMWARE_CAP)
        .map_err(|e| format!("cannot read: {e}"))
        .and_then(|raw| decompress(&raw, compression));
    match image {
        Ok(bytes) => {
            file.size = Some(bytes.len() as u64);
            file.sha256 = Some(crate::digest::sha256_hex(&bytes));
            match firmware::CsfHeader::parse(&bytes) {
                Ok(h) => file.header = Some(h),
                Err(e) => file.error = Some(e.to_string()),
            }
        }
        Err(e) => file.error = Some(e),
    }
    file
}

/// Decompress a firmware image the way the kernel's loader would (size-capped).
pub fn decompress(raw: &[u8], compression: Compression) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let res = match compression {
        Compression::None => return Ok(raw.to_vec()),
        // ruzstd's errors print as Rust debug values; a person needs the sentence.
        Compression::Zstd => ruzstd::decoding::StreamingDecoder::new(raw)
            .map_err(|_| {
                "the zstd frame header is missing or damaged (not a .zst file?)".to_string()
            })
            .and_then(|d| {
                d.take(FIRMWARE_CAP)
                    .read_to_end(&mut out)
                    .map_err(|_| "the zstd data is damaged or cut short".to_string())
            }),
        Compression::Xz => xz2::read::XzDecoder::new(raw)
            .take(FIRMWARE_CAP)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string()),
    };
    res.map(|_| out)
        .map_err(|e| format!("cannot decompress: {e}"))
}

fn firmware_facts(
    root: &Root,
    release: Option<&str>,
    wanted: &str,
    panthor_builtin: bool,
) -> FirmwareFacts {
    let class_path = root
        .read_capped("/sys/module/firmware_class/parameters/path", 4096)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string());
    let search_dirs = firmware::search_dirs(release, class_path.as_deref());
    let wanted = wanted.trim_start_matches('/');
    let found = firmware::SUFFIXES.iter().find_map(|(suffix, comp)| {
        search_dirs.iter().find_map(|dir| {
            let path = format!("{dir}/{wanted}{suffix}");
            root.metadata(&path)
                .is_ok_and(|m| m.is_file())
                .then(|| firmware_file(root, &path, *comp))
        })
    });

    // Same file name in the other arch directories: the classic "copied to arch10.10" mistake.
    let (wanted_dir, wanted_name) = wanted.rsplit_once('/').unwrap_or(("", wanted));
    let mut other_arch = Vec::new();
    if let Some(mali_dir) = wanted_dir.rsplit_once('/').map(|(d, _)| d) {
        let base = firmware::standard_path(mali_dir);
        for arch in root.list_dir(&base).unwrap_or_default() {
            if format!("{mali_dir}/{arch}") == wanted_dir {
                continue;
            }
            for (suffix, comp) in firmware::SUFFIXES {
                let path = format!("{base}/{arch}/{wanted_name}{suffix}");
                if root.metadata(&path).is_ok_and(|m| m.is_file()) {
                    other_arch.push(firmware_file(root, &path, *comp));
                }
            }
        }
    }

    FirmwareFacts {
        wanted: wanted.to_string(),
        search_dirs,
        found,
        other_arch,
        vendor_flat: root.exists(firmware::VENDOR_FLAT_PATH),
        initramfs: panthor_builtin.then(|| initramfs_facts(root, release, wanted)),
    }
}

/// Candidate initramfs images of a release, in the naming schemes distros use.
fn initramfs_candidates(release: Option<&str>) -> Vec<String> {
    let mut c = Vec::new();
    if let Some(r) = release.filter(|r| !r.contains('/')) {
        c.push(format!("/boot/initrd.img-{r}"));
        c.push(format!("/boot/initramfs-{r}.img"));
        c.push(format!("/boot/uInitrd-{r}"));
    }
    c.push("/boot/uInitrd".to_string());
    c.push("/boot/initrd.img".to_string());
    c
}

fn initramfs_facts(root: &Root, release: Option<&str>, wanted: &str) -> InitramfsFacts {
    let Some(path) = initramfs_candidates(release)
        .into_iter()
        .find(|p| root.metadata(p).is_ok_and(|m| m.is_file()))
    else {
        return InitramfsFacts {
            path: None,
            has_firmware: false,
            error: Some("no initramfs image found in /boot".to_string()),
        };
    };
    let result = root
        .resolve(&path)
        .and_then(std::fs::File::open)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            initramfs::find_any(std::io::BufReader::new(f), |name| {
                let name = name.trim_start_matches("./");
                // initramfs-tools copies firmware to its rootfs path (updates/ included).
                name.contains("lib/firmware/")
                    && firmware::SUFFIXES.iter().any(|(s, _)| {
                        name.strip_suffix(s)
                            .is_some_and(|n| n.ends_with(&format!("/{wanted}")))
                    })
            })
            .map_err(|e| e.to_string())
        });
    match result {
        Ok(has) => InitramfsFacts {
            path: Some(path),
            has_firmware: has,
            error: None,
        },
        Err(e) => InitramfsFacts {
            path: Some(path),
            has_firmware: false,
            error: Some(e),
        },
    }
}

/// Boot configuration files are small; anything bigger is not one.
const BOOT_CONF_CAP: u64 = 1 << 20;

/// The files an extlinux entry names that are not there. U-Boot reads them from the partition
/// holding extlinux.conf, which is `/boot` itself when /boot is a partition of its own: a path
/// counts as present under either reading.
fn missing_boot_files(root: &Root, e: &extlinux::Entry) -> Vec<String> {
    let present = |p: &str, dir: bool| {
        let at = |q: &str| if dir { root.is_dir(q) } else { root.exists(q) };
        at(p) || at(&format!("/boot/{}", p.trim_start_matches('/')))
    };
    [
        ("linux", &e.linux, false),
        ("initrd", &e.initrd, false),
        ("fdt", &e.fdt, false),
        ("fdtdir", &e.fdtdir, true),
    ]
    .into_iter()
    .filter_map(|(k, p, dir)| p.as_deref().map(|p| (k, p, dir)))
    .filter(|(_, p, dir)| !present(p, *dir))
    .map(|(k, p, _)| format!("{k} {p}"))
    .collect()
}

fn boot_facts(root: &Root) -> BootFacts {
    let entry = |e: &extlinux::Entry| BootEntry {
        label: e.label.clone(),
        linux: e.linux.clone(),
        release: e.kernel_release(),
        line: e.line,
        fdtoverlays: e.fdtoverlays.clone(),
        missing: missing_boot_files(root, e),
    };
    let read = root.read_capped(ubootmenu::EXTLINUX_CONF, BOOT_CONF_CAP);
    // There but unreadable is a finding of its own, never "not found".
    let extlinux_error = match &read {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Some(format!(
            "cannot read {}: {}",
            ubootmenu::EXTLINUX_CONF,
            super::root::describe(e)
        )),
        _ => None,
    };
    let extlinux = read.ok().map(|b| {
        let conf = extlinux::Extlinux::parse(&String::from_utf8_lossy(&b));
        ExtlinuxFacts {
            path: ubootmenu::EXTLINUX_CONF.to_string(),
            default_label: conf.default_label().map(str::to_string),
            default_entry: conf.default_entry().map(entry),
            entries: conf.entries().iter().map(entry).collect(),
        }
    });
    let uboot_menu = super::boot::uboot_menu_installed(root).then(|| {
        let menu = super::boot::uboot_menu(root);
        let setting = menu.get("U_BOOT_DEFAULT");
        UbootMenuFacts {
            default_label: menu.default_label().to_string(),
            default_from: setting.map(|s| format!("{}:{}", s.file, s.assignment.line)),
            default_known: setting
                .is_none_or(|s| s.assignment.literal && !s.assignment.conditional),
            kernels: super::boot::installed_kernels(root),
            fdt_overlays: menu
                .get("U_BOOT_FDT_OVERLAYS")
                .map(|s| s.assignment.value.clone()),
        }
    });
    let armbian = root
        .read_capped(armbian::ARMBIAN_ENV, BOOT_CONF_CAP)
        .ok()
        .map(|b| {
            let env = armbian::ArmbianEnv::parse(&String::from_utf8_lossy(&b));
            let image = root
                .read_link("/boot/Image")
                .ok()
                .map(|t| t.display().to_string());
            ArmbianFacts {
                overlays: env.overlays(),
                user_overlays: env.list("user_overlays"),
                overlay_prefix: env.get("overlay_prefix").map(str::to_string),
                fdtfile: env.get("fdtfile").map(str::to_string),
                image_release: image
                    .as_deref()
                    .and_then(extlinux::release_from_kernel_path),
                image_missing: image.is_some() && !root.exists("/boot/Image"),
                image,
            }
        });
    BootFacts {
        extlinux,
        extlinux_error,
        uboot_menu,
        armbian,
    }
}

/// The ICD manifests the loader would read under `env` (doctor's, and smoke-bench --gguf's
/// "which panvk runs llama.cpp").
pub fn icd_facts(root: &Root, env: &Env) -> IcdFacts {
    let search = icd::search_path(env);
    let mut manifests: Vec<ManifestFile> = Vec::new();
    // A set, not a list: an image can hold thousands of manifests, and a linear look-up per
    // file made this quadratic.
    let mut seen: std::collections::HashSet<std::path::PathBuf> = Default::default();
    let mut visit = |path: String| {
        // The same file reached through two directories is read once, like the loader does.
        let canon = root
            .canonicalize(&path)
            .unwrap_or_else(|_| path.clone().into());
        if !seen.insert(canon) {
            return;
        }
        manifests.push(manifest_file(root, &path));
    };
    for entry in &search.entries {
        if root.is_dir(entry) {
            for name in root.list_dir(entry).unwrap_or_default() {
                if name.ends_with(".json") {
                    visit(format!("{}/{name}", entry.trim_end_matches('/')));
                }
            }
        } else if root.symlink_metadata(entry).is_ok() || search.mode == icd::SearchMode::Override {
            visit(entry.clone());
        }
    }
    IcdFacts {
        search: Some(search),
        manifests,
    }
}

fn manifest_file(root: &Root, path: &str) -> ManifestFile {
    let parsed = root
        .read_capped(path, 1 << 20)
        .map_err(|e| format!("cannot read: {e}"))
        .and_then(|b| icd::parse_manifest(&String::from_utf8_lossy(&b)));
    match parsed {
        Ok(m) => ManifestFile {
            path: path.to_string(),
            library_found: find_library(root, path, &m.library_path),
            manifest: Some(m),
            error: None,
        },
        Err(e) => ManifestFile {
            path: path.to_string(),
            manifest: None,
            library_found: None,
            error: Some(e),
        },
    }
}

/// Where the loader would find a manifest's library: absolute paths as given (in the root),
/// paths with a slash relative to the manifest, bare names through the linker's directories.
fn find_library(root: &Root, manifest: &str, lib: &str) -> Option<String> {
    let candidates: Vec<String> = if lib.starts_with('/') {
        vec![lib.to_string()]
    } else if lib.contains('/') {
        let dir = manifest.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        vec![format!("{dir}/{lib}")]
    } else {
        LIB_DIRS.iter().map(|d| format!("{d}/{lib}")).collect()
    };
    candidates
        .into_iter()
        .find(|c| root.metadata(c).is_ok_and(|m| m.is_file()))
}

/// What setup's planner asks to be read (all in-root paths), named by setup.
#[derive(Debug, Clone, Default)]
pub struct SetupProbe {
    /// Files read whole (those the planner may edit).
    pub texts: Vec<String>,
    /// Links whose targets matter.
    pub links: Vec<String>,
    /// Files compared by the sha256 of their raw bytes (firmware).
    pub hashes: Vec<String>,
    /// Paths whose existence matters (install stamps).
    pub present: Vec<String>,
    /// Directories whose every entry counts as present (`/boot`, `/boot/dtbo`).
    pub listed_dirs: Vec<String>,
    /// `SUDO_USER`, from the settings.
    pub sudo_user: Option<String>,
}

/// Biggest file setup hashes (firmware images are ~280 KiB).
const HASH_CAP: u64 = 64 << 20;

/// Read everything setup's planner needs.
pub fn setup_facts(root: &Root, probe: &SetupProbe) -> SetupFacts {
    let installed_kernels = super::boot::installed_kernels(root);
    let layout = super::boot::layout(root);
    SetupFacts {
        running_kernel: super::kernel::running_release(root),
        menu: (layout == Some(BootLayout::UBootMenu)).then(|| super::boot::uboot_menu(root)),
        layout,
        files: texts(root, &probe.texts),
        links: links(root, &probe.links),
        hashes: hashes(root, &probe.hashes),
        present: present(root, &probe.present, &probe.listed_dirs),
        panthor_config: panthor_config(root, &installed_kernels),
        installed_kernels,
        invoking_user: probe
            .sudo_user
            .clone()
            .filter(|u| !u.is_empty() && u != "root"),
        apt_policy: None,
    }
}

fn texts(root: &Root, paths: &[String]) -> BTreeMap<String, Option<String>> {
    paths
        .iter()
        .map(|p| (p.clone(), root.read_string(p).ok()))
        .collect()
}

fn links(root: &Root, paths: &[String]) -> BTreeMap<String, Option<String>> {
    paths
        .iter()
        .map(|p| {
            let target = root
                .read_link(p)
                .ok()
                .map(|t| t.to_string_lossy().into_owned());
            (p.clone(), target)
        })
        .collect()
}

/// The raw bytes at the exact path setup would replace, not the doctor's decompressed image
/// from the loader's whole search: setup compares the file it installs byte for byte.
fn hashes(root: &Root, paths: &[String]) -> BTreeMap<String, Option<String>> {
    paths
        .iter()
        .map(|p| {
            let hash = root
                .read_capped(p, HASH_CAP)
                .ok()
                .map(|d| crate::digest::sha256_hex(&d));
            (p.clone(), hash)
        })
        .collect()
}

fn present(root: &Root, paths: &[String], listed_dirs: &[String]) -> BTreeMap<String, bool> {
    let mut present: BTreeMap<String, bool> =
        paths.iter().map(|p| (p.clone(), root.exists(p))).collect();
    for dir in listed_dirs {
        for n in root.list_dir(dir).unwrap_or_default() {
            present.insert(format!("{}/{n}", dir.trim_end_matches('/')), true);
        }
    }
    present
}

/// `CONFIG_DRM_PANTHOR` of each installed release, from its /boot config. Setup boots an
/// installed kernel, not necessarily the running one, so never /proc/config.gz (that is the
/// running kernel's, which the doctor judges).
fn panthor_config(root: &Root, releases: &[String]) -> BTreeMap<String, Option<String>> {
    releases
        .iter()
        .map(|r| {
            let value = super::kernel::boot_config(root, r).and_then(|(_, text)| {
                KernelConfig::parse(&text)
                    .options
                    .remove("CONFIG_DRM_PANTHOR")
            });
            (r.clone(), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn firmware_decompresses_zstd_and_xz() {
        let image = b"\x6e\x3a\xf1\xc3 pretend firmware image".to_vec();
        let zst = ruzstd::encoding::compress_to_vec(
            &image[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(decompress(&zst, Compression::Zstd).unwrap(), image);
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&image).unwrap();
        assert_eq!(
            decompress(&xz.finish().unwrap(), Compression::Xz).unwrap(),
            image
        );
        let bad = decompress(b"not zstd", Compression::Zstd).unwrap_err();
        assert!(bad.starts_with("cannot decompress"), "{bad}");
        assert!(
            !bad.contains("Error {") && !bad.contains("kind:"),
            "a debug value: {bad}"
        );
        let cut = decompress(&zst[..zst.len() / 2], Compression::Zstd).unwrap_err();
        assert!(
            !cut.contains("Error {") && !cut.contains("kind:"),
            "a debug value: {cut}"
        );
        assert!(decompress(b"not xz", Compression::Xz).is_err());
    }

    #[test]
    fn library_lookup_follows_the_loader_rules() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        std::fs::create_dir_all(b.join("usr/lib/aarch64-linux-gnu")).unwrap();
        std::fs::write(
            b.join("usr/lib/aarch64-linux-gnu/libvulkan_panfrost.so"),
            b"",
        )
        .unwrap();
        std::fs::create_dir_all(b.join("opt/icd/lib")).unwrap();
        std::fs::write(b.join("opt/icd/lib/libx.so"), b"").unwrap();
        let root = Root::new(b);
        let m = "/usr/share/vulkan/icd.d/a.json";
        assert_eq!(
            find_library(&root, m, "libvulkan_panfrost.so").as_deref(),
            Some("/usr/lib/aarch64-linux-gnu/libvulkan_panfrost.so")
        );
        assert_eq!(
            find_library(&root, "/opt/icd/x.json", "lib/libx.so").as_deref(),
            Some("/opt/icd/lib/libx.so")
        );
        assert_eq!(find_library(&root, m, "/usr/lib/nope.so"), None);
    }
}
