//! The traffic mix: the requests a run sends, each with its weight and what counts as its success. Which
//! request a call sends depends only on the scenario's seed and the call's number in the schedule (a keyed
//! roll, [`crate::seeded`]), never on timing, so one seed gives one sequence of requests on every run.

use std::sync::Arc;

use bytes::Bytes;

use super::{
    RequestOutcome, Target,
    feed::{BoundTemplate, Feed},
};

/// What counts as a request's success beyond "a status below 400".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expect {
    /// The statuses accepted; empty: any status below 400.
    pub statuses: Vec<u16>,
    /// Text the body must hold, when given.
    pub body_contains: Option<Bytes>,
}

/// Body bytes kept to look for [`Expect::body_contains`]; a longer body is searched in its first part only.
pub const MAX_BODY_KEPT: usize = 1 << 20;

impl Expect {
    /// Whether the body must be kept to judge an answer.
    pub fn needs_body(&self) -> bool {
        self.body_contains.is_some()
    }

    /// How an answer with `status` and `body` (its first [`MAX_BODY_KEPT`] bytes, when kept) ended.
    pub fn judge(&self, status: u16, body: &[u8]) -> RequestOutcome {
        let accepted = if self.statuses.is_empty() {
            status < 400
        } else {
            self.statuses.contains(&status)
        };
        if !accepted {
            return if status >= 400 {
                RequestOutcome::HttpError(status)
            } else {
                RequestOutcome::Unexpected(status)
            };
        }
        match &self.body_contains {
            Some(needle) if memchr::memmem::find(body, needle).is_none() => {
                RequestOutcome::Unexpected(status)
            }
            _ => RequestOutcome::Success,
        }
    }

    /// What it accepts, in words: "200 or 201, body holding \"ok\"".
    pub fn describe(&self) -> String {
        let statuses = if self.statuses.is_empty() {
            "a status below 400".to_owned()
        } else {
            let texts: Vec<String> = self.statuses.iter().map(u16::to_string).collect();
            format!("status {}", texts.join(" or "))
        };
        match &self.body_contains {
            Some(needle) => format!(
                "{statuses}, body holding {:?}",
                String::from_utf8_lossy(needle)
            ),
            None => statuses,
        }
    }
}

/// One request of the mix.
#[derive(Debug, Clone)]
pub struct MixRequest {
    /// How the report names it.
    pub name: String,
    /// The request as written (with a feed, its placeholders not filled: it gives the host, the method and
    /// the report's description).
    pub target: Target,
    /// Its share of the calls, relative to the others' weights.
    pub weight: f64,
    pub expect: Expect,
    /// With a feed: its url, header values and body, to fill from the feed's row for each call.
    pub template: Option<Arc<RequestTemplate>>,
}

/// A request whose url, header values and body take a feed's columns.
#[derive(Debug)]
pub struct RequestTemplate {
    pub method: String,
    pub url: BoundTemplate,
    pub headers: Vec<(String, BoundTemplate)>,
    pub body: BoundTemplate,
}

/// The requests of a run, picked by weight.
#[derive(Debug, Clone)]
pub struct Mix {
    requests: Vec<MixRequest>,
    /// Each request's upper bound in `[0, 1)`: request i takes rolls in `[bounds[i-1], bounds[i])`.
    bounds: Vec<f64>,
    seed: u64,
    /// The rows that fill the requests' templates, when there is a feed.
    feed: Option<Arc<Feed>>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MixError {
    #[error("no request to send")]
    Empty,
    #[error("weight {0} is not accepted: a weight is a number of 0 or more")]
    Weight(f64),
    #[error("every weight is 0: at least one request must have a weight above 0")]
    AllZero,
}

impl Mix {
    /// A mix of `requests` picked by their weights, the picks keyed by `seed`.
    pub fn new(requests: Vec<MixRequest>, seed: u64) -> Result<Self, MixError> {
        if requests.is_empty() {
            return Err(MixError::Empty);
        }
        if let Some(bad) = requests
            .iter()
            .map(|r| r.weight)
            .find(|w| !(w.is_finite() && *w >= 0.0))
        {
            return Err(MixError::Weight(bad));
        }
        let total: f64 = requests.iter().map(|r| r.weight).sum();
        if total <= 0.0 {
            return Err(MixError::AllZero);
        }
        let mut sum = 0.0;
        let bounds = requests
            .iter()
            .map(|r| {
                sum += r.weight;
                sum / total
            })
            .collect();
        Ok(Self {
            requests,
            bounds,
            seed,
            feed: None,
        })
    }

    /// The mix with `feed`, whose rows fill its requests' templates.
    pub fn with_feed(self, feed: Arc<Feed>) -> Self {
        Self {
            feed: Some(feed),
            ..self
        }
    }

