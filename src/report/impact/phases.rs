//! Phases, detection, recovery, error budget and retry amplification of an impact run whose faults act in
//! windows. Defined here once; the report's footnote ([`FOOTNOTE`]) says the same in words.
//!
//! - The faults' windows are merged where they overlap or touch; the run is cut at their edges into phases:
//!   before the first window, during each, between two, after the last. A request belongs to the phase it was
//!   due in (latency counts from when it was due).
//! - A second of the load's per-second samples (requests grouped by when they were due) *breaks* an SLO when
//!   its p99 is over the SLO's threshold or its share of errors is over the share the objective allows
//!   (100 − objective, in percent); it *holds* every SLO when it breaks none, and it is *back* when it also has
//!   no more errors than the before phase's error share of its requests, rounded up. A second without requests
//!   neither breaks nor holds. An SLO that names a request of the mix reads that request's requests alone, in
//!   each second and in each phase (its budget is that request's over the run).
//! - Time to detect: from a window's start to the start of the first second (from the one the window starts
//!   in, until the next window) that breaks an SLO.
//! - Time to recover: from a window's end to the start of the first run of N seconds in a row (from the one
//!   the window ends in, all before the next window) that hold every SLO and are back. None found: the service
//!   did not recover, and the report says how long after the window the run (or the next window) began.
//! - Burn rate of an SLO in a phase: the share of the phase's requests that broke it (failed, or succeeded over
//!   its threshold), divided by the share its objective allows (1 − objective/100); 1 spends the budget as
//!   fast as the objective allows. Budget spent: the phase's bad requests over those the objective allows over
//!   the whole run.
//! - Retry amplification: the requests the proxies sent upstream (HTTP/1 requests on each connection's request
//!   flow, counted as written) per request of the load, in the same stretch of time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::slo::{Judged, slo_counts};
use crate::load::PhaseSamples;
use crate::report::{SecondFigures, ms, percent, quantile, round2, round4, trim_float};

/// The definitions of this module in the report's words, for its footnote.
pub const FOOTNOTE: &str = "Phases cut the run at the faults' windows (merged where they overlap): before, during, \
between and after; a request belongs to the phase it was due in. A second (requests grouped by when they were due) \
breaks an SLO when its p99 is over the threshold or its errors are over the share the objective allows; it is back \
when it breaks none and has no more errors than the before phase's error share. Time to detect runs from a window's \
start to the start of the first second that breaks an SLO; time to recover from a window's end to the start of the \
first N seconds in a row that are back, before the next window; without them the service did not recover. Burn rate: \
the phase's share of requests over the threshold or failed, divided by the share the objective allows; budget \
spent: the phase's bad requests over those the objective allows in the whole run. Upstream requests per request: \
the HTTP/1 requests the proxies sent upstream over the load's requests in the same time (above 1: retries).";

/// A window during which a fault was active, in seconds from the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActiveWindow {
    pub from_s: f64,
    pub until_s: f64,
}

impl ActiveWindow {
    pub fn length_s(&self) -> f64 {
        self.until_s - self.from_s
    }

    /// Whether it is shorter than the one-second samples detection and recovery are read from.
    pub fn shorter_than_a_second(&self) -> bool {
        self.length_s() < 1.0
    }
}

/// `windows` merged where they overlap or touch, in time order.
pub fn merge_windows(windows: impl IntoIterator<Item = ActiveWindow>) -> Vec<ActiveWindow> {
    let mut windows: Vec<ActiveWindow> = windows.into_iter().collect();
    windows.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
    let mut merged: Vec<ActiveWindow> = Vec::with_capacity(windows.len());
    for window in windows {
        match merged.last_mut() {
            Some(last) if window.from_s <= last.until_s => {
                last.until_s = last.until_s.max(window.until_s);
            }
            _ => merged.push(window),
        }
    }
    merged
}

/// Where a run of `run_s` seconds is cut into phases by its `merged` windows: each window's edges inside the
/// run, in order. None when the windows cover the whole run (the faults held throughout: no phases).
pub fn phase_cuts(merged: &[ActiveWindow], run_s: f64) -> Vec<f64> {
    let whole = merged.len() == 1 && merged[0].from_s <= 0.0 && merged[0].until_s >= run_s;
    if merged.is_empty() || whole {
        return Vec::new();
    }
    let mut cuts: Vec<f64> = merged
        .iter()
        .flat_map(|w| [w.from_s, w.until_s])
        .filter(|&t| t > 0.0 && t < run_s)
        .collect();
    cuts.dedup();
    cuts
}

