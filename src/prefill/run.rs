//! One llama-bench process per case, the only IO of the sweep: started in its own process
//! group, its output drained on threads (a chatty child never blocks on a full pipe), killed
//! with its whole group at the time limit (llama-bench's own children, a wrapper script's
//! `sleep`, cannot keep the pipes open and hang rvl).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::parse::Ended;

/// llama-bench's JSON for a sweep is a few KiB; more than this is not its output.
const STDOUT_CAP: usize = 8 << 20;
/// Only the end of stderr is kept (the lines before a crash).
const STDERR_KEEP: usize = 256 << 10;
/// How long the pipes may stay open after llama-bench exits (a child it left behind).
const LINGER: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct RawRun {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
    pub seconds: f64,
}

/// Read `r` to its end; keep its first `cap` bytes, or with `keep_end` its last `cap`.
fn drain(
    mut r: impl Read + Send + 'static,
    cap: usize,
    keep_end: bool,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buf = [0u8; 16 << 10];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if keep_end {
                        kept.extend_from_slice(&buf[..n]);
                        if kept.len() > 2 * cap {
                            kept.drain(..kept.len() - cap);
                        }
                    } else if kept.len() < cap {
                        let room = cap - kept.len();
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
            }
        }
        if keep_end && kept.len() > cap {
            kept.drain(..kept.len() - cap);
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}

fn kill_group(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_child(child);
    // ESRCH (the group is gone already) is the usual answer after a clean exit.
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

/// Run `argv` with `env` added to rvl's environment, stdin closed, for at most `limit`.
pub fn run(argv: &[String], env: &BTreeMap<String, String>, limit: Duration) -> RawRun {
    let start = Instant::now();
    let mut child = match Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so the time limit can take down everything it started.
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return RawRun {
                ended: Ended::NotStarted(format!("cannot start {}: {e}", argv[0])),
                stdout: String::new(),
                stderr: String::new(),
                seconds: 0.0,
            }
        }
    };
    let so = child.stdout.take().map(|r| drain(r, STDOUT_CAP, false));
    let se = child.stderr.take().map(|r| drain(r, STDERR_KEEP, true));
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                kill_group(&child);
                let _ = child.wait();
                break None;
            }
        }
    };
    // Something it started may still hold the pipes open: give it a moment, then take the
    // group down. (Only then: while a member holds the pipe, the group id is still ours.)
    let waited = Instant::now();
    while [&so, &se]
        .iter()
        .any(|h| h.as_ref().is_some_and(|h| !h.is_finished()))
    {
        if waited.elapsed() > LINGER {
            kill_group(&child);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let seconds = start.elapsed().as_secs_f64();
    let join = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    let (stdout, stderr) = (join(so), join(se));
    let ended = match status {
        None => Ended::Timeout(limit.as_secs()),
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => Ended::Exit(c),
            (None, Some(n)) => Ended::Signal(n),
            (None, None) => Ended::Exit(-1),
        },
    };
    RawRun {
        ended,
        stdout,
        stderr,
        seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(body: &str) -> (tempfile::TempDir, Vec<String>) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("llama-bench");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let argv = vec![p.to_string_lossy().into_owned()];
        (d, argv)
    }

    #[test]
    fn exit_codes_signals_and_both_streams_come_back() {
        let (_d, argv) = script("echo out; echo err >&2; exit 3");
        let r = run(&argv, &BTreeMap::new(), Duration::from_secs(20));
        assert_eq!(r.ended, Ended::Exit(3));
        assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("out\n", "err\n"));
        let (_d, argv) = script("kill -ABRT $$");
        let r = run(&argv, &BTreeMap::new(), Duration::from_secs(20));
        assert_eq!(r.ended, Ended::Signal(6));
    }

    #[test]
    fn the_added_environment_reaches_the_child() {
        let (_d, argv) = script("echo \"$GGML_VK_VISIBLE_DEVICES\"");
        let env = BTreeMap::from([("GGML_VK_VISIBLE_DEVICES".to_string(), "1".to_string())]);
        assert_eq!(run(&argv, &env, Duration::from_secs(20)).stdout, "1\n");
    }

    #[test]
    fn a_hang_is_killed_with_its_children_at_the_limit() {
        // The script's `sleep` holds the pipes: only killing the group lets the run end.
        let (_d, argv) = script("echo started >&2\nsleep 60\necho never");
        let start = Instant::now();
        let r = run(&argv, &BTreeMap::new(), Duration::from_millis(300));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(r.ended, Ended::Timeout(0));
        assert_eq!(r.stderr, "started\n");
    }

    #[test]
    fn a_child_left_behind_holding_the_pipes_is_taken_down_after_the_exit() {
        let (_d, argv) = script("sleep 60 &\necho done\nexit 0");
        let start = Instant::now();
        let r = run(&argv, &BTreeMap::new(), Duration::from_secs(30));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
        assert_eq!((r.ended, r.stdout.as_str()), (Ended::Exit(0), "done\n"));
    }

    #[test]
    fn a_missing_binary_is_not_started_and_says_so() {
        let r = run(
            &["/nonexistent/llama-bench".to_string()],
            &BTreeMap::new(),
            Duration::from_secs(1),
        );
        assert!(matches!(&r.ended, Ended::NotStarted(w) if w.contains("/nonexistent/llama-bench")));
    }
}
