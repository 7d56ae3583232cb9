//! Where, how often and when a fault acts: side and direction select a flow of the connection, probability
//! draws the messages it applies to, a schedule gives its active window. These four fields are declared
//! once, here, for every placeable fault and every face ([`fields`], [`read`]), as toxiproxy's wrapper
//! declares the fields every toxic shares.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::faults::Placeable;
use super::values::ParseError;
use crate::fields::{Field, FieldError, FieldInput, Unit, parses_as};
use crate::lenient::Number;

/// Which end of the relay a fault stands at (see the table in DESIGN.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    #[default]
    Server,
}

/// Which bytes at that end: arriving (ingress), leaving (egress) or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Ingress,
    Egress,
    Both,
}

/// One of the two byte flows of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flow {
    /// Client → upstream.
    Request,
    /// Upstream → client.
    Response,
}

impl Flow {
    pub(crate) fn index(self) -> usize {
        match self {
            Flow::Request => 0,
            Flow::Response => 1,
        }
    }
}

impl Side {
    /// The flows that `side` + `direction` select, per the DESIGN table:
    /// server/ingress = response, server/egress = request, client/ingress = request, client/egress = response.
    pub fn flows(self, direction: Direction) -> &'static [Flow] {
        match (self, direction) {
            (_, Direction::Both) => &[Flow::Request, Flow::Response],
            (Side::Server, Direction::Ingress) | (Side::Client, Direction::Egress) => {
                &[Flow::Response]
            }
            (Side::Server, Direction::Egress) | (Side::Client, Direction::Ingress) => {
                &[Flow::Request]
            }
        }
    }
}

impl FromStr for Side {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "client" => Ok(Side::Client),
            "server" => Ok(Side::Server),
            _ => Err(ParseError::new(format!(
                "side must be one of client, server; got '{s}'"
            ))),
        }
    }
}

impl FromStr for Direction {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ingress" => Ok(Direction::Ingress),
            "egress" => Ok(Direction::Egress),
            "both" => Ok(Direction::Both),
            _ => Err(ParseError::new(format!(
                "direction must be one of ingress, egress, both; got '{s}'"
            ))),
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Client => "client",
            Side::Server => "server",
        })
    }
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Ingress => "ingress",
            Direction::Egress => "egress",
            Direction::Both => "both",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An active window `[start, end)` from the proxy's start; no end: until the proxy stops.
pub type Window = (Duration, Option<Duration>);

/// A point or a length of time in a schedule: a share of the run or an absolute time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SchedTime {
    /// A fraction of the run duration (0.1 = 10%).
    Fraction(f64),
    Absolute(Duration),
}

impl SchedTime {
    fn resolve(self, run: Option<Duration>) -> Option<Duration> {
        match self {
            SchedTime::Absolute(d) => Some(d),
            SchedTime::Fraction(f) => run.map(|r| r.mul_f64(f)),
        }
    }
}

/// When a fault is active, counted from the proxy's start: `start:10%,duration:50%` or `start:5s,duration:10s`.
/// Without `duration` the fault stays on until the end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub start: SchedTime,
    pub duration: Option<SchedTime>,
}

impl Schedule {
    /// The active window from the proxy's start; `None` when a percentage needs a run duration.
    pub fn window(&self, run: Option<Duration>) -> Option<Window> {
        let start = self.start.resolve(run)?;
        let end = match self.duration {
            Some(d) => Some(start + d.resolve(run)?),
            None => None,
        };
        Some((start, end))
    }
}

impl fmt::Display for SchedTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedTime::Fraction(x) => write!(f, "{}%", (x * 1e4).round() / 1e2),
            SchedTime::Absolute(d) => write!(f, "{}", humantime::format_duration(*d)),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "start:{}", self.start)?;
        if let Some(d) = self.duration {
            write!(f, ",duration:{d}")?;
        }
        Ok(())
    }
}

