//! Human output: a short header, the per-ubatch table (the headline), the best kernel per shape
//! at the largest ubatch, kernel diagnostics, problems and notes.

use std::fmt::Write;

use super::kernels::Precision;
use super::llamacpp;
use super::peak::Peak;
use super::report::{Report, Stack, Status};
use super::throughput::Prediction;
use crate::output::Style;

// One format for every duration and every rate rvl prints (src/output.rs).
use crate::output::{duration as fmt_s, sig3 as fmt_rate};

fn status_cell(style: Style, s: &Stack) -> String {
    match s.status {
        Status::Ok => style.green("ok"),
        Status::Wrong => style.red("wrong"),
        Status::Error => style.red("error"),
        Status::Skipped => style.yellow("skipped"),
    }
}

pub fn render(r: &Report, style: Style) -> String {
    let mut o = String::new();
    for section in [
        header,
        clock_and_peaks,
        headline,
        side_by_side,
        best_kernels,
        diagnostics,
        problems,
        skipped_for_time,
        notes,
    ] {
        section(&mut o, r, style);
    }
    o
}

/// The title line, the device and its features, the other devices.
fn header(o: &mut String, r: &Report, style: Style) {
    let d = &r.device;
    let _ = writeln!(
        o,
        "{} {} ({} GFLOP/token in GEMMs), {} run",
        style.bold("rvl smoke-bench:"),
        r.model.model.name,
        fmt_rate(r.model.gflop_per_token),
        r.size.word()
    );
    let _ = writeln!(
        o,
        "device {}: {} [{}], {} {} ({}), Vulkan {}",
        d.index, d.name, d.kind, d.driver_name, d.driver_version, d.driver_info, d.api_version
    );
    let yn = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(
        o,
        "  fp16 {} | int8 dot {}{} | float atomics {} | subgroup {} | shared memory {} KiB | compute units {} | timestamps {}",
        yn(d.fp16),
        yn(d.int8_dot),
        if d.int8_dot && !d.int8_dot_accelerated {
            " (not accelerated)"
        } else {
            ""
        },
        yn(d.float_atomic_add),
        d.subgroup_size,
        d.max_shared_memory / 1024,
        d.compute_units
            .map_or_else(|| "unknown".to_string(), |n| n.to_string()),
        yn(d.timestamp_period_ns.is_some())
    );
    if r.devices.len() > 1 {
        let others: Vec<String> = r
            .devices
            .iter()
            .filter(|x| x.index != d.index)
            .map(|x| format!("{}: {} [{}]", x.index, x.name, x.kind))
            .collect();
        let _ = writeln!(
            o,
            "  other devices: {} (choose with --device)",
            others.join(", ")
        );
    }
}

