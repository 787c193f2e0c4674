//! `--max-clock` (smoke-bench, serve): hold the GPU at its top OPP while measuring or serving,
//! and put the devfreq node back as it was on every way out: a normal return, an error, a panic
//! (Drop), and SIGINT/SIGTERM/SIGHUP. smoke-bench's signal thread restores, then exits 128 + the
//! signal; serve's passes the signal on to llama-server and restores once it has exited.
//!
//! The method is chosen from the node alone (pure, [`choose`]): the `performance` governor when
//! the node offers it, else `min_freq` raised to the top frequency. Writes go to the node's
//! sysfs attributes in place (sysfs files cannot be replaced by rename), resolved inside the
//! one root and opened without following a final link.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::error::Error;
use crate::host::devfreq::{self as node, Devfreq};
use crate::host::Root;

/// What the pin changes: one attribute, from its old value to the new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `governor` or `min_freq`.
    pub attribute: String,
    pub from: String,
    pub to: String,
}

/// Where the pin leaves the clock, given the node (None: it cannot reach the top here).
pub fn choose(n: &Devfreq) -> Result<Change, String> {
    if let Some(from) = n
        .governor
        .clone()
        .filter(|_| n.available_governors.iter().any(|g| g == "performance"))
    {
        return Ok(Change {
            attribute: "governor".into(),
            from,
            to: "performance".into(),
        });
    }
    let top = n.top().ok_or_else(|| {
        format!(
            "{}: no available_frequencies to pick the top OPP from",
            n.path
        )
    })?;
    let from = n
        .min_freq
        .ok_or_else(|| format!("{}: min_freq is not readable", n.path))?;
    if let Some(max) = n.max_freq.filter(|m| *m < top) {
        return Err(format!(
            "{}: max_freq is capped at {} MHz, below the top OPP {} MHz; raise it first (echo {top} > {}/max_freq)",
            n.path,
            max / 1_000_000,
            top / 1_000_000,
            n.path
        ));
    }
    Ok(Change {
        attribute: "min_freq".into(),
        from: from.to_string(),
        to: top.to_string(),
    })
}

/// What the pin's thread does with SIGINT, SIGTERM and SIGHUP.
#[derive(Debug, Clone)]
pub enum OnSignal {
    /// Restore the node, then exit 128 + the signal (smoke-bench).
    RestoreAndExit,
    /// Send the signal on to this process id; the caller waits for that process and drops the
    /// pin after it (serve's llama-server). While it holds 0 (no process yet, or already
    /// reaped), restore and exit as [`OnSignal::RestoreAndExit`] does.
    Forward(Arc<AtomicI32>),
}

/// The pinned state; dropping it restores the node.
pub struct ClockPin {
    pub change: Change,
    pub device: String,
    /// The verb whose messages these are ("smoke-bench", "serve").
    verb: &'static str,
    root: Root,
    dir: String,
    /// Set once the node is back as it was (by Drop or by the signal thread), so it happens once.
    restored: Arc<Mutex<bool>>,
    signals: signal_hook::iterator::Handle,
}

/// Write `value` into the attribute `dir/name` of the node, in place.
fn write_attr(root: &Root, dir: &str, name: &str, value: &str) -> std::io::Result<()> {
    let path = root.resolve(format!("{dir}/{name}"))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    f.write_all(format!("{value}\n").as_bytes())
}

fn restore(root: &Root, dir: &str, change: &Change, done: &Mutex<bool>) -> std::io::Result<bool> {
    let mut done = done.lock().unwrap_or_else(|p| p.into_inner());
    if *done {
        return Ok(false);
    }
    write_attr(root, dir, &change.attribute, &change.from)?;
    *done = true;
    Ok(true)
}

