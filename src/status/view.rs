//! What `rvl status` shows, decided from gathered data alone (no IO here), and its one-screen
//! rendering. Every field may come from the inspected tree, so the text is escaped per line.

use serde::{Deserialize, Serialize};

use crate::icd;
use crate::inventory::{BootEntry, Inventory};
use crate::manifest::Manifest;
use crate::output::{count, escape_line, Outcome, Style};
use crate::profile::Profile;
use crate::setup::journal::{Journal, State};
use crate::setup::rollback::{id_secs, utc};

/// `share/rvl/build.json` as setup writes it: a source build's project, version and series, or
/// a prebuilt archive's digest. Unknown fields are ignored, missing ones left empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub patches: Vec<StampPatch>,
    /// sha256 of the prebuilt archive, for an install from one.
    #[serde(default)]
    pub prebuilt: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StampPatch {
    pub name: String,
}

/// An install prefix under /opt/rvl and its stamp (none: the install is incomplete).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    pub prefix: String,
    pub stamp: Option<Stamp>,
}

/// Everything status is computed from.
pub struct Inputs<'a> {
    pub inv: &'a Inventory,
    pub profile: Option<&'a Profile>,
    pub manifest: &'a Manifest,
    pub state: &'a State,
    pub interrupted: Option<&'a Journal>,
    pub builds: Vec<Build>,
    /// How status was pointed at the system, for the commands it suggests.
    pub hint: crate::hint::Invocation,
}

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The board profile's id, when one matched.
    pub board: Option<String>,
    pub kernel: KernelView,
    /// The GPU device and the driver bound to it (none when unbound).
    pub gpu: Option<GpuView>,
    pub firmware: Option<FirmwareView>,
    pub vulkan: VulkanView,
    /// rvl's llama.cpp build, when installed.
    pub llama_cpp: Option<BuildView>,
    pub setup: SetupView,
    #[serde(skip)]
    pub hint: crate::hint::Invocation,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelView {
    pub running: Option<String>,
    pub next_boot: Option<BootView>,
    /// The entry that boots another kernel (the previous or vendor one) if the next fails.
    pub rescue: Option<BootView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BootView {
    /// How it is chosen: "extlinux label l0", "/boot/Image".
    pub via: String,
    pub release: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GpuView {
    pub device: String,
    pub driver: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FirmwareView {
    pub path: String,
    /// The release the manifest knows this file as.
    pub release: Option<String>,
    /// From the CSF header: "header 1.0, version hash 0x…".
    pub build: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VulkanView {
    /// The panvk ICD manifest the loader uses, and the library it names.
    pub icd: Option<String>,
    pub library: Option<String>,
    pub mesa: MesaView,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MesaFrom {
    /// A build setup installed under /opt/rvl.
    Rvl,
    /// The distribution's (any library outside /opt/rvl).
    Distro,
    /// No usable panvk ICD.
    None,
}

#[derive(Debug, Clone, Serialize)]
pub struct MesaView {
    pub from: MesaFrom,
    /// rvl's build, when `from` is rvl.
    pub build: Option<BuildView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildView {
    pub prefix: String,
    pub version: Option<String>,
    /// The patch series built in, in order.
    pub patches: Vec<String>,
    /// False when the prefix has no build stamp: an install that did not finish.
    pub complete: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetupView {
    /// Runs that can still be rolled back, oldest first.
    pub applied: Vec<RunView>,
    pub rolled_back: usize,
    /// A run that did not finish (its id).
    pub interrupted: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub id: String,
    /// When it started (UTC), from the run id.
    pub at: Option<String>,
    pub steps: Vec<String>,
    pub paths: usize,
}

impl Status {
    pub fn new(i: &Inputs) -> Status {
        let inv = i.inv;
        let next_boot = next_boot(inv);
        let rescue = rescue(inv, next_boot.as_ref());
        let (icd, library) = active_icd(inv);
        Status {
            hint: i.hint.clone(),
            board: i.profile.map(|p| p.id.clone()),
            kernel: KernelView {
                running: inv.kernel.release.clone(),
                next_boot,
                rescue,
            },
            gpu: inv
                .gpu
                .panthor_device()
                .or_else(|| inv.gpu.kbase_device())
                .or(inv.gpu.devices.first())
                .map(|d| GpuView {
                    device: d.name.clone(),
                    driver: d.driver.clone(),
                }),
            firmware: inv.firmware.found.as_ref().map(|f| FirmwareView {
                path: f.path.clone(),
                release: f
                    .sha256
                    .as_deref()
                    .and_then(|s| i.manifest.firmware_by_sha256(s))
                    .map(|k| k.version.clone()),
                build: f.header.map(|h| {
                    format!(
                        "header {}.{}, version hash 0x{:08x}",
                        h.major, h.minor, h.version_hash
                    )
                }),
                error: f.error.clone(),
            }),
            vulkan: VulkanView {
                mesa: mesa(library.as_deref(), &i.builds),
                icd,
                library,
            },
            llama_cpp: i
                .builds
                .iter()
                .find(|b| is_project(b, "llama.cpp"))
                .map(build_view),
            setup: SetupView {
                applied: i
                    .state
                    .transactions
                    .iter()
                    .map(|t| RunView {
                        id: t.id.clone(),
                        at: id_secs(&t.id).map(utc),
                        steps: t.steps.clone(),
                        paths: t.entries.len(),
                    })
                    .collect(),
                rolled_back: i.state.rolled_back.len(),
                interrupted: i.interrupted.map(|j| j.id.clone()),
            },
        }
    }
}

/// The entry U-Boot boots without intervention: extlinux.conf first (distro boot reads it
/// before boot.scr), then Armbian's `/boot/Image` link.
fn next_boot(inv: &Inventory) -> Option<BootView> {
    if let Some(x) = &inv.boot.extlinux {
        return x.default_entry.as_ref().map(label_view);
    }
    inv.boot.armbian.as_ref().map(|a| BootView {
        via: "/boot/Image".into(),
        release: a.image_release.clone(),
    })
}

fn label_view(e: &BootEntry) -> BootView {
    BootView {
        via: format!("extlinux label {}", e.label),
        release: e.release.clone(),
    }
}

/// The extlinux entry to pick at the U-Boot menu when the next kernel does not come up: the
/// running kernel's when the next boot changes kernel, else the first other release.
fn rescue(inv: &Inventory, next: Option<&BootView>) -> Option<BootView> {
    let x = inv.boot.extlinux.as_ref()?;
    let next_release = next.and_then(|n| n.release.as_deref());
    let other = |e: &&BootEntry| e.release.is_some() && e.release.as_deref() != next_release;
    let running = inv.kernel.release.as_deref();
    x.entries
        .iter()
        .filter(other)
        .find(|e| e.release.as_deref() == running)
        .or_else(|| x.entries.iter().find(other))
        .map(label_view)
}

/// The first usable panvk manifest in the loader's order, and its library.
fn active_icd(inv: &Inventory) -> (Option<String>, Option<String>) {
    inv.vulkan_icd
        .manifests
        .iter()
        .filter(|m| m.panvk() && m.error.is_none() && m.library_found.is_some())
        .find(|m| icd::filtered_out(&inv.env, &m.path).is_none())
        .map(|m| {
            (
                Some(m.path.clone()),
                m.manifest.as_ref().map(|x| x.library_path.clone()),
            )
        })
        .unwrap_or((None, None))
}

/// Whose Mesa the active ICD loads: rvl's when its library lies in one of rvl's prefixes.
fn mesa(library: Option<&str>, builds: &[Build]) -> MesaView {
    let Some(lib) = library else {
        return MesaView {
            from: MesaFrom::None,
            build: None,
        };
    };
    match builds
        .iter()
        .find(|b| lib.starts_with(&format!("{}/", b.prefix)))
    {
        Some(b) => MesaView {
            from: MesaFrom::Rvl,
            build: Some(build_view(b)),
        },
        None => MesaView {
            from: MesaFrom::Distro,
            build: None,
        },
    }
}

/// A build of `project`: by its stamp, or by the prefix's name when the stamp is missing.
fn is_project(b: &Build, project: &str) -> bool {
    match b.stamp.as_ref().and_then(|s| s.project.as_deref()) {
        Some(p) => p == project,
        None => b
            .prefix
            .rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(&format!("{project}-"))),
    }
}

fn build_view(b: &Build) -> BuildView {
    BuildView {
        prefix: b.prefix.clone(),
        version: b.stamp.as_ref().and_then(|s| s.version.clone()),
        patches: b
            .stamp
            .as_ref()
            .map(|s| s.patches.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default(),
        complete: b.stamp.is_some(),
    }
}

/// `rvl status`'s outcome: always exit 0 (it judges nothing; doctor does).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct StatusOutcome(pub Status);

impl Outcome for StatusOutcome {
    fn exit_code(&self) -> i32 {
        crate::exit::OK
    }

    fn human(&self, style: Style) -> String {
        render(&self.0, style)
    }
}

const UNKNOWN: &str = "unknown";

fn boot_text(b: &BootView) -> String {
    format!("{} ({})", b.release.as_deref().unwrap_or(UNKNOWN), b.via)
}

/// The build's one-line description: version, patch level, prefix.
fn build_text(b: &BuildView) -> String {
    let version = b.version.as_deref().unwrap_or("version unknown");
    let patches = if !b.complete {
        "no build stamp: the install did not finish".to_string()
    } else if b.patches.is_empty() {
        "no patches".to_string()
    } else {
        format!(
            "{}: {}",
            count(b.patches.len(), "patch"),
            b.patches.join(", ")
        )
    };
    format!("{version} ({patches}) in {}", b.prefix)
}

/// One line per layer of the stack, labels aligned.
pub fn render(s: &Status, style: Style) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    let k = &s.kernel;
    rows.push((
        "kernel",
        format!(
            "running {}, next boot {}",
            k.running.as_deref().unwrap_or(UNKNOWN),
            k.next_boot
                .as_ref()
                .map(boot_text)
                .unwrap_or_else(|| "unknown (no extlinux.conf or armbianEnv.txt)".into())
        ),
    ));
    // Without a readable boot configuration the kernel row already says so; a rescue row
    // would only repeat the same missing file.
    if k.next_boot.is_some() {
        rows.push((
            "rescue",
            k.rescue
                .as_ref()
                .map(boot_text)
                .unwrap_or_else(|| "none: no other kernel in extlinux.conf".into()),
        ));
    }
    rows.push((
        "driver",
        match &s.gpu {
            Some(g) => format!(
                "{} on {}",
                g.driver.as_deref().unwrap_or("no driver bound"),
                g.device
            ),
            None => "no Mali GPU device found".into(),
        },
    ));
    rows.push((
        "firmware",
        match &s.firmware {
            Some(f) => {
                let mut t = f.path.clone();
                let what: Vec<&str> =
                    [f.release.as_deref(), f.build.as_deref(), f.error.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect();
                if !what.is_empty() {
                    t.push_str(&format!(": {}", what.join(", ")));
                }
                t
            }
            None => "not found".into(),
        },
    ));
    let v = &s.vulkan;
    rows.push((
        "vulkan",
        match (&v.icd, &v.library) {
            (Some(icd), Some(lib)) => format!("{icd} -> {lib}"),
            _ => "no usable panvk ICD".into(),
        },
    ));
    rows.push((
        "mesa",
        match (v.mesa.from, &v.mesa.build) {
            (MesaFrom::Rvl, Some(b)) => format!("rvl build {}", build_text(b)),
            (MesaFrom::Distro, _) => "the distribution's".into(),
            _ => "none active".into(),
        },
    ));
    rows.push((
        "llama.cpp",
        s.llama_cpp
            .as_ref()
            .map(build_text)
            .unwrap_or_else(|| "not installed by rvl".into()),
    ));
    let st = &s.setup;
    let mut setup = if st.applied.is_empty() {
        "nothing applied".to_string()
    } else {
        st.applied
            .iter()
            .map(|r| {
                format!(
                    "{} at {}: {} ({})",
                    r.id,
                    r.at.as_deref().unwrap_or(UNKNOWN),
                    r.steps.join(", "),
                    count(r.paths, "path")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if st.rolled_back > 0 {
        setup.push_str(&format!("; {} rolled back", count(st.rolled_back, "run")));
    }
    rows.push(("setup", setup));

    let mut out = style.bold(&escape_line(&format!(
        "rvl status: {}",
        s.board
            .as_deref()
            .map(|b| format!("profile {b}"))
            .unwrap_or_else(|| "no RK3588 board profile".into())
    )));
    out.push('\n');
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    for (label, text) in rows {
        out.push_str(&format!("{label:width$}  {}\n", escape_line(&text)));
    }
    if let Some(id) = &st.interrupted {
        out.push_str(&style.red(&escape_line(&format!(
            "setup run {id} was interrupted: the next `{}` or `{}` finishes it",
            s.hint.setup(""),
            s.hint.setup_journal("--rollback")
        ))));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::ExtlinuxFacts;

    fn entry(label: &str, release: &str) -> BootEntry {
        BootEntry {
            label: label.into(),
            release: Some(release.into()),
            ..Default::default()
        }
    }

    fn extlinux(running: &str, default: &str, entries: &[(&str, &str)]) -> Inventory {
        let entries: Vec<BootEntry> = entries.iter().map(|(l, r)| entry(l, r)).collect();
        let mut inv = Inventory::default();
        inv.kernel.release = Some(running.into());
        inv.boot.extlinux = Some(ExtlinuxFacts {
            default_entry: entries.iter().find(|e| e.label == default).cloned(),
            entries,
            ..Default::default()
        });
        inv
    }

    #[test]
    fn the_rescue_entry_is_the_running_kernel_when_the_next_boot_changes_kernel() {
        let inv = extlinux(
            "6.1",
            "new",
            &[("old", "5.10"), ("bsp", "6.1"), ("new", "7.0")],
        );
        let next = next_boot(&inv);
        assert_eq!(next.as_ref().unwrap().release.as_deref(), Some("7.0"));
        assert_eq!(
            rescue(&inv, next.as_ref()).unwrap().via,
            "extlinux label bsp"
        );
        // Already on the next kernel: the first other release is the way back.
        let inv = extlinux(
            "7.0",
            "new",
            &[("new", "7.0"), ("r", "7.0"), ("bsp", "6.1")],
        );
        let next = next_boot(&inv);
        assert_eq!(
            rescue(&inv, next.as_ref()).unwrap().via,
            "extlinux label bsp"
        );
        let inv = extlinux("7.0", "new", &[("new", "7.0")]);
        assert_eq!(rescue(&inv, next_boot(&inv).as_ref()), None);
    }

    #[test]
    fn mesa_is_rvls_only_inside_one_of_its_prefixes() {
        let builds = [Build {
            prefix: "/opt/rvl/mesa-1".into(),
            stamp: Some(Stamp::default()),
        }];
        assert_eq!(
            mesa(Some("/opt/rvl/mesa-1/lib/x.so"), &builds).from,
            MesaFrom::Rvl
        );
        assert_eq!(
            mesa(Some("/opt/rvl/mesa-10/lib/x.so"), &builds).from,
            MesaFrom::Distro
        );
        assert_eq!(mesa(Some("/usr/lib/x.so"), &builds).from, MesaFrom::Distro);
        assert_eq!(mesa(None, &builds).from, MesaFrom::None);
    }
}
