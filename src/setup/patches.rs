//! Patch series (`patches/<project>/`): embedded in the binary at build time, or read from a
//! directory named by `RVL_PATCHES_DIR` (development and tests; `settings.vars.patches_dir`).
//! setup loads the series it needs once, before planning ([`Series::load`]), so the planner
//! and apply work from the same bytes. Order: the `series` file when
//! there is one (quilt's convention: one name a line, `#` comments), else every `*.patch` by
//! name. A missing or empty series means "no patches". Applied with `patch -p1`.
//!
//! A project may also have candidates (`patches/<project>/candidates/`, ordered the same way):
//! changes the lab measured that no board has run yet. They are applied after the series only
//! when asked (`rvl setup --mesa-candidates`), and never count as part of the series.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::Error;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_patches.rs"));
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// `project/file.patch`, as error messages show it.
    pub name: String,
    pub data: Vec<u8>,
}

/// The loaded series of the projects a run builds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Series {
    by_project: BTreeMap<String, Vec<Patch>>,
}

impl Series {
    /// Load the series of each of `projects`, from `dir` when given, else the embedded copy;
    /// for the projects also in `with_candidates`, the candidates follow the series (a project
    /// asked for that has none is a usage error: the flag would do nothing).
    pub fn load(
        dir: Option<&Path>,
        projects: &[&str],
        with_candidates: &[&str],
    ) -> anyhow::Result<Series> {
        let mut by_project = BTreeMap::new();
        for p in projects {
            let mut patches = series(p, dir)?;
            if with_candidates.contains(p) {
                let more = candidates(p, dir)?;
                if more.is_empty() {
                    return Err(Error::Usage(format!(
                        "this rvl has no candidate {p} patches (patches/{p}/candidates/ is empty or missing)"
                    ))
                    .into());
                }
                patches.extend(more);
            }
            by_project.insert(p.to_string(), patches);
        }
        Ok(Series { by_project })
    }

    /// The series of `project`; empty when it has none or was not loaded.
    pub fn get(&self, project: &str) -> &[Patch] {
        self.by_project
            .get(project)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// The directory, relative to a series directory, that holds a project's candidates.
pub const CANDIDATES_DIR: &str = "candidates";

/// The candidates for `project`, from `dir/<project>/candidates` or the embedded copy; named
/// `<project>/candidates/<file>`.
pub fn candidates(project: &str, dir: Option<&Path>) -> anyhow::Result<Vec<Patch>> {
    series(&format!("{project}/{CANDIDATES_DIR}"), dir)
}

/// Whether a patch name (as a series or a build stamp gives it) is a candidate's.
pub fn is_candidate(name: &str) -> bool {
    name.split('/').any(|part| part == CANDIDATES_DIR)
}

/// The series for `sub` ("mesa", "llama.cpp", or a project's candidates, "mesa/candidates"),
/// from `dir/<sub>` or the embedded copy: the files directly in it, not those of its
/// subdirectories.
pub fn series(sub: &str, dir: Option<&Path>) -> anyhow::Result<Vec<Patch>> {
    match dir {
        Some(dir) => load_dir(&dir.join(sub), sub),
        None => {
            let prefix = format!("{sub}/");
            let files: Vec<(String, Vec<u8>)> = embedded::EMBEDDED
                .iter()
                .filter_map(|(p, d)| p.strip_prefix(&prefix).map(|n| (n.to_string(), d.to_vec())))
                .filter(|(n, _)| !n.contains('/'))
                .collect();
            order(sub, files)
        }
    }
}

/// Read a series from a directory (missing directory: no patches).
pub fn load_dir(dir: &Path, project: &str) -> anyhow::Result<Vec<Patch>> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_file() {
            let data = crate::host::root::read_regular(&e.path(), crate::host::root::INPUT_CAP)
                .map_err(|err| Error::io("cannot read", e.path(), err))?;
            files.push((name, data));
        }
    }
    order(project, files)
}

