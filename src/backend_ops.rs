//! llama.cpp's `test-backend-ops`, as rvl's llama.cpp builds it (patch 0006 of
//! `patches/llama.cpp`: `--mul-mat TYPE:M:N:K,...`, `--perf-ms MS`, `-t N`), as data: the command
//! lines smoke-bench runs and the parse of what the tool prints. Pure; the process is run by
//! [`crate::prefill::run::run`] (its own process group, a time limit).
//!
//! Two uses: `perf` at smoke-bench's GEMM shapes on the CPU backend and on the Vulkan device
//! (llama.cpp's columns beside rvl's kernels), and `test` on the Vulkan device at a model's
//! shapes (`smoke-bench --gguf`'s correctness check: each product against the CPU backend, with
//! test-backend-ops' own bound, a normalised mean squared error of at most 5e-4).

use serde::{Deserialize, Serialize};

/// The tool's file name, beside llama-bench in a build's or rvl's prefix's `bin/`.
pub const TOOL: &str = "test-backend-ops";

/// The option rvl's patch adds; a build without the patch answers it with its usage text.
pub const MUL_MAT_OPTION: &str = "--mul-mat";

/// One matrix product as test-backend-ops takes it: `m` x `k` weights of `ggml_type` (a ggml type
/// name: f32, f16, q4_0, q4_K, ...) times `k` x `n` f32 activations (`n` = tokens).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MulMat {
    pub ggml_type: String,
    /// Output features (rows of the weights).
    pub m: u64,
    /// Tokens.
    pub n: u64,
    /// Input features.
    pub k: u64,
}

impl MulMat {
    /// `q4_0:2560:16:2048`, one item of `--mul-mat`.
    pub fn spec(&self) -> String {
        format!("{}:{}:{}:{}", self.ggml_type, self.m, self.n, self.k)
    }

    /// The parameters test-backend-ops prints for the case (`type_a=q4_0,m=2560,n=16,k=2048`),
    /// without the `weights=` it adds in perf mode.
    pub fn params(&self) -> String {
        format!(
            "type_a={},m={},n={},k={}",
            self.ggml_type, self.m, self.n, self.k
        )
    }

    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// Elements per block of a ggml type (K must be a multiple), for the types rvl asks for.
pub fn block_size(ggml_type: &str) -> Option<u64> {
    Some(match ggml_type {
        "f32" | "f16" | "bf16" => 1,
        "q4_0" | "q4_1" | "q5_0" | "q5_1" | "q8_0" | "iq4_nl" | "mxfp4" => 32,
        "q2_K" | "q3_K" | "q4_K" | "q5_K" | "q6_K" | "iq4_xs" | "iq2_xxs" | "iq2_xs" | "iq2_s"
        | "iq3_xxs" | "iq3_s" | "iq1_s" | "iq1_m" | "tq1_0" | "tq2_0" => 256,
        _ => return None,
    })
}

/// `test-backend-ops test --mul-mat ... -b BACKEND`: each product on `backend` against the CPU.
pub fn test_argv(tool: &str, backend: &str, cases: &[MulMat]) -> Vec<String> {
    let mut a = vec![tool.to_string(), "test".into()];
    a.extend(mul_mat_args(cases));
    a.extend(["-b".into(), backend.to_string()]);
    a
}

/// `test-backend-ops perf --mul-mat ... -b BACKEND --perf-ms MS [-t THREADS]`.
pub fn perf_argv(
    tool: &str,
    backend: &str,
    cases: &[MulMat],
    perf_ms: u32,
    threads: Option<usize>,
) -> Vec<String> {
    let mut a = vec![tool.to_string(), "perf".into()];
    a.extend(mul_mat_args(cases));
    a.extend([
        "-b".into(),
        backend.to_string(),
        "--perf-ms".into(),
        perf_ms.to_string(),
    ]);
    if let Some(t) = threads {
        a.extend(["-t".into(), t.to_string()]);
    }
    a
}

fn mul_mat_args(cases: &[MulMat]) -> [String; 2] {
    [
        MUL_MAT_OPTION.to_string(),
        cases.iter().map(MulMat::spec).collect::<Vec<_>>().join(","),
    ]
}

/// A build without rvl's patch prints its usage for `--mul-mat` and exits 1 before any case.
pub fn lacks_patch(stdout: &str) -> bool {
    stdout.contains("Usage:") && !stdout.contains("MUL_MAT(")
}

/// What one case printed.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// perf: microseconds per product; the buffer type the weights were in (`CPU_REPACK`).
    Timed {
        us_per_run: f64,
        weights: Option<String>,
    },
    /// test: within the bound.
    Passed,
    /// test: outside it, or NaN/inf where the CPU has none; what the tool said first
    /// (`[MUL_MAT] ERR = 0.53 > 0.0005`).
    Failed(String),
    /// The backend does not run this case (a type it lacks).
    NotSupported,
}

