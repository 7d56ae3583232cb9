//! MCP tool of the capacity search, `fault_run_capacity_scenario`: the compound impact tool's request and
//! faults (read by its own reader, [`compound_spec`]) plus the search's own fields, declared here; the search
//! is [`crate::capacity`].

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use rmcp::{
    RoleServer,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{CallToolResponse, CallToolResult, JsonObject, Tool, ToolAnnotations},
    service::RequestContext,
};
use serde_json::Value;

use super::impact_input::{InputError, RunFiles, bad, compound_schema, compound_spec};
use super::scenario::ScenarioReport;
use super::{FaultServer, output_schema, text_and_structured, tool_error, with_chart, with_view};
use crate::{
    capacity::{self, CapacitySpec, SearchSpec},
    fields::{Field, FieldError, FieldInput, Unit},
    impact::{CEILING_SCENARIO_RPS, Limits},
    lenient::Number,
    report::{
        capacity::CapacityReport,
        chart::{self, ChartError, capacity::CapacityFigure},
    },
};

/// The tool's name.
pub(super) const TOOL: &str = "fault_run_capacity_scenario";

const DESCRIPTION: &str = "Find how much load an endpoint takes, and how much of that a fault costs. Raises the \
offered rate (open model) in steps, from `start_rps` times `growth` each step up to `max_rps`, until a step \
misses an SLO, has errors over `error_budget` percent, or achieves less than it offered; then bisects between \
the last rate that held and the first that broke, to within `precision` percent. First without the fault, then \
with `faults` held for the whole of each step (the request, `proxies`, `slos`, `seed` and `timeout` as \
fault_run_impact_scenario takes them). Returns each side's steps (offered, achieved, p50/p95/p99, errors, SLO \
verdicts), its capacity (the highest rate that held), its knee (the first step whose p99 doubled the first \
step's), and the fault's cost (\"capacity 780 → 410 req/s, −47 %\"), with a chart of latency against offered \
rate. The whole search is bounded by the server's --max-scenario-duration: one that may not fit is refused \
before it starts.";

const START_RPS: Field = Field::number(
    "start_rps",
    "The first rate offered, in requests per second",
    Number::from_to(1.0, CEILING_SCENARIO_RPS as f64).whole(),
    Unit::None,
)
.default("10");
const MAX_RPS: Field = Field::number(
    "max_rps",
    "The highest rate the search may offer, in requests per second; at most the server's cap \
     (--max-scenario-rps)",
    Number::from_to(1.0, CEILING_SCENARIO_RPS as f64).whole(),
    Unit::None,
)
.optional("the server's cap (--max-scenario-rps, default 1000)");
const STEP_DURATION: Field = Field::number(
    "step_duration",
    "How long each step offers its rate; the achieved rate is counted from its second second on",
    Number::from_to(2.0, 600.0),
    Unit::Seconds,
)
.default("3");
const GROWTH: Field = Field::number(
    "growth",
    "Each rate of the climb is the previous one times this",
    Number::from_to(1.05, 10.0),
    Unit::None,
)
.default("2");
const ERROR_BUDGET: Field = Field::number(
    "error_budget",
    "Errors a step may have, in percent of its requests, before it breaks",
    Number::from_to(0.0, 100.0),
    Unit::None,
)
.default("1");
const PRECISION: Field = Field::number(
    "precision",
    "The refinement stops once the first rate that broke is within this percent of the last that held",
    Number::from_to(1.0, 50.0),
    Unit::None,
)
.default("5");

/// The search's own fields.
pub(crate) const FIELDS: [Field; 6] = [
    START_RPS,
    MAX_RPS,
    STEP_DURATION,
    GROWTH,
    ERROR_BUDGET,
    PRECISION,
];

/// Fields of the compound impact tool the search does not take: the load's rate and length are the search's
/// steps, each step is judged whole (no baseline, no recovery), and each fault holds for the whole of each step
/// (no `sched`).
const NOT_TAKEN: [&str; 6] = [
    "duration",
    "num_clients",
    "rps",
    "baseline",
    "recovery_seconds",
    "stages",
];

fn field_error(e: FieldError) -> InputError {
    bad(e.field, e.message)
}

