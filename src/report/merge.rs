//! `fault report merge A.json B.json …`: results of one impact scenario from several runs or machines, added
//! up exactly and judged again. Each result carries what its report was built from ([`ReportData`]): the
//! histograms are added (HdrHistogram's addition, bucket by bucket), the counts summed (per second of the run,
//! per phase, per request of the mix; the faults' applications, the proxies' counters, the upstream counts),
//! and the merged samples go through the one report builder ([`impact::build`]), so that SLOs, phases and
//! recovery are judged on the merged data as a single run's would be. The runs count as side by side: second
//! *s* of the merged run holds second *s* of each, the elapsed time is the longest run's, and the clients add
//! up.
//!
//! Results of different scenarios are refused, naming the file and what differs: the call (URL, method,
//! headers, body, timeout), the load's shape other than its clients (duration, rate), the faults and their
//! windows, the SLOs, `recovery_seconds`, the requests of the mix, a baseline in one and not in another.

use std::{
    collections::BTreeSet,
    io::Write,
    path::{Path, PathBuf},
};

use serde_json::Value;

use super::{
    chart::page::impact_page,
    chart::page_file::PageFile,
    impact::{
        self, EngineInfo, ProxyFigures, Report, ReportInput, RequestInfo, StreamFigures,
        UpstreamCounts, UpstreamTally,
        data::{ReportData, RunDataError},
    },
    result::{ResultError, read_result},
};
use crate::{
    files::create_output,
    load::{LoadReport, RequestSamples},
};

/// `fault report merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Impact results (JSON, as the scenario tools return them in structuredContent) of the same scenario:
    /// at least two.
    #[arg(value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Also write the merged report as markdown to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write the merged report as a standalone HTML page (its charts and figures) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the merged result (JSON) to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(
        "fault report merge takes at least two results of the same scenario, {0} given; e.g. fault report \
         merge a.json b.json"
    )]
    TooFew(usize),
    #[error(transparent)]
    Result(#[from] ResultError),
    #[error("{path} is not a result of the same scenario as {first}: {what}")]
    Different {
        path: PathBuf,
        first: PathBuf,
        what: String,
    },
    #[error("{path}: {source}")]
    Data {
        path: PathBuf,
        #[source]
        source: RunDataError,
    },
    #[error("--markdown: {0}")]
    Markdown(String),
    #[error("--html: {0}")]
    Html(String),
    #[error("--output: {0}")]
    Output(String),
}

/// Runs `fault report merge`: the merged result on stdout (or `--output`), and the renderings asked for.
pub fn run(args: &MergeArgs) -> Result<(), MergeError> {
    let report = merge_files(&args.results)?;
    if let Some(path) = &args.markdown {
        write_text(path, &impact::render(&report)).map_err(MergeError::Markdown)?;
    }
    if let Some(path) = &args.html {
        let file = PageFile::create(path).map_err(|e| MergeError::Html(e.to_string()))?;
        let page = impact_page(&report).map_err(|e| MergeError::Html(e.to_string()))?;
        file.write(&page)
            .map_err(|e| MergeError::Html(e.to_string()))?;
    }
    match &args.output {
        Some(path) => super::result::write_result(&report, path)
            .map_err(|e| MergeError::Output(e.to_string()))?,
        None => {
            let json = serde_json::to_string_pretty(&report).map_err(ResultError::from)?;
            let mut out = std::io::stdout().lock();
            // A closed stdout (`| head`) is the reader's choice, not an error of the merge.
            let _ = writeln!(out, "{json}");
        }
    }
    Ok(())
}

