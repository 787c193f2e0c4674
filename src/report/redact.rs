//! What a bug report must not carry: secrets (tokens, keys, passwords: always), the user's
//! home directory (always: it names the user, and `--full` is about the board, not the
//! person), and the board's host names and MAC addresses (unless `--full`). Every collected
//! file, its name in the archive and where it came from go through the same filter.
//!
//! Host names are replaced by context, so that the diagnosis stays intact:
//! - a whole word only (`rock5` in `rock5.lan` or `/logs/rock5.log`, never in `rock5b`);
//! - never as the name part of a device-tree compatible (`radxa,rock-5-itx`);
//! - in a JSON document, only in values, and not in the structural fields (`compatible`,
//!   `board`, `profile`, `id`, ...) that name the hardware;
//! - a host name that is also a word of the boards' vocabulary (a profile id, a device-tree
//!   name: `boltzmann`, `rock-5-itx`) only where it stands as a host name (`hostname=`,
//!   `user@`, `//`, a syslog line's host column), since elsewhere it names the board.

use std::collections::HashSet;

const HOST: &str = "<hostname>";
const MAC: &str = "<mac>";
const SECRET: &str = "<redacted>";

/// JSON fields whose values name hardware or rvl's own vocabulary: host names are not looked
/// for there (secrets and MACs still are).
const STRUCTURAL_KEYS: &[&str] = &[
    "compatible",
    "board",
    "profile",
    "id",
    "soc",
    "match",
    "matches",
    "model",
    "check",
    "step",
    "steps",
];
/// JSON fields that hold a host name.
const HOST_KEYS: &[&str] = &["hostname", "host", "nodename", "host_name"];

/// One name the system calls itself.
#[derive(Debug, Clone)]
struct Host {
    lower: String,
    /// Also a board or device-tree word: replaced only where it stands as a host name.
    vocabulary: bool,
}

/// Replaces secrets, the home directory, host names and MAC addresses in text, JSON documents
/// and file names, and counts what it replaced.
#[derive(Debug, Default)]
pub struct Redactor {
    hostnames: Vec<Host>,
    home: Option<String>,
    /// False under `--full`: MAC addresses are kept.
    macs: bool,
    /// How many replacements were made, for the report's summary.
    pub hostnames_replaced: usize,
    pub macs_replaced: usize,
    pub secrets_replaced: usize,
}

