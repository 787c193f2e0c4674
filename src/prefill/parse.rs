//! What a llama-bench run printed, read and judged, no IO: the pp result in its `-o json`
//! output, and the case's status from how the process ended and what it said on stderr.

use serde_json::Value;

use super::report::{Case, Side, Status};
use crate::output::escape_line;

/// Stderr lines kept for a run that did not end ok.
pub const TAIL_LINES: usize = 8;

/// How a llama-bench process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exit(i32),
    Signal(i32),
    /// Killed at the time limit (seconds).
    Timeout(u64),
    /// Could not be started at all (the reason).
    NotStarted(String),
}

/// The fields of llama-bench's JSON rvl keeps, from the object of the pp test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchLine {
    pub avg_ts: f64,
    pub stddev_ts: Option<f64>,
    pub samples_ts: Vec<f64>,
    pub build_commit: Option<String>,
    pub build_number: Option<i64>,
    pub model_type: Option<String>,
    pub model_n_params: Option<u64>,
    pub backends: Option<String>,
    pub gpu_info: Option<String>,
}

/// The pp-`prompt` result (`n_prompt` = prompt, `n_gen` = 0) in llama-bench's `-o json` output:
/// one array of test objects. Anything before the array's `[` or after its `]` is ignored.
pub fn parse_output(stdout: &str, prompt: u32) -> Result<BenchLine, String> {
    let Some(start) = stdout.find('[') else {
        return Err(if stdout.trim().is_empty() {
            "llama-bench printed nothing on stdout".into()
        } else {
            "llama-bench's output has no JSON array".into()
        });
    };
    // llama-bench prints the `[` first and each test as it finishes: a run that died part
    // way leaves an array that never closes.
    let Some(end) = stdout.rfind(']').filter(|&e| e > start) else {
        return Err("llama-bench's JSON is cut short (the array never closes)".into());
    };
    let tests: Vec<Value> = serde_json::from_str(&stdout[start..=end])
        .map_err(|e| format!("llama-bench's JSON does not parse: {e}"))?;
    let t = tests
        .iter()
        .find(|t| {
            t.get("n_prompt").and_then(Value::as_u64) == Some(u64::from(prompt))
                && t.get("n_gen").and_then(Value::as_u64) == Some(0)
        })
        .ok_or_else(|| format!("llama-bench's JSON has no pp{prompt} result"))?;
    let avg_ts = t
        .get("avg_ts")
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("llama-bench's pp{prompt} result has no positive avg_ts"))?;
    let text = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(BenchLine {
        avg_ts,
        stddev_ts: t.get("stddev_ts").and_then(Value::as_f64),
        samples_ts: t
            .get("samples_ts")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default(),
        build_commit: text("build_commit"),
        build_number: t.get("build_number").and_then(Value::as_i64),
        model_type: text("model_type"),
        model_n_params: t.get("model_n_params").and_then(Value::as_u64),
        backends: text("backends"),
        gpu_info: text("gpu_info"),
    })
}

impl Ended {
    /// How it ended, in the words the reports use: "exit status 3", "SIGABRT", "killed after
    /// 300 s", "not started".
    pub fn words(&self) -> String {
        match self {
            Ended::Exit(c) => format!("exit status {c}"),
            Ended::Signal(n) => signal_name(*n),
            Ended::Timeout(s) => format!("killed after {s} s"),
            Ended::NotStarted(_) => "not started".into(),
        }
    }
}

/// The usual name of a signal number (Linux numbering), "signal N" for the rest.
pub fn signal_name(n: i32) -> String {
    let name = match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return format!("signal {n}"),
    };
    name.to_string()
}

/// The last `n` non-blank lines, each escaped for a terminal.
pub fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| escape_line(l.trim_end()))
        .collect()
}

/// ggml's words for "this GPU run has no GPU": the Vulkan backend found no device (CPU
/// devices such as lavapipe are skipped unless GGML_VK_VISIBLE_DEVICES names them), or
/// llama.cpp found none to offload to.
const NO_DEVICE: &[&str] = &[
    "ggml_vulkan: No devices found",
    "no usable GPU found",
    "no Vulkan devices",
];

