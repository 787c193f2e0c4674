//! Reading the YAML files rvl is handed (`--manifest`, `--profiles`): one document per file, and
//! errors for the person who wrote it: the file, line and column, and what is wrong in words,
//! never the parser library's advice to its own callers ("set DuplicateKeyPolicy in Options",
//! "use from_str_multiple").

use serde::de::DeserializeOwned;
use serde_saphyr::{MessageFormatter, UserMessageFormatter};

/// A YAML error, placed: `line`/`column` where the parser knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub message: String,
}

impl YamlError {
    /// `NAME:LINE:COLUMN: message` (or `NAME: message` without a place).
    pub fn placed(&self, name: &str) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{name}:{l}:{c}: {}", self.message),
            (Some(l), None) => format!("{name}:{l}: {}", self.message),
            _ => format!("{name}: {}", self.message),
        }
    }
}

/// Parse one YAML document into `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    serde_saphyr::from_str(text).map_err(|e| describe(&e))
}

fn describe(e: &serde_saphyr::Error) -> YamlError {
    let loc = e.location();
    let bare = e.without_snippet();
    let message = match bare {
        serde_saphyr::Error::DuplicateMappingKey { key: Some(k), .. } => {
            format!("key `{k}` appears twice in one mapping")
        }
        serde_saphyr::Error::DuplicateMappingKey { key: None, .. } => {
            "a key appears twice in one mapping".to_string()
        }
        serde_saphyr::Error::MultipleDocuments { .. } => {
            "a second YAML document (after `---`) starts here; the file must hold one".to_string()
        }
        other => UserMessageFormatter
            .format_message(other)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    YamlError {
        line: loc.map(|l| l.line()).filter(|l| *l > 0),
        column: loc.map(|l| l.column()).filter(|c| *c > 0),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        schema: u32,
        #[serde(default)]
        items: Vec<Item>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        id: String,
    }

    fn err(text: &str) -> String {
        from_str::<Doc>(text).unwrap_err().placed("m.yaml")
    }

    #[test]
    fn a_duplicate_key_names_the_key_and_its_line_without_library_advice() {
        assert_eq!(
            err("schema: 1\nschema: 2\n"),
            "m.yaml:2:1: key `schema` appears twice in one mapping"
        );
        assert_eq!(
            err("schema: 1\nitems:\n  - id: a\n    id: b\n"),
            "m.yaml:4:5: key `id` appears twice in one mapping"
        );
    }

    #[test]
    fn a_second_document_is_named_where_it_starts() {
        let e = err("schema: 1\n---\nschema: 1\n");
        assert!(e.starts_with("m.yaml:"), "{e}");
        assert!(
            e.ends_with("a second YAML document (after `---`) starts here; the file must hold one"),
            "{e}"
        );
        assert!(!e.contains("from_str"), "{e}");
    }

    #[test]
    fn other_errors_keep_their_words_and_place() {
        assert_eq!(err("schema: x\n"), err("schema: x\n"));
        let e = err("schema: 1\nbogus: 2\n");
        assert!(e.starts_with("m.yaml:2:1: unknown field `bogus`"), "{e}");
        for text in [
            "schema: 1\nschema: 2\n",
            "schema: 1\n---\nschema: 1\n",
            "schema: [\n",
        ] {
            let e = err(text);
            assert!(!e.contains("Options") && !e.contains("from_str"), "{e}");
        }
    }
}
