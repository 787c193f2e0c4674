//! llama.cpp on the system: rvl's prefixes and their build stamps, stock `llama-server`s on
//! PATH, and (live only) what the newest build's `llama-bench --list-devices` prints. Read
//! through the one [`Root`]; a binary is only ever run when the root is the running system.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Root;
use crate::inventory::{Inventory, LlamaDevices, LlamaFacts, LlamaInstall, WrongResults};
use crate::llama::{PREFIX_NAME, PREFIX_PARENT};

/// `--list-devices` loads Vulkan and returns; a hang (a wedged GPU) must not hang doctor.
const LIST_DEVICES_TIMEOUT: Duration = Duration::from_secs(10);
/// Directories searched for a stock llama-server besides PATH (Debian's package, `make install`).
const STOCK_DIRS: &[&str] = &["/usr/bin", "/usr/local/bin"];

fn executable(root: &Root, path: &str) -> bool {
    root.metadata(path)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn install(root: &Root, prefix: String) -> LlamaInstall {
    let (stamp, stamp_error) = super::stamp::read(root, &prefix);
    LlamaInstall {
        server_executable: executable(root, &format!("{prefix}/bin/llama-server")),
        bench_executable: executable(root, &format!("{prefix}/bin/llama-bench")),
        test_backend_ops_executable: executable(root, &format!("{prefix}/bin/test-backend-ops")),
        rpc_server_executable: executable(
            root,
            &format!("{prefix}/bin/{}", crate::rpc::RPC_SERVER),
        ),
        prefix,
        stamp,
        stamp_error,
    }
}

/// Everything but the live device listing (see [`list_devices`]).
pub fn facts(root: &Root, inv: &Inventory) -> LlamaFacts {
    let installs = super::stamp::prefixes(root, PREFIX_NAME)
        .into_iter()
        .map(|p| install(root, p))
        .collect();
    let path_dirs = inv.env.get("PATH").unwrap_or_default();
    let mut stock: Vec<String> = Vec::new();
    for dir in path_dirs.split(':').chain(STOCK_DIRS.iter().copied()) {
        // Only absolute directories mean the same thing inside a root; rvl's own are not stock.
        if !dir.starts_with('/') || dir.starts_with(PREFIX_PARENT) {
            continue;
        }
        let p = format!("{}/llama-server", dir.trim_end_matches('/'));
        if !stock.contains(&p) && executable(root, &p) {
            stock.push(p);
        }
    }
    let xdg_fallback = inv
        .live_facts
        .user
        .as_ref()
        .filter(|_| inv.live && inv.env.get("XDG_RUNTIME_DIR").is_none())
        .map(|u| format!("/run/user/{}", u.euid))
        .filter(|p| root.is_dir(p));
    LlamaFacts {
        installs,
        stock,
        rvl_icd: root.exists(crate::setup::paths::ICD_FILE),
        xdg_fallback,
        list_devices: None,
        wrong_results: wrong_results(root, &inv.env),
    }
}

/// At most this many records are read (one per model file; a person has a few).
const MAX_RECORDS: usize = 256;

/// The `smoke-bench --gguf` records in the state directory `env` names that hold a ubatch with
/// wrong GPU results. Only regular files (a link is not followed); unreadable or foreign ones
/// are skipped (`rvl serve` names those when it meets one).
fn wrong_results(root: &Root, env: &crate::inventory::Env) -> Vec<WrongResults> {
    use crate::prefill::{report, saved};
    let Some(dir) = saved::record_dir(env) else {
        return Vec::new();
    };
    let Ok(names) = root.list_dir(&dir) else {
        return Vec::new();
    };
    names
        .iter()
        .filter(|n| n.ends_with(".json"))
        .take(MAX_RECORDS)
        .filter_map(|n| {
            let path = format!("{dir}/{n}");
            if !root.symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                return None;
            }
            let bytes = root.read_capped(&path, crate::host::root::INPUT_CAP).ok()?;
            let record = saved::parse(std::str::from_utf8(&bytes).ok()?, &path).ok()?;
            let wrong = report::wrong_ubatches(&record.ubatches);
            let first = wrong.first()?.1.clone();
            Some(WrongResults {
                record: path,
                model: record.model.file_name,
                ubatches: wrong.iter().map(|w| w.0).collect(),
                first_failure: first,
            })
        })
        .collect()
}