impl Redactor {
    /// `hostnames`: the names the image calls itself (`/etc/hostname`, the kernel's). Names
    /// shorter than 3 characters are ignored: replacing "pi" everywhere would wreck the text.
    /// `vocabulary`: words that name boards (profile ids, device-tree compatibles and their
    /// name parts); a host name among them is replaced only in host-name contexts.
    pub fn new(
        hostnames: impl IntoIterator<Item = String>,
        vocabulary: impl IntoIterator<Item = String>,
    ) -> Self {
        let vocabulary: HashSet<String> = vocabulary
            .into_iter()
            .flat_map(|w| {
                let w = w.to_ascii_lowercase();
                let name = w.split_once(',').map(|(_, n)| n.to_string());
                std::iter::once(w).chain(name)
            })
            .collect();
        let mut names: Vec<String> = hostnames
            .into_iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| h.len() >= 3 && !h.chars().any(char::is_whitespace))
            .collect();
        // Longest first, so `board.lan` is replaced whole before `board`.
        names.sort_by_key(|h| std::cmp::Reverse(h.len()));
        names.dedup();
        Self {
            hostnames: names
                .into_iter()
                .map(|lower| Host {
                    vocabulary: vocabulary.contains(&lower),
                    lower,
                })
                .collect(),
            macs: true,
            ..Self::default()
        }
    }

    /// Keeps host names and MAC addresses (`--full`); secrets and the home directory are still
    /// replaced.
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

    /// Free text (a log, a config file, a file name): secrets by `<redacted>`, host names by
    /// `<hostname>`, MACs by `<mac>`, the home directory by `~`.
    pub fn redact(&mut self, text: &str) -> String {
        self.text(text, HostRule::Words)
    }

    /// A JSON document, value by value (keys and structure kept), pretty-printed again; None
    /// when `data` is not JSON (then it is text).
    pub fn redact_json(&mut self, data: &[u8]) -> Option<Vec<u8>> {
        let mut doc: serde_json::Value = serde_json::from_slice(data).ok()?;
        self.value(&mut doc, None);
        let mut out = serde_json::to_vec_pretty(&doc).ok()?;
        out.push(b'\n');
        Some(out)
    }

    fn value(&mut self, v: &mut serde_json::Value, key: Option<&str>) {
        use serde_json::Value;
        match v {
            Value::String(s) => {
                let key_lower = key.map(str::to_ascii_lowercase);
                let k = key_lower.as_deref();
                if k.is_some_and(is_secret_key) && !s.is_empty() {
                    self.secrets_replaced += 1;
                    *s = SECRET.to_string();
                    return;
                }
                let rule = match k {
                    Some(k) if STRUCTURAL_KEYS.contains(&k) => HostRule::Never,
                    Some(k) if HOST_KEYS.contains(&k) => HostRule::HostField,
                    _ => HostRule::Words,
                };
                *s = self.text(s, rule);
            }
            // Array items take their key's rule (`"compatible": [...]`).
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i, key)),
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    self.value(item, Some(k));
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str, hosts: HostRule) -> String {
        let mut out = text.to_string();
        if let Some(home) = &self.home {
            out = out.replace(home.as_str(), "~");
        }
        let (o, n) = secrets(&out);
        self.secrets_replaced += n;
        out = o;
        if hosts != HostRule::Never {
            for h in &self.hostnames {
                let (o, n) = replace_host(&out, h, hosts == HostRule::HostField);
                self.hostnames_replaced += n;
                out = o;
            }
        }
        if self.macs {
            let (o, n) = replace_macs(&out);
            self.macs_replaced += n;
            out = o;
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostRule {
    /// Not in this value (a structural JSON field).
    Never,
    /// Whole words, outside device-tree compatibles; vocabulary names only in host contexts.
    Words,
    /// A field that holds a host name: every whole-word occurrence.
    HostField,
}

/// Bytes that continue a host-name word (a `.` does not: `rock5.lan` holds `rock5`).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A copy of `text` with spans replaced, in order, and how many were: the bookkeeping every
/// redaction pass shares.
struct Splice<'a> {
    text: &'a str,
    out: String,
    copied: usize,
    n: usize,
}

impl<'a> Splice<'a> {
    fn new(text: &'a str) -> Self {
        Splice {
            text,
            out: String::with_capacity(text.len()),
            copied: 0,
            n: 0,
        }
    }

    /// `text[start..end]` becomes `with`; `start` is at or after the previous span's end.
    fn replace(&mut self, start: usize, end: usize, with: &str) {
        self.out.push_str(&self.text[self.copied..start]);
        self.out.push_str(with);
        self.copied = end;
        self.n += 1;
    }

    fn finish(mut self) -> (String, usize) {
        self.out.push_str(&self.text[self.copied..]);
        (self.out, self.n)
    }
}

fn replace_host(text: &str, host: &Host, host_field: bool) -> (String, usize) {
    let lower = text.to_ascii_lowercase();
    let b = text.as_bytes();
    let mut out = Splice::new(text);
    let mut from = 0;
    while let Some(found) = lower[from..].find(&host.lower) {
        let i = from + found;
        let end = i + host.lower.len();
        from = i + lower[i..].chars().next().map_or(1, char::len_utf8);
        let whole =
            (i == 0 || !is_word_byte(b[i - 1])) && (end == b.len() || !is_word_byte(b[end]));
        // `vendor,name`: a device-tree compatible names the board, not the host.
        let compatible = i >= 2 && b[i - 1] == b',' && b[i - 2].is_ascii_alphanumeric();
        if !whole || compatible {
            continue;
        }
        if host.vocabulary && !host_field && !host_context(text, i) {
            continue;
        }
        out.replace(i, end, HOST);
        from = end;
    }
    out.finish()
}

/// How far back [`host_context`] looks (a syslog or ISO timestamp column fits).
const CONTEXT: usize = 48;

/// Whether the word at `i` stands where a host name does: after `hostname=`, `host: `, `@`,
/// `//`, or in the host column of a syslog line (`Dec  2 10:00:01 HOST kernel: ...`, or after an
/// ISO timestamp).
/// Only the [`CONTEXT`] bytes before the word are looked at, so that a long line with many
/// occurrences costs no more than a short one.
fn host_context(text: &str, i: usize) -> bool {
    let b = text.as_bytes();
    let window = &b[i.saturating_sub(CONTEXT)..i];
    // The line's start within the window; a line that starts before it has no timestamp column.
    let line_start = window.iter().rposition(|c| *c == b'\n').map(|p| p + 1);
    let before = window.to_ascii_lowercase();
    const AFTER: &[&str] = &[
        "hostname=",
        "hostname: ",
        "hostname ",
        "host=",
        "host: ",
        "nodename=",
        "@",
        "//",
    ];
    if AFTER.iter().any(|a| before.ends_with(a.as_bytes())) {
        return true;
    }
    let line = match line_start {
        Some(s) => &window[s..],
        None if i < CONTEXT => window,
        None => return false,
    };
    let Ok(line) = std::str::from_utf8(line) else {
        return false;
    };
    let p = line.as_bytes();
    let syslog = p.len() == 16
        && p[..3].iter().all(u8::is_ascii_alphabetic)
        && p[3] == b' '
        && p[6] == b' '
        && p[9] == b':'
        && p[12] == b':'
        && p[15] == b' ';
    let stamp = line.trim_end();
    let iso = line.ends_with(' ')
        && !stamp.contains(' ')
        && stamp.len() >= 19
        && stamp.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && stamp.as_bytes()[4] == b'-'
        && stamp.as_bytes()[10] == b'T';
    syslog || iso
}

/// Whether a key (`HF_TOKEN`, `api_key`, `password`, `Authorization`) names a secret: one of
/// its words (split at `_`, `-`, `.`) is a secret's name. `max_tokens` or `tokenizer` are not.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let words: Vec<&str> = key
        .split(['_', '-', '.', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    const ALONE: &[&str] = &[
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "apikey",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "passphrase",
    ];
    ALONE.iter().any(|w| has(w))
        || (has("key")
            && ["api", "access", "private", "secret", "auth", "client"]
                .iter()
                .any(|w| has(w)))
}

/// One redaction pass: the text with its matches replaced, and how many.
type Pass = fn(&str) -> (String, usize);

/// Every secret in `text` replaced by `<redacted>`; returns the text and how many.
fn secrets(text: &str) -> (String, usize) {
    let passes: [Pass; 4] = [assignments, bearer, url_passwords, known_tokens];
    let (mut out, mut n) = private_keys(text);
    for pass in passes {
        let (o, k) = pass(&out);
        out = o;
        n += k;
    }
    (out, n)
}

/// `-----BEGIN … PRIVATE KEY-----` to its `-----END … -----` line.
fn private_keys(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        // The armour line ends on this line: never a search past it (many `-----BEGIN ` on
        // one long line stay linear).
        let line_end = rest[start..].find('\n').map_or(rest.len(), |e| start + e);
        let head = &rest[start..line_end];
        let is_key = head.len() > 16 && head.ends_with("-----") && head.contains("PRIVATE KEY");
        let head_end = (line_end < rest.len()).then_some(line_end + 1);
        let Some(head_end) = head_end.filter(|_| is_key) else {
            out.push_str(&rest[..line_end]);
            rest = &rest[line_end..];
            continue;
        };
        let end = rest[head_end..]
            .find("-----END ")
            .and_then(|e| {
                let at = head_end + e;
                rest[at + 9..].find("-----").map(|f| at + 9 + f + 5)
            })
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        out.push_str("<redacted private key>");
        n += 1;
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, n)
}

/// `KEY=value`, `KEY: value`, `"KEY": "value"` where KEY names a secret ([`is_secret_key`]):
/// the value replaced (to the end of the line for `Authorization`).
fn assignments(text: &str) -> (String, usize) {
    let b = text.as_bytes();
    let mut out = Splice::new(text);
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'=' && b[i] != b':' {
            i += 1;
            continue;
        }
        // The key: the word before the operator (a closing quote may sit between).
        let mut k_end = i;
        if k_end > 0 && (b[k_end - 1] == b'"' || b[k_end - 1] == b'\'') {
            k_end -= 1;
        }
        let mut k_start = k_end;
        while k_start > 0 && (is_word_byte(b[k_start - 1]) || b[k_start - 1] == b'.') {
            k_start -= 1;
        }
        let key = &text[k_start..k_end];
        if key.is_empty() || !is_secret_key(key) {
            i += 1;
            continue;
        }
        // `://` is a URL, not an assignment.
        if b[i] == b':' && text[i..].starts_with("://") {
            i += 1;
            continue;
        }
        let mut v = i + 1;
        while v < b.len() && (b[v] == b' ' || b[v] == b'\t') {
            v += 1;
        }
        let quote = (v < b.len() && (b[v] == b'"' || b[v] == b'\'')).then(|| b[v]);
        if quote.is_some() {
            v += 1;
        }
        let whole_line = key.eq_ignore_ascii_case("authorization");
        let mut e = v;
        while e < b.len()
            && b[e] != b'\n'
            && match quote {
                Some(q) => b[e] != q,
                None if whole_line => true,
                None => !b" \t,;&)\"'".contains(&b[e]),
            }
        {
            e += 1;
        }
        let value = &text[v..e];
        if value.is_empty() || value == SECRET {
            i = e.max(i + 1);
            continue;
        }
        out.replace(v, e, SECRET);
        i = e.max(i + 1);
    }
    out.finish()
}