/// Where a phase stands against the faults' windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PhaseKind {
    Before,
    During,
    Between,
    After,
}

/// One SLO judged on one phase.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PhaseSlo {
    /// e.g. "99% @ 350ms".
    pub name: String,
    pub passed: bool,
    /// Requests of the phase over the threshold or not successful.
    pub bad_requests: u64,
    pub bad_percent: f64,
    /// The phase's bad share over the share the objective allows (1 − objective/100); `None` for a 100%
    /// objective (no budget) or a phase without requests.
    pub burn_rate: Option<f64>,
    /// The phase's bad requests as a percentage of those the objective allows over the whole run; `None` for a
    /// 100% objective.
    pub budget_spent_percent: Option<f64>,
}

/// What the proxies sent upstream during a phase, against the load's requests due in it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct PhaseUpstream {
    /// Connections the proxies accepted.
    pub connections: u64,
    /// HTTP/1 requests the proxies sent upstream; `None` when some traffic was not HTTP/1 (e.g. TLS through the
    /// proxy), so requests could not all be counted.
    pub requests: Option<u64>,
    /// `requests` per request of the load (retry amplification; 1 for a service that calls its upstream once).
    pub requests_per_client_request: Option<f64>,
}

/// Every figure of one phase.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PhaseFigures {
    pub kind: PhaseKind,
    /// "before", "during", "after"; with several windows "during 2", "between 1 and 2".
    pub name: String,
    pub from_s: f64,
    pub until_s: f64,
    /// Requests due in the phase.
    pub requests: u64,
    pub errors: u64,
    pub error_percent: f64,
    pub timeouts: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub slos: Vec<PhaseSlo>,
    /// What the proxies sent upstream in the phase; `None` when the proxy's counts were not read.
    pub upstream: Option<PhaseUpstream>,
}

/// What the proxies sent upstream in one stretch of the run (a second, a phase).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UpstreamTally {
    /// Connections the proxies accepted.
    pub connections: u64,
    /// HTTP/1 requests the proxies sent upstream.
    pub requests: u64,
}

/// The proxies' counts over a run, per second and per phase of the load (read at each boundary).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamCounts {
    pub per_second: Vec<UpstreamTally>,
    /// Aligned with the run's phases.
    pub per_phase: Vec<UpstreamTally>,
    pub total: UpstreamTally,
    /// Whether every request flow was HTTP/1, so that `requests` counts them all.
    pub requests_counted: bool,
}

/// What the proxies sent upstream in one second of the run, against the load's requests due in it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UpstreamSecond {
    pub second: u32,
    pub connections: u64,
    pub requests: Option<u64>,
    pub requests_per_client_request: Option<f64>,
}

/// Retry amplification over the run: what the proxies sent upstream against the load's requests.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Amplification {
    pub connections: u64,
    /// HTTP/1 requests the proxies sent upstream; `None` when some traffic was not HTTP/1.
    pub requests: Option<u64>,
    pub requests_per_client_request: Option<f64>,
    pub per_second: Vec<UpstreamSecond>,
}

fn per_request(upstream: u64, client: u64) -> Option<f64> {
    (client > 0).then(|| round2(upstream as f64 / client as f64))
}

impl Amplification {
    /// The run's amplification from the proxies' `counts` and the load's requests per second.
    pub fn of(counts: &UpstreamCounts, per_second: &[SecondFigures], requests: u64) -> Self {
        let counted = |n: u64| counts.requests_counted.then_some(n);
        Self {
            connections: counts.total.connections,
            requests: counted(counts.total.requests),
            requests_per_client_request: counted(counts.total.requests)
                .and_then(|n| per_request(n, requests)),
            per_second: counts
                .per_second
                .iter()
                .enumerate()
                .map(|(second, tally)| {
                    let client = per_second.get(second).map_or(0, |s| s.requests);
                    UpstreamSecond {
                        second: second as u32,
                        connections: tally.connections,
                        requests: counted(tally.requests),
                        requests_per_client_request: counted(tally.requests)
                            .and_then(|n| per_request(n, client)),
                    }
                })
                .collect(),
        }
    }
}

