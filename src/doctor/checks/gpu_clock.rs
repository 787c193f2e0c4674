//! `gpu-clock`: can the GPU's devfreq reach its top OPP? A capped `max_freq` or a governor that
//! holds the clock low divides every GPU benchmark by the clock ratio, which looks like a slow
//! driver. The RK3588 device tree's GPU OPP table (gpu_opp_table in mainline rk3588-base.dtsi,
//! formerly rk3588s.dtsi) runs from 300 MHz to a 1 GHz top OPP; the top is taken from the
//! node's own `available_frequencies`, never assumed, so board DTs that trim the table still
//! judge right. File formats: see host/devfreq.rs.
//!
//! Whether the default governor rises for compute depends on the kernel (docs/panvk-lab.md,
//! "The clock"). `simple_ondemand` raises the clock to the top OPP when more than 45 % of a
//! 50 ms sample was busy (panthor_devfreq.c: upthreshold 45, polling_ms 50), and panthor's busy
//! time runs from `panthor_devfreq_record_busy()` to `panthor_devfreq_record_idle()`. Since
//! 6.10.3 and 6.11 (896868eded12, "Record devfreq busy as soon as a job is started")
//! `queue_run_job()` records busy when a job goes to a group already on a firmware slot, and
//! idle is recorded only at a scheduler tick where every group is idle: a long compute queue
//! counts as busy from submission to drain, and the clock rises within one sample (read at
//! 6.12.117 and 7.2.13). Before that fix only ticks recorded busy, and a single client's group
//! stays on its slot with the tick stopped, so its jobs were never counted: the governor stayed
//! at the bottom OPP under compute.

use crate::doctor::context::Context;
use crate::doctor::finding::Finding;
use crate::host::devfreq::Devfreq;
use crate::kernelcfg::KernelVersion;

const ID: &str = "gpu-clock";

pub fn check(ctx: &Context) -> Finding {
    if let Some(f) = super::needs_profile(ctx, ID) {
        return f;
    }
    let inv = ctx.inv;
    // kbase registers its own devfreq under the same device name; only panthor's is judged.
    let Some(gpu) = inv
        .gpu
        .panthor_device()
        .filter(|d| d.driver.as_deref() == Some("panthor"))
    else {
        return Finding::skip(ID, "panthor is not bound to the GPU (see gpu-driver)");
    };
    let Some(df) = inv.gpu.devfreq.iter().find(|d| d.device == gpu.name) else {
        return Finding::skip(
            ID,
            format!(
                "{} has no devfreq node (clock not scaled by the kernel)",
                gpu.name
            ),
        );
    };
    // The fix writes sysfs: for an image, the board's, never this machine's.
    let mut f = judge(
        df,
        inv.kernel.release.as_deref().and_then(KernelVersion::parse),
    );
    f.fix = f.fix.map(|fix| ctx.on_board(&fix));
    f
}

/// The first panthor releases that record a job as busy when it is submitted to a group that
/// already has a firmware slot (896868eded12: 6.11-rc1, and 6.10.3 in the 6.10 stable series).
fn counts_compute_as_busy(k: KernelVersion) -> bool {
    (k.major, k.minor, k.patch) >= (6, 10, 3)
}

fn mhz(hz: u64) -> String {
    if hz % 1_000_000 == 0 {
        format!("{} MHz", hz / 1_000_000)
    } else {
        format!("{:.1} MHz", hz as f64 / 1e6)
    }
}

fn opt_mhz(hz: Option<u64>) -> String {
    hz.map(mhz).unwrap_or_else(|| "?".into())
}

