//! What passes through the proxy, measured: every HTTP/1 exchange, from the request's first byte read from the
//! client to the response's last byte written to it (and, of that, the delays the faults added), grouped by
//! method and path, recorded as the load generator records its requests ([`crate::load::Samples`], one per
//! group), so that the one impact report is built from them ([`ExchangeRecorder::load_report`]). A stream
//! that is not HTTP/1 is counted as connections, bytes and durations ([`StreamTally`]).
//!
//! Each connection follows its two flows with [`ConnectionExchanges`]: the request flow queues each request
//! as its head completes; the response flow ends the oldest queued one at the end of each final response
//! (HTTP/1 answers in order).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::http1::{RequestFlow, ResponseFlow, request_line};
use crate::load::{
    LoadReport, PhaseSamples, RequestOutcome, RequestSamples, Samples, SecondSamples, Timing,
    phase_of, phases,
};

/// Groups kept at most; exchanges of further paths are counted under their method's "(other paths)" group,
/// so that a client walking ids without a `--group` pattern cannot grow the report without bound.
pub const MAX_GROUPS: usize = 100;

/// Why a `--group` pattern is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupPatternError {
    #[error("'{0}' does not start with '/', so no path can match it; e.g. /orders/{{id}}")]
    NotAPath(String),
    #[error("'{0}' has an unclosed '{{'; e.g. /orders/{{id}}")]
    Unclosed(String),
    #[error("'{0}' has a '}}' that closes nothing; e.g. /orders/{{id}}")]
    Unopened(String),
    #[error("'{0}' has an empty placeholder '{{}}'; name it, e.g. /orders/{{id}}")]
    EmptyName(String),
    #[error(
        "'{pattern}': the placeholder '{{{name}}}' must be a whole segment between slashes, e.g. /orders/{{id}}"
    )]
    PartSegment { pattern: String, name: String },
}

/// A `--group` pattern: a path whose `{name}` segments each stand for any one non-empty segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPattern {
    text: String,
    /// `None` for a placeholder.
    segments: Vec<Option<String>>,
}

impl FromStr for GroupPattern {
    type Err = GroupPatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let Some(rest) = text.strip_prefix('/') else {
            return Err(GroupPatternError::NotAPath(text.to_owned()));
        };
        let mut depth = 0i32;
        for c in text.chars() {
            match c {
                '{' if depth > 0 => return Err(GroupPatternError::Unclosed(text.to_owned())),
                '{' => depth += 1,
                '}' if depth == 0 => return Err(GroupPatternError::Unopened(text.to_owned())),
                '}' => depth -= 1,
                _ => {}
            }
        }
        if depth != 0 {
            return Err(GroupPatternError::Unclosed(text.to_owned()));
        }
        let segments = rest
            .split('/')
            .map(|segment| {
                if !segment.contains('{') {
                    return Ok(Some(segment.to_owned()));
                }
                let name = segment
                    .split_once('{')
                    .and_then(|(_, after)| after.split_once('}'))
                    .map_or("", |(name, _)| name);
                if !(segment.starts_with('{') && segment.ends_with('}')) {
                    return Err(GroupPatternError::PartSegment {
                        pattern: text.to_owned(),
                        name: name.to_owned(),
                    });
                }
                if name.trim().is_empty() {
                    return Err(GroupPatternError::EmptyName(text.to_owned()));
                }
                Ok(None)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            text: text.to_owned(),
            segments,
        })
    }
}

impl fmt::Display for GroupPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl GroupPattern {
    /// Whether `path` (without its query) is one this pattern folds.
    pub fn matches(&self, path: &str) -> bool {
        let Some(rest) = path.strip_prefix('/') else {
            return false;
        };
        let mut parts = rest.split('/');
        for segment in &self.segments {
            match (segment, parts.next()) {
                (_, None) => return false,
                (None, Some("")) => return false,
                (None, Some(_)) => {}
                (Some(literal), Some(part)) if literal != part => return false,
                (Some(_), Some(_)) => {}
            }
        }
        parts.next().is_none()
    }
}

