//! Downloads of pinned artifacts: https only (plain http only to loopback, for tests), connect
//! and stall timeouts, a minimum average rate after a grace period (a server that drips a byte a
//! second is never silent, yet would take hours), retries with back-off, resume of a partial
//! file with `Range`, a size cap, and a sha256 check before the file is moved into place.
//!
//! The body is written to `.<name>.part` next to the destination. Only a file whose size and
//! sha256 match is renamed to its final name (then the directory is fsynced). Any final failure
//! removes the partial file, so a bad checksum, a truncated body, a 404, a stall or an oversized
//! body leave nothing behind. A partial file left by a process that was killed is resumed by
//! the next run (its bytes are checked by the same sha256 at the end).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::digest::sha256_file;
use reqwest::blocking::{Client, Response};
use reqwest::header::{CONTENT_RANGE, RANGE};
use reqwest::{StatusCode, Url};

pub mod pip;

/// What to download and what it must be.
#[derive(Debug, Clone)]
pub struct Request {
    pub url: String,
    /// Expected sha256, lowercase hex (upper case is accepted).
    pub sha256: String,
    /// Exact size in bytes when the manifest knows it.
    pub size: Option<u64>,
    /// Refuse bodies larger than this many bytes.
    pub max_size: u64,
}

/// How progress is shown (always on stderr); decided by [`crate::settings::Settings`].
pub use crate::output::Progress;

/// Network behaviour. The defaults suit a board on a slow link.
#[derive(Debug, Clone)]
pub struct Options {
    pub connect_timeout: Duration,
    /// Longest wait for the response head or for the next bytes of the body.
    pub stall_timeout: Duration,
    /// Slowest average rate (bytes per second, over one try) a download may keep once
    /// `rate_grace` has passed; 0 turns the check off.
    pub min_rate: u64,
    /// How long a try may run before `min_rate` applies (connection set-up, TCP slow start).
    pub rate_grace: Duration,
    /// Tries in all, the first included.
    pub attempts: u32,
    /// Wait before the second try; doubled for each further try.
    pub backoff: Duration,
    pub progress: Progress,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            connect_timeout: Duration::from_secs(20),
            stall_timeout: Duration::from_secs(60),
            min_rate: DEFAULT_MIN_RATE,
            rate_grace: Duration::from_secs(60),
            attempts: 4,
            backoff: Duration::from_secs(2),
            progress: Progress::Lines,
        }
    }
}

/// 16 KiB/s: the largest pinned artifact (Mesa's 74 MiB tarball) within about 80 minutes.
pub const DEFAULT_MIN_RATE: u64 = 16 << 10;

/// Why a download failed. Every variant leaves no file behind.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("refusing {url}: only https is allowed (plain http only to a loopback address)")]
    InsecureUrl { url: String },
    #[error("{url} is not a valid URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{url}: the server answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: the server redirects (HTTP {status}) to {to}, which rvl does not follow: only https, or plain http to a loopback address")]
    Redirect {
        url: String,
        status: u16,
        to: String,
    },
    #[error("{url}: the body is larger than the {limit} bytes allowed")]
    TooLarge { url: String, limit: u64 },
    #[error("{url}: the server announces {announced} bytes, the manifest pins {expected}")]
    SizeMismatch {
        url: String,
        announced: u64,
        expected: u64,
    },
    #[error("{url}: the body ended after {got} of {expected} bytes")]
    Truncated {
        url: String,
        got: u64,
        expected: u64,
    },
    #[error("{url}: no data for {secs} s (stalled)")]
    Stalled { url: String, secs: f64 },
    #[error("{url}: {got} bytes in {secs:.0} s ({rate:.0} bytes/s on average), slower than the {min_rate} bytes/s allowed after the first {grace:.0} s (RVL_FETCH_MIN_RATE sets the floor)")]
    TooSlow {
        url: String,
        got: u64,
        secs: f64,
        rate: f64,
        min_rate: u64,
        grace: f64,
    },
    #[error("{url}: got {got} bytes, the manifest pins {expected}")]
    WrongSize {
        url: String,
        got: u64,
        expected: u64,
    },
    #[error("{url}: sha256 mismatch: expected {expected}, got {actual}")]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },
    #[error("{url}: {detail}")]
    Network { url: String, detail: String },
    /// No connection at all (the name does not resolve, the connection is refused or times
    /// out): offline, or the host is down. Not retried: a retry minutes later would fail alike.
    #[error("{url}: cannot connect ({detail})")]
    Unreachable { url: String, detail: String },
    /// `pip download` failed, or python/pip could not be run (the text says which).
    #[error("{0}")]
    Pip(String),
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl FetchError {
    /// No connection could be made (see [`FetchError::Unreachable`]).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, FetchError::Unreachable { .. })
    }

    /// Worth another try (with resume where the server supports it).
    fn is_transient(&self) -> bool {
        match self {
            FetchError::Status { status, .. } => *status >= 500 || *status == 408 || *status == 429,
            FetchError::Truncated { .. } | FetchError::Stalled { .. } => true,
            FetchError::Network { .. } => true,
            _ => false,
        }
    }
}