/// The GPU clock and the measured arithmetic peaks, with what tells a low clock from idle
/// cores: the clock around each timed peak, panvk's task split and the measured share of the
/// prediction.
fn clock_and_peaks(o: &mut String, r: &Report, _: Style) {
    match &r.gpu_clock {
        Some(c) => {
            let _ = writeln!(
                o,
                "GPU clock ({}): {} of {}, governor {}",
                c.device,
                mhz(c.cur_freq_hz),
                mhz(c.max_freq_hz),
                c.governor.as_deref().unwrap_or("?")
            );
        }
        None => {
            let _ = writeln!(o, "GPU clock: not readable (no /sys/class/devfreq/*gpu*)");
        }
    }
    let peaks: Vec<String> = r
        .peak
        .iter()
        .map(|p| match (p.gflops, &p.error) {
            (Some(g), _) => format!(
                "{} {} {}",
                peak_label(p),
                fmt_rate(g),
                if p.precision == Precision::Int8 {
                    "GOP/s"
                } else {
                    "GFLOP/s"
                }
            ),
            (None, Some(e)) => format!("{} failed: {e}", peak_label(p)),
            (None, None) => format!("{} not measured", peak_label(p)),
        })
        .collect();
    if !peaks.is_empty() {
        let _ = writeln!(
            o,
            "measured peak (FMA / int8 dot loops): {}",
            peaks.join(" | ")
        );
    }
    let predicted: Vec<String> = r.peak.iter().filter_map(peak_prediction).collect();
    if let Some(pr) = r.peak.iter().find_map(|p| p.predicted.as_ref()) {
        let _ = writeln!(
            o,
            "predicted from the compiler's statistics ({} cores at {} MHz): {}",
            pr.cores,
            (pr.clock_hz / 1e6).round(),
            predicted.join(" | ")
        );
    }
    let clocks: Vec<String> = r
        .peak
        .iter()
        .filter(|p| p.cur_freq_before_hz.is_some() || p.cur_freq_after_hz.is_some())
        .map(|p| {
            format!(
                "{} {} -> {}",
                peak_label(p),
                mhz(p.cur_freq_before_hz),
                mhz(p.cur_freq_after_hz)
            )
        })
        .collect();
    if !clocks.is_empty() {
        let _ = writeln!(
            o,
            "GPU clock before -> after each timed peak: {}",
            clocks.join(" | ")
        );
    }
    if let Some(first) = r.peak.iter().find_map(|p| p.task_split.as_ref()) {
        let _ = writeln!(
            o,
            "panvk task split ({} rule; compute core mask {:#x} = {} cores; thread limits: {}):",
            first.rule.label(),
            first.core_mask,
            first.cores,
            first.source
        );
        for p in &r.peak {
            if let Some(s) = &p.task_split {
                let _ = writeln!(
                    o,
                    "  {}: {} workgroups of {}: {}",
                    peak_label(p),
                    p.workgroups,
                    p.workgroup_size,
                    s.describe()
                );
            }
        }
    }
    if let Some(line) = narrow_verdict(&r.peak) {
        let _ = writeln!(o, "{line}");
    }
}

fn mhz(hz: Option<u64>) -> String {
    hz.map(|h| format!("{} MHz", h / 1_000_000))
        .unwrap_or_else(|| "?".into())
}

/// "fp32", or "fp32@16" for the run with 16-invocation workgroups.
fn peak_label(p: &Peak) -> String {
    if p.is_narrow() {
        format!("{}@{}", p.precision.name(), p.workgroup_size)
    } else {
        p.precision.name().to_string()
    }
}

/// The same fp32 loop with vkpeak's 16-invocation workgroups against 256: the same code, so a
/// rate well below the wide one is the dispatch's doing (fewer cores with work), not the
/// compiler's or the clock's.
fn narrow_verdict(peaks: &[Peak]) -> Option<String> {
    let wide = peaks
        .iter()
        .find(|p| p.precision == Precision::Fp32 && !p.is_narrow())?;
    let narrow = peaks
        .iter()
        .find(|p| p.precision == Precision::Fp32 && p.is_narrow())?;
    let ratio = narrow.gflops? / wide.gflops?;
    let split = narrow
        .task_split
        .as_ref()
        .map(|s| {
            format!(
                " (panvk's split: {} of {} cores with work)",
                s.cores_with_work, s.cores
            )
        })
        .unwrap_or_default();
    let verdict = if ratio < 0.6 {
        "narrow workgroups reach fewer cores: the dispatch, not the clock or the code, costs this"
    } else {
        "narrow workgroups are spread as well as wide ones"
    };
    Some(format!(
        "fp32@{} / fp32: {:.2}{split}: {verdict}",
        narrow.workgroup_size, ratio
    ))
}

/// One peak loop's prediction, with the measured rate as a share of it.
fn peak_prediction(p: &Peak) -> Option<String> {
    let pr = p.predicted.as_ref()?;
    Some(format!(
        "{} {}{}",
        peak_label(p),
        predicted_rate(pr),
        share(p.gflops, pr.loop_gflops.unwrap_or(pr.gflops))
            .map(|s| format!(", measured {s}"))
            .unwrap_or_default()
    ))
}

