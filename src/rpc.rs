//! llama.cpp's RPC backend as data, no IO: where a worker (`ggml-rpc-server`) listens, and the
//! head's list of workers. The RPC protocol has no authentication: whoever reaches a worker's
//! port can allocate, read and write the memory it serves and run graphs on its GPU. So a worker
//! listens on loopback unless the user names an address, and a wildcard address (every
//! interface) is refused without `--allow-network`.
//!
//! The forms taken are the ones ggml-rpc handles the way they read: the worker binds IPv4 only
//! (`inet_addr`, which also reads `0`, `0x0` or `127.1` as addresses), and the client splits
//! `HOST:PORT` at the first colon, so IPv6 literals cannot be named at all.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// ggml-rpc-server's own default port.
pub const DEFAULT_PORT: u16 = 50052;
/// Where a worker listens unless told otherwise.
pub const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// The most workers one head takes: far more boards than a shelf holds, and a bound on the
/// checks rvl runs before starting llama-server.
pub const MAX_WORKERS: usize = 64;
/// Longest `HOST:PORT` accepted (a DNS name is at most 253 bytes).
const MAX_ENDPOINT: usize = 260;
/// The name llama.cpp's RPC worker binary has in rvl's build (`tools/rpc`).
pub const RPC_SERVER: &str = "ggml-rpc-server";

/// Why a worker must not listen everywhere by accident.
pub const NO_AUTH: &str = "llama.cpp's RPC has no authentication: anyone who reaches the port can use this board's GPU and read or overwrite the memory the worker serves";

/// A worker's listen address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen {
    pub addr: Ipv4Addr,
    pub port: u16,
}

impl Listen {
    /// Reachable from this board only.
    pub fn is_loopback(&self) -> bool {
        self.addr.is_loopback()
    }

    /// Every interface (0.0.0.0).
    pub fn is_wildcard(&self) -> bool {
        self.addr.is_unspecified()
    }
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.addr, self.port)
    }
}

/// The worker's listen address from `--host`, `--port` and `--allow-network`: loopback when no
/// host is named; an IPv4 address written a.b.c.d otherwise; 0.0.0.0 (or `::`, the IPv6
/// wildcard) only with `allow_network`.
pub fn listen(
    host: Option<&str>,
    port: Option<u16>,
    allow_network: bool,
) -> Result<Listen, String> {
    let port = port.unwrap_or(DEFAULT_PORT);
    if port == 0 {
        return Err(
            "--port 0: a worker needs a fixed port, the one the head's --rpc names".to_string(),
        );
    }
    let Some(host) = host else {
        return Ok(Listen {
            addr: LOOPBACK,
            port,
        });
    };
    let wildcard = |shown: &str| {
        format!(
            "--host {shown} listens on every interface of this board; {NO_AUTH}. Name the address of the interface on the boards' private network (--host 192.168.1.11), or add --allow-network when every network this board is on is trusted"
        )
    };
    if let Ok(addr) = host.parse::<Ipv4Addr>() {
        if addr.is_unspecified() && !allow_network {
            return Err(wildcard(host));
        }
        if addr.is_broadcast() || addr.is_multicast() {
            return Err(format!(
                "--host {host} is a broadcast or multicast address, not one a worker can listen on"
            ));
        }
        return Ok(Listen { addr, port });
    }
    let v6 = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(addr) = v6.parse::<Ipv6Addr>() {
        if addr.is_unspecified() {
            if !allow_network {
                return Err(wildcard(host));
            }
            // What `::` asks for on an IPv4-only listener.
            return Ok(Listen {
                addr: Ipv4Addr::UNSPECIFIED,
                port,
            });
        }
        return Err(format!(
            "--host {host}: ggml-rpc-server listens on IPv4 addresses only; name the board's IPv4 address (a.b.c.d)"
        ));
    }
    Err(format!(
        "--host {:?} is not an IPv4 address written a.b.c.d; ggml-rpc-server reads shortened forms such as `0` or `0x0` as 0.0.0.0 (every interface) and resolves no names, so rvl takes only the four-part form",
        host
    ))
}

/// One worker the head connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// `--rpc HOST:PORT,…` (clap has split the commas): each an IPv4 address (a.b.c.d) or a host
/// name and a port, none twice, at most [`MAX_WORKERS`].
pub fn workers(items: &[String]) -> Result<Vec<Endpoint>, String> {
    if items.len() > MAX_WORKERS {
        return Err(format!(
            "--rpc names {} workers; at most {MAX_WORKERS} are taken",
            items.len()
        ));
    }
    let mut out: Vec<Endpoint> = Vec::with_capacity(items.len());
    for item in items {
        let e = endpoint(item).map_err(|why| format!("--rpc {item:?}: {why}"))?;
        if out.contains(&e) {
            return Err(format!("--rpc names {e} twice"));
        }
        out.push(e);
    }
    if out.is_empty() {
        return Err("--rpc needs at least one HOST:PORT".into());
    }
    Ok(out)
}

