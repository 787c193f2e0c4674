//! A prefill run kept on disk: `--save FILE`, `--compare FILE`, and the record per model that
//! every `--gguf` run leaves for `rvl serve` at `$XDG_STATE_HOME/rvl/prefill/<file name>.json`
//! (`~/.local/state/…` when XDG_STATE_HOME is unset). The file is the `--json` document; this
//! module reads it back. Pure apart from [`load`]'s one read.

use std::path::Path;

use serde_json::Value;

use super::report::Report;
use crate::error::Error;
use crate::inventory::Env;

/// Under the state directory.
pub const RECORD_DIR: &str = "rvl/prefill";

/// Where the record for a model file named `file_name` lives, by the XDG base-directory rules
/// (an XDG_STATE_HOME that is not absolute is ignored, as the spec says); None without a home
/// or for a name that is not one path component.
pub fn record_path(env: &Env, file_name: &str) -> Option<String> {
    if file_name.is_empty() || file_name == "." || file_name == ".." || file_name.contains('/') {
        return None;
    }
    Some(format!("{}/{file_name}.json", record_dir(env)?))
}

/// The directory of the records ([`record_path`]'s), None without a home.
pub fn record_dir(env: &Env) -> Option<String> {
    let state = match env.get("XDG_STATE_HOME").filter(|d| d.starts_with('/')) {
        Some(d) => d.trim_end_matches('/').to_string(),
        None => format!(
            "{}/.local/state",
            env.get("HOME")
                .filter(|h| h.starts_with('/'))?
                .trim_end_matches('/')
        ),
    };
    Some(format!("{state}/{RECORD_DIR}"))
}

/// A saved prefill document (the envelope with its `prefill` section), its report read back.
/// `name` is what errors call the file.
pub fn parse(text: &str, name: &str) -> Result<Report, Error> {
    let bad = |msg: String| Error::BadInput(format!("{name}: {msg}"));
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    let version = doc.get("schema_version").and_then(Value::as_u64);
    let Some(prefill) = doc.get("prefill") else {
        return Err(bad(if doc.get("ubatches").is_some() {
            "a GEMM smoke-bench result (saved without --gguf); compare it with a run without --gguf"
                .into()
        } else {
            "not a result saved by rvl smoke-bench --gguf --save (expected keys \"schema_version\", \"prefill\")".into()
        }));
    };
    if version != Some(u64::from(crate::output::SCHEMA_VERSION)) {
        return Err(bad(format!(
            "schema_version {:?}, this rvl reads {}",
            version,
            crate::output::SCHEMA_VERSION
        )));
    }
    serde_json::from_value(prefill.clone())
        .map_err(|e| bad(format!("its \"prefill\" section does not read: {e}")))
}

/// Read and parse a saved document named on the command line (`--compare`).
pub fn load(path: &Path) -> Result<Report, Error> {
    let name = format!("--compare {}", path.display());
    let text = crate::host::root::read_regular_string(path, crate::host::root::INPUT_CAP)
        .map_err(|e| Error::BadInput(format!("{name}: {e}")))?;
    parse(&text, &name)
}

/// The ubatch `rvl serve` takes from a recorded run of the model named `file_name`, for the
/// llama.cpp build at `prefix` (the one serve runs): the fastest whose GPU run was ok.
/// Otherwise why not: a record of another file, of another build (what survived one build
/// says nothing of another: a stock one crashes above 64), of other RPC workers (`rpc`: those
/// serve spreads the model over, as `HOST:PORT`; a ubatch measured on one board says nothing
/// of several), or with no GPU run ok.
pub fn serve_ubatch(
    record: &Report,
    file_name: &str,
    prefix: &str,
    rpc: &[String],
) -> Result<u32, String> {
    if record.model.file_name != file_name {
        return Err(format!("it is of {}", record.model.file_name));
    }
    if record.rpc != rpc {
        let with = |w: &[String]| match w {
            [] => "this board alone".to_string(),
            w => format!("RPC workers {}", w.join(",")),
        };
        return Err(format!(
            "it measured {}, not {}",
            with(&record.rpc),
            with(rpc)
        ));
    }
    match record.llama_bench.rvl_prefix.as_deref() {
        Some(p) if p == prefix => {}
        Some(p) => return Err(format!("it measured {p}, not {prefix}")),
        None => {
            return Err(format!(
                "it measured {}, not rvl's {prefix}",
                record.llama_bench.path
            ))
        }
    }
    super::report::best_gpu_ubatch(&record.ubatches)
        .ok_or_else(|| "no GPU run in it ended ok".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_lives_under_xdg_state_home_or_the_homes_local_state() {
        let env = Env::from_pairs([("HOME", "/home/u/"), ("XDG_STATE_HOME", "/var/st")]);
        assert_eq!(
            record_path(&env, "qwen 3b.gguf").as_deref(),
            Some("/var/st/rvl/prefill/qwen 3b.gguf.json")
        );
        let env = Env::from_pairs([("HOME", "/home/u/"), ("XDG_STATE_HOME", "relative")]);
        assert_eq!(
            record_path(&env, "m.gguf").as_deref(),
            Some("/home/u/.local/state/rvl/prefill/m.gguf.json")
        );
        assert_eq!(record_path(&Env::default(), "m.gguf"), None);
        assert_eq!(record_path(&env, ".."), None);
    }

    #[test]
    fn foreign_and_gemm_documents_are_refused_by_name() {
        let e = parse(
            r#"{"schema_version": 1, "tool": "rvl smoke-bench 0.1.0", "ubatches": []}"#,
            "f",
        )
        .unwrap_err();
        assert!(e.to_string().contains("GEMM smoke-bench result"), "{e}");
        let e = parse(r#"{"a": 1}"#, "f").unwrap_err();
        assert!(e.to_string().contains("not a result saved by"), "{e}");
        let e = parse("{", "f").unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
        let e = parse(r#"{"schema_version": 9, "prefill": {}}"#, "f").unwrap_err();
        assert!(e.to_string().contains("schema_version Some(9)"), "{e}");
        let e = parse(r#"{"schema_version": 1, "prefill": {}}"#, "f").unwrap_err();
        assert!(e.to_string().contains("does not read"), "{e}");
    }
}
