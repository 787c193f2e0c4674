//! An error that knows its exit status. Verbs return `anyhow::Error`; those built with
//! [`fail`] carry one of the codes in [`crate::exit`], anything else exits with
//! [`exit::PROBLEMS`](crate::exit::PROBLEMS).

use crate::exit;

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

/// An error with a documented exit status.
pub fn fail(code: i32, message: impl Into<String>) -> anyhow::Error {
    Failure {
        code,
        message: message.into(),
    }
    .into()
}

/// The exit status an error maps to.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<Failure>())
        .map(|f| f.code)
        .unwrap_or(exit::PROBLEMS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_survive_added_context() {
        let e = fail(exit::LOCKED, "held").context("while planning");
        assert_eq!(exit_code_of(&e), exit::LOCKED);
        assert_eq!(exit_code_of(&anyhow::anyhow!("plain")), exit::PROBLEMS);
    }
}
