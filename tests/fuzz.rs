//! Fuzzing on stable: arbitrary bytes, and byte-level mutations of our own fixtures
//! (`tests/fixtures/fuzz-seeds/<parser>/`, copied from `../shared/reference-fixtures/`), into
//! every parser that reads what an inspected system or a user hands rvl. Property: no panic,
//! and each input is handled within a time bound (no hang, no quadratic blow-up).
//!
//! The normal `cargo test` runs a CI-sized number of cases per parser; `FUZZ_CASES=N` runs N
//! (README, "Fuzzing"). A failure prints the smallest input proptest shrank it to.

use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use rvl::bootcfg::{armbian::ArmbianEnv, extlinux::Extlinux, kver, ubootmenu};
use rvl::host::{devicetree, initramfs, sysfs};

/// Cases per parser unless FUZZ_CASES says otherwise: a few thousand together stay well under a
/// minute in a debug build on two cores.
const CI_CASES: u32 = 2000;

/// Longest one input may take (debug build, loaded machine). The parsers are linear and small
/// inputs take microseconds; only a hang or a blow-up gets near this.
const PER_INPUT: Duration = Duration::from_secs(2);

/// Decompressed-byte cap for the initramfs target, so a mutated bomb stays cheap to run into.
const INITRAMFS_CAP: u64 = 1 << 20;

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_CASES)
}

/// The seed files of one parser, sorted by name.
fn seeds(dir: &str) -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz-seeds")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let seeds: Vec<_> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(!seeds.is_empty(), "no seeds in {}", path.display());
    seeds
}

/// One edit of a seed: overwrite, insert or delete a byte at a position (taken modulo the length).
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    /// Repeat a slice (start, len, times): grows inputs the way real files repeat lines.
    Repeat(usize, usize, usize),
}

fn mutate(mut data: Vec<u8>, edits: &[Edit], truncate: Option<usize>) -> Vec<u8> {
    for e in edits {
        let len = data.len();
        match *e {
            Edit::Set(i, b) if len > 0 => data[i % len] = b,
            Edit::Insert(i, b) => data.insert(i % (len + 1), b),
            Edit::Delete(i) if len > 0 => {
                data.remove(i % len);
            }
            Edit::Repeat(start, n, times) if len > 0 => {
                let start = start % len;
                let end = (start + n % 64 + 1).min(len);
                let chunk = data[start..end].to_vec();
                for _ in 0..times % 8 {
                    data.splice(end..end, chunk.iter().copied());
                }
            }
            _ => {}
        }
    }
    if let Some(t) = truncate {
        data.truncate(t % (data.len() + 1));
    }
    data
}

fn edit() -> impl Strategy<Value = Edit> {
    // Bytes that matter to the formats: separators, quotes, NUL, newlines, high bytes.
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(b"\0\n\r\t =:\"'{}[],#-/.\\\x1b\xff0".to_vec()),
    ];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(s, n, t)| Edit::Repeat(s, n, t)),
    ]
}

/// Half fresh random bytes, half mutated seeds.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..1024),
        (
            0..n,
            prop::collection::vec(edit(), 0..16),
            prop::option::of(any::<usize>())
        )
            .prop_map(move |(i, edits, t)| mutate(seeds[i].clone(), &edits, t)),
    ]
}

/// Run `parse` on `cases()` inputs from `seed_dir`; a panic or a slow input fails the test.
fn fuzz(seed_dir: &str, parse: impl Fn(&[u8])) {
    fuzz_seeds(seed_dir, seeds(seed_dir), parse);
}

/// [`fuzz`] with the seeds given (`name` labels the run).
fn fuzz_seeds(name: &str, seeds: Vec<Vec<u8>>, parse: impl Fn(&[u8])) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    runner
        .run(&input(seeds), |bytes| {
            let t = Instant::now();
            parse(&bytes);
            let took = t.elapsed();
            prop_assert!(took < PER_INPUT, "{} bytes took {took:?}", bytes.len());
            Ok(())
        })
        .unwrap_or_else(|e| panic!("fuzz {name}: {e}"));
    eprintln!("fuzz {name}: {} cases in {:?}", cases(), started.elapsed());
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn fuzz_device_tree_strings() {
    fuzz("dt", |b| {
        for s in devicetree::parse_string_list(b) {
            devicetree::is_mali_compatible(&s);
        }
        devicetree::parse_string(b);
    });
}