/// One `MUL_MAT(type_a=...,m=...,n=...,k=...)` line of the tool's console output.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseLine {
    pub case: MulMat,
    pub outcome: Outcome,
}

/// What a run printed: the device description of the backend under test and every case line,
/// in order. Lines it cannot read are skipped (a case that never printed is "not measured").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Printed {
    /// `Backend 1/2: Vulkan0` was reached (the backend exists and ran).
    pub backend_ran: bool,
    /// Its `Device description:` line.
    pub device: Option<String>,
    pub cases: Vec<CaseLine>,
}

/// Drop ANSI colour sequences (`ESC [ ... m`), which the tool prints around OK/FAIL.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `type_a=q4_0,m=2560,n=16,k=2048,weights=CPU_REPACK` -> the case and the weights' buffer type.
fn parse_params(p: &str) -> Option<(MulMat, Option<String>)> {
    let mut case = MulMat {
        ggml_type: String::new(),
        m: 0,
        n: 0,
        k: 0,
    };
    let mut weights = None;
    for kv in p.split(',') {
        let (k, v) = kv.split_once('=')?;
        match k {
            "type_a" => case.ggml_type = v.to_string(),
            "m" => case.m = v.parse().ok()?,
            "n" => case.n = v.parse().ok()?,
            "k" => case.k = v.parse().ok()?,
            "weights" => weights = Some(v.to_string()),
            _ => {}
        }
    }
    (!case.ggml_type.is_empty() && case.m > 0 && case.n > 0 && case.k > 0)
        .then_some((case, weights))
}

