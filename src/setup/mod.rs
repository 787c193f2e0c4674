//! `rvl setup` — placeholder until its issue lands.

use crate::{cli, error, exit};

pub fn run(_args: &cli::SetupArgs) -> anyhow::Result<i32> {
    Err(error::fail(exit::INTERNAL, "rvl setup is not built yet"))
}
