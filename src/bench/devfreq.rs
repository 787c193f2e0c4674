//! The GPU's devfreq state (`/sys/class/devfreq/*gpu*`): current clock and governor, recorded
//! with every run because a GPU left at a low OPP explains "slow" better than any kernel.

use serde::Serialize;

use crate::host::Root;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Devfreq {
    /// The devfreq device, e.g. `fb000000.gpu`.
    pub device: String,
    pub cur_freq_hz: Option<u64>,
    pub max_freq_hz: Option<u64>,
    pub governor: Option<String>,
}

/// The first devfreq device whose name contains "gpu", if any is readable. The node is read
/// by [`crate::host::devfreq`] (the doctor's `gpu-clock` reader); the report keeps its own
/// three fields so saved results stay comparable.
pub fn read(root: &Root) -> Option<Devfreq> {
    let node = crate::host::devfreq::gpu(root)?;
    Some(Devfreq {
        cur_freq_hz: node.cur_freq,
        max_freq_hz: node.max_freq,
        governor: node.governor,
        device: node.device,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_gpu_devfreq_node_and_tolerates_missing_fields() {
        let dir = tempfile::tempdir().unwrap();
        let gpu = dir.path().join("sys/class/devfreq/fb000000.gpu");
        std::fs::create_dir_all(&gpu).unwrap();
        std::fs::create_dir_all(dir.path().join("sys/class/devfreq/dmc")).unwrap();
        std::fs::write(gpu.join("cur_freq"), "300000000\n").unwrap();
        std::fs::write(gpu.join("governor"), "simple_ondemand\n").unwrap();
        let root = Root::new(dir.path());
        let d = read(&root).unwrap();
        assert_eq!(d.device, "fb000000.gpu");
        assert_eq!(d.cur_freq_hz, Some(300_000_000));
        assert_eq!(d.max_freq_hz, None);
        assert_eq!(d.governor.as_deref(), Some("simple_ondemand"));
        assert_eq!(read(&Root::new(dir.path().join("nothing"))), None);
    }
}
