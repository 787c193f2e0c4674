//! rvl: parse the command line, read the surroundings once, run the verb, print its outcome
//! (or its error) once, exit with the documented status.

use std::io::Write;

use clap::Parser;
use rvl::output::{self, Envelope, ErrorBody, ErrorReport, Outcome};
use rvl::settings::Settings;
use rvl::{bench, cli, doctor, error, exit, setup};

fn main() {
    // A panic is a bug: say so and exit with the documented internal-error status, not 101.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("rvl: internal error: {info}");
        eprintln!("rvl: this is a bug; please report it with the command line you ran.");
        std::process::exit(exit::INTERNAL);
    }));

    let cli = cli::Cli::parse();
    let settings = Settings::from_process();
    let verb = cli.command.name();
    let json = cli.command.json();
    let code = match &cli.command {
        cli::Command::Doctor(args) => finish(verb, json, &settings, doctor::run(args, &settings)),
        cli::Command::Setup(args) => finish(verb, json, &settings, setup::run(args, &settings)),
        // --gguf runs llama.cpp's own llama-bench: no rvl Vulkan code, so not behind `bench`.
        cli::Command::SmokeBench(args) if args.gguf.is_some() => {
            finish(verb, json, &settings, rvl::prefill::run(args, &settings))
        }
        cli::Command::SmokeBench(args) => {
            finish(verb, json, &settings, bench::run(args, &settings))
        }
        cli::Command::Status(args) => {
            finish(verb, json, &settings, rvl::status::run(args, &settings))
        }
        cli::Command::Serve(args) => {
            finish(verb, json, &settings, rvl::serve::run(args, &settings))
        }
        cli::Command::Report(args) => {
            finish(verb, json, &settings, rvl::report::run(args, &settings))
        }
        cli::Command::Generate { what } => {
            match rvl::generate::run(what, &mut std::io::stdout().lock()) {
                Ok(()) => exit::OK,
                Err(err) => report_error(verb, json, &err),
            }
        }
    };
    std::process::exit(code);
}

/// Print a verb's outcome, as text or in the JSON envelope, and return its exit status.
fn finish<O: Outcome>(verb: &str, json: bool, settings: &Settings, r: anyhow::Result<O>) -> i32 {
    match r {
        Ok(outcome) => {
            let code = outcome.exit_code();
            // Write errors are ignored: a closed stdout is not a failure of the verb.
            if json {
                let _ = output::print_json(&Envelope::new(verb, code, &outcome));
            } else {
                settings.print(&outcome.human(settings.style));
            }
            code
        }
        Err(err) => report_error(verb, json, &err),
    }
}

/// An error, rendered once: the sentence and its causes on stderr, and under `--json` the
/// error envelope on stdout too, so a script always gets a document.
fn report_error(verb: &str, json: bool, err: &anyhow::Error) -> i32 {
    let code = error::exit_code_of(err);
    let report = ErrorReport::from_error(err);
    let _ = std::io::stderr().write_all(report.human().as_bytes());
    if json {
        let _ = output::print_json(&Envelope::new(verb, code, &ErrorBody { error: report }));
    }
    code
}
