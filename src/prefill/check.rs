//! The correctness check `smoke-bench --gguf` runs before each GPU run: llama.cpp's own
//! `test-backend-ops test` multiplies random matrices of the model's weight types and shapes at
//! that ubatch on the Vulkan device and on the CPU backend and compares them, with the tool's
//! own bound (normalised mean squared error <= 5e-4, what llama.cpp's CI holds every backend
//! to). The matrix products are where the Mali reports of wrong results sit (mis-tiling at
//! subgroup 16, all-NaN prefill with the small tiles, MUL_MAT failures on a G720). Pure: which
//! products, and what a finished run means; [`super::run`] runs it.

use super::gguf::Weight;
use super::parse::{tail, Ended, TAIL_LINES};
use super::report::{Case, Check, CheckStatus, Side, Status};
use crate::backend_ops::{self, MulMat, Outcome};
use crate::output::escape_line;

/// The device ggml's Vulkan backend calls its first (with GGML_VK_VISIBLE_DEVICES naming one,
/// the one named): the device llama-bench's GPU runs use.
pub const BACKEND: &str = "Vulkan0";

/// The products at `ubatch`: each weight matrix times `ubatch` tokens (the LM head times one:
/// a prompt run computes only the last token's logits). Types whose block test-backend-ops
/// would not take at that K are left out, and named in the second value.
pub fn cases(weights: &[Weight], ubatch: u32) -> (Vec<MulMat>, Vec<String>) {
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    for w in weights {
        match backend_ops::block_size(&w.ggml_type) {
            Some(b) if w.k % b == 0 => out.push(MulMat {
                ggml_type: w.ggml_type.clone(),
                m: w.m,
                n: if w.lm_head { 1 } else { u64::from(ubatch) },
                k: w.k,
            }),
            _ => left_out.push(describe(w)),
        }
    }
    (out, left_out)
}

/// `q4_K 2048x11008` (K x M, as GGUF and rvl's tables write weight shapes); `(LM head)`.
pub fn describe(w: &Weight) -> String {
    format!(
        "{} {}x{}{}",
        w.ggml_type,
        w.k,
        w.m,
        if w.lm_head { " (LM head)" } else { "" }
    )
}

/// A finished check, judged.
pub fn judge(ended: &Ended, stdout: &str, stderr: &str, asked: usize) -> Check {
    let printed = backend_ops::parse(stdout);
    let (mut passed, mut not_supported, mut first_failure) = (0, 0, None);
    for c in &printed.cases {
        match &c.outcome {
            Outcome::Passed => passed += 1,
            Outcome::NotSupported => not_supported += 1,
            Outcome::Failed(said) => {
                first_failure
                    .get_or_insert_with(|| format!("MUL_MAT({}): {said}", c.case.params()));
            }
            Outcome::Timed { .. } => {}
        }
    }
    let exit = ended.words();
    let finished = passed + not_supported == asked;
    let (status, detail) = if first_failure.is_some() {
        // The tool exits 1 when a case fails: that is the answer, not an error.
        (CheckStatus::WrongResults, None)
    } else {
        match ended {
            Ended::NotStarted(why) => (CheckStatus::Error, Some(escape_line(why))),
            Ended::Timeout(s) => (
                CheckStatus::Error,
                Some(format!("no answer within --case-timeout {s} s")),
            ),
            Ended::Exit(1) if backend_ops::lacks_patch(stdout) => (
                CheckStatus::Error,
                Some(format!(
                    "this test-backend-ops lacks rvl's {} (patches/llama.cpp 0006); rebuild rvl's llama.cpp: sudo rvl setup --only llama-cpp",
                    backend_ops::MUL_MAT_OPTION
                )),
            ),
            Ended::Exit(0) if !printed.backend_ran => (
                CheckStatus::Error,
                Some(format!(
                    "no {BACKEND}: ggml found no Vulkan device (it skips CPU devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES names them)"
                )),
            ),
            Ended::Exit(0) if finished => (CheckStatus::Passed, None),
            Ended::Exit(0) => (
                CheckStatus::Error,
                Some(format!(
                    "{} of {asked} products reported",
                    passed + not_supported
                )),
            ),
            _ => (
                CheckStatus::Error,
                stderr
                    .lines()
                    .rev()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(escape_line),
            ),
        }
    };
    Check {
        status,
        cases: asked,
        passed,
        not_supported,
        first_failure,
        exit,
        stderr_tail: if status == CheckStatus::Passed {
            Vec::new()
        } else {
            tail(stderr, TAIL_LINES)
        },
        detail,
        seconds: 0.0,
        argv: Vec::new(),
    }
}

/// The tool could not check anything (it did not start, or lacks rvl's patch): no point in
/// running it at the next ubatch.
pub fn unusable(check: &Check) -> bool {
    check.status == CheckStatus::Error
        && (check.exit == "not started"
            || check
                .detail
                .as_deref()
                .is_some_and(|d| d.contains("lacks rvl's")))
}