/// `...  4 runs - 59997.50 us/run - ...` -> 59997.5.
fn us_per_run(rest: &str) -> Option<f64> {
    let before = rest.split(" us/run").next()?;
    let v: f64 = before.rsplit(' ').next()?.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// Read the console output of `test-backend-ops test|perf --mul-mat ...`.
pub fn parse(stdout: &str) -> Printed {
    const CASE: &str = "MUL_MAT(type_a=";
    let mut out = Printed::default();
    let mut in_backend = false;
    for raw in stdout.lines() {
        let line = strip_ansi(raw);
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Backend ") {
            // "Backend 1/2: Vulkan0" starts a backend; "Backend Vulkan0: OK" ends one.
            in_backend = rest.split_once(": ").is_some_and(|(n, _)| n.contains('/'));
            continue;
        }
        if in_backend && t.starts_with("Skipping") {
            in_backend = false;
            continue;
        }
        if in_backend {
            out.backend_ran = true;
            if let Some(d) = t.strip_prefix("Device description: ") {
                out.device.get_or_insert_with(|| d.to_string());
            }
        }
        let Some(at) = line.find(CASE) else { continue };
        let said = line[..at].trim();
        let after = &line[at + "MUL_MAT(".len()..];
        let Some(close) = after.find("):") else {
            continue;
        };
        let Some((case, weights)) = parse_params(&after[..close]) else {
            continue;
        };
        let rest = after[close + 2..].trim();
        let outcome = if rest.starts_with("not supported") {
            Outcome::NotSupported
        } else if let Some(us) = us_per_run(rest) {
            Outcome::Timed {
                us_per_run: us,
                weights,
            }
        } else if rest.starts_with("OK") {
            Outcome::Passed
        } else if rest.starts_with("FAIL") {
            Outcome::Failed(if said.is_empty() {
                "no reason printed".into()
            } else {
                crate::output::escape_line(said)
            })
        } else {
            continue;
        };
        out.cases.push(CaseLine { case, outcome });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mm(t: &str, m: u64, n: u64, k: u64) -> MulMat {
        MulMat {
            ggml_type: t.into(),
            m,
            n,
            k,
        }
    }

    /// Lines as the patched tool prints them (tests/test-backend-ops.cpp's console printer).
    const PERF: &str = "Testing 2 devices\n\nBackend 1/2: Vulkan0\n  Skipping\nBackend 2/2: CPU\n  Device description: Intel(R) Xeon(R) Processor\n  Device memory: 24105 MB (24105 MB free)\n\n  MUL_MAT(type_a=f32,m=2560,n=16,k=2048,weights=CPU):                      4 runs - 59997.50 us/run - 167.77 MFLOP/run - \x1b[1;34m  2.80 GFLOPS\x1b[0m\nrepack: repack tensor a with q4_0_8x8\n  MUL_MAT(type_a=q4_0,m=2560,n=16,k=2048,weights=CPU_REPACK):      8 runs - 34453.75 us/run - 167.77 MFLOP/run - \x1b[1;34m  4.87 GFLOPS\x1b[0m\n  MUL_MAT(type_a=iq1_m,m=256,n=16,k=256,weights=CPU): not supported\n  Backend CPU: \x1b[1;32mOK\x1b[0m\n2/2 backends passed\n\x1b[1;32mOK\x1b[0m\n";

    #[test]
    fn perf_lines_give_the_time_per_product_and_where_the_weights_were() {
        let p = parse(PERF);
        assert!(p.backend_ran);
        assert_eq!(p.device.as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(p.cases.len(), 3);
        assert_eq!(p.cases[0].case, mm("f32", 2560, 16, 2048));
        assert_eq!(
            p.cases[1].outcome,
            Outcome::Timed {
                us_per_run: 34453.75,
                weights: Some("CPU_REPACK".into())
            }
        );
        assert_eq!(p.cases[2].outcome, Outcome::NotSupported);
    }

    #[test]
    fn test_lines_give_ok_and_the_first_words_of_a_failure() {
        let out = "Backend 1/2: Vulkan0\n  Device description: Mali-G610 MC4\n\n  MUL_MAT(type_a=f16,m=128,n=64,k=128): \x1b[1;32mOK\x1b[0m\n[MUL_MAT] ERR = 0.531000000 > 0.000500000   MUL_MAT(type_a=q4_0,m=2048,n=128,k=2048): \x1b[1;31mFAIL\x1b[0m\n[MUL_MAT] NaN at index 3 (Vulkan0=nan CPU=0.100000)   MUL_MAT(type_a=q4_K,m=256,n=128,k=2048): \x1b[1;31mFAIL\x1b[0m\n  MUL_MAT(type_a=bf16,m=1,n=1,k=32): not supported [Vulkan0] \n  2/4 tests passed\n";
        let p = parse(out);
        assert_eq!(p.device.as_deref(), Some("Mali-G610 MC4"));
        let outcomes: Vec<&Outcome> = p.cases.iter().map(|c| &c.outcome).collect();
        assert_eq!(
            outcomes,
            vec![
                &Outcome::Passed,
                &Outcome::Failed("[MUL_MAT] ERR = 0.531000000 > 0.000500000".into()),
                &Outcome::Failed("[MUL_MAT] NaN at index 3 (Vulkan0=nan CPU=0.100000)".into()),
                &Outcome::NotSupported,
            ]
        );
        assert_eq!(p.cases[1].case, mm("q4_0", 2048, 128, 2048));
    }

    #[test]
    fn a_skipped_backend_and_a_build_without_the_patch_are_told_apart() {
        let skipped = "Backend 1/1: Vulkan0\n  Skipping\n1/1 backends passed\n";
        assert!(!parse(skipped).backend_ran);
        let none = "Testing 1 devices\n\nBackend 1/1: CPU\n  Skipping CPU backend\n";
        assert!(!parse(none).backend_ran);
        let usage = "Usage: test-backend-ops [mode] [options]\n\nValid modes:\n";
        assert!(lacks_patch(usage));
        assert!(!lacks_patch(PERF));
    }

    #[test]
    fn command_lines_carry_every_case_and_the_options() {
        let cases = [mm("q4_0", 2560, 16, 2048), mm("f16", 2048, 16, 2048)];
        assert_eq!(
            perf_argv("tbo", "CPU", &cases, 250, Some(4)).join(" "),
            "tbo perf --mul-mat q4_0:2560:16:2048,f16:2048:16:2048 -b CPU --perf-ms 250 -t 4"
        );
        assert_eq!(
            test_argv("tbo", "Vulkan0", &cases[..1]).join(" "),
            "tbo test --mul-mat q4_0:2560:16:2048 -b Vulkan0"
        );
        assert_eq!(cases[0].params(), "type_a=q4_0,m=2560,n=16,k=2048");
        assert_eq!(block_size("q4_K"), Some(256));
        assert_eq!(block_size("nope"), None);
    }
}