/// Run `BIN --list-devices` with rvl's launch environment and a time limit, on the running
/// system only (never a binary of a foreign root).
pub fn list_devices(root: &Root, inv: &Inventory, bin: &str) -> Option<LlamaDevices> {
    list_devices_within(root, inv, bin, LIST_DEVICES_TIMEOUT)
}

fn list_devices_within(
    root: &Root,
    inv: &Inventory,
    bin: &str,
    limit: Duration,
) -> Option<LlamaDevices> {
    if !root.is_live() || !inv.live {
        return None;
    }
    Some(run_list_devices(
        bin,
        &[],
        &crate::llama::launch_env(inv),
        limit,
    ))
}

/// `BIN ARGS… --list-devices` with `env` added to rvl's own environment, killed at `limit`: the
/// device lines it printed, and why it failed when it did. The caller decides that the binary
/// may run here (never one of a foreign root).
pub fn run_list_devices(
    bin: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    limit: Duration,
) -> LlamaDevices {
    let mut out = LlamaDevices {
        binary: bin.to_string(),
        ..Default::default()
    };
    let mut child = match Command::new(bin)
        .args(args)
        .arg("--list-devices")
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("cannot start {bin}: {e}"));
            return out;
        }
    };
    // Read both pipes on threads, so a chatty child cannot block on a full pipe.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(r) = r {
                let _ = r.take(1 << 20).read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let so = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let se = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = so.join().unwrap_or_default();
    let stderr = se.join().unwrap_or_default();
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default();
    // Each stream on its own: ggml's log lines on stderr must not run into the list.
    out.devices = crate::llama::parse_list_devices(&stdout);
    out.devices
        .extend(crate::llama::parse_list_devices(&stderr));
    out.error = match status {
        None => Some(format!(
            "no answer within {:.1} s{last}",
            limit.as_secs_f64()
        )),
        Some(s) if !s.success() => Some(format!("exited with {s}{last}")),
        Some(_) => None,
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in `llama-bench` script in a temporary directory.
    fn script(body: &str) -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("llama-bench");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let s = p.to_string_lossy().into_owned();
        (d, s)
    }

    fn live() -> Inventory {
        Inventory {
            live: true,
            ..Default::default()
        }
    }

    #[test]
    fn the_device_lines_of_a_run_that_succeeds_are_kept() {
        let (_d, bin) = script(
            "[ \"$1\" = --list-devices ] || exit 9\necho 'ggml_vulkan: Found 1 Vulkan devices:' >&2\necho 'Available devices:'\necho '  Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)'",
        );
        let d = list_devices(&Root::system(), &live(), &bin).unwrap();
        assert_eq!(d.error, None);
        assert_eq!(
            d.devices,
            vec!["Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)"]
        );
    }

    #[test]
    fn a_failing_run_says_its_status_and_last_stderr_line() {
        let (_d, bin) = script("echo 'vk::createInstance: ErrorIncompatibleDriver' >&2\nexit 3");
        let d = list_devices(&Root::system(), &live(), &bin).unwrap();
        let e = d.error.unwrap();
        assert!(
            e.contains("exit status: 3") && e.contains("ErrorIncompatibleDriver"),
            "{e}"
        );
    }

    #[test]
    fn a_hanging_binary_is_killed_at_the_limit() {
        let (_d, bin) = script("echo starting >&2\nexec sleep 30");
        let start = Instant::now();
        let d = list_devices_within(&Root::system(), &live(), &bin, Duration::from_millis(300))
            .unwrap();
        assert!(start.elapsed() < Duration::from_secs(10));
        let e = d.error.unwrap();
        assert!(e.contains("no answer within 0.3 s: starting"), "{e}");
    }

    #[test]
    fn nothing_runs_for_a_foreign_root() {
        let (d, bin) = script("touch \"$0.ran\"");
        assert!(list_devices(&Root::new(d.path()), &live(), &bin).is_none());
        assert!(list_devices(&Root::system(), &Inventory::default(), &bin).is_none());
        assert!(!std::path::Path::new(&format!("{bin}.ran")).exists());
    }
}
