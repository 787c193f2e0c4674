//! Field rules for the YAML rvl is handed (`--manifest`, `--profiles`). Their strings become
//! install paths, prefixes, ICD contents and lines of boot configuration written as root, so a
//! field is refused unless it has the shape its use needs. Pure: each rule returns the reason,
//! the caller names the file and field.

/// Versions go into install prefixes (`/opt/rvl/mesa-VERSION-rvl1`) and ICD paths: one plain
/// token, nothing that is a path separator, a quote or a space.
pub fn version(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && !s.starts_with(['.', '-'])
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+~-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a plain version ([0-9A-Za-z.+~-], not starting with `.` or `-`), got {s:?}"
        ))
    }
}

/// A path *under* some directory (`/lib/firmware`, an archive's top): relative, no `..`,
/// no empty or `.` components, no control bytes.
pub fn relative_path(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.starts_with('/') {
        return Err(format!("must be a relative path, got {s:?}"));
    }
    control_free(s)?;
    if s.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(format!(
            "must be a relative path without `..`, `.` or empty components, got {s:?}"
        ));
    }
    Ok(())
}

/// One file name (an overlay, a package): no `/`, not `.`/`..`, not an option, no control
/// bytes or spaces (lists such as `overlays=a b` are space-separated).
pub fn file_name(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s != "."
        && s != ".."
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+~,@-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a plain file name ([0-9A-Za-z._+~,@-], no `/`), got {s:?}"
        ))
    }
}

/// A login name as `useradd` takes it (letters, digits, `_`, `-`, `.`, not starting with `-`):
/// it is written into /etc/group and printed in commands.
pub fn user_name(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 32
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a login name ([0-9A-Za-z._-], at most 32, not starting with -), got {s:?}"
        ))
    }
}

/// [`user_name`] for clap.
pub fn user_name_parser(s: &str) -> Result<String, String> {
    user_name(s).map(|()| s.to_string())
}

/// A device-tree label (`vdd_gpu_s0`), as dtc accepts one: a letter or `_`, then letters, digits
/// and `_`; it is written into an overlay's `<&label>` and into fix text.
pub fn dt_label(s: &str) -> Result<(), String> {
    let mut bytes = s.bytes();
    let ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && s.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a device-tree label ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes), got {s:?}"
        ))
    }
}

/// Characters that must never reach a terminal or a config file from a file rvl is handed:
/// control characters (C0, DEL, C1: newlines, ESC sequences, BEL) and the bidirectional
/// formatting characters (U+061C, U+200E/F, U+202A-E, U+2066-9), which reorder what a
/// person reads (`https://x/\u{202e}nib.wf` shows as `https://x/fw.bin`).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Free text that may reach a config file or the terminal: no newline, no other control
/// character and no bidirectional control (a `\n` would start a new line of
/// `armbianEnv.txt`; an ESC sequence would drive the terminal the plan is printed on).
pub fn control_free(s: &str) -> Result<(), String> {
    match s.chars().find(|c| is_unsafe_char(*c)) {
        None => Ok(()),
        Some(c) if c.is_control() => Err(format!(
            "must not contain control characters (found {:?}) in {s:?}",
            c
        )),
        Some(c) => Err(format!(
            "must not contain bidirectional text controls (found U+{:04X}) in {:?}",
            u32::from(c),
            s.escape_debug().to_string()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_one_plain_token() {
        for ok in ["26.1.6", "0.3.36", "7.0.0-rc3-marfrit-A1", "1.0+dfsg~1"] {
            assert!(version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "26\"x", "../../x", "1 2", "-rc", ".hidden", "a/b", "1\n",
        ] {
            assert!(version(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dt_labels_are_what_dtc_accepts_and_nothing_that_escapes_a_phandle() {
        for ok in ["vdd_gpu_s0", "_x", "A1"] {
            assert!(dt_label(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "0vdd",
            "vdd-gpu",
            "vdd>; status",
            "a b",
            "x\n",
            &"a".repeat(65),
        ] {
            assert!(dt_label(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn relative_paths_never_climb_or_start_at_the_root() {
        assert!(relative_path("arm/mali/arch10.8/mali_csffw.bin").is_ok());
        for bad in [
            "",
            "../../../../etc/passwd",
            "/etc/passwd",
            "a/../b",
            "a//b",
            "./a",
            "a/",
            "a\nb",
        ] {
            assert!(relative_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_names_have_no_separator_space_or_newline() {
        assert!(file_name("rk3588-mali-enable").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "x\nextraargs=init=/bin/sh",
            "-x",
        ] {
            assert!(file_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn control_bytes_are_refused_in_free_text() {
        assert!(control_free("Radxa ROCK 5 ITX (RK3588)").is_ok());
        assert!(control_free("a\nb").is_err());
        assert!(control_free("a\u{1b}[2Jb").is_err());
        assert!(control_free("a\u{9b}b").is_err());
        assert!(control_free("https://example.org/\u{202e}fw.bin").is_err());
        assert!(control_free("x\u{2066}y").is_err());
        assert!(control_free("Mali-G610 — panvk ✓").is_ok());
    }
}