/// The figures of each of a run's `phases` (from the load), named against the `merged` windows, each of the
/// `judged` SLOs judged on its own traffic's requests due in the phase.
pub fn phase_figures(
    phases: &[PhaseSamples],
    merged: &[ActiveWindow],
    judged: &[Judged],
    upstream: Option<&UpstreamCounts>,
) -> Vec<PhaseFigures> {
    let several = merged.len() > 1;
    phases
        .iter()
        .enumerate()
        .map(|(index, phase)| {
            let (from_s, until_s) = (phase.from.as_secs_f64(), phase.until.as_secs_f64());
            let middle = (from_s + until_s) / 2.0;
            let during = merged
                .iter()
                .position(|w| w.from_s <= middle && middle < w.until_s);
            let before = merged.iter().filter(|w| w.until_s <= middle).count();
            let (kind, name) = match during {
                Some(i) if several => (PhaseKind::During, format!("during {}", i + 1)),
                Some(_) => (PhaseKind::During, "during".to_owned()),
                None if before == 0 => (PhaseKind::Before, "before".to_owned()),
                None if before == merged.len() => (PhaseKind::After, "after".to_owned()),
                None => (
                    PhaseKind::Between,
                    format!("between {before} and {}", before + 1),
                ),
            };
            let requests = phase.requests();
            let at = |q: f64| {
                if requests == 0 {
                    0.0
                } else {
                    ms(quantile(&phase.all_us, q))
                }
            };
            let max_ms = if requests == 0 {
                0.0
            } else {
                ms(phase.all_us.median_equivalent(phase.all_us.max()))
            };
            let slos = judged
                .iter()
                .map(|Judged { slo, samples, .. }| {
                    // The SLO's traffic in this phase: the whole phase, or its request's part of it.
                    let own = if slo.request.is_some() {
                        samples.phases.get(index)
                    } else {
                        Some(phase)
                    };
                    let (good, bad, passed, own_requests) = match own {
                        Some(own) => {
                            let (good, bad, passed) =
                                slo_counts(slo, &own.all_us, &own.success_us, own.success);
                            (good, bad, passed, own.requests())
                        }
                        None => (0, 0, false, 0),
                    };
                    let run_requests = samples.requests();
                    let allowed = 1.0 - slo.objective / 100.0;
                    let budget = allowed > 0.0;
                    PhaseSlo {
                        name: slo.name(),
                        passed,
                        bad_requests: bad,
                        bad_percent: percent(bad, good + bad),
                        burn_rate: (budget && own_requests > 0)
                            .then(|| round2(bad as f64 / own_requests as f64 / allowed)),
                        budget_spent_percent: (budget && run_requests > 0)
                            .then(|| round2(bad as f64 * 100.0 / (allowed * run_requests as f64))),
                    }
                })
                .collect();
            let upstream = upstream.map(|counts| {
                let tally = counts.per_phase.get(index).copied().unwrap_or_default();
                let counted = counts.requests_counted.then_some(tally.requests);
                PhaseUpstream {
                    connections: tally.connections,
                    requests: counted,
                    requests_per_client_request: counted.and_then(|n| per_request(n, requests)),
                }
            });
            PhaseFigures {
                kind,
                name,
                from_s: round4(from_s),
                until_s: round4(until_s),
                requests,
                errors: phase.errors,
                error_percent: percent(phase.errors, requests),
                timeouts: phase.timeouts,
                p50_ms: at(0.50),
                p95_ms: at(0.95),
                p99_ms: at(0.99),
                max_ms,
                slos,
                upstream,
            }
        })
        .collect()
}

/// Whether a window's service recovered, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Recovery {
    /// N seconds in a row held every SLO and were back, from `from_second` on.
    Recovered {
        /// From the window's end to the start of `from_second`.
        recover_s: f64,
        from_second: u32,
    },
    /// No N seconds in a row were back before the run (or the next window) began, `after_s` after the
    /// window's end: no recovery time.
    NotRecovered {
        after_s: f64,
        /// Whether the next window began first (else the run ended).
        next_window: bool,
    },
    /// The window lasted until the end of the run: there was no time to recover in.
    HeldToTheEnd,
}

