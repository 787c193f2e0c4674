//! `/etc/os-release` (os-release(5)): which distribution and release an image is, parsed from
//! the image's own file, pure. Setup uses it to refuse a Mesa build the image's toolchain cannot
//! do before downloading anything.

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

/// "24.04" → (24, 4); None when it is not numbers.
fn numeric(v: &str) -> Option<(u32, u32)> {
    let mut p = v.split('.');
    let major = p.next()?.parse().ok()?;
    let minor = p.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// Why this release cannot build Mesa 26 from source with its own packages, or None when it can
/// (or rvl cannot tell). Mesa 26 needs meson ≥ 1.4 and SPIRV-Tools ≥ 2024.1: Debian 12 ships
/// meson 1.0 and SPIRV-Tools 2023.1, Ubuntu 24.04 SPIRV-Tools 2023.6; Debian 13 and Ubuntu 25.04
/// have both (research: mesa-26-source.md).
pub fn mesa26_blocker(o: &OsRelease) -> Option<String> {
    let v = numeric(&o.version_id)?;
    let too_old = match o.id.as_str() {
        "debian" => v < (13, 0),
        "ubuntu" => v < (25, 4),
        _ => false,
    };
    too_old.then(|| {
        let name = if o.pretty_name.is_empty() {
            format!("{} {}", o.id, o.version_id)
        } else {
            o.pretty_name.clone()
        };
        format!(
            "{name} cannot build Mesa 26: it needs meson ≥ 1.4 and SPIRV-Tools ≥ 2024.1, newer than this release ships"
        )
    })
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

    #[test]
    fn bookworm_and_noble_are_too_old_for_mesa_26_and_trixie_plucky_sid_and_unknowns_are_not() {
        let os = |id: &str, v: &str| OsRelease {
            id: id.into(),
            version_id: v.into(),
            pretty_name: String::new(),
        };
        assert!(mesa26_blocker(&os("debian", "12"))
            .unwrap()
            .contains("debian 12"));
        assert!(mesa26_blocker(&os("ubuntu", "24.04")).is_some());
        assert!(mesa26_blocker(&os("debian", "13")).is_none());
        assert!(mesa26_blocker(&os("ubuntu", "25.04")).is_none());
        // sid has no VERSION_ID; an unknown distribution is not second-guessed.
        assert!(mesa26_blocker(&os("debian", "")).is_none());
        assert!(mesa26_blocker(&os("fedora", "40")).is_none());
    }
}
