//! The `fault run` face of a fault: `--with-<kind>`, then one flag per field, generated from the fault's
//! fields and the placement ones ([`super::fields`]), each with its `FAULT_…` variable, all under the fault's
//! heading. The values are read by the same reader as the fault's tool ([`crate::fields::FieldInput`]), so
//! both faces accept and refuse the same values and have the same defaults. clap's derive cannot name a flag
//! after a type, hence the hand-written `clap::Args`.

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};

use super::{TcpFault, TcpFaultSpec, fields, read_fault};
use crate::fields::FieldInput;

/// One fault's flags, read: the fault when `--with-<kind>` is given.
#[derive(Debug, Clone)]
pub struct FaultArgs<S: TcpFaultSpec> {
    pub fault: Option<TcpFault>,
    spec: std::marker::PhantomData<S>,
}

/// `--with-<kind>`'s id and long name.
fn with<S: TcpFaultSpec>() -> (String, String) {
    let id = format!("with_{}", S::KIND);
    let long = id.replace('_', "-");
    (id, long)
}

/// `command` with the flags of `S` under its heading.
fn with_flags<S: TcpFaultSpec>(command: Command) -> Command {
    let heading = command.get_next_help_heading().map(str::to_owned);
    let (id, long) = with::<S>();
    let mut command = command.next_help_heading(S::TITLE).arg(
        Arg::new(id.clone())
            .long(long.clone())
            .env(format!("FAULT_{}", id.to_ascii_uppercase()))
            .help(format!("{}.", S::ENABLE))
            .action(ArgAction::SetTrue),
    );
    let needs = format!("--{long}");
    for field in fields::<S>().iter().filter(|field| field.has_flag()) {
        command = command.arg(field.arg(S::KIND, &needs));
    }
    match heading {
        Some(heading) => command.next_help_heading(heading),
        None => command.next_help_heading(None::<&str>),
    }
}

/// The fault `S` the flags in `matches` give, if enabled. A value given on the command line for a fault
/// that is not enabled is refused rather than dropped; one from the environment is left alone (variables
/// set for a later run).
fn fault<S: TcpFaultSpec>(matches: &ArgMatches) -> Result<Option<TcpFault>, clap::Error> {
    let (id, long) = with::<S>();
    let fields: Vec<_> = fields::<S>()
        .into_iter()
        .filter(|field| field.has_flag())
        .collect();
    if !matches.get_flag(&id) {
        let given = fields.iter().map(|field| field.long(S::KIND)).find(|flag| {
            matches.value_source(&flag.replace('-', "_")) == Some(ValueSource::CommandLine)
        });
        return match given {
            Some(flag) => Err(clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                format!(
                    "--{flag} is given but the fault is not enabled: add --{long} (or drop --{flag})\n"
                ),
            )),
            None => Ok(None),
        };
    }
    let input = FieldInput::from_matches(&fields, S::KIND, matches);
    read_fault::<S>(&input)
        .map(Some)
        .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{e}\n")))
}

impl<S: TcpFaultSpec> clap::Args for FaultArgs<S> {
    fn augment_args(command: Command) -> Command {
        with_flags::<S>(command)
    }

    fn augment_args_for_update(command: Command) -> Command {
        with_flags::<S>(command)
    }
}

impl<S: TcpFaultSpec> clap::FromArgMatches for FaultArgs<S> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self {
            fault: fault::<S>(matches)?,
            spec: std::marker::PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::proxy::faults::{self, EachFault, FaultFlags};
    use crate::proxy::placement::{Direction, FaultCommon, Side};

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        faults: FaultFlags,
    }

    /// Checks that each registered fault's fields are flags named after it, under its heading.
    struct FlagsOfEachField(Command);

    impl EachFault for FlagsOfEachField {
        fn fault<S: TcpFaultSpec>(&mut self) {
            for field in fields::<S>().iter().filter(|field| field.has_flag()) {
                let long = field.long(S::KIND);
                let arg = self
                    .0
                    .get_arguments()
                    .find(|arg| arg.get_long() == Some(long.as_str()));
                let Some(arg) = arg else {
                    panic!("{}: no --{long}", S::KIND)
                };
                let env = format!("FAULT_{}", long.replace('-', "_")).to_ascii_uppercase();
                assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(env.as_str()));
                assert_eq!(arg.get_help_heading(), Some(S::TITLE), "--{long}");
            }
        }
    }

    #[test]
    fn every_field_of_every_fault_is_a_flag_named_after_it() {
        faults::for_each(&mut FlagsOfEachField(Run::command()));
    }

    #[test]
    fn the_placement_flags_place_the_fault() {
        let run = Run::try_parse_from([
            "run",
            "--with-reset",
            "--reset-side",
            "client",
            "--reset-direction",
            "both",
            "--reset-probability",
            "0.5",
            "--reset-sched",
            "start:1s",
            "--with-http-error",
        ])
        .unwrap();
        let faults = run.faults.specs();
        // In registration order.
        assert_eq!(
            faults.iter().map(TcpFault::kind).collect::<Vec<_>>(),
            ["http_error", "reset"]
        );
        let reset = faults[1].common();
        assert_eq!(
            (reset.side, reset.direction, reset.probability),
            (Side::Client, Direction::Both, 0.5)
        );
        assert_eq!(reset.schedule, "start:1s".parse().ok());
        assert_eq!(faults[0].common(), &FaultCommon::default());
        let error = |args: &[&str]| {
            Run::try_parse_from(args)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let refused = error(&[
            "run",
            "--with-latency",
            "--latency-mean",
            "1",
            "--latency-probability",
            "2",
        ]);
        assert!(
            refused.contains("2 is out of range; accepted: 0 to 1"),
            "{refused}"
        );
        let missing = error(&["run", "--with-latency"]);
        assert!(missing.contains("--latency-mean: is required"), "{missing}");
        let orphan = error(&["run", "--latency-mean", "300"]);
        assert!(orphan.contains("add --with-latency"), "{orphan}");
    }
}
