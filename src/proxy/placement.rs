//! Where, how often and when a fault acts: side and direction select a flow of the connection, probability
//! draws the messages it applies to, a schedule gives its active window. These four fields are declared
//! once, here, for every placeable fault and every face ([`fields`], [`read`]), as toxiproxy's wrapper
//! declares the fields every toxic shares.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

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

/// Windows one schedule may hold at most.
pub const MAX_WINDOWS: usize = 16;

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

    fn is_zero(self) -> bool {
        match self {
            SchedTime::Absolute(d) => d.is_zero(),
            SchedTime::Fraction(f) => f == 0.0,
        }
    }
}

/// One active window of a schedule: when it starts and, optionally, how long it lasts (without: until the
/// end of the run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduledWindow {
    pub start: SchedTime,
    pub duration: Option<SchedTime>,
}

impl ScheduledWindow {
    fn resolve(&self, run: Option<Duration>) -> Option<Window> {
        let start = self.start.resolve(run)?;
        let end = match self.duration {
            Some(d) => Some(start + d.resolve(run)?),
            None => None,
        };
        Some((start, end))
    }
}

/// When a fault is active, counted from the proxy's start: one window (`start:10%,duration:50%`,
/// `start:5s,duration:10s`) or several separated by `;` (`start:2s,duration:1s;start:8s,duration:2s`), as
/// upstream fault writes them. Each `start` opens a window; a `duration` closes the open one (a window with no
/// `start` starts at 0, one with no `duration` lasts until the end). Windows never overlap.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// In the order written.
    pub windows: Vec<ScheduledWindow>,
}

/// A schedule refused: what is wrong, for the face to name the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "'{0}' is empty; expected e.g. start:5s,duration:10s or start:10%,duration:50% (several windows separated by ';')"
    )]
    Empty(String),
    #[error("'{part}' must be key:value with key start or duration")]
    NotKeyValue { part: String },
    #[error("unknown key '{key}' in '{part}'; accepted: start, duration")]
    UnknownKey { key: String, part: String },
    #[error("{key} '{value}' is negative; a schedule counts forward from the start")]
    Negative { key: &'static str, value: String },
    #[error(
        "{key} '{value}' has no unit; write a duration such as 5s or 500ms, or a percentage such as 10%"
    )]
    NoUnit { key: &'static str, value: String },
    #[error(
        "{key} '{value}' has an unknown unit; write a duration in ms, s, m or h (5s, 500ms, 1m) or a percentage (10%)"
    )]
    UnknownUnit { key: &'static str, value: String },
    #[error("{key} '{value}' must be between 0% and 100%")]
    Percent { key: &'static str, value: String },
    #[error("window {window} has two durations; give one duration per start")]
    TwoDurations { window: usize },
    #[error("window {window} has a zero duration ({duration}); a window must last more than 0")]
    ZeroDuration { window: usize, duration: String },
    #[error("{0} windows; at most {MAX_WINDOWS} are accepted")]
    TooMany(usize),
    #[error(
        "window {later} ({later_text}) overlaps window {earlier} ({earlier_text}), which is active until {until}; windows must not overlap"
    )]
    Overlap {
        earlier: usize,
        earlier_text: String,
        later: usize,
        later_text: String,
        until: String,
    },
    #[error("uses percentages, which need a run duration (--duration)")]
    NeedsRunDuration,
    #[error(
        "window {window} ({text}) starts at {start}, at or after the run's end at {run}; start it earlier or lengthen the run"
    )]
    StartsAfterRun {
        window: usize,
        text: String,
        start: String,
        run: String,
    },
    #[error(
        "window {window} ({text}) ends at {end}, after the run's end at {run}; shorten it, or leave out its duration to hold it to the end"
    )]
    EndsAfterRun {
        window: usize,
        text: String,
        end: String,
        run: String,
    },
}

/// A duration in words for messages: "5s", "2.5s", "300ms".
fn span(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

impl Schedule {
    /// The active windows from the proxy's start in a run of `run` (`None`: no set length), in time order,
    /// checked: none overlaps another, and with a run length none starts at or ends after its end.
    pub fn windows(&self, run: Option<Duration>) -> Result<Vec<Window>, ScheduleError> {
        let mut windows = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| {
                w.resolve(run)
                    .map(|resolved| (i + 1, *w, resolved))
                    .ok_or(ScheduleError::NeedsRunDuration)
            })
            .collect::<Result<Vec<_>, _>>()?;
        windows.sort_by_key(|(_, _, (start, _))| *start);
        for pair in windows.windows(2) {
            let (earlier, earlier_window, (_, end)) = pair[0];
            let (later, later_window, (start, _)) = pair[1];
            if end.is_none_or(|end| end > start) {
                return Err(ScheduleError::Overlap {
                    earlier,
                    earlier_text: earlier_window.to_string(),
                    later,
                    later_text: later_window.to_string(),
                    until: end.map_or("the end".into(), span),
                });
            }
        }
        if let Some(run) = run {
            for (window, written, (start, end)) in &windows {
                if *start >= run {
                    return Err(ScheduleError::StartsAfterRun {
                        window: *window,
                        text: written.to_string(),
                        start: span(*start),
                        run: span(run),
                    });
                }
                if let Some(end) = end
                    && *end > run
                {
                    return Err(ScheduleError::EndsAfterRun {
                        window: *window,
                        text: written.to_string(),
                        end: span(*end),
                        run: span(run),
                    });
                }
            }
        }
        Ok(windows.into_iter().map(|(_, _, w)| w).collect())
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

impl fmt::Display for ScheduledWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "start:{}", self.start)?;
        if let Some(d) = self.duration {
            write!(f, ",duration:{d}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, window) in self.windows.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{window}")?;
        }
        Ok(())
    }
}

