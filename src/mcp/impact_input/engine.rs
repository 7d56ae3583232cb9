//! What sends the load (fault's own generator, or Locust) and where the metrics page listens.

use rmcp::model::JsonObject;

use serde_json::{Value, json};

use super::super::scenario_fields as fields;
use crate::{
    fields::FieldInput,
    impact::{Engine, Limits},
    load::{
        self,
        locust::{LocustPlan, Workers},
    },
};

use super::*;

/// `args` with `load.workers` given as a bare number N read as `{"local": N}`.
pub(in crate::mcp) fn workers_as_object(args: &JsonObject) -> std::borrow::Cow<'_, JsonObject> {
    match args.get("load").and_then(|load| load.get("workers")) {
        Some(Value::Number(count)) => {
            let mut args = args.clone();
            let count = Value::Number(count.clone());
            if let Some(Value::Object(load)) = args.get_mut("load") {
                load.insert("workers".into(), json!({ "local": count }));
            }
            std::borrow::Cow::Owned(args)
        }
        _ => std::borrow::Cow::Borrowed(args),
    }
}

/// What sends the load: `load`, fault's own generator when absent. With Locust, the fields of fault's own
/// generator are refused (the users are Locust's), and so is what it cannot carry.
pub(in crate::mcp) fn read_engine(
    input: &FieldInput,
    limits: &Limits,
) -> Result<Engine, InputError> {
    let Some(load) = input.object(&fields::LOAD)? else {
        return Ok(Engine::Own);
    };
    if load.text(&fields::LOAD_ENGINE)? != "locust" {
        return Ok(Engine::Own);
    }
    if let Some(given) = [
        fields::NUM_CLIENTS,
        fields::RPS,
        fields::STAGES,
        fields::FEED,
    ]
    .iter()
    .find(|field| input.has(field))
    {
        return Err(bad(
            given.name,
            "is for fault's own generator, and `load.engine` is locust: Locust's load is its users \
             (`load.users`, `load.spawn_rate`) for `duration`; a feed belongs in the locustfile",
        ));
    }
    let locustfile = Some(load.text(&fields::LOAD_LOCUSTFILE)?)
        .filter(|path| !path.trim().is_empty())
        .map(std::path::PathBuf::from);
    if let Some(path) = &locustfile {
        load::locust::check_locustfile(path).map_err(|e| bad("load.locustfile", e))?;
    }
    let workers = match load.object(&fields::LOAD_WORKERS)? {
        None => Workers::Local(1),
        Some(workers) => match workers.optional_whole(&fields::WORKERS_EXTERNAL)? {
            Some(_) if workers.has(&fields::WORKERS_LOCAL) => {
                return Err(bad(
                    "load.workers",
                    "gives both `local` and `external`: fault either starts its workers here or waits for \
                     workers started elsewhere",
                ));
            }
            Some(count) => Workers::External(count as u32),
            None => Workers::Local(workers.whole(&fields::WORKERS_LOCAL)? as u32),
        },
    };
    let workers_wait = fields::parse_duration(&load.parsed::<String>(&fields::LOAD_WORKERS_WAIT)?)
        .map_err(|e| bad("load.workers_wait", e))?;
    if workers_wait.is_zero() {
        return Err(bad(
            "load.workers_wait",
            "is 0: give the workers time to come, e.g. \"60s\"",
        ));
    }
    let host: std::net::IpAddr = load.parsed(&fields::LOAD_MASTER_HOST)?;
    if !host.is_loopback() && !limits.allow_public_proxies {
        return Err(bad(
            "load.master_host",
            format!(
                "{host} is not loopback; Locust's master listens on 127.0.0.1 or ::1 only, unless the server \
                 is started with `fault agent tool --allow-public-proxies`"
            ),
        ));
    }
    let port = load.whole(&fields::LOAD_MASTER_PORT)? as u16;
    let csv_prefix = Some(load.text(&fields::LOAD_CSV)?)
        .filter(|prefix| !prefix.trim().is_empty())
        .map(std::path::PathBuf::from);
    Ok(Engine::Locust(LocustPlan {
        locustfile,
        users: load.whole(&fields::LOAD_USERS)? as u32,
        spawn_rate: load.number(&fields::LOAD_SPAWN_RATE)?,
        workers,
        workers_wait,
        master: std::net::SocketAddr::new(host, port),
        csv_prefix,
    }))
}

/// Where the metrics page listens, checked free now so an address in use is refused before anything starts.
pub(in crate::mcp) fn read_metrics(
    input: &FieldInput,
    limits: &Limits,
) -> Result<Option<std::net::SocketAddr>, InputError> {
    let Some(text) = input.optional_parsed::<String>(&fields::METRICS)? else {
        return Ok(None);
    };
    let addr = fields::parse_metrics_address(&text).map_err(|e| bad("metrics", e))?;
    if !addr.ip().is_loopback() && !limits.allow_public_proxies {
        return Err(bad(
            "metrics",
            format!(
                "{addr} is not loopback; the metrics page listens on 127.0.0.1 or ::1 only, unless the server is \
                 started with `fault agent tool --allow-public-proxies`"
            ),
        ));
    }
    std::net::TcpListener::bind(addr)
        .map_err(|e| bad("metrics", format!("cannot listen on {addr}: {e}")))?;
    Ok(Some(addr))
}
