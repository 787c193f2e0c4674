//! Vulkan ICD manifests as the doctor found them: the loader's search list and each manifest
//! it would read. The loader's rules (search order, driver filters, which library is panvk)
//! are [`crate::icd`]'s, which re-exports these types.

use serde::{Deserialize, Serialize};

/// Where the loader takes its manifest list from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SearchMode {
    /// The standard XDG directories.
    Standard,
    /// `VK_DRIVER_FILES` (or the older `VK_ICD_FILENAMES`) replaces the search.
    Override,
}

/// Files and directories the loader reads, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchPath {
    pub mode: SearchMode,
    /// Which variable chose the list, for `Override`.
    pub variable: Option<String>,
    /// Entries (directories, or manifest files for overrides), in-root absolute paths.
    pub entries: Vec<String>,
}

/// The part of a manifest the checks need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub library_path: String,
    pub api_version: Option<String>,
    pub library_arch: Option<String>,
}

/// Facts gathered about every manifest the loader would read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IcdFacts {
    pub search: Option<SearchPath>,
    pub manifests: Vec<ManifestFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// In-root path of the manifest.
    pub path: String,
    pub manifest: Option<Manifest>,
    /// In-root path the library resolves to, when found.
    pub library_found: Option<String>,
    /// Why the manifest could not be used.
    pub error: Option<String>,
}