/// The loop's rate where the lab counted this very code, else the floor from the driver's
/// whole-shader statistics, with the bounding unit.
fn predicted_rate(p: &Prediction) -> String {
    let floor = format!(
        "{}-bound{}",
        p.bound,
        if p.bound == "arithmetic" {
            String::new()
        } else {
            format!("; arithmetic alone {}", fmt_rate(p.arithmetic_gflops))
        }
    );
    match p.loop_gflops {
        Some(l) => format!(
            "{} (loop as the panvk lab counted it; floor {}, {floor})",
            fmt_rate(l),
            fmt_rate(p.gflops)
        ),
        None => format!(">= {} ({floor})", fmt_rate(p.gflops)),
    }
}

/// A kernel's prediction beside its best measured rate.
fn kernel_prediction(p: &Prediction, measured: Option<f64>) -> String {
    let against = p.loop_gflops.unwrap_or(p.gflops);
    format!(
        "predicted {}, measured {}",
        predicted_rate(p),
        match (measured, share(measured, against)) {
            (Some(m), Some(s)) => format!("{} ({s})", fmt_rate(m)),
            _ => "-".into(),
        }
    )
}

/// `measured` as a percentage of `predicted`, when both are known.
fn share(measured: Option<f64>, predicted: f64) -> Option<String> {
    let m = measured?;
    (predicted > 0.0).then(|| format!("{:.0} %", 100.0 * m / predicted))
}

/// The headline: per ubatch, each stack, with the CPU next to it.
fn headline(o: &mut String, r: &Report, style: Style) {
    let _ = writeln!(o);
    let b = &r.cpu_baseline;
    let line = format!("CPU t/s: {}", b.what);
    let _ = writeln!(
        o,
        "{}",
        match b.source.as_str() {
            "matrixmultiply" | "mixed" => style.yellow(&line),
            _ => style.dim(&line),
        }
    );
    let _ = writeln!(
        o,
        "{}",
        style.bold(&format!(
            "{:>6}  {:<18} {:<8} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8}",
            "ubatch",
            "precision/kernels",
            "status",
            "layers",
            "GFLOP/s",
            "pred t/s",
            "5000 tok",
            "CPU t/s",
            "GPU/CPU"
        ))
    );
    for u in &r.ubatches {
        let mut first = true;
        for s in &u.stacks {
            let label = format!("{} {}", s.precision.name(), s.label);
            let layers = if s.layers_recorded == 0 {
                "-".to_string()
            } else if s.extrapolated || s.sliced {
                format!("~{}/{}", s.layers_recorded, s.layers_model)
            } else {
                s.layers_recorded.to_string()
            };
            let (cpu, ratio) = if first {
                (
                    u.cpu_baseline
                        .as_ref()
                        .map(|c| fmt_rate(c.predicted_tokens_per_s))
                        .unwrap_or_else(|| "-".into()),
                    u.gpu_cpu_ratio
                        .map(|x| format!("{x:.2}x"))
                        .unwrap_or_else(|| "-".into()),
                )
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                o,
                "{:>6}  {:<18} {:<8} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8}",
                if first {
                    u.ubatch.to_string()
                } else {
                    String::new()
                },
                label,
                status_cell(style, s),
                layers,
                s.gflops.map(fmt_rate).unwrap_or_else(|| "-".into()),
                s.predicted_tokens_per_s
                    .map(fmt_rate)
                    .unwrap_or_else(|| "-".into()),
                s.prompt_5000_s.map(fmt_s).unwrap_or_else(|| "-".into()),
                cpu,
                ratio
            );
            if let Some(e) = &s.error {
                let _ = writeln!(o, "{:>8}{}", "", style.red(&format!("└ {e}")));
            } else if let Some(reason) = &s.reason {
                let _ = writeln!(o, "{:>8}{}", "", style.dim(&format!("└ {reason}")));
            }
            first = false;
        }
    }
}

