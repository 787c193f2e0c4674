//! Look for a file inside an initramfs image without unpacking it: a sequence of cpio "newc"
//! archives, each possibly compressed (gzip, zstd, xz), separated by zero padding, optionally
//! behind a 64-byte U-Boot legacy header (Armbian's uInitrd). Needed because a built-in panthor
//! probes before the root file system exists, so its firmware must be in here.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::rc::Rc;

const UBOOT_MAGIC: [u8; 4] = [0x27, 0x05, 0x19, 0x56];
const UBOOT_HEADER: u64 = 64;
const NEWC_HEADER: usize = 110;
const MAX_NAME: usize = 4096;

/// Decompressed bytes read from one image before giving up: real initramfs images are tens of
/// MiB; a few KiB of zstd can claim gigabytes (a decompression bomb).
pub const MAX_DECOMPRESSED: u64 = 512 << 20;

/// True when any member name satisfies `wanted`. Errors for formats it cannot read, and
/// ("too large") for images that decompress to more than [`MAX_DECOMPRESSED`].
pub fn find_any<R: BufRead + 'static>(
    reader: R,
    wanted: impl Fn(&str) -> bool,
) -> io::Result<bool> {
    find_any_capped(reader, wanted, MAX_DECOMPRESSED)
}

/// [`find_any`] with its own cap on the bytes all decompressors together may produce.
pub fn find_any_capped<R: BufRead + 'static>(
    reader: R,
    wanted: impl Fn(&str) -> bool,
    cap: u64,
) -> io::Result<bool> {
    // One budget for the whole image: compressed segments can nest and follow one another.
    let budget = Budget(Rc::new(Cell::new(cap)), cap);
    let mut r: Box<dyn BufRead> = Box::new(reader);
    let head = read_up_to(&mut r, 4)?;
    if head == UBOOT_MAGIC {
        io::copy(&mut (&mut r).take(UBOOT_HEADER - 4), &mut io::sink())?;
    } else {
        r = Box::new(Cursor::new(head).chain(r));
    }
    loop {
        skip_zeros(&mut r)?;
        let magic = read_up_to(&mut r, 6)?;
        if magic.is_empty() {
            return Ok(false);
        }
        let rest = std::mem::replace(&mut r, Box::new(io::empty()));
        let stream = Cursor::new(magic.clone()).chain(rest);
        r = match magic.as_slice() {
            [b'0', b'7', b'0', b'7', b'0', b'1' | b'2'] => {
                let mut s: Box<dyn BufRead> = Box::new(BufReader::new(stream));
                if scan_cpio(&mut s, &wanted)? {
                    return Ok(true);
                }
                s
            }
            [0x1f, 0x8b, ..] => Box::new(BufReader::new(
                budget.wrap(flate2::bufread::MultiGzDecoder::new(BufReader::new(stream))),
            )),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Box::new(BufReader::new(
                budget.wrap(
                    ruzstd::decoding::StreamingDecoder::new(stream)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
                ),
            )),
            [0xfd, b'7', b'z', b'X', b'Z', 0] => Box::new(BufReader::new(
                budget.wrap(xz2::read::XzDecoder::new(stream)),
            )),
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "unsupported initramfs format (starts with {})",
                        hex::encode(other)
                    ),
                ))
            }
        };
    }
}

/// Bytes the decompressors may still produce (shared), and the cap for the message.
#[derive(Clone)]
struct Budget(Rc<Cell<u64>>, u64);

impl Budget {
    fn wrap<R: Read>(&self, inner: R) -> Capped<R> {
        Capped {
            inner,
            budget: self.clone(),
        }
    }
}

/// A decompressor's output, failing once the image's budget is spent.
struct Capped<R> {
    inner: R,
    budget: Budget,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.budget.0.get();
        if left == 0 {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "initramfs is too large: it decompresses to more than {} MiB (rvl stops there)",
                    self.budget.1 >> 20
                ),
            ));
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.budget.0.set(left - n as u64);
        Ok(n)
    }
}

/// Read up to `n` bytes (fewer only at end of input).
fn read_up_to(r: &mut dyn BufRead, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

fn skip_zeros(r: &mut dyn BufRead) -> io::Result<()> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        let zeros = buf.iter().take_while(|b| **b == 0).count();
        let all = zeros == buf.len();
        r.consume(zeros);
        if !all {
            return Ok(());
        }
    }
}

fn hex_field(h: &[u8], at: usize) -> io::Result<u64> {
    std::str::from_utf8(&h[at..at + 8])
        .ok()
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "corrupt cpio header"))
}

fn pad4(n: u64) -> u64 {
    (4 - n % 4) % 4
}

