//! `fetch` against a loopback HTTP server this test starts: every failure leaves nothing behind.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::http::{sha256_hex, Reply, Server};
use rvl::fetch::{self, FetchError, Options, Progress, Request};

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

fn opts() -> Options {
    Options {
        connect_timeout: Duration::from_secs(2),
        stall_timeout: Duration::from_millis(400),
        min_rate: 1000,
        rate_grace: Duration::from_millis(300),
        attempts: 3,
        backoff: Duration::from_millis(10),
        progress: Progress::Quiet,
    }
}

fn req(url: &str, data: &[u8]) -> Request {
    Request {
        url: url.to_string(),
        sha256: sha256_hex(data),
        size: Some(data.len() as u64),
        max_size: 1 << 20,
    }
}

/// The directory holds nothing at all (no final file, no `.part`).
fn assert_empty(dir: &Path) {
    let left: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn good_download_is_verified_and_renamed() {
    let srv = Server::start();
    let data = body(200_000);
    let url = srv.route("/a.bin", Reply::Body(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("a.bin");
    let done = fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(fs::read(&dest).unwrap(), data);
    assert_eq!(done.size, data.len() as u64);
    assert_eq!(done.attempts, 1);
    assert!(!fetch::part_path(&dest).exists());
    // Already there with the right hash: no second request.
    fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(srv.hits("/a.bin"), 1);
}

#[test]
fn bad_sha256_leaves_nothing() {
    let srv = Server::start();
    let data = body(5000);
    let url = srv.route("/a.bin", Reply::Body(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let mut r = req(&url, &data);
    r.sha256 = sha256_hex(b"something else");
    let err = fetch::download(&r, &dir.path().join("a.bin"), &opts()).unwrap_err();
    assert!(matches!(err, FetchError::Checksum { .. }), "{err}");
    assert!(err.to_string().contains("sha256 mismatch"));
    assert_empty(dir.path());
    assert_eq!(srv.hits("/a.bin"), 1, "a bad checksum is not retried");
}

#[test]
fn not_found_is_not_retried_and_leaves_nothing() {
    let srv = Server::start();
    let url = format!("{}/missing", srv.base);
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::download(&req(&url, b"x"), &dir.path().join("m"), &opts()).unwrap_err();
    assert!(
        matches!(err, FetchError::Status { status: 404, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("HTTP 404"));
    assert_eq!(srv.hits("/missing"), 1);
    assert_empty(dir.path());
}

#[test]
fn server_errors_are_retried_then_reported() {
    let srv = Server::start();
    let url = srv.route("/busy", Reply::Status(503));
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::download(&req(&url, b"x"), &dir.path().join("b"), &opts()).unwrap_err();
    assert!(matches!(err, FetchError::Status { status: 503, .. }));
    assert_eq!(srv.hits("/busy"), 3);
    assert_empty(dir.path());
}

#[test]
fn truncated_body_that_never_completes_leaves_nothing() {
    let srv = Server::start();
    let data = body(100_000);
    let url = srv.route(
        "/t",
        Reply::Truncated {
            body: data.clone(),
            send: 10_000,
            good_after: usize::MAX,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::download(&req(&url, &data), &dir.path().join("t"), &opts()).unwrap_err();
    assert!(matches!(err, FetchError::Truncated { .. }), "{err}");
    assert_eq!(srv.hits("/t"), 3);
    assert_empty(dir.path());
}

#[test]
fn truncated_body_is_resumed_with_range() {
    let srv = Server::start();
    let data = body(100_000);
    let url = srv.route(
        "/r",
        Reply::Truncated {
            body: data.clone(),
            send: 30_000,
            good_after: 2,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("r");
    let done = fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(fs::read(&dest).unwrap(), data);
    assert_eq!(done.attempts, 2);
    let seen = srv.seen();
    assert_eq!(seen[0].range, None);
    assert_eq!(seen[1].range.as_deref(), Some("bytes=30000-"));
}

#[test]
fn partial_file_of_a_killed_run_is_resumed() {
    let srv = Server::start();
    let data = body(50_000);
    let url = srv.route("/k", Reply::Body(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("k");
    fs::write(fetch::part_path(&dest), &data[..20_000]).unwrap();
    let done = fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(done.resumed_bytes, 20_000);
    assert_eq!(fs::read(&dest).unwrap(), data);
    assert_eq!(srv.seen()[0].range.as_deref(), Some("bytes=20000-"));
}

#[test]
fn stale_partial_file_is_discarded_after_a_bad_checksum() {
    let srv = Server::start();
    let data = body(50_000);
    let url = srv.route("/s", Reply::Body(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("s");
    fs::write(fetch::part_path(&dest), vec![0xAA; 20_000]).unwrap();
    fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(fs::read(&dest).unwrap(), data);
    assert_eq!(srv.seen()[1].range, None, "second try starts from scratch");
}

#[test]
fn server_that_ignores_range_restarts_cleanly() {
    let srv = Server::start();
    let data = body(40_000);
    let url = srv.route("/n", Reply::BodyNoRange(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("n");
    fs::write(fetch::part_path(&dest), &data[..1000]).unwrap();
    fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(fs::read(&dest).unwrap(), data);
}

#[test]
fn stalled_body_times_out_and_leaves_nothing() {
    let srv = Server::start();
    let data = body(100_000);
    let url = srv.route(
        "/stall",
        Reply::Stall {
            body: data.clone(),
            send: 1000,
            hold: Duration::from_secs(5),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.attempts = 2;
    let t = Instant::now();
    let err = fetch::download(&req(&url, &data), &dir.path().join("st"), &o).unwrap_err();
    assert!(matches!(err, FetchError::Stalled { .. }), "{err}");
    assert!(err.to_string().contains("stalled"));
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "gave up after {:?}",
        t.elapsed()
    );
    assert_empty(dir.path());
}

/// Download a body of `len` bytes, served by `reply`, with a cap of `max_size`; the error it
/// must end in, having left nothing behind.
fn oversize_download(len: usize, reply: fn(Vec<u8>) -> Reply, max_size: u64) -> FetchError {
    let srv = Server::start();
    let data = body(len);
    let url = srv.route("/big", reply(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let r = Request {
        url,
        sha256: sha256_hex(&data),
        size: None,
        max_size,
    };
    let err = fetch::download(&r, &dir.path().join("big"), &opts()).unwrap_err();
    assert_empty(dir.path());
    err
}

#[test]
fn announced_oversize_is_refused_before_reading() {
    let err = oversize_download(10_000, Reply::Body, 4096);
    assert!(
        matches!(err, FetchError::TooLarge { limit: 4096, .. }),
        "{err}"
    );
}

#[test]
fn unannounced_oversize_is_cut_off_while_streaming() {
    let err = oversize_download(200_000, Reply::Unannounced, 100_000);
    assert!(matches!(err, FetchError::TooLarge { .. }), "{err}");
}

#[test]
fn size_other_than_the_pinned_one_is_refused() {
    let srv = Server::start();
    let data = body(10_000);
    let url = srv.route("/sz", Reply::Body(data.clone()));
    let dir = tempfile::tempdir().unwrap();
    let mut r = req(&url, &data);
    r.size = Some(9_000);
    let err = fetch::download(&r, &dir.path().join("sz"), &opts()).unwrap_err();
    assert!(matches!(err, FetchError::SizeMismatch { .. }), "{err}");
    assert_empty(dir.path());
}

#[test]
fn redirect_on_loopback_is_followed() {
    let srv = Server::start();
    let data = body(3000);
    srv.route("/real", Reply::Body(data.clone()));
    let url = srv.route("/moved", Reply::Redirect("/real".into()));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("m");
    fetch::download(&req(&url, &data), &dest, &opts()).unwrap();
    assert_eq!(fs::read(&dest).unwrap(), data);
}

#[test]
fn redirect_to_plain_http_elsewhere_is_refused() {
    let srv = Server::start();
    let url = srv.route("/evil", Reply::Redirect("http://example.invalid/x".into()));
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::download(&req(&url, b"x"), &dir.path().join("e"), &opts()).unwrap_err();
    assert!(matches!(err, FetchError::InsecureUrl { .. }), "{err}");
    assert!(err.to_string().contains("not https"), "{err}");
    assert_eq!(srv.hits("/evil"), 1);
    assert_empty(dir.path());
}

#[test]
fn plain_http_to_a_remote_host_is_refused_without_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::download(
        &req("http://example.invalid/a", b"x"),
        &dir.path().join("a"),
        &opts(),
    )
    .unwrap_err();
    assert!(matches!(err, FetchError::InsecureUrl { .. }));
    assert_empty(dir.path());
}

#[test]
fn a_drip_that_never_stalls_ends_below_the_rate_floor_and_leaves_nothing() {
    let server = Server::start();
    let data = body(400);
    let url = server.route(
        "/drip.bin",
        Reply::Drip {
            body: data.clone(),
            every: Duration::from_millis(10),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let err =
        fetch::download(&req(&url, &data), &dir.path().join("drip.bin"), &opts()).unwrap_err();
    assert!(matches!(err, FetchError::TooSlow { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!("{url}: ")), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "{err}");
    assert_eq!(server.hits("/drip.bin"), 1, "not retried");
    assert_empty(dir.path());
}

/// reqwest hands back a redirect to a scheme it does not speak; on 4201ed1 that read only "the
/// server answered HTTP 302".
#[test]
fn a_redirect_to_a_file_url_names_where_it_pointed() {
    let server = Server::start();
    let data = body(10);
    let url = server.route("/r", Reply::Redirect("file:///etc/shadow".into()));
    let dir = tempfile::tempdir().unwrap();
    let err = fetch::download(&req(&url, &data), &dir.path().join("r.bin"), &opts()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{url}: the server redirects (HTTP 302) to file:///etc/shadow, which rvl does not follow")),
        "{msg}"
    );
    assert_eq!(server.hits("/r"), 1, "not retried");
    assert_empty(dir.path());
}

#[test]
fn a_refused_connection_is_not_retried() {
    // A port on loopback nothing listens on: refused at once, as offline is.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/a.bin");
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        attempts: 4,
        backoff: Duration::from_secs(30),
        ..opts()
    };
    // Four tries with a 30 s back-off would take minutes; one try takes none of it.
    let err = fetch::download(&req(&url, b"x"), &dir.path().join("a.bin"), &o).unwrap_err();
    assert!(err.is_unreachable(), "{err:?}");
    assert!(err.to_string().contains("cannot connect"), "{err}");
    assert_empty(dir.path());
}
