//! HTTP error: replaces upstream HTTP/1.1 responses with `status_code` + `error_body`, with `probability`.
//!
//! It stands on the response flow and follows the upstream's framing through [`crate::http1`]
//! (Content-Length, chunked, or close-delimited), so the client receives exactly one well-framed response per
//! upstream response and keep-alive connections stay in sync; a body that cannot be framed (a malformed chunk
//! size) ends the connection rather than leaving the client out of step. A [`RequestTracker`] on the request flow tells it which requests were
//! HEAD, whose responses carry no body whatever their headers announce. The probability is drawn here, once per response, because the relay's
//! per-message draw cannot tell where a response ends; the relay-level probability is therefore left at 1.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rand::RngExt;
use rand::rngs::StdRng;

use super::{Chunk, ConnectionEnd, Injector, Stage, TcpFaultSpec, Verdict, declared_defaults};
use crate::fields::{Field, FieldError, FieldInput, Unit};
use crate::http1::{self, BodyDecoder, FramingError, RequestFlow};
use crate::lenient::Number;
use crate::proxy::placement::{FaultCommon, Placeable};
use crate::proxy::values::ParseError;

#[derive(Debug, Clone, PartialEq)]
pub struct HttpErrorSpec {
    /// Side/direction must select the response flow; the relay-level probability stays 1.
    pub common: FaultCommon,
    pub status_code: u16,
    pub body: String,
    /// Share of responses replaced.
    pub probability: f64,
    /// `Retry-After` header of the injected response, in seconds.
    pub retry_after: Option<u32>,
}

/// The most seconds a `Retry-After` may ask for: a day.
const MAX_RETRY_AFTER: u32 = 86_400;

const STATUS_CODE: Field = Field::number(
    "status_code",
    "HTTP status code returned instead of the upstream's response",
    Number::from_to(400.0, 599.0).whole(),
    Unit::None,
)
.default("503");
const BODY: Field = Field::text("error_body", "Body of the injected response")
    .flag("http-error-body")
    .default("");
const PROBABILITY: Field = Field::number(
    "probability",
    "Share of responses replaced (drawn once per response)",
    Number::from_to(0.0, 1.0),
    Unit::None,
)
.default("1");
const RETRY_AFTER: Field = Field::number(
    "retry_after",
    "`Retry-After` header of the injected response, as a rate-limiting server sends with its 429 or 503",
    Number::from_to(0.0, MAX_RETRY_AFTER as f64).whole(),
    Unit::Seconds,
)
.optional("no header");

impl Default for HttpErrorSpec {
    fn default() -> Self {
        declared_defaults()
    }
}

