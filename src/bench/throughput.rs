//! Compiler-side throughput model: what rate the compiled code of a kernel allows, from the
//! driver's static per-unit cycle estimates, so smoke-bench can show "predicted" beside
//! "measured" and tell a compiler-bound kernel from a clock- or dispatch-bound one.
//!
//!   GFLOP/s = FLOPs per thread per loop iteration / bounding unit's cycles per thread
//!             x shader cores x clock
//!
//! Mesa's Valhall backend (panvk) counts, per thread, the 32-bit result words each unit
//! (FMA, CVT, SFU, load/store, texture, varying) issues and divides them by the unit's rate per
//! core per clock (G610: 64 FMA lanes), so its "FMA" statistic is already core-cycles per thread;
//! "ALU" combines FMA, CVT and SFU as the architecture issues them (v10 issues one arithmetic
//! instruction at a time: FMA + CVT + SFU/4). The counts are static: each instruction once, the
//! loop body once, prologue and epilogue included. Charging the whole shader to one loop
//! iteration therefore gives a floor on what the loop can reach (tight when the loop body
//! dominates the code): a measured rate far below it is not the compiler's doing.
//! docs/panvk-lab.md ("Throughput model") has the loop-body-only figures from the lab.

use serde::Serialize;

use crate::vulkan::{DeviceInfo, Statistic};

/// Mali-G610 MC4 (RK3588): 4 shader cores at a 1 GHz top OPP (research/perf-anchors.md §1.1).
pub const G610_CORES: u32 = 4;
pub const G610_TOP_CLOCK_HZ: f64 = 1.0e9;

/// Per-thread cycle estimates of one shader, in core cycles (the driver's normalised units).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct UnitCycles {
    pub fma: f64,
    pub cvt: f64,
    pub sfu: f64,
    /// FMA, CVT and SFU combined as the architecture issues them.
    pub arithmetic: f64,
    pub load_store: f64,
    pub texture: f64,
    pub varying: f64,
}

impl UnitCycles {
    /// The unit that takes longest, and its cycles (ties go to arithmetic).
    pub fn bound(&self) -> (&'static str, f64) {
        [
            ("arithmetic", self.arithmetic),
            ("load/store", self.load_store),
            ("texture", self.texture),
            ("varying", self.varying),
        ]
        .into_iter()
        .fold(("arithmetic", f64::MIN), |best, u| {
            if u.1 > best.1 {
                u
            } else {
                best
            }
        })
    }
}

/// The unit statistics under the names a driver gives them; only panvk has them so far
/// (Mesa's src/util/shader_stats.xml, ISA "Valhall"; checked in the panvk lab).
pub fn unit_cycles(dev: &DeviceInfo, stats: &[Statistic]) -> Option<UnitCycles> {
    if !dev.is_panvk() {
        return None;
    }
    let get = |name: &str| stats.iter().find(|s| s.name == name).map(|s| s.value);
    let (fma, cvt, sfu) = (get("FMA")?, get("CVT")?, get("SFU")?);
    Some(UnitCycles {
        fma,
        cvt,
        sfu,
        // Mesa's own combination when given; else Valhall v10's single-issue rule.
        arithmetic: get("ALU").unwrap_or(fma + cvt + sfu / 4.0),
        load_store: get("Load/store")?,
        texture: get("Texture").unwrap_or(0.0),
        varying: get("Varying").unwrap_or(0.0),
    })
}

/// A kernel's innermost loop as the panvk lab counted it (scripts/panvk-lab/throughput-report.sh
/// --rust, Mesa 26.2 native, G610): its ALU cycles per thread per iteration, and the
/// whole-shader FMA, CVT, SFU, ALU and Load/store statistics that identify that compiled code.
pub struct LabLoop {
    pub precision: &'static str,
    pub kernel: &'static str,
    pub whole: [f64; 5],
    pub loop_alu: f64,
}