/// rvl's best kernel per GEMM (one layer, each product alone), llama.cpp's Vulkan kernels and
/// llama.cpp's CPU backend, per ubatch and weight type, in GFLOP/s.
fn side_by_side(o: &mut String, r: &Report, style: Style) {
    let l = &r.llama_cpp;
    let _ = writeln!(o);
    if l.tool.is_none() {
        let _ = writeln!(
            o,
            "{}",
            style.yellow(&format!(
                "llama.cpp side by side: not run ({})",
                l.not_run.as_deref().unwrap_or("no test-backend-ops")
            ))
        );
        return;
    }
    let _ = writeln!(
        o,
        "{}",
        style.bold(&format!(
            "side by side, one layer's GEMMs, each product alone (GFLOP/s): rvl's best kernels | llama.cpp's Vulkan kernels | llama.cpp's CPU backend{}",
            l.cpu_threads
                .map(|t| format!(" ({t} threads)"))
                .unwrap_or_default()
        ))
    );
    let _ = writeln!(
        o,
        "{:>6}  {:<12} {:>9} {:>11} {:>11} {:>8}",
        "ubatch", "weights", "rvl", "llama Vk", "llama CPU", "rvl/CPU"
    );
    let layer = r.model.model.layer();
    for u in &r.ubatches {
        let mut first = true;
        for p in Precision::ALL {
            for (i, t) in llamacpp::ggml_types(p).iter().enumerate() {
                // rvl's kernels are for the first type of each precision (q4_0, not q4_K).
                let rvl = if i == 0 {
                    rvl_layer_gflops(u, p, &layer)
                } else {
                    None
                };
                let get = |b: llamacpp::Backend| {
                    u.llama_cpp
                        .iter()
                        .find(|x| x.backend == b && x.ggml_type == *t)
                        .and_then(|x| x.gflops)
                };
                let (vk, cpu) = (get(llamacpp::Backend::Vulkan), get(llamacpp::Backend::Cpu));
                if rvl.is_none() && vk.is_none() && cpu.is_none() {
                    continue;
                }
                let label = if i == 0 {
                    format!("{} ({t})", p.name())
                } else {
                    format!("- ({t})")
                };
                let cell = |v: Option<f64>| v.map(fmt_rate).unwrap_or_else(|| "-".into());
                let _ = writeln!(
                    o,
                    "{:>6}  {:<12} {:>9} {:>11} {:>11} {:>8}",
                    if first {
                        u.ubatch.to_string()
                    } else {
                        String::new()
                    },
                    label,
                    cell(rvl),
                    cell(vk),
                    cell(cpu),
                    rvl.zip(cpu)
                        .map(|(a, b)| format!("{:.2}x", a / b))
                        .unwrap_or_else(|| "-".into())
                );
                first = false;
            }
        }
    }
    let repacked: Vec<String> = {
        let mut t: Vec<String> = l
            .gemms
            .iter()
            .filter(|g| g.weights.as_deref().is_some_and(|w| w.contains("REPACK")))
            .map(|g| g.ggml_type.clone())
            .collect();
        t.sort();
        t.dedup();
        t
    };
    if !repacked.is_empty() {
        let _ = writeln!(
            o,
            "{}",
            style.dim(&format!(
                "  llama.cpp's CPU repacked the {} weights, as it does when it loads a model",
                repacked.join(", ")
            ))
        );
    }
    for run in &l.runs {
        if let Some(e) = &run.error {
            let _ = writeln!(
                o,
                "{}",
                style.yellow(&format!(
                    "  llama.cpp {}: {}",
                    run.backend.name(),
                    crate::output::escape_line(e)
                ))
            );
        }
    }
}

/// rvl's layer at `p` from its best correct screen per GEMM, in GFLOP/s; None unless every GEMM
/// has one.
fn rvl_layer_gflops(
    u: &super::report::UbatchResult,
    p: Precision,
    layer: &[super::model::Gemm],
) -> Option<f64> {
    let mut secs = 0.0;
    let mut flops = 0.0;
    for g in layer {
        let best = u
            .screens
            .iter()
            // Screens run once per distinct shape (gate stands for up).
            .filter(|s| s.precision == p && s.shape == g.shape() && s.status == Status::Ok)
            .filter_map(|s| s.gflops)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))?;
        let f = g.flops(u.ubatch);
        flops += f;
        secs += f / (best * 1e9);
    }
    (secs > 0.0).then(|| flops / secs / 1e9)
}

