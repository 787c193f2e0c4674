//! `extlinux.conf` as U-Boot's pxe/sysboot reader understands it: a `default` label and `label`
//! blocks with `linux`/`kernel`, `initrd`, `fdt`/`fdtdir`, `fdtoverlays`, `append` lines.
//!
//! Parsing never fails: unknown lines are kept, keywords are case-insensitive, and the TAB-only
//! lines that u-boot-update writes for empty fields are harmless. The file is kept as its raw
//! lines (each with its own line ending), so [`Extlinux::set_default`] can change one line and
//! leave every other byte as it was.

/// One `label` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    pub label: String,
    pub menu_label: Option<String>,
    pub linux: Option<String>,
    pub initrd: Option<String>,
    pub fdt: Option<String>,
    pub fdtdir: Option<String>,
    pub fdtoverlays: Option<String>,
    pub append: Option<String>,
    /// 1-based line number of the `label` line (for evidence and error messages).
    pub line: usize,
}

impl Entry {
    /// Kernel release named by the `linux` line: `/boot/vmlinuz-6.1.75-npu-port` → `6.1.75-npu-port`.
    pub fn kernel_release(&self) -> Option<String> {
        self.linux.as_deref().and_then(release_from_kernel_path)
    }
}

/// Kernel release from an image path's file name (`vmlinuz-R`, `vmlinux-R`, `Image-R`).
pub fn release_from_kernel_path(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    ["vmlinuz-", "vmlinux-", "Image-", "zImage-", "uImage-"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .filter(|r| !r.is_empty())
        .map(str::to_string)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extlinux {
    /// Raw lines, each with its line terminator (the last may have none).
    lines: Vec<String>,
    default_line: Option<usize>,
    entries: Vec<Entry>,
}

impl Extlinux {
    pub fn parse(text: &str) -> Self {
        let lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
        let mut default_line = None;
        let mut entries: Vec<Entry> = Vec::new();
        for (idx, raw) in lines.iter().enumerate() {
            let Some((keyword, value)) = split_keyword(raw) else {
                continue;
            };
            match keyword.as_str() {
                "default" if entries.is_empty() => default_line = Some(idx),
                "label" => entries.push(Entry {
                    label: value.to_string(),
                    line: idx + 1,
                    ..Entry::default()
                }),
                _ => {
                    if let Some(entry) = entries.last_mut() {
                        apply_entry_line(entry, &keyword, value);
                    }
                }
            }
        }
        Extlinux {
            lines,
            default_line,
            entries,
        }
    }

    /// Value of the top-level `default` line.
    pub fn default_label(&self) -> Option<&str> {
        self.default_line
            .and_then(|i| split_keyword(&self.lines[i]))
            .map(|(_, v)| v)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn entry(&self, label: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.label == label)
    }

    /// The entry U-Boot boots without intervention: the `default` label, or the first entry
    /// when there is no `default` line.
    pub fn default_entry(&self) -> Option<&Entry> {
        match self.default_label() {
            Some(label) => self.entry(label),
            None => self.entries.first(),
        }
    }

    /// Entries whose `linux` line boots this kernel release (normal and rescue entries).
    pub fn entries_for_release<'a>(&'a self, release: &'a str) -> impl Iterator<Item = &'a Entry> {
        self.entries
            .iter()
            .filter(move |e| e.kernel_release().as_deref() == Some(release))
    }

    /// Make `label` the default. Only the `default` line changes (or one is inserted before the
    /// first `label` when the file has none); every other byte stays as it was.
    pub fn set_default(&mut self, label: &str) {
        match self.default_line {
            Some(i) => {
                let raw = &self.lines[i];
                let indent_len = raw.len() - raw.trim_start().len();
                let keyword_len = raw[indent_len..]
                    .find(char::is_whitespace)
                    .unwrap_or(raw.len() - indent_len);
                let ending = line_ending(raw);
                self.lines[i] = format!(
                    "{}{} {}{}",
                    &raw[..indent_len],
                    &raw[indent_len..indent_len + keyword_len],
                    label,
                    ending
                );
            }
            None => {
                let at = self
                    .entries
                    .first()
                    .map(|e| e.line - 1)
                    .unwrap_or(self.lines.len());
                if at == self.lines.len() {
                    if let Some(last) = self.lines.last_mut() {
                        if !last.ends_with('\n') {
                            last.push('\n');
                        }
                    }
                }
                self.lines.insert(at, format!("default {label}\n"));
            }
        }
        *self = Extlinux::parse(&self.render());
    }

    /// Add `path` to the `fdtoverlays` line of the entry `label` (appending to the line that is
    /// there, or adding one after the entry's last line with the indentation of its `linux`
    /// line). Every other byte stays. Returns false when the entry already lists it or there
    /// is no such entry.
    pub fn add_fdtoverlay(&mut self, label: &str, path: &str) -> bool {
        let Some(entry) = self.entry(label) else {
            return false;
        };
        if entry
            .fdtoverlays
            .as_deref()
            .is_some_and(|v| v.split_whitespace().any(|p| p == path))
        {
            return false;
        }
        let start = entry.line; // the index of the line after `label`
        let end = self
            .entries
            .iter()
            .find(|e| e.line > entry.line)
            .map_or(self.lines.len(), |e| e.line - 1);
        let mut indent = "\t".to_string();
        let mut last = start - 1;
        let mut existing = None;
        for i in start..end {
            let raw = &self.lines[i];
            if let Some((k, _)) = split_keyword(raw) {
                last = i;
                if k == "linux" || k == "kernel" {
                    indent = raw[..raw.len() - raw.trim_start().len()].to_string();
                }
                if k == "fdtoverlays" || k == "devicetree-overlay" {
                    existing = Some(i);
                }
            }
        }
        match existing {
            Some(i) => {
                let raw = &self.lines[i];
                let ending = line_ending(raw);
                self.lines[i] = format!("{} {path}{ending}", &raw[..raw.len() - ending.len()]);
            }
            None => {
                if !self.lines[last].ends_with('\n') {
                    self.lines[last].push('\n');
                }
                self.lines
                    .insert(last + 1, format!("{indent}fdtoverlays {path}\n"));
            }
        }
        *self = Extlinux::parse(&self.render());
        true
    }

    /// The file's bytes.
    pub fn render(&self) -> String {
        self.lines.concat()
    }
}

fn line_ending(raw: &str) -> &'static str {
    if raw.ends_with("\r\n") {
        "\r\n"
    } else if raw.ends_with('\n') {
        "\n"
    } else {
        ""
    }
}

/// Lower-cased keyword and the rest of the line (trimmed). `menu label` counts as one keyword.
fn split_keyword(raw: &str) -> Option<(String, &str)> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (first, rest) = match line.find(char::is_whitespace) {
        Some(i) => (&line[..i], line[i..].trim_start()),
        None => (line, ""),
    };
    let mut keyword = first.to_ascii_lowercase();
    let mut value = rest;
    if keyword == "menu" {
        let (second, rest2) = match rest.find(char::is_whitespace) {
            Some(i) => (&rest[..i], rest[i..].trim_start()),
            None => (rest, ""),
        };
        keyword = format!("menu {}", second.to_ascii_lowercase());
        value = rest2;
    }
    Some((keyword, value))
}