fn order(project: &str, mut files: Vec<(String, Vec<u8>)>) -> anyhow::Result<Vec<Patch>> {
    files.sort();
    let find = |name: &str| {
        files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.clone())
    };
    let names: Vec<String> = match find("series") {
        Some(series) => {
            let text = String::from_utf8_lossy(&series).into_owned();
            let mut names = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.is_empty() {
                    continue;
                }
                // quilt allows options after the name (e.g. -p1); only -p1 is supported.
                let mut words = line.split_whitespace();
                let name = words.next().unwrap_or_default().to_string();
                if let Some(opt) = words.find(|w| *w != "-p1") {
                    return Err(Error::BadInput(format!("patches/{project}/series line {}: option `{opt}` is not supported (only -p1)", i + 1)).into());
                }
                if find(&name).is_none() {
                    return Err(Error::BadInput(format!(
                        "patches/{project}/series line {}: `{name}` is not in the series directory",
                        i + 1
                    ))
                    .into());
                }
                names.push(name);
            }
            names
        }
        None => files
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| n.ends_with(".patch") || n.ends_with(".diff"))
            .collect(),
    };
    Ok(names
        .into_iter()
        .map(|n| Patch {
            data: find(&n).unwrap_or_default(),
            name: format!("{project}/{n}"),
        })
        .collect())
}