/// Time to detect and time to recover of one window (the faults' windows merged).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WindowRecovery {
    pub from_s: f64,
    pub until_s: f64,
    /// Shorter than the one-second samples detection and recovery are read from: it acted, and its phase
    /// counts the requests due in it, but a second that holds it also holds time without it.
    pub shorter_than_a_second: bool,
    /// From the window's start to the start of the first second that broke an SLO; `None`: none did.
    pub detect_s: Option<f64>,
    pub detected_at_second: Option<u32>,
    /// The SLOs that second broke.
    pub broken_slos: Vec<String>,
    pub recovery: Recovery,
}

impl WindowRecovery {
    /// The window's time to detect and to recover in one sentence without its full stop, `in_a_row` being N:
    /// the report's line for the window, and the charts' header and text alternative say the same.
    pub fn describe(&self, in_a_row: u32) -> RecoverySentence<'_> {
        RecoverySentence {
            window: self,
            in_a_row,
            markdown: false,
        }
    }
}

/// [`WindowRecovery::describe`], written with `{}`: plain text, or markdown that stresses a service that did
/// not recover ([`Self::markdown`]).
pub struct RecoverySentence<'a> {
    window: &'a WindowRecovery,
    in_a_row: u32,
    markdown: bool,
}

impl RecoverySentence<'_> {
    /// The sentence for the markdown report.
    pub fn markdown(self) -> Self {
        Self {
            markdown: true,
            ..self
        }
    }
}

impl std::fmt::Display for RecoverySentence<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let window = self.window;
        let strong = if self.markdown { "**" } else { "" };
        write!(
            f,
            "Window {}–{} s",
            trim_float(window.from_s),
            trim_float(window.until_s)
        )?;
        if window.shorter_than_a_second {
            write!(
                f,
                " ({} s, shorter than a second: it acted and its phase counts the requests due in it, but each \
                 second around it also holds time without it)",
                trim_float(window.until_s - window.from_s)
            )?;
        }
        match (window.detect_s, window.detected_at_second) {
            (Some(detect), Some(second)) => write!(
                f,
                ": detected {} s after its start (second {second} broke {})",
                trim_float(detect),
                window.broken_slos.join(" and ")
            )?,
            _ => f.write_str(": no second broke an SLO (nothing to detect)")?,
        }
        match window.recovery {
            Recovery::Recovered {
                recover_s,
                from_second,
            } => write!(
                f,
                "; recovered {} s after its end (seconds {from_second}–{} held)",
                trim_float(recover_s),
                from_second + self.in_a_row - 1
            ),
            Recovery::NotRecovered {
                after_s,
                next_window: false,
            } => write!(
                f,
                "; {strong}did not recover{strong}: the run ended {} s after the window without {} seconds in a \
                 row within every SLO",
                trim_float(after_s),
                self.in_a_row
            ),
            Recovery::NotRecovered {
                after_s,
                next_window: true,
            } => write!(
                f,
                "; {strong}did not recover{strong} before the next window began, {} s after this one",
                trim_float(after_s)
            ),
            Recovery::HeldToTheEnd => {
                f.write_str("; it held to the end of the run: no time to recover")
            }
        }
    }
}

/// The SLOs second `index` breaks, each read on its own traffic's second (see the module's definitions).
fn broken(index: usize, judged: &[Judged]) -> Vec<String> {
    judged
        .iter()
        .filter(|judged| {
            let Some(second) = judged.per_second.get(index).filter(|s| s.requests > 0) else {
                return false;
            };
            let error_share = second.errors as f64 / second.requests as f64;
            second
                .p99_ms
                .is_some_and(|p99| p99 > judged.slo.threshold_ms)
                || error_share > 1.0 - judged.slo.objective / 100.0 + 1e-12
        })
        .map(|judged| judged.slo.name())
        .collect()
}

/// Whether second `index` (of all traffic, `per_second`) holds every SLO with no more errors than
/// `usual_share` of its requests, rounded up.
fn back(index: usize, per_second: &[SecondFigures], judged: &[Judged], usual_share: f64) -> bool {
    let second = &per_second[index];
    let allowed = (usual_share * second.requests as f64 - 1e-9)
        .ceil()
        .max(0.0) as u64;
    second.requests > 0 && broken(index, judged).is_empty() && second.errors <= allowed
}

