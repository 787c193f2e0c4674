//! `rvl report` on fixture roots: what the bundle holds, what it filters out, and that it is
//! written whole or not at all.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use common::{rvl, Fixture};
use rvl::exit;

const HOST: &str = "rock5-lab";
const MAC: &str = "6a:1f:0e:aa:b3:07";

/// The boltzmann board with the things a report must carry or hide planted in it.
fn board() -> Fixture {
    let fx = Fixture::copy("boltzmann-mainline");
    fx.write("etc/hostname", format!("{HOST}\n"));
    fx.write(
        "var/log/kern.log",
        format!(
            "Dec  2 10:00:01 {HOST} kernel: panthor fb000000.gpu: [drm] mali-g610 id 0xa867\n\
             Dec  2 10:00:02 {HOST} kernel: r8169 eth0: link up, {MAC}\n\
             Dec  2 10:00:03 {HOST} kernel: usb 1-1: new high-speed USB device\n\
             Dec  2 10:00:04 {HOST} kernel: panthor fb000000.gpu: Firmware protected mode entry not supported, {MAC}\n"
        ),
    );
    let log: String = (1..=300)
        .map(|i| format!("[{i}/300] Compiling x.o\n"))
        .collect();
    fx.write("var/lib/rvl/logs/mesa-26.1.6.log", log);
    fx.write(
        "proc/cmdline",
        format!("root=UUID=x hostname={HOST} quiet\n"),
    );
    fx.write(
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
    );
    fx.write(
        "var/lib/dpkg/status",
        "Package: bash\nStatus: install ok installed\nArchitecture: arm64\nVersion: 5.2.15-2\n\n\
         Package: mesa-vulkan-drivers\nStatus: install ok installed\nArchitecture: arm64\nVersion: 22.3.6-1+deb12u1\n\n\
         Package: linux-image-7.0.0-rc3-marfrit-a1\nStatus: install ok installed\nArchitecture: arm64\nVersion: 7.0.0-1\n",
    );
    fx
}

/// Every entry's modification time (seconds since the epoch), by name.
fn mtimes(archive: &Path) -> BTreeMap<String, u64> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    tar.entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.path().unwrap().to_string_lossy().into_owned(),
                e.header().mtime().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_bundle_carries_what_a_triager_needs_with_real_dates() {
    let fx = board();
    // A boot config last changed at a known time.
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_764_000_000);
    std::fs::File::options()
        .write(true)
        .open(fx.join("boot/extlinux/extlinux.conf"))
        .unwrap()
        .set_modified(when)
        .unwrap();
    let out_file = fx.parent().join("bug.tar.gz");
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&out_file)
        .root(&fx)
        .run()
        .expect_code(exit::OK)
        .expect_stdout("packages.txt")
        .expect_stdout("doctor.txt");
    let files = unpack(&out_file);
    assert!(files["rvl-report/files/etc/os-release"].contains("VERSION_ID=\"12\""));
    assert_eq!(
        files["rvl-report/packages.txt"],
        "linux-image-7.0.0-rc3-marfrit-a1:arm64 7.0.0-1\nmesa-vulkan-drivers:arm64 22.3.6-1+deb12u1\n"
    );
    // Doctor as a person reads it, evidence included.
    let text = &files["rvl-report/doctor.txt"];
    assert!(text.starts_with("rvl doctor:"), "{text}");
    assert!(text.contains("passed"), "{text}");
    let dates = mtimes(&out_file);
    assert_eq!(
        dates["rvl-report/files/boot/extlinux/extlinux.conf"],
        1_764_000_000
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        dates["rvl-report/doctor.json"] + 3600 > now,
        "what the report made is dated now: {dates:?}"
    );
}

/// Every file of a `.tar.gz`, by name.
fn unpack(archive: &Path) -> BTreeMap<String, String> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    let mut files = BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(name, text);
    }
    files
}