pub const LAB_LOOPS: &[LabLoop] = &[
    LabLoop {
        precision: "fp32",
        kernel: "peak-fp32",
        whole: [2.60938, 0.515625, 0.125, 3.15625, 2.0],
        loop_alu: 2.078125,
    },
    LabLoop {
        precision: "fp16",
        kernel: "peak-fp16",
        whole: [1.54688, 0.390625, 0.125, 1.96875, 2.0],
        loop_alu: 1.0625,
    },
    LabLoop {
        precision: "int8",
        kernel: "peak-int8",
        whole: [2.0, 1.46875, 0.875, 3.6875, 2.0],
        loop_alu: 2.078125,
    },
    LabLoop {
        precision: "fp32",
        kernel: "reg-4x4",
        whole: [1.0, 1.71875, 3.3125, 3.54688, 40.0],
        loop_alu: 1.328125,
    },
    LabLoop {
        precision: "fp32",
        kernel: "reg-4x2",
        whole: [0.5, 1.09375, 2.0625, 2.10938, 22.0],
        loop_alu: 0.765625,
    },
    LabLoop {
        precision: "fp32",
        kernel: "reg-2x4",
        whole: [0.5, 1.09375, 2.0625, 2.10938, 22.0],
        loop_alu: 0.765625,
    },
    LabLoop {
        precision: "fp16",
        kernel: "reg-4x4",
        whole: [1.25, 2.3125, 3.3125, 4.39062, 40.0],
        loop_alu: 1.453125,
    },
    LabLoop {
        precision: "fp16",
        kernel: "reg-4x2",
        whole: [0.625, 1.4375, 2.0625, 2.57812, 22.0],
        loop_alu: 0.828125,
    },
    LabLoop {
        precision: "int8",
        kernel: "reg-2x2",
        whole: [0.625, 0.828125, 1.5625, 1.84375, 20.0],
        loop_alu: 1.0,
    },
    LabLoop {
        precision: "int8",
        kernel: "reg-4x1",
        whole: [0.625, 0.890625, 1.75, 1.95312, 23.0],
        loop_alu: 1.0625,
    },
    LabLoop {
        precision: "q4_0",
        kernel: "reg-2x2",
        whole: [4.25, 2.42188, 8.3125, 8.75, 28.0],
        loop_alu: 7.6875,
    },
    LabLoop {
        precision: "q4_0",
        kernel: "reg-4x1",
        whole: [3.25, 2.0, 5.0, 6.5, 42.0],
        loop_alu: 5.453125,
    },
    LabLoop {
        precision: "q4_0",
        kernel: "reg-2x1",
        whole: [2.125, 1.5, 4.5, 4.75, 22.0],
        loop_alu: 4.046875,
    },
];

/// The lab's loop cycles for this kernel, when the driver's statistics equal the lab's (the
/// same compiled code, so the loop the lab counted is the one that runs).
fn lab_loop(precision: &str, kernel: &str, c: &UnitCycles) -> Option<f64> {
    let seen = [c.fma, c.cvt, c.sfu, c.arithmetic, c.load_store];
    LAB_LOOPS
        .iter()
        .find(|l| {
            l.precision == precision
                && l.kernel == kernel
                && l.whole.iter().zip(seen).all(|(a, b)| (a - b).abs() < 1e-4)
        })
        .map(|l| l.loop_alu)
}

/// Shader cores and clock the prediction assumes, and where they came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceFacts {
    pub cores: u32,
    pub clock_hz: f64,
    pub source: String,
}