fn parse_sched_time(raw: &str, whole: &str) -> Result<SchedTime, ParseError> {
    let v = raw.trim();
    if let Some(pct) = v.strip_suffix('%') {
        let p: f64 = pct.trim().parse().map_err(|_| {
            ParseError::new(format!(
                "schedule '{whole}': '{v}' is not a percentage such as 10%"
            ))
        })?;
        if !(0.0..=100.0).contains(&p) {
            return Err(ParseError::new(format!(
                "schedule '{whole}': '{v}' must be between 0% and 100%"
            )));
        }
        return Ok(SchedTime::Fraction(p / 100.0));
    }
    humantime::parse_duration(v)
        .map(SchedTime::Absolute)
        .map_err(|_| {
            ParseError::new(format!(
                "schedule '{whole}': '{v}' is neither a percentage (10%) nor a duration (5s, 500ms)"
            ))
        })
}

impl FromStr for Schedule {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut start = None;
        let mut duration = None;
        for part in s.split([',', ';']).map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once(':').ok_or_else(|| {
                ParseError::new(format!(
                    "schedule '{s}': '{part}' must be key:value with key start or duration"
                ))
            })?;
            match key.trim().to_ascii_lowercase().as_str() {
                "start" => start = Some(parse_sched_time(value, s)?),
                "duration" => duration = Some(parse_sched_time(value, s)?),
                other => {
                    return Err(ParseError::new(format!(
                        "schedule '{s}': unknown key '{other}'; accepted: start, duration"
                    )));
                }
            }
        }
        if start.is_none() && duration.is_none() {
            return Err(ParseError::new(format!(
                "schedule '{s}' is empty; expected e.g. start:10%,duration:50% or start:5s,duration:10s"
            )));
        }
        Ok(Schedule {
            start: start.unwrap_or(SchedTime::Absolute(Duration::ZERO)),
            duration,
        })
    }
}

/// What every fault has: where it applies, how often, when.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultCommon {
    pub side: Side,
    pub direction: Direction,
    /// Share of messages the fault applies to, 0.0..=1.0 (a message: the bytes a flow carries
    /// before the other flow answers, e.g. one HTTP request or one response).
    pub probability: f64,
    pub schedule: Option<Schedule>,
}

impl Default for FaultCommon {
    fn default() -> Self {
        Self {
            side: Side::Server,
            direction: Direction::Ingress,
            probability: 1.0,
            schedule: None,
        }
    }
}

const SIDE: Field = Field::parsed(
    "side",
    "The end of the proxy the fault stands at: server (facing the upstream) or client (facing the caller)",
    "client or server",
    parses_as::<Side>,
)
.default("server");

const SCHED: Field = Field::parsed(
    "sched",
    "When the fault is active, counted from the proxy's start (percentages are of the run's duration)",
    "\"start:5s,duration:10s\" or \"start:10%,duration:50%\"",
    parses_as::<Schedule>,
)
.optional("active for the whole run");

/// The fields of a placeable fault: side, direction, probability and sched. Only the direction's default and
/// what the probability draws differ from fault to fault (its [`Placeable`]).
pub fn fields(placeable: &Placeable) -> [Field; 4] {
    let direction = Field::parsed(
        "direction",
        "The bytes at that end the fault acts on: ingress (arriving), egress (leaving) or both; server \
         ingress and client egress are the responses, server egress and client ingress the requests",
        "ingress, egress or both",
        parses_as::<Direction>,
    )
    .default(placeable.direction.name());
    let probability = Field::number(
        "probability",
        placeable.probability_help,
        Number::from_to(0.0, 1.0),
        Unit::None,
    )
    .default("1");
    [SIDE, direction, probability, SCHED]
}

/// Where, how often and when a placeable fault acts, from a face's values.
pub fn read(input: &FieldInput, placeable: &Placeable) -> Result<FaultCommon, FieldError> {
    let [side, direction, probability, sched] = fields(placeable);
    Ok(FaultCommon {
        side: input.parsed(&side)?,
        direction: input.parsed(&direction)?,
        probability: input.number(&probability)?,
        schedule: input.optional_parsed(&sched)?,
    })
}