/// The best kernel per shape at the largest ubatch that has results.
fn best_kernels(o: &mut String, r: &Report, style: Style) {
    if let Some(u) = r
        .ubatches
        .iter()
        .rev()
        .find(|u| u.screens.iter().any(|s| s.status == Status::Ok))
    {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{}",
            style.bold(&format!(
                "best kernel per shape at ubatch {} (efficiency = GFLOP/s / measured peak; error vs CPU reference; llama.cpp Vulkan | CPU GFLOP/s)",
                u.ubatch
            ))
        );
        let mut keys: Vec<(String, String)> = Vec::new();
        for s in &u.screens {
            let key = (s.precision.name().to_string(), s.gemm.clone());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for (p, g) in keys {
            let best = u
                .screens
                .iter()
                .filter(|s| s.precision.name() == p && s.gemm == g && s.status == Status::Ok)
                .min_by(|a, b| {
                    a.seconds
                        .unwrap_or(f64::MAX)
                        .total_cmp(&b.seconds.unwrap_or(f64::MAX))
                });
            if let Some(b) = best {
                let llama = |backend: llamacpp::Backend| {
                    r.llama_cpp
                        .gemms
                        .iter()
                        .find(|x| {
                            x.backend == backend
                                && x.ubatch == u.ubatch
                                && x.gemm == g
                                && x.precision == Some(b.precision)
                        })
                        .and_then(|x| x.gflops)
                        .map(fmt_rate)
                        .unwrap_or_else(|| "-".into())
                };
                let _ = writeln!(
                    o,
                    "  {:<5} {:<5} {:<11} {:<14} {:>9} GFLOP/s {:>6}  err {:.1e} <= {:.0e}  {:>9} | {}",
                    p,
                    g,
                    b.shape,
                    b.kernel_label(),
                    fmt_rate(b.gflops.unwrap_or(0.0)),
                    b.efficiency
                        .map(|e| format!("{:.0}%", e * 100.0))
                        .unwrap_or_else(|| "-".into()),
                    b.max_error.unwrap_or(0.0),
                    b.tolerance,
                    llama(llamacpp::Backend::Vulkan),
                    llama(llamacpp::Backend::Cpu)
                );
            }
        }
    }
}

/// Registers, spills and panvk scratch per kernel, as the driver reports them.
fn diagnostics(o: &mut String, r: &Report, style: Style) {
    let _ = writeln!(o);
    if r.kernels.iter().all(|k| k.statistics.is_empty()) {
        let _ = writeln!(
            o,
            "kernel registers/spills: not exposed by this driver (no VK_KHR_pipeline_executable_properties)"
        );
    } else {
        let _ = writeln!(
            o,
            "{}",
            style.bold("kernel registers / spills / fills (driver statistics)")
        );
        for k in &r.kernels {
            let n = |v: Option<f64>| v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "?".into());
            let mut line = format!(
                "  {:<5} {:<14} regs {:>4}  spills {:>5}  fills {:>5}",
                k.precision,
                k.kernel,
                n(k.registers),
                n(k.spills),
                n(k.fills)
            );
            if let Some(s) = &k.scratch {
                if s.allocates {
                    let _ = write!(
                        line,
                        "  {}",
                        style.red(&format!(
                            "panvk scratch {:.0} MiB per command buffer",
                            s.bytes_per_command_buffer as f64 / 1048576.0
                        ))
                    );
                } else {
                    let _ = write!(line, "  no panvk scratch");
                }
            }
            if let Some(p) = &k.predicted {
                let _ = write!(line, "  {}", kernel_prediction(p, k.measured_gflops));
            }
            let _ = writeln!(o, "{line}");
        }
        if let Some(p) = r
            .kernels
            .iter()
            .find_map(|k| k.predicted.as_ref())
            .or_else(|| r.peak.iter().find_map(|p| p.predicted.as_ref()))
        {
            let _ = writeln!(
                o,
                "  predicted GFLOP/s = FLOPs per thread per loop iteration / bounding unit's cycles per thread x {} cores x {} MHz; floor: {}; the loop figure, where shown, counts the innermost loop of the same compiled code in the panvk lab (docs/panvk-lab.md, Throughput model)",
                p.cores,
                (p.clock_hz / 1e6).round(),
                p.basis
            );
        }
        if let Some(s) = r.kernels.iter().find_map(|k| k.scratch.as_ref()) {
            let _ = writeln!(
                o,
                "  scratch = next_pow2(TLS/thread) x {} threads x core_id_range {} (mask {:#x}; {}); TLS from {}",
                s.max_threads_per_core, s.core_id_range, s.core_mask, s.topology_source, s.tls_source
            );
        }
    }
}

