//! rvl: parse the command line, run the verb, map the outcome to a documented exit status.

use clap::Parser;
use rvl::{bench, cli, doctor, error, exit, setup};

fn main() {
    // A panic is a bug: say so and exit with the documented internal-error status, not 101.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("rvl: internal error: {info}");
        eprintln!("rvl: this is a bug; please report it with the command line you ran.");
        std::process::exit(exit::INTERNAL);
    }));

    let cli = cli::Cli::parse();
    let outcome = match &cli.command {
        cli::Command::Doctor(args) => doctor::run(args),
        cli::Command::Setup(args) => setup::run(args),
        cli::Command::SmokeBench(args) => bench::run(args),
    };
    let code = match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("rvl: error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            error::exit_code_of(&err)
        }
    };
    std::process::exit(code);
}
