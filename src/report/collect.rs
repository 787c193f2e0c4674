//! The files a bug report carries, read through the root (capped, non-blocking reads, links
//! resolved inside it). Every item that could not be collected is kept with the reason, so
//! the report says what is missing instead of silently leaving it out.
//!
//! The bundle has a budget, so that a hostile or broken tree cannot make it (or rvl's memory)
//! grow without bound; every limit is arithmetic on sizes known before reading:
//! - a file is taken whole up to [`FILE_CAP`]; a larger one is left out, saying so;
//! - a log is tailed by lines *and* bytes ([`LOG_TAIL_LINES`], [`LOG_TAIL_BYTES`]): only its
//!   last bytes are read, and a line longer than that keeps its end;
//! - kernel-log lines are read from the last [`LOG_WINDOW`] of a log, a line at most
//!   [`MAX_LINE`] bytes, the matches kept within [`LOG_TAIL_BYTES`];
//! - at most [`DIR_FILES`] files of one directory (the first by name);
//! - at most [`BUNDLE_CAP`] bytes in all: what would pass it is left out.
//!
//! What was cut (a tail, a directory's rest, a file over the budget) is listed in the bundle's
//! index and in the report's output.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use crate::host::Root;

/// A file of the bundle: its name inside the archive and its (not yet redacted) contents.
#[derive(Debug, Clone)]
pub struct Item {
    pub name: String,
    pub data: Vec<u8>,
    /// Where it came from, for the listing (`/boot/extlinux/extlinux.conf`, `dmesg`).
    pub source: String,
    /// How it was cut to fit, if it was (`last 200 lines, 64 KiB of 64 MiB`).
    pub cut: Option<String>,
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
    /// Bytes taken so far (at most [`BUNDLE_CAP`]).
    pub bytes: u64,
}