/// Checks a `--group` pattern, for the field's reader.
pub fn check_group(text: &str) -> Result<(), String> {
    text.parse::<GroupPattern>()
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Connections whose flows were not HTTP/1 (TLS from the client, another protocol, a protocol switch):
/// counted, not framed.
#[derive(Debug, Clone)]
pub struct StreamTally {
    pub connections: u64,
    pub bytes_to_upstream: u64,
    pub bytes_to_client: u64,
    /// How long each was open (µs).
    pub duration_us: Histogram<u64>,
}

impl Default for StreamTally {
    fn default() -> Self {
        Self {
            connections: 0,
            bytes_to_upstream: 0,
            bytes_to_client: 0,
            duration_us: crate::load::histogram(3),
        }
    }
}

#[derive(Default)]
struct Recorded {
    /// Samples per group, in the order groups were first seen.
    groups: Vec<RequestSamples>,
    index: HashMap<String, usize>,
    streams: StreamTally,
}

/// Every exchange through one proxy (all its mappings), grouped.
pub struct ExchangeRecorder {
    started: Instant,
    started_at: chrono::DateTime<chrono::Utc>,
    patterns: Vec<GroupPattern>,
    /// Where the phases of the report start: the faults' windows' edges.
    cuts: Vec<Duration>,
    recorded: Mutex<Recorded>,
}

/// Length given to the last phase while the run's end is not known (a run stopped by Ctrl-C).
const OPEN_END: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// One exchange, as it ended.
struct Ended {
    group: String,
    first_byte: Instant,
    fault_added: Duration,
    ended: Instant,
    outcome: RequestOutcome,
    answered: bool,
}

impl ExchangeRecorder {
    /// A recorder folding paths with `patterns` and cutting phases at `cuts` (from `started`).
    pub fn new(started: Instant, patterns: Vec<GroupPattern>, cuts: Vec<Duration>) -> Self {
        Self {
            started,
            started_at: chrono::Utc::now(),
            patterns,
            cuts,
            recorded: Mutex::new(Recorded::default()),
        }
    }

    /// The group of a request: its method and path, or the first pattern folding the path.
    pub fn group(&self, method: &str, path: &str) -> String {
        match self.patterns.iter().find(|p| p.matches(path)) {
            Some(pattern) => format!("{method} {pattern}"),
            None => format!("{method} {path}"),
        }
    }

    fn record(&self, exchange: Ended) {
        let due = exchange.first_byte.saturating_duration_since(self.started);
        let second = due.as_secs() as usize;
        let ended_second = exchange
            .ended
            .saturating_duration_since(self.started)
            .as_secs() as usize;
        let timing = Timing {
            due: exchange.first_byte,
            // The faults' part first: the report's queueing delay is what the faults added here.
            sent: Some(exchange.first_byte + exchange.fault_added),
            ended: exchange
                .ended
                .max(exchange.first_byte + exchange.fault_added),
        };
        let latency = timing.latency();
        let Ok(mut recorded) = self.recorded.lock() else {
            return;
        };
        let recorded = &mut *recorded;
        let index = match recorded.index.get(&exchange.group) {
            Some(&index) => index,
            None => {
                let name = if recorded.groups.len() < MAX_GROUPS {
                    exchange.group
                } else {
                    let method = exchange.group.split(' ').next().unwrap_or("");
                    format!("{method} (other paths)")
                };
                match recorded.index.get(&name) {
                    Some(&index) => index,
                    None => {
                        let mut samples = Samples::new(0);
                        samples.phases = phases(&self.cuts, OPEN_END);
                        recorded.groups.push(RequestSamples {
                            name: name.clone(),
                            samples,
                        });
                        recorded.index.insert(name, recorded.groups.len() - 1);
                        recorded.groups.len() - 1
                    }
                }
            }
        };
        let samples = &mut recorded.groups[index].samples;
        let needed = second.max(ended_second) + 1;
        if samples.per_second.len() < needed {
            samples.per_second.resize_with(needed, SecondSamples::new);
        }
        if let Some(phase) = phase_of(&samples.phases, due) {
            samples.phases[phase].add(latency, &exchange.outcome);
        }
        samples.record(second, &timing, exchange.outcome, 0);
        if exchange.answered {
            samples.per_second[ended_second].answered += 1;
        }
    }

    fn record_stream(&self, opened: Instant, up: u64, down: u64) {
        let us = opened.elapsed().as_micros() as u64;
        if let Ok(mut recorded) = self.recorded.lock() {
            let streams = &mut recorded.streams;
            streams.connections += 1;
            streams.bytes_to_upstream += up;
            streams.bytes_to_client += down;
            crate::load::record_us(&mut streams.duration_us, us);
        }
    }

    /// The groups recorded so far, with their samples, and the opaque streams.
    pub fn snapshot(&self) -> (Vec<RequestSamples>, StreamTally) {
        match self.recorded.lock() {
            Ok(recorded) => (recorded.groups.clone(), recorded.streams.clone()),
            Err(_) => (Vec::new(), StreamTally::default()),
        }
    }

    /// Every exchange of every group, added up.
    pub fn total(&self) -> Samples {
        let mut total = Samples::new(0);
        if let Ok(recorded) = self.recorded.lock() {
            for group in &recorded.groups {
                total.merge(&group.samples);
            }
        }
        total
    }

    /// What was recorded until now, as a load run of `duration` (the run's `--duration`, or how long it ran):
    /// the one model the impact report is built from. `connections` is what the proxy accepted.
    pub fn load_report(&self, duration: Duration, connections: u64) -> LoadReport {
        let (mut groups, _) = self.snapshot();
        let seconds = (duration.as_secs_f64().ceil() as usize).max(
            groups
                .iter()
                .map(|g| g.samples.per_second.len())
                .max()
                .unwrap_or(0),
        );
        let mut run_phases = phases(&self.cuts, OPEN_END);
        for group in &mut groups {
            group
                .samples
                .per_second
                .resize_with(seconds, SecondSamples::new);
            close_phases(&mut group.samples.phases, duration);
        }
        close_phases(&mut run_phases, duration);
        let mut samples = Samples::new(seconds);
        samples.phases = run_phases;
        for group in &groups {
            samples.merge(&group.samples);
        }
        // What arrived is what was offered: a proxy has no schedule of its own.
        let offered_per_second = samples.per_second.iter().map(|s| s.requests).collect();
        LoadReport {
            started_at: self.started_at,
            ended_at: chrono::Utc::now(),
            elapsed: duration,
            planned: None,
            connections_opened: connections,
            cut_short: false,
            offered_per_second,
            samples,
            per_request: groups,
        }
    }
}

/// The last phase ends with the run.
fn close_phases(phases: &mut Vec<PhaseSamples>, end: Duration) {
    phases.retain(|phase| phase.from < end || phase.from.is_zero());
    if let Some(last) = phases.last_mut() {
        last.until = end;
    }
}

/// A request sent upstream, waiting for its response.
struct Pending {
    group: String,
    is_head: bool,
    first_byte: Instant,
    fault_added: Duration,
}

/// One connection's exchanges, followed on both flows. Each flow calls it only with what it wrote.
pub(crate) struct ConnectionExchanges<'a> {
    recorder: &'a ExchangeRecorder,
    opened: Instant,
    requests: Mutex<RequestSide>,
    responses: Mutex<ResponseSide>,
}

