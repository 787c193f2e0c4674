//! Human output of a prefill run: what was measured with what, the per-ubatch table (markdown,
//! so it pastes into an issue as it is), the failures with their last stderr lines, the
//! comparison, the notes. Pure; every text taken from llama-bench or a file is escaped.

use std::fmt::Write;

use super::compare::{self, Comparison};
use super::g610::G610Prediction;
use super::report::{Case, Check, CheckStatus, Report, Status};
use crate::output::{duration, escape_line, sig3, Style};

fn size(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", sig3(bytes as f64 / 1024.0))
    } else {
        format!("{} MiB", sig3(bytes as f64 / 1048576.0))
    }
}

pub fn render(r: &Report, style: Style) -> String {
    let mut o = String::new();
    header(&mut o, r, style);
    table(&mut o, r, style);
    failures(&mut o, r, style);
    o
}

fn header(o: &mut String, r: &Report, style: Style) {
    let m = &r.model;
    let _ = writeln!(
        o,
        "{} {} ({}{}), pp{}, {} repetitions per run",
        style.bold("rvl smoke-bench --gguf:"),
        escape_line(&m.file_name),
        m.model_type
            .as_deref()
            .map(|t| format!("{}, ", escape_line(t)))
            .unwrap_or_default(),
        size(m.bytes),
        r.prompt_tokens,
        super::plan::REPETITIONS
    );
    let b = &r.llama_bench;
    let mut line = format!("llama-bench: {}", escape_line(&b.path));
    if let Some(id) = compare::build_id(r) {
        let _ = write!(line, ", build {}", escape_line(&id));
    }
    if let Some(p) = &b.rvl_prefix {
        let _ = write!(
            line,
            " (rvl's {}{})",
            escape_line(p),
            b.patch_level
                .as_deref()
                .map(|l| format!("; {}", escape_line(l)))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(o, "{line}");
    if let Some(d) = &r.vulkan_device {
        let _ = writeln!(
            o,
            "Vulkan device {}: {} ({} {}, driver {})",
            d.index,
            escape_line(&d.name),
            escape_line(&d.driver_name),
            escape_line(&d.driver_info),
            escape_line(&d.driver_version)
        );
    }
    if let Some(p) = &r.rvl_panvk {
        let _ = writeln!(o, "panvk: {}", escape_line(p));
    }
    match r.cpu_threads {
        Some(t) => {
            let _ = writeln!(o, "CPU runs: {t} threads (the big cores), no GPU device");
        }
        None => {
            let _ = writeln!(o, "CPU runs: skipped (--no-cpu)");
        }
    }
    if !r.rpc.is_empty() {
        let _ = writeln!(
            o,
            "GPU runs: with RPC workers {} (llama-bench -rpc), besides any GPU of this board",
            escape_line(&r.rpc.join(","))
        );
    }
    let c = &r.check_tool;
    match (&c.path, &c.not_run) {
        (Some(p), _) => {
            let _ = writeln!(
                o,
                "GPU check before each GPU run: {} test -b {} against llama.cpp's CPU backend, the model's matrices {}",
                escape_line(p),
                super::check::BACKEND,
                escape_line(&c.shapes.join(", "))
            );
        }
        (None, why) => {
            let _ = writeln!(
                o,
                "{}",
                style.yellow(&format!(
                    "GPU check: not run{}",
                    why.as_deref()
                        .map(|w| format!(" ({})", escape_line(w)))
                        .unwrap_or_default()
                ))
            );
        }
    }
}

/// The check column: "ok 4/4", "wrong", "error", "-" (not checked).
fn check_cell(c: Option<&Check>, style: Style) -> String {
    match c {
        None => "-".into(),
        Some(c) => match c.status {
            CheckStatus::Passed => style.green(&format!("ok {}/{}", c.passed, c.cases)),
            CheckStatus::WrongResults => style.red("wrong"),
            CheckStatus::Error => style.red("error"),
        },
    }
}

/// 5000 -> "5,000".
fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn rate(c: Option<&Case>) -> String {
    match c {
        None => "-".into(),
        Some(c) => c.ok_rate().map(sig3).unwrap_or_else(|| "-".into()),
    }
}

/// "ok", or each side that did not end ok with its status and how it ended.
fn status_cell(gpu: &Case, cpu: Option<&Case>, style: Style) -> String {
    let bad: Vec<String> = std::iter::once(("GPU", gpu))
        .chain(cpu.map(|c| ("CPU", c)))
        .filter(|(_, c)| c.status != Status::Ok)
        .map(|(side, c)| match c.status {
            Status::Crashed | Status::OutOfDeviceMemory => {
                format!("{side} {} ({})", c.status.name(), c.exit)
            }
            _ => format!("{side} {}", c.status.name()),
        })
        .collect();
    if bad.is_empty() {
        style.green("ok")
    } else {
        style.red(&bad.join("; "))
    }
}

/// "G610 at 1 GHz (panvk lab model, GEMM only, fp16 build): 5.55 GFLOP/token (q4_K 4.72 at 672
/// GFLOP/s (int-dot build 719), ...)": the rate of the path the build takes, the other beside it.
fn g610_line(g: &G610Prediction) -> Option<String> {
    if g.points.is_empty() {
        return None;
    }
    let types: Vec<String> = g
        .by_type
        .iter()
        .map(|t| {
            let other = t.other.as_ref().map_or(String::new(), |o| {
                format!(
                    " ({} {})",
                    if g.int_dot_build {
                        "fp16"
                    } else {
                        "int-dot build"
                    },
                    sig3(o.medium_gflops)
                )
            });
            format!(
                "{} {} at {} GFLOP/s{other}",
                escape_line(&t.ggml_type),
                sig3(t.gflop_per_token),
                sig3(t.medium_gflops)
            )
        })
        .collect();
    Some(format!(
        "G610 at 1 GHz (panvk lab model, GEMM only, {} build): {} GFLOP/token ({})",
        if g.int_dot_build { "int-dot" } else { "fp16" },
        sig3(g.gflop_per_token.unwrap_or(0.0)),
        types.join(", ")
    ))
}

fn table(o: &mut String, r: &Report, style: Style) {
    // The GEMM-only columns only when there is a prediction: the table otherwise.
    let predicted = !r.gemm_prediction.points.is_empty();
    let g610 = !r.g610_prediction.points.is_empty();
    let _ = writeln!(o);
    if let Some(l) = g610_line(&r.g610_prediction) {
        let _ = writeln!(o, "{l}");
    }
    if let (true, Some(s)) = (predicted, &r.gemm_prediction.shapes) {
        let _ = writeln!(
            o,
            "GEMM-only prediction: {} on device {}",
            escape_line(s),
            escape_line(r.gemm_prediction.device.as_deref().unwrap_or("?"))
        );
    }
    let _ = writeln!(
        o,
        "| ubatch | GPU check | GPU pp{p} t/s | CPU pp{p} t/s | GPU/CPU | {tokens}-token prefill time (GPU) |{}{} status |",
        if predicted { " GEMM-only pred t/s | GPU/pred |" } else { "" },
        if g610 { " G610 1 GHz pred t/s |" } else { "" },
        p = r.prompt_tokens,
        tokens = thousands(super::report::PROMPT_TOKENS)
    );
    let _ = writeln!(
        o,
        "|---:|---|---:|---:|---:|---:|{}{}---|",
        if predicted { "---:|---:|" } else { "" },
        if g610 { "---:|" } else { "" }
    );
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map(f).unwrap_or_else(|| "-".into());
    for u in &r.ubatches {
        let extra = if predicted {
            format!(
                " {} | {} |",
                opt(u.gemm_predicted_tokens_per_s, &sig3),
                opt(u.measured_over_predicted, &|x| format!("{}x", sig3(x)))
            )
        } else {
            String::new()
        };
        let extra = if g610 {
            format!("{extra} {} |", opt(u.g610_predicted_tokens_per_s, &sig3))
        } else {
            extra
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |{extra} {} |",
            u.ubatch,
            check_cell(u.check.as_ref(), style),
            rate(Some(&u.gpu)),
            rate(u.cpu.as_ref()),
            opt(u.gpu_cpu_ratio, &|x| format!("{}x", sig3(x))),
            opt(u.gpu_prompt_5000_s, &duration),
            status_cell(&u.gpu, u.cpu.as_ref(), style)
        );
    }
    let _ = writeln!(o);
    match r.best_gpu_ubatch {
        Some(b) => {
            let _ = writeln!(
                o,
                "fastest GPU ubatch that ran: {b} (rvl serve {}{} uses it)",
                escape_line(&r.model.file_name),
                if r.rpc.is_empty() {
                    String::new()
                } else {
                    format!(" --rpc {}", escape_line(&r.rpc.join(",")))
                }
            );
        }
        None => {
            let _ = writeln!(o, "{}", style.red("no GPU run ended ok"));
        }
    }
    let wrong = super::report::wrong_ubatches(&r.ubatches);
    if !wrong.is_empty() {
        let list: Vec<String> = wrong.iter().map(|(u, _)| u.to_string()).collect();
        let _ = writeln!(
            o,
            "{}",
            style.red(&format!(
                "wrong results on the GPU at ubatch {}: not timed, and rvl serve never uses {}",
                list.join(", "),
                if wrong.len() == 1 { "it" } else { "them" }
            ))
        );
    }
}

fn failures(o: &mut String, r: &Report, style: Style) {
    let bad: Vec<(u32, &Case)> = r
        .ubatches
        .iter()
        .flat_map(|u| {
            std::iter::once(&u.gpu)
                .chain(u.cpu.as_ref())
                .map(move |c| (u.ubatch, c))
        })
        .filter(|(_, c)| c.status != Status::Ok)
        .collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", style.red("runs that did not end ok:"));
    for (ub, c) in bad {
        let side = c.side.name();
        let _ = writeln!(
            o,
            "  ✗ ubatch {ub} {side}: {} ({}){}",
            c.status.name(),
            escape_line(&c.exit),
            c.detail
                .as_deref()
                .map(|d| format!(": {}", escape_line(d)))
                .unwrap_or_default()
        );
        for l in &c.stderr_tail {
            // Already escaped when kept.
            let _ = writeln!(o, "      {}", style.dim(&format!("│ {l}")));
        }
    }
}

pub fn render_comparison(c: &Comparison, style: Style) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    let mut title = "compared with the saved run".to_string();
    if let Some(b) = &c.before_build {
        let _ = write!(title, " (llama.cpp {}", escape_line(b));
        if let Some(d) = &c.before_driver {
            let _ = write!(title, ", {}", escape_line(d));
        }
        title.push(')');
    }
    let _ = writeln!(o, "{}", style.bold(&title));
    if let Some(w) = &c.warning {
        let _ = writeln!(
            o,
            "{}",
            style.yellow(&format!("warning: {}", escape_line(w)))
        );
    }
    if let Some(g) = &c.gpu_runs {
        let _ = writeln!(o, "GPU runs before: {}", escape_line(g));
    }
    let _ = writeln!(o, "| ubatch | side | before | now | change |");
    let _ = writeln!(o, "|---:|---|---:|---:|---:|");
    let cell = |s: Option<Status>, t: Option<f64>| match (s, t) {
        (_, Some(t)) => format!("{} t/s", sig3(t)),
        (Some(s), None) => s.name().to_string(),
        (None, None) => "-".into(),
    };
    for r in &c.rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            r.ubatch,
            r.side.name(),
            cell(r.before_status, r.before_tokens_per_s),
            cell(Some(r.after_status), r.after_tokens_per_s),
            match (r.change, r.noise) {
                (Some(x), Some(n)) if x.abs() <= n => {
                    format!("{:+.0}% (noise: ±{:.0}%)", x * 100.0, n * 100.0)
                }
                (Some(x), _) => format!("{:+.0}%", x * 100.0),
                (None, _) => "-".into(),
            }
        );
    }
    if c.rows
        .iter()
        .any(|r| r.change.is_some() && r.noise.is_some())
    {
        let _ = writeln!(
            o,
            "a change within twice the two runs' combined standard deviation (over llama-bench's repetitions) is marked noise: run both again to tell a real change from it"
        );
    }
    o
}

