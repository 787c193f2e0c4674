//! Board profiles: what rvl knows about one board (how to recognise it, its GPU, the kernels it
//! wants, how it boots). One YAML file a board under `profiles/`, embedded in the binary;
//! `--profiles DIR` replaces the built-in set. The schema is documented in `profiles/README.md`.
//!
//! Below the verbs: it reads through [`crate::host::root`] and [`crate::host::devicetree`],
//! imports the inventory, `yaml` and `validate`, and reports its own errors ([`ProfileError`],
//! [`UnknownBoard`]), which [`crate::error::Error`] collects; it never imports `error`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::host::root::Root;
pub use crate::inventory::boot::BootLayout;

/// The built-in profiles, embedded so the binary works from anywhere.
const BUILTIN: &[(&str, &str)] = &[
    ("boltzmann.yaml", include_str!("../profiles/boltzmann.yaml")),
    ("ampere.yaml", include_str!("../profiles/ampere.yaml")),
    ("rock-5b.yaml", include_str!("../profiles/rock-5b.yaml")),
    (
        "rock-5b-plus.yaml",
        include_str!("../profiles/rock-5b-plus.yaml"),
    ),
    ("rock-5a.yaml", include_str!("../profiles/rock-5a.yaml")),
    (
        "orangepi-5.yaml",
        include_str!("../profiles/orangepi-5.yaml"),
    ),
    (
        "orangepi-5-plus.yaml",
        include_str!("../profiles/orangepi-5-plus.yaml"),
    ),
    (
        "coolpi-cm5-evb.yaml",
        include_str!("../profiles/coolpi-cm5-evb.yaml"),
    ),
    (
        "turing-rk1.yaml",
        include_str!("../profiles/turing-rk1.yaml"),
    ),
    (
        "generic-rk3588.yaml",
        include_str!("../profiles/generic-rk3588.yaml"),
    ),
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Stable name used by `--board` (e.g. "boltzmann").
    pub id: String,
    /// Human name of the board.
    pub name: String,
    /// Device-tree `compatible` strings that select this profile.
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    /// Other names `--board` takes: what the box and the vendor call the board
    /// (`rock-5-itx`, `genbook`). Its `match` strings are names too (`radxa,rock-5-itx`).
    #[serde(default)]
    pub aliases: Vec<String>,
    pub soc: Soc,
    /// True for the catch-all profile used when no board-specific one matches.
    #[serde(default)]
    pub fallback: bool,
    pub gpu: GpuSpec,
    pub kernel: KernelSpec,
    pub boot: BootSpec,
    /// Whether the mainline device tree of this board enables the GPU node; absent = unknown.
    #[serde(default)]
    pub mainline_enables_gpu: Option<bool>,
    #[serde(default)]
    pub overlays: Overlays,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Soc {
    Rk3588,
    Rk3588s,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Compatible strings of the panthor GPU node.
    pub compatible: Vec<String>,
    /// Device-name prefix Vulkan reports (e.g. "Mali-G610").
    pub name: String,
    /// Firmware file panthor requests, relative to the firmware search path.
    pub firmware: String,
    /// The device-tree label of the GPU's regulator in the board's mainline DT (`vdd_gpu_s0`):
    /// what `mali-supply` of an overlay that enables `&gpu` must point at.
    #[serde(default)]
    pub supply: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// Oldest mainline version with panthor for this SoC ("6.10").
    pub min_mainline: String,
    /// The mainline kernel `rvl setup` installs for this board, when one is pinned.
    #[serde(default)]
    pub mainline: Option<KernelRef>,
    /// The vendor (BSP) kernel this board is known to ship with, for recognising it.
    #[serde(default)]
    pub vendor: Option<KernelRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRef {
    /// `uname -r` of that kernel.
    pub release: String,
    /// Package that installs it, when known.
    #[serde(default)]
    pub package: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootSpec {
    /// The usual boot layout of this board's images; detection on the box still wins.
    pub layout: BootLayout,
}

/// Device-tree overlay names that switch the GPU driver on vendor (BSP) kernels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlays {
    /// Armbian overlay (in `overlays=` of armbianEnv.txt) that enables panthor.
    #[serde(default)]
    pub armbian_panthor: Option<String>,
    /// Radxa overlay that enables kbase; remove it to get panthor back.
    #[serde(default)]
    pub radxa_kbase: Option<String>,
}

/// How the profile in use was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileSource {
    /// Matched the device tree's `compatible` list.
    DeviceTree,
    /// Named with `--board`.
    Flag,
}

/// A board profile (YAML), or the set of them, cannot be read or is malformed or inconsistent.
/// The sentence names the file; [`crate::error::Error::Profile`] makes it bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(pub String);

/// `--board` named no profile. Every verb prints it through this one `Display`, so doctor,
/// setup and smoke-bench word it the same way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--board: no board profile `{id}`{}; known: {known} (product names and DT compatibles work too, see `rvl setup --help`)", suggestion.as_ref().map(|(id, name)| format!(", did you mean `{id}` ({name})?")).unwrap_or_default())]
pub struct UnknownBoard {
    pub id: String,
    /// The profile the name most likely meant (id, board name), when it is a likely typo.
    pub suggestion: Option<(String, String)>,
    /// Every known id, comma-separated.
    pub known: String,
}

/// How `--board` values are compared: case, spaces and underscores do not matter
/// (`ROCK 5 ITX`, `rock_5_itx` and `rock-5-itx` are one name).
pub fn board_key(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The profile a mistyped name most likely meant: the one with the name closest to it by
/// Jaro-Winkler similarity, when it is close enough that the suggestion helps rather than
/// confuses (clap uses the same 0.8).
fn closest<'a>(
    name: &str,
    known: impl Iterator<Item = (String, &'a Profile)>,
) -> Option<&'a Profile> {
    let key = board_key(name);
    known
        .map(|(k, p)| (strsim::jaro_winkler(&key, &k), p))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p)
}