#[test]
fn fuzz_uevent() {
    fuzz("uevent", |b| {
        sysfs::parse_uevent(&text(b));
    });
}

#[test]
fn fuzz_icd_json() {
    fuzz("icd", |b| {
        let t = text(b);
        if let Ok(m) = rvl::icd::parse_manifest(&t) {
            rvl::icd::is_panvk(&m.library_path);
        }
        // The loader-filter globs come from the environment: pattern and name both arbitrary.
        let (p, n) = t.split_at(
            t.char_indices()
                .nth(t.chars().count() / 2)
                .map_or(0, |c| c.0),
        );
        rvl::icd::glob_match(p, n);
    });
}

#[test]
fn fuzz_extlinux() {
    fuzz("extlinux", |b| {
        let t = text(b);
        let mut conf = Extlinux::parse(&t);
        assert_eq!(conf.render(), t, "an unedited parse renders the input back");
        let labels: Vec<String> = conf.entries().iter().map(|e| e.label.clone()).collect();
        for e in conf.entries() {
            e.kernel_release();
        }
        conf.default_entry();
        if let Some(l) = labels.last() {
            conf.set_default(l);
            let again = Extlinux::parse(&conf.render());
            assert_eq!(
                again.default_label(),
                Some(l.as_str()),
                "set_default sticks"
            );
        }
        for line in t.lines() {
            rvl::bootcfg::extlinux::release_from_kernel_path(line);
        }
    });
}

#[test]
fn fuzz_u_boot_menu_conf() {
    fuzz("ubootmenu", |b| {
        let t = text(b);
        ubootmenu::parse_assignments(&t);
        let menu = ubootmenu::UbootMenu::merge([(
            "/etc/u-boot-menu/conf.d/x.conf".to_string(),
            ubootmenu::Fragment::Text(&t),
        )]);
        menu.default_label();
    });
}

#[test]
fn fuzz_armbian_env() {
    fuzz("armbian", |b| {
        let t = text(b);
        let mut env = ArmbianEnv::parse(&t);
        env.overlays();
        env.add_overlay("panthor-gpu");
        assert!(
            ArmbianEnv::parse(&env.render())
                .overlays()
                .contains(&"panthor-gpu".to_string()),
            "an added overlay survives a render and parse"
        );
        env.remove_overlay("panthor-gpu");
        env.set("extraargs", "cma=256M");
        env.render();
    });
}

#[test]
fn fuzz_firmware_header() {
    fuzz("firmware", |b| {
        let _ = rvl::firmware::CsfHeader::parse(b);
    });
}

fn compressed_variants(cpio: &[u8]) -> Vec<Vec<u8>> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(cpio).unwrap();
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(cpio).unwrap();
    let zst = ruzstd::encoding::compress_to_vec(cpio, ruzstd::encoding::CompressionLevel::Fastest);
    vec![gz.finish().unwrap(), xz.finish().unwrap(), zst]
}

#[test]
fn fuzz_initramfs() {
    // The plain cpio fixture, and the same archive behind each compressor.
    let plain = seeds("initramfs");
    let mut all = plain.clone();
    for p in &plain {
        all.extend(compressed_variants(p));
    }
    fuzz_seeds("initramfs", all, |bytes| {
        let _ = initramfs::find_any_capped(
            Cursor::new(bytes.to_vec()),
            |n| n.ends_with("mali_csffw.bin"),
            INITRAMFS_CAP,
        );
    });
}

#[test]
fn fuzz_profiles() {
    fuzz("profile", |b| {
        let _ = rvl::profile::parse("fuzz.yaml", &text(b));
    });
}

#[test]
fn fuzz_manifest() {
    fuzz("manifest", |b| {
        let _ = rvl::manifest::Manifest::parse(&text(b), "fuzz.yaml");
    });
}

#[cfg(feature = "bench")]
#[test]
fn fuzz_saved_bench_json() {
    fuzz("bench", |b| {
        let _ = rvl::bench::compare::parse(&text(b), "fuzz.json");
    });
}

