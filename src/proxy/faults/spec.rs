//! What every TCP fault is to the rest of the proxy: its spec's facts and fields (from which the faces are
//! generated), and the injector that builds its stages for each connection.

use std::{fmt, sync::Arc};

use super::{Stage, TcpFault};
use crate::fields::{Field, FieldError, FieldInput};
use crate::proxy::placement::{self, Placeable};
use crate::proxy::values::ParseError;

/// What every TCP fault's spec is: its facts and fields, from which its faces are generated, and its
/// behaviour.
pub trait TcpFaultSpec: fmt::Debug + Clone + Send + Sync + Into<TcpFault> + 'static {
    /// Name of the fault kind: in stats, logs and reports; `--with-<kind>` and `FAULT_<KIND>_…` (`-` and
    /// upper case for `_`); its tool `fault_run_<kind>_impact_scenario`.
    const KIND: &'static str;
    /// Its heading in `fault run --help`, e.g. "HTTP error".
    const TITLE: &'static str;
    /// What `--with-<kind>` does, e.g. "Add latency".
    const ENABLE: &'static str;
    /// How it acts, for the reference.
    const MODEL: &'static str;
    /// What "fault acted N times" counts for it, e.g. "messages delayed".
    const ACTED: &'static str;
    /// The description of its impact-scenario tool; the defaults are added from the fields.
    const TOOL_DESCRIPTION: &'static str;
    /// How the user places it, or `None` for a fault that places itself (HTTP error acts on responses and
    /// draws its own probability).
    const PLACEABLE: Option<Placeable>;
    /// Whether it reads HTTP/1 messages, so it needs them in clear text (the proxy, not the client, then
    /// speaks TLS to an `https://` upstream), and follows them outside its schedule's windows too
    /// ([`Chunk::active`]).
    const READS_HTTP: bool = false;
    /// Its own fields, in the order the faces list them (the placement ones come after, from
    /// [`placement::fields`]).
    const FIELDS: &'static [Field];

    /// The spec from its fields' values, read through `input` (the one reader of every face), placed at the
    /// defaults; a rule between fields names the field it refuses.
    fn read(input: &FieldInput) -> Result<Self, FieldError>;
    /// Checks the fault's own values (for a spec built in code); messages name the field.
    fn validate(&self) -> Result<(), ParseError> {
        Ok(())
    }
    /// One line for `fault run` output and scenario reports, e.g. "Latency: mean 300ms, …".
    fn describe(&self) -> String;
    /// Readies the fault for one proxy; state all its connections share is created here.
    fn injector(&self) -> Arc<dyn Injector>;
}

/// Every field of fault `S`: its own, then where and when it acts (only when, its schedule, for a fault that
/// places itself).
pub fn fields<S: TcpFaultSpec>() -> Vec<Field> {
    let placement = match S::PLACEABLE {
        Some(placeable) => placement::fields(&placeable).to_vec(),
        None => vec![placement::SCHED],
    };
    S::FIELDS.iter().copied().chain(placement).collect()
}

/// Fault `S` from the values a face was given: its own fields, then where and when it acts, then checked.
pub fn read_fault<S: TcpFaultSpec>(input: &FieldInput) -> Result<TcpFault, FieldError> {
    let mut fault: TcpFault = S::read(input)?.into();
    match S::PLACEABLE {
        Some(placeable) => *fault.common_mut() = placement::read(input, &placeable)?,
        None => fault.common_mut().schedule = input.optional_parsed(&placement::SCHED)?,
    }
    fault.validate().map_err(|e| FieldError {
        field: S::KIND.to_owned(),
        message: e.to_string(),
    })?;
    Ok(fault)
}

/// Fault `S` at its fields' declared defaults (placed at its placement's), as a spec built in code starts
/// from (`..Default::default()`): the defaults are the declarations', never written a second time.
///
/// # Panics
/// When a field of `S` has no default: a declaration error, which the registry's tests catch.
pub fn declared_defaults<S: TcpFaultSpec>() -> S {
    let none = FieldInput::from_arguments(S::FIELDS, &serde_json::Map::new());
    match S::read(&none) {
        Ok(spec) => spec,
        Err(e) => panic!("{} has a field without a default: {e}", S::KIND),
    }
}

