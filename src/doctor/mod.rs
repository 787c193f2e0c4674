//! `rvl doctor` — placeholder until its issue lands.

use crate::{cli, error, exit};

pub fn run(_args: &cli::DoctorArgs) -> anyhow::Result<i32> {
    Err(error::fail(exit::INTERNAL, "rvl doctor is not built yet"))
}
