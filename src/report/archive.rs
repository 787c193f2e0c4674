//! Writing the bundle: a gzip'd tar, complete or not at all (a temporary file next to the
//! target, renamed over it when done).

use std::io::Write;
use std::path::Path;

use crate::error::Error;

/// Fail before collecting anything when the archive cannot be written where asked.
pub fn check_writable(output: &Path) -> anyhow::Result<()> {
    if output.is_dir() {
        return Err(Error::Usage(format!("--output {} is a directory", output.display())).into());
    }
    let parent = parent_of(output);
    if !parent.is_dir() {
        return Err(Error::Usage(format!(
            "--output {}: the directory {} does not exist",
            output.display(),
            parent.display()
        ))
        .into());
    }
    Ok(())
}

/// `files` as `rvl-report/NAME` entries, mode 0644, mtime 0 (the archive carries no clock
/// of its own: the doctor JSON has the facts).
pub fn write_tar_gz(output: &Path, files: &[(String, Vec<u8>)]) -> anyhow::Result<()> {
    let io = |e| Error::io("cannot write the report", output, e);
    let mut tmp = tempfile::Builder::new()
        .prefix(".rvl-report")
        .tempfile_in(parent_of(output))
        .map_err(io)?;
    {
        let gz = flate2::write::GzEncoder::new(tmp.as_file_mut(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        for (name, data) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            header.set_cksum();
            tar.append_data(&mut header, format!("rvl-report/{name}"), data.as_slice())
                .map_err(io)?;
        }
        tar.into_inner().and_then(|gz| gz.finish()).map_err(io)?;
    }
    tmp.as_file_mut().flush().map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(output).map_err(|e| io(e.error))?;
    Ok(())
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}
