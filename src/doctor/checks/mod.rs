//! The checks, in the order they run and print. Each is a pure function of a [`Context`].

use super::context::Context;
use super::finding::Finding;

mod board;
mod boot;
mod firmware;
mod gpu_clock;
mod gpu_driver;
pub(crate) mod kernel;
mod llama_cpp;
mod pending;
mod render_node;
mod vulkan_device;
mod vulkan_icd;
mod xdg;

pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub run: fn(&Context) -> Finding,
}

pub const ALL: &[Check] = &[
    Check {
        id: "board",
        title: "which board profile matches the device tree",
        run: board::check,
    },
    Check {
        id: "kernel",
        title: "running kernel: mainline with panthor, or vendor BSP",
        run: kernel::check,
    },
    Check {
        id: "gpu-driver",
        title: "which driver owns the GPU (panthor, kbase, none) and its device-tree status",
        run: gpu_driver::check,
    },
    Check {
        id: "render-node",
        title: "the panthor DRM render node and whether this user can open it",
        run: render_node::check,
    },
    Check {
        id: "firmware",
        title: "CSF firmware file panthor loads (path, header, version, initramfs)",
        run: firmware::check,
    },
    Check {
        id: "vulkan-icd",
        title: "Vulkan ICD manifests for panvk in the loader's search order",
        run: vulkan_icd::check,
    },
    Check {
        id: "xdg-runtime-dir",
        title: "XDG_RUNTIME_DIR set, owned by the user, mode 0700",
        run: xdg::check,
    },
    Check {
        id: "boot-default",
        title: "which kernel boots next, compared with the running and the pinned mainline kernel",
        run: boot::check,
    },
    Check {
        id: "vulkan-device",
        title: "panvk device through the Vulkan loader (live only)",
        run: vulkan_device::check,
    },
    Check {
        id: "gpu-clock",
        title: "panthor's devfreq: max_freq and governor can reach the top OPP",
        run: gpu_clock::check,
    },
    Check {
        id: "llama-cpp",
        title: "rvl's llama.cpp build: prefix, version, Mali tiles patch, binaries, Vulkan device",
        run: llama_cpp::check,
    },
];

pub fn by_id(id: &str) -> Option<&'static Check> {
    ALL.iter().find(|c| c.id == id)
}

/// Common early exit: GPU checks mean nothing without an RK3588 profile.
pub(crate) fn needs_profile(ctx: &Context, id: &str) -> Option<Finding> {
    ctx.profile
        .is_none()
        .then(|| Finding::skip(id, "not an RK3588 board (see board)"))
}

/// A check's stages under test see the boltzmann profile and the built-in manifest.
#[cfg(test)]
fn with_boltzmann<R>(inv: &crate::inventory::Inventory, f: impl FnOnce(&Context) -> R) -> R {
    let profiles = crate::profile::Profiles::builtin().unwrap();
    let manifest = crate::manifest::Manifest::builtin();
    f(&Context {
        inv,
        profile: profiles.by_id("boltzmann"),
        source: None,
        manifest: &manifest,
        no_vulkan: true,
        hint: crate::hint::Invocation::live(true),
    })
}

#[cfg(test)]
mod tests {
    //! The live-only branches, fed with hand-made facts (no machine needed).
    use super::*;
    use crate::doctor::finding::Status;
    use crate::host::sysfs::{PlatformGpu, RenderNode};
    use crate::inventory::Inventory;
    use crate::inventory::{RenderAccess, UserFacts, XdgFacts};
    use crate::profile::Profiles;
    use crate::vulkan::info::{DeviceInfo, VulkanProbe, DRIVER_ID_MESA_PANVK};

