//! `--gguf … --compare FILE`: this run beside a saved one, per ubatch and side (GPU, CPU): the
//! status before and now, t/s before and now, and the change. Pure.

use serde::Serialize;

use super::report::{Case, Report, Side, Status};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub ubatch: u32,
    pub side: Side,
    pub before_status: Option<Status>,
    pub after_status: Status,
    pub before_tokens_per_s: Option<f64>,
    pub after_tokens_per_s: Option<f64>,
    /// after / before - 1, when both ran ok.
    pub change: Option<f64>,
    /// The two runs' noise, relative to before: twice their combined standard deviation over
    /// llama-bench's repetitions (sqrt(sd_before² + sd_now²) · 2 / before). A change within it
    /// says nothing. Null where either run gave no standard deviation.
    pub noise: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    /// The saved run's llama.cpp build and driver, to say what changed.
    pub before_build: Option<String>,
    pub before_driver: Option<String>,
    /// Set when the saved run measured another model file or prompt: the numbers do not
    /// compare.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Set when the GPU runs used other RPC workers than the saved run's (this board alone
    /// against workers is the comparison `--rpc` is for): "this board alone, now with RPC
    /// workers 192.168.1.11:50052".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_runs: Option<String>,
    pub rows: Vec<Row>,
}

/// "this board alone" or "with RPC workers A,B".
fn gpu_runs(rpc: &[String]) -> String {
    if rpc.is_empty() {
        "this board alone".to_string()
    } else {
        format!("with RPC workers {}", rpc.join(","))
    }
}

fn cases(r: &Report) -> impl Iterator<Item = (u32, &Case)> {
    r.ubatches.iter().flat_map(|u| {
        std::iter::once(&u.gpu)
            .chain(u.cpu.as_ref())
            .map(move |c| (u.ubatch, c))
    })
}

/// "b5163 (8cf427ff)", as far as llama-bench said.
pub fn build_id(r: &Report) -> Option<String> {
    let b = &r.llama_bench;
    match (b.build_number, &b.build_commit) {
        (Some(n), Some(c)) => Some(format!("b{n} ({c})")),
        (None, Some(c)) => Some(c.clone()),
        (Some(n), None) => Some(format!("b{n}")),
        (None, None) => None,
    }
}

pub fn driver(r: &Report) -> Option<String> {
    r.vulkan_device
        .as_ref()
        .map(|d| format!("{} {}", d.driver_name, d.driver_info))
}

