//! What an impact report was built from, inside the report itself ([`super::Report::data`]): the load runs'
//! samples (every histogram in HdrHistogram's V2 compressed encoding, base64, which the HdrHistogram libraries
//! of Java, Go, Python and Rust read, plus the counters), the SLOs and the proxies' upstream counts. A result
//! read back gives the same [`LoadReport`]s, so that results of several runs can be added together and judged
//! again by the one report builder ([`super::build`]; `fault report merge`, `src/report/merge.rs`).
//!
//! Size: a histogram of millisecond latencies encodes in a few hundred bytes (its counts are run-length
//! encoded, then deflated), so a 120 s run carries some tens of KB of histograms.

use std::{collections::BTreeMap, time::Duration};

use base64::Engine as _;
use hdrhistogram::{
    Histogram,
    serialization::{Deserializer, Serializer as _, V2DeflateSerializer},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::phases::{UpstreamCounts, UpstreamTally};
use super::slo::LatencySlo;
use crate::load::{LoadReport, PhaseSamples, RequestSamples, Samples, SecondSamples};

/// A histogram of latencies in µs, in HdrHistogram's V2 compressed encoding (deflate), base64 (standard
/// alphabet, padded): "HISTFAAA…".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(transparent)]
pub struct EncodedHistogram(
    #[schemars(regex(pattern = r"^HISTFAAA[A-Za-z0-9+/]*={0,2}$"))] pub String,
);

/// Why an encoded histogram could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("is not base64 ({0})")]
    Base64(String),
    #[error("is not an HdrHistogram V2 compressed encoding ({0:?})")]
    Encoding(hdrhistogram::serialization::DeserializeError),
}

impl EncodedHistogram {
    /// `histogram` encoded.
    pub fn of(histogram: &Histogram<u64>) -> Self {
        let mut bytes = Vec::new();
        // Writing to a Vec cannot fail, and the deflate stream of a valid histogram always encodes; an empty
        // string (read back as an error) would be the only trace of the impossible.
        if V2DeflateSerializer::new()
            .serialize(histogram, &mut bytes)
            .is_err()
        {
            bytes.clear();
        }
        Self(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// The histogram back, able to grow (as the load generator's are) so that others can be added to it.
    pub fn decode(&self) -> Result<Histogram<u64>, HistogramError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.0.as_bytes())
            .map_err(|e| HistogramError::Base64(e.to_string()))?;
        let mut histogram: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(HistogramError::Encoding)?;
        histogram.auto(true);
        Ok(histogram)
    }
}

/// A histogram that could not be read back, and where it is in the result.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {source}")]
pub struct DecodeError {
    /// Its path in the result, e.g. `data.run.samples.per_second[3].latency_us`.
    pub field: String,
    #[source]
    pub source: HistogramError,
}

/// Decodes `encoded`, found at `field` (under `at`).
fn decode(
    encoded: &EncodedHistogram,
    at: &str,
    field: &str,
) -> Result<Histogram<u64>, DecodeError> {
    encoded.decode().map_err(|source| DecodeError {
        field: format!("{at}.{field}"),
        source,
    })
}

/// One second of the schedule: the requests due in it ([`SecondSamples`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecondData {
    /// Latencies (µs) of every request due in this second, whatever its outcome (two significant figures).
    pub latency_us: EncodedHistogram,
    pub requests: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Answers that ended in this second, whenever their requests were due.
    pub answered: u64,
}

/// One phase of the run ([`PhaseSamples`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseData {
    /// Start of the phase, in seconds from the run's start.
    pub from_s: f64,
    pub until_s: f64,
    /// Latencies (µs) of every request due in the phase.
    pub all_us: EncodedHistogram,
    /// Latencies (µs) of its successful requests.
    pub success_us: EncodedHistogram,
    pub success: u64,
    pub errors: u64,
    pub timeouts: u64,
}

/// Everything measured over some requests of a run ([`Samples`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SamplesData {
    /// Latency (µs) of every request.
    pub all_us: EncodedHistogram,
    /// Latency (µs) of the successful requests.
    pub success_us: EncodedHistogram,
    /// Queueing delay (µs, due → sent) of every request.
    pub queueing_us: EncodedHistogram,
    /// Service time (µs, sent → ended) of every request sent.
    pub service_us: EncodedHistogram,
    /// Exact sum of the latencies (µs), for a true mean.
    pub sum_us: u64,
    pub success: u64,
    /// Responses with a status of 400 or more, per status (as text keys).
    pub http_errors: BTreeMap<String, u64>,
    /// Answers their request's `expect` did not accept, by status (as text keys).
    #[serde(default)]
    pub unexpected: BTreeMap<String, u64>,
    pub transport_errors: u64,
    pub timeouts: u64,
    pub not_started: u64,
    pub transport_error_examples: Vec<String>,
    pub body_bytes: u64,
    pub per_second: Vec<SecondData>,
    /// Empty when the run was not cut into phases.
    pub phases: Vec<PhaseData>,
}

