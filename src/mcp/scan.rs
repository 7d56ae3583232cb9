//! MCP tool `fault_scan_mcp_server`: the scan of [`crate::scan`], its fields declared there once (this
//! schema and `fault mcp-scan`'s flags come from the same declarations).

use std::sync::Arc;

use rmcp::{
    RoleServer,
    model::{CallToolResult, JsonObject},
    service::RequestContext,
    tool, tool_router,
};

use super::scenario::progress_ticker;
use super::{FaultServer, text_and_structured, tool_error};
use crate::{
    fields::{FieldInput, object_schema},
    load::LoadProgress,
    scan::{self, ScanSpec, spec::FIELDS},
};

fn scan_output_schema() -> Arc<JsonObject> {
    match scan::report::result_schema() {
        serde_json::Value::Object(schema) => Arc::new(schema),
        _ => Arc::default(),
    }
}

fn scan_input_schema() -> Arc<JsonObject> {
    match object_schema(FIELDS) {
        serde_json::Value::Object(schema) => Arc::new(schema),
        _ => Arc::default(),
    }
}

#[tool_router(router = scan_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        description = "Scan an MCP server and say whether it is ready, and what to change if not. Starts \
`command` over stdio (or reaches `url` over Streamable HTTP) and runs, in order: hygiene (every tool's input \
and output schema read as OpenAI's strict mode and Gemini read them: untyped properties, unresolved $ref, \
unions at the root, missing descriptions and annotations), baseline (each tool called `samples` times, one at \
a time: p50/p95/p99 with the samples each rests on; results checked against the tool's outputSchema), \
saturation (calls in flight doubled from 1 to `max_in_flight` until goodput stops rising: the peak, the knee, \
and whether a slow tool's call holds up another tool's), contract (each declared field given a missing \
required value, a wrong type, null, values out of its range or enum, an undeclared field and an oversized \
text: accepting invalid input, crashing, hanging, or refusing without naming the field are findings). Tools \
whose annotations do not say read-only are left out of the calling phases unless `allow_writes`. Returns a \
verdict (pass, fail, or no verdict when too little was measured) with a 0–100 score over the policy's \
weighted dimensions (n/a with the reason where the evidence is thin; rates with their 95 % Wilson interval), \
every finding worst first with its evidence, the change that fixes it and the command that reproduces it; \
`guide` writes them as an AGENTS.md fix guide, `previous` compares with an earlier result (fixed, new, \
unchanged), `result` and `junit` write the versioned JSON and JUnit XML.",
        input_schema = scan_input_schema(),
        output_schema = scan_output_schema(),
        // Starts the given server command and calls its tools (its writes too, with allow_writes).
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_scan_mcp_server(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let input = FieldInput::from_arguments(FIELDS, &arguments);
        let spec = match ScanSpec::read(&input) {
            Ok(spec) => spec,
            Err(e) => return Ok(tool_error(e)),
        };
        let progress = Arc::new(LoadProgress::default());
        let ticker = progress_ticker(&context, progress.clone(), 0, "calls");
        let outcome = scan::run(&spec, &context.ct, progress).await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        Ok(match outcome {
            Ok(report) => text_and_structured(report.markdown(), &report),
            Err(e) => tool_error(e),
        })
    }
}
