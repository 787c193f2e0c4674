//! `rvl report`: one file to attach to a bug report. It runs the doctor (full inventory) and
//! setup's `--status` in-process, collects the kernel log lines, boot and ICD files, setup's
//! journal and build-log tails through the root, filters out host names and MAC addresses
//! (unless `--full`) and writes a `.tar.gz` atomically. The environment is never taken whole:
//! only the Vulkan/XDG variables doctor reads, and only on the live system.

mod archive;
mod collect;
pub mod redact;

use std::path::PathBuf;

use clap::Parser;
use serde::Serialize;

use crate::cli::{self, ReportArgs};
use crate::error::Error;
use crate::host::Root;
use crate::output::{Envelope, Outcome, Style};
use crate::settings::Settings;
use collect::{Collection, Skipped};
use redact::Redactor;

/// Variables the doctor reads that a report never carries: they name the person, not the stack.
const ENV_DROPPED: &[&str] = &["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "SUDO_USER"];

/// A variable of the process environment a report may carry: one the doctor reads (the
/// Vulkan loader's and XDG's) and not personal.
fn env_kept(name: &str) -> bool {
    crate::host::env::NAMES.contains(&name) && !ENV_DROPPED.contains(&name)
}

#[derive(Debug, Serialize)]
pub struct ReportOutcome {
    /// The archive written.
    pub output: PathBuf,
    pub files: Vec<FileEntry>,
    pub skipped: Vec<Skipped>,
    /// False unless `--full`: host names and MAC addresses were replaced.
    pub full: bool,
    pub redacted: Redacted,
}

#[derive(Debug, Serialize)]
pub struct FileEntry {
    pub name: String,
    pub source: String,
    pub bytes: usize,
    /// How the file was cut to fit the budget (a log's tail, a long line), if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Redacted {
    pub hostnames: usize,
    pub macs: usize,
    /// Tokens, keys and passwords (always replaced, `--full` too).
    pub secrets: usize,
}

pub fn run(args: &ReportArgs, settings: &Settings) -> anyhow::Result<ReportOutcome> {
    let root = Root::open_dir(&args.system.root).map_err(Error::from)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_name()));
    archive::check_writable(&output)?;

    let mut c = Collection::default();
    let (doctor_json, doctor_text) = doctor_docs(args, settings)?;
    c.add("doctor.json", "rvl doctor --json", doctor_json);
    c.add("doctor.txt", "rvl doctor -v", doctor_text);
    c.add(
        "setup-status.json",
        "rvl setup --status --json",
        verb_json(args, settings, "setup")?,
    );
    c.add(
        "status.json",
        "rvl status --json",
        verb_json(args, settings, "status")?,
    );
    collect::system_files(&root, &mut c);
    collect::packages(&root, &mut c);
    collect::kernel_log(&root, &mut c);
    collect::setup_files(&root, crate::setup::journal::STATE_DIR, &mut c);
    environment(&root, settings, &mut c);
    if let Some(bench) = &args.bench {
        collect::outside_file(bench, "smoke-bench.json", &mut c);
    } else {
        c.skip(
            "smoke-bench result",
            "none given (--bench FILE, a file saved with smoke-bench --save)",
        );
    }

    let redactor = if args.full {
        Redactor::full()
    } else {
        Redactor::new(hostnames(&root), vocabulary(&root, args))
    };
    let mut redactor = redactor.with_home(settings.env.get("HOME"));
    let (items, mut skipped) = redact(&mut redactor, c);
    let files: Vec<FileEntry> = items
        .iter()
        .map(|i| FileEntry {
            name: i.name.clone(),
            source: i.source.clone(),
            bytes: i.data.len(),
            cut: i.cut.clone(),
        })
        .collect();
    skipped.sort_by(|a, b| a.what.cmp(&b.what));
    let mut outcome = ReportOutcome {
        output,
        files,
        skipped,
        full: args.full,
        redacted: Redacted {
            hostnames: redactor.hostnames_replaced,
            macs: redactor.macs_replaced,
            secrets: redactor.secrets_replaced,
        },
    };
    // What the report made is dated now; the system's files keep their own dates.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let index = outcome.listing();
    let entries = std::iter::once(archive::Entry {
        name: INDEX,
        data: index.as_bytes(),
        mtime: now,
    })
    .chain(items.iter().map(|i| archive::Entry {
        name: &i.name,
        data: &i.data,
        mtime: i.mtime.unwrap_or(now),
    }));
    archive::write_tar_gz(&outcome.output, entries)?;
    outcome.files.insert(
        0,
        FileEntry {
            name: INDEX.into(),
            source: "this listing".into(),
            bytes: index.len(),
            cut: None,
        },
    );
    Ok(outcome)
}

/// The bundle's first file: what it holds, what was cut, what was left out and why.
const INDEX: &str = "index.txt";

