//! Writing the bundle: a gzip'd tar, complete or not at all (a temporary file next to the
//! target, renamed over it when done), or written through to a FIFO or `/dev/stdout`.

use std::path::Path;

/// Fail before collecting anything when the archive cannot be written where asked (a
/// directory, a device node other than a character device, a missing directory).
pub fn check_writable(output: &Path) -> anyhow::Result<()> {
    crate::outfile::check_writable("--output", output)?;
    Ok(())
}

/// One file of the bundle, borrowed from what the report holds.
pub struct Entry<'a> {
    pub name: &'a str,
    pub data: &'a [u8],
    /// Seconds since the epoch: the system file's own date, or when the report was made.
    pub mtime: u64,
}

/// `entries` as `rvl-report/NAME` entries, mode 0644, each with its date (a triager reads
/// when a config last changed from it), streamed into the gzip and the target one after
/// another. A regular file is replaced whole; a FIFO or `/dev/stdout` is written through
/// ([`crate::outfile`]).
pub fn write_tar_gz<'a>(
    output: &Path,
    entries: impl IntoIterator<Item = Entry<'a>>,
) -> anyhow::Result<()> {
    crate::outfile::write("--output", output, |w| {
        let gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        for e in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(e.data.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(e.mtime);
            header.set_cksum();
            tar.append_data(&mut header, format!("rvl-report/{}", e.name), e.data)?;
        }
        tar.into_inner()?.finish()?;
        Ok(())
    })?;
    Ok(())
}
