//! The CPU cores' relative capacities (`/sys/devices/system/cpu/cpuN/cpu_capacity`, set by
//! the kernel from the device tree on big.LITTLE SoCs), so the CPU baseline of
//! `smoke-bench --gguf` runs on the big cores only.

use super::Root;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// One entry per `cpuN` directory, in N order: its capacity, None where the kernel gives none.
pub fn capacities(root: &Root) -> Vec<Option<u32>> {
    let mut cpus: Vec<(u32, String)> = root
        .list_dir(CPU_DIR)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| Some((n.strip_prefix("cpu")?.parse().ok()?, n)))
        .collect();
    cpus.sort_unstable();
    cpus.into_iter()
        .map(|(_, n)| {
            root.read_capped(format!("{CPU_DIR}/{n}/cpu_capacity"), 64)
                .ok()
                .and_then(|b| String::from_utf8_lossy(&b).trim().parse().ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_read_per_cpu_in_number_order_and_other_entries_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("sys/devices/system/cpu");
        for (cpu, cap) in [
            ("cpu10", Some("1024\n")),
            ("cpu2", Some("414\n")),
            ("cpu3", None),
        ] {
            std::fs::create_dir_all(base.join(cpu)).unwrap();
            if let Some(c) = cap {
                std::fs::write(base.join(cpu).join("cpu_capacity"), c).unwrap();
            }
        }
        std::fs::create_dir_all(base.join("cpufreq")).unwrap();
        std::fs::write(base.join("online"), "0-10\n").unwrap();
        assert_eq!(
            capacities(&Root::new(d.path())),
            vec![Some(414), None, Some(1024)]
        );
    }
}
