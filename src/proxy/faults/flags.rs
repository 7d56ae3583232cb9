//! The `fault run` face of a fault: its own flags, then the ones every placeable fault shares, named after it
//! (`--latency-side`, `--latency-direction`, `--latency-probability`, `--latency-sched`, each with its
//! `FAULT_LATENCY_…` variable), all under the fault's heading. The shared ones are written once, here, for
//! any [`TcpFaultSpec`]; clap's derive cannot name a flag after a type, hence the hand-written `clap::Args`.

use std::fmt;

use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};

use super::{TcpFault, TcpFaultSpec};
use crate::proxy::placement::{Direction, FaultCommon, Schedule, Side};
use crate::proxy::values::parse_probability;

/// The flags a fault has of its own in `fault run` (`--with-<kind>` and its values), without the shared ones
/// [`FaultArgs`] adds. Their heading is the fault's ([`TcpFaultSpec::TITLE`]).
pub trait OwnFlags<S>:
    clap::Args + clap::FromArgMatches + fmt::Debug + Clone + Send + Sync
{
    /// The fault these flags configure, when `--with-<kind>` is given (placed at the defaults).
    fn spec(&self) -> Option<S>;
}

/// One fault's flags: its own and, for a placeable fault, where, how often and when it acts.
#[derive(Debug, Clone)]
pub struct FaultArgs<S: TcpFaultSpec> {
    pub own: S::Flags,
    pub placement: FaultCommon,
}

impl<S: TcpFaultSpec> FaultArgs<S> {
    /// The fault, placed, when it is enabled.
    pub fn fault(&self) -> Option<TcpFault> {
        let mut fault: TcpFault = self.own.spec()?.into();
        *fault.common_mut() = self.placement.clone();
        Some(fault)
    }
}

/// The id, long name, environment variable and value name of the shared flag `what` of fault `S`:
/// `latency_side`, `latency-side`, `FAULT_LATENCY_SIDE`, `LATENCY_SIDE`.
fn shared_arg<S: TcpFaultSpec>(what: &str) -> Arg {
    let id = id::<S>(what);
    let upper = id.to_ascii_uppercase();
    Arg::new(id.clone())
        .long(id.replace('_', "-"))
        .env(format!("FAULT_{upper}"))
        .value_name(upper)
        .action(ArgAction::Set)
}

/// The id of the shared flag `what` of fault `S`.
fn id<S: TcpFaultSpec>(what: &str) -> String {
    format!("{}_{what}", S::KIND)
}

/// The placement the shared flags of `S` give.
fn placement<S: TcpFaultSpec>(matches: &ArgMatches) -> Result<FaultCommon, clap::Error> {
    fn one<T: Clone + Send + Sync + 'static>(
        matches: &ArgMatches,
        id: &str,
    ) -> Result<Option<T>, clap::Error> {
        matches
            .try_get_one::<T>(id)
            .map(Option::<&T>::cloned)
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, e))
    }
    let defaults = FaultCommon::default();
    if S::PLACEABLE.is_none() {
        return Ok(defaults);
    }
    Ok(FaultCommon {
        side: one::<Side>(matches, &id::<S>("side"))?.unwrap_or(defaults.side),
        direction: one::<Direction>(matches, &id::<S>("direction"))?.unwrap_or(defaults.direction),
        probability: one::<f64>(matches, &id::<S>("probability"))?.unwrap_or(defaults.probability),
        schedule: one::<Schedule>(matches, &id::<S>("sched"))?,
    })
}

/// `command` with the flags of `S` under its heading: its own (through `own`), then the shared ones.
fn with_flags<S: TcpFaultSpec>(command: Command, own: fn(Command) -> Command) -> Command {
    let heading = command.get_next_help_heading().map(str::to_owned);
    let mut command = own(command.next_help_heading(S::TITLE));
    if let Some(placeable) = S::PLACEABLE {
        command = command
            .arg(
                shared_arg::<S>("side")
                    .help("Side: client or server")
                    .default_value("server")
                    .value_parser(value_parser!(Side)),
            )
            .arg(
                shared_arg::<S>("direction")
                    .help("Direction: ingress, egress or both")
                    .default_value("ingress")
                    .value_parser(value_parser!(Direction)),
            )
            .arg(
                shared_arg::<S>("probability")
                    .help(placeable.probability_help)
                    .default_value("1")
                    .value_parser(parse_probability),
            )
            .arg(
                shared_arg::<S>("sched")
                    .help(r#"Active window: "start:10%,duration:50%" or "start:5s,duration:10s""#)
                    .value_parser(value_parser!(Schedule)),
            );
    }
    match heading {
        Some(heading) => command.next_help_heading(heading),
        None => command.next_help_heading(None::<&str>),
    }
}

impl<S: TcpFaultSpec> clap::Args for FaultArgs<S> {
    fn augment_args(command: Command) -> Command {
        with_flags::<S>(command, S::Flags::augment_args)
    }

    fn augment_args_for_update(command: Command) -> Command {
        with_flags::<S>(command, S::Flags::augment_args_for_update)
    }
}

impl<S: TcpFaultSpec> clap::FromArgMatches for FaultArgs<S> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self {
            own: S::Flags::from_arg_matches(matches)?,
            placement: placement::<S>(matches)?,
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

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        faults: FaultFlags,
    }

    /// Checks the shared flags of each registered fault in `command`.
    struct SharedFlags(Command);

    impl EachFault for SharedFlags {
        fn fault<S: TcpFaultSpec>(&mut self) {
            let prefix = S::KIND.replace('_', "-");
            for (what, default) in [
                ("side", Some("server")),
                ("direction", Some("ingress")),
                ("probability", Some("1")),
                ("sched", None),
            ] {
                let long = format!("{prefix}-{what}");
                let arg = self
                    .0
                    .get_arguments()
                    .find(|arg| arg.get_long() == Some(long.as_str()));
                let Some(arg) = arg.filter(|_| S::PLACEABLE.is_some()) else {
                    // A fault that places itself may have a probability of its own (HTTP error's).
                    assert!(
                        S::PLACEABLE.is_none() && (arg.is_none() || what == "probability"),
                        "--{long}"
                    );
                    continue;
                };
                let env = format!("FAULT_{}_{}", S::KIND, what).to_ascii_uppercase();
                assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(env.as_str()));
                let defaults: Vec<_> = arg.get_default_values().iter().collect();
                assert_eq!(
                    defaults.first().and_then(|d| d.to_str()),
                    default,
                    "--{long}"
                );
                assert_eq!(arg.get_help_heading(), Some(S::TITLE), "--{long}");
            }
        }
    }

    #[test]
    fn every_placeable_fault_has_the_shared_flags_named_after_it() {
        faults::for_each(&mut SharedFlags(Run::command()));
    }

    #[test]
    fn the_shared_flags_place_the_fault() {
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
        let error = Run::try_parse_from(["run", "--latency-probability", "2"])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("must be between 0.0 and 1.0"), "{error}");
    }
}
