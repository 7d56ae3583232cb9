//! HTTP/1.x message framing (RFC 9112), without I/O: where a head ends, and where the body after it ends.
//!
//! Heads are parsed by `httparse`; bodies by [`BodyDecoder`], fed whatever bytes a read returned. Every
//! buffer is bounded ([`MAX_HEAD`], [`MAX_LINE`]) and every size is checked: a content-length or chunk size
//! that does not fit in 64 bits is an error, as is a malformed chunk size, so a reader can drop the
//! connection instead of losing its place in the stream. The HTTP error fault and the load client both
//! frame messages through here; a connection's flows are followed message by message
//! ([`ResponseFlow`], [`RequestFlow`]).

mod flow;

pub use flow::{RequestFlow, ResponseFlow};

/// The wait a `Retry-After` value asks for (RFC 9110 §10.2.3): a number of seconds (a fraction is read too), or
/// an HTTP date, counted from `now` (a date already past asks for no wait). Anything else is no ask.
pub fn retry_after(value: &str, now: std::time::SystemTime) -> Option<std::time::Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| std::time::Duration::from_secs_f64(seconds.min(1e9)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

/// Largest head (or trailer section) buffered while looking for its end.
pub const MAX_HEAD: usize = 64 * 1024;
/// Largest chunk-size line (with its extensions).
pub const MAX_LINE: usize = 4 * 1024;
/// Header lines parsed per head.
const MAX_HEADERS: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    #[error("invalid HTTP/1 head: {0}")]
    Head(#[from] httparse::Error),
    #[error("head longer than {MAX_HEAD} bytes")]
    HeadTooLong,
    #[error("content-length '{0}' is not a number below 2^64")]
    ContentLength(String),
    #[error("conflicting content-length headers")]
    ConflictingLength,
    #[error("request transfer-encoding '{0}' does not end with chunked")]
    RequestCoding(String),
    #[error("invalid chunk size line")]
    ChunkSize,
    #[error("chunk data not followed by CRLF")]
    ChunkEnd,
    #[error("chunk-size or trailer line longer than {MAX_LINE} bytes")]
    LineTooLong,
    #[error("trailers longer than {MAX_HEAD} bytes")]
    TrailersTooLong,
    #[error("body size overflows 64 bits")]
    Overflow,
}

/// How the end of a message body is found (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body (HEAD answers, 1xx, 204, 304, requests without length).
    Empty,
    Length(u64),
    Chunked,
    /// The body runs until the sender closes the connection.
    UntilClose,
}

/// What the headers say about the body and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Declared {
    None,
    Length(u64),
    Chunked,
    /// A transfer coding other than chunked last.
    OtherCoding,
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// Bytes the head takes, blank line included.
    pub len: usize,
    /// Whether the connection may carry another exchange after this response.
    pub keep_alive: bool,
    declared: Declared,
}

impl ResponseHead {
    /// 1xx other than 101: the final response follows on the same connection.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }

    /// 101: the connection now speaks another protocol.
    pub fn switches_protocol(&self) -> bool {
        self.status == 101
    }

    /// How this response's body is framed, given whether the request it answers was HEAD.
    pub fn body(&self, answers_head: bool) -> BodyFraming {
        if answers_head || (100..200).contains(&self.status) || matches!(self.status, 204 | 304) {
            return BodyFraming::Empty;
        }
        match self.declared {
            Declared::Chunked => BodyFraming::Chunked,
            Declared::Length(n) => BodyFraming::Length(n),
            Declared::None | Declared::OtherCoding => BodyFraming::UntilClose,
        }
    }
}

/// A parsed request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead {
    pub is_head: bool,
    /// Bytes the head takes, blank line included.
    pub len: usize,
    pub body: BodyFraming,
}

/// Parses a response head at the start of `buf`; `Ok(None)` while it is incomplete.
pub fn parse_response_head(buf: &[u8]) -> Result<Option<ResponseHead>, FramingError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    // As lenient as browsers are with what servers send.
    let len = match httparse::ParserConfig::default()
        .allow_spaces_after_header_name_in_responses(true)
        .allow_obsolete_multiline_headers_in_responses(true)
        .parse_response(&mut response, buf)?
    {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial if buf.len() > MAX_HEAD => return Err(FramingError::HeadTooLong),
        httparse::Status::Partial => return Ok(None),
    };
    // A complete parse always has a status code.
    let status = response.code.unwrap_or_default();
    let facts = header_facts(response.headers)?;
    let keep_alive = facts.keep_alive.unwrap_or(response.version == Some(1)) && status != 101;
    Ok(Some(ResponseHead {
        status,
        len,
        keep_alive,
        declared: facts.declared,
    }))
}