/// One request of the traffic mix and its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestData {
    pub name: String,
    pub samples: SamplesData,
}

/// One load run ([`LoadReport`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunData {
    /// RFC 3339, to the nanosecond.
    pub started_at: String,
    pub ended_at: String,
    /// From the schedule's start to the last request's end, in nanoseconds.
    pub elapsed_ns: u64,
    /// Requests the schedule planned.
    pub planned: Option<u64>,
    pub connections_opened: u64,
    pub cut_short: bool,
    /// Requests the schedule had due in each second.
    pub offered_per_second: Vec<u64>,
    /// Every request of the run.
    pub samples: SamplesData,
    /// The same requests, per request of the traffic mix, in the mix's order.
    pub per_request: Vec<RequestData>,
}

/// The proxies' counts of a run ([`UpstreamCounts`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UpstreamData {
    pub per_second: Vec<UpstreamTally>,
    /// Aligned with the run's phases.
    pub per_phase: Vec<UpstreamTally>,
    pub total: UpstreamTally,
    /// Whether every request flow was HTTP/1, so that `requests` counts them all.
    pub requests_counted: bool,
}

/// What the report was built from: with the report's `call`, `strategy`, `faults` and `recovery_seconds`,
/// enough to build it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportData {
    /// The SLOs the runs were judged on, as given.
    pub slos: Vec<LatencySlo>,
    /// The run with the faults.
    pub run: RunData,
    /// The run without them, when there was one.
    pub baseline: Option<RunData>,
    /// What the proxies sent upstream during the faulted run, when it was read.
    pub upstream: Option<UpstreamData>,
}

impl ReportData {
    pub fn of(
        slos: &[LatencySlo],
        run: &LoadReport,
        baseline: Option<&LoadReport>,
        upstream: Option<&UpstreamCounts>,
    ) -> Self {
        Self {
            slos: slos.to_vec(),
            run: RunData::of(run),
            baseline: baseline.map(RunData::of),
            upstream: upstream.map(|counts| UpstreamData {
                per_second: counts.per_second.clone(),
                per_phase: counts.per_phase.clone(),
                total: counts.total,
                requests_counted: counts.requests_counted,
            }),
        }
    }

    /// The upstream counts back.
    pub fn upstream_counts(&self) -> Option<UpstreamCounts> {
        self.upstream.as_ref().map(|data| UpstreamCounts {
            per_second: data.per_second.clone(),
            per_phase: data.per_phase.clone(),
            total: data.total,
            requests_counted: data.requests_counted,
        })
    }
}

fn timestamp(at: &chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Why a run's data could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum RunDataError {
    #[error(transparent)]
    Histogram(#[from] DecodeError),
    #[error("{field}: '{value}' is not an RFC 3339 time")]
    Time { field: String, value: String },
    #[error("{field}: {value} is not a time in seconds")]
    Seconds { field: String, value: f64 },
    #[error("{field}: '{value}' is not an HTTP status")]
    Status { field: String, value: String },
}

impl RunData {
    pub fn of(load: &LoadReport) -> Self {
        Self {
            started_at: timestamp(&load.started_at),
            ended_at: timestamp(&load.ended_at),
            elapsed_ns: u64::try_from(load.elapsed.as_nanos()).unwrap_or(u64::MAX),
            planned: load.planned,
            connections_opened: load.connections_opened,
            cut_short: load.cut_short,
            offered_per_second: load.offered_per_second.clone(),
            samples: SamplesData::of(&load.samples),
            per_request: load
                .per_request
                .iter()
                .map(|request| RequestData {
                    name: request.name.clone(),
                    samples: SamplesData::of(&request.samples),
                })
                .collect(),
        }
    }

    /// The run back; `at` names it in errors (e.g. `data.run`).
    pub fn load_report(&self, at: &str) -> Result<LoadReport, RunDataError> {
        let time = |field: &str, value: &str| {
            chrono::DateTime::parse_from_rfc3339(value)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| RunDataError::Time {
                    field: format!("{at}.{field}"),
                    value: value.to_owned(),
                })
        };
        Ok(LoadReport {
            started_at: time("started_at", &self.started_at)?,
            ended_at: time("ended_at", &self.ended_at)?,
            elapsed: Duration::from_nanos(self.elapsed_ns),
            planned: self.planned,
            connections_opened: self.connections_opened,
            cut_short: self.cut_short,
            offered_per_second: self.offered_per_second.clone(),
            samples: self.samples.samples(&format!("{at}.samples"))?,
            per_request: self
                .per_request
                .iter()
                .enumerate()
                .map(|(index, request)| {
                    Ok(RequestSamples {
                        name: request.name.clone(),
                        samples: request
                            .samples
                            .samples(&format!("{at}.per_request[{index}].samples"))?,
                    })
                })
                .collect::<Result<_, RunDataError>>()?,
        })
    }
}

