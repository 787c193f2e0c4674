//! Embed the patch series under `patches/` (`patches/<project>/*.patch` and an optional
//! `series` file) into the binary, so `rvl setup` on a board needs no source checkout.
//! Generates `$OUT_DIR/embedded_patches.rs`: `&[(relative path, bytes)]`, sorted by path.

use std::fs;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, base, out);
        } else if let Ok(rel) = p.strip_prefix(base) {
            out.push(rel.to_path_buf());
        }
    }
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let patches = manifest_dir.join("patches");
    println!("cargo:rerun-if-changed=patches");
    let mut files = Vec::new();
    collect(&patches, &patches, &mut files);
    files.sort();
    let mut code = String::from("pub const EMBEDDED: &[(&str, &[u8])] = &[\n");
    for rel in files {
        if let Some(dir) = patches.join(&rel).parent() {
            println!("cargo:rerun-if-changed={}", dir.display());
        }
        code.push_str(&format!(
            "    ({:?}, include_bytes!({:?})),\n",
            rel.to_string_lossy(),
            patches.join(&rel).to_string_lossy()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_patches.rs");
    fs::write(out, code).unwrap();
}
