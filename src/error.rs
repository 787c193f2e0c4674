//! The errors rvl expects, as one typed enum (after cargo-nextest's `ExpectedError`).
//!
//! Code that fails says *what* went wrong by picking a variant; which exit status that is
//! decided once, in [`Error::exit_code`], next to the table in [`crate::exit`]. Verbs return
//! `anyhow::Result` so that `.context(..)` can add the "while ..." layers; `main` finds the
//! `Error` in the chain and renders it once (a sentence and its causes, or the JSON envelope).
//! Anything that is not an `Error` (a bare I/O or serde error) exits with
//! [`exit::PROBLEMS`](crate::exit::PROBLEMS).
//!
//! Errors are defined where they arise ([`FetchError`], [`GgufError`], [`VkError`],
//! [`RootError`], [`ProfileError`], [`UnknownBoard`]) and only collected here, as cargo-nextest's
//! `ExpectedError` collects the runner's errors: a verb turns one into an `Error` with
//! `.map_err(Error::from)`. So this module sits above the modules it collects from and imports
//! them; none of them imports it. It also renders an error for the JSON envelope
//! ([`ErrorReport::from_error`]), so `output` needs nothing from here.

use std::io;
use std::path::PathBuf;

use crate::exit;
use crate::fetch::FetchError;
use crate::gguf::GgufError;
use crate::host::root::RootError;
use crate::output::ErrorReport;
use crate::profile::{ProfileError, UnknownBoard};
use crate::vulkan::error::VkError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags or arguments that clap could not catch (unknown check id, a malformed `--rpc`).
    #[error("{0}")]
    Usage(String),

    /// `--root DIR` cannot be used (not a directory): a usage error.
    #[error(transparent)]
    Root(#[from] RootError),

    /// `--board` names no profile: a usage error.
    #[error(transparent)]
    UnknownBoard(#[from] UnknownBoard),

    /// A board profile (YAML) is malformed or inconsistent.
    #[error(transparent)]
    Profile(#[from] ProfileError),

    /// The artifact manifest (YAML) is malformed or inconsistent.
    #[error("{0}")]
    Manifest(String),

    /// A file the user pointed rvl at (a saved result, a patch series) is malformed.
    #[error("{0}")]
    BadInput(String),

    /// setup's journal or state file is damaged; nothing was changed.
    #[error("{0}")]
    Journal(String),

    /// The host is not a board rvl supports for the requested action.
    #[error("{0}")]
    Unsupported(String),

    /// Needs root: the action changes the system.
    #[error("{0}")]
    NeedsRoot(String),

    /// A file-system operation on a path rvl must read or write failed. Permission problems
    /// exit with PERMISSION, anything else with PROBLEMS.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// The operation, as a verb phrase: "cannot write", "cannot open the lock".
        what: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// A download or its verification failed; nothing was installed.
    #[error("download failed")]
    Fetch(#[source] FetchError),

    /// Another rvl run holds the lock.
    #[error("{0}")]
    Locked(String),

    /// No usable Vulkan device: loader missing, no ICD, the device lacks what is required.
    #[error("{0}")]
    NoVulkan(String),

    /// The user did not confirm (or could not be asked); nothing was changed.
    #[error("{0}")]
    NotConfirmed(String),

    /// A tool rvl runs is missing or failed (pip, patch, a build system, a boot tool).
    #[error("{0}")]
    Tool(String),

    /// A setup step failed; what it had changed was rolled back.
    #[error("{0}")]
    StepFailed(String),

    /// A step failed and rollback could not restore everything.
    #[error("{0}")]
    RollbackIncomplete(String),

    /// The chosen Vulkan device could not be opened or set up for compute.
    #[error("{context}")]
    DeviceUnusable {
        context: String,
        #[source]
        source: VkError,
    },

    /// A Vulkan call failed outside the sweep (where failures are results, not errors).
    #[error("{context}")]
    Vulkan {
        context: String,
        #[source]
        source: VkError,
    },

    /// rvl will not start something the system is not ready for (rvl serve: doctor's blocking
    /// checks fail, or rvl's llama.cpp is not installed); the sentence carries the fix.
    #[error("{0}")]
    Refused(String),

    /// A GGUF model file is malformed (or a model to generate is inconsistent).
    #[error("{}: not a usable GGUF model", path.display())]
    Gguf {
        path: PathBuf,
        #[source]
        source: GgufError,
    },

    /// A bug: an invariant rvl relies on does not hold.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The documented exit status of this error: the only place that maps errors to codes.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Root(_) | Error::UnknownBoard(_) => exit::USAGE,
            Error::Profile(_)
            | Error::Manifest(_)
            | Error::BadInput(_)
            | Error::Journal(_)
            | Error::Gguf { .. } => exit::BAD_INPUT,
            Error::NeedsRoot(_) => exit::PERMISSION,
            Error::Io { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
                exit::PERMISSION
            }
            Error::Io { .. } => exit::PROBLEMS,
            Error::Unsupported(_) => exit::UNSUPPORTED,
            Error::Fetch(_) => exit::DOWNLOAD,
            Error::Locked(_) => exit::LOCKED,
            Error::NoVulkan(_) | Error::DeviceUnusable { .. } => exit::NO_VULKAN,
            Error::NotConfirmed(_) => exit::NOT_CONFIRMED,
            Error::Tool(_) | Error::Vulkan { .. } => exit::PROBLEMS,
            Error::StepFailed(_) => exit::STEP_FAILED,
            Error::RollbackIncomplete(_) => exit::ROLLBACK_INCOMPLETE,
            Error::Refused(_) => exit::PROBLEMS,
            Error::Internal(_) => exit::INTERNAL,
        }
    }

    /// A short stable name of the variant, for the JSON envelope's `error.kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Usage(_) | Error::Root(_) | Error::UnknownBoard(_) => "usage",
            Error::Profile(_) => "profile",
            Error::Manifest(_) => "manifest",
            Error::BadInput(_) | Error::Gguf { .. } => "bad-input",
            Error::Journal(_) => "journal",
            Error::Unsupported(_) => "unsupported",
            Error::NeedsRoot(_) => "needs-root",
            Error::Io { .. } => "io",
            Error::Fetch(_) => "download",
            Error::Locked(_) => "locked",
            Error::NoVulkan(_) | Error::DeviceUnusable { .. } => "no-vulkan",
            Error::NotConfirmed(_) => "not-confirmed",
            Error::Tool(_) => "tool",
            Error::StepFailed(_) => "step-failed",
            Error::RollbackIncomplete(_) => "rollback-incomplete",
            Error::Vulkan { .. } => "vulkan",
            Error::Refused(_) => "refused",
            Error::Internal(_) => "internal",
        }
    }

    /// An I/O failure on `path`, e.g. `Error::io("cannot write", path, e)`.
    pub fn io(what: &str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            what: what.to_string(),
            path: path.into(),
            source,
        }
    }
}

