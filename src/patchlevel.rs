//! How a build's applied patches (its build stamp) compare with the series embedded in this rvl
//! binary, pure data. Each project has one patch that matters most to the board owner (llama.cpp:
//! the Mali tiles patch; Mesa: the queue TLS patch); the level says whether the build carries it,
//! in this rvl's revision or another, beside one line per patch.

use crate::inventory::StampPatch;

/// rvl's series for `project` ("mesa", "llama.cpp") as (name, sha256), from the embedded copy.
pub fn rvl_series(project: &str) -> Vec<(String, String)> {
    crate::setup::patches::series(project, None)
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.name.clone(), crate::digest::sha256_hex(&p.data)))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchLevel {
    /// The key patch (the one whose name ends with the project's suffix).
    pub key: Key,
    /// Patches of this rvl's series found in the build with the same bytes.
    pub current: usize,
    /// The series' length.
    pub of: usize,
    /// Candidate patches in the build (`<project>/candidates/`, `rvl setup --mesa-candidates`):
    /// measured in the lab, not yet run on a board.
    pub candidates: usize,
    /// One line per patch of the build or the series: `name: …`.
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// In the build, byte for byte the one this rvl carries (or this rvl carries none to compare).
    Current,
    /// In the build, but another revision than this rvl's.
    Older,
    Missing,
}

fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The level of a build that applied `applied`, against `series`; the key patch is the one whose
/// file name ends with `key_suffix` (names compare without their `project/` directory).
pub fn level(applied: &[StampPatch], series: &[(String, String)], key_suffix: &str) -> PatchLevel {
    let in_build = |n: &str| applied.iter().find(|p| base(&p.name) == base(n));
    let mut lines = Vec::new();
    let mut current = 0;
    for (name, sha) in series {
        let line = match in_build(name) {
            Some(p) if &p.sha256 == sha => {
                current += 1;
                "applied"
            }
            Some(_) => "applied, an older revision",
            None => "not applied",
        };
        lines.push(format!("{}: {line}", base(name)));
    }
    let mut candidates = 0;
    for p in applied {
        if crate::setup::patches::is_candidate(&p.name) {
            candidates += 1;
            lines.push(format!(
                "{}: candidate, applied (measured in the lab, not yet run on a G610)",
                base(&p.name)
            ));
        } else if !series.iter().any(|(n, _)| base(n) == base(&p.name)) {
            lines.push(format!(
                "{}: applied, not in this rvl's series",
                base(&p.name)
            ));
        }
    }
    let key_build = applied.iter().find(|p| base(&p.name).ends_with(key_suffix));
    let key_series = series.iter().find(|(n, _)| base(n).ends_with(key_suffix));
    let key = match (key_build, key_series) {
        (None, _) => Key::Missing,
        (Some(b), Some((_, sha))) if &b.sha256 != sha => Key::Older,
        (Some(_), _) => Key::Current,
    };
    PatchLevel {
        key,
        current,
        of: series.len(),
        candidates,
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(patches: &[(&str, &str)]) -> Vec<StampPatch> {
        patches
            .iter()
            .map(|(n, s)| StampPatch {
                name: n.to_string(),
                sha256: s.to_string(),
            })
            .collect()
    }

    fn series() -> Vec<(String, String)> {
        vec![
            ("p/0001-key-fix.patch".into(), "aa".into()),
            ("p/0002-other.patch".into(), "bb".into()),
        ]
    }

    #[test]
    fn a_build_with_the_whole_series_is_at_the_current_level() {
        let l = level(
            &applied(&[("p/0001-key-fix.patch", "aa"), ("p/0002-other.patch", "bb")]),
            &series(),
            "-key-fix.patch",
        );
        assert_eq!((l.key, l.current, l.of), (Key::Current, 2, 2));
    }

    #[test]
    fn an_older_key_patch_a_missing_one_and_a_foreign_one_are_told_apart() {
        let l = level(
            &applied(&[("0001-key-fix.patch", "zz")]),
            &series(),
            "-key-fix.patch",
        );
        assert_eq!((l.key, l.current), (Key::Older, 0));
        assert!(l.lines.iter().any(|x| x.contains("older revision")));
        let l = level(&[], &series(), "-key-fix.patch");
        assert_eq!(l.key, Key::Missing);
        assert!(l.lines.iter().all(|x| x.ends_with("not applied")));
        let l = level(
            &applied(&[("p/0009-x.patch", "cc")]),
            &series(),
            "-key-fix.patch",
        );
        assert!(l
            .lines
            .contains(&"0009-x.patch: applied, not in this rvl's series".to_string()));
    }

    #[test]
    fn a_candidate_in_the_build_is_counted_and_named_as_one_not_as_a_foreign_patch() {
        let l = level(
            &applied(&[
                ("p/0001-key-fix.patch", "aa"),
                ("p/0002-other.patch", "bb"),
                ("p/candidates/0001-faster.patch", "cc"),
            ]),
            &series(),
            "-key-fix.patch",
        );
        assert_eq!(
            (l.key, l.current, l.of, l.candidates),
            (Key::Current, 2, 2, 1)
        );
        assert!(l.lines.contains(
            &"0001-faster.patch: candidate, applied (measured in the lab, not yet run on a G610)"
                .to_string()
        ));
        assert!(!l
            .lines
            .iter()
            .any(|x| x.contains("not in this rvl's series")));
        assert_eq!(level(&[], &series(), "-key-fix.patch").candidates, 0);
    }
}