/// The defaults of fault `S`'s fields in words, for its tool's description: "side server, direction
/// egress, loss_rate 0.05".
pub fn defaults_text<S: TcpFaultSpec>() -> String {
    fields::<S>()
        .iter()
        .filter_map(|field| match field.presence {
            crate::fields::Presence::Default(value) if !value.is_empty() && value != "false" => {
                Some(format!("{} {value}", field.name))
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Something done with every registered fault's spec type (see [`for_each`]).
pub trait EachFault {
    fn fault<S: TcpFaultSpec>(&mut self);
}

/// A fault ready on one proxy: builds the stages of each new connection.
pub trait Injector: Send + Sync {
    /// The stages of one new connection, indexed by [`Flow::index`]; `acts_on` says which flows the fault's
    /// side and direction select. A fault may also watch a flow it does not act on (HTTP error watches
    /// requests), sharing per-connection state between its two stages.
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2];
}

/// The stages of a fault that acts on each selected flow alone, each built by `build`.
pub fn on_selected_flows(
    acts_on: [bool; 2],
    mut build: impl FnMut() -> Box<dyn Stage>,
) -> [Option<Box<dyn Stage>>; 2] {
    acts_on.map(|on| on.then(&mut build))
}

#[cfg(test)]
mod tests {
    use super::super::{
        TcpFault, corrupt::CorruptSpec, http_error::HttpErrorSpec, packet_loss::PacketLossSpec,
    };
    use crate::proxy::placement::{Direction, FaultCommon, Side};

    #[test]
    fn a_spec_built_in_code_starts_at_the_declared_defaults() {
        let http_error = HttpErrorSpec::default();
        assert_eq!(
            (
                http_error.status_code,
                http_error.body.as_str(),
                http_error.probability,
                http_error.retry_after
            ),
            (503, "", 1.0, None)
        );
        assert_eq!(PacketLossSpec::default().rate, 0.05);
        let common = FaultCommon::default();
        assert_eq!(
            (common.side, common.direction, common.probability),
            (Side::Server, Direction::Ingress, 1.0)
        );
        assert!(common.schedule.is_none());
    }

    #[test]
    fn a_spec_built_in_code_is_checked_by_its_fields_declarations() {
        let refusal = |fault: TcpFault| match fault.validate() {
            Ok(()) => panic!("{fault:?} was accepted"),
            Err(e) => e.to_string(),
        };
        let status = HttpErrorSpec {
            status_code: 200,
            ..HttpErrorSpec::default()
        };
        assert_eq!(
            refusal(status.into()),
            "status_code: 200 is out of range; accepted: 400 to 599"
        );
        let retry_after = HttpErrorSpec {
            retry_after: Some(86_401),
            ..HttpErrorSpec::default()
        };
        assert_eq!(
            refusal(retry_after.into()),
            "retry_after: 86401 is out of range; accepted: 0 to 86400"
        );
        let corrupt = CorruptSpec {
            rate: 1.5,
            ..CorruptSpec::default()
        };
        assert_eq!(
            refusal(corrupt.into()),
            "rate: 1.5 is out of range; accepted: 0 to 1"
        );
        let loss = PacketLossSpec {
            rate: 1.0,
            ..PacketLossSpec::default()
        };
        assert!(refusal(loss.into()).starts_with("loss_rate: "));
        let mut placed: TcpFault = PacketLossSpec::default().into();
        placed.common_mut().probability = -0.5;
        assert_eq!(
            refusal(placed),
            "probability: -0.5 is out of range; accepted: 0 to 1"
        );
        for fault in [
            TcpFault::from(HttpErrorSpec::default()),
            PacketLossSpec::default().into(),
        ] {
            assert_eq!(fault.validate(), Ok(()), "{fault:?}");
        }
    }
}
