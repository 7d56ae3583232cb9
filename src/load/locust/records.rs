//! Locust's per-request records turned into the load generator's own report, with each worker's share.

use std::{collections::HashMap, time::Duration};

use tokio::time::Instant;

use crate::load::{
    LoadReport, RequestOutcome, RequestSamples, Samples, Timing, phases, plan::seconds_of,
    recorder::SampleRecorder,
};

/// One request as the plugin wrote it: the worker's id, Locust's name, start (Unix seconds), response time
/// (ms), status (0: none), error (none: a success), response length.
#[derive(serde::Deserialize)]
pub(super) struct Record(String, String, f64, f64, u16, Option<String>, u64);

/// How a request Locust recorded ended, in the load generator's terms.
fn outcome(status: u16, error: Option<String>) -> RequestOutcome {
    match (status, error) {
        (_, None) => RequestOutcome::Success,
        (0, Some(error)) if error.contains("Timeout") || error.contains("timed out") => {
            RequestOutcome::Timeout
        }
        (0, Some(error)) => RequestOutcome::Transport(error),
        (status, Some(_)) if status >= 400 => RequestOutcome::HttpError(status),
        (status, Some(_)) => RequestOutcome::Unexpected(status),
    }
}

/// A worker's share of the requests.
#[derive(Debug, Clone)]
pub struct WorkerShare {
    pub id: String,
    pub requests: u64,
}

/// What the report says of the engine: which, its users, and each worker's share.
#[derive(Debug, Clone)]
pub struct EngineFigures {
    pub engine: String,
    pub version: String,
    pub users: u32,
    pub spawn_rate: f64,
    pub workers: Vec<WorkerShare>,
}

/// The records read so far, per request name, as the load generator records its own.
pub(super) struct Built {
    names: Vec<String>,
    recorders: Vec<SampleRecorder>,
    by_name: HashMap<String, usize>,
    workers: Vec<WorkerShare>,
    seconds: usize,
    cuts: Vec<Duration>,
    duration: Duration,
    last_end: Duration,
}

impl Built {
    pub(super) fn new(names: &[String], duration: Duration, cuts: &[Duration]) -> Self {
        let mut built = Self {
            names: Vec::new(),
            recorders: Vec::new(),
            by_name: HashMap::new(),
            workers: Vec::new(),
            seconds: seconds_of(duration),
            cuts: cuts.to_vec(),
            duration,
            last_end: Duration::ZERO,
        };
        for name in names {
            built.recorder(name);
        }
        built
    }

    fn recorder(&mut self, name: &str) -> usize {
        if let Some(index) = self.by_name.get(name) {
            return *index;
        }
        self.names.push(name.to_owned());
        self.recorders.push(SampleRecorder::new(
            1,
            self.seconds,
            phases(&self.cuts, self.duration),
        ));
        self.by_name.insert(name.to_owned(), self.names.len() - 1);
        self.names.len() - 1
    }

    pub(super) fn add(
        &mut self,
        start: Instant,
        started_at: chrono::DateTime<chrono::Utc>,
        record: Record,
    ) {
        let Record(worker, name, began, response_ms, status, error, length) = record;
        let t0 = started_at.timestamp_micros() as f64 / 1e6;
        let at = Duration::from_secs_f64((began - t0).max(0.0));
        let took = Duration::from_secs_f64((response_ms / 1e3).max(0.0));
        let client = match self.workers.iter().position(|w| w.id == worker) {
            Some(index) => index,
            None => {
                self.workers.push(WorkerShare {
                    id: worker,
                    requests: 0,
                });
                self.workers.len() - 1
            }
        };
        self.workers[client].requests += 1;
        let due = start + at;
        let timing = Timing {
            due,
            sent: Some(due),
            ended: due + took,
        };
        self.last_end = self.last_end.max(at + took);
        let index = self.recorder(&name);
        self.recorders[index].record(
            client as u32,
            (at, at + took),
            &timing,
            outcome(status, error),
            length,
        );
    }

    pub(super) fn workers(&self) -> Vec<WorkerShare> {
        self.workers.clone()
    }

    pub(super) fn report(
        self,
        started_at: chrono::DateTime<chrono::Utc>,
        duration: Duration,
    ) -> LoadReport {
        let per_request: Vec<RequestSamples> = self
            .names
            .iter()
            .zip(&self.recorders)
            .map(|(name, recorder)| RequestSamples {
                name: name.clone(),
                samples: recorder.samples(),
            })
            .collect();
        let mut samples = Samples::new(self.seconds);
        samples.phases = phases(&self.cuts, duration);
        for request in &per_request {
            samples.merge(&request.samples);
        }
        LoadReport {
            started_at,
            ended_at: chrono::Utc::now(),
            elapsed: self.last_end,
            planned: None,
            connections_opened: 0,
            cut_short: false,
            // A closed model offers what its users send: the requests started in each second.
            offered_per_second: samples.per_second.iter().map(|s| s.requests).collect(),
            samples,
            per_request,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_ends_as_the_generator_would_have_said() {
        assert_eq!(outcome(200, None), RequestOutcome::Success);
        assert_eq!(
            outcome(503, Some("HTTPError".into())),
            RequestOutcome::HttpError(503)
        );
        assert_eq!(
            outcome(200, Some("status 200".into())),
            RequestOutcome::Unexpected(200)
        );
        assert_eq!(
            outcome(0, Some("ReadTimeout: x".into())),
            RequestOutcome::Timeout
        );
        assert_eq!(
            outcome(0, Some("ConnectionError: refused".into())),
            RequestOutcome::Transport("ConnectionError: refused".into())
        );
    }
}