/// A verified download.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub path: PathBuf,
    pub size: u64,
    /// Tries used (1 when the first one succeeded).
    pub attempts: u32,
    /// Bytes that were already on disk from an earlier, interrupted try or run.
    pub resumed_bytes: u64,
}

/// Download `req` to `dest` (a host path; its directory must exist). If `dest` already holds a
/// file with the right sha256 nothing is fetched.
pub fn download(req: &Request, dest: &Path, opts: &Options) -> Result<Downloaded, FetchError> {
    let url = check_url(&req.url)?;
    let expected = req.sha256.to_ascii_lowercase();
    if let Ok(meta) = fs::metadata(dest) {
        if meta.is_file() && sha256_file(dest).is_ok_and(|h| h == expected) {
            return Ok(Downloaded {
                path: dest.to_path_buf(),
                size: meta.len(),
                attempts: 0,
                resumed_bytes: 0,
            });
        }
    }
    let part = part_path(dest);
    let result = download_to_part(req, &url, &expected, &part, opts);
    match result {
        Ok(mut done) => {
            let finish = || -> io::Result<()> {
                File::open(&part)?.sync_all()?;
                fs::rename(&part, dest)?;
                sync_parent(dest)
            };
            finish().map_err(|source| {
                let _ = fs::remove_file(&part);
                FetchError::Io {
                    path: dest.to_path_buf(),
                    source,
                }
            })?;
            done.path = dest.to_path_buf();
            Ok(done)
        }
        Err(e) => {
            let _ = fs::remove_file(&part);
            Err(e)
        }
    }
}

/// Where the body of `dest` is assembled.
pub fn part_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.part"))
}

/// Only https, or http to a loopback address.
pub fn check_url(raw: &str) -> Result<Url, FetchError> {
    let url = Url::parse(raw).map_err(|e| FetchError::BadUrl {
        url: raw.to_string(),
        reason: e.to_string(),
    })?;
    if url_allowed(&url) {
        Ok(url)
    } else {
        Err(FetchError::InsecureUrl {
            url: raw.to_string(),
        })
    }
}

fn url_allowed(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => url.host_str().is_some_and(|host| {
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            match bare.parse::<IpAddr>() {
                Ok(ip) => ip.is_loopback(),
                Err(_) => bare.eq_ignore_ascii_case("localhost"),
            }
        }),
        _ => false,
    }
}

fn client(opts: &Options) -> Result<Client, FetchError> {
    // Every hop of a redirect must pass the same scheme rule: no https -> http downgrade.
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= 10 {
            attempt.error("more than 10 redirects")
        } else if !url_allowed(attempt.url()) {
            let msg = format!("redirect to {} is not https", attempt.url());
            attempt.error(msg)
        } else {
            attempt.follow()
        }
    });
    Client::builder()
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.stall_timeout)
        .redirect(policy)
        .user_agent(concat!("rvl/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| FetchError::Network {
            url: String::new(),
            detail: format!("cannot build the HTTP client: {e}"),
        })
}

