//! The build stamp setup writes last into an install prefix (`share/rvl/build.json`), read
//! through the root. Its absence means the build never finished; a stamp that is there but
//! cannot be read or parsed is reported, not taken as absent.

use super::Root;
use crate::inventory::LlamaStamp as BuildStamp;

/// Build stamps are a few hundred bytes.
const STAMP_CAP: u64 = 64 << 10;

/// rvl's install prefixes whose directory name starts with `name` (`mesa-`, `llama.cpp-`),
/// newest version first.
pub fn prefixes(root: &Root, name: &str) -> Vec<String> {
    let parent = crate::llama::PREFIX_PARENT;
    let mut names: Vec<String> = root
        .list_dir(parent)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(name))
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(crate::llama::version_key(n)));
    names.into_iter().map(|n| format!("{parent}/{n}")).collect()
}

/// (the stamp, why it is there but unusable) for the install at `prefix`.
pub fn read(root: &Root, prefix: &str) -> (Option<BuildStamp>, Option<String>) {
    let path = format!("{prefix}/{}", crate::setup::paths::BUILD_STAMP);
    if !root.exists(&path) {
        return (None, None);
    }
    match root.read_capped(&path, STAMP_CAP) {
        Ok(b) => match serde_json::from_slice::<BuildStamp>(&b) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(format!("{path}: not a build stamp ({e})"))),
        },
        Err(e) => (None, Some(format!("{path}: {}", super::root::describe(&e)))),
    }
}