/// Parses a request head at the start of `buf`; `Ok(None)` while it is incomplete.
pub fn parse_request_head(buf: &[u8]) -> Result<Option<RequestHead>, FramingError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let len = match request.parse(buf)? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial if buf.len() > MAX_HEAD => return Err(FramingError::HeadTooLong),
        httparse::Status::Partial => return Ok(None),
    };
    let is_head = request.method == Some("HEAD");
    // RFC 9112 §6.3: without Transfer-Encoding or Content-Length a request has no body.
    let body = match header_facts(request.headers)?.declared {
        Declared::None => BodyFraming::Empty,
        Declared::Length(n) => BodyFraming::Length(n),
        Declared::Chunked => BodyFraming::Chunked,
        Declared::OtherCoding => {
            let coding = request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
                .map(|h| String::from_utf8_lossy(h.value).into_owned())
                .unwrap_or_default();
            return Err(FramingError::RequestCoding(coding));
        }
    };
    Ok(Some(RequestHead { is_head, len, body }))
}

struct HeaderFacts {
    declared: Declared,
    /// `Some` when a Connection header says close or keep-alive.
    keep_alive: Option<bool>,
}

/// Body framing and connection persistence the headers announce; Transfer-Encoding wins over
/// Content-Length (RFC 9112 §6.3).
fn header_facts(headers: &[httparse::Header<'_>]) -> Result<HeaderFacts, FramingError> {
    let mut length: Option<u64> = None;
    let mut coding: Option<Declared> = None;
    let mut keep_alive = None;
    for header in headers {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let parsed = parse_length(value)?;
            if length.is_some_and(|l| l != parsed) {
                return Err(FramingError::ConflictingLength);
            }
            length = Some(parsed);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            let chunked_last = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            coding = Some(if chunked_last {
                Declared::Chunked
            } else {
                Declared::OtherCoding
            });
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = Some(false);
                } else if token.eq_ignore_ascii_case("keep-alive") && keep_alive.is_none() {
                    keep_alive = Some(true);
                }
            }
        }
    }
    let declared = coding.unwrap_or(length.map_or(Declared::None, Declared::Length));
    Ok(HeaderFacts {
        declared,
        keep_alive,
    })
}

/// Digits only (no sign, no spaces inside); a value beyond `u64` is an error, not a wrap.
fn parse_length(value: &str) -> Result<u64, FramingError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FramingError::ContentLength(value.to_string()));
    }
    value
        .parse()
        .map_err(|_| FramingError::ContentLength(value.to_string()))
}

/// How far one call to [`BodyDecoder::step`] got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Bytes of the input that belong to this body.
    pub consumed: usize,
    /// Whether the body ended within them; the bytes after belong to the next message.
    pub done: bool,
    /// Why the body cannot be framed past `consumed`: the caller must end the connection.
    pub error: Option<FramingError>,
}

/// Finds the end of one message body in the bytes that follow its head, however reads cut them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyDecoder {
    state: State,
    /// Payload bytes seen so far (chunk framing excluded).
    payload: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Length(u64),
    /// Reading a chunk-size line; the part of it seen so far when a read cut it.
    ChunkSize(Vec<u8>),
    /// Inside chunk data.
    ChunkData(u64),
    /// After chunk data: the CRLF, of which this many bytes were seen.
    ChunkEnd(u8),
    /// After the last chunk: trailer lines up to an empty one.
    Trailers {
        line: Vec<u8>,
        total: usize,
    },
    UntilClose,
    Done,
}

impl BodyDecoder {
    pub fn new(framing: BodyFraming) -> Self {
        let state = match framing {
            BodyFraming::Empty | BodyFraming::Length(0) => State::Done,
            BodyFraming::Length(n) => State::Length(n),
            BodyFraming::Chunked => State::ChunkSize(Vec::new()),
            BodyFraming::UntilClose => State::UntilClose,
        };
        Self { state, payload: 0 }
    }

    /// Payload bytes seen so far.
    pub fn payload(&self) -> u64 {
        self.payload
    }

    /// Whether the body is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether the sender closing the connection now ends the body properly.
    pub fn ends_at_close(&self) -> bool {
        matches!(self.state, State::UntilClose | State::Done)
    }

    /// Consumes the body bytes at the start of `input`, up to the end of the body or to the first byte
    /// that cannot be framed.
    pub fn step(&mut self, input: &[u8]) -> Step {
        let mut used = 0;
        let mut nothing = Keep { into: None, cap: 0 };
        let error = self.advance(input, &mut used, &mut nothing).err();
        Step {
            consumed: used,
            done: self.state == State::Done,
            error,
        }
    }

    /// [`BodyDecoder::step`], also appending the payload bytes (chunk framing excluded) to `kept` until it
    /// holds `cap` bytes.
    pub fn step_keeping(&mut self, input: &[u8], kept: &mut Vec<u8>, cap: usize) -> Step {
        let mut used = 0;
        let mut keep = Keep {
            into: Some(kept),
            cap,
        };
        let error = self.advance(input, &mut used, &mut keep).err();
        Step {
            consumed: used,
            done: self.state == State::Done,
            error,
        }
    }