/// Time to detect and to recover of each of the `merged` windows of a run of `run_s` seconds, from its
/// `per_second` figures (all traffic) and those each of the `judged` SLOs reads: `usual_error_share` is the
/// before phase's (a fraction), `in_a_row` is N.
pub fn recoveries(
    merged: &[ActiveWindow],
    per_second: &[SecondFigures],
    judged: &[Judged],
    usual_error_share: f64,
    in_a_row: u32,
    run_s: f64,
) -> Vec<WindowRecovery> {
    let in_a_row = in_a_row.max(1) as usize;
    merged
        .iter()
        .enumerate()
        .map(|(i, window)| {
            // The time this window's effects are read in: until the next window starts, or the run ends.
            let limit_s = merged.get(i + 1).map_or(run_s, |next| next.from_s);
            let seconds_before =
                |limit: f64| (limit.ceil().max(0.0) as usize).min(per_second.len());
            let first = window.from_s.floor().max(0.0) as usize;
            let detected = (first..seconds_before(limit_s))
                .map(|s| (s, broken(s, judged)))
                .find(|(_, broken)| !broken.is_empty());
            let (detect_s, detected_at_second, broken_slos) = match detected {
                Some((s, broken)) => (
                    Some(round2((s as f64 - window.from_s).max(0.0))),
                    Some(s as u32),
                    broken,
                ),
                None => (None, None, Vec::new()),
            };
            let recovery = if window.until_s >= run_s {
                Recovery::HeldToTheEnd
            } else {
                // Whole seconds that end before the next window starts (all of them for the last window).
                let usable = if i + 1 < merged.len() {
                    (limit_s.floor().max(0.0) as usize).min(per_second.len())
                } else {
                    per_second.len()
                };
                let start = window.until_s.floor().max(0.0) as usize;
                let found = (start..usable.saturating_sub(in_a_row - 1)).find(|&s| {
                    (s..s + in_a_row)
                        .all(|second| back(second, per_second, judged, usual_error_share))
                });
                match found {
                    Some(s) => Recovery::Recovered {
                        recover_s: round2((s as f64 - window.until_s).max(0.0)),
                        from_second: s as u32,
                    },
                    None => Recovery::NotRecovered {
                        after_s: round2(limit_s - window.until_s),
                        next_window: i + 1 < merged.len(),
                    },
                }
            };
            WindowRecovery {
                from_s: round4(window.from_s),
                until_s: round4(window.until_s),
                shorter_than_a_second: window.shorter_than_a_second(),
                detect_s,
                detected_at_second,
                broken_slos,
                recovery,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Samples;
    use crate::report::impact::LatencySlo;

    /// Time to detect and to recover with every SLO judged on all traffic.
    fn recoveries_of(
        merged: &[ActiveWindow],
        per_second: &[SecondFigures],
        slos: &[LatencySlo],
        usual_error_share: f64,
        in_a_row: u32,
        run_s: f64,
    ) -> Vec<WindowRecovery> {
        let samples = Samples::new(0);
        let judged: Vec<Judged> = slos
            .iter()
            .map(|slo| Judged {
                slo,
                samples: &samples,
                per_second,
            })
            .collect();
        recoveries(
            merged,
            per_second,
            &judged,
            usual_error_share,
            in_a_row,
            run_s,
        )
    }

    fn second(second: u32, requests: u64, errors: u64, p99_ms: f64) -> SecondFigures {
        SecondFigures {
            second,
            requests,
            errors,
            timeouts: 0,
            p50_ms: Some(p99_ms / 2.0),
            p95_ms: Some(p99_ms),
            p99_ms: Some(p99_ms),
            offered: None,
            achieved: None,
        }
    }

    /// A 24 s run at 20 requests per second: healthy, failing from `bad_from` until `bad_until` (seconds).
    fn run(bad_from: u32, bad_until: u32) -> Vec<SecondFigures> {
        (0..24)
            .map(|s| {
                if (bad_from..bad_until).contains(&s) {
                    second(s, 20, 20, 4.0)
                } else {
                    second(s, 20, 0, 4.0)
                }
            })
            .collect()
    }

    fn window(from_s: f64, until_s: f64) -> ActiveWindow {
        ActiveWindow { from_s, until_s }
    }

    #[test]
    fn a_hold_down_recovers_at_the_first_run_of_n_good_seconds() {
        let slos = LatencySlo::defaults();
        // Failing from 5 s to 16 s: the 5 s window plus a hold-down that ends during second 15.
        let found = recoveries_of(&[window(5.0, 10.0)], &run(5, 16), &slos, 0.0, 3, 24.0);
        assert_eq!(found[0].detect_s, Some(0.0));
        assert_eq!(found[0].detected_at_second, Some(5));
        assert_eq!(
            found[0].broken_slos,
            ["99% @ 350ms".to_owned(), "95% @ 200ms".to_owned()]
        );
        assert_eq!(
            found[0].recovery,
            Recovery::Recovered {
                recover_s: 6.0,
                from_second: 16
            }
        );
        // A second too few at the end: no recovery is claimed.
        let short = recoveries_of(&[window(5.0, 10.0)], &run(5, 22), &slos, 0.0, 3, 24.0);
        assert_eq!(
            short[0].recovery,
            Recovery::NotRecovered {
                after_s: 14.0,
                next_window: false
            }
        );
    }

    #[test]
    fn a_slow_second_breaks_the_slo_by_its_p99_and_errors_must_be_back_to_the_usual_share() {
        let slos = [LatencySlo {
            objective: 90.0,
            threshold_ms: 100.0,
            request: None,
        }];
        let mut seconds = run(99, 99);
        seconds[7] = second(7, 20, 0, 150.0);
        // One error in 20 is within 10%: it holds the SLO, but the usual share is none, so it is not back.
        seconds[12] = second(12, 20, 1, 4.0);
        let found = recoveries_of(&[window(6.5, 10.0)], &seconds, &slos, 0.0, 3, 24.0);
        assert_eq!(found[0].detect_s, Some(0.5));
        assert_eq!(
            found[0].recovery,
            Recovery::Recovered {
                recover_s: 3.0,
                from_second: 13
            }
        );
        // With 5% of errors as usual, one in 20 is back.
        let usual = recoveries_of(&[window(6.5, 10.0)], &seconds, &slos, 0.05, 3, 24.0);
        assert_eq!(
            usual[0].recovery,
            Recovery::Recovered {
                recover_s: 0.0,
                from_second: 10
            }
        );
    }

    #[test]
    fn a_window_whose_service_has_not_recovered_when_the_next_begins_says_so() {
        let slos = LatencySlo::defaults();
        let windows = merge_windows([window(12.0, 14.0), window(3.0, 5.0), window(4.0, 6.0)]);
        assert_eq!(windows, [window(3.0, 6.0), window(12.0, 14.0)]);
        assert_eq!(phase_cuts(&windows, 24.0), [3.0, 6.0, 12.0, 14.0]);
        let found = recoveries_of(&windows, &run(3, 13), &slos, 0.0, 3, 24.0);
        assert_eq!(
            found[0].recovery,
            Recovery::NotRecovered {
                after_s: 6.0,
                next_window: true
            }
        );
        assert_eq!(found[1].detect_s, Some(0.0));
        assert_eq!(
            found[1].recovery,
            Recovery::Recovered {
                recover_s: 0.0,
                from_second: 14
            }
        );
        let held = recoveries_of(&[window(20.0, 24.0)], &run(20, 24), &slos, 0.0, 3, 24.0);
        assert_eq!(held[0].recovery, Recovery::HeldToTheEnd);
        assert!(phase_cuts(&[window(0.0, 24.0)], 24.0).is_empty());
    }

    #[test]
    fn a_window_is_described_in_one_sentence_stressed_in_markdown_where_it_did_not_recover() {
        let slos = LatencySlo::defaults();
        let found = recoveries_of(&[window(5.0, 10.0)], &run(5, 22), &slos, 0.0, 3, 24.0);
        let plain = found[0].describe(3).to_string();
        assert_eq!(
            plain,
            "Window 5–10 s: detected 0 s after its start (second 5 broke 99% @ 350ms and 95% @ 200ms); \
             did not recover: the run ended 14 s after the window without 3 seconds in a row within every SLO"
        );
        let markdown = found[0].describe(3).markdown().to_string();
        assert_eq!(
            markdown,
            plain.replace("did not recover", "**did not recover**")
        );
        let short = recoveries_of(&[window(1.5, 1.9)], &run(99, 99), &slos, 0.0, 3, 24.0);
        assert!(
            short[0]
                .describe(3)
                .to_string()
                .starts_with("Window 1.5–1.9 s (0.4 s, shorter than a second: ")
        );
    }
}