/// What llama-bench printed (its `-o json` array) and a saved prefill document, as
/// smoke-bench --gguf, --compare and rvl serve read them.
#[test]
fn fuzz_llama_bench_output_and_saved_prefill_json() {
    let line = br#"[
  {
    "build_commit": "8cf427ff", "build_number": 5163, "gpu_info": "Mali-G610 MC4",
    "backends": "Vulkan", "model_type": "llama 7B Q4_0", "model_n_params": 6740000000,
    "n_ubatch": 64, "n_gpu_layers": 99, "n_prompt": 512, "n_gen": 0,
    "avg_ts": 21.0, "stddev_ts": 0.3, "samples_ts": [ 21.1, 20.9 ]
  }
]
"#;
    fuzz_seeds("llama-bench", vec![line.to_vec()], |b| {
        let t = text(b);
        let _ = rvl::prefill::parse::parse_output(&t, 512);
        let _ = rvl::prefill::parse::classify(
            rvl::prefill::report::Side::Gpu,
            t.len() % 2 == 0,
            512,
            &rvl::prefill::parse::Ended::Exit(0),
            &t,
            &t,
        );
    });
    let saved = br#"{"schema_version": 1, "prefill": {"tool": "rvl smoke-bench 0.1.0",
      "model": {"path": "m.gguf", "file_name": "m.gguf", "bytes": 4, "model_type": null, "n_params": null},
      "prompt_tokens": 512, "llama_bench": {"path": "lb"}, "vulkan_device": null, "cpu_threads": 4,
      "case_timeout_s": 300, "ubatches": [{"ubatch": 64, "cpu": null, "gpu_cpu_ratio": null,
      "gpu_prompt_5000_s": 238.0, "gpu": {"side": "gpu", "status": "ok", "tokens_per_s": 21.0,
      "stddev_tokens_per_s": null, "exit": "exit status 0", "detail": null, "seconds": 1.0,
      "argv": ["lb"]}}], "best_gpu_ubatch": 64, "notes": [], "problems": false}}"#;
    assert!(rvl::prefill::saved::parse(std::str::from_utf8(saved).unwrap(), "seed").is_ok());
    fuzz_seeds("saved-prefill", vec![saved.to_vec()], |b| {
        if let Ok(r) = rvl::prefill::saved::parse(&text(b), "fuzz.json") {
            let _ =
                rvl::prefill::saved::serve_ubatch(&r, "m.gguf", "/opt/rvl/llama.cpp-1-rvl1", &[]);
        }
    });
}

#[test]
fn fuzz_kernel_releases_and_config() {
    fuzz("kernel", |b| {
        let t = text(b);
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        kver::sort_releases_desc(&mut lines);
        rvl::kernelcfg::KernelVersion::parse(&t);
        rvl::kernelcfg::looks_like_vendor_release(&t);
        rvl::kernelcfg::KernelConfig::parse(&t);
    });
}

#[test]
fn fuzz_image_environment_and_shell_quoting() {
    fuzz("environment", |b| {
        let t = text(b);
        for (name, value) in rvl::host::env::parse_assignments(&t) {
            assert!(
                !name.is_empty() && !value.contains('\n'),
                "{name}={value:?}"
            );
        }
        rvl::shell::quote(&t);
    });
}

