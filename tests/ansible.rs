//! The Ansible collection (`ansible/`, rvl.fleet) with the real ansible-core, over the `local`
//! connection against fixture roots (`--root`): the example cluster playbook provisions two
//! boards and a second run changes nothing, check mode shows setup's diffs and changes
//! nothing, a failing step fails the task with setup's message and exit status (a blocked one
//! with its fix), and rvl_doctor's fact is the doctor's document.
//!
//! Needs `RVL_ANSIBLE_VENV`, a virtual environment with the pinned ansible-core (`.ci/run`
//! makes one: `python3 -m venv DIR && DIR/bin/pip install ansible-core==2.19.14`). Without it
//! the tests print SKIPPED, unless `RVL_REQUIRE_ANSIBLE=1` (CI) makes that a failure.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::roots::{self, artifacts, firmware_bytes, snapshot, Artifacts};
use common::{fixture_file, rvl, Fixture};
use serde_json::{json, Value};

const MAINLINE: &str = "7.0.0-rc3-marfrit-A1";

struct Ansible {
    venv: PathBuf,
    /// ANSIBLE_COLLECTIONS_PATH: `ansible_collections/rvl/fleet` links to the repo's `ansible/`;
    /// also ANSIBLE_HOME and the temporary directories, so nothing lands in the user's home.
    home: tempfile::TempDir,
}

fn ansible() -> Option<Ansible> {
    let require = std::env::var("RVL_REQUIRE_ANSIBLE").is_ok_and(|v| v == "1");
    let Some(venv) = std::env::var_os("RVL_ANSIBLE_VENV").map(PathBuf::from) else {
        if require {
            panic!(
                "RVL_REQUIRE_ANSIBLE=1 but RVL_ANSIBLE_VENV is not set (.ci/run makes the venv)"
            );
        }
        eprintln!(
            "SKIPPED: RVL_ANSIBLE_VENV is not set; set RVL_REQUIRE_ANSIBLE=1 to make this fail"
        );
        return None;
    };
    assert!(
        venv.join("bin/ansible-playbook").is_file(),
        "RVL_ANSIBLE_VENV={} has no bin/ansible-playbook",
        venv.display()
    );
    let home = tempfile::tempdir().unwrap();
    let ns = home.path().join("collections/ansible_collections/rvl");
    fs::create_dir_all(&ns).unwrap();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("ansible"),
        ns.join("fleet"),
    )
    .unwrap();
    Some(Ansible { venv, home })
}

/// What an ansible-playbook run printed, its exit status, and the recap per host.
struct Played {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Played {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Played {
    /// The PLAY RECAP counters of `host` (`ok`, `changed`, `failed`, …).
    fn recap(&self, host: &str) -> BTreeMap<String, u32> {
        let line = self
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("PLAY RECAP"))
            .find(|l| l.split_whitespace().next() == Some(host))
            .unwrap_or_else(|| panic!("no recap for {host}:\n{self}"));
        line.split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
            .collect()
    }

