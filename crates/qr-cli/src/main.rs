//! `qr`: the qr-rs command line.
//!
//! - `qr suite`: the `qr_v2` test or benchmark set on the best backend present.
//! - `qr bench`: the ranking's timing method, ours against peer libraries.
//! - `qr plan`: the GPU plan for a shape.
//! - `qr check`: one case, gate values per matrix.
//!
//! Exit status: 0 when everything ran and met the project's bar, 1 when a
//! case ran but missed the bar, 2 for usage errors and failures to run.

#![warn(missing_docs)]
// Only the LAPACK peer calls foreign code; it opts back in for that call.
#![deny(unsafe_code)]

mod bench;
mod check;
mod error;
mod inputs;
mod peers;
mod plan;
mod progress;
mod select;
mod suite;
mod table;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{CliError, Outcome};

/// Batched Householder QR in LAPACK geqrf form: suites, benchmarks, plans, checks.
#[derive(Debug, Parser)]
#[command(name = "qr", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the qr_v2 test or benchmark set: one row per case, geometric mean last.
    Suite(suite::SuiteArgs),
    /// Time our backend against peer libraries with the ranking's method.
    Bench(bench::BenchArgs),
    /// Print the GPU plan for a shape (or why there is no GPU).
    Plan(plan::PlanArgs),
    /// Factor one case and print the gate values of every matrix.
    Check(check::CheckArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<Outcome, CliError> = match cli.command {
        Command::Suite(args) => suite::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Check(args) => check::run(&args),
    };
    match result {
        Ok(Outcome::MetBar) => ExitCode::SUCCESS,
        Ok(Outcome::MissedBar) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