/// `Bearer <token>` (and `Basic`, `token`) after an authorization header or anywhere.
fn bearer(text: &str) -> (String, usize) {
    let lower = text.to_ascii_lowercase();
    let b = text.as_bytes();
    let mut out = Splice::new(text);
    let mut from = 0;
    while let Some(f) = lower[from..].find("bearer ") {
        let start = from + f + "bearer ".len();
        from = start;
        if from - "bearer ".len() > 0 && is_word_byte(b[from - "bearer ".len() - 1]) {
            continue;
        }
        let mut e = start;
        while e < b.len() && (is_word_byte(b[e]) || b"./+=~".contains(&b[e])) {
            e += 1;
        }
        if e - start < 8 || &text[start..e] == SECRET {
            continue;
        }
        out.replace(start, e, SECRET);
        from = e;
    }
    out.finish()
}

/// `scheme://user:password@host`: the password replaced.
fn url_passwords(text: &str) -> (String, usize) {
    let mut out = Splice::new(text);
    let mut from = 0;
    while let Some(f) = text[from..].find("://") {
        let auth_start = from + f + 3;
        from = auth_start;
        let auth_end = text[auth_start..]
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .map_or(text.len(), |e| auth_start + e);
        let authority = &text[auth_start..auth_end];
        let Some(at) = authority.rfind('@') else {
            continue;
        };
        let Some(colon) = authority[..at].find(':') else {
            continue;
        };
        let (p_start, p_end) = (auth_start + colon + 1, auth_start + at);
        if p_start == p_end || &text[p_start..p_end] == SECRET {
            continue;
        }
        out.replace(p_start, p_end, SECRET);
        from = p_end;
    }
    out.finish()
}