fn write_text(path: &Path, text: &str) -> Result<(), String> {
    let mut file = create_output(path).map_err(|e| e.to_string())?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The results in the files `paths`, merged.
pub fn merge_files(paths: &[PathBuf]) -> Result<Report, MergeError> {
    if paths.len() < 2 {
        return Err(MergeError::TooFew(paths.len()));
    }
    let results = paths
        .iter()
        .map(|path| Ok((path.clone(), read_result(path)?)))
        .collect::<Result<Vec<_>, MergeError>>()?;
    merge(&results)
}

/// `results` (each with the file it came from), merged into one report.
pub fn merge(results: &[(PathBuf, Report)]) -> Result<Report, MergeError> {
    let Some(((first_path, first), rest)) = results.split_first() else {
        return Err(MergeError::TooFew(0));
    };
    if rest.is_empty() {
        return Err(MergeError::TooFew(1));
    }
    let reference = identity(first);
    for (path, report) in rest {
        if let Some(what) = difference(&reference, &identity(report), first_path) {
            return Err(MergeError::Different {
                path: path.clone(),
                first: first_path.clone(),
                what,
            });
        }
    }
    let runs = |pick: fn(&ReportData) -> Option<&super::impact::data::RunData>, at: &str| {
        results
            .iter()
            .filter_map(|(path, report)| {
                pick(&report.data).map(|run| {
                    run.load_report(at).map_err(|source| MergeError::Data {
                        path: path.clone(),
                        source,
                    })
                })
            })
            .collect::<Result<Vec<LoadReport>, MergeError>>()
    };
    let mut run = add_runs(runs(|data| Some(&data.run), "data.run")?);
    if is_passthrough(first) {
        // Every second of the longest run, in every group.
        let seconds = run.samples.per_second.len();
        for request in &mut run.per_request {
            request
                .samples
                .per_second
                .resize_with(seconds, crate::load::SecondSamples::new);
        }
    }
    let baseline = runs(|data| data.baseline.as_ref(), "data.baseline")?;
    let baseline = (!baseline.is_empty()).then(|| add_runs(baseline));
    let reports: Vec<&Report> = results.iter().map(|(_, report)| report).collect();
    let mut strategy = first.strategy.clone();
    strategy.num_clients = reports.iter().map(|r| r.strategy.num_clients).sum();
    strategy.duration_s = reports
        .iter()
        .map(|r| r.strategy.duration_s)
        .fold(strategy.duration_s, f64::max);
    let mut faults = first.faults.clone();
    for (index, fault) in faults.iter_mut().enumerate() {
        let each = || reports.iter().map(move |r| &r.faults[index]);
        fault.applications = each().map(|f| f.applications).sum();
        let places: BTreeSet<&str> = each().map(|f| f.applied_on.as_str()).collect();
        fault.applied_on = places.into_iter().collect::<Vec<_>>().join("; ");
    }
    let input = ReportInput {
        call: first.call.clone(),
        // A proxy's groups are whatever passed through each proxy: the merged run's, whoever saw them.
        requests: if is_passthrough(first) {
            run.per_request
                .iter()
                .map(|group| RequestInfo::observed(&group.name))
                .collect()
        } else {
            first
                .requests
                .iter()
                .map(|request| RequestInfo {
                    name: request.name.clone(),
                    method: request.method.clone(),
                    url: request.url.clone(),
                    weight: request.weight,
                    expect: request.expect.clone(),
                    headers: request.headers.clone(),
                    has_body: request.has_body,
                })
                .collect()
        },
        strategy,
        faults,
        slos: first.data.slos.clone(),
        recovery_seconds: first.recovery_seconds,
        upstream: reports
            .iter()
            .map(|r| r.data.upstream_counts())
            .collect::<Option<Vec<_>>>()
            .map(add_upstream),
    };
    let proxy = reports
        .iter()
        .map(|r| r.proxy.clone())
        .collect::<Option<Vec<_>>>();
    let merged = impact::build(input, &run, baseline.as_ref());
    let merged = match proxy {
        Some(proxies) => merged.with_proxy(add_proxies(&proxies)),
        None => merged,
    };
    let engines = reports
        .iter()
        .map(|r| r.engine.as_ref())
        .collect::<Option<Vec<_>>>();
    Ok(match engines {
        Some(engines) if !engines.is_empty() => merged.with_engine(add_engines(&engines)),
        _ => merged,
    })
}

/// The engines of runs side by side: their users added, their workers together, each one's share of them all.
fn add_engines(engines: &[&EngineInfo]) -> EngineInfo {
    let mut merged = engines[0].clone();
    merged.users = engines.iter().map(|e| e.users).sum();
    merged.workers = engines.iter().flat_map(|e| e.workers.clone()).collect();
    let total: u64 = merged.workers.iter().map(|w| w.requests).sum();
    for worker in &mut merged.workers {
        worker.percent = crate::report::percent(worker.requests, total);
    }
    merged
}

/// Whether `report` is a proxy's measure of whatever passed through it (`fault run --result`).
fn is_passthrough(report: &Report) -> bool {
    report.call.method == impact::PASSTHROUGH_METHOD
}

/// One part of what makes two results the same scenario: what it is called in a refusal, where it is in the
/// result, and its JSON.
struct Part {
    differs: &'static str,
    at: &'static str,
    value: Value,
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    // The report's parts always encode; a part that did not would compare as null.
    serde_json::to_value(value).unwrap_or_default()
}

/// What makes two results the same scenario: everything of the call, the load's shape but its clients, the
/// faults but where and how often they acted, the SLOs, `recovery_seconds`, the requests of the mix and
/// whether there is a baseline.
fn identity(report: &Report) -> Vec<Part> {
    // A proxy's result (`fault run --result`) measured whatever passed: proxies stopped at different times,
    // and saw different requests, are still parts of one run.
    let passthrough = is_passthrough(report);
    let mut strategy = json(&report.strategy);
    if let Value::Object(fields) = &mut strategy {
        fields.remove("num_clients");
        if passthrough {
            fields.remove("duration_s");
        }
    }
    let mut faults = json(&report.faults);
    if let Value::Array(faults) = &mut faults {
        for fault in faults {
            if let Value::Object(fields) = fault {
                fields.remove("applications");
                fields.remove("applied_on");
            }
        }
    }
    let requests: Vec<&str> = if passthrough {
        Vec::new()
    } else {
        report
            .data
            .run
            .per_request
            .iter()
            .map(|request| request.name.as_str())
            .collect()
    };
    let part = |differs, at, value| Part { differs, at, value };
    vec![
        part("the call differs", "call", json(&report.call)),
        part("the load differs", "strategy", strategy),
        part("the faults differ", "faults", faults),
        part("the SLOs differ", "data.slos", json(&report.data.slos)),
        part(
            "recovery_seconds differs",
            "recovery_seconds",
            json(&report.recovery_seconds),
        ),
        part(
            "the requests of the mix differ",
            "data.run.per_request[].name",
            json(&requests),
        ),
        part(
            "one has a baseline run and the other not",
            "data.baseline",
            Value::Bool(report.data.baseline.is_some()),
        ),
    ]
}

/// Where `theirs` differs from `ours` (read from `first`), in words; `None` when they are the same scenario.
fn difference(ours: &[Part], theirs: &[Part], first: &Path) -> Option<String> {
    ours.iter().zip(theirs).find_map(|(mine, other)| {
        let (at, a, b) = first_difference(&mine.value, &other.value, String::new())?;
        Some(format!(
            "{}: {}{at} is {b} there and {a} in {}",
            mine.differs,
            mine.at,
            first.display()
        ))
    })
}

/// The first place where `a` and `b` differ: its path (`.url`, `[0].windows[1].from_s`) and both values.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<(String, String, String)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|key| {
                let none = Value::Null;
                first_difference(
                    x.get(key).unwrap_or(&none),
                    y.get(key).unwrap_or(&none),
                    format!("{at}.{key}"),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (a, b))| first_difference(a, b, format!("{at}[{i}]"))),
        (Value::Array(x), Value::Array(y)) => Some((
            at,
            format!("{} items", x.len()),
            format!("{} items", y.len()),
        )),
        _ if a == b => None,
        _ => Some((at, a.to_string(), b.to_string())),
    }
}