#[derive(Default)]
struct RequestSide {
    flow: RequestFlow,
    /// When the first byte of the request in progress was read, its fault delays so far.
    current: Option<(Instant, Duration)>,
    bytes: u64,
}

#[derive(Default)]
struct ResponseSide {
    flow: ResponseFlow,
    pending: VecDeque<Pending>,
    bytes: u64,
}

impl<'a> ConnectionExchanges<'a> {
    pub(crate) fn new(recorder: &'a ExchangeRecorder) -> Self {
        Self {
            recorder,
            opened: Instant::now(),
            requests: Mutex::new(RequestSide::default()),
            responses: Mutex::new(ResponseSide::default()),
        }
    }

    /// `bytes` of the request flow were written upstream; they were read at `read_at`, and the faults held
    /// them `delay`.
    pub(crate) fn request_written(&self, bytes: &[u8], read_at: Instant, delay: Duration) {
        let Ok(mut side) = self.requests.lock() else {
            return;
        };
        let side = &mut *side;
        side.bytes += bytes.len() as u64;
        if side.flow.is_opaque() {
            return;
        }
        let in_body = side.flow.in_body();
        if !in_body {
            side.current.get_or_insert((read_at, Duration::ZERO)).1 += delay;
        }
        let mut heads = Vec::new();
        side.flow.observe_heads(bytes, |head, text| {
            let (method, path) = request_line(text).unwrap_or(("?", "?"));
            heads.push((self.recorder.group(method, path), head.is_head));
        });
        if heads.is_empty() && !in_body {
            return;
        }
        let Ok(mut responses) = self.responses.lock() else {
            return;
        };
        if in_body && let Some(last) = responses.pending.back_mut() {
            // The body of a request already queued: its delays are that request's.
            last.fault_added += delay;
        }
        for (group, is_head) in heads {
            let (first_byte, fault_added) = side.current.take().unwrap_or((read_at, delay));
            responses.pending.push_back(Pending {
                group,
                is_head,
                first_byte,
                fault_added,
            });
        }
        // Bytes after the last head that start the next one: that request's first byte was read now.
        if side.flow.head_started() {
            side.current = Some((read_at, Duration::ZERO));
        }
    }