/// What to try when ggml saw no device.
const NO_DEVICE_HINT: &str =
    "ggml skips CPU Vulkan devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES names them";

fn first_line_with<'a>(text: &'a str, needles: &[&str]) -> Option<&'a str> {
    text.lines()
        .find(|l| needles.iter().any(|n| l.contains(n)))
        .map(str::trim)
}

/// The last line that reads like an error ("error: failed to load model", ggml-rpc's
/// "…: Failed to connect to 192.168.1.11:50052"), for a failed run.
fn error_line(stderr: &str) -> Option<&str> {
    stderr.lines().rev().map(str::trim).find(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("error") || l.contains("failed")
    })
}

/// A finished run, judged. `argv` and `seconds` are recorded as given. `rpc`: a GPU run with
/// RPC workers (`-rpc`), whose devices count as its GPUs: this board finding no Vulkan device
/// of its own is no fault then, as long as llama-bench ran with the RPC backend.
pub fn classify(
    side: Side,
    rpc: bool,
    prompt: u32,
    ended: &Ended,
    stdout: &str,
    stderr: &str,
) -> (Case, Option<BenchLine>) {
    let oom = first_line_with(stderr, &["ErrorOutOfDeviceMemory"]);
    let parsed = parse_output(stdout, prompt);
    let used_rpc = rpc
        && matches!(&parsed, Ok(b) if b.backends.as_deref().is_some_and(|k| k.split(',').any(|k| k.trim() == "RPC")));
    let no_device = side == Side::Gpu && !used_rpc && first_line_with(stderr, NO_DEVICE).is_some();
    // A GPU run whose JSON names no GPU ran on the CPU: ggml found no Vulkan device.
    let no_gpu_in_json = side == Side::Gpu
        && !used_rpc
        && matches!(&parsed, Ok(b) if b.gpu_info.as_deref().is_some_and(|g| g.trim().is_empty()));
    let line = |s: Option<&str>| s.map(escape_line);
    let (status, exit, detail) = match ended {
        Ended::NotStarted(why) => (
            Status::Failed,
            "not started".to_string(),
            Some(escape_line(why)),
        ),
        Ended::Timeout(s) => (
            Status::Timeout,
            format!("killed after {s} s"),
            Some(format!("no result within --case-timeout {s} s")),
        ),
        Ended::Signal(n) if oom.is_some() => {
            (Status::OutOfDeviceMemory, signal_name(*n), line(oom))
        }
        Ended::Exit(c) if *c != 0 && oom.is_some() => (
            Status::OutOfDeviceMemory,
            format!("exit status {c}"),
            line(oom),
        ),
        Ended::Signal(n) => (Status::Crashed, signal_name(*n), line(error_line(stderr))),
        Ended::Exit(c) if *c != 0 && no_device => (
            Status::NoVulkanDevice,
            format!("exit status {c}"),
            line(first_line_with(stderr, NO_DEVICE)).map(|l| format!("{l}; {NO_DEVICE_HINT}")),
        ),
        Ended::Exit(c) if *c != 0 => (
            Status::Failed,
            format!("exit status {c}"),
            line(error_line(stderr)),
        ),
        Ended::Exit(_) => match &parsed {
            Err(e) => (Status::BadOutput, "exit status 0".into(), Some(e.clone())),
            Ok(_) if no_device || no_gpu_in_json => (
                Status::NoVulkanDevice,
                "exit status 0".into(),
                Some(format!(
                    "{}, so the run used the CPU; {NO_DEVICE_HINT}",
                    line(first_line_with(stderr, NO_DEVICE).map(|l| l.trim_end_matches('.')))
                        .unwrap_or_else(|| "llama-bench reports no GPU (gpu_info is empty)".into())
                )),
            ),
            Ok(_) => (Status::Ok, "exit status 0".into(), None),
        },
    };
    let bench = parsed.ok();
    let ok = status == Status::Ok;
    let case = Case {
        side,
        status,
        tokens_per_s: bench.as_ref().filter(|_| ok).map(|b| b.avg_ts),
        stddev_tokens_per_s: bench.as_ref().filter(|_| ok).and_then(|b| b.stddev_ts),
        samples_tokens_per_s: bench
            .as_ref()
            .filter(|_| ok)
            .map(|b| b.samples_ts.clone())
            .unwrap_or_default(),
        exit,
        detail,
        stderr_tail: if ok {
            Vec::new()
        } else {
            tail(stderr, TAIL_LINES)
        },
        seconds: 0.0,
        argv: Vec::new(),
    };
    (case, bench)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(ts: f64, gpu_info: &str) -> String {
        format!(
            r#"[
  {{
    "build_commit": "8cf427ff",
    "build_number": 5163,
    "gpu_info": "{gpu_info}",
    "backends": "Vulkan",
    "model_type": "llama ?B F16",
    "model_n_params": 4000000,
    "n_ubatch": 64,
    "n_gpu_layers": 99,
    "n_prompt": 512,
    "n_gen": 0,
    "avg_ts": {ts},
    "stddev_ts": 1.5,
    "samples_ts": [ {ts}, {ts} ]
  }}
]
"#
        )
    }

    #[test]
    fn the_pp_result_and_the_build_id_are_read_from_llama_benchs_json() {
        let b = parse_output(&json(123.5, "Mali-G610 MC4"), 512).unwrap();
        assert_eq!(b.avg_ts, 123.5);
        assert_eq!(b.samples_ts, vec![123.5, 123.5]);
        assert_eq!(b.build_commit.as_deref(), Some("8cf427ff"));
        assert_eq!(b.build_number, Some(5163));
        assert_eq!(b.model_n_params, Some(4000000));
        assert!(parse_output(&json(123.5, "x"), 256)
            .unwrap_err()
            .contains("no pp256 result"));
    }

    #[test]
    fn empty_truncated_and_non_json_output_are_told_apart() {
        assert!(parse_output("", 512)
            .unwrap_err()
            .contains("printed nothing"));
        assert!(parse_output("| model | t/s |", 512)
            .unwrap_err()
            .contains("no JSON array"));
        // A run killed mid-way leaves llama-bench's opening bracket and half an object.
        assert!(parse_output("[\n  {\n \"n_prompt\": 5]", 512)
            .unwrap_err()
            .contains("does not parse"));
        assert!(parse_output("[\n  {\n", 512)
            .unwrap_err()
            .contains("cut short"));
        assert!(parse_output(&json(0.0, "x"), 512)
            .unwrap_err()
            .contains("no positive avg_ts"));
    }

    #[test]
    fn an_abort_with_the_out_of_memory_line_is_out_of_device_memory_with_the_signal() {
        let err = "ggml_vulkan: Compiling shaders\nterminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\n  what():  vk::CommandBuffer::end: ErrorOutOfDeviceMemory\n";
        let (c, _) = classify(Side::Gpu, false, 512, &Ended::Signal(6), "[\n", err);
        assert_eq!(c.status, Status::OutOfDeviceMemory);
        assert_eq!(c.exit, "SIGABRT");
        assert_eq!(
            c.detail.as_deref(),
            Some("what():  vk::CommandBuffer::end: ErrorOutOfDeviceMemory")
        );
        assert_eq!(c.stderr_tail.len(), 3);
        assert_eq!(c.tokens_per_s, None);
    }

    #[test]
    fn signals_exit_codes_timeouts_and_good_runs_get_their_own_status() {
        let (c, _) = classify(Side::Gpu, false, 512, &Ended::Signal(11), "", "boom\n");
        assert_eq!((c.status, c.exit.as_str()), (Status::Crashed, "SIGSEGV"));
        let (c, _) = classify(
            Side::Cpu,
            false,
            512,
            &Ended::Exit(1),
            "",
            "error: failed to load model 'x'\nmain: error\n",
        );
        assert_eq!(c.status, Status::Failed);
        assert_eq!(c.detail.as_deref(), Some("main: error"));
        let (c, _) = classify(Side::Cpu, false, 512, &Ended::Timeout(2), "[", "");
        assert_eq!(c.status, Status::Timeout);
        assert_eq!(c.exit, "killed after 2 s");
        let (c, b) = classify(
            Side::Gpu,
            false,
            512,
            &Ended::Exit(0),
            &json(50.0, "GPU"),
            "",
        );
        assert_eq!((c.status, c.tokens_per_s), (Status::Ok, Some(50.0)));
        assert!(c.stderr_tail.is_empty());
        assert_eq!(b.unwrap().gpu_info.as_deref(), Some("GPU"));
        let (c, _) = classify(Side::Gpu, false, 512, &Ended::Exit(0), "[oops]", "");
        assert_eq!(c.status, Status::BadOutput);
    }

    #[test]
    fn a_gpu_run_that_found_no_vulkan_device_is_not_counted_as_a_gpu_figure() {
        let (c, _) = classify(
            Side::Gpu,
            false,
            512,
            &Ended::Exit(0),
            &json(20.0, "GPU"),
            "ggml_vulkan: No devices found.\n",
        );
        assert_eq!((c.status, c.tokens_per_s), (Status::NoVulkanDevice, None));
        let d = c.detail.unwrap();
        assert!(
            d.starts_with("ggml_vulkan: No devices found, so the run used the CPU")
                && d.contains("GGML_VK_VISIBLE_DEVICES"),
            "{d}"
        );
        let (c, _) = classify(Side::Gpu, false, 512, &Ended::Exit(0), &json(20.0, ""), "");
        assert_eq!(c.status, Status::NoVulkanDevice);
        // The CPU run has no GPU by design.
        let (c, _) = classify(Side::Cpu, false, 512, &Ended::Exit(0), &json(20.0, ""), "");
        assert_eq!(c.status, Status::Ok);
    }

    #[test]
    fn an_rpc_run_needs_no_vulkan_device_on_this_board_but_must_have_used_rpc() {
        let rpc_json = json(128.0, "127.0.0.1:50052, 127.0.0.1:50053")
            .replace("\"backends\": \"Vulkan\"", "\"backends\": \"Vulkan,RPC\"");
        let no_vk = "ggml_vulkan: No devices found.\n";
        let (c, _) = classify(Side::Gpu, true, 512, &Ended::Exit(0), &rpc_json, no_vk);
        assert_eq!((c.status, c.tokens_per_s), (Status::Ok, Some(128.0)));
        // The same output without -rpc is a run that found no GPU.
        let (c, _) = classify(Side::Gpu, false, 512, &Ended::Exit(0), &rpc_json, no_vk);
        assert_eq!(c.status, Status::NoVulkanDevice);
        // -rpc given, but llama-bench names no RPC backend: judged as any GPU run.
        let (c, _) = classify(Side::Gpu, true, 512, &Ended::Exit(0), &json(9.0, ""), no_vk);
        assert_eq!(c.status, Status::NoVulkanDevice);
        // A worker that went away: ggml-rpc aborts, and the line names the worker.
        let err = "ggml_vulkan: No devices found.\n/src/ggml-rpc.cpp:547: Failed to connect to 127.0.0.1:50119\n[New LWP 8832]\n";
        let (c, _) = classify(Side::Gpu, true, 512, &Ended::Signal(6), "", err);
        assert_eq!((c.status, c.exit.as_str()), (Status::Crashed, "SIGABRT"));
        assert_eq!(
            c.detail.as_deref(),
            Some("/src/ggml-rpc.cpp:547: Failed to connect to 127.0.0.1:50119")
        );
    }

    #[test]
    fn stderr_tails_keep_the_last_lines_escaped() {
        let t = tail("a\n\nb\x1b[2J\nc\n", 2);
        assert_eq!(t, vec!["b\\u{1b}[2J".to_string(), "c".to_string()]);
    }
}