/// Largest single file taken whole; boot configs, ICDs and JSON are far smaller.
pub const FILE_CAP: u64 = 1 << 20;
/// A log's tail: at most this many lines…
pub const LOG_TAIL_LINES: usize = 200;
/// …and at most this many bytes (one 64 MiB line is not a tail).
pub const LOG_TAIL_BYTES: u64 = 64 << 10;
/// How far back in a kernel log the GPU lines are looked for.
pub const LOG_WINDOW: u64 = 16 << 20;
/// A kernel-log line longer than this keeps its first bytes only.
pub const MAX_LINE: usize = 4 << 10;
/// Files of one directory (ICD manifests, u-boot-menu fragments, build logs).
pub const DIR_FILES: usize = 32;
/// The whole bundle, before compression.
pub const BUNDLE_CAP: u64 = 16 << 20;

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
    /// Take `data` whole, within the bundle's budget; over it, the item is listed as left out.
    pub fn add(&mut self, name: impl Into<String>, source: impl Into<String>, data: Vec<u8>) {
        self.add_cut(name, source, data, None);
    }

    /// [`Collection::add`], saying how the data was cut to fit.
    pub fn add_cut(
        &mut self,
        name: impl Into<String>,
        source: impl Into<String>,
        data: Vec<u8>,
        cut: Option<String>,
    ) {
        let name = name.into();
        let len = data.len() as u64;
        if self.bytes.saturating_add(len) > BUNDLE_CAP {
            return self.skip(
                name,
                format!(
                    "{} would pass the bundle's budget of {} ({} taken)",
                    size(len),
                    size(BUNDLE_CAP),
                    size(self.bytes)
                ),
            );
        }
        self.bytes += len;
        self.items.push(Item {
            name,
            data,
            source: source.into(),
            cut,
            mtime: None,
        });
    }

    /// Bytes the budget still allows.
    fn left(&self) -> u64 {
        BUNDLE_CAP.saturating_sub(self.bytes)
    }

    /// Dates the items added since there were `before` (none if the budget left it out) as
    /// the system file `in_root` is.
    fn date_since(&mut self, before: usize, root: &Root, in_root: &str) {
        if self.items.len() == before {
            return;
        }
        let mtime = root
            .metadata(in_root)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        for item in &mut self.items[before..] {
            item.mtime = mtime;
        }
    }

    pub fn skip(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skipped {
            what: what.into(),
            why: why.into(),
        });
    }

    /// Take one file whole; a missing file is noted as such, any other failure with its error.
    /// A file larger than the budget left is not read at all.
    pub fn file(&mut self, root: &Root, in_root: &str, name: &str) {
        let cap = FILE_CAP.min(self.left());
        let before = self.items.len();
        match root.read_capped(in_root, cap) {
            Ok(data) => {
                self.add(name, in_root, data);
                self.date_since(before, root, in_root);
            }
            Err(e) if cap < FILE_CAP && is_too_large(&e) => self.skip(
                in_root,
                format!(
                    "larger than the {} left of the bundle's budget of {}",
                    size(cap),
                    size(BUNDLE_CAP)
                ),
            ),
            Err(e) => self.skip(in_root, why(&e)),
        }
    }

    /// A file of the system, stored under `files/` at its own path (`files/boot/...`).
    pub fn system_file(&mut self, root: &Root, in_root: &str) {
        self.file(root, in_root, &format!("files{in_root}"));
    }

    /// The first [`DIR_FILES`] files ending in `suffix` in a directory (by name); the number
    /// left out is listed.
    pub fn dir(&mut self, root: &Root, dir: &str, suffix: &str) {
        let (names, matched) = match list_first(root, dir, |n| n.ends_with(suffix), DIR_FILES) {
            Ok(found) => found,
            Err(e) => return self.skip(dir, why(&e)),
        };
        for n in &names {
            self.system_file(root, &format!("{dir}/{n}"));
        }
        if matched > names.len() {
            self.skip(
                format!("{dir}/*{suffix}"),
                format!(
                    "{} more files: at most {DIR_FILES} of one directory are taken (the first by name)",
                    matched - names.len()
                ),
            );
        }
    }

    /// The last [`LOG_TAIL_LINES`] lines of a file, at most [`LOG_TAIL_BYTES`]: only its last
    /// bytes are read.
    pub fn tail(&mut self, root: &Root, in_root: &str, name: &str) {
        let max = LOG_TAIL_BYTES.min(self.left());
        let before = self.items.len();
        match read_tail(root, in_root, max) {
            Ok((data, total)) => {
                let (tail, cut) = last_lines(&data, LOG_TAIL_LINES, data.len() as u64 != total);
                let note = cut.then(|| {
                    let lines = match count_lines(&tail) {
                        1 => "line".to_string(),
                        n => format!("{n} lines"),
                    };
                    format!(
                        "the last {lines}, {} of {}",
                        size(tail.len() as u64),
                        size(total)
                    )
                });
                self.add_cut(name, in_root, tail, note);
                self.date_since(before, root, in_root);
            }
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
    match list_first(root, &logs, |n| n.ends_with(".log"), DIR_FILES) {
        Ok((names, matched)) => {
            for n in &names {
                let path = format!("{logs}/{n}");
                c.tail(root, &path, &format!("files{path}.tail"));
            }
            if matched > names.len() {
                c.skip(
                    format!("{logs}/*.log"),
                    format!(
                        "{} more logs: at most {DIR_FILES} of one directory are taken (the first by name)",
                        matched - names.len()
                    ),
                );
            }
        }
        Err(e) => c.skip(logs, why(&e)),
    }
}

/// The GPU-related kernel log lines. On the live system, from `dmesg` (root or
/// `kernel.dmesg_restrict=0` needed); in an image, from its saved logs.
pub fn kernel_log(root: &Root, c: &mut Collection) {
    if root.is_live() {
        dmesg(c);
    }
    for log in ["/var/log/dmesg", "/var/log/kern.log"] {
        if !root.exists(log) {
            continue;
        }
        let read = root.resolve(log).and_then(|p| {
            let (mut file, meta) = crate::host::root::open_regular(&p)?;
            let from = meta.len().saturating_sub(LOG_WINDOW);
            file.seek(SeekFrom::Start(from))?;
            Ok((gpu_lines(file.take(LOG_WINDOW), from > 0)?, meta.len()))
        });
        match read {
            Ok(((lines, cut), total)) => {
                let note = cut.then(|| {
                    format!(
                        "GPU lines of the last {} of {}, at most {}",
                        size(LOG_WINDOW.min(total)),
                        size(total),
                        size(LOG_TAIL_BYTES)
                    )
                });
                let before = c.items.len();
                c.add_cut(format!("files{log}.gpu-lines"), log, lines, note);
                c.date_since(before, root, log);
            }
            Err(e) => c.skip(log, why(&e)),
        }
    }
}

/// `dmesg`'s GPU lines, read as it prints them (never held whole).
fn dmesg(c: &mut Collection) {
    use std::process::{Command, Stdio};
    let child = Command::new("dmesg")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return c.skip("dmesg", format!("cannot run dmesg: {e}")),
    };
    let lines = child
        .stdout
        .take()
        .map(|out| gpu_lines(out.take(LOG_WINDOW), false));
    let mut err = Vec::new();
    if let Some(e) = child.stderr.take() {
        let _ = e.take(4096).read_to_end(&mut err);
    }
    match (child.wait(), lines) {
        (Ok(status), Some(Ok((lines, cut)))) if status.success() => {
            let note = cut.then(|| format!("at most {} of GPU lines", size(LOG_TAIL_BYTES)));
            c.add_cut("dmesg.gpu-lines", "dmesg", lines, note)
        }
        (Ok(_), _) => c.skip(
            "dmesg",
            format!(
                "dmesg failed ({}); run rvl report as root to include it",
                String::from_utf8_lossy(&err).trim()
            ),
        ),
        (Err(e), _) => c.skip("dmesg", format!("dmesg did not finish: {e}")),
    }
}