#[test]
fn the_bundle_holds_doctor_boot_icd_logs_and_setup_state() {
    let fx = board();
    let out_file = fx.parent().join("bug.tar.gz");
    let out = rvl(&["report", "--no-vulkan", "-o"])
        .arg(&out_file)
        .root(&fx)
        .run()
        .expect_code(exit::OK);
    let files = unpack(&out_file);
    let doctor: serde_json::Value = serde_json::from_str(&files["rvl-report/doctor.json"]).unwrap();
    assert_eq!(doctor["command"], "doctor");
    assert!(
        doctor["inventory"].is_object(),
        "no inventory in the doctor part"
    );
    let status: serde_json::Value =
        serde_json::from_str(&files["rvl-report/setup-status.json"]).unwrap();
    assert_eq!(status["command"], "setup");
    let stack: serde_json::Value = serde_json::from_str(&files["rvl-report/status.json"]).unwrap();
    assert_eq!(stack["command"], "status");
    assert!(stack["kernel"]["running"].is_string(), "{stack:#}");
    for name in [
        "rvl-report/files/boot/extlinux/extlinux.conf",
        "rvl-report/files/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json",
        "rvl-report/files/proc/cmdline",
    ] {
        assert!(files.contains_key(name), "no {name} in {:?}", files.keys());
    }
    let tail = &files["rvl-report/files/var/lib/rvl/logs/mesa-26.1.6.log.tail"];
    assert_eq!(tail.lines().count(), 200);
    assert!(tail.starts_with("[101/300]"), "{tail}");
    let kern = &files["rvl-report/files/var/log/kern.log.gpu-lines"];
    assert_eq!(kern.lines().count(), 2, "only the GPU lines: {kern}");
    // The listing says what it took and what it could not.
    out.expect_stdout("bug.tar.gz")
        .expect_stdout("files/boot/extlinux/extlinux.conf")
        .expect_stdout("not included:")
        .expect_stdout("environment: not the image's");
}

#[test]
fn host_names_and_macs_are_filtered_unless_full() {
    let fx = board();
    let filtered = fx.parent().join("filtered.tar.gz");
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&filtered)
        .root(&fx)
        .run()
        .expect_code(exit::OK)
        .expect_stdout("host name(s)");
    for (name, text) in unpack(&filtered) {
        assert!(!text.contains(HOST), "{name} keeps the host name:\n{text}");
        assert!(!text.contains(MAC), "{name} keeps a MAC address:\n{text}");
    }
    let kern = &unpack(&filtered)["rvl-report/files/var/log/kern.log.gpu-lines"];
    assert!(
        kern.contains("<hostname> kernel: panthor") && kern.contains("<mac>"),
        "{kern}"
    );

    let full = fx.parent().join("full.tar.gz");
    rvl(&["report", "--no-vulkan", "--full", "-o"])
        .arg(&full)
        .root(&fx)
        .run()
        .expect_code(exit::OK);
    let kern = &unpack(&full)["rvl-report/files/var/log/kern.log.gpu-lines"];
    assert!(kern.contains(HOST) && kern.contains(MAC), "{kern}");
}

#[test]
fn the_environment_carries_only_the_vulkan_and_xdg_variables_on_the_live_system() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("live.tar.gz");
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&out_file)
        .env(
            "VK_DRIVER_FILES",
            "/etc/vulkan/icd.d/rvl_panvk.aarch64.json",
        )
        .env("HOME", "/home/alice-secret")
        .env("AWS_SECRET_ACCESS_KEY", "hunter2")
        .run()
        .expect_code(exit::OK);
    let files = unpack(&out_file);
    let env = &files["rvl-report/environment"];
    assert!(
        env.contains("VK_DRIVER_FILES=/etc/vulkan/icd.d/rvl_panvk.aarch64.json"),
        "{env}"
    );
    for (name, text) in &files {
        assert!(!text.contains("hunter2"), "{name} leaks a secret");
        assert!(!text.contains("alice-secret"), "{name} leaks HOME");
    }
}

#[test]
fn an_unwritable_output_is_refused_before_anything_is_collected() {
    let fx = board();
    let missing = fx.parent().join("no-such-dir/bug.tar.gz");
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&missing)
        .root(&fx)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("does not exist");
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(fx.parent())
        .root(&fx)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("is a directory");
    let leftovers: Vec<_> = std::fs::read_dir(fx.parent())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "root")
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