    /// The result ansible printed for a failed task on `host` (`fatal: [host]: FAILED! => {…}`).
    fn failure(&self, host: &str) -> Value {
        let prefix = format!("fatal: [{host}]: FAILED! => ");
        let line = self
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no failure for {host}:\n{self}"));
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Ansible {
    /// `ansible-playbook -i INVENTORY PLAYBOOK ARGS`, from a controlled environment: rvl's
    /// system tools are the test stand-ins, downloads give up quickly, `extra_env` on top.
    fn play(
        &self,
        inventory: &Path,
        playbook: &Path,
        args: &[&str],
        extra_env: &[(&str, &str)],
    ) -> Played {
        let h = self.home.path();
        let mut cmd = Command::new(self.venv.join("bin/ansible-playbook"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", h)
            .env("LC_ALL", "C.UTF-8")
            .env("ANSIBLE_CONFIG", h.join("none.cfg"))
            .env("ANSIBLE_HOME", h.join("ansible-home"))
            .env("ANSIBLE_LOCAL_TEMP", h.join("tmp"))
            .env("ANSIBLE_REMOTE_TEMP", h.join("tmp"))
            .env("ANSIBLE_COLLECTIONS_PATH", h.join("collections"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
            .env("ANSIBLE_STDOUT_CALLBACK", "default")
            .env("ANSIBLE_CALLBACK_RESULT_FORMAT", "json")
            .env("ANSIBLE_CALLBACK_FORMAT_PRETTY", "0")
            .env("RVL_ROOT_TOOLS", fixture_file("setup/bin"))
            .env("RVL_FETCH_ATTEMPTS", "2")
            .env("RVL_FETCH_STALL_SECS", "5")
            .arg("-i")
            .arg(inventory)
            .arg(playbook)
            .args(args);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("ansible-playbook did not start");
        Played {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// An inventory file (JSON is YAML) whose hosts run on this machine with the venv's Python.
    fn inventory(&self, name: &str, hosts: Value, vars: Value) -> PathBuf {
        let mut all_vars = json!({
            "ansible_connection": "local",
            "ansible_python_interpreter": self.venv.join("bin/python"),
            "rvl_binary": env!("CARGO_BIN_EXE_rvl"),
        });
        for (k, v) in vars.as_object().unwrap() {
            all_vars[k] = v.clone();
        }
        let inv = json!({ "all": { "vars": all_vars, "children": hosts } });
        let path = self.home.path().join(format!("{name}.yml"));
        fs::write(&path, serde_json::to_vec_pretty(&inv).unwrap()).unwrap();
        path
    }
}

fn cluster_playbook() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ansible/playbooks/cluster.yml")
}

/// Two boards as the example inventory has them, on fixture roots: the head, a ROCK 5 ITX
/// (u-boot-menu image), and a worker, a Turing RK1 (an Armbian image with RK1's device tree).
struct Cluster {
    head: Fixture,
    rk1: Fixture,
    a: Artifacts,
}

impl Cluster {
    fn new() -> Cluster {
        let rk1 = Fixture::copy("ampere-armbian");
        for f in ["model", "compatible"] {
            fs::copy(
                fixture_file(&format!("reference/dt/turing-rk1/{f}")),
                rk1.join(&format!("sys/firmware/devicetree/base/{f}")),
            )
            .unwrap();
        }
        Cluster {
            head: Fixture::copy("boltzmann-uboot-menu"),
            rk1,
            a: artifacts(&firmware_bytes(), None, &[]),
        }
    }

    /// The example inventory's groups with these roots: kernel, firmware and access only (no
    /// builds), no reboot, no health gate (a fake board never passes the live checks).
    fn inventory(&self, an: &Ansible) -> PathBuf {
        let host = |fx: &Fixture, board: &str| json!({ "rvl_root": fx.path(), "rvl_board": board });
        an.inventory(
            "cluster",
            json!({
                "rk3588": { "children": {
                    "head": { "hosts": { "rock5-itx": host(&self.head, "boltzmann") } },
                    "rpc_workers": { "hosts": { "rk1-1": host(&self.rk1, "turing-rk1") } },
                } }
            }),
            json!({
                "rvl_manifest": self.a.manifest,
                "rvl_setup_steps": ["kernel", "firmware", "access"],
                "rvl_become": false,
                "rvl_reboot": false,
                "rvl_require_healthy": false,
            }),
        )
    }

    fn snapshots(&self) -> [BTreeMap<String, roots::Node>; 2] {
        [snapshot(self.head.path()), snapshot(self.rk1.path())]
    }
}

const HOSTS: [&str; 2] = ["rock5-itx", "rk1-1"];

#[test]
fn the_cluster_playbook_provisions_two_boards_and_a_second_run_changes_nothing() {
    let Some(an) = ansible() else { return };
    let c = Cluster::new();
    let inv = c.inventory(&an);
    let first = an.play(&inv, &cluster_playbook(), &["--tags", "provision"], &[]);
    assert_eq!(first.code, Some(0), "{first}");
    for host in HOSTS {
        let r = first.recap(host);
        assert_eq!(
            (r["changed"], r["failed"]),
            (1, 0),
            "{host}: only the setup task changes: {first}"
        );
    }
    // What setup did, on each root.
    for fx in [&c.head, &c.rk1] {
        assert_eq!(
            fs::read(fx.join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin")).unwrap(),
            firmware_bytes()
        );
    }
    assert!(c
        .head
        .read("boot/extlinux/extlinux.conf")
        .contains("\ndefault l0\n"));
    assert_eq!(
        fs::read_link(c.rk1.join("boot/Image")).unwrap(),
        Path::new(&format!("vmlinuz-{MAINLINE}"))
    );

    let after_first = c.snapshots();
    let second = an.play(&inv, &cluster_playbook(), &["--tags", "provision"], &[]);
    assert_eq!(second.code, Some(0), "{second}");
    for host in HOSTS {
        let r = second.recap(host);
        assert_eq!((r["changed"], r["failed"]), (0, 0), "{host}: {second}");
    }
    let after_second = c.snapshots();
    for (a, b) in after_first.iter().zip(&after_second) {
        roots::assert_same(a, b);
    }
}

#[test]
fn check_mode_shows_setups_own_diffs_and_changes_nothing() {
    let Some(an) = ansible() else { return };
    let c = Cluster::new();
    let inv = c.inventory(&an);
    let before = c.snapshots();
    let run = an.play(
        &inv,
        &cluster_playbook(),
        &["--tags", "provision", "--check", "--diff"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run}");
    for host in HOSTS {
        assert_eq!(run.recap(host)["changed"], 1, "{host} would change: {run}");
    }
    for needle in [
        // the head's kernel step: its summary, the file it writes and what u-boot-update changes
        &format!("# kernel: boot {MAINLINE} by default"),
        "+U_BOOT_DEFAULT=\"l0\"",
        "-default l1",
        // the worker's: Armbian's links, and the firmware both get
        &format!("# link /boot/Image -> vmlinuz-{MAINLINE}"),
        "# install /lib/firmware/arm/mali/arch10.8/mali_csffw.bin",
    ] {
        assert!(run.stdout.contains(needle), "{needle:?}: {run}");
    }
    let after = c.snapshots();
    for (a, b) in before.iter().zip(&after) {
        roots::assert_same(a, b);
    }
    for fx in [&c.head, &c.rk1] {
        assert!(!fx.join(roots::STATE_DIR).exists(), "check mode made state");
    }
}

#[test]
fn a_failing_step_fails_the_task_with_setups_message_and_status_and_a_blocked_one_with_its_fix() {
    let Some(an) = ansible() else { return };
    let c = Cluster::new();
    // The head's u-boot-update writes the wrong default: setup's check fails the kernel step
    // and puts everything back. The RK1 image lacks the mainline kernel: its kernel step is
    // blocked, firmware and access still run.
    c.rk1.remove(&format!("boot/vmlinuz-{MAINLINE}"));
    let inv = c.inventory(&an);
    let extlinux = c.head.read("boot/extlinux/extlinux.conf");
    let run = an.play(
        &inv,
        &cluster_playbook(),
        &["--tags", "provision"],
        &[("RVL_TEST_UBOOT_UPDATE", "default=l1")],
    );
    assert_eq!(
        run.code,
        Some(2),
        "ansible's status for failed hosts: {run}"
    );

    let head = run.failure("rock5-itx");
    assert_eq!(head["rc"], 12, "{run}");
    assert_eq!(head["kind"], "step-failed", "{run}");
    assert_eq!(head["changed"], false, "{run}");
    let msg = head["msg"].as_str().unwrap();
    assert!(
        msg.starts_with(&format!(
            "step kernel failed: /boot/extlinux/extlinux.conf was regenerated but `default l1` boots 6.1.75-npu-port, not {MAINLINE}"
        )) && msg.contains("Everything this run changed was put back"),
        "{msg}"
    );
    assert_eq!(c.head.read("boot/extlinux/extlinux.conf"), extlinux);
    let r = run.recap("rock5-itx");
    assert_eq!((r["changed"], r["failed"]), (0, 1), "{run}");

    let rk1 = run.failure("rk1-1");
    assert_eq!(rk1["rc"], 11, "{run}");
    assert_eq!(rk1["changed"], true, "the firmware was installed: {run}");
    assert_eq!(rk1["steps"], json!(["firmware", "access"]), "{run}");
    let msg = rk1["msg"].as_str().unwrap();
    // turing-rk1 pins no kernel: any mainline from 6.13 on (its DT enables the GPU) will do.
    assert_eq!(
        msg,
        "kernel blocked: no mainline kernel 6.13 or newer is installed (fix: install a kernel 6.13 or newer built with CONFIG_DRM_PANTHOR, then run setup again)"
    );
    assert_eq!(
        fs::read(c.rk1.join("lib/firmware/arm/mali/arch10.8/mali_csffw.bin")).unwrap(),
        firmware_bytes()
    );
}

#[test]
fn rvl_doctor_returns_the_doctors_document_as_its_fact() {
    let Some(an) = ansible() else { return };
    let manifest = fixture_file("stub-manifest.yaml");
    let roots = ["turing-rk1-mainline", "turing-rk1-gpu-disabled"].map(Fixture::copy);
    let out = an.home.path().join("facts");
    fs::create_dir(&out).unwrap();
    let inv = an.inventory(
        "doctor",
        json!({ "boards": { "hosts": {
            "rk1-ok": { "rvl_root": roots[0].path() },
            "rk1-off": { "rvl_root": roots[1].path() },
        } } }),
        json!({ "rvl_manifest": manifest, "out": out }),
    );
    let playbook = fixture_file("ansible/doctor.yml");
    let run = an.play(&inv, &playbook, &[], &[]);
    assert_eq!(run.code, Some(0), "{run}");
    for (host, fx) in ["rk1-ok", "rk1-off"].iter().zip(&roots) {
        let fact: Value =
            serde_json::from_str(&fs::read_to_string(out.join(format!("{host}.json"))).unwrap())
                .unwrap();
        let direct = rvl(&["doctor", "--json", "--no-vulkan", "--manifest"])
            .arg(&manifest)
            .root(fx)
            .run()
            .stdout_json();
        assert_eq!(fact, direct, "{host}: the fact is rvl doctor --json");
        assert_eq!(fact["board"]["id"], "turing-rk1");
        // Only the copy of the fact changes something; the playbook asserts the doctor did not.
        let r = run.recap(host);
        assert_eq!((r["changed"], r["failed"]), (1, 0), "{run}");
    }
    // The summary fields were checked against the document in the playbook; the 6.12 board's
    // failures are there too.
    let off: Value =
        serde_json::from_str(&fs::read_to_string(out.join("rk1-off.json")).unwrap()).unwrap();
    assert_eq!(off["exit_code"], 1);
}