/// Apply each patch in order to `tree` with `patch -p1`; the first that does not apply stops
/// the series with an error naming it and quoting what `patch` said. Output goes to `log`.
pub fn apply(tree: &Path, patches: &[Patch], log: &mut dyn Write) -> anyhow::Result<()> {
    for p in patches {
        let _ = writeln!(log, "== patch -p1 < {}", p.name);
        let mut child = Command::new("patch")
            .args([
                "-p1",
                "--forward",
                "--batch",
                "--no-backup-if-mismatch",
                "-r",
                "-",
            ])
            .current_dir(tree)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::Tool(format!("cannot run `patch`: {e}")))?;
        let data = p.data.clone();
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let writer = std::thread::spawn(move || stdin.write_all(&data));
        let out = child.wait_with_output()?;
        let _ = writer.join();
        let _ = log.write_all(&out.stdout);
        let _ = log.write_all(&out.stderr);
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stdout);
            let said: Vec<&str> = said
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(6)
                .collect();
            return Err(Error::Tool(format!(
                "patch {} does not apply to {}:\n    {}",
                p.name,
                tree.file_name().unwrap_or_default().to_string_lossy(),
                said.join("\n    ")
            ))
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n";
    const BAD: &str = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n uno\n-dos\n+DOS\n";

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("f.txt"), "one\ntwo\n").unwrap();
        d
    }

    fn patch(name: &str, text: &str) -> Patch {
        Patch {
            name: name.into(),
            data: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn series_applies_in_order() {
        let d = tree();
        let mut log = Vec::new();
        apply(d.path(), &[patch("p/0001.patch", GOOD)], &mut log).unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("f.txt")).unwrap(),
            "one\nTWO\n"
        );
        assert!(String::from_utf8_lossy(&log).contains("p/0001.patch"));
    }

    #[test]
    fn patch_that_does_not_apply_is_named() {
        let d = tree();
        let err = apply(
            d.path(),
            &[
                patch("p/0001-good.patch", GOOD),
                patch("p/0002-bad.patch", BAD),
            ],
            &mut Vec::new(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("patch p/0002-bad.patch does not apply"),
            "{msg}"
        );
        assert!(!d.path().join("f.txt.rej").exists());
        assert!(!d.path().join("f.txt.orig").exists());
    }

    #[test]
    fn series_file_orders_and_missing_dir_is_empty() {
        let d = tempfile::tempdir().unwrap();
        assert!(load_dir(&d.path().join("none"), "x").unwrap().is_empty());
        fs::write(d.path().join("a.patch"), GOOD).unwrap();
        fs::write(d.path().join("b.patch"), GOOD).unwrap();
        fs::write(d.path().join("README.md"), "doc").unwrap();
        let names: Vec<_> = load_dir(d.path(), "x")
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["x/a.patch", "x/b.patch"]);
        fs::write(d.path().join("series"), "# order\nb.patch\na.patch -p1\n").unwrap();
        let names: Vec<_> = load_dir(d.path(), "x")
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["x/b.patch", "x/a.patch"]);
        fs::write(d.path().join("series"), "c.patch\n").unwrap();
        let err = load_dir(d.path(), "x").unwrap_err();
        assert!(
            err.to_string().contains("series line 1: `c.patch`"),
            "{err}"
        );
    }

    #[test]
    fn the_embedded_mesa_series_is_the_queue_tls_series_for_the_pinned_release() {
        let mesa = series("mesa", None).unwrap();
        let names: Vec<&str> = mesa.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch",
                "mesa/0002-panfrost-compute-TLS-and-WLS-buffer-sizes-in-64-bits.patch"
            ]
        );
        assert!(names[0].ends_with(crate::mesa::TLS_PATCH_SUFFIX));
        let loaded = Series::load(None, &["mesa"], &[]).unwrap();
        assert_eq!(loaded.get("mesa").len(), 2);
        assert!(loaded.get("llama.cpp").is_empty());
    }

    #[test]
    fn the_embedded_mesa_candidates_follow_the_series_only_when_asked_for() {
        let names =
            |s: &Series| -> Vec<String> { s.get("mesa").iter().map(|p| p.name.clone()).collect() };
        let plain = Series::load(None, &["mesa"], &[]).unwrap();
        assert!(
            names(&plain).iter().all(|n| !is_candidate(n)),
            "{:?}",
            names(&plain)
        );
        let with = Series::load(None, &["mesa"], &["mesa"]).unwrap();
        let with = names(&with);
        assert_eq!(&with[..2], &names(&plain)[..]);
        assert_eq!(
            &with[2..],
            ["mesa/candidates/0001-pan-bi-fold-constant-shared-memory-offsets-into-the-access.patch"]
        );
        assert!(is_candidate(&with[2]) && !is_candidate(&with[0]));
        // llama.cpp has no candidates: asking for them is an error, not a silent no-op.
        let err = Series::load(None, &["llama.cpp"], &["llama.cpp"]).unwrap_err();
        assert!(
            err.to_string().contains("no candidate llama.cpp patches"),
            "{err}"
        );
    }

    #[test]
    fn candidates_in_a_directory_keep_their_own_order_and_stay_out_of_the_series() {
        let d = tempfile::tempdir().unwrap();
        let mesa = d.path().join("mesa");
        fs::create_dir_all(mesa.join("candidates")).unwrap();
        fs::write(mesa.join("0001-a.patch"), GOOD).unwrap();
        fs::write(mesa.join("candidates/0002-z.patch"), GOOD).unwrap();
        fs::write(mesa.join("candidates/0001-y.patch"), GOOD).unwrap();
        fs::write(
            mesa.join("candidates/series"),
            "0002-z.patch\n0001-y.patch\n",
        )
        .unwrap();
        let names = |with: &[&str]| -> Vec<String> {
            Series::load(Some(d.path()), &["mesa"], with)
                .unwrap()
                .get("mesa")
                .iter()
                .map(|p| p.name.clone())
                .collect()
        };
        assert_eq!(names(&[]), ["mesa/0001-a.patch"]);
        assert_eq!(
            names(&["mesa"]),
            [
                "mesa/0001-a.patch",
                "mesa/candidates/0002-z.patch",
                "mesa/candidates/0001-y.patch"
            ]
        );
        fs::write(mesa.join("candidates/series"), "0003-gone.patch\n").unwrap();
        let err = Series::load(Some(d.path()), &["mesa"], &["mesa"]).unwrap_err();
        assert!(
            err.to_string()
                .contains("patches/mesa/candidates/series line 1: `0003-gone.patch`"),
            "{err}"
        );
    }
}