pub fn render_notes(notes: &[String], style: Style) -> String {
    let mut o = String::new();
    if !notes.is_empty() {
        let _ = writeln!(o);
        for n in notes {
            let _ = writeln!(o, "{}", style.dim(&format!("note: {}", escape_line(n))));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefill::g610::{G610Point, OtherPath, TypeShare};

    fn q4_k(pipeline: &str, medium: f64, other: (&str, f64)) -> TypeShare {
        TypeShare {
            ggml_type: "q4_K".into(),
            matrices: 1,
            gflop_per_token: 4.72,
            pipeline: pipeline.into(),
            medium_gflops: medium,
            small_gflops: 1.0,
            other: Some(OtherPath {
                pipeline: other.0.into(),
                medium_gflops: other.1,
                small_gflops: 1.0,
            }),
        }
    }

    #[test]
    fn the_g610_line_names_the_build_and_gives_the_other_paths_rate_beside_each_type() {
        let point = vec![G610Point {
            ubatch: 512,
            tokens_per_s: 1.0,
        }];
        let fp16 = G610Prediction {
            gflop_per_token: Some(4.72),
            by_type: vec![q4_k("fp16 pipeline", 672.0, ("int-dot pipeline", 719.0))],
            points: point.clone(),
            ..Default::default()
        };
        assert_eq!(
            g610_line(&fp16).unwrap(),
            "G610 at 1 GHz (panvk lab model, GEMM only, fp16 build): 4.72 GFLOP/token (q4_K 4.72 at 672 GFLOP/s (int-dot build 719))"
        );
        let int_dot = G610Prediction {
            int_dot_build: true,
            gflop_per_token: Some(4.72),
            by_type: vec![q4_k("int-dot pipeline", 719.0, ("fp16 pipeline", 672.0))],
            points: point,
            ..Default::default()
        };
        assert_eq!(
            g610_line(&int_dot).unwrap(),
            "G610 at 1 GHz (panvk lab model, GEMM only, int-dot build): 4.72 GFLOP/token (q4_K 4.72 at 719 GFLOP/s (fp16 672))"
        );
        assert_eq!(g610_line(&G610Prediction::default()), None);
    }
}