fn download_to_part(
    req: &Request,
    url: &Url,
    expected: &str,
    part: &Path,
    opts: &Options,
) -> Result<Downloaded, FetchError> {
    let client = client(opts)?;
    let io_err = |source| FetchError::Io {
        path: part.to_path_buf(),
        source,
    };
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .open(part)
        .map_err(io_err)?;
    let initial = file.seek(SeekFrom::End(0)).map_err(io_err)?;
    if initial > limit(req) {
        file.set_len(0).map_err(io_err)?;
    }
    let resumed_bytes = file.metadata().map_err(io_err)?.len();
    let progress = Bar::new(opts.progress, &req.url, req.size);

    let attempts = opts.attempts.max(1);
    let mut restarted_after_bad_sum = false;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome =
            fetch_once(&client, req, url, &mut file, part, &progress, opts).and_then(|()| {
                let have = file.metadata().map_err(io_err)?.len();
                match req.size {
                    Some(size) if have < size => Err(FetchError::Truncated {
                        url: req.url.clone(),
                        got: have,
                        expected: size,
                    }),
                    _ => Ok(have),
                }
            });
        match outcome {
            Ok(size) => {
                let actual = sha256_file(part).map_err(io_err)?;
                if actual == expected {
                    progress.finish(size);
                    return Ok(Downloaded {
                        path: part.to_path_buf(),
                        size,
                        attempts: attempt,
                        resumed_bytes,
                    });
                }
                // A file stitched from an earlier run may hold stale bytes: one clean try.
                if resumed_bytes > 0 && !restarted_after_bad_sum && attempt < attempts {
                    restarted_after_bad_sum = true;
                    file.set_len(0).map_err(io_err)?;
                    continue;
                }
                progress.abandon();
                return Err(FetchError::Checksum {
                    url: req.url.clone(),
                    expected: expected.to_string(),
                    actual,
                });
            }
            Err(e) if e.is_transient() && attempt < attempts => {
                let wait = opts.backoff.saturating_mul(1 << (attempt - 1).min(16));
                progress.note(&format!("{e}; retrying in {} ms", wait.as_millis()));
                std::thread::sleep(wait);
            }
            Err(e) => {
                progress.abandon();
                return Err(e);
            }
        }
    }
}

fn limit(req: &Request) -> u64 {
    req.size.map_or(req.max_size, |s| s.min(req.max_size))
}

/// One request: ask for the bytes after what `file` holds and append them.
fn fetch_once(
    client: &Client,
    req: &Request,
    url: &Url,
    file: &mut File,
    part: &Path,
    progress: &Bar,
    opts: &Options,
) -> Result<(), FetchError> {
    let stall_secs = opts.stall_timeout.as_secs_f64();
    let io_err = |source| FetchError::Io {
        path: part.to_path_buf(),
        source,
    };
    let mut offset = file.metadata().map_err(io_err)?.len();
    let cap = limit(req);
    if req.size == Some(offset) {
        return Ok(()); // complete already; the checksum decides
    }
    let mut request = client.get(url.clone());
    if offset > 0 {
        request = request.header(RANGE, format!("bytes={offset}-"));
    }
    let mut resp = request.send().map_err(|e| net_error(req, e, stall_secs))?;
    let status = resp.status();
    match status {
        StatusCode::PARTIAL_CONTENT if offset > 0 && content_range_start(&resp) == Some(offset) => {
        }
        StatusCode::OK | StatusCode::PARTIAL_CONTENT => {
            // A full body (the server ignores Range) or a range we did not ask for: start over.
            if offset > 0 {
                file.set_len(0).map_err(io_err)?;
                offset = 0;
            }
            if status == StatusCode::PARTIAL_CONTENT {
                return Err(FetchError::Network {
                    url: req.url.clone(),
                    detail: "the server answered a range that was not asked for".into(),
                });
            }
        }
        StatusCode::RANGE_NOT_SATISFIABLE => {
            file.set_len(0).map_err(io_err)?;
            return Err(FetchError::Network {
                url: req.url.clone(),
                detail: "the server refused to resume; starting over".into(),
            });
        }
        s if s.is_redirection() => {
            // A redirect the client did not follow: to a scheme it does not speak (`file:`,
            // `ftp:`), or without a Location.
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            return Err(FetchError::Redirect {
                url: req.url.clone(),
                status: s.as_u16(),
                to: to.unwrap_or_else(|| "nowhere (no Location header)".into()),
            });
        }
        s => {
            return Err(FetchError::Status {
                url: req.url.clone(),
                status: s.as_u16(),
            })
        }
    }
    file.seek(SeekFrom::Start(offset)).map_err(io_err)?;
    if let Some(len) = resp.content_length() {
        let announced = offset.saturating_add(len);
        if announced > cap {
            return Err(match req.size {
                Some(expected) if announced <= req.max_size => FetchError::SizeMismatch {
                    url: req.url.clone(),
                    announced,
                    expected,
                },
                _ => FetchError::TooLarge {
                    url: req.url.clone(),
                    limit: cap,
                },
            });
        }
    }
    progress.start(offset);
    let mut got = offset;
    let mut buf = vec![0u8; 64 * 1024];
    let started = Instant::now();
    loop {
        too_slow(req, opts, got - offset, started.elapsed())?;
        let n = match resp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                file.sync_data().map_err(io_err)?;
                return Err(read_error(req, e, got, stall_secs));
            }
        };
        got += n as u64;
        if got > cap {
            return Err(FetchError::TooLarge {
                url: req.url.clone(),
                limit: cap,
            });
        }
        file.write_all(&buf[..n]).map_err(io_err)?;
        progress.set(got);
    }
    file.sync_data().map_err(io_err)?;
    if let Some(len) = resp.content_length() {
        if got < offset + len {
            return Err(FetchError::Truncated {
                url: req.url.clone(),
                got,
                expected: offset + len,
            });
        }
    }
    Ok(())
}

