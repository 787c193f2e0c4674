//! The files a bug report carries, read through the root (capped, non-blocking reads, links
//! resolved inside it). Every item that could not be collected is kept with the reason, so
//! the report says what is missing instead of silently leaving it out.

use std::io;
use std::path::Path;

use crate::host::Root;

/// A file of the bundle: its name inside the archive and its (not yet redacted) contents.
#[derive(Debug, Clone)]
pub struct Item {
    pub name: String,
    pub data: Vec<u8>,
    /// Where it came from, for the listing (`/boot/extlinux/extlinux.conf`, `dmesg`).
    pub source: String,
    /// Seconds since the epoch: the file's own modification time when it is a file of the
    /// system; None for what the report made (dated when the bundle is written).
    pub mtime: Option<u64>,
}

/// Something the report looked for and did not take, with why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub what: String,
    pub why: String,
}

#[derive(Debug, Default)]
pub struct Collection {
    pub items: Vec<Item>,
    pub skipped: Vec<Skipped>,
}

/// Largest single file taken whole; boot configs, ICDs and JSON are far smaller.
const FILE_CAP: u64 = 1 << 20;
/// Build logs can be tens of MiB; the tail is what shows the failure.
const LOG_CAP: u64 = 64 << 20;
pub const LOG_TAIL_LINES: usize = 200;

/// dmesg lines worth a GPU bug report.
const DMESG_WORDS: &[&str] = &["panthor", "mali", "drm", "firmware", "panfrost", "gpu"];

/// Boot configuration files of every layout rvl knows.
const BOOT_FILES: &[&str] = &[
    "/boot/extlinux/extlinux.conf",
    "/boot/armbianEnv.txt",
    "/etc/default/u-boot",
];
const BOOT_DIRS: &[(&str, &str)] = &[("/etc/u-boot-menu/conf.d", ".conf")];

/// Directories the Vulkan loader reads ICD manifests from, system-wide.
const ICD_DIRS: &[&str] = &[
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
    "/usr/share/vulkan/icd.d",
];

impl Collection {
    pub fn add(&mut self, name: impl Into<String>, source: impl Into<String>, data: Vec<u8>) {
        self.items.push(Item {
            name: name.into(),
            data,
            source: source.into(),
            mtime: None,
        });
    }

    /// [`Collection::add`] for a file of the system, dated as the file is.
    fn add_dated(&mut self, root: &Root, in_root: &str, name: String, data: Vec<u8>) {
        let mtime = root
            .metadata(in_root)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        self.add(name, in_root, data);
        if let Some(last) = self.items.last_mut() {
            last.mtime = mtime;
        }
    }

    pub fn skip(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skipped {
            what: what.into(),
            why: why.into(),
        });
    }

    /// Take one file whole; a missing file is noted as such, any other failure with its error.
    pub fn file(&mut self, root: &Root, in_root: &str, name: &str) {
        match root.read_capped(in_root, FILE_CAP) {
            Ok(data) => self.add_dated(root, in_root, name.to_string(), data),
            Err(e) => self.skip(in_root, why(&e)),
        }
    }

    /// A file of the system, stored under `files/` at its own path (`files/boot/...`).
    pub fn system_file(&mut self, root: &Root, in_root: &str) {
        self.file(root, in_root, &format!("files{in_root}"));
    }

    /// Every file ending in `suffix` in a directory.
    pub fn dir(&mut self, root: &Root, dir: &str, suffix: &str) {
        let names = match root.list_dir(dir) {
            Ok(names) => names,
            Err(e) => return self.skip(dir, why(&e)),
        };
        for n in names.iter().filter(|n| n.ends_with(suffix)) {
            self.system_file(root, &format!("{dir}/{n}"));
        }
    }

    /// The last [`LOG_TAIL_LINES`] lines of a file.
    pub fn tail(&mut self, root: &Root, in_root: &str, name: &str) {
        match root.read_capped(in_root, LOG_CAP) {
            Ok(data) => self.add_dated(
                root,
                in_root,
                name.to_string(),
                last_lines(&data, LOG_TAIL_LINES),
            ),
            Err(e) => self.skip(in_root, why(&e)),
        }
    }
}

/// Kernel command line, loaded modules, the release (it decides whether Mesa can be built),
/// boot configuration, ICD manifests.
pub fn system_files(root: &Root, c: &mut Collection) {
    for f in [
        "/proc/cmdline",
        "/proc/modules",
        "/proc/sys/kernel/osrelease",
    ] {
        c.system_file(root, f);
    }
    // os-release(5): /etc's, else the vendor's copy it usually links to.
    if root.exists("/etc/os-release") {
        c.system_file(root, "/etc/os-release");
    } else {
        c.system_file(root, "/usr/lib/os-release");
    }
    for f in BOOT_FILES {
        c.system_file(root, f);
    }
    for (dir, suffix) in BOOT_DIRS {
        c.dir(root, dir, suffix);
    }
    for dir in ICD_DIRS {
        c.dir(root, dir, ".json");
    }
}

/// Setup's journal, its applied state and the tails of its build logs.
pub fn setup_files(root: &Root, state_dir: &str, c: &mut Collection) {
    c.system_file(root, &format!("{state_dir}/state.json"));
    let journal = format!("{state_dir}/journal.json");
    if root.exists(&journal) {
        c.system_file(root, &journal);
    }
    let logs = format!("{state_dir}/logs");
    match root.list_dir(&logs) {
        Ok(names) => {
            for n in names.iter().filter(|n| n.ends_with(".log")) {
                let path = format!("{logs}/{n}");
                c.tail(root, &path, &format!("files{path}.tail"));
            }
        }
        Err(e) => c.skip(logs, why(&e)),
    }
}