/// Runs of one scenario added up as if side by side.
fn add_runs(runs: Vec<LoadReport>) -> LoadReport {
    let mut runs = runs.into_iter();
    let Some(mut total) = runs.next() else {
        unreachable!("merge reads at least two results")
    };
    for run in runs {
        total.started_at = total.started_at.min(run.started_at);
        total.ended_at = total.ended_at.max(run.ended_at);
        total.elapsed = total.elapsed.max(run.elapsed);
        total.planned = total.planned.zip(run.planned).map(|(a, b)| a + b);
        total.connections_opened += run.connections_opened;
        total.cut_short |= run.cut_short;
        add_series(&mut total.offered_per_second, &run.offered_per_second);
        total.samples.merge(&run.samples);
        // The mixes are the same (checked by name, in order), or, for proxies, matched by name.
        for theirs in &run.per_request {
            match total
                .per_request
                .iter_mut()
                .find(|mine| mine.name == theirs.name)
            {
                Some(RequestSamples { samples, .. }) => samples.merge(&theirs.samples),
                None => total.per_request.push(theirs.clone()),
            }
        }
    }
    total
}

/// `series` plus `other`, element by element (the longer one's length).
fn add_series(series: &mut Vec<u64>, other: &[u64]) {
    if series.len() < other.len() {
        series.resize(other.len(), 0);
    }
    for (mine, theirs) in series.iter_mut().zip(other) {
        *mine += theirs;
    }
}