/// The GPU case of a ubatch whose check did not pass: it is not timed. Wrong results are
/// their own status; a check that crashed, ran out of device memory, timed out or found no
/// device gives the GPU run that status (llama-bench would meet the same). None: time it.
pub fn untimed_gpu_case(check: &Check, stderr: &str) -> Option<Case> {
    let status = match check.status {
        CheckStatus::Passed => return None,
        CheckStatus::WrongResults => Status::WrongResults,
        CheckStatus::Error if stderr.contains("ErrorOutOfDeviceMemory") => {
            Status::OutOfDeviceMemory
        }
        CheckStatus::Error if check.exit.starts_with("SIG") || check.exit.starts_with("signal") => {
            Status::Crashed
        }
        CheckStatus::Error if check.exit.starts_with("killed after") => Status::Timeout,
        CheckStatus::Error
            if check
                .detail
                .as_deref()
                .is_some_and(|d| d.starts_with("no Vulkan0")) =>
        {
            Status::NoVulkanDevice
        }
        // A tool that cannot check (not started, no patch): the run is timed, unchecked.
        CheckStatus::Error if unusable(check) => return None,
        CheckStatus::Error => Status::Failed,
    };
    let detail = match status {
        Status::WrongResults => check.first_failure.clone(),
        _ => Some(format!(
            "in the correctness check (test-backend-ops){}",
            check
                .detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )),
    };
    Some(Case {
        side: Side::Gpu,
        status,
        tokens_per_s: None,
        stddev_tokens_per_s: None,
        samples_tokens_per_s: Vec::new(),
        exit: match status {
            Status::WrongResults => "not timed".into(),
            _ => format!("check {}", check.exit),
        },
        detail,
        stderr_tail: check.stderr_tail.clone(),
        seconds: 0.0,
        argv: check.argv.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: &str, m: u64, k: u64, lm_head: bool) -> Weight {
        Weight {
            ggml_type: t.into(),
            m,
            k,
            lm_head,
        }
    }

    const OK2: &str = "Backend 1/2: Vulkan0\n  Device description: llvmpipe\n\n  MUL_MAT(type_a=f16,m=128,n=64,k=128): \x1b[1;32mOK\x1b[0m\n  MUL_MAT(type_a=f16,m=32000,n=1,k=128): \x1b[1;32mOK\x1b[0m\n  2/2 tests passed\n";

    #[test]
    fn each_weight_runs_at_the_ubatch_the_lm_head_at_one_token_odd_blocks_are_left_out() {
        let weights = [
            w("q4_K", 2048, 2048, false),
            w("q4_K", 2048, 1000, false),
            w("q6_K", 151936, 2048, true),
            w("weird", 8, 8, false),
        ];
        let (c, out) = cases(&weights, 128);
        let specs: Vec<String> = c.iter().map(MulMat::spec).collect();
        assert_eq!(specs, vec!["q4_K:2048:128:2048", "q6_K:151936:1:2048"]);
        assert_eq!(out, vec!["q4_K 1000x2048", "weird 8x8"]);
    }

    #[test]
    fn all_products_within_the_bound_pass_and_the_run_is_timed() {
        let c = judge(&Ended::Exit(0), OK2, "", 2);
        assert_eq!((c.status, c.passed, c.cases), (CheckStatus::Passed, 2, 2));
        assert!(untimed_gpu_case(&c, "").is_none());
        // Fewer lines than products asked for: the check did not finish.
        assert_eq!(
            judge(&Ended::Exit(0), OK2, "", 3).status,
            CheckStatus::Error
        );
    }

    #[test]
    fn a_product_outside_the_bound_is_wrong_results_with_the_first_failure_and_no_timing() {
        let out = format!(
            "{OK2}[MUL_MAT] ERR = 0.531 > 0.0005   MUL_MAT(type_a=q4_0,m=2048,n=128,k=2048): \x1b[1;31mFAIL\x1b[0m\n[MUL_MAT] NaN at index 0   MUL_MAT(type_a=q4_0,m=256,n=128,k=2048): FAIL\n"
        );
        let c = judge(&Ended::Exit(1), &out, "", 4);
        assert_eq!(c.status, CheckStatus::WrongResults);
        assert_eq!(
            c.first_failure.as_deref(),
            Some("MUL_MAT(type_a=q4_0,m=2048,n=128,k=2048): [MUL_MAT] ERR = 0.531 > 0.0005")
        );
        let g = untimed_gpu_case(&c, "").unwrap();
        assert_eq!(g.status, Status::WrongResults);
        assert_eq!(g.detail, c.first_failure);
        assert_eq!(g.tokens_per_s, None);
    }

    #[test]
    fn a_check_that_crashes_or_finds_no_device_gives_the_gpu_run_that_status() {
        let oom = "what():  vk::Queue::submit: ErrorOutOfDeviceMemory\n";
        let c = judge(&Ended::Signal(6), "Backend 1/2: Vulkan0\n", oom, 2);
        assert_eq!(c.status, CheckStatus::Error);
        let g = untimed_gpu_case(&c, oom).unwrap();
        assert_eq!(g.status, Status::OutOfDeviceMemory);
        assert!(g.detail.unwrap().starts_with("in the correctness check"));
        let none = judge(
            &Ended::Exit(0),
            "Backend 1/1: Vulkan0\n  Skipping\n1/1 backends passed\n",
            "",
            2,
        );
        assert_eq!(
            untimed_gpu_case(&none, "").unwrap().status,
            Status::NoVulkanDevice
        );
        let t = judge(&Ended::Timeout(5), "", "", 2);
        assert_eq!(untimed_gpu_case(&t, "").unwrap().status, Status::Timeout);
    }

    #[test]
    fn a_tool_without_rvls_patch_says_so_and_the_run_is_timed_unchecked() {
        let c = judge(
            &Ended::Exit(1),
            "Usage: test-backend-ops [mode] [options]\n",
            "",
            2,
        );
        assert_eq!(c.status, CheckStatus::Error);
        assert!(c
            .detail
            .as_deref()
            .unwrap()
            .contains("lacks rvl's --mul-mat"));
        assert!(unusable(&c));
        assert!(untimed_gpu_case(&c, "").is_none());
        // Any other exit 1 without a failing product is an error that stops the run.
        let other = judge(
            &Ended::Exit(1),
            "Backend 1/2: Vulkan0\n",
            "ggml_vulkan: device lost\n",
            2,
        );
        assert!(!unusable(&other));
        assert_eq!(untimed_gpu_case(&other, "").unwrap().status, Status::Failed);
    }
}
