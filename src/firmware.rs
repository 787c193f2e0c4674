//! panthor's CSF firmware: where the kernel looks for it, and what its header says.
//!
//! The firmware loader (docs.kernel.org driver-api/firmware/fw_search_path) tries, for each
//! suffix ("" then ".zst" then ".xz", the compressed ones only with FW_LOADER_COMPRESS_*), the
//! directories `updates/<release>`, `updates`, `<release>`, `` under /lib/firmware, after any
//! `firmware_class.path`. The first hit is what panthor gets.
//!
//! The facts' types are [`crate::inventory::firmware`]'s (re-exported here); imports only the
//! inventory.

pub use crate::inventory::firmware::{
    Compression, CsfHeader, FirmwareFacts, FirmwareFile, InitramfsFacts,
};

/// First four bytes of every CSF firmware image (0xc3f13a6e little-endian).
pub const CSF_MAGIC: u32 = 0xc3f1_3a6e;
/// Highest header major version panthor accepts (CSF_FW_BINARY_HEADER_MAJOR_MAX).
pub const CSF_HEADER_MAJOR_MAX: u8 = 0;
/// The kernel's firmware directory: the last place the loader searches, and where a firmware
/// name (e.g. "arm/mali/arch10.8/mali_csffw.bin") belongs when nothing overrides it.
pub const FIRMWARE_DIR: &str = "/lib/firmware";
/// The flat file kbase (the vendor driver) loads; panthor never reads it.
pub const VENDOR_FLAT_PATH: &str = "/lib/firmware/mali_csffw.bin";

/// Compression suffixes the loader tries, in its order.
pub const SUFFIXES: &[(&str, Compression)] = &[
    ("", Compression::None),
    (".zst", Compression::Zstd),
    (".xz", Compression::Xz),
];

impl Compression {
    /// The kernel option the loader needs to read this kind of file.
    pub fn kernel_option(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Zstd => Some("CONFIG_FW_LOADER_COMPRESS_ZSTD"),
            Compression::Xz => Some("CONFIG_FW_LOADER_COMPRESS_XZ"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("file is {0} bytes, shorter than the 24-byte CSF header")]
    TooShort(usize),
    #[error(
        "invalid firmware magic 0x{0:08x} (expected 0x{CSF_MAGIC:08x}): not a CSF firmware image"
    )]
    BadMagic(u32),
    #[error("unsupported firmware header version {major}.{minor} (panthor expects {CSF_HEADER_MAJOR_MAX}.x)")]
    UnsupportedVersion { major: u8, minor: u8 },
}

impl CsfHeader {
    /// Check and decode the header exactly as panthor does before booting the MCU.
    pub fn parse(bytes: &[u8]) -> Result<Self, HeaderError> {
        if bytes.len() < 24 {
            return Err(HeaderError::TooShort(bytes.len()));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let magic = u32_at(0);
        if magic != CSF_MAGIC {
            return Err(HeaderError::BadMagic(magic));
        }
        let (minor, major) = (bytes[4], bytes[5]);
        if major > CSF_HEADER_MAJOR_MAX {
            return Err(HeaderError::UnsupportedVersion { major, minor });
        }
        Ok(CsfHeader {
            minor,
            major,
            version_hash: u32_at(8),
            size: u32_at(16),
        })
    }
}

/// Directories the loader searches, in order, for a kernel `release`.
/// `class_path` is `firmware_class.path` when set.
pub fn search_dirs(release: Option<&str>, class_path: Option<&str>) -> Vec<String> {
    let mut dirs = Vec::new();
    if let Some(p) = class_path.map(str::trim).filter(|p| !p.is_empty()) {
        dirs.push(p.trim_end_matches('/').to_string());
    }
    if let Some(r) = release.filter(|r| valid_component(r)) {
        dirs.push(format!("{FIRMWARE_DIR}/updates/{r}"));
        dirs.push(format!("{FIRMWARE_DIR}/updates"));
        dirs.push(format!("{FIRMWARE_DIR}/{r}"));
    } else {
        dirs.push(format!("{FIRMWARE_DIR}/updates"));
    }
    dirs.push(FIRMWARE_DIR.to_string());
    dirs
}

/// Where firmware `name` (relative to the search path) sits in the kernel's firmware directory:
/// where setup installs it and where the doctor tells a user to put it.
pub fn standard_path(name: &str) -> String {
    format!("{FIRMWARE_DIR}/{name}")
}

/// A release string is used as one path component: refuse anything that could climb out.
fn valid_component(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("tests/fixtures/firmware/{name}")).unwrap()
    }

    #[test]
    fn real_headers_decode() {
        let h = CsfHeader::parse(&fixture("arch10.8-mali_csffw-2024-header.bin")).unwrap();
        assert_eq!((h.major, h.minor, h.version_hash), (0, 3, 0x0101_0000));
        let h = CsfHeader::parse(&fixture("arch10.8-mali_csffw-2026-header.bin")).unwrap();
        assert_eq!(h.version_hash, 0x0105_0000);
        let h = CsfHeader::parse(&fixture("vendor-flat-mali_csffw-2022-header.bin")).unwrap();
        assert_eq!((h.major, h.minor), (0, 1));
    }

    #[test]
    fn bad_magic_short_and_future_major_are_refused() {
        assert!(matches!(
            CsfHeader::parse(&fixture("bad-magic-header.bin")),
            Err(HeaderError::BadMagic(_))
        ));
        assert_eq!(CsfHeader::parse(b"\x6e\x3a"), Err(HeaderError::TooShort(2)));
        let mut h = fixture("arch10.8-mali_csffw-2024-header.bin");
        h[5] = 1;
        let err = CsfHeader::parse(&h).unwrap_err();
        assert!(err.to_string().contains("1.3"), "{err}");
    }

    #[test]
    fn search_order_follows_the_kernel() {
        assert_eq!(
            search_dirs(Some("7.0.0"), None),
            vec![
                "/lib/firmware/updates/7.0.0",
                "/lib/firmware/updates",
                "/lib/firmware/7.0.0",
                "/lib/firmware"
            ]
        );
        assert_eq!(
            search_dirs(Some("../x"), Some("/opt/fw/")),
            vec!["/opt/fw", "/lib/firmware/updates", "/lib/firmware"]
        );
    }

    #[test]
    fn standard_path_is_in_the_last_search_dir() {
        let path = standard_path("arm/mali/arch10.8/mali_csffw.bin");
        assert_eq!(path, "/lib/firmware/arm/mali/arch10.8/mali_csffw.bin");
        let last = search_dirs(Some("7.0.0"), None).pop().unwrap();
        assert!(path.starts_with(&format!("{last}/")));
        assert_eq!(VENDOR_FLAT_PATH, standard_path("mali_csffw.bin"));
    }
}