#[test]
fn fuzz_gguf() {
    use rvl::gguf::llama_model::{write_model, LlamaParams};
    use rvl::gguf::write::{strings, write, TensorSpec};
    use rvl::gguf::{GgmlType, Value, ValueType};
    // Seeds made by rvl's own writer: a whole (small) llama model with a tokenizer, and a
    // file with every metadata type, a nested array and tensors of each type.
    let tokenizer = vec![
        (
            "tokenizer.ggml.model".to_string(),
            Value::String("llama".into()),
        ),
        (
            "tokenizer.ggml.tokens".to_string(),
            strings(&["<unk>", "<s>", "</s>", "a"]),
        ),
        (
            "tokenizer.ggml.scores".to_string(),
            Value::Array(ValueType::F32, vec![Value::F32(0.0); 4]),
        ),
    ];
    let small = LlamaParams {
        layers: 1,
        hidden: 32,
        ffn: 32,
        heads: 1,
        kv_heads: 1,
        weight_type: GgmlType::Q4_0,
        ..LlamaParams::default()
    };
    let mut model = Vec::new();
    write_model(&mut model, &small, tokenizer).unwrap();
    let meta = vec![
        ("general.alignment".to_string(), Value::U32(64)),
        ("a".to_string(), Value::I8(-1)),
        ("b".to_string(), Value::U16(2)),
        ("c".to_string(), Value::I64(-3)),
        ("d".to_string(), Value::F64(4.0)),
        ("e".to_string(), Value::Bool(true)),
        (
            "f".to_string(),
            Value::Array(
                ValueType::Array,
                vec![Value::Array(ValueType::U8, vec![Value::U8(1)])],
            ),
        ),
    ];
    let tensors = [
        TensorSpec::new("x", &[4], GgmlType::F32),
        TensorSpec::new("y", &[32, 2], GgmlType::Q4_0),
        TensorSpec::new("z", &[2, 2, 1, 1], GgmlType::F16),
    ];
    let mut typed = Vec::new();
    write(&mut typed, &meta, &tensors, |i| {
        vec![7; tensors[i].byte_size().unwrap() as usize]
    })
    .unwrap();
    fuzz_seeds("gguf", vec![model, typed], |bytes| {
        let _ = rvl::gguf::read::parse(bytes, true);
        let _ = rvl::gguf::read::parse(bytes, false);
    });
}

/// Run `parse` on `bytes` on a thread and wait at most [`PER_INPUT`]: a parser that is slow on
/// large inputs fails here within the bound instead of holding the test for hours.
fn within_bound(name: &str, bytes: Vec<u8>, parse: fn(&[u8])) {
    let (tx, rx) = std::sync::mpsc::channel();
    let len = bytes.len();
    std::thread::spawn(move || {
        let t = Instant::now();
        parse(&bytes);
        let _ = tx.send(t.elapsed());
    });
    match rx.recv_timeout(PER_INPUT) {
        Ok(took) => assert!(took < PER_INPUT, "{name}: {len} bytes took {took:?}"),
        Err(_) => panic!("{name}: {len} bytes not parsed within {PER_INPUT:?}"),
    }
}

/// GGUF headers of 100k distinct metadata keys and of 100k tensors (2-3 MiB each; a 64 MiB
/// header holds 3M): each name is checked against the others. A linear scan per name (main at
/// 4201ed1) took 3.6 s at 40k keys and 16 s at 80k in this debug build, so about 25 s here;
/// with sets, 3M keys take about 5 s (`cargo run --example gguf-parse-time -- 40000 3000000`).
#[test]
fn fuzz_gguf_headers_with_many_names_parse_within_the_bound() {
    fn push_str(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&(s.len() as u64).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    const N: u64 = 100_000;
    let mut keys = b"GGUF\x03\0\0\0".to_vec();
    keys.extend_from_slice(&0u64.to_le_bytes());
    keys.extend_from_slice(&N.to_le_bytes());
    for i in 0..N {
        push_str(&mut keys, &format!("general.key.{i}"));
        keys.extend_from_slice(&4u32.to_le_bytes()); // u32
        keys.extend_from_slice(&(i as u32).to_le_bytes());
    }
    let mut tensors = b"GGUF\x03\0\0\0".to_vec();
    tensors.extend_from_slice(&N.to_le_bytes());
    tensors.extend_from_slice(&0u64.to_le_bytes());
    for i in 0..N {
        push_str(&mut tensors, &format!("blk.{i}.ffn_up.weight"));
        tensors.extend_from_slice(&1u32.to_le_bytes());
        tensors.extend_from_slice(&8u64.to_le_bytes());
        tensors.extend_from_slice(&0u32.to_le_bytes()); // f32: 32 bytes
        tensors.extend_from_slice(&(i * 32).to_le_bytes());
    }
    fn both(b: &[u8]) {
        assert!(rvl::gguf::read::parse(b, false).is_ok());
        let _ = rvl::gguf::read::parse(b, true);
    }
    within_bound("100k metadata keys", keys, both);
    within_bound("100k tensors", tensors, both);
}
