//! devfreq: the GPU's clock scaling node, as plain data for the `gpu-clock` check.
//!
//! File formats follow the kernel's Documentation/ABI/testing/sysfs-class-devfreq and the
//! printing code in drivers/devfreq/devfreq.c: `governor` is one word, `cur_freq`, `min_freq`,
//! `max_freq` and `target_freq` one decimal Hz value, `available_frequencies` and
//! `available_governors` space-separated lists, and `trans_stat` a table whose header row
//! lists the frequencies, then one row per frequency (`*` marks the current one) with the
//! transition counts to each and the time spent there in ms, then a `Total transition : N`
//! line. On RK3588 mainline panthor registers it under the GPU's device name (`fb000000.gpu`),
//! so `/sys/class/devfreq/fb000000.gpu` links to
//! `/sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu`.
//!
//! The node's types are [`crate::inventory::devfreq`]'s (re-exported here).

use super::Root;
pub use crate::inventory::devfreq::{Devfreq, TransStat};

const DEVFREQ_CLASS: &str = "/sys/class/devfreq";
const SMALL: u64 = 64 << 10;

impl Devfreq {
    /// The highest frequency the OPP table offers.
    pub fn top(&self) -> Option<u64> {
        self.available_frequencies.iter().copied().max()
    }
}

impl TransStat {
    /// Share of the recorded time spent at `freq`, 0.0..=1.0; None when no time is recorded.
    pub fn share_at(&self, freq: u64) -> Option<f64> {
        let total: u64 = self.time_ms.iter().map(|(_, t)| t).sum();
        (total > 0).then(|| {
            let at: u64 = self
                .time_ms
                .iter()
                .filter(|(f, _)| *f == freq)
                .map(|(_, t)| t)
                .sum();
            at as f64 / total as f64
        })
    }
}

/// Parse `trans_stat`. Rows are `[*] <freq>: <count>... <time>`; the header lines and anything
/// malformed are skipped, so a driver printing extra lines cannot break the doctor.
pub fn parse_trans_stat(text: &str) -> Option<TransStat> {
    let mut out = TransStat::default();
    for line in text.lines() {
        if let Some(n) = line.trim().strip_prefix("Total transition") {
            out.total_transitions = n.trim_start_matches([' ', ':']).trim().parse().ok();
            continue;
        }
        let (marked, rest) = match line.strip_prefix('*') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let Some((freq, counts)) = rest.split_once(':') else {
            continue;
        };
        let Ok(freq) = freq.trim().parse::<u64>() else {
            continue; // the "From : To" and frequency header lines
        };
        let Some(time) = counts
            .split_whitespace()
            .last()
            .and_then(|t| t.parse::<u64>().ok())
        else {
            continue;
        };
        if marked {
            out.current = Some(freq);
        }
        out.time_ms.push((freq, time));
    }
    (!out.time_ms.is_empty()).then_some(out)
}

fn parse_u64(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

fn read_text(root: &Root, path: &str) -> Option<String> {
    root.read_capped(path, SMALL)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The first devfreq device named like a GPU (`fb000000.gpu` on RK3588), read.
pub fn gpu(root: &Root) -> Option<Devfreq> {
    let names = root.list_dir(DEVFREQ_CLASS).ok()?;
    let name = names
        .into_iter()
        .find(|n| n.to_lowercase().contains("gpu"))?;
    read(root, &name)
}

/// The devfreq node of platform device `device`, if the kernel registered one.
pub fn read(root: &Root, device: &str) -> Option<Devfreq> {
    let path = format!("{DEVFREQ_CLASS}/{device}");
    if !root.exists(&path) {
        return None;
    }
    let file = |name: &str| read_text(root, &format!("{path}/{name}"));
    let words = |name: &str| -> Vec<String> {
        file(name)
            .map(|t| t.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    };
    Some(Devfreq {
        device: device.to_string(),
        path: root
            .canonicalize(&path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.clone()),
        governor: file("governor")
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty()),
        available_governors: words("available_governors"),
        available_frequencies: words("available_frequencies")
            .iter()
            .filter_map(|f| f.parse().ok())
            .collect(),
        cur_freq: file("cur_freq").as_deref().and_then(parse_u64),
        target_freq: file("target_freq").as_deref().and_then(parse_u64),
        min_freq: file("min_freq").as_deref().and_then(parse_u64),
        max_freq: file("max_freq").as_deref().and_then(parse_u64),
        trans_stat: file("trans_stat").as_deref().and_then(parse_trans_stat),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Laid out the way devfreq.c prints it: %10lu columns, `*` on the current row.
    const TABLE: &str = "     From  :   To
           : 300000000 400000000 1000000000   time(ms)
 300000000:         0         3         1      6000
* 400000000:        2         0         2      1000
 1000000000:         2         1         0      3000
Total transition : 11
";

    #[test]
    fn trans_stat_rows_give_each_frequencys_time_and_the_marked_current_one() {
        let t = parse_trans_stat(TABLE).unwrap();
        assert_eq!(
            t.time_ms,
            vec![(300000000, 6000), (400000000, 1000), (1000000000, 3000)]
        );
        assert_eq!(t.current, Some(400000000));
        assert_eq!(t.total_transitions, Some(11));
        assert_eq!(t.share_at(1000000000), Some(0.3));
        assert_eq!(t.share_at(123), Some(0.0));
    }

    #[test]
    fn a_trans_stat_without_rows_or_time_is_none_and_junk_lines_are_skipped() {
        assert_eq!(parse_trans_stat(""), None);
        assert_eq!(
            parse_trans_stat("     From  :   To\nTotal transition : 0\n"),
            None
        );
        let t = parse_trans_stat("garbage\n*500: x 7\n 600: 1 2\n").unwrap();
        assert_eq!(t.time_ms, vec![(500, 7), (600, 2)]);
        assert_eq!(t.current, Some(500));
        assert_eq!(t.share_at(500), Some(7.0 / 9.0));
        let zero = parse_trans_stat(" 500: 0 0\n").unwrap();
        assert_eq!(zero.share_at(500), None);
    }
}