impl From<FetchError> for Error {
    fn from(e: FetchError) -> Self {
        Error::Fetch(e)
    }
}

/// Every name [`Error::kind`] gives, as docs/json.md's schema lists them ("other" is the
/// untyped rest, see [`kind_of`]).
pub const KINDS: &[&str] = &[
    "usage",
    "profile",
    "manifest",
    "bad-input",
    "journal",
    "unsupported",
    "needs-root",
    "io",
    "download",
    "locked",
    "no-vulkan",
    "not-confirmed",
    "tool",
    "step-failed",
    "rollback-incomplete",
    "vulkan",
    "refused",
    "internal",
];

/// An error's chain as a person reads it: the message, then each cause that adds something.
/// A cause whose text the messages before it already hold is left out (an I/O error that
/// [`Error::Io`] prints and also keeps as its source; a context that quotes its cause), and
/// the `(os error N)` the standard library appends is dropped: the words say the same.
pub fn chain_messages(err: &anyhow::Error) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in err.chain() {
        let text = strip_os_error(&e.to_string());
        if text.is_empty() || out.iter().any(|o| o.contains(&text)) {
            continue;
        }
        out.push(text);
    }
    out
}

/// [`chain_messages`] on one line, joined by ": " (for an error quoted inside another).
pub fn one_line(err: &anyhow::Error) -> String {
    chain_messages(err).join(": ")
}

