//! The report of a `fault run` session (`--report`): what went through the proxy second by second and what
//! the faults did to it, from the proxy's own counters read once a second. There is no load generator here,
//! so there is no latency: the traffic is whoever called the proxy.

use std::{collections::BTreeMap, fmt::Write, time::Instant};

use serde::Serialize;

/// The proxy's counters at one moment, as the report reads them (the `fault run` command fills it from the
/// proxy's own statistics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProxyCounters {
    pub connections_total: u64,
    pub upstream_failures: u64,
    pub bytes_to_upstream: u64,
    pub bytes_to_client: u64,
    /// Chunks each fault kind acted on.
    pub faults_applied: BTreeMap<String, u64>,
}

/// One fault of the session and when it was active, in seconds from the start.
#[derive(Debug, Clone, Serialize)]
pub struct ProxyFaultInfo {
    pub description: String,
    /// Its active windows in time order (one from 0 to the end when it has no schedule).
    pub windows: Vec<ProxyWindow>,
}

/// A window during which a fault was active, in seconds from the start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProxyWindow {
    pub active_from_s: f64,
    /// `None`: until the end.
    pub active_until_s: Option<f64>,
}

/// What the proxy did in one second of the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProxySecond {
    pub second: u32,
    pub connections_opened: u64,
    pub bytes_to_upstream: u64,
    pub bytes_to_client: u64,
    /// Chunks the faults acted on, every fault together.
    pub fault_applications: u64,
}

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize)]
pub struct ProxyReport {
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    pub duration_s: f64,
    /// "LISTEN → UPSTREAM" per mapping.
    pub mappings: Vec<String>,
    pub faults: Vec<ProxyFaultInfo>,
    pub connections: u64,
    pub upstream_failures: u64,
    pub bytes_to_upstream: u64,
    pub bytes_to_client: u64,
    /// Chunks each fault kind acted on.
    pub fault_applications: BTreeMap<String, u64>,
    pub per_second: Vec<ProxySecond>,
}

/// Reads the proxy's counters once a second and keeps each second's difference.
#[derive(Debug)]
pub struct ProxySampler {
    started: Instant,
    started_at: chrono::DateTime<chrono::Utc>,
    last: ProxyCounters,
    per_second: Vec<ProxySecond>,
}

impl Default for ProxySampler {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            started_at: chrono::Utc::now(),
            last: ProxyCounters::default(),
            per_second: Vec::new(),
        }
    }
}

fn applications(stats: &ProxyCounters) -> u64 {
    stats.faults_applied.values().sum()
}

impl ProxySampler {
    /// Records what changed since the last sample as the next second.
    pub fn sample(&mut self, stats: &ProxyCounters) {
        let last = &self.last;
        self.per_second.push(ProxySecond {
            second: self.per_second.len() as u32,
            connections_opened: stats
                .connections_total
                .saturating_sub(last.connections_total),
            bytes_to_upstream: stats
                .bytes_to_upstream
                .saturating_sub(last.bytes_to_upstream),
            bytes_to_client: stats.bytes_to_client.saturating_sub(last.bytes_to_client),
            fault_applications: applications(stats).saturating_sub(applications(last)),
        });
        self.last = stats.clone();
    }

    /// The report of the session, whose last counters are `stats`.
    pub fn report(
        mut self,
        stats: &ProxyCounters,
        mappings: Vec<String>,
        faults: Vec<ProxyFaultInfo>,
    ) -> ProxyReport {
        if stats != &self.last {
            self.sample(stats);
        }
        ProxyReport {
            title: "Fault Proxy Report".into(),
            started_at: self.started_at.to_string(),
            ended_at: chrono::Utc::now().to_string(),
            duration_s: crate::report::round2(self.started.elapsed().as_secs_f64()),
            mappings,
            faults,
            connections: stats.connections_total,
            upstream_failures: stats.upstream_failures,
            bytes_to_upstream: stats.bytes_to_upstream,
            bytes_to_client: stats.bytes_to_client,
            fault_applications: stats.faults_applied.clone(),
            per_second: self.per_second,
        }
    }
}

/// Renders the report as markdown.
pub fn render(report: &ProxyReport) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &ProxyReport) -> std::fmt::Result {
    writeln!(out, "# {}\n", report.title)?;
    writeln!(out, "Start: {}\n", report.started_at)?;
    writeln!(out, "End: {} ({} s)\n", report.ended_at, report.duration_s)?;
    writeln!(out, "**Proxies**:\n")?;
    for mapping in &report.mappings {
        writeln!(out, "- {mapping}")?;
    }
    writeln!(out, "\n**Faults**:\n")?;
    if report.faults.is_empty() {
        writeln!(out, "- none (pass-through)")?;
    }
    for fault in &report.faults {
        let windows: Vec<String> = fault
            .windows
            .iter()
            .map(|w| {
                let until = w
                    .active_until_s
                    .map_or("the end".to_owned(), |s| format!("{s} s"));
                format!("from {} s to {until}", w.active_from_s)
            })
            .collect();
        writeln!(
            out,
            "- {} (active {})",
            fault.description,
            windows.join(", ")
        )?;
    }
    writeln!(
        out,
        "\n| Connections | Upstream failures | Bytes to upstream | Bytes to clients | Fault applications |"
    )?;
    writeln!(out, "|---|---|---|---|---|")?;
    let applied: Vec<String> = report
        .fault_applications
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    writeln!(
        out,
        "| {} | {} | {} | {} | {} |",
        report.connections,
        report.upstream_failures,
        report.bytes_to_upstream,
        report.bytes_to_client,
        if applied.is_empty() {
            "0".to_owned()
        } else {
            applied.join(", ")
        }
    )?;
    writeln!(
        out,
        "\n_A fault application is one chunk a fault acted on (delayed, dropped, replaced or closed on)._"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_second_holds_what_changed_in_it() {
        let mut sampler = ProxySampler::default();
        let mut stats = ProxyCounters {
            connections_total: 3,
            faults_applied: BTreeMap::from([("latency".to_owned(), 5)]),
            ..ProxyCounters::default()
        };
        sampler.sample(&stats);
        stats.connections_total = 4;
        stats.faults_applied.insert("latency".into(), 9);
        let report = sampler.report(&stats, vec![], vec![]);
        let opened: Vec<u64> = report
            .per_second
            .iter()
            .map(|s| s.connections_opened)
            .collect();
        let applied: Vec<u64> = report
            .per_second
            .iter()
            .map(|s| s.fault_applications)
            .collect();
        assert_eq!((opened, applied), (vec![3, 1], vec![5, 4]));
        assert!(render(&report).contains("| 4 | 0 | 0 | 0 | latency 9 |"));
    }
}
