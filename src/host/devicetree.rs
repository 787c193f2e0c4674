//! Device tree as the kernel exposes it: one directory per node, one file per property, holding
//! the property's exact bytes (`Documentation/ABI/testing/sysfs-firmware-ofw`). Strings end in a
//! NUL; string lists are NUL-separated.

use super::Root;
pub use crate::inventory::{DeviceTree, DtNode};

/// Where the live tree is, in the order userspace is told to look.
const BASES: &[&str] = &["/proc/device-tree", "/sys/firmware/devicetree/base"];

/// A cap far above any real property: `compatible` lists are tens of bytes.
const PROP_CAP: u64 = 64 << 10;

/// A string-list property: NUL-separated, empty pieces dropped, invalid UTF-8 replaced.
pub fn parse_string_list(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A string property: the text before the first NUL.
pub fn parse_string(bytes: &[u8]) -> Option<String> {
    parse_string_list(bytes).into_iter().next()
}

/// True for a compatible string of any Mali GPU binding (panthor's or kbase's).
pub fn is_mali_compatible(c: &str) -> bool {
    c.starts_with("arm,mali") || c.ends_with("-mali")
}

/// Read the device tree under `root`, or `None` when there is none (x86, containers).
pub fn read(root: &Root) -> Option<DeviceTree> {
    let base = BASES.iter().find(|b| root.is_dir(b))?;
    let prop = |node: &str, name: &str| {
        root.read_capped(format!("{base}{node}/{name}"), PROP_CAP)
            .ok()
    };
    let model = prop("", "model").and_then(|b| parse_string(&b));
    let compatible = prop("", "compatible")
        .map(|b| parse_string_list(&b))
        .unwrap_or_default();
    let mut gpu_nodes = Vec::new();
    for name in root.list_dir(base).unwrap_or_default() {
        let path = format!("/{name}");
        let node_compat = prop(&path, "compatible")
            .map(|b| parse_string_list(&b))
            .unwrap_or_default();
        // Named like a GPU node, or bound by a Mali compatible: a BSP may call it gpu-mali@….
        let looks_like_gpu = name.starts_with("gpu") && name.contains('@');
        if !looks_like_gpu && !node_compat.iter().any(|c| is_mali_compatible(c)) {
            continue;
        }
        if !root.is_dir(format!("{base}{path}")) {
            continue;
        }
        gpu_nodes.push(DtNode {
            status: prop(&path, "status").and_then(|b| parse_string(&b)),
            path,
            compatible: node_compat,
        });
    }
    Some(DeviceTree {
        base: base.to_string(),
        model,
        compatible,
        gpu_nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_lists_split_on_nul_and_drop_empties() {
        assert_eq!(
            parse_string_list(b"radxa,rock-5-itx\0rockchip,rk3588\0"),
            vec!["radxa,rock-5-itx", "rockchip,rk3588"]
        );
        assert_eq!(parse_string_list(b"no-terminator"), vec!["no-terminator"]);
        assert_eq!(parse_string_list(b"\0\0"), Vec::<String>::new());
        assert_eq!(parse_string_list(b""), Vec::<String>::new());
    }

    #[test]
    fn garbage_bytes_are_replaced_not_fatal() {
        let list = parse_string_list(b"\xff\xfe,board\0rockchip,rk3588\0\x80");
        assert_eq!(list.len(), 3);
        assert_eq!(list[1], "rockchip,rk3588");
        assert!(list[0].contains('\u{fffd}'));
    }

    #[test]
    fn model_is_the_first_string() {
        assert_eq!(
            parse_string(b"Radxa ROCK 5 ITX\0").as_deref(),
            Some("Radxa ROCK 5 ITX")
        );
        assert_eq!(parse_string(b"\0"), None);
    }

    #[test]
    fn status_okay_or_absent_is_enabled() {
        let mut n = DtNode::default();
        assert!(n.enabled());
        n.status = Some("okay".into());
        assert!(n.enabled());
        n.status = Some("disabled".into());
        assert!(!n.enabled());
        n.status = Some("fail".into());
        assert!(!n.enabled());
    }

    #[test]
    fn mali_compatibles_are_recognised() {
        for c in [
            "arm,mali-valhall-csf",
            "rockchip,rk3588-mali",
            "arm,mali-bifrost",
        ] {
            assert!(is_mali_compatible(c), "{c}");
        }
        assert!(!is_mali_compatible("rockchip,rk3588-vop"));
    }
}