#[test]
fn a_fifo_given_as_the_bench_result_is_skipped_not_waited_on() {
    let fx = board();
    let fifo = fx.parent().join("bench.json");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let out_file = fx.parent().join("bug.tar.gz");
    rvl(&["report", "--no-vulkan", "--json", "-o"])
        .arg(&out_file)
        .arg("--bench")
        .arg(&fifo)
        .root(&fx)
        .run()
        .expect_code(exit::OK)
        .expect_stdout("not a regular file");
}

/// A device node in `dir` (root only: mknod needs it), so a regression replaces a node of the
/// test's own, never the machine's /dev/null.
fn node(
    dir: &Path,
    name: &str,
    kind: rustix::fs::FileType,
    major: u32,
    minor: u32,
) -> Option<std::path::PathBuf> {
    let p = dir.join(name);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &p,
        kind,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(major, minor),
    )
    .ok()
    .map(|()| p)
}

#[test]
fn output_to_a_fifo_is_written_through_and_the_fifo_stays() {
    use std::os::unix::fs::FileTypeExt;
    let fx = board();
    let fifo = node(fx.parent(), "pipe", rustix::fs::FileType::Fifo, 0, 0).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&fifo)
        .root(&fx)
        .run()
        .expect_code(exit::OK);
    let bytes = reader.join().unwrap();
    assert_eq!(&bytes[..2], b"\x1f\x8b", "not a gzip stream");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn output_to_a_device_node_never_replaces_it() {
    use std::os::unix::fs::FileTypeExt;
    let fx = board();
    let dir = fx.parent();
    // A character device (a /dev/null of the test's own) is written through and stays.
    let Some(null) = node(dir, "null", rustix::fs::FileType::CharacterDevice, 1, 3) else {
        eprintln!("skipped: mknod needs root");
        return;
    };
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&null)
        .root(&fx)
        .run()
        .expect_code(exit::OK);
    let meta = std::fs::symlink_metadata(&null).unwrap();
    assert!(meta.file_type().is_char_device(), "{meta:?}");
    // /dev/full: the write fails, naming the target, and the node stays.
    let full = node(dir, "full", rustix::fs::FileType::CharacterDevice, 1, 7).unwrap();
    let out = rvl(&["report", "--no-vulkan", "-o"])
        .arg(&full)
        .root(&fx)
        .run()
        .expect_code(exit::PROBLEMS);
    let err = out.stderr();
    assert!(
        err.contains(&format!("{}: No space left on device", full.display())),
        "{err}"
    );
    // The target is named, never the temporary file beside it.
    assert!(!err.contains("/.rvl-"), "{err}");
    assert!(std::fs::symlink_metadata(&full)
        .unwrap()
        .file_type()
        .is_char_device());
    // A block device is refused before anything is collected, and stays.
    let blk = node(dir, "blk", rustix::fs::FileType::BlockDevice, 7, 250).unwrap();
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&blk)
        .root(&fx)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("is a block device");
    assert!(std::fs::symlink_metadata(&blk)
        .unwrap()
        .file_type()
        .is_block_device());
    // So is `smoke-bench --save`, before any benchmarking.
    rvl(&["smoke-bench", "--save"])
        .arg(&blk)
        .run()
        .expect_code(exit::USAGE)
        .expect_stderr("is a block device");
    assert!(std::fs::symlink_metadata(&blk)
        .unwrap()
        .file_type()
        .is_block_device());
}

#[test]
fn output_through_a_link_replaces_the_file_it_names_and_keeps_the_link() {
    let fx = board();
    let real = fx.parent().join("real.tar.gz");
    std::fs::write(&real, b"old").unwrap();
    let link = fx.parent().join("latest.tar.gz");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    rvl(&["report", "--no-vulkan", "-o"])
        .arg(&link)
        .root(&fx)
        .run()
        .expect_code(exit::OK);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(unpack(&real).keys().any(|k| k.ends_with("doctor.json")));
}
