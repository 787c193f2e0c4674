//! Helpers shared by the integration tests: `run` starts the binary, `roots` copies and
//! snapshots fixture roots, `http` serves artifacts on loopback.

#![allow(dead_code, unused_imports)]

pub mod http;
pub mod roots;
pub mod run;

pub use roots::{fixture_dir, fixture_file, setup, Fixture};
pub use run::{rvl, Output, Rvl};