    /// `bytes` of the response flow were written to the client, the faults having held them `delay`.
    pub(crate) fn response_written(&self, bytes: &[u8], delay: Duration) {
        let Ok(mut side) = self.responses.lock() else {
            return;
        };
        let side = &mut *side;
        side.bytes += bytes.len() as u64;
        if side.flow.is_opaque() {
            return;
        }
        if let Some(front) = side.pending.front_mut() {
            front.fault_added += delay;
        }
        let now = Instant::now();
        let pending = &side.pending;
        let ended = std::cell::RefCell::new(Vec::new());
        side.flow.observe(
            bytes,
            || pending.get(ended.borrow().len()).is_some_and(|p| p.is_head),
            |status| ended.borrow_mut().push(status),
        );
        let ended = ended.into_inner();
        for status in ended {
            let Some(request) = side.pending.pop_front() else {
                break;
            };
            self.recorder.record(Ended {
                group: request.group,
                first_byte: request.first_byte,
                fault_added: request.fault_added,
                ended: now,
                outcome: outcome(status),
                answered: true,
            });
        }
    }

    /// The connection ended: a response that ran until the close ends now; requests left unanswered failed;
    /// a connection that was not HTTP/1 is counted as a stream.
    pub(crate) fn closed(self, why: Option<&std::io::Error>) {
        let now = Instant::now();
        let requests = self.requests.into_inner().unwrap_or_default();
        let mut responses = self.responses.into_inner().unwrap_or_default();
        let opaque = requests.flow.is_opaque() || responses.flow.is_opaque();
        if opaque {
            self.recorder
                .record_stream(self.opened, requests.bytes, responses.bytes);
        }
        if let (Some(status), None) = (responses.flow.ends_at_close(), why)
            && let Some(request) = responses.pending.pop_front()
        {
            self.recorder.record(Ended {
                group: request.group,
                first_byte: request.first_byte,
                fault_added: request.fault_added,
                ended: now,
                outcome: outcome(status),
                answered: true,
            });
        }
        if opaque {
            return;
        }
        let message = match why {
            Some(e) => format!("the connection ended before the response did: {e}"),
            None => "the connection closed before the response ended".to_owned(),
        };
        for request in responses.pending {
            self.recorder.record(Ended {
                group: request.group,
                first_byte: request.first_byte,
                fault_added: request.fault_added,
                ended: now,
                outcome: RequestOutcome::Transport(message.clone()),
                answered: false,
            });
        }
    }
}

