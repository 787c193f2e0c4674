//! `rvl setup`: plan, apply and roll back the board's move to the open GPU stack.

pub mod archive;
pub mod builder;
pub mod fault;
pub mod fsops;
pub mod journal;
pub mod lock;
pub mod patches;

use crate::{cli, error, exit};

pub fn run(_args: &cli::SetupArgs) -> anyhow::Result<i32> {
    Err(error::fail(exit::INTERNAL, "rvl setup is not built yet"))
}