pub fn compare(before: &Report, now: &Report) -> Comparison {
    let old: Vec<(u32, &Case)> = cases(before).collect();
    let rows = cases(now)
        .map(|(ub, c)| {
            let b = old
                .iter()
                .find(|(u, o)| *u == ub && o.side == c.side)
                .map(|p| p.1);
            let (bt, at) = (b.and_then(Case::ok_rate), c.ok_rate());
            let sd = |c: &Case| c.ok_rate().and(c.stddev_tokens_per_s);
            let noise = match (bt, b.and_then(sd), sd(c)) {
                (Some(x), Some(s0), Some(s1)) if x > 0.0 && s0 >= 0.0 && s1 >= 0.0 => {
                    Some(2.0 * s0.hypot(s1) / x)
                }
                _ => None,
            };
            Row {
                ubatch: ub,
                side: c.side,
                before_status: b.map(|b| b.status),
                after_status: c.status,
                before_tokens_per_s: bt,
                after_tokens_per_s: at,
                change: match (bt, at) {
                    (Some(x), Some(y)) if x > 0.0 => Some(y / x - 1.0),
                    _ => None,
                },
                noise,
            }
        })
        .collect();
    let mut differs = Vec::new();
    if before.model.file_name != now.model.file_name {
        differs.push(format!(
            "model {} (now {})",
            before.model.file_name, now.model.file_name
        ));
    }
    if before.prompt_tokens != now.prompt_tokens {
        differs.push(format!(
            "pp{} (now pp{})",
            before.prompt_tokens, now.prompt_tokens
        ));
    }
    Comparison {
        before_build: build_id(before),
        before_driver: driver(before),
        warning: (!differs.is_empty()).then(|| {
            format!(
                "the saved run measured {}: the numbers do not compare",
                differs.join(", ")
            )
        }),
        gpu_runs: (before.rpc != now.rpc)
            .then(|| format!("{}, now {}", gpu_runs(&before.rpc), gpu_runs(&now.rpc))),
        rows,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::report::{LlamaBench, ModelFile, UbatchRow};
    use super::*;

    pub fn case(side: Side, status: Status, tps: Option<f64>) -> Case {
        Case {
            side,
            status,
            tokens_per_s: tps,
            stddev_tokens_per_s: None,
            samples_tokens_per_s: Vec::new(),
            exit: "exit status 0".into(),
            detail: None,
            stderr_tail: Vec::new(),
            seconds: 1.0,
            argv: Vec::new(),
        }
    }

    fn report(rows: Vec<UbatchRow>) -> Report {
        Report {
            tool: "rvl smoke-bench 0".into(),
            model: ModelFile {
                path: "/m/a.gguf".into(),
                file_name: "a.gguf".into(),
                bytes: 1,
                model_type: None,
                n_params: None,
            },
            prompt_tokens: 512,
            llama_bench: LlamaBench::default(),
            rpc: Vec::new(),
            vulkan_device: None,
            rvl_panvk: None,
            cpu_threads: None,
            case_timeout_s: 300,
            check_tool: Default::default(),
            ubatches: rows,
            best_gpu_ubatch: None,
            gemm_prediction: Default::default(),
            g610_prediction: Default::default(),
            notes: Vec::new(),
            problems: false,
        }
    }

    pub fn row(ub: u32, gpu: Case) -> UbatchRow {
        UbatchRow {
            ubatch: ub,
            check: None,
            gpu,
            cpu: None,
            gpu_cpu_ratio: None,
            gpu_prompt_5000_s: None,
            gemm_predicted_tokens_per_s: None,
            measured_over_predicted: None,
            g610_predicted_tokens_per_s: None,
        }
    }

    #[test]
    fn a_change_within_twice_the_combined_deviation_is_noise() {
        let with_sd = |tps: f64, sd: f64| Case {
            stddev_tokens_per_s: Some(sd),
            ..case(Side::Gpu, Status::Ok, Some(tps))
        };
        let before = report(vec![
            row(64, with_sd(100.0, 3.0)),
            row(128, with_sd(100.0, 3.0)),
        ]);
        let now = report(vec![
            row(64, with_sd(106.0, 4.0)),
            row(128, with_sd(150.0, 4.0)),
        ]);
        let c = compare(&before, &now);
        // 2 * hypot(3, 4) / 100 = 10 %: +6 % is inside it, +50 % is not.
        assert!((c.rows[0].noise.unwrap() - 0.10).abs() < 1e-9);
        let text = super::super::render::render_comparison(&c, crate::output::Style::plain());
        assert!(
            text.contains("| 64 | GPU | 100 t/s | 106 t/s | +6% (noise: ±10%) |"),
            "{text}"
        );
        assert!(
            text.contains("| 128 | GPU | 100 t/s | 150 t/s | +50% |"),
            "{text}"
        );
        assert!(
            text.contains("twice the two runs' combined standard deviation"),
            "{text}"
        );
        // Without a deviation on either side nothing is called noise.
        let bare = compare(
            &report(vec![row(64, case(Side::Gpu, Status::Ok, Some(100.0)))]),
            &now,
        );
        assert_eq!(bare.rows[0].noise, None);
    }

    #[test]
    fn a_ubatch_that_crashed_before_and_runs_now_shows_both_statuses() {
        let before = report(vec![
            row(64, case(Side::Gpu, Status::Ok, Some(20.0))),
            row(128, case(Side::Gpu, Status::OutOfDeviceMemory, None)),
        ]);
        let now = report(vec![
            row(64, case(Side::Gpu, Status::Ok, Some(30.0))),
            row(128, case(Side::Gpu, Status::Ok, Some(40.0))),
            row(256, case(Side::Gpu, Status::Ok, Some(41.0))),
        ]);
        let c = compare(&before, &now);
        assert_eq!(c.warning, None);
        assert!((c.rows[0].change.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(c.rows[1].before_status, Some(Status::OutOfDeviceMemory));
        assert_eq!(
            (c.rows[1].after_status, c.rows[1].change),
            (Status::Ok, None)
        );
        assert_eq!(c.rows[2].before_status, None);
        let mut other = report(vec![]);
        other.model.file_name = "b.gguf".into();
        assert!(compare(&other, &now)
            .warning
            .unwrap()
            .contains("model b.gguf"));
    }
}