/// The installed packages of the GPU stack (names matched by [`STACK_PACKAGES`]), from dpkg's
/// database: `name version` per line.
pub fn packages(root: &Root, c: &mut Collection) {
    const STATUS: &str = "/var/lib/dpkg/status";
    // Read whole (a real one is a few MiB) but never past LOG_WINDOW; only the list is kept.
    match root.read_capped(STATUS, LOG_WINDOW) {
        Ok(data) => {
            let text = String::from_utf8_lossy(&data);
            let list = stack_packages(&text);
            let before = c.items.len();
            c.add("packages.txt", STATUS, list.into_bytes());
            c.date_since(before, root, STATUS);
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
    let cap = FILE_CAP.min(c.left());
    match crate::host::root::read_regular(path, cap) {
        Ok(data) => c.add(name, path.display().to_string(), data),
        Err(e) => c.skip(path.display().to_string(), why(&e)),
    }
}

/// Up to `max` names in a directory that `keep` accepts, the first by name, and how many it
/// accepts in all. Memory is bounded by `max`, not by the directory.
pub fn list_first(
    root: &Root,
    dir: &str,
    keep: impl Fn(&str) -> bool,
    max: usize,
) -> io::Result<(Vec<String>, usize)> {
    use std::collections::BinaryHeap;
    let mut first: BinaryHeap<String> = BinaryHeap::with_capacity(max + 1);
    let mut matched = 0;
    for entry in std::fs::read_dir(root.resolve(dir)?)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if !keep(&name) {
            continue;
        }
        matched += 1;
        first.push(name);
        if first.len() > max {
            first.pop(); // the largest name goes
        }
    }
    Ok((first.into_sorted_vec(), matched))
}

/// The last `max` bytes of a regular file in the root, and its size.
fn read_tail(root: &Root, in_root: &str, max: u64) -> io::Result<(Vec<u8>, u64)> {
    let path = root.resolve(in_root)?;
    let (mut file, meta) = crate::host::root::open_regular(&path)?;
    let from = meta.len().saturating_sub(max);
    file.seek(SeekFrom::Start(from))?;
    let mut data = Vec::new();
    file.take(max).read_to_end(&mut data)?;
    Ok((data, meta.len()))
}

/// Lines that mention the GPU stack, case-insensitively, read from `log` a chunk at a time: a
/// line is kept to [`MAX_LINE`] bytes, and only the last [`LOG_TAIL_BYTES`] of matches are
/// kept. `started_inside`: the reader starts mid-file, so its first line is a fragment and is
/// dropped. Returns the lines and whether anything was cut.
pub fn gpu_lines(mut log: impl Read, started_inside: bool) -> io::Result<(Vec<u8>, bool)> {
    let mut kept: std::collections::VecDeque<Vec<u8>> = Default::default();
    let mut kept_bytes = 0usize;
    let mut cut = started_inside;
    let mut line: Vec<u8> = Vec::new();
    let mut line_cut = false;
    let mut skip_first = started_inside;
    let mut buf = vec![0u8; 64 << 10];
    let mut finish = |line: &mut Vec<u8>, line_cut: bool, cut: &mut bool| {
        let lower = String::from_utf8_lossy(line).to_ascii_lowercase();
        if DMESG_WORDS.iter().any(|w| lower.contains(w)) {
            if line_cut {
                line.extend_from_slice(" [line cut]".as_bytes());
                *cut = true;
            }
            line.push(b'\n');
            kept_bytes += line.len();
            kept.push_back(std::mem::take(line));
            while kept_bytes as u64 > LOG_TAIL_BYTES {
                let Some(old) = kept.pop_front() else { break };
                kept_bytes -= old.len();
                *cut = true;
            }
        }
        line.clear();
    };
    loop {
        let n = match log.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                if skip_first {
                    skip_first = false;
                    line.clear();
                } else {
                    finish(&mut line, line_cut, &mut cut);
                }
                line_cut = false;
            } else if line.len() < MAX_LINE {
                line.push(b);
            } else {
                line_cut = true;
            }
        }
    }
    if !line.is_empty() && !skip_first {
        finish(&mut line, line_cut, &mut cut);
    }
    Ok((kept.into_iter().flatten().collect(), cut))
}