    fn advance(
        &mut self,
        input: &[u8],
        used: &mut usize,
        keep: &mut Keep<'_>,
    ) -> Result<(), FramingError> {
        while *used < input.len() {
            let rest = &input[*used..];
            match &mut self.state {
                State::Done => break,
                State::UntilClose => {
                    self.count(rest.len() as u64)?;
                    keep.payload(rest);
                    *used = input.len();
                }
                State::Length(remaining) => {
                    let take = (*remaining).min(rest.len() as u64);
                    *remaining -= take;
                    if *remaining == 0 {
                        self.state = State::Done;
                    }
                    *used += take as usize;
                    self.count(take)?;
                    keep.payload(&rest[..take as usize]);
                }
                State::ChunkData(remaining) => {
                    let take = (*remaining).min(rest.len() as u64);
                    *remaining -= take;
                    if *remaining == 0 {
                        self.state = State::ChunkEnd(0);
                    }
                    *used += take as usize;
                    self.count(take)?;
                    keep.payload(&rest[..take as usize]);
                }
                State::ChunkEnd(seen) => {
                    let expected = if *seen == 0 { b'\r' } else { b'\n' };
                    if rest[0] != expected {
                        return Err(FramingError::ChunkEnd);
                    }
                    *used += 1;
                    *seen += 1;
                    if *seen == 2 {
                        self.state = State::ChunkSize(Vec::new());
                    }
                }
                State::ChunkSize(line) => {
                    let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
                        if line.len() + rest.len() > MAX_LINE {
                            return Err(FramingError::LineTooLong);
                        }
                        line.extend_from_slice(rest);
                        *used = input.len();
                        continue;
                    };
                    if line.len() + newline + 1 > MAX_LINE {
                        return Err(FramingError::LineTooLong);
                    }
                    let size = if line.is_empty() {
                        chunk_size(&rest[..=newline])?
                    } else {
                        line.extend_from_slice(&rest[..=newline]);
                        chunk_size(line)?
                    };
                    *used += newline + 1;
                    self.state = if size == 0 {
                        State::Trailers {
                            line: Vec::new(),
                            total: 0,
                        }
                    } else {
                        State::ChunkData(size)
                    };
                }
                State::Trailers { line, total } => {
                    let newline = rest.iter().position(|&b| b == b'\n');
                    let piece = newline.map_or(rest.len(), |at| at + 1);
                    *total += piece;
                    if *total > MAX_HEAD {
                        return Err(FramingError::TrailersTooLong);
                    }
                    *used += piece;
                    if newline.is_none() {
                        // Only the start of the line matters: is it empty (CR LF)?
                        if line.len() < 2 {
                            line.extend_from_slice(&rest[..rest.len().min(2 - line.len())]);
                        }
                        continue;
                    }
                    line.extend_from_slice(&rest[..piece.min(2)]);
                    if line.starts_with(b"\r\n") || line.starts_with(b"\n") {
                        self.state = State::Done;
                    } else {
                        line.clear();
                    }
                }
            }
        }
        Ok(())
    }

    fn count(&mut self, bytes: u64) -> Result<(), FramingError> {
        self.payload = self
            .payload
            .checked_add(bytes)
            .ok_or(FramingError::Overflow)?;
        Ok(())
    }
}

/// Where [`BodyDecoder::step_keeping`] keeps payload bytes, up to `cap` of them.
struct Keep<'a> {
    into: Option<&'a mut Vec<u8>>,
    cap: usize,
}

impl Keep<'_> {
    fn payload(&mut self, bytes: &[u8]) {
        if let Some(into) = self.into.as_deref_mut() {
            let room = self.cap.saturating_sub(into.len());
            into.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
    }
}

/// The size a complete chunk-size line (CRLF included) announces; at least one hex digit is required and
/// more than 64 bits of size is an error.
fn chunk_size(line: &[u8]) -> Result<u64, FramingError> {
    if !line.first().is_some_and(u8::is_ascii_hexdigit) {
        return Err(FramingError::ChunkSize);
    }
    match httparse::parse_chunk_size(line) {
        Ok(httparse::Status::Complete((used, size))) if used == line.len() => Ok(size),
        _ => Err(FramingError::ChunkSize),
    }
}

/// The method and the path (the request target without its query) of a complete request head.
pub fn request_line(head: &[u8]) -> Option<(&str, &str)> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let method = parts.next().filter(|m| !m.is_empty())?;
    let target = parts.next().filter(|t| !t.is_empty())?;
    // The absolute form (a request to a forward proxy) keeps only its path.
    let target = match target.find("://") {
        Some(scheme_end) => {
            let rest = &target[scheme_end + 3..];
            rest.find('/').map_or("/", |at| &rest[at..])
        }
        None => target,
    };
    let path = target.split(['?', '#']).next().unwrap_or(target);
    Some((method, path))
}

#[cfg(test)]
mod tests;