/// `text` without each ` (os error N)`.
fn strip_os_error(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" (os error ") {
        let tail = &rest[at + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &tail[digits + 1..];
        } else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// The first [`Error`] in an error's chain, if any.
pub fn find(err: &anyhow::Error) -> Option<&Error> {
    err.chain().find_map(|e| e.downcast_ref::<Error>())
}

/// The exit status and kind of the first typed error in the chain: an [`Error`], or one of the
/// errors it collects that reached `main` without `.map_err(Error::from)` (each classed as the
/// variant that collects it would be, so a forgotten conversion cannot change an exit status).
fn classify(err: &anyhow::Error) -> Option<(i32, &'static str)> {
    let of = |e: &Error| (e.exit_code(), e.kind());
    err.chain().find_map(|e| {
        if let Some(e) = e.downcast_ref::<Error>() {
            Some(of(e))
        } else if let Some(e) = e.downcast_ref::<UnknownBoard>() {
            Some(of(&Error::UnknownBoard(e.clone())))
        } else if let Some(e) = e.downcast_ref::<ProfileError>() {
            Some(of(&Error::Profile(e.clone())))
        } else if let Some(e) = e.downcast_ref::<RootError>() {
            Some(of(&Error::Root(e.clone())))
        } else if e.is::<FetchError>() {
            // Not `Clone` (it holds an `io::Error`): the values `Error::Fetch` maps to.
            Some((exit::DOWNLOAD, "download"))
        } else {
            None
        }
    })
}

/// The exit status an error maps to: its [`Error`]'s, or PROBLEMS for anything untyped.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    classify(err).map_or(exit::PROBLEMS, |(code, _)| code)
}

/// The error's kind for the JSON envelope ("other" for anything untyped).
pub fn kind_of(err: &anyhow::Error) -> &'static str {
    classify(err).map_or("other", |(_, kind)| kind)
}

