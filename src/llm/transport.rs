//! The HTTP transport shared by both providers: one reqwest client with a request timeout, and bounded
//! retries with exponential backoff and jitter on 429, 5xx and connections refused or lost. A call ends within
//! `retry_window + timeout`: no retry starts after the window, and each try lasts at most the timeout.

use std::{sync::Mutex, time::Duration};

use futures::future::BoxFuture;
use reqwest::{Request, Response, StatusCode};

use super::{
    LlmError,
    settings::{MAX_RETRIES_ENV, MAX_TOKENS_ENV, RETRY_WINDOW_ENV, TIMEOUT_ENV},
};
use crate::redact::redacted;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_MAX_RETRIES: u32 = 3;
const DEFAULT_RETRY_WINDOW: Duration = Duration::from_secs(60);
/// Upper bound of any single wait, including a server's Retry-After.
const MAX_BACKOFF: Duration = Duration::from_secs(20);

/// How long to wait for a provider and how often to try again.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub timeout: Duration,
    pub max_retries: u32,
    pub base_delay: Duration,
    /// Time from the first try after which no retry starts: a retry whose wait would end later is not made.
    pub retry_window: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            base_delay: Duration::from_millis(250),
            retry_window: DEFAULT_RETRY_WINDOW,
        }
    }
}

impl RetryPolicy {
    /// The defaults, overridden by `FAULT_LLM_TIMEOUT_SECS`, `FAULT_LLM_MAX_RETRIES` and
    /// `FAULT_LLM_RETRY_WINDOW_SECS` when set.
    pub fn from_env() -> Result<Self, LlmError> {
        let mut policy = Self::default();
        if let Some(timeout) = seconds_from_env(TIMEOUT_ENV, false)? {
            policy.timeout = timeout;
        }
        if let Some(window) = seconds_from_env(RETRY_WINDOW_ENV, true)? {
            policy.retry_window = window;
        }
        if let Some(raw) = non_empty_env(MAX_RETRIES_ENV) {
            policy.max_retries = raw.parse().ok().filter(|n| *n <= 10).ok_or_else(|| {
                LlmError::Config(format!(
                    "{MAX_RETRIES_ENV}='{raw}' is not a whole number from 0 to 10"
                ))
            })?;
        }
        Ok(policy)
    }

    /// Exponential backoff with "equal jitter": half the step fixed, half random.
    fn backoff(&self, retry: u32) -> Duration {
        let step = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(MAX_BACKOFF);
        let half = step / 2;
        let jitter_ms = rand::random_range(0..=half.as_millis().max(1) as u64);
        half + Duration::from_millis(jitter_ms)
    }
}

/// A number of seconds from `name` when set: positive (or zero, when `zero_allowed`), at most a day.
fn seconds_from_env(name: &str, zero_allowed: bool) -> Result<Option<Duration>, LlmError> {
    let Some(raw) = non_empty_env(name) else {
        return Ok(None);
    };
    raw.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (*s > 0.0 || (zero_allowed && *s == 0.0)) && *s <= 86_400.0)
        .map(|s| Some(Duration::from_secs_f64(s)))
        .ok_or_else(|| {
            let accepted = if zero_allowed { "0" } else { "more than 0" };
            LlmError::Config(format!(
                "{name}='{raw}' is not a number of seconds from {accepted} to 86400"
            ))
        })
}

/// `FAULT_LLM_MAX_TOKENS` when set.
pub fn max_output_tokens_from_env() -> Result<Option<u32>, LlmError> {
    non_empty_env(MAX_TOKENS_ENV)
        .map(|raw| {
            raw.parse::<u32>()
                .ok()
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or_else(|| {
                    LlmError::Config(format!(
                        "{MAX_TOKENS_ENV}='{raw}' is not a whole number from 1 to 1000000"
                    ))
                })
        })
        .transpose()
}

pub(crate) fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The HTTP transport to a provider: a reqwest client plus the retry policy; cheap to clone.
#[derive(Clone, Debug)]
pub struct ProviderTransport {
    http: reqwest::Client,
    policy: RetryPolicy,
}

/// The HTTP clients built so far, by request timeout: every model of the process shares one per timeout, so
/// connections (and TLS sessions) to a provider are reused from call to call.
static CLIENTS: Mutex<Vec<(Duration, reqwest::Client)>> = Mutex::new(Vec::new());

impl ProviderTransport {
    pub fn new(policy: RetryPolicy) -> Result<Self, LlmError> {
        let mut clients = CLIENTS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, http)) = clients.iter().find(|(t, _)| *t == policy.timeout) {
            return Ok(Self {
                http: http.clone(),
                policy,
            });
        }
        // reqwest is built without a default crypto provider: install ring (an error means one is already set).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(policy.timeout)
            .connect_timeout(policy.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        clients.push((policy.timeout, http.clone()));
        Ok(Self { http, policy })
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Sends the request `build` makes, again after a 429/5xx/connection error, at most `max_retries` times.
    /// The last response is returned whatever its status: callers read error bodies themselves.
    pub async fn send<E>(
        &self,
        build: impl Fn() -> BoxFuture<'static, Result<Request, E>>,
    ) -> Result<Result<Response, reqwest::Error>, E> {
        let mut retry = 0;
        let first_try = tokio::time::Instant::now();
        loop {
            let request = build().await?;
            let url = request.url().clone();
            let outcome = self.http.execute(request).await;
            let retry_after = match &outcome {
                Ok(response) if is_retryable_status(response.status()) => {
                    Some(retry_after(response).unwrap_or_else(|| self.policy.backoff(retry)))
                }
                // Refused, or lost before an answer (a server restarting, a pooled connection it closed); a
                // request that ran out of time is not sent again.
                Err(e) if !e.is_timeout() && (e.is_connect() || e.is_request()) => {
                    Some(self.policy.backoff(retry))
                }
                _ => None,
            };
            let within_window =
                |delay: Duration| first_try.elapsed() + delay <= self.policy.retry_window;
            match retry_after {
                Some(delay) if retry < self.policy.max_retries && within_window(delay) => {
                    let status = outcome.as_ref().map(|r| r.status().as_u16()).ok();
                    tracing::info!(
                        url = %redacted(&url),
                        ?status,
                        retry = retry + 1,
                        delay_ms = delay.as_millis() as u64,
                        "LLM request failed; retrying"
                    );
                    drop(outcome);
                    tokio::time::sleep(delay).await;
                    retry += 1;
                }
                // reqwest's errors carry the URL whole (credentials, query): ours name it redacted.
                _ => return Ok(outcome.map_err(reqwest::Error::without_url)),
            }
        }
    }
}

fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// A server's `Retry-After` (seconds or an HTTP date), capped so a hostile value cannot stall a tool.
fn retry_after(response: &Response) -> Option<Duration> {
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?;
    crate::http1::retry_after(value, std::time::SystemTime::now()).map(|wait| wait.min(MAX_BACKOFF))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_bounded() {
        let policy = RetryPolicy::default();
        for retry in 0..12 {
            let delay = policy.backoff(retry);
            let step = policy
                .base_delay
                .saturating_mul(2u32.saturating_pow(retry))
                .min(MAX_BACKOFF);
            assert!(delay >= step / 2 && delay <= step + Duration::from_millis(1));
        }
    }
}
