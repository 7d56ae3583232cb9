//! Following one connection's HTTP/1 flows, request and response, however reads cut them: where each message
//! ends, and when a flow stops being HTTP/1.

use super::{BodyDecoder, RequestHead, parse_request_head, parse_response_head};

/// Follows the responses of one HTTP/1 response flow, however reads cut it, telling the caller where each
/// final response ends. Which responses have no body (those to HEAD) it learns from the caller, who follows
/// the requests. A flow that is not HTTP/1 or switches protocol (101) becomes opaque.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseFlow {
    phase: ResponsePhase,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ResponsePhase {
    Head(Vec<u8>),
    Body { status: u16, body: BodyDecoder },
    Opaque,
}

impl Default for ResponseFlow {
    fn default() -> Self {
        Self {
            phase: ResponsePhase::Head(Vec::new()),
        }
    }
}

impl ResponseFlow {
    /// Whether the flow could not be followed as HTTP/1.
    pub fn is_opaque(&self) -> bool {
        self.phase == ResponsePhase::Opaque
    }

    /// Whether a response has started and not ended.
    pub fn in_response(&self) -> bool {
        match &self.phase {
            ResponsePhase::Head(head) => !head.is_empty(),
            ResponsePhase::Body { .. } => true,
            ResponsePhase::Opaque => false,
        }
    }

    /// The status of the response whose body runs until the connection closes, when the flow is in one: the
    /// sender's close ends it properly.
    pub fn ends_at_close(&self) -> Option<u16> {
        match &self.phase {
            ResponsePhase::Body { status, body } if body.ends_at_close() => Some(*status),
            _ => None,
        }
    }

    /// Reads the next bytes of the flow; `answers_head` says whether the next response answers a HEAD
    /// request; `on_end` is called with the status of each final response that ends in them.
    pub fn observe(
        &mut self,
        mut input: &[u8],
        mut answers_head: impl FnMut() -> bool,
        mut on_end: impl FnMut(u16),
    ) {
        while !input.is_empty() {
            match &mut self.phase {
                ResponsePhase::Opaque => return,
                ResponsePhase::Head(head) => {
                    let before = head.len();
                    head.extend_from_slice(input);
                    let parsed = match parse_response_head(head) {
                        Ok(None) => return,
                        Ok(Some(parsed)) => parsed,
                        Err(_) => {
                            self.phase = ResponsePhase::Opaque;
                            return;
                        }
                    };
                    input = &input[parsed.len - before..];
                    if parsed.switches_protocol() {
                        self.phase = ResponsePhase::Opaque;
                        return;
                    }
                    if parsed.is_interim() {
                        self.phase = ResponsePhase::Head(Vec::new());
                        continue;
                    }
                    let body = BodyDecoder::new(parsed.body(answers_head()));
                    if body.is_done() {
                        on_end(parsed.status);
                        self.phase = ResponsePhase::Head(Vec::new());
                    } else {
                        self.phase = ResponsePhase::Body {
                            status: parsed.status,
                            body,
                        };
                    }
                }
                ResponsePhase::Body { status, body } => {
                    let step = body.step(input);
                    input = &input[step.consumed..];
                    if step.error.is_some() {
                        self.phase = ResponsePhase::Opaque;
                    } else if step.done {
                        on_end(*status);
                        self.phase = ResponsePhase::Head(Vec::new());
                    }
                }
            }
        }
    }
}

/// Follows the requests of one HTTP/1 request flow, however reads cut it: each request head is handed to
/// the caller as it completes. A flow that is not HTTP/1 (TLS, another protocol) or stops being framable
/// becomes opaque and is no longer followed. The HTTP error fault learns HEAD requests from it; the proxy
/// counts the requests it sends upstream with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFlow {
    phase: RequestPhase,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum RequestPhase {
    Head(Vec<u8>),
    Body(BodyDecoder),
    Opaque,
}

impl Default for RequestFlow {
    fn default() -> Self {
        Self {
            phase: RequestPhase::Head(Vec::new()),
        }
    }
}

impl RequestFlow {
    /// Whether the flow could not be followed as HTTP/1.
    pub fn is_opaque(&self) -> bool {
        self.phase == RequestPhase::Opaque
    }

    /// Whether the flow is inside a request's body.
    pub fn in_body(&self) -> bool {
        matches!(self.phase, RequestPhase::Body(_))
    }

    /// Whether the head of a next request has started and not completed.
    pub fn head_started(&self) -> bool {
        matches!(&self.phase, RequestPhase::Head(head) if !head.is_empty())
    }

    /// Reads the next bytes of the flow, calling `on_head` with each request head completed in them.
    pub fn observe(&mut self, input: &[u8], mut on_head: impl FnMut(&RequestHead)) {
        self.observe_heads(input, |head, _| on_head(head));
    }

    /// [`RequestFlow::observe`], also handing over each head's bytes (its request line first, see
    /// [`request_line`]).
    pub fn observe_heads(
        &mut self,
        mut input: &[u8],
        mut on_head: impl FnMut(&RequestHead, &[u8]),
    ) {
        while !input.is_empty() {
            match &mut self.phase {
                RequestPhase::Opaque => return,
                RequestPhase::Head(head) => {
                    let before = head.len();
                    head.extend_from_slice(input);
                    let parsed = match parse_request_head(head) {
                        Ok(None) => return,
                        Ok(Some(parsed)) => parsed,
                        Err(_) => {
                            self.phase = RequestPhase::Opaque;
                            return;
                        }
                    };
                    input = &input[parsed.len - before..];
                    on_head(&parsed, &head[..parsed.len]);
                    let body = BodyDecoder::new(parsed.body);
                    self.phase = if body.is_done() {
                        RequestPhase::Head(Vec::new())
                    } else {
                        RequestPhase::Body(body)
                    };
                }
                RequestPhase::Body(body) => {
                    let step = body.step(input);
                    input = &input[step.consumed..];
                    if step.error.is_some() {
                        self.phase = RequestPhase::Opaque;
                    } else if step.done {
                        self.phase = RequestPhase::Head(Vec::new());
                    }
                }
            }
        }
    }
}
