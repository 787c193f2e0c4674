//! Kernel release ordering as Debian's `linux-version sort` does it, which is what
//! u-boot-update uses to number its `lN` labels (highest release = `l0`).
//!
//! `linux-version` turns a release candidate suffix into a tilde (`7.0.0-rc3` → `7.0.0~rc3`, so an
//! rc sorts below its final release) and then compares with dpkg's version algorithm.

use std::cmp::Ordering;

/// Compare two kernel releases the way `linux-version sort` does.
pub fn compare_releases(a: &str, b: &str) -> Ordering {
    dpkg_compare(&tilde_rc(a), &tilde_rc(b))
}

/// Sort releases highest first, as u-boot-update lists them.
pub fn sort_releases_desc(releases: &mut [String]) {
    releases.sort_by(|a, b| compare_releases(b, a));
}

/// `-rcN` / `.rcN` / `rcN` right after the numeric version becomes `~rcN`.
fn tilde_rc(release: &str) -> String {
    let numeric_end = release
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(release.len());
    let (head, tail) = release.split_at(numeric_end);
    for sep in ["-rc", ".rc", "rc"] {
        if let Some(rest) = tail.strip_prefix(sep) {
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                return format!("{head}~rc{rest}");
            }
        }
    }
    release.to_string()
}

/// dpkg's `verrevcmp`: non-digit runs compare by a weight where `~` sorts before everything
/// (even the end of the string) and letters before other characters; digit runs compare
/// numerically.
pub fn dpkg_compare(a: &str, b: &str) -> Ordering {
    fn weight(c: Option<u8>) -> i32 {
        match c {
            None => 0,
            Some(c) if c.is_ascii_digit() => 0,
            Some(c) if c.is_ascii_alphabetic() => c as i32,
            Some(b'~') => -1,
            Some(c) => c as i32 + 256,
        }
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0usize, 0usize);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (wa, wb) = (weight(a.get(i).copied()), weight(b.get(j).copied()));
            if wa != wb {
                return wa.cmp(&wb);
            }
            i += 1;
            j += 1;
        }
        while i < a.len() && a[i] == b'0' {
            i += 1;
        }
        while j < b.len() && b[j] == b'0' {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while i < a.len() && j < b.len() && a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            if first_diff == Ordering::Equal {
                first_diff = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if i < a.len() && a[i].is_ascii_digit() {
            return Ordering::Greater;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            return Ordering::Less;
        }
        if first_diff != Ordering::Equal {
            return first_diff;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mainline_rc_sorts_above_the_vendor_kernel() {
        let mut v = vec![
            "6.1.75-npu-port".to_string(),
            "7.0.0-rc3-marfrit-A1".to_string(),
        ];
        sort_releases_desc(&mut v);
        assert_eq!(v[0], "7.0.0-rc3-marfrit-A1");
    }

    #[test]
    fn rc_sorts_below_its_release_and_numbers_compare_numerically() {
        assert_eq!(compare_releases("7.0.0-rc3", "7.0.0"), Ordering::Less);
        assert_eq!(compare_releases("6.10.0", "6.9.12"), Ordering::Greater);
        assert_eq!(
            compare_releases("6.1.84-8-rk2410", "6.1.84-10-rk2410"),
            Ordering::Less
        );
        assert_eq!(compare_releases("6.1.75", "6.1.75"), Ordering::Equal);
    }

    #[test]
    fn dpkg_tilde_rules() {
        assert_eq!(dpkg_compare("1.0~rc1", "1.0"), Ordering::Less);
        assert_eq!(dpkg_compare("1.0a", "1.0"), Ordering::Greater);
        assert_eq!(dpkg_compare("1.0-1", "1.0a"), Ordering::Greater);
        assert_eq!(dpkg_compare("", "~"), Ordering::Greater);
    }
}