/// The list as llama.cpp's `--rpc` takes it.
pub fn join(workers: &[Endpoint]) -> String {
    workers
        .iter()
        .map(Endpoint::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn endpoint(item: &str) -> Result<Endpoint, String> {
    if item.is_empty() || item.len() > MAX_ENDPOINT {
        return Err(format!(
            "expected HOST:PORT of at most {MAX_ENDPOINT} bytes"
        ));
    }
    if item.starts_with('[') || item.matches(':').count() > 1 {
        return Err(
            "llama.cpp's RPC client takes HOST:PORT with an IPv4 address or a host name, not an IPv6 address".into(),
        );
    }
    let Some((host, port)) = item.split_once(':') else {
        return Err(format!(
            "expected HOST:PORT (a worker started with `rvl serve --rpc-worker` listens on port {DEFAULT_PORT})"
        ));
    };
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0 && port.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("the port must be a number from 1 to 65535, got {port:?}"))?;
    if let Ok(addr) = host.parse::<Ipv4Addr>() {
        if addr.is_unspecified() || addr.is_broadcast() || addr.is_multicast() {
            return Err(format!("{host} is not the address of a worker"));
        }
    } else if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!(
            "{host:?} is a shortened IPv4 address; write all four parts (a.b.c.d)"
        ));
    } else if !host_name(host) {
        return Err(format!(
            "{host:?} is neither an IPv4 address (a.b.c.d) nor a host name"
        ));
    }
    Ok(Endpoint {
        host: host.to_string(),
        port,
    })
}

/// A DNS host name: dot-separated labels of letters, digits and `-`, none empty, none longer
/// than 63 bytes or starting or ending with `-`; at most 253 bytes.
fn host_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_worker_listens_on_loopback_unless_an_address_is_named() {
        let l = listen(None, None, false).unwrap();
        assert_eq!(l.to_string(), "127.0.0.1:50052");
        assert!(l.is_loopback());
        let l = listen(Some("192.168.1.11"), Some(50053), false).unwrap();
        assert_eq!(l.to_string(), "192.168.1.11:50053");
        assert!(!l.is_loopback() && !l.is_wildcard());
        assert!(listen(None, Some(0), false)
            .unwrap_err()
            .contains("--port 0"));
    }

    #[test]
    fn every_wildcard_form_is_refused_without_allow_network_and_says_why() {
        for host in ["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0", "::0"] {
            let err = listen(Some(host), None, false).unwrap_err();
            assert!(err.contains("every interface"), "{host}: {err}");
            assert!(err.contains("no authentication"), "{host}: {err}");
            assert!(err.contains("--allow-network"), "{host}: {err}");
            let ok = listen(Some(host), None, true).unwrap();
            assert!(ok.is_wildcard(), "{host}");
            assert_eq!(ok.to_string(), "0.0.0.0:50052");
        }
        // inet_addr() reads these as 0.0.0.0 (or other addresses): only a.b.c.d is taken,
        // even with --allow-network.
        for host in [
            "0",
            "0x0",
            "0.0",
            "00.0.0.0",
            "000.000.000.000",
            "127.1",
            "",
            "*",
            "localhost",
            " 127.0.0.1",
        ] {
            for allow in [false, true] {
                let err = listen(Some(host), None, allow).unwrap_err();
                assert!(err.contains("a.b.c.d"), "{host:?}: {err}");
            }
        }
    }

    #[test]
    fn ipv6_broadcast_and_multicast_are_not_listen_addresses() {
        assert!(listen(Some("::1"), None, true)
            .unwrap_err()
            .contains("IPv4 addresses only"));
        assert!(listen(Some("255.255.255.255"), None, true)
            .unwrap_err()
            .contains("broadcast"));
        assert!(listen(Some("224.0.0.1"), None, true).is_err());
    }

    #[test]
    fn workers_are_host_port_pairs_named_once() {
        let w = workers(&strs(&["192.168.1.11:50052", "rk1-2.lan:50053"])).unwrap();
        assert_eq!(join(&w), "192.168.1.11:50052,rk1-2.lan:50053");
        let err = |v: &[&str]| workers(&strs(v)).unwrap_err();
        assert!(err(&["a:1", "a:1"]).contains("twice"));
        assert!(err(&["a"]).contains("HOST:PORT"));
        assert!(err(&["a:0"]).contains("1 to 65535"));
        assert!(err(&["a:+5"]).contains("1 to 65535"));
        assert!(err(&["a:65536"]).contains("1 to 65535"));
        assert!(err(&["[::1]:50052"]).contains("IPv6"));
        assert!(err(&["::1:50052"]).contains("IPv6"));
        assert!(err(&["127.1:50052"]).contains("four parts"));
        assert!(err(&["0.0.0.0:50052"]).contains("not the address of a worker"));
        assert!(err(&["a b:1"]).contains("host name"));
        assert!(err(&["-x:1"]).contains("host name"));
        assert!(err(&["x\n:1"]).contains("\\n"), "control bytes are escaped");
        assert!(err(&[]).contains("at least one"));
        let many: Vec<String> = (1..=65).map(|i| format!("w{i}:1")).collect();
        assert!(workers(&many).unwrap_err().contains("at most 64"));
    }
}
