//! rvl as a library: the binary in `main.rs` is a thin shell over these modules, and the
//! integration tests use them directly where running the binary would not reach (kernels,
//! parsers, the fetch client).

pub mod bench;
pub mod bootcfg;
pub mod cli;
pub mod doctor;
pub mod error;
pub mod exit;
pub mod fetch;
pub mod host;
pub mod manifest;
pub mod output;
pub mod setup;