impl SamplesData {
    pub fn of(samples: &Samples) -> Self {
        Self {
            all_us: EncodedHistogram::of(&samples.all_us),
            success_us: EncodedHistogram::of(&samples.success_us),
            queueing_us: EncodedHistogram::of(&samples.queueing_us),
            service_us: EncodedHistogram::of(&samples.service_us),
            sum_us: u64::try_from(samples.sum_us).unwrap_or(u64::MAX),
            success: samples.success,
            http_errors: samples
                .http_errors
                .iter()
                .map(|(status, count)| (status.to_string(), *count))
                .collect(),
            unexpected: samples
                .unexpected
                .iter()
                .map(|(status, count)| (status.to_string(), *count))
                .collect(),
            transport_errors: samples.transport_errors,
            timeouts: samples.timeouts,
            not_started: samples.not_started,
            transport_error_examples: samples.transport_error_examples.clone(),
            body_bytes: samples.body_bytes,
            per_second: samples
                .per_second
                .iter()
                .map(|second| SecondData {
                    latency_us: EncodedHistogram::of(&second.latency_us),
                    requests: second.requests,
                    errors: second.errors,
                    timeouts: second.timeouts,
                    answered: second.answered,
                })
                .collect(),
            phases: samples
                .phases
                .iter()
                .map(|phase| PhaseData {
                    from_s: phase.from.as_secs_f64(),
                    until_s: phase.until.as_secs_f64(),
                    all_us: EncodedHistogram::of(&phase.all_us),
                    success_us: EncodedHistogram::of(&phase.success_us),
                    success: phase.success,
                    errors: phase.errors,
                    timeouts: phase.timeouts,
                })
                .collect(),
        }
    }

