//! Writing a result document (`smoke-bench --save`, and the per-model record of
//! `smoke-bench --gguf` that `rvl serve` reads): complete or not at all for a regular file,
//! written through for a FIFO or `/dev/stdout`, refused for anything else ([`crate::outfile`]).
//! Shared by the GEMM and the prefill bench (the prefill one builds without the `bench`
//! feature).

use std::path::Path;

use serde::Serialize;

use crate::error::Error;

/// Write `doc` (the document `--json` prints), pretty-printed, with a final newline.
pub fn save(path: &Path, doc: &impl Serialize) -> Result<(), Error> {
    crate::outfile::write("--save", path, |w| {
        serde_json::to_writer_pretty(&mut *w, doc)?;
        w.write_all(b"\n")
    })
}

/// Before any benchmarking: can `save` write `path`? A target that rvl would refuse, or a
/// directory that takes no new file, is an error now, not after a run of minutes.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    crate::outfile::check_writable("--save", path).map(|_| ())
}