impl TcpFaultSpec for HttpErrorSpec {
    const KIND: &'static str = "http_error";
    const TITLE: &'static str = "HTTP error";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when its upstream answers \
with HTTP errors: the proxy replaces HTTP/1.1 responses with `status_code` and `error_body`, with \
`probability`, keeping keep-alive framing intact. Acts on the response flow. Same topology, load and report \
as the latency scenario.";
    const ENABLE: &'static str =
        "Replace HTTP/1.1 responses with an error response, keeping keep-alive framing intact";
    const MODEL: &'static str = "HTTP/1.1 responses replaced by the error, framing followed so keep-alive \
stays in sync, outside its `sched` windows too (acts on responses; no side/direction flags)";
    const ACTED: &'static str = "responses replaced (a head and its body written apart count once)";
    const PLACEABLE: Option<Placeable> = None;
    const READS_HTTP: bool = true;
    const FIELDS: &'static [Field] = &[STATUS_CODE, BODY, PROBABILITY, RETRY_AFTER];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            common: FaultCommon::default(),
            // Whole and within 400..=599: the cast is exact.
            status_code: input.whole(&STATUS_CODE)? as u16,
            body: input.text(&BODY)?,
            probability: input.number(&PROBABILITY)?,
            // Whole and at most a day: the cast is exact.
            retry_after: input.optional_whole(&RETRY_AFTER)?.map(|secs| secs as u32),
        })
    }

    /// A spec built in code holds what the fields accept.
    fn validate(&self) -> Result<(), ParseError> {
        STATUS_CODE.check_number(f64::from(self.status_code))?;
        PROBABILITY.check_number(self.probability)?;
        if let Some(secs) = self.retry_after {
            RETRY_AFTER.check_number(f64::from(secs))?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let retry_after = self
            .retry_after
            .map(|s| format!(", Retry-After: {s}"))
            .unwrap_or_default();
        format!(
            "HTTP error: responses replaced by {} with a {}-byte body{retry_after}, probability {}",
            self.status_code,
            self.body.len(),
            self.probability
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for HttpErrorSpec {
    /// Replaces responses on the flow it acts on; a tracker on the request flow tells it which requests
    /// were HEAD, through a log the two stages of the connection share.
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        let requests = Arc::new(RequestLog::default());
        acts_on.map(|on| -> Option<Box<dyn Stage>> {
            if on {
                Some(Box::new(HttpError::new(self, requests.clone())))
            } else {
                Some(Box::new(RequestTracker::new(requests.clone())))
            }
        })
    }
}

/// Where the stage is within the upstream's stream of responses.
#[derive(Debug)]
enum Phase {
    /// Collecting a response head until the blank line.
    Head(Vec<u8>),
    Body(BodyDecoder),
    /// Not HTTP/1.x (a TLS handshake, a head that cannot be parsed, a protocol switch): pass everything.
    Opaque,
    /// A body could not be framed: the connection is being ended.
    Broken,
}

/// Whether each request of a connection was HEAD, in order: the request flow appends, the response flow
/// takes one per final response (HTTP/1.1 answers requests in order).
#[derive(Debug, Default)]
pub struct RequestLog(Mutex<VecDeque<bool>>);

impl RequestLog {
    fn push(&self, is_head: bool) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(is_head);
    }

    /// Whether the request a final response answers was HEAD; `false` when its request was not seen.
    fn next_is_head(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
            .unwrap_or(false)
    }
}

pub struct HttpError {
    spec: HttpErrorSpec,
    phase: Phase,
    /// Whether the response being relayed is replaced; drawn when its head starts.
    replacing: Option<bool>,
    /// Whether the fault's window is open (set from each chunk): a response whose head starts outside it is
    /// passed.
    active: bool,
    /// Responses replaced since the relay last asked ([`Stage::acted`]).
    replaced: u64,
    requests: Arc<RequestLog>,
}

impl HttpError {
    pub fn new(spec: &HttpErrorSpec, requests: Arc<RequestLog>) -> Self {
        Self {
            spec: spec.clone(),
            phase: Phase::Head(Vec::new()),
            replacing: None,
            active: true,
            replaced: 0,
            requests,
        }
    }

    /// The replacement response; `with_body` is false when answering a HEAD request.
    fn synthetic(&self, close: bool, with_body: bool) -> Vec<u8> {
        let reason = http::StatusCode::from_u16(self.spec.status_code)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Error");
        let mut out = format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n",
            self.spec.status_code,
            self.spec.body.len()
        );
        if let Some(secs) = self.spec.retry_after {
            out.push_str(&format!("retry-after: {secs}\r\n"));
        }
        if close {
            out.push_str("connection: close\r\n");
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if with_body {
            bytes.extend_from_slice(self.spec.body.as_bytes());
        }
        bytes
    }

    /// Consumes `input`, appending what the client should receive to `out`. An error means the stream
    /// can no longer be framed; `out` then holds what the client should still receive before the end.
    fn process(
        &mut self,
        mut input: &[u8],
        out: &mut Vec<u8>,
        rng: &mut StdRng,
    ) -> Result<(), FramingError> {
        while !input.is_empty() {
            match &mut self.phase {
                Phase::Opaque => {
                    out.extend_from_slice(input);
                    return Ok(());
                }
                Phase::Broken => return Err(FramingError::ChunkSize),
                Phase::Head(head) => {
                    let p = self.spec.probability;
                    let active = self.active;
                    let replacing = *self
                        .replacing
                        .get_or_insert_with(|| active && (p >= 1.0 || rng.random::<f64>() < p));
                    let before = head.len();
                    head.extend_from_slice(input);
                    let parsed = match http1::parse_response_head(head) {
                        Ok(None) => return Ok(()),
                        Ok(Some(parsed)) if !parsed.switches_protocol() => parsed,
                        // Not an HTTP/1.x response we can frame: everything passes untouched.
                        _ => {
                            out.append(head);
                            self.phase = Phase::Opaque;
                            return Ok(());
                        }
                    };
                    input = &input[parsed.len - before..];
                    let head = std::mem::take(head);
                    let head = &head[..parsed.len];
                    if parsed.is_interim() {
                        // A 1xx passes through; the draw holds for the final response that follows.
                        out.extend_from_slice(head);
                        self.phase = Phase::Head(Vec::new());
                        continue;
                    }
                    let answers_head = self.requests.next_is_head();
                    let framing = parsed.body(answers_head);
                    if replacing {
                        let close = framing == http1::BodyFraming::UntilClose;
                        out.extend_from_slice(&self.synthetic(close, !answers_head));
                        self.replaced += 1;
                    } else {
                        out.extend_from_slice(head);
                    }
                    let body = BodyDecoder::new(framing);
                    if body.is_done() {
                        self.replacing = None;
                        self.phase = Phase::Head(Vec::new());
                    } else {
                        self.phase = Phase::Body(body);
                    }
                }
                Phase::Body(body) => {
                    let step = body.step(input);
                    if self.replacing != Some(true) {
                        out.extend_from_slice(&input[..step.consumed]);
                    }
                    if let Some(error) = step.error {
                        self.phase = Phase::Broken;
                        return Err(error);
                    }
                    input = &input[step.consumed..];
                    if step.done {
                        self.phase = Phase::Head(Vec::new());
                        self.replacing = None;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Stage for HttpError {
    /// Responses replaced, not the chunks they came in: a head and its body written apart are one response.
    fn acted(&mut self, _verdict: &Verdict) -> u64 {
        std::mem::take(&mut self.replaced)
    }

    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict {
        self.active = chunk.active;
        let mut out = Vec::with_capacity(chunk.bytes.len());
        if let Err(e) = self.process(chunk.bytes, &mut out, rng) {
            tracing::debug!(
                "http_error: upstream response cannot be framed ({e}); ending the connection"
            );
            return Verdict::ReplaceAndEnd {
                bytes: Bytes::from(out),
                how: ConnectionEnd::Close,
            };
        }
        if out.as_slice() == chunk.bytes {
            Verdict::Pass
        } else if out.is_empty() {
            Verdict::Drop
        } else {
            Verdict::Replace(Bytes::from(out))
        }
    }
}

/// Watches the request flow (passing every byte) to record, per request, whether it was HEAD.
pub struct RequestTracker {
    flow: RequestFlow,
    requests: Arc<RequestLog>,
}

impl RequestTracker {
    pub fn new(requests: Arc<RequestLog>) -> Self {
        Self {
            flow: RequestFlow::default(),
            requests,
        }
    }

    fn observe(&mut self, input: &[u8]) {
        let requests = &self.requests;
        self.flow.observe(input, |head| requests.push(head.is_head));
    }
}

impl Stage for RequestTracker {
    fn on_chunk(&mut self, chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        self.observe(chunk.bytes);
        Verdict::Pass
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_flow_that_is_not_http1_passes_untouched_at_once() {
        let spec = HttpErrorSpec::default();
        let mut stage = HttpError::new(&spec, Arc::new(RequestLog::default()));
        let mut rng = StdRng::seed_from_u64(1);
        // A TLS ServerHello record header, then more of it.
        for piece in [
            &[0x16u8, 0x03, 0x03, 0x00, 0x7a][..],
            b"more bytes",
            b"HTTP/1.1 200 OK\r\n\r\n",
        ] {
            let mut out = Vec::new();
            stage.process(piece, &mut out, &mut rng).unwrap();
            assert_eq!(out, piece);
        }
    }

    fn run(stage: &mut HttpError, pieces: &[&[u8]]) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(7);
        let mut out = Vec::new();
        for piece in pieces {
            stage.process(piece, &mut out, &mut rng).unwrap();
        }
        out
    }

    fn spec(probability: f64) -> HttpErrorSpec {
        HttpErrorSpec {
            status_code: 500,
            body: "boom".into(),
            probability,
            ..HttpErrorSpec::default()
        }
    }

    const REPLACED: &[u8] =
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 4\r\n\r\nboom";

    #[test]
    fn replaces_content_length_responses_split_anywhere() {
        let upstream = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi";
        for cut in 1..upstream.len() {
            let mut stage = HttpError::new(&spec(1.0), Arc::default());
            let out = run(&mut stage, &[&upstream[..cut], &upstream[cut..]]);
            assert_eq!(out, [REPLACED, REPLACED].concat(), "cut at {cut}");
            // Two responses, however they were cut.
            assert_eq!(stage.acted(&Verdict::Pass), 2, "cut at {cut}");
            assert_eq!(stage.acted(&Verdict::Pass), 0);
        }
    }

    #[test]
    fn replaces_chunked_responses_and_keeps_the_next_in_sync() {
        let upstream = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        for cut in 1..upstream.len() {
            let mut stage = HttpError::new(&spec(1.0), Arc::default());
            let out = run(&mut stage, &[&upstream[..cut], &upstream[cut..]]);
            assert_eq!(out, [REPLACED, REPLACED].concat(), "cut at {cut}");
        }
    }

    #[test]
    fn probability_zero_passes_everything() {
        let upstream = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let mut stage = HttpError::new(&spec(0.0), Arc::default());
        assert_eq!(run(&mut stage, &[upstream]), upstream.to_vec());
    }

    #[test]
    fn close_delimited_response_is_replaced_with_connection_close() {
        let mut stage = HttpError::new(&spec(1.0), Arc::default());
        let out = run(&mut stage, &[b"HTTP/1.0 200 OK\r\n\r\nbody until close"]);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 500"));
        assert!(text.contains("connection: close\r\n"));
        assert!(text.ends_with("boom"));
    }

    #[test]
    fn a_rate_limit_answer_carries_its_retry_after() {
        let spec = HttpErrorSpec {
            status_code: 429,
            retry_after: Some(2),
            ..spec(1.0)
        };
        let mut stage = HttpError::new(&spec, Arc::default());
        let out = run(
            &mut stage,
            &[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
        );
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nretry-after: 2\r\n"), "{text}");
        assert!(spec.describe().contains("Retry-After: 2"));
    }

    #[test]
    fn retry_after_is_read_leniently_and_bounded() {
        let read = |v: serde_json::Value| {
            let input = FieldInput::from_arguments(HttpErrorSpec::FIELDS, v.as_object().unwrap());
            HttpErrorSpec::read(&input)
        };
        let given = read(serde_json::json!({"status_code": 429, "retry_after": "1"})).unwrap();
        assert_eq!(given.retry_after, Some(1));
        assert_eq!(read(serde_json::json!({})).unwrap().retry_after, None);
        let err = read(serde_json::json!({"retry_after": 1.5}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("whole number"), "{err}");
        let err = read(serde_json::json!({"retry_after": 100000}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("out of range"), "{err}");
    }

    #[test]
    fn half_the_responses_with_probability_one_half() {
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let upstream: Vec<u8> = one.repeat(1000);
        let mut stage = HttpError::new(&spec(0.5), Arc::default());
        let out = run(&mut stage, &[&upstream]);
        let text = String::from_utf8(out).unwrap();
        let replaced = text.matches("HTTP/1.1 500").count();
        let kept = text.matches("HTTP/1.1 200").count();
        assert_eq!(replaced + kept, 1000);
        assert!((400..600).contains(&replaced), "{replaced}");
    }

    /// The requests a client sent on one connection, as the tracker on the request flow sees them.
    fn tracked(requests: &[u8]) -> Arc<RequestLog> {
        let log = Arc::new(RequestLog::default());
        let mut tracker = RequestTracker::new(log.clone());
        // Byte by byte: the tracker must not depend on how reads are cut.
        for byte in requests {
            tracker.observe(std::slice::from_ref(byte));
        }
        log
    }

    const REQUESTS: &[u8] = b"POST /a HTTP/1.1\r\ncontent-length: 4\r\n\r\nbodyHEAD /b HTTP/1.1\r\nhost: x\r\n\r\n\
        PUT /c HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nHEAD /d HTTP/1.1\r\n\r\n";

    #[test]
    fn the_tracker_records_which_requests_were_head_across_bodies() {
        let log = tracked(REQUESTS);
        let seen: Vec<bool> = (0..5).map(|_| log.next_is_head()).collect();
        assert_eq!(seen, [false, true, false, true, false]);
    }

    #[test]
    fn answers_to_head_requests_have_no_body_replaced_or_not() {
        let upstream = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n\
            HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        let head_only = &REPLACED[..REPLACED.len() - "boom".len()];
        for cut in 1..upstream.len() {
            let mut stage = HttpError::new(&spec(1.0), tracked(REQUESTS));
            let out = run(&mut stage, &[&upstream[..cut], &upstream[cut..]]);
            assert_eq!(
                out,
                [REPLACED, head_only, REPLACED, head_only].concat(),
                "cut at {cut}"
            );
        }
        // Not replaced: everything passes and the stage stays in step for the response after.
        let mut stage = HttpError::new(&spec(0.0), tracked(REQUESTS));
        assert_eq!(run(&mut stage, &[upstream]), upstream.to_vec());
        let mut stage = HttpError::new(&spec(1.0), tracked(REQUESTS));
        let with_next = [
            &upstream[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx",
        ]
        .concat();
        let out = run(&mut stage, &[&with_next]);
        assert!(out.ends_with(REPLACED), "{}", String::from_utf8_lossy(&out));
    }

    #[test]
    fn a_malformed_chunk_size_ends_the_connection_after_what_was_framed() {
        let good = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        let bad = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n";
        let upstream = [&good[..], bad].concat();
        let mut rng = StdRng::seed_from_u64(3);
        for (probability, kept) in [
            (0.0, upstream[..upstream.len() - 4].to_vec()),
            (1.0, [REPLACED, REPLACED].concat()),
        ] {
            let mut stage = HttpError::new(&spec(probability), Arc::default());
            let chunk = Chunk {
                bytes: &upstream,
                flow: crate::proxy::placement::Flow::Response,
                new_message: true,
                now: tokio::time::Instant::now(),
                active: true,
            };
            assert_eq!(
                stage.on_chunk(&chunk, &mut rng),
                Verdict::ReplaceAndEnd {
                    bytes: Bytes::from(kept),
                    how: ConnectionEnd::Close
                },
                "probability {probability}"
            );
        }
    }
}