/// Tokens recognisable by their prefix: Hugging Face, GitHub, GitLab, OpenAI and Anthropic,
/// Slack, AWS access key ids, Google API keys, JSON Web Tokens.
fn known_tokens(text: &str) -> (String, usize) {
    // (prefix, shortest body after it)
    const PREFIXES: &[(&str, usize)] = &[
        ("hf_", 20),
        ("ghp_", 20),
        ("gho_", 20),
        ("ghu_", 20),
        ("ghs_", 20),
        ("ghr_", 20),
        ("github_pat_", 20),
        ("glpat-", 16),
        ("sk-", 20),
        ("xoxb-", 10),
        ("xoxp-", 10),
        ("xoxa-", 10),
        ("xoxr-", 10),
        ("xoxs-", 10),
        ("AKIA", 16),
        ("ASIA", 16),
        ("AIza", 30),
        ("eyJ", 20),
    ];
    let b = text.as_bytes();
    let mut out = Splice::new(text);
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !(is_word_byte(b[i - 1]) || b[i - 1] == b'.');
        let hit = boundary
            .then(|| {
                PREFIXES.iter().find_map(|(p, min)| {
                    if !b[i..].starts_with(p.as_bytes()) {
                        return None;
                    }
                    let body = i + p.len();
                    let mut e = body;
                    let jwt = *p == "eyJ";
                    while e < b.len() && (is_word_byte(b[e]) || (jwt && b[e] == b'.')) {
                        e += 1;
                    }
                    let long_enough = e - body >= *min;
                    // A JWT is three dot-separated parts.
                    let shaped = !jwt || text[i..e].matches('.').count() == 2;
                    (long_enough && shaped).then_some(e)
                })
            })
            .flatten();
        match hit {
            Some(e) => {
                out.replace(i, e, SECRET);
                i = e;
            }
            None => i += 1,
        }
    }
    out.finish()
}