impl DeviceFacts {
    /// The device's own core count when it reports one, else the G610 MC4's; the top OPP.
    pub fn for_device(dev: &DeviceInfo) -> DeviceFacts {
        match dev.shader_cores {
            Some(c) if c.core_mask != 0 => DeviceFacts {
                cores: c.core_mask.count_ones(),
                clock_hz: G610_TOP_CLOCK_HZ,
                source: "cores from the device (VK_ARM_shader_core_builtins), clock the G610's 1 GHz top OPP".into(),
            },
            _ => DeviceFacts {
                cores: G610_CORES,
                clock_hz: G610_TOP_CLOCK_HZ,
                source: "Mali-G610 MC4: 4 cores at the 1 GHz top OPP".into(),
            },
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Prediction {
    /// GFLOP/s (GOP/s for int8) the compiled code allows.
    pub gflops: f64,
    /// The unit with the most cycles: `arithmetic`, `load/store`, `texture` or `varying`.
    pub bound: String,
    /// The rate with the arithmetic units alone: Mesa counts each load/store instruction as one
    /// cycle per thread whatever its width, which overstates a 16-wide warp's 128-bit load
    /// (256 B at the L1's 64 B per clock: 0.25 cycles per thread), so a load/store bound from
    /// these counts is loose and this is the figure to compare with FMA peaks.
    pub arithmetic_gflops: f64,
    /// The rate of the innermost loop alone, from the panvk lab's count of it (LAB_LOOPS), given
    /// only when this driver compiled the kernel to the same code as the lab did.
    pub loop_gflops: Option<f64>,
    pub cycles: UnitCycles,
    pub flops_per_iteration: f64,
    pub cores: u32,
    pub clock_hz: f64,
    /// What the cycles stand for and where cores and clock came from.
    pub basis: String,
}

pub const BASIS: &str = "static: the whole shader's unit cycles charged to one loop iteration \
     (a floor; the loop body alone is cheaper)";

/// Predicted rate for `flops_per_iteration` per thread on `facts`, or None when the bounding
/// unit has no cycles (nothing to divide by).
pub fn predict(
    cycles: UnitCycles,
    flops_per_iteration: f64,
    facts: &DeviceFacts,
) -> Option<Prediction> {
    let (bound, c) = cycles.bound();
    // Written so that NaN also gives None.
    let positive = |v: f64| v > 0.0;
    if !positive(c) || !positive(flops_per_iteration) {
        return None;
    }
    let rate =
        |cycles: f64| flops_per_iteration / cycles * f64::from(facts.cores) * facts.clock_hz / 1e9;
    Some(Prediction {
        gflops: rate(c),
        bound: bound.to_string(),
        arithmetic_gflops: if cycles.arithmetic > 0.0 {
            rate(cycles.arithmetic)
        } else {
            f64::INFINITY
        },
        loop_gflops: None,
        cycles,
        flops_per_iteration,
        cores: facts.cores,
        clock_hz: facts.clock_hz,
        basis: format!("{BASIS}; {}", facts.source),
    })
}

/// The prediction for a kernel on `dev` from its pipeline statistics, where the driver gives
/// unit cycles and the kernel's work per loop iteration is known.
pub fn for_kernel(
    dev: &DeviceInfo,
    precision: &str,
    kernel: &str,
    stats: &[Statistic],
    flops_per_iteration: Option<f64>,
) -> Option<Prediction> {
    let cycles = unit_cycles(dev, stats)?;
    let facts = DeviceFacts::for_device(dev);
    let mut p = predict(cycles, flops_per_iteration?, &facts)?;
    p.loop_gflops = lab_loop(precision, kernel, &cycles)
        .map(|c| p.flops_per_iteration / c * f64::from(facts.cores) * facts.clock_hz / 1e9);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vulkan::info::tests_support::dev;
    use crate::vulkan::ShaderCores;

    fn stat(name: &str, value: f64) -> Statistic {
        Statistic {
            name: name.into(),
            value,
        }
    }

    /// panvk's statistics for a loop of 128 FMA words per thread and a little else.
    fn panvk_stats(fma: f64, cvt: f64, ls: f64) -> Vec<Statistic> {
        vec![
            stat("Instructions", 200.0),
            stat("Cycles", ls),
            stat("FMA", fma),
            stat("CVT", cvt),
            stat("SFU", 0.0),
            stat("ALU", fma + cvt),
            stat("Varying", 0.0),
            stat("Texture", 0.0),
            stat("Load/store", ls),
            stat("Registers used", 36.0),
        ]
    }

    #[test]
    fn a_pure_fma_loop_predicts_the_g610s_512_gflops() {
        let panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        // 128 fp32 FMA words = 2 core cycles per thread for 256 FLOP -> 128 FLOP/cycle/core.
        let p = for_kernel(
            &panvk,
            "fp32",
            "x",
            &panvk_stats(2.0, 0.0, 0.0),
            Some(256.0),
        )
        .unwrap();
        assert_eq!(p.bound, "arithmetic");
        assert!((p.gflops - 512.0).abs() < 1e-9, "{}", p.gflops);
        assert_eq!((p.cores, p.clock_hz), (4, 1e9));
        assert!(p.basis.contains("floor"));
    }

    #[test]
    fn cvt_work_counts_against_the_fma_rate_and_load_store_can_bound() {
        let panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        // 2 FMA + 2 CVT cycles issue one after the other: half the rate.
        let p = for_kernel(
            &panvk,
            "fp32",
            "x",
            &panvk_stats(2.0, 2.0, 1.0),
            Some(256.0),
        )
        .unwrap();
        assert!((p.gflops - 256.0).abs() < 1e-9);
        // 8 load/store cycles against 2 arithmetic: the loads bound it.
        let p = for_kernel(
            &panvk,
            "fp32",
            "x",
            &panvk_stats(2.0, 0.0, 8.0),
            Some(256.0),
        )
        .unwrap();
        assert_eq!(p.bound, "load/store");
        assert!((p.gflops - 128.0).abs() < 1e-9);
        assert!((p.arithmetic_gflops - 512.0).abs() < 1e-9);
    }

    #[test]
    fn without_mesas_alu_statistic_the_v10_issue_rule_combines_the_units() {
        let panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        let stats: Vec<_> = panvk_stats(2.0, 1.0, 0.0)
            .into_iter()
            .filter(|s| s.name != "ALU")
            .map(|s| if s.name == "SFU" { stat("SFU", 4.0) } else { s })
            .collect();
        // FMA 2 + CVT 1 + SFU 4 / 4 = 4 cycles, one instruction issued at a time.
        let c = unit_cycles(&panvk, &stats).unwrap();
        assert!((c.arithmetic - 4.0).abs() < 1e-9);
    }

    #[test]
    fn a_kernel_compiled_as_in_the_lab_gets_the_labs_loop_rate() {
        let panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        let lab = &LAB_LOOPS[0];
        let [fma, cvt, sfu, alu, ls] = lab.whole;
        let stats = vec![
            stat("FMA", fma),
            stat("CVT", cvt),
            stat("SFU", sfu),
            stat("ALU", alu),
            stat("Load/store", ls),
        ];
        let p = for_kernel(&panvk, lab.precision, lab.kernel, &stats, Some(256.0)).unwrap();
        // peak-fp32: 256 FLOP over 2.078 loop cycles x 4 cores x 1 GHz = 493 GFLOP/s.
        assert!((p.loop_gflops.unwrap() - 256.0 / lab.loop_alu * 4.0).abs() < 1e-9);
        assert!(p.loop_gflops.unwrap() > p.gflops);
        // Other code (one statistic differs), or another kernel's name: no loop figure.
        let mut other = stats.clone();
        other[1] = stat("CVT", cvt + 1.0 / 64.0);
        assert_eq!(
            for_kernel(&panvk, lab.precision, lab.kernel, &other, Some(256.0))
                .unwrap()
                .loop_gflops,
            None
        );
        assert_eq!(
            for_kernel(&panvk, lab.precision, "reg-9x9", &stats, Some(256.0))
                .unwrap()
                .loop_gflops,
            None
        );
    }

    #[test]
    fn the_devices_own_core_mask_sets_the_core_count() {
        let mut panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        panvk.shader_cores = Some(ShaderCores {
            core_mask: 0x5,
            core_count: 2,
            warps_per_core: 64,
        });
        let p = for_kernel(
            &panvk,
            "fp32",
            "x",
            &panvk_stats(2.0, 0.0, 0.0),
            Some(256.0),
        )
        .unwrap();
        assert_eq!(p.cores, 2);
        assert!((p.gflops - 256.0).abs() < 1e-9);
    }

    #[test]
    fn other_drivers_missing_units_or_unknown_work_give_no_prediction() {
        let panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        let nv = dev(0, "H200", "discrete-gpu", "NVIDIA_PROPRIETARY");
        assert_eq!(
            for_kernel(&nv, "fp32", "x", &panvk_stats(2.0, 0.0, 0.0), Some(256.0)),
            None
        );
        assert_eq!(
            for_kernel(&panvk, "fp32", "x", &panvk_stats(2.0, 0.0, 0.0), None),
            None
        );
        assert_eq!(
            for_kernel(&panvk, "fp32", "x", &[stat("Spills", 0.0)], Some(256.0)),
            None
        );
        // A shader with no cycles at all has nothing to divide by.
        assert_eq!(
            for_kernel(
                &panvk,
                "fp32",
                "x",
                &panvk_stats(0.0, 0.0, 0.0),
                Some(256.0)
            ),
            None
        );
    }
}
