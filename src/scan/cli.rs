//! `fault mcp-scan`: the scan's flags, generated from its fields ([`super::spec::FIELDS`]) with their
//! `FAULT_SCAN_…` variables, the server's command after `--`, and exit codes CI reads: 0 pass, 1 fail (or no
//! verdict: too little evidence is not a pass), 2 when the scan could not run.

use std::{process::ExitCode, sync::Arc};

use clap::{ArgMatches, Command};
use tokio_util::sync::CancellationToken;

use super::{
    ScanSpec,
    spec::{COMMAND, FIELDS},
    verdict::Outcome,
};
use crate::fields::FieldInput;

/// The exit code of a scan that could not run.
pub const COULD_NOT_RUN: u8 = 2;

/// `fault mcp-scan`'s command line, read into a scan.
#[derive(Debug, Clone)]
pub struct ScanArgs {
    pub spec: ScanSpec,
}

impl clap::Args for ScanArgs {
    fn augment_args(mut command: Command) -> Command {
        for field in FIELDS.iter().filter(|f| f.has_flag()) {
            let arg = field.arg("", "");
            let arg = if field.name == COMMAND.name {
                // The server's command and its arguments, after `--`.
                arg.long(None::<&str>)
                    .env(None::<&str>)
                    .num_args(1..)
                    .last(true)
                    .allow_hyphen_values(true)
                    .value_name("SERVER COMMAND")
            } else {
                let variable = format!("FAULT_SCAN_{}", field.name.to_ascii_uppercase());
                arg.env(variable)
            };
            command = command.arg(arg);
        }
        command
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for ScanArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let input = FieldInput::from_matches(FIELDS, "", matches);
        let spec = ScanSpec::read(&input).map_err(|e| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{e}\n"))
        })?;
        Ok(Self { spec })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// Runs the scan, prints its markdown on stdout, and gives the exit code; Ctrl-C or SIGTERM stops it (and
/// the server).
pub async fn run(args: ScanArgs) -> ExitCode {
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        crate::serve::http::terminated().await;
        on_signal.cancel();
    });
    let progress = Arc::new(crate::load::LoadProgress::default());
    match super::run(&args.spec, &cancel, progress).await {
        Ok(report) => {
            // The command's report is its output: it serves no MCP on stdout.
            println!("{}", report.markdown()); // stdout-ok
            match report.verdict.outcome {
                Outcome::Pass => ExitCode::SUCCESS,
                Outcome::Fail | Outcome::NoVerdict => ExitCode::FAILURE,
            }
        }
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("fault mcp-scan: {e}");
            ExitCode::from(COULD_NOT_RUN)
        }
    }
}