fn parse_sched_time(key: &'static str, raw: &str) -> Result<SchedTime, ScheduleError> {
    let value = raw.trim();
    if value.starts_with('-') {
        return Err(ScheduleError::Negative {
            key,
            value: value.into(),
        });
    }
    if let Some(pct) = value.strip_suffix('%') {
        return match pct.trim().parse::<f64>() {
            Ok(p) if (0.0..=100.0).contains(&p) => Ok(SchedTime::Fraction(p / 100.0)),
            _ => Err(ScheduleError::Percent {
                key,
                value: value.into(),
            }),
        };
    }
    if value.parse::<f64>().is_ok() {
        return Err(ScheduleError::NoUnit {
            key,
            value: value.into(),
        });
    }
    humantime::parse_duration(value)
        .map(SchedTime::Absolute)
        .map_err(|_| ScheduleError::UnknownUnit {
            key,
            value: value.into(),
        })
}

impl FromStr for Schedule {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut windows: Vec<ScheduledWindow> = Vec::new();
        // Whether the last window may still take a duration.
        let mut open = false;
        for part in s.split([',', ';']).map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once(':')
                .ok_or_else(|| ScheduleError::NotKeyValue { part: part.into() })?;
            match key.trim().to_ascii_lowercase().as_str() {
                "start" => {
                    windows.push(ScheduledWindow {
                        start: parse_sched_time("start", value)?,
                        duration: None,
                    });
                    open = true;
                }
                "duration" => {
                    let duration = parse_sched_time("duration", value)?;
                    if !open {
                        // A duration after a closed window is a second one for it; one before any start is a
                        // window from the beginning, as upstream fault reads it.
                        if !windows.is_empty() {
                            return Err(ScheduleError::TwoDurations {
                                window: windows.len(),
                            });
                        }
                        windows.push(ScheduledWindow {
                            start: SchedTime::Absolute(Duration::ZERO),
                            duration: None,
                        });
                    }
                    let window = windows.len();
                    if duration.is_zero() {
                        return Err(ScheduleError::ZeroDuration {
                            window,
                            duration: duration.to_string(),
                        });
                    }
                    if let Some(last) = windows.last_mut() {
                        last.duration = Some(duration);
                    }
                    open = false;
                }
                other => {
                    return Err(ScheduleError::UnknownKey {
                        key: other.into(),
                        part: part.into(),
                    });
                }
            }
        }
        if windows.is_empty() {
            return Err(ScheduleError::Empty(s.trim().into()));
        }
        if windows.len() > MAX_WINDOWS {
            return Err(ScheduleError::TooMany(windows.len()));
        }
        let schedule = Schedule { windows };
        // Windows in time alone overlap or not whatever the run's length: say so now.
        let absolute = schedule.windows.iter().all(|w| {
            matches!(w.start, SchedTime::Absolute(_))
                && w.duration
                    .is_none_or(|d| matches!(d, SchedTime::Absolute(_)))
        });
        if absolute {
            schedule.windows(None)?;
        }
        Ok(schedule)
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
    /// At the placement fields' declared defaults, acting on the responses (server ingress).
    fn default() -> Self {
        let placeable = Placeable::messages(Direction::Ingress);
        let none = FieldInput::from_arguments(&fields(&placeable), &serde_json::Map::new());
        match read(&none, &placeable) {
            Ok(common) => common,
            Err(e) => panic!("a placement field without a default: {e}"),
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

/// The schedule field of every placeable fault.
pub const SCHED: Field = Field::parsed(
    "sched",
    "When the fault is active, counted from the proxy's start (percentages are of the run's duration): one \
     window or several separated by ';', none overlapping another or going past the run's end",
    "\"start:5s,duration:10s\", \"start:10%,duration:50%\" or \"start:2s,duration:1s;start:8s,duration:2s\"",
    parses_as::<Schedule>,
)
.optional("active for the whole run");

/// How the user places a fault: side, direction, probability and schedule, on the command line and in its
/// tool alike.
#[derive(Debug, Clone, Copy)]
pub struct Placeable {
    /// The direction it takes when none is given (on every face).
    pub direction: Direction,
    /// What its probability draws, e.g. "Share of messages delayed".
    pub probability_help: &'static str,
}

impl Placeable {
    /// A fault whose probability draws messages, acting on `direction` by default.
    pub const fn messages(direction: Direction) -> Self {
        Self {
            direction,
            probability_help: "Share of messages affected",
        }
    }
}

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

/// A placement built in code holds what its fields accept (the probability's range).
pub fn check(common: &FaultCommon) -> Result<(), ParseError> {
    let [_, _, probability, _] = fields(&Placeable::messages(common.direction));
    Ok(probability.check_number(common.probability)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn refused(text: &str) -> String {
        text.parse::<Schedule>().unwrap_err().to_string()
    }

    #[test]
    fn one_window_or_several_as_upstream_writes_them() {
        let one: Schedule = "start:5s,duration:5s".parse().unwrap();
        assert_eq!(
            one.windows(Some(secs(24))),
            Ok(vec![(secs(5), Some(secs(10)))])
        );
        let two: Schedule = "start:20s,duration:40s;start:80s,duration:30s"
            .parse()
            .unwrap();
        assert_eq!(
            two.windows(None),
            Ok(vec![
                (secs(20), Some(secs(60))),
                (secs(80), Some(secs(110)))
            ])
        );
        assert_eq!(
            two.to_string(),
            "start:20s,duration:40s;start:1m 20s,duration:30s"
        );
        // Upstream fault's own example: a `;` between a start and its duration.
        let mixed: Schedule = "start:5%;duration:30%;start:90%,duration:5%"
            .parse()
            .unwrap();
        assert_eq!(
            mixed.windows(Some(secs(300))),
            Ok(vec![
                (secs(15), Some(secs(105))),
                (secs(270), Some(secs(285)))
            ])
        );
        // Out of order, a window under a second, one with no start (from 0) and one to the end.
        let short: Schedule = "start:5s,duration:500ms".parse().unwrap();
        assert_eq!(
            short.windows(None),
            Ok(vec![(secs(5), Some(Duration::from_millis(5500)))])
        );
        let later: Schedule = "start:8s;start:2s,duration:250ms".parse().unwrap();
        assert_eq!(
            later.windows(Some(secs(10))),
            Ok(vec![
                (secs(2), Some(Duration::from_millis(2250))),
                (secs(8), None)
            ])
        );
        let from_zero: Schedule = "duration:3s".parse().unwrap();
        assert_eq!(from_zero.windows(None), Ok(vec![(secs(0), Some(secs(3)))]));
    }

    #[test]
    fn bad_windows_are_refused_saying_what_is_wrong() {
        assert!(
            refused("start:1s,duration:5s;start:3s,duration:1s")
                .starts_with("window 2 (start:3s,duration:1s) overlaps window 1 (start:1s,duration:5s), which is active until 6s"),
            "{}",
            refused("start:1s,duration:5s;start:3s,duration:1s")
        );
        assert!(refused("start:1s;start:3s").contains("active until the end"));
        assert!(refused("start:1s,duration:0s").contains("window 1 has a zero duration"));
        assert!(refused("start:1s,duration:0%").contains("zero duration"));
        assert!(refused("start:-1s").contains("start '-1s' is negative"));
        assert!(refused("start:1s,duration:-5s").contains("duration '-5s' is negative"));
        assert!(refused("start:5x").contains("start '5x' has an unknown unit"));
        assert!(refused("start:5").contains("start '5' has no unit"));
        assert!(refused("start:150%").contains("between 0% and 100%"));
        assert!(refused("begin:1s").contains("unknown key 'begin'"));
        assert!(refused("start:1s,duration:1s,duration:2s").contains("window 1 has two durations"));
        assert!(
            refused("start:5s,duration:500ms;duration:1s").contains("window 1 has two durations")
        );
        assert!(refused(" ").contains("is empty"));
        let many = (0..17)
            .map(|i| format!("start:{}s,duration:1s", i * 2))
            .collect::<Vec<_>>()
            .join(";");
        assert!(refused(&many).contains("17 windows; at most 16"));
    }

    #[test]
    fn a_window_must_fit_the_run() {
        let run = Some(secs(24));
        let after: Schedule = "start:30s".parse().unwrap();
        assert!(
            after
                .windows(run)
                .unwrap_err()
                .to_string()
                .contains("starts at 30s, at or after the run's end at 24s")
        );
        let past: Schedule = "start:20s,duration:10s".parse().unwrap();
        assert!(
            past.windows(run)
                .unwrap_err()
                .to_string()
                .contains("ends at 30s, after the run's end at 24s")
        );
        // Percentages overlap or not only once the run's length is known.
        let shares: Schedule = "start:10%,duration:50%;start:20%".parse().unwrap();
        assert!(matches!(
            shares.windows(Some(secs(10))),
            Err(ScheduleError::Overlap { .. })
        ));
        assert_eq!(shares.windows(None), Err(ScheduleError::NeedsRunDuration));
    }
}
