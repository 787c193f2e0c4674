//! The real llama.cpp in tests: the pinned, patched build from `scripts/llama-vulkan/build.sh`
//! (`RVL_LLAMA_BENCH` names its llama-bench; llama-server and ggml-rpc-server sit beside it),
//! the tiny random-weight model rvl's GGUF writer makes from the tree's vocab, and servers
//! started on free loopback ports that never outlive the test that started them.
//!
//! Without `RVL_LLAMA_BENCH` a test prints SKIPPED, unless `RVL_REQUIRE_LLAMA=1` (CI) makes that
//! a failure, so these tests cannot pass vacuously.

#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rvl::gguf::llama_model::{tokenizer_metadata, write_model, LlamaParams, Model};
use rvl::gguf::read;

pub struct Llama {
    pub bench: PathBuf,
    pub vocab: PathBuf,
}

impl Llama {
    /// A binary of the same build (`llama-server`, `ggml-rpc-server`), which must be there.
    pub fn bin(&self, name: &str) -> PathBuf {
        let p = self.bench.with_file_name(name);
        assert!(
            p.is_file(),
            "{} is missing beside RVL_LLAMA_BENCH (scripts/llama-vulkan/build.sh builds it)",
            p.display()
        );
        p
    }
}

pub fn llama() -> Option<Llama> {
    let require = std::env::var("RVL_REQUIRE_LLAMA").is_ok_and(|v| v == "1");
    let Some(bench) = std::env::var_os("RVL_LLAMA_BENCH").map(PathBuf::from) else {
        if require {
            panic!("RVL_REQUIRE_LLAMA=1 but RVL_LLAMA_BENCH is not set (scripts/llama-vulkan/build.sh prints it)");
        }
        eprintln!("SKIPPED: RVL_LLAMA_BENCH is not set; set RVL_REQUIRE_LLAMA=1 to make this fail");
        return None;
    };
    assert!(
        bench.is_file(),
        "RVL_LLAMA_BENCH={} is not a file",
        bench.display()
    );
    // build.sh's layout: KEY/build/bin/llama-bench beside KEY/src (the patched tree)
    let vocab = std::env::var_os("RVL_LLAMA_VOCAB")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            bench
                .ancestors()
                .nth(3)
                .unwrap_or(Path::new("/"))
                .join("src/models/ggml-vocab-llama-spm.gguf")
        });
    assert!(
        vocab.is_file(),
        "no vocab file at {} (set RVL_LLAMA_VOCAB)",
        vocab.display()
    );
    Some(Llama { bench, vocab })
}

/// The tiny model (2 layers, hidden 128, f16) in `dir`, and its parameter count.
pub fn tiny_model(l: &Llama, dir: &Path) -> (PathBuf, u64) {
    let bytes = fs::read(&l.vocab).unwrap();
    let vocab = read::parse(&bytes, true).unwrap();
    let tokenizer = tokenizer_metadata(&vocab).unwrap();
    let p = LlamaParams::default();
    let params = Model::describe(&p, tokenizer.clone())
        .unwrap()
        .tensors
        .iter()
        .map(|t| t.dims.iter().product::<u64>())
        .sum();
    let path = dir.join("tiny.gguf");
    let mut f = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    write_model(&mut f, &p, tokenizer).unwrap();
    drop(f);
    (path, params)
}

/// A loopback port nobody listens on right now (the OS picks it; [`Server::start`] tries
/// another when the port is taken before the server binds it).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A server process that is killed and reaped when dropped (also when the test panics), and
/// is sent SIGKILL by the kernel if the thread that started it goes away first.
pub struct Server {
    pub name: String,
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Start `cmd` (its port given by `with_port`) and wait until the port accepts a connection,
    /// at most `limit`. A port taken meanwhile gets a fresh one (three tries).
    pub fn start(
        name: &str,
        dir: &Path,
        limit: Duration,
        with_port: impl Fn(u16) -> Command,
    ) -> Server {
        let mut last = String::new();
        for attempt in 0..3 {
            let port = free_port();
            let log = dir.join(format!("{name}-{attempt}.log"));
            let mut cmd = with_port(port);
            let out = fs::File::create(&log).unwrap();
            cmd.stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out);
            // SAFETY: only an async-signal-safe prctl between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    rustix::process::set_parent_process_death_signal(Some(
                        rustix::process::Signal::KILL,
                    ))
                    .map_err(std::io::Error::from)
                });
            }
            let child = cmd.spawn().unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut s = Server {
                name: name.to_string(),
                port,
                child,
                log,
            };
            let start = Instant::now();
            loop {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return s;
                }
                if let Ok(Some(status)) = s.child.try_wait() {
                    last = format!("{name} exited with {status} before listening:\n{}", s.log());
                    break;
                }
                if start.elapsed() > limit {
                    panic!(
                        "{name} did not listen on 127.0.0.1:{port} within {} s:\n{}",
                        limit.as_secs(),
                        s.log()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // Only a port lost to someone else is worth another try.
            if !last.contains("bind") && !last.contains("in use") {
                break;
            }
        }
        panic!("{last}");
    }

    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What it printed so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
