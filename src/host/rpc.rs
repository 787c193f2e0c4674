//! llama.cpp RPC workers as the head sees them before it starts anything: does each accept a
//! connection, and does llama.cpp's own client list a device from each (`llama-server --rpc …
//! --list-devices` runs the RPC handshake, so a worker of an incompatible protocol version shows
//! here, not as llama-server's abort). The worker side needs nothing from here: rvl execs
//! ggml-rpc-server.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::rpc::Endpoint;

/// How long one worker may take to accept a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// `llama-server --list-devices` loads the head's Vulkan driver and greets every worker.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `e` accepts a TCP connection within `limit` (each IPv4 address its name resolves
/// to is tried: llama.cpp's client connects over IPv4). The connection is closed at once.
pub fn connects(e: &Endpoint, limit: Duration) -> Result<(), String> {
    let addrs: Vec<SocketAddr> = (e.host.as_str(), e.port)
        .to_socket_addrs()
        .map_err(|err| format!("{e}: cannot resolve {}: {err}", e.host))?
        .filter(SocketAddr::is_ipv4)
        .take(8)
        .collect();
    if addrs.is_empty() {
        return Err(format!("{e}: {} has no IPv4 address", e.host));
    }
    let mut last = String::new();
    for a in &addrs {
        match TcpStream::connect_timeout(a, limit) {
            Ok(_) => return Ok(()),
            Err(err) => last = err.to_string(),
        }
    }
    Err(format!(
        "{e} does not answer ({last}); start the worker there with `rvl serve --rpc-worker --host ADDR --port {}` (a worker listens on 127.0.0.1 only unless given --host)",
        e.port
    ))
}

/// Every worker answers and llama.cpp lists a device from each: `server` (the head's
/// llama-server) is run with `--rpc LIST --list-devices` and `env`. The device lines per
/// worker, in order, or what is wrong. Run on the running system only.
pub fn check(
    server: &str,
    env: &BTreeMap<String, String>,
    workers: &[Endpoint],
) -> Result<Vec<String>, String> {
    let down: Vec<String> = workers
        .iter()
        .filter_map(|w| connects(w, CONNECT_TIMEOUT).err())
        .collect();
    if !down.is_empty() {
        return Err(down.join("\n"));
    }
    let args = vec!["--rpc".to_string(), crate::rpc::join(workers)];
    let listed = super::llama::run_list_devices(server, &args, env, LIST_TIMEOUT);
    match_workers(workers, &listed.devices, listed.error.as_deref())
}

/// Each worker's line in llama.cpp's device list (`RPC0: 192.168.1.11:50052 (7936 MiB, …)`).
fn match_workers(
    workers: &[Endpoint],
    devices: &[String],
    error: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut lines = Vec::with_capacity(workers.len());
    for w in workers {
        let shown = w.to_string();
        let line = devices.iter().find(|d| {
            d.split_once(": ").is_some_and(|(name, rest)| {
                name.starts_with("RPC")
                    && (rest == shown || rest.starts_with(&format!("{shown} (")))
            })
        });
        match line {
            Some(l) => lines.push(l.clone()),
            None => {
                return Err(format!(
                    "{shown} answers, but llama.cpp lists no device from it{}",
                    error
                        .map(|e| format!(" (llama-server --list-devices {e})"))
                        .unwrap_or_default()
                ))
            }
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn ep(host: &str, port: u16) -> Endpoint {
        Endpoint {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn a_listening_port_answers_and_a_closed_one_says_how_to_start_the_worker() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(connects(&ep("127.0.0.1", port), CONNECT_TIMEOUT), Ok(()));
        assert_eq!(connects(&ep("localhost", port), CONNECT_TIMEOUT), Ok(()));
        drop(l);
        let err = connects(&ep("127.0.0.1", port), CONNECT_TIMEOUT).unwrap_err();
        assert!(
            err.starts_with(&format!("127.0.0.1:{port} does not answer (")),
            "{err}"
        );
        assert!(err.contains("rvl serve --rpc-worker --host ADDR"), "{err}");
    }

    #[test]
    fn each_worker_must_have_its_own_line_in_the_device_list() {
        let w = [ep("127.0.0.1", 5), ep("rk1-2", 6)];
        let devices = vec![
            "Vulkan0: Mali-G610 MC4 (7936 MiB, 7936 MiB free)".to_string(),
            "RPC0: 127.0.0.1:5 (2048 MiB, 2048 MiB free)".to_string(),
            "RPC1: rk1-2:6 (7936 MiB, 7936 MiB free)".to_string(),
        ];
        assert_eq!(
            match_workers(&w, &devices, None).unwrap(),
            vec![devices[1].clone(), devices[2].clone()]
        );
        // 127.0.0.1:5 must not match 127.0.0.1:50 (a prefix of the text).
        let err = match_workers(
            &w[..1],
            &["RPC0: 127.0.0.1:50 (1 MiB, 1 MiB free)".to_string()],
            Some("exited with signal: 6: Failed to connect"),
        )
        .unwrap_err();
        assert_eq!(err, "127.0.0.1:5 answers, but llama.cpp lists no device from it (llama-server --list-devices exited with signal: 6: Failed to connect)");
    }
}