    fn live_inventory() -> Inventory {
        let mut inv = Inventory {
            live: true,
            ..Default::default()
        };
        inv.gpu.devices.push(PlatformGpu {
            name: "fb000000.gpu".into(),
            path: "/sys/devices/platform/fb000000.gpu".into(),
            compatible: vec!["rockchip,rk3588-mali".into(), "arm,mali-valhall-csf".into()],
            driver: Some("panthor".into()),
            gpuinfo: None,
        });
        inv.render_nodes.push(RenderNode {
            name: "renderD129".into(),
            device: Some("/sys/devices/platform/fb000000.gpu".into()),
            driver: Some("panthor".into()),
            dev_path: "/dev/dri/renderD129".into(),
            dev_exists: true,
        });
        inv.live_facts.user = Some(UserFacts {
            euid: 1000,
            groups: vec![1000],
            sudo_user: None,
        });
        inv.live_facts.render.push(RenderAccess {
            dev_path: "/dev/dri/renderD129".into(),
            ioctl_driver: Some("panthor".into()),
            ioctl_error: None,
            mode: Some(0o660),
            gid: Some(105),
            uid: Some(0),
            group: Some("render".into()),
            read_write: true,
            access_error: None,
        });
        inv
    }

    fn run(id: &str, inv: &Inventory, no_vulkan: bool) -> Finding {
        let profiles = Profiles::builtin().unwrap();
        let manifest = crate::manifest::Manifest::builtin();
        let ctx = Context {
            inv,
            profile: profiles.by_id("boltzmann"),
            source: None,
            manifest: &manifest,
            no_vulkan,
            hint: crate::hint::Invocation::live(true),
        };
        (by_id(id).unwrap().run)(&ctx)
    }

    #[test]
    fn render_node_is_found_by_device_not_number() {
        let inv = live_inventory();
        let f = run("render-node", &inv, false);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(f.summary.contains("renderD129"));
    }