/// The envelope's `error` object is `output`'s plain data; filling it from an error's chain is
/// this module's knowledge, so the constructor lives here.
impl ErrorReport {
    /// `err` as the envelope reports it: its kind, its sentence, and the causes that add
    /// something ([`chain_messages`]).
    pub fn from_error(err: &anyhow::Error) -> Self {
        let mut chain = chain_messages(err).into_iter();
        ErrorReport {
            kind: kind_of(err),
            message: chain.next().unwrap_or_else(|| err.to_string()),
            causes: chain.collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_cause_that_repeats_its_error_and_os_error_numbers_are_left_out() {
        let enospc = io::Error::from_raw_os_error(28);
        let e = anyhow::Error::from(Error::io("cannot write", "/x/journal.json", enospc));
        assert_eq!(
            chain_messages(&e),
            vec!["cannot write /x/journal.json: No space left on device"]
        );
        let e = anyhow::Error::from(Error::io(
            "cannot check",
            "/c/x",
            io::Error::from_raw_os_error(36),
        ))
        .context("step firmware failed");
        assert_eq!(
            one_line(&e),
            "step firmware failed: cannot check /c/x: File name too long"
        );
        // A cause with words of its own stays.
        let e = anyhow::anyhow!("disk full").context("cannot save the bundle");
        assert_eq!(
            chain_messages(&e),
            vec!["cannot save the bundle", "disk full"]
        );
        assert_eq!(
            strip_os_error("a (os error x) b (os error 5)"),
            "a (os error x) b"
        );
    }

    #[test]
    fn codes_survive_added_context() {
        let e = anyhow::Error::from(Error::Locked("held".into())).context("while planning");
        assert_eq!(exit_code_of(&e), exit::LOCKED);
        assert_eq!(kind_of(&e), "locked");
        assert_eq!(exit_code_of(&anyhow::anyhow!("plain")), exit::PROBLEMS);
        assert_eq!(kind_of(&anyhow::anyhow!("plain")), "other");
    }

    #[test]
    fn kinds_lists_every_variants_kind_exactly() {
        let vk = || VkError {
            call: "vkCreateDevice".into(),
            result: "VK_ERROR_INITIALIZATION_FAILED".into(),
            injected: false,
        };
        let m = || String::from("m");
        let all = [
            Error::Usage(m()),
            Error::Root(RootError::NotADirectory("/x".into())),
            Error::UnknownBoard(UnknownBoard {
                id: m(),
                suggestion: None,
                known: m(),
            }),
            Error::Profile(ProfileError(m())),
            Error::Manifest(m()),
            Error::BadInput(m()),
            Error::Gguf {
                path: "/m.gguf".into(),
                source: GgufError::NotGguf,
            },
            Error::Journal(m()),
            Error::Unsupported(m()),
            Error::NeedsRoot(m()),
            Error::io("cannot write", "/x", io::Error::other("e")),
            Error::Fetch(FetchError::Status {
                url: "https://x".into(),
                status: 500,
            }),
            Error::Locked(m()),
            Error::NoVulkan(m()),
            Error::DeviceUnusable {
                context: m(),
                source: vk(),
            },
            Error::NotConfirmed(m()),
            Error::Tool(m()),
            Error::StepFailed(m()),
            Error::RollbackIncomplete(m()),
            Error::Vulkan {
                context: m(),
                source: vk(),
            },
            Error::Refused(m()),
            Error::Internal(m()),
        ];
        let mut seen: Vec<&str> = all.iter().map(Error::kind).collect();
        seen.dedup();
        assert_eq!(seen, KINDS);
    }

    #[test]
    fn a_malformed_gguf_is_bad_input_and_names_the_file_and_the_cause() {
        let e = Error::Gguf {
            path: "/m/tiny.gguf".into(),
            source: GgufError::Version(9),
        };
        assert_eq!((e.exit_code(), e.kind()), (exit::BAD_INPUT, "bad-input"));
        assert_eq!(e.to_string(), "/m/tiny.gguf: not a usable GGUF model");
        let cause = std::error::Error::source(&e).unwrap().to_string();
        assert!(cause.contains("version 9"), "{cause}");
    }

    #[test]
    fn io_errors_map_permission_denied_apart() {
        let denied = Error::io(
            "cannot write",
            "/x",
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert_eq!(denied.exit_code(), exit::PERMISSION);
        assert_eq!(Error::StepFailed("x".into()).exit_code(), exit::STEP_FAILED);
        let other = Error::io("cannot write", "/x", io::Error::other("disk full"));
        assert_eq!(other.exit_code(), exit::PROBLEMS);
        assert_eq!(other.to_string(), "cannot write /x: disk full");
    }

    #[test]
    fn a_fetch_error_keeps_its_source() {
        let e = Error::from(FetchError::Status {
            url: "https://x/y".into(),
            status: 404,
        });
        assert_eq!(e.exit_code(), exit::DOWNLOAD);
        let source = std::error::Error::source(&e).expect("the fetch error is the source");
        assert!(source.to_string().contains("HTTP 404"), "{source}");
        let wrapped: anyhow::Result<()> = Err(e).context("installing firmware");
        assert_eq!(exit_code_of(&wrapped.unwrap_err()), exit::DOWNLOAD);
    }

    #[test]
    fn a_collected_error_that_was_never_converted_exits_as_its_variant_would() {
        let fetch = || FetchError::Status {
            url: "https://x/y".into(),
            status: 404,
        };
        let root = || RootError::NotADirectory("/x".into());
        let board = || UnknownBoard {
            id: "nope".into(),
            suggestion: None,
            known: "ampere, boltzmann".into(),
        };
        let profile = || ProfileError("profiles/x.yaml: line 2: expected a map".into());
        let pairs: Vec<(anyhow::Error, anyhow::Error)> = vec![
            (fetch().into(), Error::from(fetch()).into()),
            (root().into(), Error::from(root()).into()),
            (board().into(), Error::from(board()).into()),
            (profile().into(), Error::from(profile()).into()),
        ];
        for (bare, converted) in pairs {
            let bare = bare.context("while running the verb");
            assert_ne!(exit_code_of(&bare), exit::PROBLEMS, "{bare:#}");
            assert_eq!(exit_code_of(&bare), exit_code_of(&converted), "{bare:#}");
            assert_eq!(kind_of(&bare), kind_of(&converted), "{bare:#}");
        }
    }
}
