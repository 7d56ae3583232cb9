//! The traffic of a scenario: its requests (`requests`, or the one of `url`), their templates filled from a
//! feed, and the pace (`stages`, or `rps` for `duration`).

use std::{sync::Arc, time::Duration};

use super::super::scenario_fields as fields;
use crate::{
    fields::FieldInput,
    impact::Limits,
    load::{
        self, Expect, Mix, MixRequest, Pace, Rate, Target,
        feed::{Feed, FeedError, FeedOrder, Template},
        mix::RequestTemplate,
    },
};

use super::*;

/// The request of `url`, `method`, `body` and `headers` (or of one item of `requests`, `at` its path), parsed;
/// an error names the field it is about.
pub(in crate::mcp) fn target(
    at: &str,
    (url, method, body): (&str, &str, &str),
    headers: &[(String, String)],
) -> Result<Target, InputError> {
    Target::parse(url, method, headers, body).map_err(|e| {
        let text = e.to_string();
        match e {
            load::LoadError::Method(_) => {
                bad(format!("{at}method"), text.replacen("method: ", "", 1))
            }
            load::LoadError::Header { .. } => {
                bad(format!("{at}headers"), text.replacen("headers: ", "", 1))
            }
            _ => bad(format!("{at}url"), text.replacen("url: ", "", 1)),
        }
    })
}

/// A request as the tool's arguments write it: where its fields are (`""` or `"requests[1]."`), its name,
/// method, url, body and headers, weight and expectation.
pub(in crate::mcp) struct Written {
    at: String,
    name: String,
    method: String,
    url: String,
    body: String,
    headers: Vec<(String, String)>,
    weight: f64,
    expect: Expect,
}

/// The requests as written: `requests`, or the one request of `url`.
pub(in crate::mcp) fn written(input: &FieldInput) -> Result<Vec<Written>, InputError> {
    let items = input.objects(&fields::REQUESTS)?;
    if items.is_empty() {
        let Some(url) = Some(input.text(&fields::URL)?).filter(|url| !url.is_empty()) else {
            return Err(bad(
                "url",
                "is required: an absolute http:// or https:// URL (or give `requests`, a traffic mix)",
            ));
        };
        return Ok(vec![Written {
            at: String::new(),
            name: String::new(),
            method: input.text(&fields::METHOD)?,
            url,
            body: input.text(&fields::BODY)?,
            headers: input.text_map(&fields::HEADERS)?,
            weight: 1.0,
            expect: Expect::default(),
        }]);
    }
    if let Some(single) = [fields::URL, fields::METHOD, fields::BODY, fields::HEADERS]
        .iter()
        .find(|field| input.has(field))
    {
        return Err(bad(
            single.name,
            format!(
                "is for a load of one request, and `requests` is given: give either `url` (with `method`, \
                 `body`, `headers`) or `requests`, not both; move `{}` into the requests",
                single.name
            ),
        ));
    }
    let mut requests: Vec<Written> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("requests[{index}].");
        let name = item.text(&fields::REQUEST_NAME)?.trim().to_owned();
        if name.is_empty() {
            return Err(bad(
                format!("{at}name"),
                "is required: a name such as \"checkout\"",
            ));
        }
        if let Some(first) = requests.iter().position(|r| r.name == name) {
            return Err(bad(
                format!("{at}name"),
                format!("'{name}' is already the name of requests[{first}]; names must be unique"),
            ));
        }
        let expect = match item.object(&fields::REQUEST_EXPECT)? {
            None => Expect::default(),
            Some(expect) => Expect {
                statuses: expect
                    .texts(&fields::EXPECT_STATUS)?
                    .iter()
                    .filter_map(|status| status.parse().ok())
                    .collect(),
                body_contains: Some(expect.text(&fields::EXPECT_BODY)?)
                    .filter(|text| !text.is_empty())
                    .map(bytes::Bytes::from),
            },
        };
        requests.push(Written {
            at,
            name,
            method: item.text(&fields::REQUEST_METHOD)?,
            url: item.text(&fields::REQUEST_URL)?,
            body: item.text(&fields::REQUEST_BODY)?,
            headers: item.text_map(&fields::REQUEST_HEADERS)?,
            weight: item.number(&fields::REQUEST_WEIGHT)?,
            expect,
        });
    }
    Ok(requests)
}

/// A feed's refusal as a tool error: its message starts with the field it is about.
pub(in crate::mcp) fn feed_error(e: FeedError) -> InputError {
    let text = e.to_string();
    match text.split_once(": ") {
        Some((field, message)) => bad(field, message),
        None => bad("feed", text),
    }
}