/// The rate rule: once `opts.rate_grace` has passed, a try whose average rate (`bytes` this
/// try over `elapsed`) is below `opts.min_rate` ends. Checked after every read, so a drip that
/// is never silent long enough to stall still ends at most a stall timeout after the grace.
fn too_slow(
    req: &Request,
    opts: &Options,
    bytes: u64,
    elapsed: Duration,
) -> Result<(), FetchError> {
    if opts.min_rate == 0 || elapsed <= opts.rate_grace {
        return Ok(());
    }
    let secs = elapsed.as_secs_f64();
    let rate = bytes as f64 / secs;
    if rate >= opts.min_rate as f64 {
        return Ok(());
    }
    Err(FetchError::TooSlow {
        url: req.url.clone(),
        got: bytes,
        secs,
        rate,
        min_rate: opts.min_rate,
        grace: opts.rate_grace.as_secs_f64(),
    })
}

/// The first byte of a `Content-Range: bytes START-END/TOTAL` answer.
fn content_range_start(resp: &Response) -> Option<u64> {
    let value = resp.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    let range = value.strip_prefix("bytes ")?;
    range.split('-').next()?.trim().parse().ok()
}

/// True when a body read failed because the stall timeout ran out. reqwest wraps its own error
/// in an `io::Error`, whose `source()` skips the wrapped error, so look inside it first.
fn is_timeout(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::TimedOut {
        return true;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|i| i as _);
    while let Some(err) = cur {
        if err
            .downcast_ref::<reqwest::Error>()
            .is_some_and(|r| r.is_timeout())
        {
            return true;
        }
        if err
            .downcast_ref::<io::Error>()
            .is_some_and(|i| i.kind() == io::ErrorKind::TimedOut)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn net_error(req: &Request, e: reqwest::Error, secs: f64) -> FetchError {
    if e.is_connect() {
        // reqwest's own text repeats the URL; the causes say what failed.
        let causes = std::error::Error::source(&e)
            .map(describe)
            .unwrap_or_else(|| describe(&e));
        return FetchError::Unreachable {
            url: req.url.clone(),
            detail: causes,
        };
    }
    if e.is_timeout() {
        return FetchError::Stalled {
            url: req.url.clone(),
            secs,
        };
    }
    if e.is_redirect() {
        // Not transient: a refused redirect stays refused.
        return FetchError::InsecureUrl { url: describe(&e) };
    }
    FetchError::Network {
        url: req.url.clone(),
        detail: describe(&e),
    }
}

fn read_error(req: &Request, e: io::Error, got: u64, secs: f64) -> FetchError {
    if is_timeout(&e) {
        FetchError::Stalled {
            url: req.url.clone(),
            secs,
        }
    } else {
        FetchError::Truncated {
            url: req.url.clone(),
            got,
            expected: req.size.unwrap_or(got),
        }
    }
}

/// An error with its causes on one line (reqwest's top-level message alone is vague).
fn describe(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Check a file that another client fetched (`what` names it in errors) against the pinned
/// size and sha256, with the same hash and errors as a download.
pub fn verify_file(what: &str, path: &Path, sha256: &str, size: u64) -> Result<(), FetchError> {
    verify_pinned(what, path, sha256, Some(size))
}

/// [`verify_file`] for an artifact whose size the manifest may not pin (the sha256 does).
pub fn verify_pinned(
    what: &str,
    path: &Path,
    sha256: &str,
    size: Option<u64>,
) -> Result<(), FetchError> {
    let io_err = |source| FetchError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(expected) = size {
        let got = fs::metadata(path).map_err(io_err)?.len();
        if got != expected {
            return Err(FetchError::WrongSize {
                url: what.to_string(),
                got,
                expected,
            });
        }
    }
    let actual = sha256_file(path).map_err(io_err)?;
    let expected = sha256.to_ascii_lowercase();
    if actual != expected {
        return Err(FetchError::Checksum {
            url: what.to_string(),
            expected,
            actual,
        });
    }
    Ok(())
}

fn sync_parent(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
}

/// Progress on stderr: a bar on a terminal, two plain lines otherwise, nothing when quiet.
struct Bar {
    mode: Progress,
    bar: Option<indicatif::ProgressBar>,
    label: String,
}

impl Bar {
    fn new(mode: Progress, url: &str, size: Option<u64>) -> Self {
        let label = url.rsplit('/').next().unwrap_or(url).to_string();
        let bar = (mode == Progress::Bar).then(|| {
            let bar = match size {
                Some(s) => indicatif::ProgressBar::new(s),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let style = indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .map(|s| s.progress_chars("=> "));
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.set_message(label.clone());
            bar
        });
        if mode.shown() && bar.is_none() {
            match size {
                Some(s) => eprintln!("downloading {url} ({s} bytes)"),
                None => eprintln!("downloading {url}"),
            }
        }
        Bar { mode, bar, label }
    }

    fn start(&self, offset: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(offset);
        } else if self.mode.shown() && offset > 0 {
            eprintln!("resuming {} at byte {offset}", self.label);
        }
    }

    fn set(&self, pos: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(pos);
        }
    }

    fn note(&self, msg: &str) {
        match &self.bar {
            Some(bar) => bar.println(msg),
            None if self.mode.shown() => eprintln!("{msg}"),
            None => {}
        }
    }

    fn finish(&self, size: u64) {
        match &self.bar {
            Some(bar) => bar.finish_and_clear(),
            None if self.mode.shown() => {
                eprintln!("downloaded {}: {size} bytes, sha256 ok", self.label)
            }
            None => {}
        }
    }

    fn abandon(&self) {
        if let Some(bar) = &self.bar {
            bar.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_url("https://example.org/a.tar.xz").is_ok());
        assert!(check_url("http://127.0.0.1:8080/a").is_ok());
        assert!(check_url("http://[::1]:8080/a").is_ok());
        assert!(check_url("http://localhost/a").is_ok());
        assert!(matches!(
            check_url("http://example.org/a"),
            Err(FetchError::InsecureUrl { .. })
        ));
        assert!(matches!(
            check_url("ftp://127.0.0.1/a"),
            Err(FetchError::InsecureUrl { .. })
        ));
        assert!(matches!(
            check_url("not a url"),
            Err(FetchError::BadUrl { .. })
        ));
    }

    #[test]
    fn part_file_sits_next_to_the_destination() {
        assert_eq!(
            part_path(Path::new("/cache/mesa.tar.xz")),
            PathBuf::from("/cache/.mesa.tar.xz.part")
        );
    }

    #[test]
    fn download_errors_exit_with_download_status() {
        let e = FetchError::Stalled {
            url: "u".into(),
            secs: 1.0,
        };
        let e = anyhow::Error::from(crate::error::Error::from(e));
        assert_eq!(crate::error::exit_code_of(&e), crate::exit::DOWNLOAD);
    }
}