/// Every item redacted in place, one at a time (memory stays the bundle's), its name and
/// source too; two names that become one are told apart. An item that redaction grew past
/// the bundle's budget is left out, saying so.
fn redact(r: &mut Redactor, c: Collection) -> (Vec<collect::Item>, Vec<Skipped>) {
    let mut names = std::collections::HashSet::new();
    let mut items = Vec::with_capacity(c.items.len());
    let mut skipped = c.skipped;
    let mut total = 0u64;
    for mut item in c.items {
        let data = std::mem::take(&mut item.data);
        item.data = if item.name.ends_with(".json") {
            r.redact_json(&data)
        } else {
            None
        }
        .unwrap_or_else(|| r.redact(&String::from_utf8_lossy(&data)).into_bytes());
        drop(data);
        let mut name = r.redact(&item.name);
        let base = name.clone();
        let mut n = 1;
        while !names.insert(name.clone()) {
            n += 1;
            name = format!("{base}.{n}");
        }
        item.name = name;
        item.source = r.redact(&item.source);
        total = total.saturating_add(item.data.len() as u64);
        if total > collect::BUNDLE_CAP {
            total -= item.data.len() as u64;
            skipped.push(Skipped {
                what: item.name,
                why: format!(
                    "filtered, it would pass the bundle's budget of {}",
                    collect::size(collect::BUNDLE_CAP)
                ),
            });
            continue;
        }
        items.push(item);
    }
    for s in &mut skipped {
        s.what = r.redact(&s.what);
        s.why = r.redact(&s.why);
    }
    (items, skipped)
}

/// Words that name boards, not hosts: the profiles' ids and device-tree compatibles, and the
/// image's own compatibles. A host name among them is replaced only where it stands as one.
fn vocabulary(root: &Root, args: &ReportArgs) -> Vec<String> {
    let mut words: Vec<String> = crate::profile::Profiles::load(args.system.profiles.as_deref())
        .map(|p| {
            p.all()
                .iter()
                .flat_map(|p| std::iter::once(p.id.clone()).chain(p.matches.iter().cloned()))
                .collect()
        })
        .unwrap_or_default();
    if let Some(dt) = crate::host::devicetree::read(root) {
        words.extend(dt.compatible);
    }
    words
}

/// Doctor once, as JSON and as the text a person reads (`-v`: every check with its evidence).
fn doctor_docs(args: &ReportArgs, settings: &Settings) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let parsed = cli::Cli::try_parse_from(verb_argv(args, "doctor")).map_err(|e| {
        Error::Internal(format!("report could not build the doctor arguments: {e}"))
    })?;
    let cli::Command::Doctor(a) = &parsed.command else {
        unreachable!("verb_argv names doctor")
    };
    let mut result = crate::doctor::run(a, settings);
    if let Ok(crate::doctor::report::DoctorOutcome::Report(r)) = &mut result {
        r.verbose = true;
    }
    let text = match &result {
        Ok(o) => o.human(Style::plain()),
        Err(e) => format!("rvl doctor: {e:#}\n"),
    };
    let json = keep_listed_env(to_json("doctor", result));
    Ok((json, text.into_bytes()))
}

/// The arguments of `rvl VERB --json` on the report's system.
fn verb_argv(args: &ReportArgs, verb: &str) -> Vec<std::ffi::OsString> {
    let root = args.system.root.as_os_str().to_owned();
    let mut argv: Vec<std::ffi::OsString> = vec!["rvl".into(), verb.into(), "--json".into()];
    argv.extend(["--root".into(), root]);
    if let Some(p) = &args.system.profiles {
        argv.extend(["--profiles".into(), p.as_os_str().to_owned()]);
    }
    if let Some(b) = &args.system.board {
        argv.extend(["--board".into(), b.into()]);
    }
    match verb {
        "doctor" if args.no_vulkan => argv.push("--no-vulkan".into()),
        "setup" => argv.push("--status".into()),
        _ => {}
    }
    argv
}

/// Another verb's `--json` document, produced in-process with the same root and settings.
/// Parsed through the real CLI so its options stay the verb's own.
fn verb_json(args: &ReportArgs, settings: &Settings, verb: &str) -> anyhow::Result<Vec<u8>> {
    let argv = verb_argv(args, verb);
    let parsed = cli::Cli::try_parse_from(argv).map_err(|e| {
        Error::Internal(format!("report could not build the {verb} arguments: {e}"))
    })?;
    let doc = match &parsed.command {
        cli::Command::Setup(a) => to_json(verb, crate::setup::run(a, settings)),
        cli::Command::Status(a) => to_json(verb, crate::status::run(a, settings)),
        _ => unreachable!("only setup and status are run by verb_json"),
    };
    Ok(doc)
}

