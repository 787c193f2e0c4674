//! Helpers shared by the integration tests.

pub mod http;
pub mod roots;
