//! The build stamp setup writes last into an install prefix (`share/rvl/build.json`), read
//! through the root. Its absence means the build never finished; a stamp that is there but
//! cannot be read or parsed is reported, not taken as absent.

use super::Root;
use crate::inventory::LlamaStamp as BuildStamp;

/// Build stamps are a few hundred bytes.
const STAMP_CAP: u64 = 64 << 10;

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