fn add_tally(a: UpstreamTally, b: UpstreamTally) -> UpstreamTally {
    UpstreamTally {
        connections: a.connections + b.connections,
        requests: a.requests + b.requests,
    }
}

fn add_tallies(series: &mut Vec<UpstreamTally>, other: &[UpstreamTally]) {
    if series.len() < other.len() {
        series.resize(other.len(), UpstreamTally::default());
    }
    for (mine, theirs) in series.iter_mut().zip(other) {
        *mine = add_tally(*mine, *theirs);
    }
}

fn add_upstream(counts: Vec<UpstreamCounts>) -> UpstreamCounts {
    counts
        .into_iter()
        .reduce(|mut total, counts| {
            add_tallies(&mut total.per_second, &counts.per_second);
            add_tallies(&mut total.per_phase, &counts.per_phase);
            total.total = add_tally(total.total, counts.total);
            total.requests_counted &= counts.requests_counted;
            total
        })
        .unwrap_or_default()
}

fn add_proxies(proxies: &[ProxyFigures]) -> ProxyFigures {
    proxies
        .iter()
        .fold(ProxyFigures::default(), |total, proxy| ProxyFigures {
            connections: total.connections + proxy.connections,
            upstream_failures: total.upstream_failures + proxy.upstream_failures,
            bytes_to_upstream: total.bytes_to_upstream + proxy.bytes_to_upstream,
            bytes_to_client: total.bytes_to_client + proxy.bytes_to_client,
            fault_applications: total.fault_applications + proxy.fault_applications,
            other_streams: add_streams(total.other_streams, proxy.other_streams.as_ref()),
        })
}

/// Streams of several proxies: counts and bytes summed; of their durations, the longest of each figure (the
/// durations themselves are not kept).
fn add_streams(
    total: Option<StreamFigures>,
    more: Option<&StreamFigures>,
) -> Option<StreamFigures> {
    match (total, more) {
        (None, more) => more.cloned(),
        (total, None) => total,
        (Some(a), Some(b)) => Some(StreamFigures {
            connections: a.connections + b.connections,
            bytes_to_upstream: a.bytes_to_upstream + b.bytes_to_upstream,
            bytes_to_client: a.bytes_to_client + b.bytes_to_client,
            duration_p50_ms: a.duration_p50_ms.max(b.duration_p50_ms),
            duration_p95_ms: a.duration_p95_ms.max(b.duration_p95_ms),
            duration_max_ms: a.duration_max_ms.max(b.duration_max_ms),
        }),
    }
}
