//! `switchyard`: one binary for every part of Switchyard.
//!
//! Exit codes: 0 on success, 2 for bad input (an unreadable or invalid scenario file,
//! a policy that is not available, a bad command line), 1 for anything else.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match args.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if cli::is_broken_pipe(&err) {
                // The reader went away (`| head`): nothing left to say.
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            ExitCode::from(cli::exit_code(&err))
        }
    }
}
