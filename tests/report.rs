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

/// One header field of every entry of a `.tar.gz`, by name, read from the headers only (a
/// bundle that grew without bound is not pulled into the test's memory).
fn header_field(archive: &Path, field: fn(&tar::Header) -> u64) -> BTreeMap<String, u64> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    tar.entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.path().unwrap().to_string_lossy().into_owned(),
                field(e.header()),
            )
        })
        .collect()
}

/// Every entry's modification time (seconds since the epoch), by name.
fn mtimes(archive: &Path) -> BTreeMap<String, u64> {
    header_field(archive, |h| h.mtime().unwrap())
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

/// Every entry of a `.tar.gz` and its size.
fn sizes(archive: &Path) -> BTreeMap<String, u64> {
    header_field(archive, |h| h.size().unwrap())
}

/// `rvl report --no-vulkan FLAGS -o PARENT/FILE` on the fixture, exit 0: the archive and the output.
fn report_ok(fx: &Fixture, file: &str, flags: &[&str]) -> (std::path::PathBuf, common::Output) {
    let path = fx.parent().join(file);
    let out = rvl(&["report", "--no-vulkan"])
        .args(flags)
        .arg("-o")
        .arg(&path)
        .root(fx)
        .run()
        .expect_code(exit::OK);
    (path, out)
}

/// A file of `len` bytes that takes no disk (a sparse file reads as one line of NULs).
fn sparse(fx: &Fixture, rel: &str, len: u64) {
    fx.write(rel, b"");
    std::fs::OpenOptions::new()
        .write(true)
        .open(fx.join(rel))
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Issue 27 item 4: 24 one-line 64 MiB logs made a 1.6 GB bundle (a 200-line tail kept a line
/// whole) and thousands of 1 MiB ICD files aborted on allocation. Tails are cut by bytes as
/// well as lines, a directory gives at most 32 files, the bundle at most 16 MiB, and what was
/// cut is listed in the bundle's index.txt and the output.
#[test]
fn huge_one_line_logs_and_a_flood_of_icd_files_stay_within_the_budget_and_are_listed() {
    let fx = board();
    for i in 0..40 {
        let rel = format!("var/lib/rvl/logs/build-{i:02}.log");
        sparse(&fx, &rel, 8 << 20);
        // One 8 MiB line; its end is what a tail must show.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(fx.join(&rel))
            .unwrap();
        std::io::Write::write_all(&mut f, format!(" build {i:02} failed here\n").as_bytes())
            .unwrap();
    }
    for i in 0..100 {
        sparse(
            &fx,
            &format!("usr/share/vulkan/icd.d/zz-{i:03}.json"),
            1 << 20,
        );
    }
    let (out_file, out) = report_ok(&fx, "bug.tar.gz", &["--json"]);
    let doc: serde_json::Value = serde_json::from_str(out.stdout()).unwrap();

    let sizes = sizes(&out_file);
    let total: u64 = sizes.values().sum();
    assert!(
        total <= (16 << 20) + (64 << 10),
        "the bundle holds {total} bytes"
    );
    let tails: Vec<_> = sizes
        .iter()
        .filter(|(n, _)| n.ends_with(".log.tail"))
        .collect();
    assert!(
        !tails.is_empty() && tails.len() <= 32,
        "{} log tails",
        tails.len()
    );
    for (name, len) in &tails {
        assert!(**len <= 64 << 10, "{name}: {len} bytes");
    }
    let icds = sizes.keys().filter(|n| n.contains("icd.d/zz-")).count();
    assert!(icds <= 32, "{icds} ICD files of one directory");

    // Each tail keeps the end of its log.
    let files = unpack(&out_file);
    let tail = &files["rvl-report/files/var/lib/rvl/logs/build-00.log.tail"];
    assert!(
        tail.starts_with("[… the line goes back further]")
            && tail.ends_with(" build 00 failed here\n"),
        "{}",
        &tail[tail.len() - 80..]
    );

    // What was cut and left out is in the bundle's index and in the output.
    let index = &files["rvl-report/index.txt"];
    for want in [
        "build-00.log.tail",
        "(cut: the last line, 64 KiB of 8.0 MiB)",
        "9 more logs: at most 32 of one directory",
        "/usr/share/vulkan/icd.d/*.json: 69 more files",
        "of the bundle's budget of 16 MiB",
        "budget: 16 MiB in all",
    ] {
        assert!(index.contains(want), "index.txt lacks {want:?}:\n{index}");
    }
    let cut = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "files/var/lib/rvl/logs/build-00.log.tail")
        .unwrap();
    assert_eq!(cut["cut"], "the last line, 64 KiB of 8.0 MiB", "{cut}");
    assert_eq!(doc["files"][0]["name"], "index.txt");
}

/// Issue 27 item 5: a host name that is also the board's device-tree word (`rock-5-itx`)
/// rewrote `compatible: radxa,<hostname>` in doctor.json; the diagnosis must read as with
/// `--full`, and the host name still goes where it stands as one.
#[test]
fn a_host_name_that_is_the_boards_device_tree_word_leaves_the_diagnosis_intact() {
    let fx = board();
    fx.write("etc/hostname", "rock-5-itx\n");
    fx.write(
        "var/log/kern.log",
        "Dec  2 10:00:01 rock-5-itx kernel: panthor fb000000.gpu: [drm] mali-g610 id 0xa867\n",
    );
    let (filtered, _) = report_ok(&fx, "filtered.tar.gz", &[]);
    let (full, _) = report_ok(&fx, "full.tar.gz", &["--full"]);
    let (filtered, full) = (unpack(&filtered), unpack(&full));
    for doc in ["doctor.json", "status.json"] {
        let name = format!("rvl-report/{doc}");
        let kept = full[&name].matches("radxa,rock-5-itx").count();
        assert!(
            kept > 0 || doc != "doctor.json",
            "{doc} names no compatible"
        );
        assert_eq!(
            filtered[&name].matches("radxa,rock-5-itx").count(),
            kept,
            "{doc}: the compatible was rewritten:\n{}",
            filtered[&name]
        );
        assert!(!filtered[&name].contains("radxa,<hostname>"), "{doc}");
        let a: serde_json::Value = serde_json::from_str(&filtered[&name]).unwrap();
        let b: serde_json::Value = serde_json::from_str(&full[&name]).unwrap();
        assert_eq!(a["board"], b["board"], "{doc}: the board changed");
    }
    let kern = &filtered["rvl-report/files/var/log/kern.log.gpu-lines"];
    assert!(
        kern.contains("10:00:01 <hostname> kernel: panthor"),
        "{kern}"
    );
}

/// Issue 27 item 5: a host name in file names stayed in the archive's entry names and the
/// listing; tokens in collected log lines and MACs written `aabb.ccdd.eeff` stayed too.
#[test]
fn host_names_in_file_names_tokens_in_logs_and_dotted_macs_are_filtered() {
    let fx = board();
    fx.write("etc/hostname", "secretboard\n");
    fx.write(
        "etc/u-boot-menu/conf.d/secretboard.conf",
        "U_BOOT_PARAMETERS=\"quiet\"\n",
    );
    fx.write(
        "var/lib/rvl/logs/secretboard.log",
        "fetch https://huggingface.co/x?token=q9Zr7TgW2mPx\n\
         HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 llama-server\n\
         Authorization: Bearer abcdefghijklmnop0123\n\
         git clone https://bob:s3cretpass@git.example.org/x\n",
    );
    fx.write(
        "var/log/kern.log",
        "Dec  2 10:00:01 secretboard kernel: panthor fb000000.gpu: mac 6a1f.0eaa.b307 up\n",
    );
    let (out_file, out) = report_ok(&fx, "bug.tar.gz", &[]);
    let (_, json) = report_ok(&fx, "bug2.tar.gz", &["--json"]);
    for listing in [out.stdout(), json.stdout()] {
        assert!(!listing.contains("secretboard"), "{listing}");
    }
    let files = unpack(&out_file);
    for (name, text) in &files {
        assert!(!name.contains("secretboard"), "an entry is named {name}");
        for secret in [
            "secretboard",
            "q9Zr7TgW2mPx",
            "hf_AbCdEf",
            "abcdefghijklmnop0123",
            "s3cretpass",
            "6a1f.0eaa.b307",
        ] {
            assert!(!text.contains(secret), "{name} keeps {secret}:\n{text}");
        }
    }
    assert!(files.contains_key("rvl-report/files/etc/u-boot-menu/conf.d/<hostname>.conf"));
    let log = &files["rvl-report/files/var/lib/rvl/logs/<hostname>.log.tail"];
    assert!(
        log.contains("HF_TOKEN=<redacted> llama-server") && log.contains("token=<redacted>"),
        "{log}"
    );
    let kern = &files["rvl-report/files/var/log/kern.log.gpu-lines"];
    assert!(kern.contains("mac <mac> up"), "{kern}");
}