/// The search of a call: its own fields, checked against the server's caps (the whole search must fit the
/// duration cap), then the request and faults as the compound impact tool reads them.
pub(super) fn capacity_spec(
    args: &JsonObject,
    limits: &Limits,
) -> Result<(CapacitySpec, RunFiles), InputError> {
    let input = FieldInput::from_arguments(&FIELDS, args);
    let start_rps = input.whole(&START_RPS).map_err(field_error)?;
    let max_rps = input
        .optional_whole(&MAX_RPS)
        .map_err(field_error)?
        .unwrap_or(limits.max_total_rps);
    if max_rps > limits.max_total_rps {
        return Err(bad(
            MAX_RPS.name,
            format!(
                "{max_rps} requests per second; accepted: at most {} (the server's cap; `fault agent tool \
                 --max-scenario-rps N` raises it)",
                limits.max_total_rps
            ),
        ));
    }
    if start_rps > max_rps {
        return Err(bad(
            START_RPS.name,
            format!(
                "{start_rps} is above max_rps ({max_rps}); the search climbs from start_rps to max_rps"
            ),
        ));
    }
    let step = Duration::from_secs_f64(input.number(&STEP_DURATION).map_err(field_error)?);
    let search = SearchSpec {
        start_rps,
        max_rps,
        step,
        growth: input.number(&GROWTH).map_err(field_error)?,
        error_budget_percent: input.number(&ERROR_BUDGET).map_err(field_error)?,
        precision_percent: input.number(&PRECISION).map_err(field_error)?,
    };
    let longest = search.longest(2);
    if longest > limits.max_duration {
        return Err(bad(
            STEP_DURATION.name,
            format!(
                "{} s per step: the search from {start_rps} to {max_rps} req/s, ×{} per step and refined to {}%, \
                 may take {} steps on the two sides, {}, over the server's cap of {} (`fault agent tool \
                 --max-scenario-duration` raises it); shorten step_duration, or raise start_rps, growth or \
                 precision, or lower max_rps",
                step.as_secs_f64(),
                search.growth,
                search.precision_percent,
                search.steps_at_most(2),
                humantime::format_duration(longest),
                humantime::format_duration(limits.max_duration)
            ),
        ));
    }
    if let Some(Value::Array(items)) = args.get("faults") {
        for (index, item) in items.iter().enumerate() {
            if item.get("sched").is_some() {
                return Err(bad(
                    format!("faults[{index}].sched"),
                    "is not taken here: each fault holds for the whole of each step with it",
                ));
            }
        }
    }
    let mut scenario = args.clone();
    for field in FIELDS.iter().map(|f| f.name).chain(NOT_TAKEN) {
        scenario.remove(field);
    }
    // Each step sets its own rate and length; these only pass the compound reader's checks.
    scenario.insert("duration".into(), step.as_secs_f64().to_string().into());
    scenario.insert("rps".into(), 1.into());
    let (scenario, page) = compound_spec(&scenario, limits)?;
    Ok((CapacitySpec { scenario, search }, page))
}

/// The tool's input schema: the compound impact tool's, without what it does not take, with its own fields.
fn schema() -> Arc<JsonObject> {
    let mut schema = (*compound_schema()).clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for name in NOT_TAKEN {
            properties.remove(name);
        }
        if let Some(Value::Array(items)) = properties
            .get_mut("faults")
            .and_then(|faults| faults.get_mut("items"))
            .and_then(|items| items.get_mut("anyOf"))
        {
            for item in items {
                if let Some(Value::Object(fields)) = item.get_mut("properties") {
                    fields.remove("sched");
                }
            }
        }
        if let Some(Value::Object(faults)) = properties.get_mut("faults") {
            faults.insert(
                "description".into(),
                "The faults of the side with them, all on the same proxies, each an object whose `type` names \
                 it with that fault's own fields; each holds for the whole of each step (no `sched`). 1 to 10."
                    .into(),
            );
        }
        for field in &FIELDS {
            properties.insert(field.name.to_owned(), field.schema());
        }
    }
    Arc::new(schema)
}

fn annotations() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(true)
}

impl FaultServer {
    pub(super) fn capacity_router() -> ToolRouter<Self> {
        let tool = Tool::new(TOOL, DESCRIPTION, schema())
            .with_raw_output_schema(output_schema::<CapacityReport>())
            .with_annotations(annotations());
        let mut router = ToolRouter::new();
        router.add_route(ToolRoute::new_dyn(tool, call));
        router
    }

