//! What a bug report must not carry: the board's host names and MAC addresses (unless
//! `--full`), and the user's home directory (always: it names the user, and `--full` is about
//! the board, not the person). Pure text rewriting, so every collected file goes through the
//! same filter.

/// Replaces the given host names, the home directory and every MAC address in a text.
#[derive(Debug, Default)]
pub struct Redactor {
    hostnames: Vec<String>,
    home: Option<String>,
    /// False under `--full`: MAC addresses are kept.
    macs: bool,
    /// How many replacements were made, for the report's summary.
    pub hostnames_replaced: usize,
    pub macs_replaced: usize,
}

impl Redactor {
    /// `hostnames`: the names the image calls itself (`/etc/hostname`, the kernel's). Names
    /// shorter than 3 characters are ignored: replacing "pi" everywhere would wreck the text.
    pub fn new(hostnames: impl IntoIterator<Item = String>) -> Self {
        let mut names: Vec<String> = hostnames
            .into_iter()
            .map(|h| h.trim().to_string())
            .filter(|h| h.len() >= 3)
            .collect();
        // Longest first, so `board.lan` is replaced whole before `board`.
        names.sort_by_key(|h| std::cmp::Reverse(h.len()));
        names.dedup();
        Self {
            hostnames: names,
            macs: true,
            ..Self::default()
        }
    }

    /// Keeps host names and MAC addresses (`--full`); the home directory is still replaced.
    pub fn full() -> Self {
        Self::default()
    }

    /// Replace this home directory with `~`. `/` and very short values are ignored: they would
    /// match every path.
    pub fn with_home(mut self, home: Option<&str>) -> Self {
        self.home = home
            .map(|h| h.trim_end_matches('/').to_string())
            .filter(|h| h.len() >= 3);
        self
    }

    /// The text with host names replaced by `<hostname>` and MACs by `<mac>`.
    pub fn redact(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        if let Some(home) = &self.home {
            out = out.replace(home.as_str(), "~");
        }
        for name in &self.hostnames {
            let n = out.matches(name.as_str()).count();
            if n > 0 {
                self.hostnames_replaced += n;
                out = out.replace(name.as_str(), "<hostname>");
            }
        }
        if !self.macs {
            return out;
        }
        let (out, n) = replace_macs(&out);
        self.macs_replaced += n;
        out
    }
}

/// Six pairs of hex digits joined by `:` or `-` (as `ip link` and dmesg print them), not part
/// of a longer hex run. Returns the text and the number of addresses replaced.
fn replace_macs(text: &str) -> (String, usize) {
    const LEN: usize = 17;
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied, mut n) = (0, 0, 0);
    while i + LEN <= b.len() {
        let before_ok = i == 0 || !is_mac_char(b[i - 1]);
        let after_ok = i + LEN == b.len() || !is_mac_char(b[i + LEN]);
        if before_ok && after_ok && is_mac(&b[i..i + LEN]) {
            out.push_str(&text[copied..i]);
            out.push_str("<mac>");
            i += LEN;
            copied = i;
            n += 1;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, n)
}

fn is_mac_char(c: u8) -> bool {
    c.is_ascii_hexdigit() || c == b':' || c == b'-'
}

fn is_mac(s: &[u8]) -> bool {
    let sep = s[2];
    (sep == b':' || sep == b'-')
        && s.chunks(3).all(|part| {
            part[0].is_ascii_hexdigit()
                && part[1].is_ascii_hexdigit()
                && (part.len() == 2 || part[2] == sep)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_are_replaced_in_both_notations_and_counted() {
        let mut r = Redactor::new([]);
        let text = "eth0: 6a:1f:0e:aa:B3:07 up\nwlan 00-11-22-33-44-55\n";
        assert_eq!(r.redact(text), "eth0: <mac> up\nwlan <mac>\n");
        assert_eq!(r.macs_replaced, 2);
    }

    #[test]
    fn longer_hex_runs_and_mixed_separators_are_not_macs() {
        let mut r = Redactor::new([]);
        let text = "sha 6a:1f:0e:aa:b3:07:99 x 6a:1f-0e:aa:b3:07 deadbeefdeadbeef";
        assert_eq!(r.redact(text), text);
        assert_eq!(r.macs_replaced, 0);
    }

    #[test]
    fn the_home_directory_is_replaced_even_when_everything_else_is_kept() {
        let mut r = Redactor::full().with_home(Some("/home/alice/"));
        let text = "icd /home/alice/.local/share/vulkan 6a:1f:0e:aa:b3:07";
        assert_eq!(
            r.redact(text),
            "icd ~/.local/share/vulkan 6a:1f:0e:aa:b3:07"
        );
        let mut root_only = Redactor::full().with_home(Some("/"));
        assert_eq!(root_only.redact("/etc/x"), "/etc/x");
    }

    #[test]
    fn host_names_are_replaced_longest_first_and_short_ones_ignored() {
        let mut r = Redactor::new(["rock5".into(), "rock5.lan".into(), "pi".into()]);
        assert_eq!(
            r.redact("ssh rock5.lan; pi@rock5 ready"),
            "ssh <hostname>; pi@<hostname> ready"
        );
        assert_eq!(r.hostnames_replaced, 2);
    }
}