/// The last `n` lines of `data`, which holds at most the tail bytes budget: when `partial`
/// (the file was longer than what was read) the first line is a fragment and is dropped, unless
/// it is all there is (a single line longer than the budget keeps its end, marked, within the
/// same bytes). Bytes are kept as they are (no UTF-8 repair that would grow them). Returns the
/// tail, never longer than `data` (plus a final newline if a short `data` lacked it), and
/// whether anything was left out.
fn last_lines(data: &[u8], n: usize, partial: bool) -> (Vec<u8>, bool) {
    const MARK: &[u8] = "[… the line goes back further]".as_bytes();
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let mut lines: Vec<&[u8]> = if body.is_empty() {
        Vec::new()
    } else {
        body.split(|b| *b == b'\n').collect()
    };
    let mut cut = partial;
    let mut marker = false;
    if partial && lines.len() > 1 {
        lines.remove(0);
    } else if partial && !lines.is_empty() {
        marker = true;
        // Room for the mark, and for the newline the tail ends with.
        let room = MARK.len() + usize::from(!data.ends_with(b"\n"));
        lines[0] = &lines[0][room.min(lines[0].len())..];
    }
    if lines.len() > n {
        lines.drain(..lines.len() - n);
        cut = true;
    }
    let mut out = Vec::with_capacity(data.len() + 1);
    if marker {
        out.extend_from_slice(MARK);
    }
    for line in lines {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    (out, cut)
}

fn count_lines(data: &[u8]) -> usize {
    data.iter().filter(|b| **b == b'\n').count()
}

/// A byte count for people: `512 B`, `64 KiB`, `1.5 MiB`.
pub fn size(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    match bytes {
        b if b < KIB => format!("{b} B"),
        b if b < MIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b if b < MIB => format!("{:.1} KiB", b as f64 / KIB as f64),
        b if b % MIB == 0 => format!("{} MiB", b / MIB),
        b => format!("{:.1} MiB", b as f64 / MIB as f64),
    }
}

fn is_too_large(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::FileTooLarge
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
        let (kept, cut) = gpu_lines(&log[..], false).unwrap();
        let kept = String::from_utf8(kept).unwrap();
        assert_eq!(kept.lines().count(), 2, "{kept}");
        assert!(!kept.contains("usb") && !cut);
    }

    #[test]
    fn gpu_lines_are_bounded_per_line_and_in_all() {
        // One 1 MiB line naming the GPU, then 10k short matches: the long line keeps its first
        // MAX_LINE bytes, and only the last LOG_TAIL_BYTES of matches stay.
        let mut log = b"gpu ".to_vec();
        log.extend(std::iter::repeat_n(b'x', 1 << 20));
        log.push(b'\n');
        for i in 0..10_000 {
            log.extend(format!("[{i}] panthor: fault\n").bytes());
        }
        let (kept, cut) = gpu_lines(&log[..], false).unwrap();
        assert!(cut);
        assert!(kept.len() as u64 <= LOG_TAIL_BYTES, "{}", kept.len());
        let text = String::from_utf8(kept).unwrap();
        assert!(text.ends_with("[9999] panthor: fault\n"));
        let (one, _) = gpu_lines(&log[..MAX_LINE * 2], false).unwrap();
        assert_eq!(one.len(), MAX_LINE + " [line cut]\n".len());
        // A reader that starts mid-file drops its first (partial) line.
        let (mid, cut) = gpu_lines(&b"u: tail of a line\n[5] gpu up\n"[..], true).unwrap();
        assert_eq!((mid, cut), (b"[5] gpu up\n".to_vec(), true));
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
    fn last_lines_keeps_the_tail_by_lines_and_bytes() {
        let data = (1..=300).map(|i| format!("line {i}\n")).collect::<String>();
        let (tail, cut) = last_lines(data.as_bytes(), 200, false);
        let tail = String::from_utf8(tail).unwrap();
        assert!(cut);
        assert_eq!(tail.lines().count(), 200);
        assert!(tail.starts_with("line 101\n") && tail.ends_with("line 300\n"));
        // Read from the middle of a file: the first (partial) line goes.
        let (tail, cut) = last_lines(b"ne 7\nline 8\n", 200, true);
        assert_eq!(
            (String::from_utf8(tail).unwrap().as_str(), cut),
            ("line 8\n", true)
        );
        // One line longer than what was read: its end, marked.
        let long = [b'x'; 64];
        let (tail, _) = last_lines(&long, 200, true);
        assert!(tail.starts_with("[… the line goes back further]xxx".as_bytes()));
        assert!(tail.len() <= long.len(), "{}", tail.len());
        // Bytes that are not UTF-8 are kept, not grown into replacement characters.
        let (tail, _) = last_lines(&[0xff; 8], 200, false);
        assert_eq!(tail, [&[0xff; 8][..], b"\n"].concat());
        let (whole, cut) = last_lines(b"a\nb\n", 200, false);
        assert_eq!((whole, cut), (b"a\nb\n".to_vec(), false));
    }

    #[test]
    fn the_bundle_budget_leaves_out_what_would_pass_it() {
        let mut c = Collection::default();
        c.add("a", "a", vec![0; (BUNDLE_CAP - 10) as usize]);
        c.add("b", "b", vec![0; 11]);
        c.add("c", "c", vec![0; 10]);
        let names: Vec<&str> = c.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(c.bytes, BUNDLE_CAP);
        assert_eq!(c.skipped[0].what, "b");
        assert!(
            c.skipped[0]
                .why
                .starts_with("11 B would pass the bundle's budget of 16 MiB"),
            "{:?}",
            c.skipped
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(3 << 19), "1.5 MiB");
    }
}