/// Every spelling of a MAC address: six pairs of hex digits joined by `:` or `-` (as `ip link`
/// and dmesg print them), single-digit groups with `:` (`0:1b:2c:3:4:5f`), three groups of four
/// joined by `.` (`aabb.ccdd.eeff`, as switches print them), and twelve bare hex digits after
/// `ether`, `hwaddr`, `lladdr`, `mac` or `address`. Not part of a longer hex run. Returns the
/// text and the number of addresses replaced.
fn replace_macs(text: &str) -> (String, usize) {
    let b = text.as_bytes();
    let mut out = Splice::new(text);
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !is_mac_char(b[i - 1]);
        match boundary.then(|| mac_at(text, i)).flatten() {
            Some(len) => {
                out.replace(i, i + len, MAC);
                i += len;
            }
            None => i += 1,
        }
    }
    out.finish()
}

fn is_mac_char(c: u8) -> bool {
    c.is_ascii_hexdigit() || c == b':' || c == b'-' || c == b'.'
}

/// The length of a MAC address starting at `i`, if one does.
fn mac_at(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let hex_run = |from: usize, max: usize| {
        b[from..]
            .iter()
            .take(max + 1)
            .take_while(|c| c.is_ascii_hexdigit())
            .count()
    };
    let ends_clean = |end: usize| {
        end == b.len()
            || !(b[end].is_ascii_hexdigit()
                || is_mac_char(b[end]) && end + 1 < b.len() && b[end + 1].is_ascii_hexdigit())
    };
    // Groups joined by one separator.
    for (sep, groups, min, max) in [(b':', 6, 1, 2), (b'-', 6, 2, 2), (b'.', 3, 4, 4)] {
        let mut at = i;
        let mut ok = true;
        for g in 0..groups {
            let run = hex_run(at, max);
            if run < min || run > max {
                ok = false;
                break;
            }
            at += run;
            if g + 1 < groups {
                if at >= b.len() || b[at] != sep {
                    ok = false;
                    break;
                }
                at += 1;
            }
        }
        if ok && ends_clean(at) {
            return Some(at - i);
        }
    }
    // Twelve bare hex digits, only right after a word that announces an address.
    if hex_run(i, 12) == 12 {
        // Only the few bytes before it: a file of hex runs stays linear.
        let from = (0..=i.saturating_sub(16))
            .rev()
            .find(|f| text.is_char_boundary(*f))
            .unwrap_or(0);
        let before = text[from..i].to_ascii_lowercase();
        let before = before.trim_end_matches([' ', '=', ':', '\t']);
        let announced = ["ether", "hwaddr", "lladdr", "mac", "macaddr", "address"]
            .iter()
            .any(|w| before.ends_with(w));
        if announced && before.len() < i - from {
            return Some(12);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> String {
        Redactor::new([], []).redact(text)
    }

    #[test]
    fn macs_are_replaced_in_every_spelling_and_counted() {
        let mut r = Redactor::new([], []);
        let text = "eth0: 6a:1f:0e:aa:B3:07 up\nwlan 00-11-22-33-44-55\nswitch aabb.ccdd.eeff\nbr0 0:1b:2c:3:4:5f\nlink/ether 6a1f0eaab307 brd\n";
        assert_eq!(
            r.redact(text),
            "eth0: <mac> up\nwlan <mac>\nswitch <mac>\nbr0 <mac>\nlink/ether <mac> brd\n"
        );
        assert_eq!(r.macs_replaced, 5);
    }

    #[test]
    fn longer_hex_runs_times_versions_and_mixed_separators_are_not_macs() {
        for text in [
            "sha 6a:1f:0e:aa:b3:07:99 x 6a:1f-0e:aa:b3:07 deadbeefdeadbeef",
            "at 10:00:01 and 2026-12-04, fe80::1, 2001:db8:0:0:1:0:0:1",
            "Mesa 26.1.6, build 0123456789ab, aabb.ccdd.eeff.0011",
            "commit 8cf427ff0a1b",
        ] {
            let mut r = Redactor::new([], []);
            assert_eq!(r.redact(text), text);
            assert_eq!(r.macs_replaced, 0, "{text}");
        }
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
    fn host_names_are_replaced_as_whole_words_longest_first_and_short_ones_ignored() {
        let mut r = Redactor::new(["rock5".into(), "rock5.lan".into(), "pi".into()], []);
        assert_eq!(
            r.redact("ssh rock5.lan; pi@rock5 ready; Rock5 up; rock5b is another; /logs/rock5.log"),
            "ssh <hostname>; pi@<hostname> ready; <hostname> up; rock5b is another; /logs/<hostname>.log"
        );
        assert_eq!(r.hostnames_replaced, 4);
    }

    #[test]
    fn a_host_name_that_is_a_device_tree_word_keeps_the_compatible_and_the_json_structure() {
        let mut r = Redactor::new(
            ["rock-5-itx".into()],
            ["radxa,rock-5-itx".to_string(), "boltzmann".to_string()],
        );
        let doc = br#"{"board": {"id": "boltzmann", "compatible": ["radxa,rock-5-itx", "rockchip,rk3588"]},
            "checks": [{"summary": "Radxa ROCK 5 ITX", "evidence": ["compatible: radxa,rock-5-itx, rockchip,rk3588"]}],
            "log": "Dec  2 10:00:01 rock-5-itx kernel: panthor up", "hostname": "rock-5-itx"}"#;
        let out = String::from_utf8(r.redact_json(doc).unwrap()).unwrap();
        assert_eq!(out.matches("radxa,rock-5-itx").count(), 2, "{out}");
        assert!(out.contains("\"<hostname>\""), "the hostname field: {out}");
        assert!(
            out.contains("10:00:01 <hostname> kernel"),
            "the syslog host column: {out}"
        );
        assert_eq!(r.hostnames_replaced, 2);
        // A word of the vocabulary stays a word in free text.
        let mut r = Redactor::new(["boltzmann".into()], ["boltzmann".to_string()]);
        assert_eq!(
            r.redact("sudo rvl setup --board boltzmann; root@boltzmann:~#"),
            "sudo rvl setup --board boltzmann; root@<hostname>:~#"
        );
    }

    #[test]
    fn structural_json_fields_are_never_rewritten_for_a_host_name() {
        let mut r = Redactor::new(["lab-board".into()], []);
        let doc = br#"{"profile": "lab-board", "notes": ["ran on lab-board"]}"#;
        let out = String::from_utf8(r.redact_json(doc).unwrap()).unwrap();
        assert!(out.contains("\"profile\": \"lab-board\""), "{out}");
        assert!(out.contains("ran on <hostname>"), "{out}");
        assert!(r.redact_json(b"not json").is_none());
    }

    /// The shapes real secrets take in logs, environment dumps and configs.
    #[test]
    fn a_corpus_of_secret_shapes_is_redacted_and_lookalikes_are_kept() {
        let cases: &[(&str, &str)] = &[
            ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "HF_TOKEN=<redacted>"),
            ("export HUGGING_FACE_HUB_TOKEN='hf_xyz0123456789abcdefghij'", "export HUGGING_FACE_HUB_TOKEN='<redacted>'"),
            ("curl ...?token=abc123def456&x=1", "curl ...?token=<redacted>&x=1"),
            ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI_API_KEY=<redacted>"),
            ("api_key: 0123456789abcdef0123", "api_key: <redacted>"),
            ("\"password\": \"hunter2\"", "\"password\": \"<redacted>\""),
            ("DB_PASSWORD=s3cr3t!", "DB_PASSWORD=<redacted>"),
            ("Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4", "Authorization: <redacted>"),
            ("header: Bearer abcdefghijklmnop", "header: Bearer <redacted>"),
            ("git clone https://alice:ghp_0123456789abcdefghijklmnopqrstuv@github.com/x/y", "git clone https://alice:<redacted>@github.com/x/y"),
            ("pip index https://user:pa55word@pypi.example.org/simple", "pip index https://user:<redacted>@pypi.example.org/simple"),
            ("found ghp_0123456789abcdefghijklmnopqrstuvwxyz in log", "found <redacted> in log"),
            ("gitlab glpat-abcdefghij0123456789", "gitlab <redacted>"),
            ("slack xoxb-123456789012-abcdefghij", "slack <redacted>"),
            ("aws AKIAIOSFODNN7EXAMPLE key", "aws <redacted> key"),
            ("google AIzaSyA-abcdefghijklmnopqrstuvwxyz012345", "google <redacted>"),
            ("anthropic sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "anthropic <redacted>"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\nnext", "<redacted private key>\nnext"),
        ];
        for (text, want) in cases {
            let mut r = Redactor::full();
            assert_eq!(r.redact(text), *want, "{text}");
            assert!(r.secrets_replaced >= 1, "{text}");
        }
        for keep in [
            "prompt_tokens: 512, max_tokens=64, tokenizer.ggml.tokens",
            "n_tokens = 4096; key=value; monkey=1",
            "https://archive.mesa3d.org/mesa-26.1.6.tar.xz",
            "sk-1 is short; hf_x too; ask-me-anything",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "sha256 43c3c36b914c031d88ae152fd89019d8f99ad41d9879fb5ab7496ed13f7b378b",
        ] {
            let mut r = Redactor::full();
            assert_eq!(r.redact(keep), keep);
            assert_eq!(r.secrets_replaced, 0, "{keep}");
        }
        // In JSON, a value under a secret key goes whole.
        let mut r = Redactor::full();
        let out = r
            .redact_json(br#"{"env": {"HF_TOKEN": "hf_short", "VK_ICD_FILENAMES": "/x.json"}}"#)
            .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("\"HF_TOKEN\": \"<redacted>\""), "{out}");
        assert!(out.contains("/x.json"), "{out}");
    }

    #[test]
    fn redact_is_shorthand_for_a_redactor_without_hosts() {
        assert_eq!(redact("a 6a:1f:0e:aa:b3:07"), "a <mac>");
    }
}
