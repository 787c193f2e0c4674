//! `/etc/os-release` (os-release(5)): which distribution and release an image is, parsed from
//! the image's own file, pure. Setup and the doctor use it to tell which build dependencies a
//! release has (`crate::builddeps`).

/// The fields rvl reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsRelease {
    /// `ID`, e.g. `debian`, `ubuntu`.
    pub id: String,
    /// `VERSION_ID`, e.g. `12`, `24.04`; empty for rolling releases (sid has none).
    pub version_id: String,
    /// `PRETTY_NAME`, for messages.
    pub pretty_name: String,
}

/// Parse os-release text: `KEY=value` lines, the value optionally in single or double quotes.
/// Lines that are not assignments are ignored, as the format says.
pub fn parse(text: &str) -> OsRelease {
    let mut o = OsRelease::default();
    for line in text.lines() {
        let Some((k, v)) = line.trim().split_once('=') else {
            continue;
        };
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(v);
        let v = v.replace("\\\"", "\"");
        match k.trim() {
            "ID" => o.id = v,
            "VERSION_ID" => o.version_id = v,
            "PRETTY_NAME" => o.pretty_name = v,
            _ => {}
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_bare_values_parse_and_other_lines_are_ignored() {
        let o = parse("# comment\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID='12'\nnonsense\n");
        assert_eq!(o.id, "debian");
        assert_eq!(o.version_id, "12");
        assert_eq!(o.pretty_name, "Debian GNU/Linux 12 (bookworm)");
    }
}