/// The GPU-related kernel log lines. On the live system, from `dmesg` (root or
/// `kernel.dmesg_restrict=0` needed); in an image, from its saved logs.
pub fn kernel_log(root: &Root, c: &mut Collection) {
    if root.is_live() {
        match std::process::Command::new("dmesg").output() {
            Ok(out) if out.status.success() => {
                return c.add("dmesg.gpu-lines", "dmesg", gpu_lines(&out.stdout));
            }
            Ok(out) => c.skip(
                "dmesg",
                format!(
                    "dmesg failed ({}); run rvl report as root to include it",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ),
            Err(e) => c.skip("dmesg", format!("cannot run dmesg: {e}")),
        }
    }
    for log in ["/var/log/dmesg", "/var/log/kern.log"] {
        if root.exists(log) {
            match root.read_capped(log, LOG_CAP) {
                Ok(data) => {
                    c.add_dated(root, log, format!("files{log}.gpu-lines"), gpu_lines(&data))
                }
                Err(e) => c.skip(log, why(&e)),
            }
        }
    }
}

/// The installed packages of the GPU stack (names matched by [`STACK_PACKAGES`]), from dpkg's
/// database: `name version` per line.
pub fn packages(root: &Root, c: &mut Collection) {
    const STATUS: &str = "/var/lib/dpkg/status";
    match root.read_capped(STATUS, LOG_CAP) {
        Ok(data) => {
            let text = String::from_utf8_lossy(&data);
            let list = stack_packages(&text);
            c.add_dated(root, STATUS, "packages.txt".into(), list.into_bytes());
        }
        Err(e) => c.skip(format!("package versions ({STATUS})"), why(&e)),
    }
}

/// Package names (prefixes) whose versions a GPU bug report needs: Mesa and the Vulkan
/// loader, the kernel images, the firmware, the boot menu.
const STACK_PACKAGES: &[&str] = &[
    "mesa-",
    "libvulkan",
    "libgl1-mesa",
    "libegl-mesa",
    "libglx-mesa",
    "libdrm",
    "libgbm",
    "vulkan-tools",
    "linux-image-",
    "firmware-",
    "linux-firmware",
    "armbian-firmware",
    "u-boot-",
    "initramfs-tools",
    "rvl",
];

/// `name version` of every installed package of [`STACK_PACKAGES`] in a dpkg status file,
/// sorted.
pub fn stack_packages(status: &str) -> String {
    let mut out = Vec::new();
    for para in status.split("\n\n") {
        let field = |key: &str| {
            para.lines()
                .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
        };
        let (Some(name), Some(version)) = (field("Package:"), field("Version:")) else {
            continue;
        };
        let installed = field("Status:").is_some_and(|s| s.ends_with(" installed"));
        if installed && STACK_PACKAGES.iter().any(|p| name.starts_with(p)) {
            let arch = field("Architecture:").unwrap_or_default();
            out.push(format!("{name}:{arch} {version}"));
        }
    }
    out.sort();
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// A file outside the root the user named (`--bench FILE`).
pub fn outside_file(path: &Path, name: &str, c: &mut Collection) {
    match crate::host::root::read_regular(path, FILE_CAP) {
        Ok(data) => c.add(name, path.display().to_string(), data),
        Err(e) => c.skip(path.display().to_string(), why(&e)),
    }
}

/// Lines that mention the GPU stack, case-insensitively.
pub fn gpu_lines(log: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(log);
    let mut out = String::new();
    for line in text.lines() {
        let lower = line.to_ascii_lowercase();
        if DMESG_WORDS.iter().any(|w| lower.contains(w)) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.into_bytes()
}

fn last_lines(data: &[u8], n: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = lines[start..].join("\n");
    out.push('\n');
    out.into_bytes()
}

fn why(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "not present".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied (run as root)".to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_lines_keep_only_the_stack() {
        let log = b"[1.0] usb 1-1: new device\n[2.0] panthor fb000000.gpu: mali-g610 id 0xa867\n[3.0] [drm] Initialized panthor 1.3.0\n";
        let kept = String::from_utf8(gpu_lines(log)).unwrap();
        assert_eq!(kept.lines().count(), 2, "{kept}");
        assert!(!kept.contains("usb"));
    }

    #[test]
    fn stack_packages_lists_the_installed_gpu_stack_only() {
        let status = "Package: mesa-vulkan-drivers\nStatus: install ok installed\nArchitecture: arm64\nVersion: 22.3.6-1+deb12u1\n\n\
                      Package: bash\nStatus: install ok installed\nArchitecture: arm64\nVersion: 5.2.15-2\n\n\
                      Package: linux-image-6.1.0-rockchip\nStatus: deinstall ok config-files\nArchitecture: arm64\nVersion: 1\n\n\
                      Package: firmware-misc-nonfree\nStatus: install ok installed\nArchitecture: all\nVersion: 20230210-5\n";
        assert_eq!(
            stack_packages(status),
            "firmware-misc-nonfree:all 20230210-5\nmesa-vulkan-drivers:arm64 22.3.6-1+deb12u1\n"
        );
    }

    #[test]
    fn last_lines_keeps_the_tail() {
        let data = (1..=300).map(|i| format!("line {i}\n")).collect::<String>();
        let tail = String::from_utf8(last_lines(data.as_bytes(), 200)).unwrap();
        assert_eq!(tail.lines().count(), 200);
        assert!(tail.starts_with("line 101\n") && tail.ends_with("line 300\n"));
    }
}
