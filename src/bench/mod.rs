//! `rvl bench` — placeholder until its issue lands.

use crate::{cli, error, exit};

pub fn run(_args: &cli::BenchArgs) -> anyhow::Result<i32> {
    Err(error::fail(exit::INTERNAL, "rvl bench is not built yet"))
}