    #[test]
    fn render_node_without_access_names_the_group() {
        let mut inv = live_inventory();
        inv.live_facts.render[0].read_write = false;
        inv.live_facts.render[0].access_error = Some("Permission denied (os error 13)".into());
        let f = run("render-node", &inv, false);
        assert_eq!(f.status, Status::Fail);
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("is not a member of group render")));
        assert!(f.fix.unwrap().contains("usermod -aG render"));
    }

    #[test]
    fn render_node_answering_as_another_driver_fails() {
        let mut inv = live_inventory();
        inv.live_facts.render[0].ioctl_driver = Some("rockchip".into());
        assert_eq!(run("render-node", &inv, false).status, Status::Fail);
    }

    #[test]
    fn xdg_runtime_dir_states() {
        let mut inv = live_inventory();
        assert_eq!(
            run("xdg-runtime-dir", &inv, false).status,
            Status::Warn,
            "unset"
        );
        let mut x = XdgFacts {
            path: "/run/user/1000".into(),
            exists: true,
            is_dir: true,
            owner: Some(1000),
            mode: Some(0o700),
        };
        inv.live_facts.xdg_runtime_dir = Some(x.clone());
        assert_eq!(run("xdg-runtime-dir", &inv, false).status, Status::Pass);
        x.mode = Some(0o755);
        inv.live_facts.xdg_runtime_dir = Some(x.clone());
        let f = run("xdg-runtime-dir", &inv, false);
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.contains("0755"));
        x.mode = Some(0o700);
        x.owner = Some(0);
        inv.live_facts.xdg_runtime_dir = Some(x);
        assert!(run("xdg-runtime-dir", &inv, false)
            .summary
            .contains("uid 0"));
    }

    fn panvk(mesa: &str) -> DeviceInfo {
        DeviceInfo {
            name: "Mali-G610 MC4".into(),
            kind: "integrated-gpu".into(),
            api_version: "1.4.335".into(),
            vendor_id: 0x13b5,
            driver_id: DRIVER_ID_MESA_PANVK.into(),
            driver_name: "panvk".into(),
            driver_info: mesa.into(),
            shader_float16: true,
            shader_int8: true,
            integer_dot_product: true,
            subgroup_size: 16,
            max_compute_shared_memory: 32768,
            ..Default::default()
        }
    }

    #[test]
    fn vulkan_device_states_the_known_ubatch_limit_on_old_mesa() {
        let mut inv = live_inventory();
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![panvk("Mesa 26.1.6")],
        });
        let f = run("vulkan-device", &inv, false);
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.contains("ubatch > 64"), "{}", f.summary);
        assert!(f.fix.unwrap().contains("-ub 64"));
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![panvk("Mesa 26.2.0")],
        });
        inv.env = crate::host::env::Env::from_pairs([("PAN_I_WANT_A_BROKEN_VULKAN_DRIVER", "1")]);
        let f = run("vulkan-device", &inv, false);
        // Stock 26.2 still allocates TLS per command buffer (the lab's 26.2 tree): same warning.
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("not needed") || e.contains("has not needed")));
        assert!(f.summary.contains("fp16 yes") && f.summary.contains("shared memory 32 KiB"));
        assert!(f.summary.contains("compute units unknown"), "{}", f.summary);
        assert!(!f.evidence.iter().any(|e| e.contains("has not checked")));
        // A driver exposing VK_ARM_shader_core_builtins gives the G610's four cores.
        let mut cores = panvk("Mesa 26.2.0");
        cores.compute_units = Some(4);
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![cores],
        });
        let f = run("vulkan-device", &inv, false);
        assert!(f.summary.contains("compute units 4"), "{}", f.summary);
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![panvk("Mesa 26.3.0")],
        });
        let f = run("vulkan-device", &inv, false);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.evidence.iter().any(|e| e.contains("has not checked")),
            "{f:?}"
        );
        assert_eq!(run("vulkan-device", &inv, true).status, Status::Skip);
    }

    /// The inventory of a live system whose one usable panvk ICD is rvl's build of Mesa 26.2.4
    /// with `patches` applied.
    fn rvl_panvk_inventory(patches: &[(&str, &str)]) -> Inventory {
        use crate::mesa::testing::{with_rvl_panvk, PREFIX};
        let lib = format!("{PREFIX}/lib/aarch64-linux-gnu/libvulkan_panfrost.so");
        let mut inv = with_rvl_panvk(live_inventory(), &lib, patches);
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![panvk("Mesa 26.2.4")],
        });
        inv
    }

    #[test]
    fn vulkan_device_clears_the_ubatch_warning_only_for_rvls_panvk_with_the_tls_patch() {
        let tls = [(
            "mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch",
            "any-revision",
        )];
        let f = run("vulkan-device", &rvl_panvk_inventory(&tls), false);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(
            f.summary
                .contains("ubatch > 64 limit fixed by rvl's panvk (Mesa 26.2.4"),
            "{}",
            f.summary
        );
        // rvl's prefix built without the series is a stock driver: the warning stays.
        let f = run("vulkan-device", &rvl_panvk_inventory(&[]), false);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        let icd = run("vulkan-icd", &rvl_panvk_inventory(&[]), false);
        assert!(
            icd.summary.contains("without the queue TLS patch"),
            "{}",
            icd.summary
        );
    }

    /// rvl's build at the current patch level, its binaries executable.
    fn patched_install() -> crate::inventory::LlamaInstall {
        use crate::inventory::{LlamaInstall, LlamaStamp, StampPatch};
        let patches = crate::llama::rvl_series()
            .into_iter()
            .map(|(name, sha256)| StampPatch { name, sha256 })
            .collect();
        LlamaInstall {
            prefix: "/opt/rvl/llama.cpp-0.3.36-rvl1".into(),
            stamp: Some(LlamaStamp {
                version: "0.3.36".into(),
                patches,
                ..Default::default()
            }),
            server_executable: true,
            bench_executable: true,
            test_backend_ops_executable: true,
            rpc_server_executable: true,
            ..Default::default()
        }
    }

    #[test]
    fn llama_cpp_live_needs_the_binary_to_run_and_its_vulkan_backend_to_list_a_device() {
        use crate::inventory::LlamaDevices;
        let mut inv = live_inventory();
        inv.llama.installs.push(patched_install());
        let listed = |devices: &[&str], error: Option<&str>| LlamaDevices {
            binary: "/opt/rvl/llama.cpp-0.3.36-rvl1/bin/llama-bench".into(),
            error: error.map(str::to_string),
            devices: devices.iter().map(|d| d.to_string()).collect(),
        };
        inv.llama.list_devices = Some(listed(
            &["Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)"],
            None,
        ));
        let f = run("llama-cpp", &inv, false);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(f.summary.contains("Vulkan0: Mali-G610"), "{}", f.summary);
        inv.llama.list_devices = Some(listed(&[], Some("exited with exit status: 134: Aborted")));
        let f = run("llama-cpp", &inv, false);
        assert_eq!(f.status, Status::Fail, "{f:?}");
        assert!(f
            .summary
            .contains("does not run: exited with exit status: 134"));
        inv.llama.list_devices = Some(listed(&["CPU: AMD EPYC (64000 MiB, 64000 MiB free)"], None));
        let f = run("llama-cpp", &inv, false);
        assert_eq!(f.status, Status::Fail, "{f:?}");
        assert!(f.summary.contains("Vulkan backend lists no device"));
        // Asked not to load Vulkan: files only, and it says why.
        inv.llama.list_devices = None;
        let f = run("llama-cpp", &inv, true);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("--no-vulkan: binaries not run")));
    }

    #[test]
    fn vulkan_device_says_the_ubatch_limit_is_handled_when_rvls_patched_llama_cpp_is_installed() {
        let mut inv = live_inventory();
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![panvk("Mesa 26.1.6")],
        });
        inv.llama.installs.push(patched_install());
        let f = run("vulkan-device", &inv, false);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(
            f.summary.contains("handled by rvl's patched llama.cpp"),
            "{}",
            f.summary
        );
        // Without the patch in the stamp the warning is back.
        inv.llama.installs[0]
            .stamp
            .as_mut()
            .unwrap()
            .patches
            .clear();
        assert_eq!(run("vulkan-device", &inv, false).status, Status::Warn);
    }

    #[test]
    fn vulkan_device_warns_when_a_recorded_prefill_run_got_wrong_results_from_the_gpu() {
        use crate::inventory::WrongResults;
        let mut inv = live_inventory();
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: None,
            devices: vec![panvk("Mesa 26.1.6")],
        });
        inv.llama.installs.push(patched_install());
        assert_eq!(run("vulkan-device", &inv, false).status, Status::Pass);
        inv.llama.wrong_results.push(WrongResults {
            record: "/home/u/.local/state/rvl/prefill/qwen.gguf.json".into(),
            model: "qwen.gguf".into(),
            ubatches: vec![128, 256],
            first_failure: "MUL_MAT(type_a=q4_0,m=2048,n=128,k=2048): [MUL_MAT] ERR = 0.5 > 0.0005"
                .into(),
        });
        let f = run("vulkan-device", &inv, false);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert!(
            f.summary.ends_with(
                "; wrong results from llama.cpp on this GPU at ubatch 128, 256 of qwen.gguf"
            ),
            "{}",
            f.summary
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("qwen.gguf.json: wrong GPU results at ubatch 128, 256")));
        assert!(f
            .fix
            .unwrap()
            .contains("rvl serve never uses those ubatches"));
    }

    #[test]
    fn vulkan_device_without_loader_is_a_finding() {
        let mut inv = live_inventory();
        inv.live_facts.vulkan = Some(VulkanProbe {
            error: Some("cannot load the Vulkan loader".into()),
            devices: vec![],
        });
        let f = run("vulkan-device", &inv, false);
        assert_eq!(f.status, Status::Fail);
        assert!(f.fix.unwrap().contains("libvulkan1"));
    }

    #[test]
    fn every_warning_and_failure_carries_a_fix() {
        for root in std::fs::read_dir("tests/fixtures/roots").unwrap() {
            let root = root.unwrap().path();
            if !root.is_dir() {
                continue;
            }
            let r = crate::host::Root::new(&root);
            let inv = crate::host::gather(
                &r,
                &crate::host::env::Env::default(),
                &crate::host::GatherOptions {
                    firmware: "arm/mali/arch10.8/mali_csffw.bin",
                    live: false,
                    vulkan: false,
                    vulkan_library: None,
                    llama_devices: false,
                },
            );
            for c in ALL {
                let f = run(c.id, &inv, true);
                if f.status >= Status::Warn {
                    assert!(f.fix.is_some(), "{} in {}: {f:?}", c.id, root.display());
                }
            }
        }
    }
}