fn apply_entry_line(entry: &mut Entry, keyword: &str, value: &str) {
    let slot = match keyword {
        "menu label" => &mut entry.menu_label,
        "linux" | "kernel" => &mut entry.linux,
        "initrd" => &mut entry.initrd,
        "fdt" | "devicetree" => &mut entry.fdt,
        "fdtdir" | "devicetreedir" => &mut entry.fdtdir,
        "fdtoverlays" | "devicetree-overlay" => &mut entry.fdtoverlays,
        "append" => &mut entry.append,
        _ => return,
    };
    *slot = Some(value.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    const GENERATED: &str = "## /boot/extlinux/extlinux.conf\n##\n\ndefault l0\nmenu title U-Boot menu\nprompt 1\ntimeout 10\n\n\nlabel l0\n\tmenu label Debian 7.0.0-rc3-marfrit-A1\n\tlinux /boot/vmlinuz-7.0.0-rc3-marfrit-A1\n\tinitrd /boot/initrd.img-7.0.0-rc3-marfrit-A1\n\tfdtdir /usr/lib/linux-image-7.0.0-rc3-marfrit-A1/\n\t\n\tappend root=UUID=x quiet\n\nlabel l0r\n\tmenu label Debian 7.0.0-rc3-marfrit-A1 (rescue target)\n\tlinux /boot/vmlinuz-7.0.0-rc3-marfrit-A1\n\tappend root=UUID=x single\n\t\n\nlabel l1\n\tmenu label Debian 6.1.75-npu-port\n\tlinux /boot/vmlinuz-6.1.75-npu-port\n\tinitrd /boot/initrd.img-6.1.75-npu-port\n\t\n";

    #[test]
    fn an_overlay_is_added_to_one_entry_and_every_other_byte_stays() {
        let mut conf = Extlinux::parse(GENERATED);
        assert!(conf.add_fdtoverlay("l0", "/boot/dtbo/rvl-x.dtbo"));
        let text = conf.render();
        assert_eq!(
            text,
            GENERATED.replace(
                "\tappend root=UUID=x quiet\n",
                "\tappend root=UUID=x quiet\n\tfdtoverlays /boot/dtbo/rvl-x.dtbo\n"
            )
        );
        assert_eq!(
            conf.entry("l0").unwrap().fdtoverlays.as_deref(),
            Some("/boot/dtbo/rvl-x.dtbo")
        );
        assert!(conf.entry("l0r").unwrap().fdtoverlays.is_none());
        assert!(
            !conf.add_fdtoverlay("l0", "/boot/dtbo/rvl-x.dtbo"),
            "idempotent"
        );
        // A second overlay joins the line that is there.
        assert!(conf.add_fdtoverlay("l0", "/boot/dtbo/b.dtbo"));
        assert!(conf
            .render()
            .contains("\tfdtoverlays /boot/dtbo/rvl-x.dtbo /boot/dtbo/b.dtbo\n"));
        assert!(!conf.add_fdtoverlay("nope", "/x"));
    }

    #[test]
    fn parses_generated_file_with_tab_only_lines() {
        let conf = Extlinux::parse(GENERATED);
        assert_eq!(conf.default_label(), Some("l0"));
        let labels: Vec<_> = conf.entries().iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["l0", "l0r", "l1"]);
        let l1 = conf.entry("l1").unwrap();
        assert_eq!(l1.kernel_release().as_deref(), Some("6.1.75-npu-port"));
        assert_eq!(l1.menu_label.as_deref(), Some("Debian 6.1.75-npu-port"));
        assert_eq!(
            conf.default_entry().unwrap().kernel_release().as_deref(),
            Some("7.0.0-rc3-marfrit-A1")
        );
        assert_eq!(conf.entries_for_release("7.0.0-rc3-marfrit-A1").count(), 2);
    }

    #[test]
    fn set_default_changes_one_line_only() {
        let mut conf = Extlinux::parse(GENERATED);
        conf.set_default("l1");
        let out = conf.render();
        assert_eq!(out, GENERATED.replacen("default l0\n", "default l1\n", 1));
        assert_eq!(conf.default_entry().unwrap().label, "l1");
    }

    #[test]
    fn set_default_keeps_keyword_case_indent_and_crlf() {
        let text = "  DEFAULT old\r\nLABEL old\r\n  KERNEL /boot/vmlinuz-1\r\nLABEL new\r\n  LINUX /boot/Image-2\r\n";
        let mut conf = Extlinux::parse(text);
        assert_eq!(
            conf.entry("new").unwrap().kernel_release().as_deref(),
            Some("2")
        );
        conf.set_default("new");
        assert_eq!(conf.render(), text.replace("DEFAULT old", "DEFAULT new"));
    }

    #[test]
    fn set_default_inserts_a_line_when_missing() {
        let text =
            "# hand written\nlabel a\n linux /boot/vmlinuz-1\nlabel b\n linux /boot/vmlinuz-2";
        let mut conf = Extlinux::parse(text);
        assert_eq!(conf.default_entry().unwrap().label, "a");
        conf.set_default("b");
        assert_eq!(
            conf.render(),
            "# hand written\ndefault b\nlabel a\n linux /boot/vmlinuz-1\nlabel b\n linux /boot/vmlinuz-2"
        );
        assert_eq!(conf.default_entry().unwrap().label, "b");
    }

    #[test]
    fn garbage_never_panics() {
        for text in [
            "",
            "\t\n\t",
            "label",
            "default",
            "menu",
            "\u{0}\u{ff}label x\n\tlinux",
            "label a\nlinux /",
        ] {
            let mut conf = Extlinux::parse(text);
            let _ = conf.default_entry();
            conf.set_default("x");
            assert_eq!(conf.default_label(), Some("x"));
        }
    }
}

#[cfg(test)]
mod fixture_tests {
    use super::*;

    /// The u-boot-update output sample (TAB-indented, TAB-only lines) survives a no-op edit.
    #[test]
    fn reference_sample_round_trips_byte_for_byte() {
        let text = include_str!("../../tests/fixtures/boot/boltzmann-extlinux.conf.SYNTH");
        let mut conf = Extlinux::parse(text);
        assert_eq!(conf.render(), text);
        assert_eq!(
            conf.default_entry().unwrap().kernel_release().as_deref(),
            Some("7.0.0-rc3-marfrit-A1")
        );
        conf.set_default("l0");
        assert_eq!(conf.render(), text);
        conf.set_default("l1");
        let rendered = conf.render();
        let changed: Vec<_> = text
            .lines()
            .zip(rendered.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(changed, [("default l0", "default l1")]);
    }
}
