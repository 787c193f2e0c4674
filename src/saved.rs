//! Writing a result document (`smoke-bench --save`, and the per-model record of
//! `smoke-bench --gguf` that `rvl serve` reads): atomically, so a crash never leaves half a
//! file. Shared by the GEMM and the prefill bench (the prefill one builds without the `bench`
//! feature).

use std::io::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::error::Error;

/// Write `doc` (the document `--json` prints) atomically (temporary file + rename).
pub fn save(path: &Path, doc: &impl Serialize) -> Result<(), Error> {
    let dir = save_dir(path);
    let io = |e: std::io::Error| Error::io("--save", path, e);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    serde_json::to_writer_pretty(&mut tmp, doc).map_err(|e| io(e.into()))?;
    tmp.write_all(b"\n").map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

fn save_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Before any benchmarking: can `save` write `path`? It makes the same temporary file `save`
/// will (and removes it at once), so a run of minutes does not end in a permission error.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::io("--save", path, e);
    if path.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    tempfile::NamedTempFile::new_in(save_dir(path)).map_err(io)?;
    Ok(())
}