/// A verb's result as its envelope; an error becomes the error envelope, as under `--json`.
fn to_json<O: Outcome>(verb: &str, r: anyhow::Result<O>) -> Vec<u8> {
    let doc = match r {
        Ok(o) => serde_json::to_vec_pretty(&Envelope::new(verb, o.exit_code(), &o)),
        Err(e) => {
            let code = crate::error::exit_code_of(&e);
            let body = crate::output::ErrorBody {
                error: crate::output::ErrorReport::from_error(&e),
            };
            serde_json::to_vec_pretty(&Envelope::new(verb, code, &body))
        }
    };
    let mut doc = doc.unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}").into_bytes());
    doc.push(b'\n');
    doc
}

/// The doctor's inventory lists every variable it read (HOME among them); the report keeps
/// only what [`env_kept`] allows.
fn keep_listed_env(doc: Vec<u8>) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&doc) else {
        return doc;
    };
    if let Some(vars) = v
        .pointer_mut("/inventory/env")
        .and_then(|e| e.as_object_mut())
    {
        vars.retain(|k, _| env_kept(k));
    }
    let mut out = serde_json::to_vec_pretty(&v).unwrap_or(doc);
    out.push(b'\n');
    out
}

/// The Vulkan/XDG variables, live only: under `--root` the process environment is this
/// host's, not the image's, and would mislead.
fn environment(root: &Root, settings: &Settings, c: &mut Collection) {
    if !root.is_live() {
        return c.skip(
            "environment",
            "not the image's: rvl runs on another system (--root)",
        );
    }
    let mut text = String::new();
    for name in crate::host::env::NAMES.iter().filter(|n| env_kept(n)) {
        if let Some(v) = settings.env.get(name) {
            text.push_str(&format!("{name}={v}\n"));
        }
    }
    c.add(
        "environment",
        "the Vulkan and XDG variables of this process",
        text.into_bytes(),
    );
}

/// The names the system calls itself.
fn hostnames(root: &Root) -> Vec<String> {
    ["/etc/hostname", "/proc/sys/kernel/hostname"]
        .iter()
        .filter_map(|p| root.read_string(p).ok())
        .map(|s| s.trim().to_string())
        .collect()
}

/// `rvl-report-YYYYMMDD-HHMMSS.tar.gz` in the current directory (UTC).
fn default_name() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "rvl-report-{y:04}{m:02}{d:02}-{:02}{:02}{:02}.tar.gz",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

impl Outcome for ReportOutcome {
    fn exit_code(&self) -> i32 {
        crate::exit::OK
    }

    fn human(&self, _style: Style) -> String {
        format!(
            "wrote {} ({} files)\n{}",
            crate::output::escape_control(&self.output.display().to_string()),
            self.files.len(),
            self.listing()
        )
    }
}

impl ReportOutcome {
    /// What the bundle holds (with how each file was cut), what it left out and why, and what
    /// was filtered: the report's output and the bundle's `index.txt`.
    fn listing(&self) -> String {
        use crate::output::escape_control as esc;
        let mut out = String::new();
        let width = self.files.iter().map(|f| f.name.len()).max().unwrap_or(0);
        for f in &self.files {
            out.push_str(&format!(
                "  {:width$}  {:>8} B  {}{}\n",
                esc(&f.name),
                f.bytes,
                esc(&f.source),
                f.cut
                    .as_deref()
                    .map(|c| format!(" (cut: {})", esc(c)))
                    .unwrap_or_default()
            ));
        }
        if !self.skipped.is_empty() {
            out.push_str("not included:\n");
            for s in &self.skipped {
                out.push_str(&format!("  {}: {}\n", esc(&s.what), esc(&s.why)));
            }
        }
        out.push_str(&format!(
            "budget: {} in all, files up to {}, {} files of a directory, log tails of {} lines and {}\n",
            collect::size(collect::BUNDLE_CAP),
            collect::size(collect::FILE_CAP),
            collect::DIR_FILES,
            collect::LOG_TAIL_LINES,
            collect::size(collect::LOG_TAIL_BYTES)
        ));
        out.push_str(&if self.full {
            format!(
                "--full: host names and MAC addresses were kept; {} secret(s) replaced\n",
                self.redacted.secrets
            )
        } else {
            format!(
                "filtered: {} host name(s), {} MAC address(es), {} secret(s) replaced; no environment but the Vulkan/XDG variables\n",
                self.redacted.hostnames, self.redacted.macs, self.redacted.secrets
            )
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_are_right_at_the_edges() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }

    #[test]
    fn default_name_is_a_timestamped_tarball() {
        let n = default_name();
        assert!(
            n.starts_with("rvl-report-") && n.ends_with(".tar.gz"),
            "{n}"
        );
        assert_eq!(n.len(), "rvl-report-20261202-221000.tar.gz".len());
    }
}