/// `--board`'s value parser: any name is taken (a `--profiles` set may hold other boards, and
/// an unknown one gets rvl's own error with its suggestion), and the built-in profiles' ids
/// and aliases are offered, with the board's name, by the shell completions.
#[derive(Debug, Clone, Copy, Default)]
pub struct BoardNames;

impl clap::builder::TypedValueParser for BoardNames {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        use clap::builder::PossibleValue;
        let profiles = Profiles::builtin().ok()?;
        let values: Vec<PossibleValue> = profiles
            .all()
            .iter()
            .flat_map(|p| {
                std::iter::once(PossibleValue::new(p.id.clone()).help(p.name.clone())).chain(
                    p.aliases.iter().map(|a| {
                        PossibleValue::new(a.clone()).help(format!("{} ({})", p.name, p.id))
                    }),
                )
            })
            .collect();
        Some(Box::new(values.into_iter()))
    }
}

/// A set of profiles with lookups.
#[derive(Debug, Clone)]
pub struct Profiles {
    list: Vec<Profile>,
}

impl Profiles {
    /// The profiles compiled into the binary.
    pub fn builtin() -> Result<Self, ProfileError> {
        let list = BUILTIN
            .iter()
            .map(|(name, text)| parse(name, text))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_list(list)
    }

    /// Every `*.yaml` in `dir` (sorted by name). Any bad file is an error naming it.
    pub fn load_dir(dir: &Path) -> Result<Self, ProfileError> {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            ProfileError(format!(
                "cannot read profile directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        let mut list = Vec::new();
        for file in files {
            let text = crate::host::root::read_regular_string(&file, crate::host::root::INPUT_CAP)
                .map_err(|e| {
                    ProfileError(format!("cannot read profile {}: {e}", file.display()))
                })?;
            list.push(parse(&file.display().to_string(), &text)?);
        }
        if list.is_empty() {
            return Err(ProfileError(format!(
                "no *.yaml profiles in {}",
                dir.display()
            )));
        }
        Self::from_list(list)
    }

    /// The set `--profiles DIR` names, or the built-in one.
    pub fn load(dir: Option<&Path>) -> Result<Self, ProfileError> {
        match dir {
            Some(d) => Self::load_dir(d),
            None => Self::builtin(),
        }
    }

    /// The profile for this run: `--board ID` when given (an unknown id is a usage error,
    /// [`crate::error::Error::UnknownBoard`], that lists the known ones), else detection from
    /// the `compatible` list of the device tree read from `root` ([`Profiles::select`]).
    pub fn choose_for(
        &self,
        board: Option<&str>,
        root: &Root,
    ) -> Result<Option<(&Profile, ProfileSource)>, UnknownBoard> {
        let dt = crate::host::devicetree::read(root);
        self.select(board, dt.as_ref().map(|d| d.compatible.as_slice()))
    }

    /// The selection rule every verb shares: `--board ID` wins, else the device tree's
    /// `compatible` list picks (see [`Profiles::detect`]). Each verb words the unknown-id error
    /// and the no-match case itself.
    pub fn select(
        &self,
        board: Option<&str>,
        compatible: Option<&[String]>,
    ) -> Result<Option<(&Profile, ProfileSource)>, UnknownBoard> {
        if let Some(id) = board {
            let p = self.by_name(id).ok_or_else(|| UnknownBoard {
                id: id.to_string(),
                suggestion: closest(id, self.names()).map(|p| (p.id.clone(), p.name.clone())),
                known: self.known_ids(),
            })?;
            return Ok(Some((p, ProfileSource::Flag)));
        }
        Ok(compatible
            .and_then(|c| self.detect(c))
            .map(|p| (p, ProfileSource::DeviceTree)))
    }

    /// The ids of every profile, comma-separated, for error messages.
    pub fn known_ids(&self) -> String {
        self.list
            .iter()
            .map(|p| p.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn from_list(list: Vec<Profile>) -> Result<Self, ProfileError> {
        for (i, p) in list.iter().enumerate() {
            if list[..i].iter().any(|q| q.id == p.id) {
                return Err(ProfileError(format!("two profiles have the id {:?}", p.id)));
            }
        }
        let set = Profiles { list };
        // One name, one board: `--board X` must never depend on which profile loads first.
        let mut seen: std::collections::BTreeMap<String, &str> = Default::default();
        for (key, p) in set.exact_names() {
            if let Some(other) = seen.insert(key.clone(), &p.id) {
                if other != p.id {
                    return Err(ProfileError(format!(
                        "profiles {other} and {} both answer to the name {key:?} (id, aliases or match)",
                        p.id
                    )));
                }
            }
        }
        Ok(set)
    }

    /// Every name `--board` takes for a profile, as compared: its id, aliases and `match`
    /// strings.
    fn exact_names(&self) -> impl Iterator<Item = (String, &Profile)> {
        self.list.iter().flat_map(|p| {
            std::iter::once(&p.id)
                .chain(&p.aliases)
                .chain(&p.matches)
                .map(move |n| (board_key(n), p))
        })
    }

    /// [`Profiles::exact_names`] and the model part of each board-specific `match` string
    /// (`rock-5-itx` of `radxa,rock-5-itx`), for suggestions.
    fn names(&self) -> impl Iterator<Item = (String, &Profile)> {
        self.exact_names().chain(self.list.iter().flat_map(|p| {
            p.matches
                .iter()
                .filter_map(|m| m.split_once(',').map(|(_, model)| model))
                .map(move |m| (board_key(m), p))
        }))
    }

    /// The profile `--board NAME` names: by id, alias or DT compatible (case, spaces and
    /// underscores aside), else by the model part of a compatible (`rock-5-itx`) when one
    /// profile alone has it.
    pub fn by_name(&self, name: &str) -> Option<&Profile> {
        let key = board_key(name);
        if let Some((_, p)) = self.exact_names().find(|(k, _)| *k == key) {
            return Some(p);
        }
        let mut models = self.list.iter().filter(|p| {
            p.matches
                .iter()
                .filter_map(|m| m.split_once(',').map(|(_, model)| model))
                .any(|m| board_key(m) == key)
        });
        match (models.next(), models.next()) {
            (Some(p), None) => Some(p),
            _ => None,
        }
    }

    pub fn all(&self) -> &[Profile] {
        &self.list
    }

    pub fn by_id(&self, id: &str) -> Option<&Profile> {
        self.list.iter().find(|p| p.id == id)
    }

    /// The profile for a device tree's `compatible` list: the board's own strings come first
    /// in that list, so the first string any board-specific profile matches wins; a fallback
    /// profile only answers when no specific one does.
    pub fn detect(&self, compatible: &[String]) -> Option<&Profile> {
        let find = |fallback: bool| {
            compatible.iter().find_map(|c| {
                self.list
                    .iter()
                    .find(|p| p.fallback == fallback && p.matches.iter().any(|m| m == c))
            })
        };
        find(false).or_else(|| find(true))
    }
}

/// Parse one profile. `name` is what error messages call the file.
pub fn parse(name: &str, text: &str) -> Result<Profile, ProfileError> {
    let profile: Profile = crate::yaml::from_str(text)
        .map_err(|e| ProfileError(format!("bad board profile {}", e.placed(name))))?;
    if profile.id.is_empty() || profile.matches.is_empty() {
        return Err(ProfileError(format!(
            "bad board profile {name}: `id` and `match` must not be empty"
        )));
    }
    check_fields(&profile).map_err(|e| ProfileError(format!("bad board profile {name}: {e}")))?;
    Ok(profile)
}

/// Profile values end up in boot configuration (`overlays=` of armbianEnv.txt, extlinux labels),
/// firmware paths and fix commands written or run as root: each must have the shape its use
/// needs (see `crate::validate`), and no value may carry a newline or other control byte.
fn check_fields(p: &Profile) -> Result<(), String> {
    use crate::validate::{control_free, dt_label, file_name, relative_path, version};
    let field = |name: &str, value: &str, rule: fn(&str) -> Result<(), String>| {
        rule(value).map_err(|e| format!("`{name}` {e}"))
    };
    field("id", &p.id, file_name)?;
    field("name", &p.name, control_free)?;
    for m in &p.matches {
        field("match", m, control_free)?;
    }
    for a in &p.aliases {
        field("aliases", a, file_name)?;
    }
    for c in &p.gpu.compatible {
        field("gpu.compatible", c, control_free)?;
    }
    field("gpu.name", &p.gpu.name, control_free)?;
    field("gpu.firmware", &p.gpu.firmware, relative_path)?;
    if let Some(s) = &p.gpu.supply {
        field("gpu.supply", s, dt_label)?;
    }
    field("kernel.min_mainline", &p.kernel.min_mainline, version)?;
    for (which, k) in [
        ("mainline", &p.kernel.mainline),
        ("vendor", &p.kernel.vendor),
    ] {
        if let Some(k) = k {
            field(&format!("kernel.{which}.release"), &k.release, version)?;
            if let Some(pkg) = &k.package {
                field(&format!("kernel.{which}.package"), pkg, file_name)?;
            }
        }
    }
    for (name, o) in [
        ("overlays.armbian_panthor", &p.overlays.armbian_panthor),
        ("overlays.radxa_kbase", &p.overlays.radxa_kbase),
    ] {
        if let Some(o) = o {
            field(name, o, file_name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error, exit};

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The exit status `main` gives the error once a verb has collected it into [`error::Error`].
    fn exit_code_of<E: Clone + Into<error::Error>>(e: &E) -> i32 {
        error::exit_code_of(&anyhow::Error::from(e.clone().into()))
    }

    #[test]
    fn builtin_profiles_parse_and_have_unique_ids() {
        let p = Profiles::builtin().unwrap();
        assert_eq!(p.all().len(), BUILTIN.len());
        let b = p.by_id("boltzmann").unwrap();
        assert_eq!(
            b.kernel.mainline.as_ref().unwrap().release,
            "7.0.0-rc3-marfrit-A1"
        );
        assert_eq!(b.gpu.firmware, "arm/mali/arch10.8/mali_csffw.bin");
        assert_eq!(b.boot.layout, BootLayout::UBootMenu);
    }

    #[test]
    fn detection_prefers_the_board_over_the_fallback() {
        let p = Profiles::builtin().unwrap();
        let id = |c: &[&str]| p.detect(&strs(c)).map(|p| p.id.clone());
        assert_eq!(
            id(&["radxa,rock-5-itx", "rockchip,rk3588"]).as_deref(),
            Some("boltzmann")
        );
        assert_eq!(
            id(&["coolpi,pi-cm5-genbook", "coolpi,pi-cm5", "rockchip,rk3588"]).as_deref(),
            Some("ampere")
        );
        assert_eq!(
            id(&["coolpi,pi-cm5-evb", "coolpi,pi-cm5", "rockchip,rk3588"]).as_deref(),
            Some("coolpi-cm5-evb")
        );
        assert_eq!(
            id(&["friendlyarm,nanopi-r6s", "rockchip,rk3588s"]).as_deref(),
            Some("generic-rk3588")
        );
        assert_eq!(id(&["raspberrypi,4-model-b", "brcm,bcm2711"]), None);
        assert_eq!(id(&[]), None);
    }

    #[test]
    fn choose_prefers_the_flag_and_refuses_unknown_ids() {
        let p = Profiles::builtin().unwrap();
        let itx = strs(&["radxa,rock-5-itx", "rockchip,rk3588"]);
        let (got, src) = p.select(None, Some(&itx)).unwrap().unwrap();
        assert_eq!(
            (got.id.as_str(), src),
            ("boltzmann", ProfileSource::DeviceTree)
        );
        let (got, src) = p.select(Some("ampere"), Some(&itx)).unwrap().unwrap();
        assert_eq!((got.id.as_str(), src), ("ampere", ProfileSource::Flag));
        assert!(p.select(None, None).unwrap().is_none());
        let unknown = p.select(Some("nope"), None).unwrap_err();
        assert_eq!(exit_code_of(&unknown), exit::USAGE);
        assert!(unknown.to_string().contains("boltzmann"));
        assert_eq!(unknown.id, "nope");
        assert_eq!(unknown.known, p.known_ids());
        assert!(p.known_ids().starts_with("boltzmann, ampere, "));
    }

    #[test]
    fn a_mistyped_board_suggests_the_profile_it_most_likely_meant() {
        let p = Profiles::builtin().unwrap();
        let typo = p.select(Some("boltzman"), None).unwrap_err();
        assert_eq!(typo.suggestion.as_ref().unwrap().0, "boltzmann");
        assert!(
            typo.to_string()
                .contains("did you mean `boltzmann` (Radxa ROCK 5 ITX / ITX+)?"),
            "{typo}"
        );
        let far = p.select(Some("raspberrypi"), None).unwrap_err();
        assert_eq!(far.suggestion, None, "no suggestion for an unrelated name");
        assert!(!far.to_string().contains("did you mean"));
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let text = "id: x\nname: X\nmatch: [a]\nsoc: rk3588\ncolour: red\n";
        let err = parse("profiles/x.yaml", text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("profiles/x.yaml:5"), "{msg}");
        assert!(msg.contains("colour"), "{msg}");
        assert!(!msg.contains("line 5 column"), "location only once: {msg}");
        assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
    }

    #[test]
    fn wrong_type_and_missing_field_are_reported() {
        let base = std::fs::read_to_string("profiles/rock-5a.yaml").unwrap();
        let bad_soc = base.replace("soc: rk3588s", "soc: rk3399");
        let msg = parse("p.yaml", &bad_soc).unwrap_err().to_string();
        assert!(msg.contains("p.yaml:5"), "{msg}");
        assert!(msg.contains("rk3588"), "{msg}");
        let no_gpu: String = base
            .lines()
            .filter(|l| !l.starts_with("gpu:") && !l.starts_with("  compatible:"))
            .filter(|l| !l.starts_with("  name:") && !l.starts_with("  firmware:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let msg = parse("p.yaml", &no_gpu).unwrap_err().to_string();
        assert!(msg.contains("gpu"), "{msg}");
    }

    #[test]
    fn a_newline_in_an_overlay_name_cannot_inject_a_boot_argument() {
        let base = std::fs::read_to_string("profiles/boltzmann.yaml").unwrap();
        let bad = base.replace(
            "radxa_kbase: rk3588-mali-enable",
            "radxa_kbase: \"x\\nextraargs=init=/bin/sh\"",
        );
        assert_ne!(bad, base, "fixture line changed");
        let err = parse("profiles/b.yaml", &bad).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("profiles/b.yaml"), "{msg}");
        assert!(msg.contains("overlays.radxa_kbase"), "{msg}");
        assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
    }

    #[test]
    fn a_firmware_path_that_climbs_and_a_release_with_a_slash_are_refused() {
        let base = std::fs::read_to_string("profiles/boltzmann.yaml").unwrap();
        for (from, to, field) in [
            (
                "firmware: arm/mali/arch10.8/mali_csffw.bin",
                "firmware: ../../../../etc/passwd",
                "gpu.firmware",
            ),
            (
                "release: 7.0.0-rc3-marfrit-A1",
                "release: ../../x",
                "kernel.mainline.release",
            ),
        ] {
            let bad = base.replace(from, to);
            assert_ne!(bad, base, "{from}");
            let msg = parse("p.yaml", &bad).unwrap_err().to_string();
            assert!(msg.contains(field), "{msg}");
        }
    }

    #[test]
    fn two_profiles_answering_to_one_name_are_refused() {
        let a = parse("a", include_str!("../profiles/rock-5a.yaml")).unwrap();
        let mut b = parse("b", include_str!("../profiles/rock-5b.yaml")).unwrap();
        b.aliases.push("Rock5A".into());
        let err = Profiles::from_list(vec![a, b]).unwrap_err();
        assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
        assert!(err.to_string().contains("\"rock5a\""), "{err}");
    }

    #[test]
    fn a_name_is_an_id_an_alias_a_compatible_or_its_model_part() {
        let p = Profiles::builtin().unwrap();
        let id = |n: &str| p.by_name(n).map(|p| p.id.as_str());
        assert_eq!(id("Boltzmann"), Some("boltzmann"));
        assert_eq!(id("rock_5_itx"), Some("boltzmann"));
        assert_eq!(id("radxa,rock-5-itx"), Some("boltzmann"));
        assert_eq!(id("pi-cm5-evb"), Some("coolpi-cm5-evb"));
        assert_eq!(id("rockchip,rk3588s"), Some("generic-rk3588"));
        assert_eq!(id("rock-5"), None);
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let a = parse("a", include_str!("../profiles/rock-5a.yaml")).unwrap();
        let err = Profiles::from_list(vec![a.clone(), a]).unwrap_err();
        assert_eq!(exit_code_of(&err), exit::BAD_INPUT);
    }
}
