//! The traffic mix as the scenario was given it: each request's name, method, URL, weight and what counts as
//! its success.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One request of the traffic mix, as the scenario was given it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RequestInfo {
    /// Its name in the mix (`requests[].name`; the single-`url` form's is "METHOD /path").
    pub name: String,
    pub method: String,
    pub url: String,
    /// Its weight in the mix, as given (a call picks a request with probability weight / sum of weights).
    pub weight: f64,
    /// What counts as its success, in words (e.g. "a 2xx status", "status 200 or 404, body holding \"ok\"").
    pub expect: String,
    /// Header names sent (values are not echoed).
    pub headers: Vec<String>,
    pub has_body: bool,
}

impl RequestInfo {
    /// A request the load did not describe but a proxy saw pass, named "METHOD /path" (its group): no weight
    /// of its own, whatever status it got.
    pub fn observed(name: &str) -> Self {
        let (method, path) = name.split_once(' ').unwrap_or(("", name));
        Self {
            name: name.to_owned(),
            method: method.to_owned(),
            url: path.to_owned(),
            weight: 1.0,
            expect: "any answer (counted as the client saw it: a status below 400 is a success)"
                .into(),
            headers: Vec::new(),
            has_body: false,
        }
    }
}
