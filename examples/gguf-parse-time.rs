//! Time rvl's GGUF reader on headers with many metadata keys (and as many tensors), the shape
//! of a hostile file that makes a reader with a quadratic duplicate check run for hours:
//!
//!   cargo run --example gguf-parse-time -- 10000 20000 40000 3000000
//!
//! Each argument is a key count; the header is built by hand (not by rvl's writer), so the
//! reader is timed alone. Prints the header's size and the parse time per count.

use std::time::Instant;

fn push_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// A GGUF v3 header with `keys` u8 metadata values and `tensors` one-dimensional f32 tensors
/// of one element, all distinct names.
fn header(keys: u64, tensors: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&tensors.to_le_bytes());
    b.extend_from_slice(&keys.to_le_bytes());
    for i in 0..keys {
        push_str(&mut b, &format!("k{i}"));
        b.extend_from_slice(&0u32.to_le_bytes()); // u8
        b.push(1);
    }
    for i in 0..tensors {
        push_str(&mut b, &format!("t{i}"));
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // f32
        b.extend_from_slice(&(i * 32).to_le_bytes());
    }
    b
}

fn main() {
    let counts: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a key count"))
        .collect();
    for n in counts {
        for (keys, tensors) in [(n, 0), (0, n)] {
            let h = header(keys, tensors);
            let t = Instant::now();
            let parsed = rvl::gguf::read::parse(&h, false).expect("the header parses");
            let took = t.elapsed();
            assert_eq!(
                parsed.metadata.len() as u64 + parsed.tensors.len() as u64,
                n
            );
            println!(
                "{keys:>8} keys {tensors:>8} tensors  {:>6.1} MiB  {:>9.3} s",
                h.len() as f64 / (1 << 20) as f64,
                took.as_secs_f64()
            );
        }
    }
}
