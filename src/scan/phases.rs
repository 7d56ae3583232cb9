//! The phases that call the server, each a method of the running scan: baseline, saturation (with
//! head-of-line blocking), contract and faults. Each keeps to the scan's time, counts its calls, and adds its
//! findings and figures.

use std::{sync::atomic::Ordering, time::Duration};

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::{
    Phase, ScanError,
    calls::{Reply, call},
    cases, contract, faults,
    finding::{Finding, Kind, Severity},
    load,
    run::{Chosen, Scan},
    session::START_TIMEOUT,
    verdict,
};
use crate::mcp_chaos::Connection;

/// A tool whose baseline p50 is at least this is checked for holding up other calls.
const SLOW_TOOL_MS: f64 = 20.0;

fn fmt_ms(value: Option<f64>) -> String {
    value.map_or("n/a".to_owned(), |v| format!("{v:.0}"))
}

impl Scan<'_> {
    /// Each tool called `samples` times, one at a time; results judged against their outputSchema.
    pub async fn baseline(&mut self) -> Result<(), ScanError> {
        let (spec, at) = (self.spec, Instant::now());
        let mut count = 0;
        self.progress.set_note("baseline".to_owned());
        for index in 0..self.chosen.len() {
            if self.out_of_time(Phase::Baseline) {
                break;
            }
            let connection = self.target.client().await?;
            let schemas = connection.schemas().clone();
            let tool = &self.chosen[index];
            let made = load::baseline(
                connection.client(),
                &schemas,
                &tool.name,
                &tool.arguments,
                spec.samples,
                spec.call_timeout,
                self.deadline,
            )
            .await;
            let reproduce = spec.reproduce(&tool.name, Phase::Baseline);
            let mut found = load::baseline_findings(
                &tool.name,
                &made.calls,
                &tool.figures.arguments_from,
                spec.call_timeout,
                &reproduce,
            );
            if let Some(first) = made.against_schema.first() {
                let why = match &first.reply {
                    Reply::Result(result) => schemas.explain(&tool.name, result),
                    _ => None,
                };
                found.push(
                    Finding::new(Phase::Baseline, Kind::OutputAgainstSchema, Severity::Major, Some(&tool.name), None)
                        .title(format!(
                            "`{}` answers against its own outputSchema ({} of {} results){}",
                            tool.name,
                            made.against_schema.len(),
                            made.checked_against_schema,
                            why.as_ref().map_or(String::new(), |w| format!(": {w}"))
                        ))
                        .fix("Make `structuredContent` match the declared outputSchema (types, required members), or correct the schema: clients that validate results reject these answers.")
                        .evidence(&first.params, first.reply.describe(spec.call_timeout))
                        .with_reproduce(&reproduce),
                );
            }
            if (made.calls.len() as u64) < spec.samples && Instant::now() >= self.deadline {
                self.stop(Phase::Baseline);
            }
            count += made.calls.len() as u64;
            self.progress
                .completed
                .fetch_add(made.calls.len() as u64, Ordering::Relaxed);
            self.output.0 += made.checked_against_schema;
            self.output.1 += made.against_schema.len() as u64;
            self.findings.extend(found);
            if made.calls.iter().any(|c| matches!(c.reply, Reply::Closed)) {
                self.target.lost().await;
            }
            self.chosen[index].figures.baseline = Some(load::Latency::of(&made.calls));
        }
        self.ran(Phase::Baseline, count, at, None);
        Ok(())
    }

    /// Each tool at 1, 2, 4 … `max_in_flight` calls in flight until goodput stops rising; then each slow
    /// tool's call in flight while the fastest tool is called.
    pub async fn saturation(&mut self) -> Result<(), ScanError> {
        let (spec, at) = (self.spec, Instant::now());
        let mut count = 0;
        self.progress.set_note("saturation".to_owned());
        let mut skipped = Vec::new();
        for index in 0..self.chosen.len() {
            if self.out_of_time(Phase::Saturation) {
                break;
            }
            let tool = &self.chosen[index];
            if tool.figures.baseline.as_ref().is_some_and(|b| b.ok == 0) {
                skipped.push(tool.name.clone());
                continue;
            }
            let client = self.target.client().await?.client().clone();
            let tool = &self.chosen[index];
            let measured = load::saturation(
                &client,
                &tool.name,
                &tool.arguments,
                spec.max_in_flight,
                spec.call_timeout,
                self.deadline,
            )
            .await;
            let made: u64 = measured.steps.iter().map(|s| s.calls).sum();
            count += made;
            self.progress.completed.fetch_add(made, Ordering::Relaxed);
            let first_p50 = measured.steps.first().and_then(|s| s.p50_ms).unwrap_or(0.0);
            if measured.plateau
                && measured.peak_in_flight < self.policy.min_in_flight
                && first_p50 >= verdict::SLOW_ENOUGH_MS
            {
                let last = measured.steps.last();
                let finding = Finding::new(Phase::Saturation, Kind::Saturates, Severity::Major, Some(&tool.name), None)
                    .title(format!(
                        "`{}` stops gaining beyond {} in flight ({:.0} calls/s); past it, calls queue (p95 {} → {} ms at {} in flight)",
                        tool.name,
                        measured.peak_in_flight,
                        measured.peak_goodput,
                        fmt_ms(measured.steps.first().and_then(|s| s.p95_ms)),
                        fmt_ms(last.and_then(|s| s.p95_ms)),
                        last.map_or(0, |s| s.in_flight),
                    ))
                    .fix(format!(
                        "Find what lets only {} calls of `{}` run at once (a pool, a semaphore, a lock, a single worker) and raise it, or make each call cheaper; the policy expects at least {} in flight.",
                        measured.peak_in_flight, tool.name, self.policy.min_in_flight
                    ))
                    .with_reproduce(&spec.reproduce(&tool.name, Phase::Saturation));
                self.findings.push(finding);
            }
            let cut = !measured.plateau
                && measured
                    .steps
                    .last()
                    .is_some_and(|s| s.in_flight < spec.max_in_flight)
                && Instant::now() >= self.deadline;
            if cut {
                self.stop(Phase::Saturation);
            }
            self.chosen[index].figures.saturation = Some(measured);
        }
        count += self.head_of_line().await?;
        let note = (!skipped.is_empty()).then(|| {
            format!(
                "not measured (no baseline call succeeded): {}",
                skipped.join(", ")
            )
        });
        self.ran(Phase::Saturation, count, at, note);
        Ok(())
    }

    /// One call of each slow tool in flight while the fastest other tool is called; the calls made.
    async fn head_of_line(&mut self) -> Result<u64, ScanError> {
        let p50 = |t: &Chosen| t.figures.baseline.as_ref().and_then(|b| b.p50_ms);
        let Some((fastest, fast_p50)) = self
            .chosen
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i, p50(t)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(0);
        };
        let mut count = 0;
        for slow in 0..self.chosen.len() {
            let Some(slow_p50) = p50(&self.chosen[slow]) else {
                continue;
            };
            if slow_p50 < SLOW_TOOL_MS || slow == fastest || self.out_of_time(Phase::Saturation) {
                continue;
            }
            let client = self.target.client().await?.client().clone();
            let (slow, fast) = (&self.chosen[slow], &self.chosen[fastest]);
            let lead = Duration::from_secs_f64((slow_p50 / 4.0).min(20.0) / 1000.0);
            let held = load::held_up(
                &client,
                (&slow.name, &slow.arguments),
                (&fast.name, &fast.arguments),
                lead,
                self.spec.call_timeout,
            )
            .await;
            count += 1 + held.during.len() as u64;
            let waited = held.during.iter().map(|c| c.elapsed_ms).fold(0.0, f64::max);
            let bound = (5.0 * fast_p50).max(0.5 * slow_p50).max(fast_p50 + 10.0);
            if waited < bound {
                continue;
            }
            let mut found = Finding::new(Phase::Saturation, Kind::HeadOfLine, Severity::Major, Some(&slow.name), None)
                .title(format!(
                    "while one call of `{}` runs ({:.0} ms), a call of `{}` waits: {:.0} ms against {:.1} ms alone",
                    slow.name, held.slow.elapsed_ms, fast.name, waited, fast_p50
                ))
                .fix(format!(
                    "Let other calls run while `{}` works: do not hold a server-wide lock or block the event loop for the whole call (move the work to a worker, narrow the lock to the shared state it protects).",
                    slow.name
                ))
                .with_reproduce(&self.spec.reproduce(&slow.name, Phase::Saturation));
            if let Some(worst) = held
                .during
                .iter()
                .max_by(|a, b| a.elapsed_ms.total_cmp(&b.elapsed_ms))
            {
                found = found.evidence(
                    &worst.params,
                    format!(
                        "answered after {:.0} ms, while `{}` was in flight",
                        worst.elapsed_ms, slow.name
                    ),
                );
            }
            self.findings.push(found);
        }
        Ok(count)
    }

    /// Each tool's contract cases, one call each; a crashed or stuck server is started again.
    pub async fn contract(&mut self) -> Result<(), ScanError> {
        let (spec, at) = (self.spec, Instant::now());
        let mut count = 0;
        self.progress.set_note("contract".to_owned());
        let mut tally = contract::ContractTally::default();
        'tools: for index in 0..self.chosen.len() {
            let tool = &self.chosen[index];
            let schema = tool
                .listing
                .get("inputSchema")
                .cloned()
                .unwrap_or(json!({}));
            let base: Map<String, Value> = tool.arguments.as_object().cloned().unwrap_or_default();
            let (name, reproduce) = (
                tool.name.clone(),
                spec.reproduce(&tool.name, Phase::Contract),
            );
            for case in cases::cases(&schema, &base) {
                if self.out_of_time(Phase::Contract) {
                    break 'tools;
                }
                let client = self.target.client().await?.client().clone();
                let made = call(&client, &name, &case.arguments, spec.call_timeout).await;
                count += 1;
                self.progress.completed.fetch_add(1, Ordering::Relaxed);
                self.chosen[index].figures.contract_cases += 1;
                let (outcome, found) =
                    contract::judge(&name, &case, &made, spec.call_timeout, &reproduce);
                tally.add(&case, outcome);
                self.findings.extend(found);
                if matches!(made.reply, Reply::Closed | Reply::Hang) {
                    // A crashed server, or one that may still be stuck on the case: the next call gets a new one.
                    self.target.lost().await;
                }
            }
        }
        self.tally = Some(tally);
        self.ran(Phase::Contract, count, at, None);
        Ok(())
    }

    /// Each tool through `fault mcp-proxy` losing replies, retried within the scan's budget; writes checked
    /// against the server's state.
    pub async fn faults(&mut self) -> Result<(), ScanError> {
        let (spec, at) = (self.spec, Instant::now());
        let mut count = 0;
        self.progress.set_note("faults".to_owned());
        self.target.lost().await;
        let verify_tool = match &spec.verify {
            Some(faults::Verify::Tool { tool, .. }) => Some(tool.as_str()),
            _ => None,
        };
        let faulted: Vec<usize> = (0..self.chosen.len())
            .filter(|&i| Some(self.chosen[i].name.as_str()) != verify_tool)
            .filter(|&i| {
                let baseline = self.chosen[i].figures.baseline.as_ref();
                baseline.is_none_or(|b| b.ok > 0)
            })
            .collect();
        let names: Vec<String> = faulted
            .iter()
            .map(|&i| self.chosen[i].name.clone())
            .collect();
        let plan = faults::plan(&names).map_err(ScanError::Verify)?;
        let connection = Connection::open(&spec.server, plan, START_TIMEOUT, self.cancel).await?;
        let mut notes = Vec::new();
        for index in faulted {
            if self.out_of_time(Phase::Faults) {
                break;
            }
            let tool = &self.chosen[index];
            let verify = (!tool.figures.read_only)
                .then_some(spec.verify.as_ref())
                .flatten();
            if !tool.figures.read_only && verify.is_none() {
                notes.push(format!(
                    "`{}` writes: give `verify` or `verify_command` to check its effects",
                    tool.name
                ));
            }
            let outcome = faults::run_tool(
                connection.client(),
                (&tool.name, &tool.arguments),
                spec.fault_calls,
                verify,
                (spec.call_timeout, self.deadline),
                &spec.reproduce(&tool.name, Phase::Faults),
            )
            .await;
            let (figures, found) = match outcome {
                Ok(done) => done,
                Err(e) => {
                    connection.close().await;
                    return Err(ScanError::Verify(e));
                }
            };
            if figures.logical_calls < spec.fault_calls {
                self.stop(Phase::Faults);
            }
            count += figures.attempts + 2 * figures.verified;
            self.progress
                .completed
                .fetch_add(figures.attempts, Ordering::Relaxed);
            self.findings.extend(found);
            self.faults.push(figures);
        }
        connection.close().await;
        let note = format!(
            "{:.0} % of replies lost (seed {}), each call retried up to {} times: the scan's budget{}",
            faults::LOST_REPLY_PROBABILITY * 100.0,
            faults::SEED,
            faults::RETRIES,
            if notes.is_empty() {
                String::new()
            } else {
                format!("; {}", notes.join("; "))
            }
        );
        self.ran(Phase::Faults, count, at, Some(note));
        Ok(())
    }
}
