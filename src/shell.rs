//! Quoting for the shell commands rvl prints as fixes. Driver names, paths, releases and group
//! names come from the inspected tree; a user pastes the fix into a root shell, so each
//! interpolated string must stay one word (`x;reboot;#` is printed as `'x;reboot;#'`).

use std::borrow::Cow;

/// `s` as one POSIX shell word: unchanged when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside becomes `'\''`).
pub fn quote(s: &str) -> Cow<'_, str> {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("'{}'", s.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh -c 'printf %s WORD'` makes of a quoted word: the original string, as one word.
    fn through_sh(word: &str) -> Vec<String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("for a in {word}; do printf '%s\\0' \"$a\"; done"))
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn plain_words_stay_as_they_are() {
        for s in [
            "panthor",
            "/sys/bus/platform/drivers/mali/unbind",
            "7.0.0-rc3-marfrit-A1",
        ] {
            assert_eq!(quote(s), s);
        }
    }

    #[test]
    fn a_hostile_string_reaches_the_shell_as_one_inert_word() {
        for s in [
            "x;reboot;#",
            "a b",
            "$(reboot)",
            "`reboot`",
            "it's",
            "'",
            "",
            "a\nreboot",
            "*",
            "~root",
            "x|y&z>w",
        ] {
            let q = quote(s);
            assert_eq!(through_sh(&q), vec![s.to_string()], "{s:?} quoted as {q}");
        }
    }
}