fn evidence(df: &Devfreq, top: Option<u64>) -> Vec<String> {
    let mut ev = vec![
        format!(
            "{}: governor {} (available: {})",
            df.path,
            df.governor.as_deref().unwrap_or("?"),
            if df.available_governors.is_empty() {
                "?".to_string()
            } else {
                df.available_governors.join(" ")
            }
        ),
        format!(
            "cur_freq {}, target_freq {}, min_freq {}, max_freq {}",
            opt_mhz(df.cur_freq),
            opt_mhz(df.target_freq),
            opt_mhz(df.min_freq),
            opt_mhz(df.max_freq)
        ),
        format!(
            "available_frequencies: {}",
            df.available_frequencies
                .iter()
                .map(|f| mhz(*f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];
    if let (Some(ts), Some(top)) = (&df.trans_stat, top) {
        let total_ms: u64 = ts.time_ms.iter().map(|(_, t)| t).sum();
        let share = ts
            .share_at(top)
            .map(|s| format!("{:.1} %", s * 100.0))
            .unwrap_or_else(|| "no time recorded".into());
        ev.push(format!(
            "trans_stat: at the top OPP ({}) {share} of {:.1} s, {} transitions",
            mhz(top),
            total_ms as f64 / 1000.0,
            ts.total_transitions
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into())
        ));
    }
    ev
}

/// The verdict on one devfreq node and the running kernel, apart from how they were found.
fn judge(df: &Devfreq, kernel: Option<KernelVersion>) -> Finding {
    let top = df.top();
    let mut ev = evidence(df, top);
    let Some(top) = top else {
        return Finding::skip(ID, format!("{} lists no available_frequencies", df.path))
            .evidence(ev);
    };
    let node = format!("/sys/class/devfreq/{}", df.device);
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    if let Some(max) = df.max_freq.filter(|m| *m < top) {
        problems.push(format!(
            "max_freq is capped at {}, below the top OPP {}",
            mhz(max),
            mhz(top)
        ));
        fixes.push(format!("echo {top} | sudo tee {node}/max_freq"));
    }
    // The governor that scales on load; performance would also reach the top, but pins it.
    let scaling = if df.available_governors.is_empty()
        || df
            .available_governors
            .iter()
            .any(|g| g == "simple_ondemand")
    {
        "simple_ondemand"
    } else {
        "performance"
    };
    let governor_fix = format!("echo {scaling} | sudo tee {node}/governor");
    match df.governor.as_deref() {
        Some("powersave") => {
            problems.push(format!(
                "governor powersave holds the GPU at min_freq ({})",
                opt_mhz(df.min_freq)
            ));
            fixes.push(governor_fix);
        }
        Some("userspace") => {
            let pinned = df.target_freq.or(df.cur_freq);
            if pinned.is_none_or(|f| f < top) {
                problems.push(format!(
                    "governor userspace pins the GPU at {}",
                    opt_mhz(pinned)
                ));
                fixes.push(governor_fix);
            }
        }
        Some("simple_ondemand") => match kernel {
            Some(k) if !counts_compute_as_busy(k) => {
                problems.push(format!(
                    "panthor in {k} does not count jobs sent to a resident group as busy \
                     (fixed in 6.10.3 and 6.11), so simple_ondemand keeps the GPU near min_freq \
                     ({}) under compute",
                    opt_mhz(df.min_freq)
                ));
                fixes.push(format!(
                    "echo performance | sudo tee {node}/governor (or pin it per run: sudo rvl \
                     serve --max-clock, sudo rvl smoke-bench --max-clock; a kernel >= 6.10.3 \
                     fixes the accounting)"
                ));
            }
            Some(k) => ev.push(format!(
                "panthor in {k} records a job as busy when it is submitted: simple_ondemand \
                 reaches the top OPP within one 50 ms sample of a long compute queue; bursts \
                 start at the current OPP (--max-clock pins it)"
            )),
            None => ev.push(
                "kernel release unknown: whether panthor counts compute as busy (6.10.3+) is \
                 not known"
                    .into(),
            ),
        },
        _ => {}
    }
    if problems.is_empty() {
        return Finding::pass(
            ID,
            format!(
                "the GPU clock can reach the top OPP {} (governor {}, max_freq {})",
                mhz(top),
                df.governor.as_deref().unwrap_or("?"),
                opt_mhz(df.max_freq)
            ),
        )
        .evidence(ev);
    }
    Finding::warn(ID, problems.join("; "))
        .fix(format!(
            "{} (lasts until reboot; a udev rule or boot script keeps it)",
            fixes.join(" && ")
        ))
        .evidence(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::finding::Status;
    use crate::host::devfreq::TransStat;

    const OPPS: [u64; 8] = [
        300_000_000,
        400_000_000,
        500_000_000,
        600_000_000,
        700_000_000,
        800_000_000,
        900_000_000,
        1_000_000_000,
    ];

    fn node(governor: &str, max: u64) -> Devfreq {
        Devfreq {
            device: "fb000000.gpu".into(),
            path: "/sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu".into(),
            governor: Some(governor.into()),
            available_governors: ["simple_ondemand", "userspace", "powersave", "performance"]
                .map(String::from)
                .to_vec(),
            available_frequencies: OPPS.to_vec(),
            cur_freq: Some(300_000_000),
            target_freq: Some(300_000_000),
            min_freq: Some(300_000_000),
            max_freq: Some(max),
            trans_stat: None,
        }
    }

    #[test]
    fn a_userspace_governor_pinned_at_the_top_passes_and_pinned_low_warns() {
        let mut df = node("userspace", 1_000_000_000);
        let f = judge(&df, k(7, 0, 0));
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert!(
            f.summary.contains("pins the GPU at 300 MHz"),
            "{}",
            f.summary
        );
        assert!(f.fix.unwrap().starts_with(
            "echo simple_ondemand | sudo tee /sys/class/devfreq/fb000000.gpu/governor"
        ));
        df.target_freq = Some(1_000_000_000);
        assert_eq!(judge(&df, k(7, 0, 0)).status, Status::Pass);
    }

    #[test]
    fn a_capped_maximum_and_powersave_are_both_named_with_both_fixes() {
        let df = node("powersave", 600_000_000);
        let f = judge(&df, k(7, 0, 0));
        assert_eq!(f.status, Status::Warn);
        assert!(f
            .summary
            .contains("capped at 600 MHz, below the top OPP 1000 MHz"));
        assert!(f
            .summary
            .contains("powersave holds the GPU at min_freq (300 MHz)"));
        let fix = f.fix.unwrap();
        assert!(fix.contains("echo 1000000000 | sudo tee /sys/class/devfreq/fb000000.gpu/max_freq"));
        assert!(fix.contains("&& echo simple_ondemand"));
    }

    #[test]
    fn the_evidence_gives_the_time_share_at_the_top_opp() {
        let mut df = node("simple_ondemand", 1_000_000_000);
        df.trans_stat = Some(TransStat {
            time_ms: vec![(300_000_000, 7500), (1_000_000_000, 2500)],
            current: Some(300_000_000),
            total_transitions: Some(4),
        });
        let f = judge(&df, k(6, 12, 0));
        assert_eq!(f.status, Status::Pass);
        assert!(
            f.evidence
                .iter()
                .any(|e| e
                    == "trans_stat: at the top OPP (1000 MHz) 25.0 % of 10.0 s, 4 transitions"),
            "{:?}",
            f.evidence
        );
    }

    #[test]
    fn a_node_without_frequencies_is_skipped() {
        let mut df = node("simple_ondemand", 1_000_000_000);
        df.available_frequencies.clear();
        assert_eq!(judge(&df, k(7, 0, 0)).status, Status::Skip);
    }

    fn k(major: u32, minor: u32, patch: u32) -> Option<KernelVersion> {
        Some(KernelVersion {
            major,
            minor,
            patch,
        })
    }

    #[test]
    fn simple_ondemand_on_a_kernel_before_6_10_3_warns_that_it_will_not_rise_for_compute() {
        let df = node("simple_ondemand", 1_000_000_000);
        for old in [k(6, 10, 0), k(6, 10, 2), k(6, 1, 75)] {
            let f = judge(&df, old);
            assert_eq!(f.status, Status::Warn, "{old:?}: {f:?}");
            assert!(
                f.summary
                    .contains("does not count jobs sent to a resident group as busy"),
                "{}",
                f.summary
            );
            assert!(
                f.summary.contains("near min_freq (300 MHz)"),
                "{}",
                f.summary
            );
            let fix = f.fix.unwrap();
            assert!(
                fix.starts_with(
                    "echo performance | sudo tee /sys/class/devfreq/fb000000.gpu/governor"
                ),
                "{fix}"
            );
            assert!(fix.contains("rvl serve --max-clock"), "{fix}");
        }
        for fixed in [k(6, 10, 3), k(6, 11, 0), k(6, 12, 0), k(7, 0, 0)] {
            let f = judge(&df, fixed);
            assert_eq!(f.status, Status::Pass, "{fixed:?}: {f:?}");
            assert!(
                f.evidence
                    .iter()
                    .any(|e| e.contains("records a job as busy when it is submitted")),
                "{:?}",
                f.evidence
            );
        }
        // performance needs no accounting, whatever the kernel.
        assert_eq!(
            judge(&node("performance", 1_000_000_000), k(6, 10, 0)).status,
            Status::Pass
        );
        let unknown = judge(&df, None);
        assert_eq!(unknown.status, Status::Pass);
        assert!(unknown
            .evidence
            .iter()
            .any(|e| e.starts_with("kernel release unknown")));
    }
}