/// Walk one cpio archive up to its TRAILER!!! entry.
fn scan_cpio(r: &mut dyn BufRead, wanted: &dyn Fn(&str) -> bool) -> io::Result<bool> {
    loop {
        let mut h = [0u8; NEWC_HEADER];
        r.read_exact(&mut h)?;
        if !h.starts_with(b"07070") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "corrupt cpio header",
            ));
        }
        let size = hex_field(&h, 54)?;
        let namesize = hex_field(&h, 94)? as usize;
        if namesize == 0 || namesize > MAX_NAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "corrupt cpio name size",
            ));
        }
        let mut name = vec![0u8; namesize];
        r.read_exact(&mut name)?;
        io::copy(
            &mut r.take(pad4((NEWC_HEADER + namesize) as u64)),
            &mut io::sink(),
        )?;
        let name = String::from_utf8_lossy(name.strip_suffix(&[0]).unwrap_or(&name)).into_owned();
        if name == "TRAILER!!!" {
            return Ok(false);
        }
        if wanted(&name) {
            return Ok(true);
        }
        let skipped = io::copy(&mut r.take(size + pad4(size)), &mut io::sink())?;
        if skipped < size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "truncated cpio archive",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A minimal newc archive with the given (name, data) members and a trailer.
    pub(crate) fn cpio(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut add = |name: &str, data: &[u8]| {
            let namesize = name.len() + 1;
            write!(
                out,
                "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
                1, 0o100644, 0, 0, 1, 0, data.len(), 0, 0, 0, 0, namesize, 0
            )
            .unwrap();
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            while out.len() % 4 != 0 {
                out.push(0);
            }
            out.extend_from_slice(data);
            while out.len() % 4 != 0 {
                out.push(0);
            }
        };
        for (n, d) in members {
            add(n, d);
        }
        add("TRAILER!!!", b"");
        out
    }

    const FW: &str = "usr/lib/firmware/arm/mali/arch10.8/mali_csffw.bin";

    fn has_fw(bytes: Vec<u8>) -> io::Result<bool> {
        find_any(Cursor::new(bytes), |n| {
            n.ends_with("arch10.8/mali_csffw.bin")
        })
    }

    #[test]
    fn plain_archive() {
        assert!(has_fw(cpio(&[("bin/sh", b"x"), (FW, b"fw")])).unwrap());
        assert!(!has_fw(cpio(&[("bin/sh", b"xyz")])).unwrap());
    }

    #[test]
    fn early_uncompressed_then_gzip_or_zstd_or_xz_main_archive() {
        let early = cpio(&[("kernel/x86/microcode/a.bin", b"0123456")]);
        let main = cpio(&[("init", b"#!/bin/sh"), (FW, b"fw")]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&main).unwrap();
        let mut img = early.clone();
        img.extend_from_slice(&[0; 512]);
        img.extend(gz.finish().unwrap());
        assert!(has_fw(img).unwrap());

        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&main).unwrap();
        let mut img = early.clone();
        img.extend(xz.finish().unwrap());
        assert!(has_fw(img).unwrap());

        let zst = ruzstd::encoding::compress_to_vec(
            &main[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut img = early;
        img.extend(zst);
        assert!(has_fw(img).unwrap());
    }

    #[test]
    fn uboot_wrapped_image() {
        let mut img = UBOOT_MAGIC.to_vec();
        img.extend_from_slice(&[0u8; 60]);
        img.extend(cpio(&[(FW, b"fw")]));
        assert!(has_fw(img).unwrap());
    }

    #[test]
    fn a_zstd_bomb_stops_at_the_cap_with_a_too_large_error() {
        // 16 MiB of zero padding after a cpio archive: the scan has to read
        // through all of it, so only the cap stops it.
        let mut main = cpio(&[("init", b"x")]);
        main.extend(std::iter::repeat_n(0u8, 16 << 20));
        let zst = ruzstd::encoding::compress_to_vec(
            &main[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert!(zst.len() < 4 << 20, "{}", zst.len());
        let start = std::time::Instant::now();
        let err = find_any_capped(Cursor::new(zst), |n| n == FW, 1 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
        assert!(err.to_string().contains("too large"), "{err}");
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_panics() {
        assert!(has_fw(b"hello world".to_vec()).is_err());
        let mut t = cpio(&[(FW, &[7u8; 100])]);
        t.truncate(150);
        assert!(has_fw(t).is_err());
        let mut bad = cpio(&[("a", b"b")]);
        bad[94..102].copy_from_slice(b"zzzzzzzz");
        assert!(has_fw(bad).is_err());
        assert!(!has_fw(Vec::new()).unwrap());
    }
}
