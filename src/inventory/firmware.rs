//! panthor's CSF firmware as the doctor found it. Where the kernel looks and how a header is
//! checked are [`crate::firmware`]'s, which re-exports these types.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Zstd,
    Xz,
}

/// `struct panthor_fw_binary_hdr` (drivers/gpu/drm/panthor/panthor_fw.c), little-endian:
/// u32 magic, u8 minor, u8 major, u16 pad, u32 version_hash, u32 pad, u32 size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CsfHeader {
    pub minor: u8,
    pub major: u8,
    pub version_hash: u32,
    pub size: u32,
}

/// Facts about the firmware panthor needs, gathered by [`crate::host::gather`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareFacts {
    /// The name panthor requests, e.g. "arm/mali/arch10.8/mali_csffw.bin".
    pub wanted: String,
    pub search_dirs: Vec<String>,
    /// The file the loader would pick, if any.
    pub found: Option<FirmwareFile>,
    /// Copies of the same file name in other `arm/mali/arch*` directories (not loaded on this GPU).
    pub other_arch: Vec<FirmwareFile>,
    /// The vendor kbase blob at /lib/firmware/mali_csffw.bin, when present.
    pub vendor_flat: bool,
    /// Set when panthor is built in: whether the initramfs carries the firmware.
    pub initramfs: Option<InitramfsFacts>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareFile {
    pub path: String,
    pub compression: Compression,
    /// Bytes of the (decompressed) image.
    pub size: Option<u64>,
    /// sha256 of the (decompressed) image.
    pub sha256: Option<String>,
    pub header: Option<CsfHeader>,
    /// Why the file could not be read or its header is not acceptable.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitramfsFacts {
    /// The initramfs image inspected.
    pub path: Option<String>,
    /// True when it contains the wanted firmware (any compression suffix).
    pub has_firmware: bool,
    pub error: Option<String>,
}