/// `written`'s url, header values and body as templates filled from `feed`'s rows; `None` when none of them
/// names a column.
pub(in crate::mcp) fn template(
    written: &Written,
    feed: &Feed,
) -> Result<Option<Arc<RequestTemplate>>, InputError> {
    let parse = |field: &str, text: &str| {
        Template::parse(format!("{}{field}", written.at), text).map_err(feed_error)
    };
    let url = parse("url", &written.url)?;
    let body = parse("body", &written.body)?;
    let headers = written
        .headers
        .iter()
        .map(|(name, value)| Ok((name.clone(), parse(&format!("headers.{name}"), value)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    if url.is_literal() && body.is_literal() && headers.iter().all(|(_, t)| t.is_literal()) {
        return Ok(None);
    }
    Ok(Some(Arc::new(RequestTemplate {
        method: written.method.clone(),
        url: feed.bind(&url).map_err(feed_error)?,
        body: feed.bind(&body).map_err(feed_error)?,
        headers: headers
            .iter()
            .map(|(name, value)| {
                Ok((
                    name.clone(),
                    feed.bind_header_value(value).map_err(feed_error)?,
                ))
            })
            .collect::<Result<_, InputError>>()?,
    })))
}

/// The traffic: `requests`, or the one request of `url`, every request to the first one's service; with
/// `feed`, their placeholders filled from its rows.
pub(in crate::mcp) fn read_mix(input: &FieldInput, seed: u64) -> Result<Mix, InputError> {
    let written = written(input)?;
    let feed = match input.object(&fields::FEED)? {
        None => None,
        Some(feed) => {
            let path = feed.text(&fields::FEED_FILE)?;
            let order = FeedOrder::parse(&feed.text(&fields::FEED_ORDER)?).map_err(feed_error)?;
            Some(Arc::new(
                Feed::load(std::path::Path::new(&path), order, seed).map_err(feed_error)?,
            ))
        }
    };
    let mut requests: Vec<MixRequest> = Vec::with_capacity(written.len());
    for request in &written {
        let at = &request.at;
        let target = target(
            at,
            (&request.url, &request.method, &request.body),
            &request.headers,
        )?;
        if let Some(first) = requests.first() {
            let service = |t: &Target| (t.url.scheme().to_owned(), t.host().to_owned(), t.port());
            if service(&first.target) != service(&target) {
                return Err(bad(
                    format!("{at}url"),
                    format!(
                        "goes to {}://{}:{}, and requests[0] to {}://{}:{}: every request of a mix goes to \
                         one service (scheme, host and port)",
                        target.url.scheme(),
                        target.host(),
                        target.port(),
                        first.target.url.scheme(),
                        first.target.host(),
                        first.target.port()
                    ),
                ));
            }
        }
        let template = match &feed {
            Some(feed) => template(request, feed)?,
            None => None,
        };
        requests.push(MixRequest {
            name: if request.name.is_empty() {
                target.label()
            } else {
                request.name.clone()
            },
            target,
            weight: request.weight,
            expect: request.expect.clone(),
            template,
        });
    }
    let mix = Mix::new(requests, seed).map_err(|e| bad("requests", e.to_string()))?;
    Ok(match feed {
        Some(feed) => mix.with_feed(feed),
        None => mix,
    })
}

/// The pace and how long the load runs: `stages`, or `rps` per client for `duration`.
pub(in crate::mcp) fn read_pace(
    input: &FieldInput,
    num_clients: u32,
    limits: &Limits,
) -> Result<(Pace, Duration), InputError> {
    let cap = |what: String| {
        format!(
            "{what}; accepted: at most {} (the server's cap; `fault agent tool --max-scenario-rps N` raises it)",
            limits.max_total_rps
        )
    };
    let stages = input.objects(&fields::STAGES)?;
    if stages.is_empty() {
        let duration = duration(Some(input.text(&fields::DURATION)?), limits)?;
        let rps = input.whole(&fields::RPS)? as u32;
        let total_rate = u64::from(num_clients) * u64::from(rps);
        if total_rate > limits.max_total_rps {
            return Err(bad(
                "rps",
                cap(format!(
                    "num_clients × rps = {total_rate} requests per second"
                )),
            ));
        }
        return Ok((Pace::Open { rps }, duration));
    }
    if let Some(given) = [fields::DURATION, fields::RPS]
        .iter()
        .find(|field| input.has(field))
    {
        return Err(bad(
            given.name,
            "is for a constant rate, and `stages` is given: give either `duration` and `rps`, or `stages` \
             (each with its own duration and rps)",
        ));
    }
    let mut steps = Vec::with_capacity(stages.len());
    for (index, stage) in stages.iter().enumerate() {
        let length = stage
            .parsed::<String>(&fields::STAGE_DURATION)
            .map(|text| fields::parse_duration(&text))?
            .map_err(|e| bad(format!("stages[{index}].duration"), e))?;
        if length.is_zero() {
            return Err(bad(
                format!("stages[{index}].duration"),
                "is 0: a stage lasts more than 0s",
            ));
        }
        let rps = stage.number(&fields::STAGE_RPS)?;
        if rps > limits.max_total_rps as f64 {
            return Err(bad(
                format!("stages[{index}].rps"),
                cap(format!("{rps} requests per second")),
            ));
        }
        steps.push((length, rps));
    }
    let total: Duration = steps.iter().map(|(length, _)| *length).sum();
    if total > limits.max_duration {
        return Err(bad(
            "stages",
            format!(
                "the stages last {} in all; accepted: at most {} (the server's cap; `fault agent tool \
                 --max-scenario-duration` raises it)",
                humantime::format_duration(total),
                humantime::format_duration(limits.max_duration)
            ),
        ));
    }
    let rate = Rate::stages(&steps);
    if rate.planned() == 0 {
        return Err(bad(
            "stages",
            "every stage's rps is 0: the ramp would send no request",
        ));
    }
    Ok((Pace::Shaped(Arc::new(rate)), total))
}