/// Pin the GPU's clock for `verb`. On the running system this needs root; a fake tree (tests)
/// does not.
pub fn pin(root: &Root, verb: &'static str, on_signal: OnSignal) -> Result<ClockPin, Error> {
    if root.is_live() && !rustix::process::geteuid().is_root() {
        return Err(Error::Refused(format!(
            "--max-clock changes the GPU's devfreq settings: run it as root (sudo rvl {verb} --max-clock)"
        )));
    }
    let n = node::gpu(root).ok_or_else(|| {
        Error::Unsupported(
            "--max-clock: no GPU devfreq node under /sys/class/devfreq (is panthor bound?)".into(),
        )
    })?;
    let change = choose(&n).map_err(|e| Error::Unsupported(format!("--max-clock: {e}")))?;
    let restored = Arc::new(Mutex::new(false));
    // The signal thread is in place before the first write, so no signal finds the node
    // changed without a way back.
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])
    .map_err(|e| Error::Internal(format!("--max-clock: cannot watch signals: {e}")))?;
    let handle = signals.handle();
    {
        let (root, dir, change, restored) = (
            root.clone(),
            n.path.clone(),
            change.clone(),
            restored.clone(),
        );
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if let OnSignal::Forward(pid) = &on_signal {
                    let target = rustix::process::Pid::from_raw(pid.load(Ordering::SeqCst));
                    if let (Some(target), Some(s)) =
                        (target, rustix::process::Signal::from_named_raw(sig))
                    {
                        // The child exits in its own time; the caller restores after it.
                        let _ = rustix::process::kill_process(target, s);
                        continue;
                    }
                }
                match restore(&root, &dir, &change, &restored) {
                    Ok(_) => eprintln!(
                        "{verb}: signal {sig}: GPU {} restored to {}",
                        change.attribute, change.from
                    ),
                    Err(e) => eprintln!(
                        "{verb}: signal {sig}: could not restore {dir}/{} to {}: {e}",
                        change.attribute, change.from
                    ),
                }
                std::process::exit(128 + sig);
            }
        });
    }
    write_attr(root, &n.path, &change.attribute, &change.to).map_err(|e| {
        handle.close();
        Error::io(
            "--max-clock: cannot write",
            format!("{}/{}", n.path, change.attribute),
            e,
        )
    })?;
    Ok(ClockPin {
        change,
        device: n.device,
        verb,
        root: root.clone(),
        dir: n.path,
        restored,
        signals: handle,
    })
}

impl ClockPin {
    /// "cur 1000 MHz, governor performance": the node now, for the progress lines.
    pub fn now(&self) -> String {
        match node::read(&self.root, &self.device) {
            Some(n) => format!(
                "{} MHz ({} {})",
                n.cur_freq
                    .map_or("?".into(), |f| (f / 1_000_000).to_string()),
                self.change.attribute,
                if self.change.attribute == "governor" {
                    n.governor.unwrap_or_default()
                } else {
                    n.min_freq.map_or("?".into(), |f| f.to_string())
                }
            ),
            None => "unreadable".into(),
        }
    }
}

impl Drop for ClockPin {
    fn drop(&mut self) {
        self.signals.close();
        match restore(&self.root, &self.dir, &self.change, &self.restored) {
            Ok(true) => eprintln!(
                "{}: GPU {} restored to {}",
                self.verb, self.change.attribute, self.change.from
            ),
            Ok(false) => {}
            Err(e) => eprintln!(
                "{}: could not restore {}/{} to {}: {e}; write it back by hand",
                self.verb, self.dir, self.change.attribute, self.change.from
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_with(governors: &[&str], min: u64, max: u64) -> Devfreq {
        Devfreq {
            device: "fb000000.gpu".into(),
            path: "/sys/devices/platform/fb000000.gpu/devfreq/fb000000.gpu".into(),
            governor: Some("simple_ondemand".into()),
            available_governors: governors.iter().map(|g| g.to_string()).collect(),
            available_frequencies: vec![300_000_000, 600_000_000, 1_000_000_000],
            min_freq: Some(min),
            max_freq: Some(max),
            ..Default::default()
        }
    }

    #[test]
    fn the_performance_governor_is_preferred_then_min_freq_at_the_top_opp() {
        let c = choose(&node_with(
            &["simple_ondemand", "performance"],
            300_000_000,
            1_000_000_000,
        ))
        .unwrap();
        assert_eq!(
            (c.attribute.as_str(), c.from.as_str(), c.to.as_str()),
            ("governor", "simple_ondemand", "performance")
        );
        let c = choose(&node_with(&["simple_ondemand"], 300_000_000, 1_000_000_000)).unwrap();
        assert_eq!(
            (c.attribute.as_str(), c.from.as_str(), c.to.as_str()),
            ("min_freq", "300000000", "1000000000")
        );
    }

    #[test]
    fn a_capped_max_freq_is_refused_with_the_fix_rather_than_pinned_below_the_top() {
        let e = choose(&node_with(&["simple_ondemand"], 300_000_000, 600_000_000)).unwrap_err();
        assert!(
            e.contains("capped at 600 MHz, below the top OPP 1000 MHz"),
            "{e}"
        );
        assert!(e.contains("echo 1000000000 >"), "{e}");
    }
}
