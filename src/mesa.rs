//! rvl's Mesa (panvk) builds as data, no IO: which of them the Vulkan loader will load, and
//! whether that build carries rvl's queue TLS patch (its build stamp against the series
//! embedded in this binary). Doctor's `vulkan-icd` and `vulkan-device` judge from these.

use crate::icd;
use crate::inventory::{BuildInstall, Inventory, MesaFacts};
use crate::patchlevel::{Key, PatchLevel};

/// The patch that gives compute TLS one grow-only buffer per queue (the ubatch > 64 fix on the
/// driver side: stock panvk, every release up to at least 26.2.4, allocates it per command buffer).
pub const TLS_PATCH_SUFFIX: &str = "-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch";

/// rvl's series for Mesa, as (name, sha256), from the copy embedded in the binary.
pub fn rvl_series() -> Vec<(String, String)> {
    crate::patchlevel::rvl_series("mesa")
}

/// rvl's panvk as the loader will use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RvlPanvk<'a> {
    pub install: &'a BuildInstall,
    /// None: the prefix has no build stamp (an interrupted build), so nothing is known of it.
    pub level: Option<PatchLevel>,
}

impl RvlPanvk<'_> {
    /// The build carries the queue TLS patch (in any revision).
    pub fn tls_fixed(&self) -> bool {
        self.level.as_ref().is_some_and(|l| l.key != Key::Missing)
    }

    /// "rvl's panvk (Mesa 26.2.4, queue TLS patch, series 2/2)".
    pub fn describe(&self) -> String {
        let Some(stamp) = &self.install.stamp else {
            return "rvl's panvk (no build stamp: the build never finished)".to_string();
        };
        let level = self.level.as_ref().expect("a stamp has a level");
        let tls = match level.key {
            Key::Current => "queue TLS patch",
            Key::Older => "an older revision of the queue TLS patch",
            Key::Missing => "stock, without the queue TLS patch",
        };
        let candidates = match level.candidates {
            0 => String::new(),
            n => format!(", {}", crate::output::count(n, "candidate patch")),
        };
        format!(
            "rvl's panvk (Mesa {}, {tls}, series {}/{}{candidates})",
            stamp.version, level.current, level.of
        )
    }
}

/// The rvl install whose prefix holds `library` (an in-root path).
pub fn owning_install<'a>(facts: &'a MesaFacts, library: &str) -> Option<&'a BuildInstall> {
    facts
        .installs
        .iter()
        .find(|i| library.starts_with(&format!("{}/", i.prefix)))
}

/// rvl's panvk when it is the one panvk the loader loads: exactly one usable panvk manifest
/// (several are doctor's `vulkan-icd` failure), whose library lives in one of rvl's prefixes.
pub fn active(inv: &Inventory) -> Option<RvlPanvk<'_>> {
    let usable = icd::usable_panvk(&inv.vulkan_icd, &inv.env);
    let [one] = usable.as_slice() else {
        return None;
    };
    let library = one.manifest.as_ref()?.library_path.as_str();
    let found = one.library_found.as_deref().unwrap_or(library);
    let install =
        owning_install(&inv.mesa, library).or_else(|| owning_install(&inv.mesa, found))?;
    let series = rvl_series();
    Some(RvlPanvk {
        install,
        level: install
            .stamp
            .as_ref()
            .map(|s| crate::patchlevel::level(&s.patches, &series, TLS_PATCH_SUFFIX)),
    })
}

/// Test fixtures shared by the modules that judge rvl's panvk.
#[cfg(test)]
pub(crate) mod testing {
    use crate::icd::{Manifest, ManifestFile};
    use crate::inventory::{BuildInstall, Inventory, LlamaStamp, StampPatch};

    pub const PREFIX: &str = "/opt/rvl/mesa-26.2.4-rvl1";

    /// `inv` with one panvk ICD whose library is `library`, and rvl's Mesa 26.2.4 prefix
    /// [`PREFIX`] built with `patches` (name, sha256).
    pub fn with_rvl_panvk(
        mut inv: Inventory,
        library: &str,
        patches: &[(&str, &str)],
    ) -> Inventory {
        inv.vulkan_icd.manifests = vec![ManifestFile {
            path: crate::setup::paths::ICD_FILE.into(),
            manifest: Some(Manifest {
                library_path: library.into(),
                api_version: Some("1.4.354".into()),
                library_arch: Some("64".into()),
            }),
            library_found: Some(library.into()),
            error: None,
        }];
        inv.mesa.installs = vec![BuildInstall {
            prefix: PREFIX.into(),
            stamp: Some(LlamaStamp {
                project: "mesa".into(),
                version: "26.2.4".into(),
                patches: patches
                    .iter()
                    .map(|(name, sha256)| StampPatch {
                        name: name.to_string(),
                        sha256: sha256.to_string(),
                    })
                    .collect(),
                ..Default::default()
            }),
            stamp_error: None,
        }];
        inv
    }
}

#[cfg(test)]
mod tests {
    use super::testing::PREFIX;
    use super::*;

    fn inv_with(library: &str, patches: &[&str]) -> Inventory {
        let patches: Vec<(&str, &str)> = patches.iter().map(|n| (*n, "not-this-rvls")).collect();
        super::testing::with_rvl_panvk(Inventory::default(), library, &patches)
    }

    #[test]
    fn the_loaders_panvk_is_rvls_only_when_its_library_is_inside_an_rvl_prefix() {
        let lib = format!("{PREFIX}/lib/aarch64-linux-gnu/libvulkan_panfrost.so");
        let inv = inv_with(&lib, &[]);
        assert_eq!(active(&inv).unwrap().install.prefix, PREFIX);
        // A sibling directory whose name merely starts with the prefix is not inside it.
        let inv = inv_with(
            &format!("{PREFIX}x/lib/libvulkan_panfrost.so"),
            &["mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch"],
        );
        assert!(active(&inv).is_none());
        let inv = inv_with("/usr/lib/aarch64-linux-gnu/libvulkan_panfrost.so", &[]);
        assert!(active(&inv).is_none());
    }

    #[test]
    fn the_tls_patch_in_any_revision_counts_as_fixed_and_its_absence_does_not() {
        let lib = format!("{PREFIX}/lib/aarch64-linux-gnu/libvulkan_panfrost.so");
        let patched = inv_with(
            &lib,
            &["mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch"],
        );
        let a = active(&patched).unwrap();
        assert!(a.tls_fixed());
        assert!(a.describe().contains("Mesa 26.2.4"), "{}", a.describe());
        let stock = inv_with(&lib, &[]);
        let a = active(&stock).unwrap();
        assert!(!a.tls_fixed());
        assert!(a.describe().contains("without the queue TLS patch"));
    }

    #[test]
    fn a_build_with_the_candidate_patches_says_so() {
        let lib = format!("{PREFIX}/lib/libvulkan_panfrost.so");
        let with = inv_with(
            &lib,
            &[
                "mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch",
                "mesa/candidates/0001-pan-bi-fold-constant-shared-memory-offsets-into-the-access.patch",
            ],
        );
        let a = active(&with).unwrap();
        assert!(
            a.describe().ends_with(", 1 candidate patch)"),
            "{}",
            a.describe()
        );
        let without = inv_with(
            &lib,
            &["mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch"],
        );
        assert!(!active(&without).unwrap().describe().contains("candidate"));
    }
}
