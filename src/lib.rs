//! rvl as a library: the binary in `main.rs` is a thin shell over these modules, and the
//! integration tests use them directly where running the binary would not reach (kernels,
//! parsers, the fetch client).

pub mod backend_ops;
// Without the `bench` feature, a stand-in whose `run` says the binary was built without it.
#[cfg_attr(not(feature = "bench"), path = "bench_disabled.rs")]
pub mod bench;
pub mod bootcfg;
pub mod builddeps;
pub mod cli;
pub mod clockpin;
pub mod digest;
pub mod doctor;
pub mod error;
pub mod exit;
pub mod fetch;
pub mod firmware;
pub mod generate;
pub mod gguf;
pub mod hint;
pub mod host;
pub mod icd;
pub mod inventory;
pub mod kernelcfg;
pub mod llama;
pub mod manifest;
pub mod mesa;
pub mod osrelease;
pub mod outfile;
pub mod output;
pub mod patchlevel;
pub mod prefill;
pub mod profile;
pub mod report;
pub mod rpc;
pub mod saved;
pub mod serve;
pub mod settings;
pub mod setup;
pub mod shell;
pub mod status;
pub mod validate;
pub mod vulkan;
pub mod yaml;