/// Kernels that failed or gave a wrong result.
fn problems(o: &mut String, r: &Report, style: Style) {
    let bad: Vec<String> = r
        .ubatches
        .iter()
        .flat_map(|u| u.screens.iter().map(move |s| (u.ubatch, s)))
        .filter(|(_, s)| matches!(s.status, Status::Wrong | Status::Error))
        .map(|(ub, s)| match (&s.error, s.max_error) {
            (Some(e), _) => format!(
                "ubatch {ub} {} {} {}: {e}",
                s.precision.name(),
                s.kernel,
                s.gemm
            ),
            (None, Some(err)) => format!(
                "ubatch {ub} {} {} {}: wrong result, error {err:.2e} > tolerance {:.0e}",
                s.precision.name(),
                s.kernel,
                s.gemm,
                s.tolerance
            ),
            _ => String::new(),
        })
        .collect();
    if !bad.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "{}", style.red("problems:"));
        for b in bad {
            let _ = writeln!(o, "  ✗ {b}");
        }
    }
}

/// How much screening the time budget left out, so a quick run says what it did not measure.
fn skipped_for_time(o: &mut String, r: &Report, style: Style) {
    let (mut skipped, mut all, mut at) = (0, 0, Vec::new());
    for u in &r.ubatches {
        let n = u
            .screens
            .iter()
            .filter(|s| s.reason.as_deref() == Some(super::sweep::SKIPPED_FOR_TIME))
            .count();
        if n > 0 {
            at.push(u.ubatch.to_string());
        }
        skipped += n;
        all += u.screens.len();
    }
    if skipped == 0 {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{}",
        style.yellow(&format!(
            "skipped for time: {skipped} of {all} kernel screens (at ubatch {}); --full runs them all",
            at.join(", ")
        ))
    );
}