/// A status as the load generator counts it: below 400 a success, else an HTTP error.
fn outcome(status: u16) -> RequestOutcome {
    if status < 400 {
        RequestOutcome::Success
    } else {
        RequestOutcome::HttpError(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_folds_whole_segments_and_nothing_else() {
        let orders: GroupPattern = "/orders/{id}".parse().unwrap();
        assert!(orders.matches("/orders/17"));
        assert!(orders.matches("/orders/abc"));
        assert!(!orders.matches("/orders/"));
        assert!(!orders.matches("/orders/17/items"));
        assert!(!orders.matches("/order/17"));
        let items: GroupPattern = "/orders/{id}/items/{item}".parse().unwrap();
        assert!(items.matches("/orders/1/items/2"));
        assert!(!items.matches("/orders/1/items"));
    }

    #[test]
    fn a_pattern_that_cannot_match_is_refused_saying_why() {
        let refused = |text: &str| text.parse::<GroupPattern>().unwrap_err().to_string();
        assert!(refused("orders/{id}").contains("does not start with '/'"));
        assert!(refused("/orders/{id").contains("unclosed '{'"));
        assert!(refused("/orders/{{id}}").contains("unclosed '{'"));
        assert!(refused("/orders/id}").contains("closes nothing"));
        assert!(refused("/orders/{}").contains("empty placeholder"));
        assert!(refused("/orders/x{id}").contains("whole segment"));
    }

    fn exchange(recorder: &ExchangeRecorder, conn: &ConnectionExchanges<'_>, request: &[u8]) {
        conn.request_written(request, Instant::now(), Duration::ZERO);
        let _ = recorder;
    }

    #[tokio::test]
    async fn exchanges_are_paired_in_order_grouped_and_timed_with_the_faults_part() {
        let recorder = ExchangeRecorder::new(
            Instant::now(),
            vec!["/orders/{id}".parse().unwrap()],
            Vec::new(),
        );
        let conn = ConnectionExchanges::new(&recorder);
        // Two pipelined requests in one read, a third cut across two.
        exchange(
            &recorder,
            &conn,
            b"GET /orders/1 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /orders/2?x=1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /pay HTTP/1.1\r\nContent-Length: 4\r\n\r\nab",
        );
        conn.request_written(b"cd", Instant::now(), Duration::from_millis(3));
        conn.response_written(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            Duration::ZERO,
        );
        // The HEAD answer announces a length but has no body.
        conn.response_written(
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n",
            Duration::ZERO,
        );
        conn.response_written(
            b"HTTP/1.1 503 No\r\nContent-Length: 0\r\n\r\n",
            Duration::from_millis(5),
        );
        conn.closed(None);
        let report = recorder.load_report(Duration::from_secs(1), 1);
        let names: Vec<&str> = report.per_request.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["GET /orders/{id}", "HEAD /orders/{id}", "POST /pay"]
        );
        assert_eq!(report.samples.requests(), 3);
        assert_eq!(report.samples.success, 2);
        assert_eq!(report.samples.http_errors.get(&503), Some(&1));
        // The POST's part added by the faults: 3 ms on its request, 5 ms on its response.
        let post = &report.per_request[2].samples;
        assert!(
            post.queueing_us.max() >= 8_000,
            "{}",
            post.queueing_us.max()
        );
    }

    #[tokio::test]
    async fn unanswered_requests_fail_and_a_stream_that_is_not_http_is_counted_apart() {
        let recorder = ExchangeRecorder::new(Instant::now(), Vec::new(), Vec::new());
        let conn = ConnectionExchanges::new(&recorder);
        conn.request_written(b"GET /a HTTP/1.1\r\n\r\n", Instant::now(), Duration::ZERO);
        conn.closed(None);
        let tls = ConnectionExchanges::new(&recorder);
        tls.request_written(b"\x16\x03\x01\x02\x00\x01", Instant::now(), Duration::ZERO);
        tls.response_written(b"\x16\x03\x03\x00\x10", Duration::ZERO);
        tls.closed(None);
        let (groups, streams) = recorder.snapshot();
        assert_eq!(groups[0].samples.transport_errors, 1);
        assert_eq!(streams.connections, 1);
        assert_eq!((streams.bytes_to_upstream, streams.bytes_to_client), (6, 5));
    }
}
