//! The fields every scenario shares around its faults: the SLOs and the rest of the common fields.

use std::time::Duration;

use rmcp::model::JsonObject;

use super::super::scenario_fields as fields;
use crate::{
    fields::{FieldInput, closest},
    impact::{self, Engine, ImpactSpec, Limits},
    load::Mix,
    proxy::TcpFault,
    report::{chart::page_file::PageFile, impact::LatencySlo},
};

use super::*;
use super::{
    engine::{read_engine, read_metrics, workers_as_object},
    files::output_file,
    traffic::{read_mix, read_pace},
};

/// The SLOs (the defaults when none is given), each naming a request of `mix` or none.
pub(in crate::mcp) fn read_slos(
    input: &FieldInput,
    mix: &Mix,
    engine: &Engine,
) -> Result<Vec<LatencySlo>, InputError> {
    let rows = input.objects(&fields::SLOS)?;
    if rows.is_empty() {
        return Ok(LatencySlo::defaults());
    }
    // A locustfile names its own requests: they are known only once Locust reports them.
    let open_names = matches!(engine, Engine::Locust(plan) if plan.locustfile.is_some());
    let names: Vec<&str> = mix.requests().iter().map(|r| r.name.as_str()).collect();
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            let request = Some(row.text(&fields::SLO_REQUEST)?.trim().to_owned())
                .filter(|name| !name.is_empty());
            if let Some(name) = &request
                && !open_names
                && !names.contains(&name.as_str())
            {
                let hint = closest(name, names.iter().copied())
                    .map(|close| format!(" (did you mean '{close}'?)"))
                    .unwrap_or_default();
                return Err(bad(
                    format!("slos[{index}].request"),
                    format!(
                        "'{name}' names no request of the mix{hint}; the requests are {}",
                        names.join(", ")
                    ),
                ));
            }
            Ok(LatencySlo {
                objective: row.number(&fields::SLO_OBJECTIVE)?,
                threshold_ms: row.number(&fields::SLO_THRESHOLD)?,
                request,
            })
        })
        .collect()
}

/// The scenario around `faults`, read from the common fields of `args`; `sched_field` names the `sched` field
/// of the fault at an index. The HTML page's file, when asked for, is created last, once all else is accepted.
pub(in crate::mcp) fn read_common(
    args: &JsonObject,
    faults: Vec<TcpFault>,
    sched_field: impl Fn(usize) -> String,
    limits: &Limits,
) -> Result<(ImpactSpec, RunFiles), InputError> {
    let args = workers_as_object(args);
    let input = fields::input(&args);
    let engine = read_engine(&input, limits)?;
    let seed = input
        .json(&fields::SEED)?
        .map(|value| crate::seeded::seed_from_json(&value))
        .transpose()
        .map_err(|e| bad("seed", e.to_string()))?;
    let mix = read_mix(&input, seed.unwrap_or_else(rand::random))?;
    let num_clients = input.whole(&fields::NUM_CLIENTS)? as u32;
    let (pace, duration) = read_pace(&input, num_clients, limits)?;
    if matches!(engine, Engine::Locust(_))
        && !input.has(&fields::PROXIES)
        && mix.first().target.is_tls()
    {
        return Err(bad(
            "url",
            "is https://, and Locust's users would reach it through fault's proxy on 127.0.0.1, whose address \
             the service's certificate does not name: with `load.engine` locust, give `proxies` (the faults \
             on the service's upstream) or an http:// URL",
        ));
    }
    let timeout = Duration::from_secs_f64(input.number(&fields::TIMEOUT)?);
    let proxies = input
        .texts(&fields::PROXIES)?
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let field = format!("proxies[{i}]");
            let mapping = impact::parse_mapping(text).map_err(|e| bad(&field, e.to_string()))?;
            if !mapping.listen.ip().is_loopback() && !limits.allow_public_proxies {
                return Err(bad(
                    field,
                    format!(
                        "listen address {} is not loopback; scenario proxies listen on 127.0.0.1 or \
                         ::1 only (e.g. \"34000=127.0.0.1:8080\"), unless the server is started with \
                         `fault agent tool --allow-public-proxies`",
                        mapping.listen.ip()
                    ),
                ));
            }
            Ok(mapping)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let slos = read_slos(&input, &mix, &engine)?;
    let metrics = read_metrics(&input, limits)?;
    let spec = ImpactSpec {
        mix,
        num_clients,
        pace,
        duration,
        timeout,
        proxies,
        faults,
        slos,
        seed,
        baseline: input.switch(&fields::BASELINE)?,
        recovery_seconds: input.whole(&fields::RECOVERY_SECONDS)? as u32,
        engine,
        metrics,
    };
    // Each window must fit the run: checked now, against `duration`, before anything starts.
    spec.fault_windows()
        .map_err(|(index, e)| bad(sched_field(index), e.to_string()))?;
    let path = |field| -> Result<Option<String>, InputError> {
        Ok(Some(input.text(field)?).filter(|path| !path.is_empty()))
    };
    let (page, result) = (path(&fields::REPORT_PATH)?, path(&fields::RESULT_PATH)?);
    let page = output_file("report_path", page)?;
    let result = match output_file("result_path", result) {
        Ok(result) => result,
        Err(e) => {
            page.into_iter().for_each(PageFile::discard);
            return Err(e);
        }
    };
    Ok((spec, RunFiles { page, result }))
}
