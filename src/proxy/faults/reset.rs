//! Reset: the connection is reset (RST to both peers, as by `SO_LINGER` 0 then close) once `after_bytes`
//! bytes of the flow have passed, or `after` since the connection opened, whichever comes first; at once
//! when it opens if neither is given.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use tokio::time::Instant;

use super::{
    Chunk, ConnectionEnd, Injector, Stage, TcpFaultSpec, Verdict, in_ms, on_selected_flows,
};
use crate::fields::{Field, FieldError, FieldInput, Unit};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Placeable};
use crate::proxy::values::MAX_DELAY_MS;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResetSpec {
    pub common: FaultCommon,
    /// Reset once this many bytes of the flow have passed.
    pub after_bytes: Option<u64>,
    /// Reset this long after the connection opened.
    pub after: Option<Duration>,
}

const AFTER_BYTES: Field = Field::number(
    "after_bytes",
    "Reset once this many bytes of the flow have passed",
    Number::from_to(0.0, 1e12).whole(),
    Unit::Bytes,
)
.optional("no byte limit");
const AFTER_MS: Field = Field::millis(
    "after_ms",
    "Reset this long after the connection opened; without either limit, connections are reset as soon as \
     they open",
    Number::from_to(0.0, MAX_DELAY_MS),
)
.optional("no time limit");

impl TcpFaultSpec for ResetSpec {
    const KIND: &'static str = "reset";
    const TITLE: &'static str = "Reset";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when connections on a TCP \
path are reset (RST to both peers, \"connection reset by peer\"): once `after_bytes` bytes of the flow have \
passed or `after_ms` milliseconds after a connection opened, whichever comes first, or as soon as it opens \
without either. Same topology, load and report as the latency scenario.";
    const ENABLE: &'static str =
        "Reset connections (RST): after --reset-after-bytes, after --reset-after-ms, or at once";
    const MODEL: &'static str = "the connection is reset (RST to both peers: `SO_LINGER` 0, then close) once \
`after_bytes` bytes of the flow have passed or `after_ms` after it opened, whichever first; at once without \
either. The client reads the bytes before, then `ECONNRESET`";
    const ACTED: &'static str = "connections reset";
    const PLACEABLE: Option<Placeable> = Some(Placeable {
        direction: Direction::Ingress,
        probability_help: "Share of connections reset (drawn per message)",
    });
    const FIELDS: &'static [Field] = &[AFTER_BYTES, AFTER_MS];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            common: FaultCommon::default(),
            after_bytes: input.optional_whole(&AFTER_BYTES)?,
            after: input.optional_millis(&AFTER_MS)?,
        })
    }

    fn describe(&self) -> String {
        let when = match (self.after_bytes, self.after) {
            (None, None) => "as soon as they open".to_owned(),
            (Some(n), None) => format!("after {n} bytes"),
            (None, Some(d)) => format!("{} after they open", in_ms(d)),
            (Some(n), Some(d)) => format!(
                "after {n} bytes or {} after they open, whichever comes first",
                in_ms(d)
            ),
        };
        format!("Reset: connections reset (RST) {when}")
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for ResetSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        let opened = Instant::now();
        let at = match (self.after_bytes, self.after) {
            (_, Some(after)) => Some(opened + after),
            (None, None) => Some(opened),
            (Some(_), None) => None,
        };
        on_selected_flows(acts_on, || {
            Box::new(Reset {
                after_bytes: self.after_bytes,
                at,
                passed: 0,
            })
        })
    }
}

pub struct Reset {
    after_bytes: Option<u64>,
    /// When the time limit runs out; cleared once it fired.
    at: Option<Instant>,
    passed: u64,
}

impl Stage for Reset {
    fn timer(&self) -> Option<Instant> {
        self.at
    }

    fn on_timer(&mut self, _now: Instant, _rng: &mut StdRng) -> Verdict {
        self.at = None;
        Verdict::End {
            keep: 0,
            how: ConnectionEnd::Reset,
        }
    }

    fn on_chunk(&mut self, chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        let Some(limit) = self.after_bytes else {
            return Verdict::Pass;
        };
        let len = chunk.bytes.len() as u64;
        if self.passed + len < limit {
            self.passed += len;
            return Verdict::Pass;
        }
        Verdict::End {
            keep: (limit - self.passed) as usize,
            how: ConnectionEnd::Reset,
        }
    }
}