    pub fn feed(&self) -> Option<&Feed> {
        self.feed.as_deref()
    }

    /// The bytes call number `call` sends for request `request`: the request as written, or with a feed its
    /// template filled from the call's row. A row whose values make no valid request is an error saying which.
    pub fn wire(&self, request: usize, call: u64) -> Result<Bytes, String> {
        let mix = &self.requests[request];
        let (Some(template), Some(feed)) = (&mix.template, &self.feed) else {
            return Ok(mix.target.wire.clone());
        };
        let row = feed.row(call);
        let headers: Vec<(String, String)> = template
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.render(row).into_owned()))
            .collect();
        Target::parse(
            &template.url.render(row),
            &template.method,
            &headers,
            &template.body.render(row),
        )
        .map(|target| target.wire)
        .map_err(|e| {
            format!(
                "the request {} built from feed row {} is not valid: {e}",
                mix.name,
                row.index() + 1
            )
        })
    }

    /// A mix of one request, named as [`Target::label`] says, every status below 400 a success.
    pub fn single(target: Target) -> Self {
        Self {
            requests: vec![MixRequest {
                name: target.label(),
                target,
                weight: 1.0,
                expect: Expect::default(),
                template: None,
            }],
            bounds: vec![1.0],
            seed: 0,
            feed: None,
        }
    }

    pub fn requests(&self) -> &[MixRequest] {
        &self.requests
    }

    /// The first request: every request of a mix goes to its host.
    pub fn first(&self) -> &MixRequest {
        &self.requests[0]
    }

    /// The request call number `call` of the schedule sends (an index into [`Mix::requests`]).
    pub fn pick(&self, call: u64) -> usize {
        if self.requests.len() == 1 {
            return 0;
        }
        let roll = crate::seeded::keyed_roll(self.seed, &[b"mix", &call.to_le_bytes()]);
        self.bounds
            .partition_point(|bound| *bound <= roll)
            .min(self.requests.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &str, weight: f64) -> MixRequest {
        MixRequest {
            name: name.into(),
            target: Target::parse("http://127.0.0.1:1/x", "GET", &[], "").unwrap(),
            weight,
            expect: Expect::default(),
            template: None,
        }
    }

    #[test]
    fn picks_follow_the_weights_and_the_seed_alone() {
        let mix = Mix::new(
            vec![request("a", 6.0), request("b", 3.0), request("c", 1.0)],
            7,
        )
        .unwrap();
        let mut counts = [0u32; 3];
        for call in 0..10_000 {
            counts[mix.pick(call)] += 1;
        }
        for (count, share) in counts.iter().zip([0.6, 0.3, 0.1]) {
            let got = f64::from(*count) / 10_000.0;
            assert!((got - share).abs() < 0.02, "{counts:?}");
        }
        let again = Mix::new(
            vec![request("a", 6.0), request("b", 3.0), request("c", 1.0)],
            7,
        )
        .unwrap();
        assert!((0..1000).all(|call| mix.pick(call) == again.pick(call)));
        let other = Mix::new(
            vec![request("a", 6.0), request("b", 3.0), request("c", 1.0)],
            8,
        )
        .unwrap();
        assert!((0..1000).any(|call| mix.pick(call) != other.pick(call)));
        // A request of weight 0 is never sent.
        let zero = Mix::new(vec![request("a", 0.0), request("b", 1.0)], 1).unwrap();
        assert!((0..1000).all(|call| zero.pick(call) == 1));
    }

    #[test]
    fn bad_weights_are_refused() {
        assert_eq!(
            Mix::new(vec![request("a", -1.0)], 0).unwrap_err(),
            MixError::Weight(-1.0)
        );
        assert_eq!(
            Mix::new(vec![request("a", 0.0), request("b", 0.0)], 0).unwrap_err(),
            MixError::AllZero
        );
    }

    #[test]
    fn an_expectation_judges_status_and_body() {
        let plain = Expect::default();
        assert_eq!(plain.judge(204, b""), RequestOutcome::Success);
        assert_eq!(plain.judge(503, b""), RequestOutcome::HttpError(503));
        let strict = Expect {
            statuses: vec![201, 404],
            body_contains: Some(Bytes::from_static(b"\"ok\"")),
        };
        assert_eq!(strict.judge(404, b"{\"ok\": 1}"), RequestOutcome::Success);
        assert_eq!(
            strict.judge(200, b"{\"ok\": 1}"),
            RequestOutcome::Unexpected(200)
        );
        assert_eq!(strict.judge(500, b""), RequestOutcome::HttpError(500));
        assert_eq!(strict.judge(201, b"{}"), RequestOutcome::Unexpected(201));
        assert_eq!(
            strict.describe(),
            "status 201 or 404, body holding \"\\\"ok\\\"\""
        );
    }
}
