//! The GPU's devfreq node (clock scaling) as the `gpu-clock` check reads it. Reading and
//! parsing sysfs are [`crate::host::devfreq`]'s, which re-exports these types.

use serde::{Deserialize, Serialize};

/// One devfreq node, each file as the kernel printed it (None: missing or unreadable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Devfreq {
    /// The device it scales (the platform device name, e.g. `fb000000.gpu`).
    pub device: String,
    pub path: String,
    pub governor: Option<String>,
    pub available_governors: Vec<String>,
    /// Hz, in the kernel's order (ascending OPPs on RK3588).
    pub available_frequencies: Vec<u64>,
    pub cur_freq: Option<u64>,
    pub target_freq: Option<u64>,
    pub min_freq: Option<u64>,
    pub max_freq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trans_stat: Option<TransStat>,
}

/// `trans_stat`'s table, reduced to what the check needs: time per frequency.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransStat {
    /// (Hz, ms spent there) per row, in table order.
    pub time_ms: Vec<(u64, u64)>,
    /// The row marked `*` (the frequency devfreq last set).
    pub current: Option<u64>,
    pub total_transitions: Option<u64>,
}
