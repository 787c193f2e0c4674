//! A tiny HTTP/1.1 server on 127.0.0.1 for download tests: each route answers in a scripted way
//! (a good body, a 404, a body cut short, a stall, a slow drip, a redirect, a body that honours
//! `Range`), and
//! every request is recorded so tests can check what the client asked for.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How a route answers.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with the body, or 206 for a `Range: bytes=N-` request.
    Body(Vec<u8>),
    /// Like `Body`, but ignores `Range` (always the whole body with 200).
    BodyNoRange(Vec<u8>),
    /// A status with an empty body.
    Status(u16),
    /// Announce the whole length, send only the first `send` bytes, close.
    /// From the `good_after`-th request on (counting from 1) answer like `Body`.
    Truncated {
        body: Vec<u8>,
        send: usize,
        good_after: usize,
    },
    /// Announce the whole length, send `send` bytes, then go silent for `hold`.
    Stall {
        body: Vec<u8>,
        send: usize,
        hold: Duration,
    },
    /// 302 to another path on this server or any absolute URL.
    Redirect(String),
    /// Send the body without a Content-Length (close-delimited).
    Unannounced(Vec<u8>),
    /// Announce the whole length, then send one byte every `every`: never silent long enough
    /// to stall, and never done.
    Drip { body: Vec<u8>, every: Duration },
}

#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
}

pub struct Server {
    pub base: String,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (r, s) = (routes.clone(), seen.clone());
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, s) = (r.clone(), s.clone());
                thread::spawn(move || {
                    let _ = serve(stream, &r, &s);
                });
            }
        });
        Server { base, routes, seen }
    }

    pub fn route(&self, path: &str, reply: Reply) -> String {
        self.routes.lock().unwrap().insert(path.to_string(), reply);
        format!("{}{}", self.base, path)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn hits(&self, path: &str) -> usize {
        self.seen().iter().filter(|s| s.path == path).count()
    }
}

fn serve(
    stream: TcpStream,
    routes: &Mutex<HashMap<String, Reply>>,
    seen: &Mutex<Vec<Seen>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
        }
    }
    let nth = {
        let mut s = seen.lock().unwrap();
        s.push(Seen {
            path: path.clone(),
            range: range.clone(),
        });
        s.iter().filter(|x| x.path == path).count()
    };
    let reply = routes
        .lock()
        .unwrap()
        .get(&path)
        .cloned()
        .unwrap_or(Reply::Status(404));
    let mut out = stream;
    match reply {
        Reply::Body(body) => send_body(&mut out, &body, range.as_deref()),
        Reply::BodyNoRange(body) => send_body(&mut out, &body, None),
        Reply::Status(code) => write!(
            out,
            "HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Reply::Truncated {
            body,
            send,
            good_after,
        } => {
            if nth >= good_after {
                send_body(&mut out, &body, range.as_deref())
            } else {
                send_cut(&mut out, &body, send)
            }
        }
        Reply::Stall { body, send, hold } => {
            send_cut(&mut out, &body, send)?;
            thread::sleep(hold);
            Ok(())
        }
        Reply::Redirect(to) => write!(
            out,
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Reply::Drip { body, every } => {
            send_cut(&mut out, &body, 0)?;
            for b in &body {
                thread::sleep(every);
                out.write_all(&[*b])?;
                out.flush()?;
            }
            Ok(())
        }
        Reply::Unannounced(body) => {
            write!(out, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")?;
            out.write_all(&body)?;
            out.flush()
        }
    }
}

/// Announce all of `body`, send only its first `send` bytes.
fn send_cut(out: &mut TcpStream, body: &[u8], send: usize) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    out.write_all(&body[..send])?;
    out.flush()
}

fn send_body(out: &mut TcpStream, body: &[u8], range: Option<&str>) -> std::io::Result<()> {
    let start = range
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok());
    match start {
        Some(s) if s >= body.len() => write!(
            out,
            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Some(s) => {
            write!(
                out,
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {}-{}/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                s,
                body.len() - 1,
                body.len(),
                body.len() - s
            )?;
            out.write_all(&body[s..])?;
            out.flush()
        }
        None => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            out.write_all(body)?;
            out.flush()
        }
    }
}

/// Lowercase hex sha256 of bytes.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}