    /// Validates, takes the scenario slot, runs the search, and shapes the report; progress each second.
    async fn run_capacity(
        &self,
        spec: Result<(CapacitySpec, RunFiles), InputError>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let (spec, files) = match spec {
            Ok(spec) => spec,
            Err(e) => return Ok(tool_error(e)),
        };
        let total = (spec.search.requests_at_most(2), "requests at most");
        self.run_scenario(files, context, total, async |cancel, progress| {
            capacity::run(&spec, cancel, progress).await
        })
        .await
    }
}

impl ScenarioReport for CapacityReport {
    fn result(&self, apps: bool) -> CallToolResult {
        let result = with_chart(
            text_and_structured(crate::report::capacity::render(self), self),
            &CapacityFigure::all(self),
        );
        with_view(result, apps, "capacity", || {
            chart::page::capacity_body(self)
        })
    }

    fn page(&self) -> Result<String, ChartError> {
        chart::page::capacity_page(self)
    }
}

fn call(
    call: ToolCallContext<'_, FaultServer>,
) -> BoxFuture<'_, Result<CallToolResponse, rmcp::ErrorData>> {
    Box::pin(async move {
        let arguments = call.arguments.unwrap_or_default();
        let server = call.service;
        let spec = capacity_spec(&arguments, &server.settings.scenario);
        server
            .run_capacity(spec, call.request_context)
            .await
            .map(CallToolResponse::from)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(args: Value, limits: &Limits) -> Result<CapacitySpec, String> {
        let Value::Object(args) = args else {
            unreachable!()
        };
        capacity_spec(&args, limits)
            .map(|(spec, _)| spec)
            .map_err(|e| e.to_string())
    }

    fn args(extra: Value) -> Value {
        let mut base =
            json!({"url": "http://127.0.0.1:9/", "faults": [{"type": "latency", "latency": 10}]});
        if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
            base.extend(extra);
        }
        base
    }

    #[test]
    fn the_defaults_fit_the_default_caps() {
        let spec = spec(args(json!({})), &Limits::default()).unwrap();
        assert_eq!(spec.search.start_rps, 10);
        assert_eq!(spec.search.max_rps, 1000);
        assert_eq!(spec.search.step, Duration::from_secs(3));
        assert!(spec.search.longest(2) <= Limits::default().max_duration);
        assert_eq!(spec.scenario.faults.len(), 1);
    }

    #[test]
    fn each_refusal_names_its_field() {
        let limits = Limits::default();
        for (extra, field) in [
            (
                json!({"max_rps": 1001}),
                "max_rps: 1001 requests per second",
            ),
            (
                json!({"start_rps": 500, "max_rps": 100}),
                "start_rps: 500 is above max_rps",
            ),
            (json!({"step_duration": 60}), "step_duration: 60 s per step"),
            (json!({"step_duration": 1}), "step_duration:"),
            (json!({"growth": 1}), "growth:"),
            (json!({"error_budget": -1}), "error_budget:"),
            (json!({"precision": 0}), "precision:"),
            (json!({"start_rps": 1.5}), "start_rps:"),
            (
                json!({"faults": [{"type": "latency", "latency": 10, "sched": "start:1s"}]}),
                "faults[0].sched:",
            ),
        ] {
            let error = spec(args(extra.clone()), &limits).unwrap_err();
            assert!(error.starts_with(field), "{extra}: {error}");
        }
    }

    #[test]
    fn the_schema_drops_what_the_search_sets_and_declares_its_fields() {
        let schema = schema();
        let properties = schema["properties"].as_object().unwrap();
        for name in [
            "duration",
            "rps",
            "num_clients",
            "baseline",
            "recovery_seconds",
        ] {
            assert!(!properties.contains_key(name), "{name}");
        }
        for field in &FIELDS {
            assert!(properties.contains_key(field.name), "{}", field.name);
        }
        let items = properties["faults"]["items"]["anyOf"].as_array().unwrap();
        assert!(
            items
                .iter()
                .all(|item| item["properties"].get("sched").is_none())
        );
    }
}
