//! How much memory the system can give without swapping (`MemAvailable` in `/proc/meminfo`),
//! so that work sized from a file (smoke-bench's GEMM operands at a model's shapes) is refused
//! by arithmetic before it allocates more than there is.

use super::Root;

/// `MemAvailable` in bytes, or None where the kernel does not give it (or not under a root).
pub fn available(root: &Root) -> Option<u64> {
    let text = root.read_capped("/proc/meminfo", 64 << 10).ok()?;
    parse_available(&String::from_utf8_lossy(&text))
}

/// The `MemAvailable:  N kB` line of a meminfo text, in bytes.
pub fn parse_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes_and_nothing_else_is_guessed() {
        let text = "MemTotal:       16106128 kB\nMemFree:  1 kB\nMemAvailable:   12345678 kB\n";
        assert_eq!(parse_available(text), Some(12_345_678 * 1024));
        assert_eq!(parse_available("MemFree: 1 kB\n"), None);
        assert_eq!(parse_available("MemAvailable: lots\n"), None);
        assert_eq!(
            parse_available("MemAvailable: 99999999999999999999 kB\n"),
            None
        );
    }
}