    /// The samples back; `at` names them in errors.
    pub fn samples(&self, at: &str) -> Result<Samples, RunDataError> {
        let seconds = |field: String, value: f64| {
            Duration::try_from_secs_f64(value).map_err(|_| RunDataError::Seconds { field, value })
        };
        let mut samples = Samples::new(0);
        samples.all_us = decode(&self.all_us, at, "all_us")?;
        samples.success_us = decode(&self.success_us, at, "success_us")?;
        samples.queueing_us = decode(&self.queueing_us, at, "queueing_us")?;
        samples.service_us = decode(&self.service_us, at, "service_us")?;
        samples.sum_us = u128::from(self.sum_us);
        samples.success = self.success;
        let by_status = |counts: &BTreeMap<String, u64>, field: &str| {
            counts
                .iter()
                .map(|(status, count)| {
                    status
                        .parse::<u16>()
                        .map(|status| (status, *count))
                        .map_err(|_| RunDataError::Status {
                            field: format!("{at}.{field}"),
                            value: status.clone(),
                        })
                })
                .collect::<Result<BTreeMap<u16, u64>, _>>()
        };
        samples.http_errors = by_status(&self.http_errors, "http_errors")?;
        samples.unexpected = by_status(&self.unexpected, "unexpected")?;
        samples.transport_errors = self.transport_errors;
        samples.timeouts = self.timeouts;
        samples.not_started = self.not_started;
        samples
            .transport_error_examples
            .clone_from(&self.transport_error_examples);
        samples.body_bytes = self.body_bytes;
        samples.per_second = self
            .per_second
            .iter()
            .enumerate()
            .map(|(index, second)| {
                let mut slot = SecondSamples::new();
                slot.latency_us = decode(
                    &second.latency_us,
                    &format!("{at}.per_second[{index}]"),
                    "latency_us",
                )?;
                slot.requests = second.requests;
                slot.errors = second.errors;
                slot.timeouts = second.timeouts;
                slot.answered = second.answered;
                Ok(slot)
            })
            .collect::<Result<_, RunDataError>>()?;
        samples.phases = self
            .phases
            .iter()
            .enumerate()
            .map(|(index, phase)| {
                let here = format!("{at}.phases[{index}]");
                let mut slot = PhaseSamples::new(
                    seconds(format!("{here}.from_s"), phase.from_s)?,
                    seconds(format!("{here}.until_s"), phase.until_s)?,
                );
                slot.all_us = decode(&phase.all_us, &here, "all_us")?;
                slot.success_us = decode(&phase.success_us, &here, "success_us")?;
                slot.success = phase.success;
                slot.errors = phase.errors;
                slot.timeouts = phase.timeouts;
                Ok(slot)
            })
            .collect::<Result<_, RunDataError>>()?;
        Ok(samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{RequestOutcome, Timing, histogram, record_us};

    #[test]
    fn an_encoded_histogram_reads_back_to_the_same_counts_and_can_grow() {
        let mut original = histogram(3);
        for us in [1, 17, 950, 1_000, 1_001, 48_000, 2_500_000] {
            record_us(&mut original, us);
        }
        let encoded = EncodedHistogram::of(&original);
        assert!(encoded.0.starts_with("HISTFAAA"), "{}", encoded.0);
        let mut decoded = encoded.decode().unwrap();
        assert_eq!(decoded, original);
        // Values past its range are added as the load generator's histograms take them.
        let mut larger = histogram(3);
        record_us(&mut larger, 3_000_000_000);
        decoded.add(&larger).unwrap();
        assert_eq!(decoded.len(), original.len() + 1);
    }

    #[test]
    fn a_histogram_that_is_not_one_is_refused_with_its_reason() {
        let not_base64 = EncodedHistogram("HISTFAAA!!".into()).decode().unwrap_err();
        assert!(
            not_base64.to_string().starts_with("is not base64"),
            "{not_base64}"
        );
        let not_a_histogram = EncodedHistogram("aGVsbG8=".into()).decode().unwrap_err();
        assert!(
            not_a_histogram
                .to_string()
                .contains("not an HdrHistogram V2"),
            "{not_a_histogram}"
        );
    }

    /// Samples like a run's: `seconds` seconds at `rate` per second, a phase cut at a third of it.
    pub(crate) fn load_report(seconds: u64, rate: u64, slowest_us: u64) -> LoadReport {
        let duration = Duration::from_secs(seconds);
        let mut samples = Samples::new(seconds as usize);
        samples.phases = crate::load::phases(&[duration / 3], duration);
        for k in 0..seconds * rate {
            let due = Duration::from_micros(k * 1_000_000 / rate);
            let us = 800 + (k * 7_919) % slowest_us;
            let now = tokio::time::Instant::now();
            let timing = Timing {
                due: now,
                sent: Some(now + Duration::from_micros(15)),
                ended: now + Duration::from_micros(us),
            };
            let outcome = if k % 97 == 0 {
                RequestOutcome::HttpError(503)
            } else {
                RequestOutcome::Success
            };
            if let Some(phase) = crate::load::phase_of(&samples.phases, due) {
                samples.phases[phase].add(timing.latency(), &outcome);
            }
            samples.per_second[due.as_secs() as usize].answered += 1;
            samples.record(due.as_secs() as usize, &timing, outcome, 120);
        }
        LoadReport {
            started_at: chrono::Utc::now(),
            ended_at: chrono::Utc::now(),
            elapsed: duration + Duration::from_nanos(123_457),
            planned: Some(seconds * rate),
            connections_opened: 3,
            cut_short: false,
            offered_per_second: vec![rate; seconds as usize],
            per_request: vec![RequestSamples {
                name: "GET /".into(),
                samples: samples.clone(),
            }],
            samples,
        }
    }

    #[test]
    fn a_run_reads_back_to_the_same_data() {
        let load = load_report(6, 50, 40_000);
        let data = RunData::of(&load);
        let back = data.load_report("data.run").unwrap();
        assert_eq!(RunData::of(&back), data);
        assert_eq!(back.started_at, load.started_at);
        assert_eq!(back.elapsed, load.elapsed);
        assert_eq!(back.samples.phases.len(), 2);
        assert_eq!(back.samples.all_us, load.samples.all_us);
    }

    #[test]
    fn a_long_run_stays_small() {
        // 120 s at 1,000 requests per second, latencies up to 250 ms: every histogram twice (the run's and
        // its one request's).
        let load = load_report(120, 1_000, 250_000);
        let json = serde_json::to_string(&RunData::of(&load)).unwrap();
        eprintln!(
            "a 120 s run at 1,000 requests per second: {} bytes of data",
            json.len()
        );
        assert!(json.len() < 400_000, "{} bytes", json.len());
    }
}