/// The run's notes, dimmed.
fn notes(o: &mut String, r: &Report, style: Style) {
    if !r.notes.is_empty() {
        let _ = writeln!(o);
        for n in &r.notes {
            let _ = writeln!(o, "{}", style.dim(&format!("note: {n}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::throughput;
    use crate::vulkan::info::tests_support::dev;
    use crate::vulkan::Statistic;

    /// A prediction from panvk-named statistics: 2 FMA cycles for 256 FLOP = 512 GFLOP/s.
    fn predicted() -> Prediction {
        let stats: Vec<Statistic> = [
            ("FMA", 2.0),
            ("CVT", 0.0),
            ("SFU", 0.0),
            ("Load/store", 0.5),
        ]
        .into_iter()
        .map(|(n, v)| Statistic {
            name: n.into(),
            value: v,
        })
        .collect();
        let panvk = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        throughput::for_kernel(&panvk, "fp32", "x", &stats, Some(256.0)).unwrap()
    }

    #[test]
    fn a_kernel_shows_its_prediction_beside_the_measured_rate_and_the_share() {
        let line = kernel_prediction(&predicted(), Some(85.0));
        assert_eq!(
            line,
            "predicted >= 512 (arithmetic-bound), measured 85.0 (17 %)"
        );
        assert!(kernel_prediction(&predicted(), None).ends_with("measured -"));
        let mut loads = predicted();
        loads.bound = "load/store".into();
        loads.gflops = 128.0;
        assert_eq!(
            kernel_prediction(&loads, Some(64.0)),
            "predicted >= 128 (load/store-bound; arithmetic alone 512), measured 64.0 (50 %)"
        );
        // Where the lab counted the loop of this very code, the share is of the loop's rate.
        loads.loop_gflops = Some(400.0);
        assert_eq!(
            kernel_prediction(&loads, Some(100.0)),
            "predicted 400 (loop as the panvk lab counted it; floor 128, load/store-bound; \
             arithmetic alone 512), measured 100 (25 %)"
        );
    }

    fn peak(precision: Precision, local: u32, gflops: Option<f64>) -> Peak {
        Peak {
            precision,
            workgroup_size: local,
            workgroups: if local == 256 { 16384 } else { 32768 },
            gflops,
            error: None,
            predicted: None,
            measured_over_predicted: None,
            task_split: None,
            cur_freq_before_hz: None,
            cur_freq_after_hz: None,
        }
    }

    #[test]
    fn a_peak_loop_shows_its_prediction_only_when_the_driver_gave_one() {
        let mut p = peak(Precision::Fp32, 256, Some(128.0));
        assert_eq!(peak_prediction(&p), None);
        p.predicted = Some(predicted());
        assert_eq!(
            peak_prediction(&p).as_deref(),
            Some("fp32 >= 512 (arithmetic-bound), measured 25 %")
        );
    }

    #[test]
    fn narrow_workgroups_far_below_wide_ones_are_named_as_the_dispatchs_doing() {
        use crate::bench::tasksplit::{split, Limits, Rule};
        let l = Limits::g610();
        let mut wide = peak(Precision::Fp32, 256, Some(400.0));
        wide.task_split = split(Rule::Mesa25, &l, [256, 1, 1], [16384, 1, 1], 36);
        let mut narrow = peak(Precision::Fp32, 16, Some(100.0));
        narrow.task_split = split(Rule::Mesa25, &l, [16, 1, 1], [32768, 1, 1], 8);
        let line = narrow_verdict(&[wide.clone(), narrow.clone()]).unwrap();
        assert_eq!(
            line,
            "fp32@16 / fp32: 0.25 (panvk's split: 1 of 4 cores with work): narrow workgroups \
             reach fewer cores: the dispatch, not the clock or the code, costs this"
        );
        narrow.gflops = Some(390.0);
        narrow.task_split = split(Rule::Mesa26, &l, [16, 1, 1], [32768, 1, 1], 8);
        assert!(narrow_verdict(&[wide.clone(), narrow.clone()])
            .unwrap()
            .ends_with("narrow workgroups are spread as well as wide ones"));
        // Without the narrow run (a CPU device), nothing to say.
        assert_eq!(narrow_verdict(std::slice::from_ref(&wide)), None);
        narrow.gflops = None;
        assert_eq!(narrow_verdict(&[wide, narrow]), None);
    }

    #[test]
    fn the_peak_section_gives_the_clock_around_each_timed_peak_and_each_task_split() {
        use crate::bench::tasksplit::{split, Limits, Rule};
        let l = Limits::g610();
        let mut wide = peak(Precision::Fp32, 256, Some(400.0));
        wide.cur_freq_before_hz = Some(300_000_000);
        wide.cur_freq_after_hz = Some(1_000_000_000);
        wide.task_split = split(Rule::Mesa26, &l, [256, 1, 1], [16384, 1, 1], 36);
        let mut narrow = peak(Precision::Fp32, 16, Some(390.0));
        narrow.task_split = split(Rule::Mesa26, &l, [16, 1, 1], [32768, 1, 1], 8);
        let mut o = String::new();
        let report = crate::bench::report::tests_support::report(vec![wide, narrow]);
        clock_and_peaks(&mut o, &report, Style::default());
        for needle in [
            "measured peak (FMA / int8 dot loops): fp32 400 GFLOP/s | fp32@16 390 GFLOP/s",
            "GPU clock before -> after each timed peak: fp32 300 MHz -> 1000 MHz",
            "panvk task split (Mesa 26.0+ rule; compute core mask 0x50005 = 4 cores; thread limits: a Mali-G610",
            "  fp32: 16384 workgroups of 256: x_axis #1: 16384 tasks of 1 workgroup (256 threads) \
             on 4 of 4 cores, per core 4 tasks, 1024 threads (64 warps) of 1024 at once",
            "  fp32@16: 32768 workgroups of 16: x_axis #16: 2048 tasks of 16 workgroups",
        ] {
            assert!(o.contains(needle), "{needle:?} missing in:\n{o}");
        }
    }
}
